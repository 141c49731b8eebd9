package ext4

import (
	"bytes"
	"fmt"
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
	dev, f := handleFS(t)
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

// inHandles runs ops while the test holds FS.mu for reading: an
// operation that took it for writing (the exclusive path) would wait
// until the timeout, and the test fails.
func inHandles(t *testing.T, f *FS, ops ...func() error) {
	t.Helper()
	done := make(chan error, 1)
	f.mu.RLock()
	go func() {
		for i, op := range ops {
			if err := op(); err != nil {
				done <- fmt.Errorf("op %d: %w", i, err)
				return
			}
		}
		done <- nil
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
}

// TestHandleRenames checks that renames (within a directory and across
// two, onto a name whose file then loses its last link, held open or
// not, RENAME_NOREPLACE and RENAME_EXCHANGE, a directory renamed within
// its parent and onto an empty one) and Rmdir of an empty directory run
// as handles, and do what they should: then e2fsck finds the image
// clean. A directory moved to another parent, and a rename onto a big
// file, still run exclusive (not checked here to be, only to work).
func TestHandleRenames(t *testing.T) {
	dev, f := handleFS(t)
	mk := func(dir uint32, name string, data string) uint32 {
		t.Helper()
		ino, err := f.Create(dir, name, linux.S_IFREG|0o644, 0, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(ino, []byte(data), 0); err != nil {
			t.Fatal(err)
		}
		return ino
	}
	a, err := f.Mkdir(RootIno, "a", 0o755, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Mkdir(RootIno, "b", 0o755, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	x := mk(a, "x", "x's data")
	y := mk(a, "y", "y's data")
	z := mk(b, "z", "z's data")
	held := mk(b, "held", "held's data")
	w := mk(a, "w", "w")
	e1, e2 := mk(a, "e1", "e1"), mk(b, "e2", "e2")
	mk(a, "gone", "gone")
	sub, err := f.Mkdir(a, "sub", 0o700, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Mkdir(a, "empty", 0o700, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Mkdir(b, "rmme", 0o700, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	free := f.freeInodes.Load()
	f.Hold(held)
	before := f.handlesRun.Load()
	inHandles(t, f,
		func() error { return f.Rename(a, "x", a, "x2", 0) },                      // within a
		func() error { return f.Rename(a, "x2", b, "x3", 0) },                     // to b
		func() error { return f.Rename(b, "x3", a, "y", 0) },                      // back, onto y (freed)
		func() error { return f.Rename(a, "w", b, "held", 0) },                    // onto held (an orphan)
		func() error { return f.Rename(a, "e1", b, "e2", linux.RENAME_EXCHANGE) }, // trade
		func() error {
			if err := f.Rename(b, "z", a, "gone", linux.RENAME_NOREPLACE); err != linux.EEXIST {
				return fmt.Errorf("rename with RENAME_NOREPLACE onto a name: %v, want EEXIST", err)
			}
			return nil
		},
		func() error { return f.Rename(a, "sub", a, "sub2", 0) },   // a directory within a
		func() error { return f.Rename(a, "sub2", a, "empty", 0) }, // onto an empty one
		func() error { return f.Rmdir(b, "rmme") },
		func() error { return f.Unlink(a, "gone") },
	)
	if f.handlesRun.Load()-before < 10 {
		t.Errorf("%d operations ran as handles, want 10", f.handlesRun.Load()-before)
	}
	look := func(dir uint32, name string, want uint32) {
		t.Helper()
		got, err := f.Lookup(dir, name)
		if want == 0 {
			if err != linux.ENOENT {
				t.Errorf("%s: %d, %v; want ENOENT", name, got, err)
			}
			return
		}
		if err != nil || got != want {
			t.Errorf("%s: %d, %v; want %d", name, got, err, want)
		}
	}
	look(a, "x", 0)
	look(a, "x2", 0)
	look(b, "x3", 0)
	look(a, "y", x)
	look(b, "held", w)
	look(a, "w", 0)
	look(a, "e1", e2)
	look(b, "e2", e1)
	look(b, "z", z)
	look(a, "sub", 0)
	look(a, "sub2", 0)
	look(a, "empty", sub)
	look(b, "rmme", 0)
	if got := string(readAll(t, f, x)); got != "x's data" {
		t.Errorf("x holds %q", got)
	}
	if st, err := f.Stat(y); err == nil && st.Nlink != 0 {
		t.Errorf("y, replaced: %d links", st.Nlink)
	}
	if st, err := f.Stat(held); err != nil || st.Nlink != 0 {
		t.Errorf("held, replaced: %+v, %v; want no links", st, err)
	}
	if got := string(readAll(t, f, held)); got != "held's data" {
		t.Errorf("held, an orphan, holds %q", got)
	}
	// y, gone, the replaced "empty" and rmme went; held is an orphan
	// until its release.
	if got := f.freeInodes.Load() - free; got != 4 {
		t.Errorf("%d inodes freed, want 4", got)
	}
	// a holds one directory (sub, now named empty), b none.
	for d, want := range map[uint32]uint32{a: 3, b: 2} {
		if st, err := f.Stat(d); err != nil || st.Nlink != want {
			t.Errorf("directory %d: %d links, %v; want %d", d, st.Nlink, err, want)
		}
	}
	if err := f.Release(held); err != nil {
		t.Fatal(err)
	}
	fsck(t, dev)
	// What stays exclusive works: a directory to another parent, back.
	if err := f.Rename(a, "empty", b, "moved", 0); err != nil {
		t.Fatal(err)
	}
	if dotdot, err := f.Lookup(sub, ".."); err != nil || dotdot != b {
		t.Errorf("moved/..: %d, %v; want %d", dotdot, err, b)
	}
	for d, want := range map[uint32]uint32{a: 2, b: 3} {
		if st, err := f.Stat(d); err != nil || st.Nlink != want {
			t.Errorf("directory %d: %d links, %v; want %d", d, st.Nlink, err, want)
		}
	}
	if err := f.Rename(b, "moved", a, "sub", linux.RENAME_NOREPLACE); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	fsck(t, dev)
}

// TestHandleBigUnlink checks that the unlink of a file bigger than a
// handle's own credits free (handleMaxFree), spanning several groups,
// and a rename onto another such file, run as handles that reserve
// more (freeCredits, hextend): they finish while the test holds FS.mu
// for reading; then the blocks are free again and e2fsck finds the
// image clean.
func TestHandleBigUnlink(t *testing.T) {
	dev, f := handleFS(t)
	if _, err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	free := f.Statfs().Free
	chunk := make([]byte, 1<<20)
	var ino uint32
	for _, name := range []string{"big", "big2"} {
		var err error
		ino, err = f.Create(RootIno, name, linux.S_IFREG|0o644, 0, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			for k := range chunk {
				chunk[k] = byte(i + k>>10)
			}
			if _, err := f.WriteAt(ino, chunk, int64(i)<<20); err != nil {
				t.Fatal(err)
			}
		}
	}
	small, err := f.Create(RootIno, "small", linux.S_IFREG|0o644, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.mu.RLock()
	in, err := f.iget(ino)
	f.mu.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
	n, ok := f.freeCredits(in)
	if !ok || n < 2*2 || in.blocks <= handleMaxFree {
		t.Fatalf("the file: %d sectors, %d credits more to free (%v); want over %d sectors in two groups or more", in.blocks, n, ok, handleMaxFree)
	}
	before := f.handlesRun.Load()
	inHandles(t, f,
		func() error { return f.Unlink(RootIno, "big") },
		func() error { return f.Rename(RootIno, "small", RootIno, "big2", 0) })
	if f.handlesRun.Load()-before != 2 {
		t.Errorf("%d operations ran as handles, want 2", f.handlesRun.Load()-before)
	}
	if _, err := f.Lookup(RootIno, "big"); err != linux.ENOENT {
		t.Errorf("big after its unlink: %v", err)
	}
	if got, err := f.Lookup(RootIno, "big2"); err != nil || got != small {
		t.Errorf("big2 after the rename onto it: %d, %v; want %d", got, err, small)
	}
	if _, err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := f.Statfs().Free; got != free {
		t.Errorf("%d blocks free after the unlink, the rename and a commit, want %d as before the files", got, free)
	}
	noneReserved(t, f)
	fsck(t, dev)
}

// TestHandleTouchAtime checks that TouchAtime runs as a handle: an
// access time moved while the test holds FS.mu for reading. A stale
// time moves to now and is written (the remount reads it back), a fresh
// one stays, and the count returned is that of the inode writes when
// the time was found fresh; e2fsck must find the image clean.
func TestHandleTouchAtime(t *testing.T) {
	dev := loadImage(t, mkfs(t, "32M", "", "-t", "ext4"))
	opts := Options{Pages: pagecache.New(&mm.HeapPhys{}, 4<<20)}
	f, err := mountDev(t, dev, opts)
	if err != nil {
		t.Fatal(err)
	}
	ino, err := f.Create(RootIno, "file", linux.S_IFREG|0o644, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	old := linux.Timespec{Sec: 1000}
	ok(t, f.SetAttr(ino, SetAtime, Attr{Atime: old}))
	var seq, fresh uint64
	var until int64
	var saw [2]linux.Timespec
	inHandles(t, f,
		func() (err error) { // stale: moves
			calls := 0
			seq, until, err = f.TouchAtime(ino, func(a, m, c, now linux.Timespec) bool {
				if calls++; calls == 1 { // (asked again once moved)
					saw[0] = a
				}
				return a == old
			})
			return err
		},
		func() (err error) { // fresh: stays
			fresh, _, err = f.TouchAtime(ino, func(a, m, c, now linux.Timespec) bool {
				saw[1] = a
				return false
			})
			return err
		})
	st, err := f.Stat(ino)
	if err != nil {
		t.Fatal(err)
	}
	if saw[0] != old || st.Atime == old || saw[1] != st.Atime {
		t.Errorf("access times seen %v, %v, now %v; want %v, then the new one", saw[0], saw[1], st.Atime, old)
	}
	if seq == 0 || fresh != seq || fresh != f.Changes() || until != st.Atime.Sec+24*3600 {
		t.Errorf("counts %d, %d (file system's %d), until %d; want equal and nonzero, until atime+1d", seq, fresh, f.Changes(), until)
	}
	ok(t, f.Unmount())
	if f, err = mountDev(t, dev, opts); err != nil {
		t.Fatal(err)
	}
	if st2, err := f.Stat(ino); err != nil || st2.Atime != st.Atime {
		t.Errorf("after remount: %v, %v; want %v", st2.Atime, err, st.Atime)
	}
	ok(t, f.Unmount())
	fsck(t, dev)
}

// TestHandleTruncate checks that truncates run as handles (Truncate and
// a SetAttr of the size): a small file cut inside a page, grown, and a
// 10 MiB file in several groups cut to 100 KiB + 1 (more credits,
// freeCredits), each while the test holds FS.mu for reading. The bytes
// before each new end stay, those after it read as zeros once grown,
// the blocks freed come back after a commit, no credits stay reserved,
// and e2fsck finds the image clean.
func TestHandleTruncate(t *testing.T) {
	dev, f := handleFS(t)
	pattern := func(off int64, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte((off+int64(i))*7 + (off+int64(i))>>12)
		}
		return b
	}
	write := func(name string, size int) uint32 {
		ino, err := f.Create(RootIno, name, linux.S_IFREG|0o644, 0, 0, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off < size; off += 1 << 20 {
			if _, err := f.WriteAt(ino, pattern(int64(off), min(1<<20, size-off)), int64(off)); err != nil {
				t.Fatal(err)
			}
		}
		return ino
	}
	if _, err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	free := f.Statfs().Free
	small, big := write("small", 20000), write("big", 10<<20)
	if err := f.Sync(); err != nil { // written back: the cut page's head must come back from the disk
		t.Fatal(err)
	}
	written := f.Statfs()
	before := f.handlesRun.Load()
	inHandles(t, f,
		func() error { return f.Truncate(small, 5000) },
		func() error { return f.SetAttr(small, SetSize, Attr{Size: 9000}) },
		func() error { return f.Truncate(big, 100<<10+1) })
	if got := f.handlesRun.Load() - before; got != 3 {
		t.Errorf("%d truncates ran as handles, want 3", got)
	}
	check := func(ino uint32, size, keep int) {
		t.Helper()
		got := make([]byte, size+100)
		n, err := f.ReadAt(ino, got, 0)
		if n != size || err != nil && n != size {
			t.Fatalf("inode %d: read %d bytes, %v; want %d", ino, n, err, size)
		}
		want := append(pattern(0, keep), make([]byte, size-keep)...)
		if !bytes.Equal(got[:n], want) {
			t.Errorf("inode %d: the bytes after the truncates differ from the first %d kept and zeros to %d", ino, keep, size)
		}
	}
	check(small, 9000, 5000)
	check(big, 100<<10+1, 100<<10+1)
	if _, err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, want := f.Statfs().Free-written.Free, uint64(10<<20-100<<10-8192)/uint64(written.BlockSize); got < want {
		t.Errorf("the truncates freed %d blocks, want %d or more", got, want)
	}
	ok(t, f.Unlink(RootIno, "small"))
	ok(t, f.Unlink(RootIno, "big"))
	if _, err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := f.Statfs().Free; got != free {
		t.Errorf("%d blocks free after the files went, want %d as before them", got, free)
	}
	noneReserved(t, f)
	fsck(t, dev)
}

// handleFS is a fresh 32 MiB ext4 image mounted with a page cache.
func handleFS(t *testing.T) (*memDev, *FS) {
	t.Helper()
	dev := loadImage(t, mkfs(t, "32M", "", "-t", "ext4"))
	f, err := mountDev(t, dev, Options{Pages: pagecache.New(&mm.HeapPhys{}, 4<<20)})
	if err != nil {
		t.Fatal(err)
	}
	return dev, f
}

// noneReserved checks that the handles gave back every credit they took.
func noneReserved(t *testing.T, f *FS) {
	t.Helper()
	f.jmu.Lock()
	reserved := f.jnl.reserved
	f.jmu.Unlock()
	if reserved != 0 {
		t.Errorf("%d blocks of the transaction still reserved", reserved)
	}
}
