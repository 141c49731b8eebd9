package vfs

import (
	"testing"

	"shortbread/kernel/abi/linux"
)

// memCached is a seekable File whose first cached bytes are "in
// memory" (ReadCached serves them); the rest only Read gives.
type memCached struct {
	data   []byte
	cached int
}

func (m *memCached) Read(_ Blocking, p []byte, off int64) (int, error) {
	if off >= int64(len(m.data)) {
		return 0, nil
	}
	return copy(p, m.data[off:]), nil
}
func (m *memCached) Write(Blocking, []byte, int64) (int, error) { return 0, linux.EBADF }
func (m *memCached) Release()                                   {}
func (m *memCached) Lseek(pos, off int64, whence int) (int64, error) {
	return seekWithin(pos, off, whence, int64(len(m.data)))
}

func (m *memCached) ReadCached(dst [][]byte, off int64) (int, bool) {
	n := 0
	for _, d := range dst {
		for i := range d {
			if off+int64(n) >= int64(m.cached) {
				return n, false
			}
			d[i] = m.data[off+int64(n)]
			n++
		}
	}
	return n, true
}

// ReadCached moves the position only when it served the whole read, at
// the position or at an offset, and never for O_DIRECT, O_PATH or a
// file not open for reading.
func TestReadCachedPosition(t *testing.T) {
	m := &memCached{data: []byte("0123456789abcdef"), cached: 10}
	f := NewFile(NewAnonInode(linux.S_IFREG|0o644, Owner{}), m, linux.O_RDONLY)
	if !f.CachedReads() {
		t.Fatal("a CachedReader not taken for one")
	}
	a, b := make([]byte, 2), make([]byte, 3)
	if n, ok := f.ReadCached([][]byte{a, b}, -1); !ok || n != 5 || string(a)+string(b) != "01234" {
		t.Fatalf("first read: %d, %v, %q %q", n, ok, a, b)
	}
	if n, ok := f.ReadCached([][]byte{b}, -1); !ok || n != 3 || string(b) != "567" {
		t.Fatalf("second read: %d, %v, %q", n, ok, b)
	}
	// Past what is cached: not served, the position stays for the
	// ordinary read.
	if _, ok := f.ReadCached([][]byte{b}, -1); ok {
		t.Fatal("served beyond the cache")
	}
	p := make([]byte, 3)
	if n, err := f.Read(p, nil); n != 3 || err != nil || string(p) != "89a" {
		t.Fatalf("ordinary read after: %d, %v, %q", n, err, p)
	}
	// At an offset: the position does not move.
	if n, ok := f.ReadCached([][]byte{a}, 1); !ok || n != 2 || string(a) != "12" {
		t.Fatalf("pread: %d, %v", n, ok)
	}
	if pos, _ := f.Seek(0, linux.SEEK_CUR); pos != 11 {
		t.Fatalf("position %d after the pread, want 11", pos)
	}
	f.SetFlags(linux.O_DIRECT)
	if f.CachedReads() {
		t.Fatal("CachedReads with O_DIRECT")
	}
	if _, ok := f.ReadCached([][]byte{a}, 0); ok {
		t.Fatal("served an O_DIRECT read")
	}
	w := NewFile(NewAnonInode(linux.S_IFREG|0o644, Owner{}), m, linux.O_WRONLY)
	if _, ok := w.ReadCached([][]byte{a}, 0); ok {
		t.Fatal("served a file not open for reading")
	}
	// Not a CachedReader: never.
	g := NewFile(NewAnonInode(linux.S_IFREG|0o644, Owner{}), nopFile{}, linux.O_RDONLY)
	if g.CachedReads() {
		t.Fatal("a File that is no CachedReader taken for one")
	}
}
