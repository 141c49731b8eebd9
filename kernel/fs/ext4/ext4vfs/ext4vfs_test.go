package ext4vfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/ext4"
	"shortbread/kernel/fs/tmpfs"
	"shortbread/kernel/vfs"
)

type memDev struct {
	mu sync.Mutex
	b  []byte
}

func (d *memDev) snapshot() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]byte(nil), d.b...)
}

func (d *memDev) ReadAt(p []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if off < 0 || off+int64(len(p)) > int64(len(d.b)) {
		return 0, fmt.Errorf("read past the end")
	}
	return copy(p, d.b[off:]), nil
}

func (d *memDev) WriteAt(p []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if off < 0 || off+int64(len(p)) > int64(len(d.b)) {
		return 0, fmt.Errorf("write past the end")
	}
	return copy(d.b[off:], p), nil
}

func (d *memDev) Flush() error { return nil }
func (d *memDev) Size() int64  { return int64(len(d.b)) }

func tool(t testing.TB, name string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		path = "/usr/sbin/" + name
		if _, err := os.Stat(path); err != nil {
			t.Skipf("%s not installed", name)
		}
	}
	out, err := exec.Command(path, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// setup makes an ext4 image from a small tree, mounts it on /mnt of a
// tmpfs-rooted VFS and returns the VFS, a root context and the device.
func setup(t *testing.T) (*vfs.VFS, *vfs.Ctx, *memDev, *FS) {
	src := filepath.Join(t.TempDir(), "src")
	os.MkdirAll(filepath.Join(src, "dir"), 0o755)
	os.WriteFile(filepath.Join(src, "hello"), []byte("hello from mke2fs\n"), 0o644)
	for i := 0; i < 1000; i++ {
		os.WriteFile(filepath.Join(src, "dir", fmt.Sprintf("f%04d", i)), nil, 0o644)
	}
	img := filepath.Join(t.TempDir(), "img")
	tool(t, "mke2fs", "-q", "-F", "-t", "ext4", "-d", src, img, "32M")
	dev, disk := mountImage(t, img)
	var logged []string
	fs := New(disk, Options{Dev: linux.MakeDev(254, 0), Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }})
	v, c := mountOnMnt(t, fs)
	t.Cleanup(func() {
		if len(logged) > 0 {
			t.Errorf("logged: %q", logged)
		}
	})
	return v, c, dev, fs
}

// mountImage reads the image file img into a memory device and mounts
// the ext4 file system on it.
func mountImage(t *testing.T, img string) (*memDev, *ext4.FS) {
	t.Helper()
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	dev := &memDev{b: b}
	disk, err := ext4.Mount(dev, ext4.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return dev, disk
}

// mountOnMnt mounts fs on /mnt of a new tmpfs-rooted VFS and returns the
// VFS and a root context.
func mountOnMnt(t *testing.T, fs *FS) (*vfs.VFS, *vfs.Ctx) {
	t.Helper()
	root, err := fs.Root()
	if err != nil {
		t.Fatal(err)
	}
	v, err := vfs.New(tmpfs.New(tmpfs.Options{Dev: linux.MakeDev(0, 1)}).Root(), "rootfs")
	if err != nil {
		t.Fatal(err)
	}
	c := &vfs.Ctx{Root: v.Root(), Cwd: v.Root(), Umask: 0o22}
	if err := v.Mkdir(c, nil, "/mnt", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := v.Mount(c, nil, "/mnt", root, "ext4", 0); err != nil {
		t.Fatal(err)
	}
	return v, c
}

// replayed writes the device's image to a file with its journal replayed
// by e2fsck (Linux's recovery code, nothing else repaired), as a power
// cut now and a mount would leave it: a commit leaves the blocks in the
// log until a checkpoint.
func replayed(t *testing.T, dev *memDev) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "out")
	os.WriteFile(img, dev.snapshot(), 0o644)
	tool(t, "e2fsck", "-E", "journal_only", "-y", img)
	return img
}

func fsck(t *testing.T, dev *memDev) {
	t.Helper()
	tool(t, "e2fsck", "-fn", replayed(t, dev))
}

func TestVFS(t *testing.T) {
	v, c, dev, fs := setup(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	f, err := v.Open(c, nil, "/mnt/hello", linux.O_RDONLY, 0)
	must(err)
	buf := make([]byte, 100)
	n, err := f.Read(buf, nil)
	f.DecRef()
	if string(buf[:n]) != "hello from mke2fs\n" || err != nil {
		t.Fatalf("read %q %v", buf[:n], err)
	}

	// getdents with a small buffer: every name once, plus . and ..
	d, err := v.Open(c, nil, "/mnt/dir", linux.O_RDONLY|linux.O_DIRECTORY, 0)
	must(err)
	names := map[string]int{}
	// Remove and add names while listing: none may repeat.
	must(v.Unlink(c, nil, "/mnt/dir/f0999"))
	for {
		dbuf := make([]byte, 512)
		n, err := d.Getdents(dbuf)
		must(err)
		if n == 0 {
			break
		}
		for off := 0; off < n; {
			reclen := int(dbuf[off+16]) | int(dbuf[off+17])<<8
			name := string(bytes.TrimRight(dbuf[off+19:off+reclen], "\x00"))
			names[name]++
			off += reclen
		}
		if len(names) == 300 {
			must(v.Unlink(c, nil, "/mnt/dir/f0100"))
			g, err := v.Open(c, nil, "/mnt/dir/new", linux.O_CREAT|linux.O_WRONLY, 0o644)
			must(err)
			g.DecRef()
		}
	}
	d.DecRef()
	for name, k := range names {
		if k != 1 {
			t.Errorf("%s listed %d times", name, k)
		}
	}
	if len(names) < 1000 || names["f0500"] != 1 || names["."] != 1 || names["f0999"] != 0 {
		t.Errorf("%d names listed", len(names))
	}

	// Create, write, append, truncate.
	f, err = v.Open(c, nil, "/mnt/new.txt", linux.O_CREAT|linux.O_WRONLY|linux.O_APPEND, 0o640)
	must(err)
	for i := 0; i < 3; i++ {
		if _, err := f.Write([]byte(fmt.Sprintf("line %d\n", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	f.DecRef()
	must(v.Truncate(c, nil, "/mnt/new.txt", 14))
	must(v.Mkdir(c, nil, "/mnt/sub", 0o750))
	must(v.Rename(c, nil, "/mnt/new.txt", nil, "/mnt/sub/moved.txt", 0))
	must(v.Symlink(c, "sub/moved.txt", nil, "/mnt/link"))
	must(v.Link(c, nil, "/mnt/sub/moved.txt", nil, "/mnt/hard", 0))
	must(v.Mknod(c, nil, "/mnt/fifo", linux.S_IFIFO|0o600, 0))
	must(v.Chmod(c, nil, "/mnt/hard", 0o600, 0))
	must(v.Chown(c, nil, "/mnt/hard", 42, 43, 0))
	f, err = v.Open(c, nil, "/mnt/link", linux.O_RDONLY, 0)
	must(err)
	n, _ = f.Read(buf, nil)
	f.DecRef()
	if string(buf[:n]) != "line 0\nline 1\n" {
		t.Errorf("through the symlink: %q", buf[:n])
	}
	a, err := v.Stat(c, nil, "/mnt/sub/moved.txt", 0)
	must(err)
	if a.Nlink != 2 || a.Mode != linux.S_IFREG|0o600 || a.UID != 42 || a.Size != 14 || a.Dev != linux.MakeDev(254, 0) {
		t.Errorf("stat %+v", a)
	}

	// An open file outlives its names.
	f, err = v.Open(c, nil, "/mnt/hard", linux.O_RDWR, 0)
	must(err)
	must(v.Unlink(c, nil, "/mnt/hard"))
	must(v.Unlink(c, nil, "/mnt/sub/moved.txt"))
	must(v.Unlink(c, nil, "/mnt/link"))
	if _, err := f.Write([]byte("still here"), nil); err != nil {
		t.Fatal(err)
	}
	f.DecRef()
	must(v.Rmdir(c, nil, "/mnt/sub"))
	if err := v.Rmdir(c, nil, "/mnt/dir"); !errors.Is(err, linux.ENOTEMPTY) {
		t.Errorf("rmdir of a full directory: %v", err)
	}
	root, _ := v.Lookup(c, nil, "/mnt", 0)
	s := root.Mount().StatFS()
	if s.Type != Magic || s.Bsize != 1024 || s.Blocks != 32768 || s.Bfree == 0 || s.Files == 0 {
		t.Errorf("statfs %+v", s)
	}
	must(fs.Sync())
	fsck(t, dev)
	out := tool(t, "debugfs", "-R", "ls -l /", replayed(t, dev))
	if !strings.Contains(out, "fifo") || strings.Contains(out, "hard") {
		t.Errorf("debugfs ls:\n%s", out)
	}
}

// TestIdentity: one inode, one VFS object, while anyone holds it (the
// FIFO table and bound sockets key on it); collected ones are forgotten.
func TestIdentity(t *testing.T) {
	v, c, _, _ := setup(t)
	if err := v.Mknod(c, nil, "/mnt/fifo", linux.S_IFIFO|0o600, 0); err != nil {
		t.Fatal(err)
	}
	a, _ := v.Lookup(c, nil, "/mnt/fifo", 0)
	root, _ := v.Lookup(c, nil, "/mnt", 0)
	dir := root.Inode().(vfs.Dir)
	b, err := dir.Lookup("fifo")
	if err != nil {
		t.Fatal(err)
	}
	if a.Inode() != b {
		t.Error("two objects for one inode")
	}
}

// TestCommitter: a write becomes durable without Sync, by the timer.
func TestCommitter(t *testing.T) {
	v, c, dev, fs := setup(t)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { fs.Committer(stop, 20*time.Millisecond); close(done) }()
	f, err := v.Open(c, nil, "/mnt/timed", linux.O_CREAT|linux.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("committed by the timer"), nil)
	f.DecRef()
	deadline := time.Now().Add(10 * time.Second)
	// Snapshots of the disk (any moment, even inside a commit) are what a
	// power cut would leave: once one holds the file, the timer did it.
	for {
		g, err := ext4.Mount(&memDev{b: dev.snapshot()}, ext4.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Lookup(ext4.RootIno, "timed"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the timer never committed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	<-done
	fsck(t, dev)
}

// TestReusedNumber: a node still held for an inode number that was freed
// (a second mount's stale dentry holds it) is not handed out for the file
// of another type that gets the number next.
func TestReusedNumber(t *testing.T) {
	v, c, _, _ := setup(t)
	root, _ := v.Lookup(c, nil, "/mnt", 0)
	dir := root.Inode().(vfs.Dir)
	f, err := dir.Create("gone", linux.S_IFREG|0o644, 0, vfs.Owner{})
	if err != nil {
		t.Fatal(err)
	}
	if err := dir.Unlink("gone"); err != nil {
		t.Fatal(err)
	}
	d, err := dir.Create("dir2", linux.S_IFDIR|0o755, 0, vfs.Owner{})
	if err != nil {
		t.Fatal(err)
	}
	if fa, da := f.Attr(), d.Attr(); fa.Ino != da.Ino {
		t.Skipf("the number was not reused (%d, then %d)", fa.Ino, da.Ino)
	}
	got, err := dir.Lookup("dir2")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.(vfs.Dir); !ok {
		t.Errorf("the directory that reused a held file's number is a %T", got)
	}
	runtime.KeepAlive(f)
}

// TestAtimeCache: a read that found the access time fresh is remembered
// (no lock, no inode decoding on the next read), and whatever makes it
// stale again is seen: a write, a change of times, a day passing.
func TestAtimeCache(t *testing.T) {
	img := filepath.Join(t.TempDir(), "img")
	tool(t, "mke2fs", "-q", "-F", "-t", "ext4", img, "8M")
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	disk, err := ext4.Mount(&memDev{b: b}, ext4.Options{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	fs := New(disk, Options{Dev: linux.MakeDev(254, 0)})
	ino, err := disk.Create(ext4.RootIno, "a", linux.S_IFREG|0o644, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	in, err := fs.inode(ino)
	if err != nil {
		t.Fatal(err)
	}
	n := in.(vfs.Atimer)
	atime := func() int64 { return in.Attr().Atime.Sec }
	read := func(what string, want int64) {
		t.Helper()
		n.TouchAtime(false)
		if got := atime(); got != want {
			t.Errorf("%s: atime %d, want %d", what, got-1_800_000_000, want-1_800_000_000)
		}
	}
	start := now.Unix()
	now = now.Add(time.Second)
	read("first read (atime = mtime)", start+1)
	now = now.Add(time.Second)
	read("second read (fresh)", start+1)
	changes := disk.Changes()
	now = now.Add(time.Second)
	read("third read (fresh, cached)", start+1)
	if disk.Changes() != changes {
		t.Errorf("a fresh read wrote the inode")
	}
	if _, err := in.(vfs.Regular).WriteAt([]byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	read("read after a write", start+4)
	now = now.Add(time.Second)
	if err := in.SetAttr(&vfs.SetAttr{Mask: vfs.SetAtime, Atime: linux.Timespec{Sec: start - 3600}}); err != nil {
		t.Fatal(err)
	}
	read("read after utimes into the past", start+5)
	now = now.Add(24 * time.Hour)
	read("read a day later", start+5+24*3600)
	n.TouchAtime(true)
	if atime() != start+5+24*3600 {
		t.Errorf("strict read at the same second moved atime")
	}
	now = now.Add(time.Second)
	n.TouchAtime(true)
	if atime() != start+6+24*3600 {
		t.Errorf("strict read: atime %d, want now", atime())
	}
}
