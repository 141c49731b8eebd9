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
