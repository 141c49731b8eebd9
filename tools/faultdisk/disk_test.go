package main

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// mem is an image in memory.
type mem []byte

func (m mem) ReadAt(p []byte, off int64) (int, error)  { return copy(p, m[off:]), nil }
func (m mem) WriteAt(p []byte, off int64) (int, error) { return copy(m[off:], p), nil }

func newDisk(every, after int, seed uint64) (*disk, mem) {
	m := make(mem, 64<<10)
	return &disk{f: m, size: int64(len(m)), every: every, after: after, rng: rand.New(rand.NewPCG(seed, 1))}, m
}

// TestFailures: nothing fails in the first after requests; then about
// one in every fails, a failed write leaves the image as it was, and a
// write that succeeded is read back.
func TestFailures(t *testing.T) {
	d, m := newDisk(8, 100, 7)
	block := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 512) }
	landed := map[int]bool{}
	for i := range 100 {
		if err := d.Write(block(i+1), int64(i%128)*512, false); err != nil {
			t.Fatalf("request %d failed before -after", i+1)
		}
		landed[i%128] = true
	}
	for i := range 128 {
		copy(m[i*512:], block(0)) // a known state to change
	}
	fails := 0
	for i := range 4000 {
		off := int64(i%128) * 512
		want := append([]byte(nil), m[off:off+512]...)
		err := d.Write(block(i%250+1), off, i%2 == 0)
		if err != nil {
			fails++
			if !bytes.Equal(m[off:off+512], want) {
				t.Fatalf("failed write %d changed the image", i)
			}
			continue
		}
		got := make([]byte, 512)
		if err := d.ReadAt(got, off); err != nil {
			fails++
			continue
		}
		if !bytes.Equal(got, block(i%250+1)) {
			t.Fatalf("write %d not read back", i)
		}
	}
	if d.failed != fails || fails < 8000/8/2 || fails > 8000/8*2 {
		t.Fatalf("%d failures counted, %d seen, in about 8000 requests at 1 in 8", d.failed, fails)
	}
	if d.byOp["read"] == 0 || d.byOp["write"] == 0 {
		t.Fatalf("failures by operation: %v", d.byOp)
	}
}

// TestNoFailures: -every 0 fails nothing, and zeroes and flushes work.
func TestNoFailures(t *testing.T) {
	d, m := newDisk(0, 0, 1)
	for i := range m {
		m[i] = 0xff
	}
	for range 1000 {
		if err := d.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.WriteZeroes(1000, 3000, true); err != nil {
		t.Fatal(err)
	}
	if m[999] != 0xff || m[1000] != 0 || m[3999] != 0 || m[4000] != 0xff {
		t.Fatalf("zeroes landed wrong: %x %x %x %x", m[999], m[1000], m[3999], m[4000])
	}
	if d.failed != 0 || d.requests != 1001 {
		t.Fatalf("%d requests, %d failed", d.requests, d.failed)
	}
}

// TestSeed: the same seed fails the same requests.
func TestSeed(t *testing.T) {
	run := func() []int {
		d, _ := newDisk(10, 0, 42)
		var failed []int
		for i := range 500 {
			if d.Flush() != nil {
				failed = append(failed, i)
			}
		}
		return failed
	}
	a, b := run(), run()
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("runs failed %d and %d requests", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("runs differ at failure %d: %d, %d", i, a[i], b[i])
		}
	}
}
