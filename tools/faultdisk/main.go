// Command faultdisk serves a disk image over NBD on a unix socket and
// fails a random share of the requests with EIO: a disk that has bad
// moments, for tools/fuzz-soak.sh, so that the guest's ext4 meets device
// errors while the system-call fuzzer runs (the host's TestRandomIOErrors
// does the same to the file system alone). A failed write or write of
// zeroes leaves the image as it was; a failed read returns no data; a
// failed flush changes nothing (the image is written at once, so a flush
// has nothing to make durable: the power is never cut here). Requests
// are counted and the failures logged, one line each, to stderr.
//
// usage: go run ./tools/faultdisk -image IMG -socket PATH [-every N] [-after N] [-seed S]
//
// It serves one connection, QEMU's
// (-blockdev driver=nbd,server.type=unix,server.path=PATH,export=disk),
// and exits when it ends, with a summary line.
package main

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"

	"shortbread/tools/powercut/nbd"
)

func main() {
	image := flag.String("image", "", "the raw disk image to serve")
	sock := flag.String("socket", "", "the unix socket to listen on")
	every := flag.Int("every", 1000, "fail one request in N (reads, writes, flushes, zeroes, trims); 0: none")
	after := flag.Int("after", 0, "fail nothing in the first N requests (the mount's)")
	seed := flag.Uint64("seed", 1, "seed of the failures")
	flag.Parse()
	if *image == "" || *sock == "" || *every < 0 || *after < 0 {
		flag.Usage()
		os.Exit(2)
	}
	f, err := os.OpenFile(*image, os.O_RDWR, 0)
	if err != nil {
		fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		fatal(err)
	}
	d := &disk{f: f, size: st.Size(), every: *every, after: *after, rng: rand.New(rand.NewPCG(*seed, 0x6661756c74))}
	os.Remove(*sock)
	ln, err := net.Listen("unix", *sock)
	if err != nil {
		fatal(err)
	}
	conn, err := ln.Accept()
	ln.Close()
	if err != nil {
		fatal(err)
	}
	srv := &nbd.Server{Name: "disk", Dev: d, Log: func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "faultdisk: "+format+"\n", a...)
	}}
	err = srv.Serve(conn)
	conn.Close()
	fmt.Fprintf(os.Stderr, "faultdisk: %d requests, %d failed (%s)\n", d.requests, d.failed, d.counts())
	if err != nil && !errors.Is(err, nbd.ErrRefused) {
		// A QEMU that went away (killed at a timeout) ends with EOF:
		// not this tool's failure.
		fmt.Fprintf(os.Stderr, "faultdisk: connection: %v\n", err)
	}
	if err := f.Close(); err != nil {
		fatal(err)
	}
	if errors.Is(err, nbd.ErrRefused) {
		os.Exit(1)
	}
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "faultdisk: %v\n", err)
	os.Exit(1)
}
