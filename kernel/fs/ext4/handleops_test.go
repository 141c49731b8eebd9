package ext4

import (
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/mm"
	"shortbread/kernel/pagecache"
)

// TestHandleOps checks that Mkdir, Link, the Symlink of a short target
// and a SetAttr that leaves the size run as handles (handle.go): they
// finish while the test holds FS.mu for reading, which an operation
// holding it for writing would wait for. Then what they made must be
// there, and e2fsck must find the image clean.
func TestHandleOps(t *testing.T) {
	dev := loadImage(t, mkfs(t, "32M", "", "-t", "ext4"))
	f, err := mountDev(t, dev, Options{Pages: pagecache.New(&mm.HeapPhys{}, 4<<20)})
	if err != nil {
		t.Fatal(err)
	}
	ino, err := f.Create(RootIno, "file", linux.S_IFREG|0o644, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	root, err := f.Stat(RootIno)
	if err != nil {
		t.Fatal(err)
	}
	var dir uint32
	done := make(chan error, 1)
	f.mu.RLock()
	go func() {
		var err error
		if dir, err = f.Mkdir(RootIno, "dir", 0o750, 5, 6); err != nil {
			done <- err
			return
		}
		if err = f.Link(dir, "second", ino); err != nil {
			done <- err
			return
		}
		if _, err = f.Symlink(dir, "sym", "../file", 0, 0); err != nil {
			done <- err
			return
		}
		done <- f.SetAttr(ino, SetMode|SetUID|SetGID, Attr{Mode: 0o600, UID: 7, GID: 8})
	}()
	select {
	case err := <-done:
		f.mu.RUnlock()
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("an operation waited for FS.mu held for reading: it did not run as a handle")
	}
	if st, err := f.Stat(ino); err != nil || st.Nlink != 2 || st.Mode != linux.S_IFREG|0o600 || st.UID != 7 || st.GID != 8 {
		t.Errorf("file: %+v, %v; want 2 links, mode 0600, owner 7:8", st, err)
	}
	if st, err := f.Stat(dir); err != nil || st.Nlink != 2 || st.Mode != linux.S_IFDIR|0o750 || st.UID != 5 || st.GID != 6 {
		t.Errorf("dir: %+v, %v; want 2 links, mode 0750, owner 5:6", st, err)
	}
	if st, err := f.Stat(RootIno); err != nil || st.Nlink != root.Nlink+1 {
		t.Errorf("root: %d links, %v; want %d", st.Nlink, err, root.Nlink+1)
	}
	if got, err := f.Lookup(dir, "second"); err != nil || got != ino {
		t.Errorf("dir/second: %d, %v; want %d", got, err, ino)
	}
	sym, err := f.Lookup(dir, "sym")
	if err != nil {
		t.Fatal(err)
	}
	if target, err := f.Readlink(sym); err != nil || target != "../file" {
		t.Errorf("readlink: %q, %v", target, err)
	}
	if dotdot, err := f.Lookup(dir, ".."); err != nil || dotdot != RootIno {
		t.Errorf("dir/..: %d, %v", dotdot, err)
	}
	fsck(t, dev)
}
