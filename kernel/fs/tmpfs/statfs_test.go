package tmpfs

import (
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// statfs counts the pages files hold, and only while they are in use.
func TestStatFS(t *testing.T) {
	fs := New(Options{Available: func() uint64 { return 1000 }})
	root := fs.Root().(vfs.Dir)
	st := func() vfs.StatFS { return fs.Root().(vfs.FSStater).StatFS() }
	if s := st(); s.Type != vfs.TmpfsMagic || s.Bsize != pageSize || s.Blocks != 1000 || s.Bfree != 1000 || s.Bavail != 1000 || s.Namelen != 255 {
		t.Fatalf("empty: %+v", s)
	}
	f := mustCreate(t, root, "f", linux.S_IFREG|0o644).(*file)
	g := mustCreate(t, root, "g", linux.S_IFREG|0o644).(*file)
	f.WriteAt(make([]byte, 3*pageSize), 0)
	g.WriteAt([]byte("x"), 10*pageSize)
	if s := st(); s.Blocks-s.Bfree != 4 || s.Bfree != 1000 {
		t.Errorf("4 pages written: %+v", s)
	}
	f.SetAttr(&vfs.SetAttr{Mask: vfs.SetSize, Size: pageSize})
	if s := st(); s.Blocks-s.Bfree != 2 {
		t.Errorf("truncated to a page: %+v", s)
	}
	if err := root.Unlink("g"); err != nil {
		t.Fatal(err)
	}
	if s := st(); s.Blocks-s.Bfree != 1 {
		t.Errorf("after unlink: %+v", s)
	}
}

// A size limit: writes and fallocate stop at it with ENOSPC (a write
// that got some pages in first is short), statfs reports the size and
// what is left of it, and a page given back makes room again.
func TestSizeLimit(t *testing.T) {
	fs := New(Options{Available: func() uint64 { return 1000 }, Limit: 8})
	root := fs.Root().(vfs.Dir)
	st := func() vfs.StatFS { return fs.Root().(vfs.FSStater).StatFS() }
	f := mustCreate(t, root, "f", linux.S_IFREG|0o644).(*file)
	if n, err := f.WriteAt(make([]byte, 6*pageSize), 0); n != 6*pageSize || err != nil {
		t.Fatalf("6 pages of 8: %d, %v", n, err)
	}
	if s := st(); s.Blocks != 8 || s.Bfree != 2 || s.Bavail != 2 {
		t.Errorf("6 of 8 pages used: %+v", s)
	}
	if n, err := f.WriteAt(make([]byte, 4*pageSize), 6*pageSize); n != 2*pageSize || err != nil {
		t.Errorf("4 pages with room for 2: %d, %v (want a short write)", n, err)
	}
	if n, err := f.WriteAt([]byte("x"), 8*pageSize); n != 0 || err != linux.ENOSPC {
		t.Errorf("a page past the limit: %d, %v", n, err)
	}
	if n, err := f.WriteAt([]byte("over"), 5*pageSize); n != 4 || err != nil {
		t.Errorf("a page it has, at the limit: %d, %v", n, err)
	}
	g := mustCreate(t, root, "g", linux.S_IFREG|0o644).(*file)
	if err := g.Allocate(0, 0, pageSize); err != linux.ENOSPC {
		t.Errorf("fallocate at the limit: %v", err)
	}
	f.SetAttr(&vfs.SetAttr{Mask: vfs.SetSize, Size: 7 * pageSize})
	if err := g.Allocate(0, 0, pageSize); err != nil {
		t.Errorf("fallocate of the page truncate gave back: %v", err)
	}
	if s := st(); s.Bfree != 0 {
		t.Errorf("full again: %+v", s)
	}
}
