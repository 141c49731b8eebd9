package main

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
)

// errInjected is the failure the disk makes up; the NBD server answers
// it with EIO.
var errInjected = errors.New("injected device error")

// store is what the disk reads and writes: the image file (a memory
// image in tests).
type store interface {
	io.ReaderAt
	io.WriterAt
}

// disk is an nbd.Device over an image that fails one request in every
// (at random) after the first after requests. The NBD server serves one
// request at a time, so it needs no lock.
type disk struct {
	f            store
	size         int64
	every, after int
	rng          *rand.Rand

	requests, failed int
	byOp             map[string]int // failures per operation
}

var _ interface {
	Size() int64
	ReadAt([]byte, int64) error
	Write([]byte, int64, bool) error
	WriteZeroes(int64, int64, bool) error
	Trim(int64, int64) error
	Flush() error
} = (*disk)(nil)

// fail counts a request and reports whether to fail it, logging the
// failure.
func (d *disk) fail(op string, off, n int64) bool {
	d.requests++
	if d.every == 0 || d.requests <= d.after || d.rng.IntN(d.every) != 0 {
		return false
	}
	d.failed++
	if d.byOp == nil {
		d.byOp = map[string]int{}
	}
	d.byOp[op]++
	fmt.Fprintf(os.Stderr, "faultdisk: request %d: %s at %d (+%d) fails\n", d.requests, op, off, n)
	return true
}

func (d *disk) counts() string {
	var parts []string
	for _, op := range []string{"read", "write", "zeroes", "trim", "flush"} {
		if d.byOp[op] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", op, d.byOp[op]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func (d *disk) Size() int64 { return d.size }

func (d *disk) ReadAt(p []byte, off int64) error {
	if d.fail("read", off, int64(len(p))) {
		return errInjected
	}
	_, err := d.f.ReadAt(p, off)
	return err
}

func (d *disk) Write(p []byte, off int64, fua bool) error {
	if d.fail("write", off, int64(len(p))) {
		return errInjected
	}
	_, err := d.f.WriteAt(p, off)
	return err
}

func (d *disk) WriteZeroes(off, n int64, fua bool) error {
	if d.fail("zeroes", off, n) {
		return errInjected
	}
	zero := make([]byte, min(n, 1<<20))
	for n > 0 {
		c := min(n, int64(len(zero)))
		if _, err := d.f.WriteAt(zero[:c], off); err != nil {
			return err
		}
		off, n = off+c, n-c
	}
	return nil
}

// Trim keeps the data: a discarded range may read back as anything, and
// the old bytes are such a thing.
func (d *disk) Trim(off, n int64) error {
	if d.fail("trim", off, n) {
		return errInjected
	}
	return nil
}

func (d *disk) Flush() error {
	if d.fail("flush", 0, 0) {
		return errInjected
	}
	return nil
}
