module shortbread

go 1.26.3

toolchain go1.26.8

require (
	github.com/google/pprof v0.0.0-20260906184651-6331bc6350fe
	golang.org/x/arch v0.32.0
	golang.org/x/image v0.47.0
	gvisor.dev/gvisor v0.0.0-20260905035102-160fafc42237
)

require (
	github.com/google/btree v1.1.2 // indirect
	golang.org/x/exp v0.0.0-20261113113407-e3970619a1a4 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)
