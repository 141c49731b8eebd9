package blk

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// Random unaligned reads and writes agree with a plain byte slice.
func TestBytesModel(t *testing.T) {
	for _, ss := range []int{512, 4096} {
		m := NewMem("vdz", ss, uint64(2<<20/ss))
		ref := make([]byte, 2<<20)
		rng := rand.New(rand.NewPCG(uint64(ss), 7))
		for i := 0; i < 400; i++ {
			off := rng.Int64N(int64(len(ref)) + 100)
			n := rng.IntN(600 << 10)
			if rng.IntN(4) == 0 {
				n = rng.IntN(3 * ss)
			}
			if rng.IntN(2) == 0 {
				p := make([]byte, n)
				for j := range p {
					p[j] = byte(rng.Uint32())
				}
				got, err := WriteBytes(m, p, off)
				want := 0
				if off < int64(len(ref)) {
					want = copy(ref[off:], p)
				}
				if off >= int64(len(ref)) && n > 0 {
					if !errors.Is(err, ErrRange) {
						t.Fatalf("write at %d past the end: %v", off, err)
					}
					continue
				}
				if got != want || err != nil {
					t.Fatalf("ss %d write %d at %d: %d %v, want %d", ss, n, off, got, err, want)
				}
			} else {
				p := make([]byte, n)
				got, err := ReadBytes(m, p, off)
				want := 0
				if off < int64(len(ref)) {
					want = min(n, len(ref)-int(off))
				}
				if got != want || err != nil || !bytes.Equal(p[:got], ref[off:off+int64(got)]) {
					t.Fatalf("ss %d read %d at %d: %d %v, want %d", ss, n, off, got, err, want)
				}
			}
		}
		if !bytes.Equal(m.data, ref) {
			t.Fatalf("ss %d: device differs from the model", ss)
		}
	}
}

func TestBytesErrors(t *testing.T) {
	m := NewMem("vdz", 512, 64)
	m.Fail = func(s uint64, write bool) bool { return s == 10 }
	if n, err := ReadBytes(m, make([]byte, 8192), 100); !errors.Is(err, ErrIO) || n != 0 {
		t.Errorf("read over a bad sector: %d %v", n, err)
	}
	if n, err := WriteBytes(m, make([]byte, 10), 10*512+3); !errors.Is(err, ErrIO) || n != 0 {
		t.Errorf("partial write over a bad sector: %d %v", n, err)
	}
	if n, err := ReadBytes(m, make([]byte, 10), -1); !errors.Is(err, ErrRange) || n != 0 {
		t.Errorf("negative offset: %d %v", n, err)
	}
}

func TestBytes(t *testing.T) {
	m := NewMem("vdb", 512, 8)
	b := Bytes{m}
	if b.Size() != 4096 {
		t.Fatalf("size %d", b.Size())
	}
	if n, err := b.WriteAt([]byte("hello"), 1020); n != 5 || err != nil {
		t.Fatalf("unaligned write: %d, %v", n, err)
	}
	p := make([]byte, 5)
	if n, err := b.ReadAt(p, 1020); n != 5 || err != nil || string(p) != "hello" {
		t.Fatalf("read back %q: %d, %v", p, n, err)
	}
	if _, err := b.ReadAt(p, 4094); !errors.Is(err, ErrRange) {
		t.Errorf("read across the end: %v, want ErrRange", err)
	}
	if _, err := b.WriteAt(p, -1); !errors.Is(err, ErrRange) {
		t.Errorf("write before the start: %v, want ErrRange", err)
	}
	if err := b.Flush(); err != nil || m.Flushes != 1 {
		t.Errorf("flush: %v, %d flushes", err, m.Flushes)
	}
}

// Bytes discards the whole sectors of a range and passes CanDiscard on.
func TestBytesDiscard(t *testing.T) {
	m := &discMem{Mem: NewMem("vdz", 4096, 100)}
	b := Bytes{D: m}
	if !b.CanDiscard() || (Bytes{D: NewMem("vdy", 512, 8)}).CanDiscard() {
		t.Fatal("CanDiscard does not follow the device")
	}
	for _, c := range []struct {
		off, n int64
		want   [][2]int64
	}{
		{4096, 8192, [][2]int64{{4096, 8192}}},
		{1024, 3 * 4096, [][2]int64{{4096, 8192}}}, // 1 KiB blocks on 4 KiB sectors
		{1024, 2048, nil},
	} {
		m.got = nil
		if err := b.Discard(c.off, c.n); err != nil || len(m.got) != len(c.want) || len(c.want) > 0 && m.got[0] != c.want[0] {
			t.Errorf("Discard(%d, %d): %v, device got %v, want %v", c.off, c.n, err, m.got, c.want)
		}
	}
	if err := b.Discard(99*4096, 8192); !errors.Is(err, ErrRange) {
		t.Errorf("a discard past the end: %v", err)
	}
}
