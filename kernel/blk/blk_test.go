package blk

import (
	"bytes"
	"errors"
	"testing"
)

func TestMemReadWrite(t *testing.T) {
	m := NewMem("vdz", 512, 16)
	if Size(m) != 8192 {
		t.Fatalf("size %d", Size(m))
	}
	w := bytes.Repeat([]byte{0xa5}, 1024)
	if n, err := m.WriteAt(w, 1024); n != 1024 || err != nil {
		t.Fatalf("write: %d %v", n, err)
	}
	r := make([]byte, 2048)
	if _, err := m.ReadAt(r, 512); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r[512:1536], w) || r[0] != 0 || r[1536] != 0 {
		t.Fatal("read back differs")
	}
}

func TestMemChecks(t *testing.T) {
	m := NewMem("vdz", 512, 16)
	for _, c := range []struct {
		n   int
		off int64
		err error
	}{
		{512, 1, ErrAlign}, {100, 0, ErrAlign}, {512, -512, ErrAlign},
		{512, 8192, ErrRange}, {1024, 7680, ErrRange}, {512, 7680, nil}, {0, 8192, nil},
	} {
		_, err := m.ReadAt(make([]byte, c.n), c.off)
		if !errors.Is(err, c.err) && !(err == nil && c.err == nil) {
			t.Errorf("read %d at %d: %v, want %v", c.n, c.off, err, c.err)
		}
	}
	m.Fail = func(s uint64, write bool) bool { return s == 3 && write }
	if _, err := m.WriteAt(make([]byte, 2048), 1024); !errors.Is(err, ErrIO) {
		t.Errorf("write over a bad sector: %v", err)
	}
	if _, err := m.ReadAt(make([]byte, 2048), 1024); err != nil {
		t.Errorf("read over a write-bad sector: %v", err)
	}
	m.Flush()
	if m.Flushes != 1 {
		t.Errorf("flushes %d", m.Flushes)
	}
}
