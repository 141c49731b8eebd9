module shortbread

go 1.26.0

toolchain go1.26.8

require (
	github.com/google/pprof v0.0.0-20260906184651-6331bc6350fe
	golang.org/x/arch v0.32.0
	golang.org/x/image v0.47.0
)
