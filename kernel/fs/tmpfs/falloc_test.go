package tmpfs

import (
	"bytes"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// fallocate: a punched hole reads as zeros and gives its whole pages
// back; allocation extends the size (or not, with KEEP_SIZE) and holds
// pages.
func TestAllocate(t *testing.T) {
	fs := New(Options{})
	f := mustCreate(t, fs.Root().(vfs.Dir), "f", linux.S_IFREG|0o644).(*file)
	data := bytes.Repeat([]byte("x"), 3*pageSize)
	f.WriteAt(data, 0)
	if err := f.Allocate(linux.FALLOC_FL_PUNCH_HOLE|linux.FALLOC_FL_KEEP_SIZE, 100, 2*pageSize); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 3*pageSize)
	f.ReadAt(got, 0)
	want := bytes.Clone(data)
	clear(want[100 : 100+2*pageSize])
	if !bytes.Equal(got, want) {
		t.Error("hole does not read as zeros, or more than the hole was cleared")
	}
	if a := f.Attr(); a.Size != 3*pageSize || a.Blocks != 2*pageSize/512 {
		t.Errorf("after the punch: size %d, blocks %d (want the middle page freed)", a.Size, a.Blocks)
	}
	if err := f.Allocate(linux.FALLOC_FL_KEEP_SIZE, 3*pageSize, 2*pageSize); err != nil {
		t.Fatal(err)
	}
	if a := f.Attr(); a.Size != 3*pageSize || a.Blocks != 4*pageSize/512 {
		t.Errorf("after KEEP_SIZE: size %d, blocks %d", a.Size, a.Blocks)
	}
	if err := f.Allocate(0, 0, 6*pageSize+1); err != nil {
		t.Fatal(err)
	}
	if a := f.Attr(); a.Size != 6*pageSize+1 || a.Blocks != 7*pageSize/512 {
		t.Errorf("after mode 0: size %d, blocks %d", a.Size, a.Blocks)
	}
}
