package vfs_test

import (
	"fmt"
	"sync"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// procDir is a directory whose names change behind the VFS's back, like
// /proc: it implements vfs.Volatile.
type procDir struct {
	mu    sync.Mutex
	names map[string]*vfs.AnonInode
}

func (d *procDir) Attr() vfs.Attr             { return vfs.Attr{Ino: 1, Mode: linux.S_IFDIR | 0o555, Nlink: 2} }
func (d *procDir) SetAttr(*vfs.SetAttr) error { return linux.EPERM }
func (d *procDir) Create(string, uint32, uint64, vfs.Owner) (vfs.Inode, error) {
	return nil, linux.EPERM
}
func (d *procDir) Symlink(string, string, vfs.Owner) (vfs.Inode, error) { return nil, linux.EPERM }
func (d *procDir) Link(string, vfs.Inode) error                         { return linux.EPERM }
func (d *procDir) Unlink(string) error                                  { return linux.EPERM }
func (d *procDir) Rmdir(string) error                                   { return linux.EPERM }
func (d *procDir) Rename(string, vfs.Dir, string, uint32) error         { return linux.EPERM }
func (d *procDir) ReadDir(int64, func(vfs.DirEntry) bool) error         { return nil }
func (d *procDir) Volatile()                                            {}

func (d *procDir) Lookup(name string) (vfs.Inode, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if in := d.names[name]; in != nil {
		return in, nil
	}
	return nil, linux.ENOENT
}

func TestVolatileDir(t *testing.T) {
	k := newKernelSys(t)
	k.mkdir("proc", 0o555)
	pd := &procDir{names: map[string]*vfs.AnonInode{}}
	must(t, "mount", k.v.Mount(&k.ctx, nil, "/proc", pd, "proc", 0))
	_, err := k.stat("/proc/1")
	wantErr(t, "missing", err, linux.ENOENT)
	pd.mu.Lock()
	pd.names["1"] = vfs.NewAnonInode(linux.S_IFREG|0o444, vfs.Owner{})
	pd.mu.Unlock()
	a, err := k.stat("/proc/1")
	if err != nil || a.Mode != linux.S_IFREG|0o444 {
		t.Fatalf("appeared: %+v %v", a, err)
	}
	d1, _ := k.v.Lookup(&k.ctx, nil, "/proc/1", 0)
	d2, _ := k.v.Lookup(&k.ctx, nil, "/proc/1", 0)
	if d1 != d2 {
		t.Error("the same inode got two dentries")
	}
	pd.mu.Lock()
	delete(pd.names, "1")
	pd.mu.Unlock()
	_, err = k.stat("/proc/1")
	wantErr(t, "gone", err, linux.ENOENT)
}

type memDevice struct{ opened int }

func (m *memDevice) Open(flags uint32) (vfs.File, error) {
	m.opened++
	return constFile{}, nil
}

type constFile struct{}

func (constFile) Read(_ vfs.Blocking, p []byte, _ int64) (int, error) {
	return copy(p, "device"), nil
}
func (constFile) Write(_ vfs.Blocking, p []byte, _ int64) (int, error) { return len(p), nil }
func (constFile) Release()                                             {}

func TestDeviceNodes(t *testing.T) {
	k := newKernelSys(t)
	dev := &memDevice{}
	k.v.RegisterDevice(linux.S_IFCHR, linux.MakeDev(10, 200), dev)
	must(t, "mknod", k.mknod("mydev", linux.S_IFCHR|0o666, linux.MakeDev(10, 200)))
	a, _ := k.stat("mydev")
	if a.Rdev != linux.MakeDev(10, 200) || a.Mode != linux.S_IFCHR|0o644 {
		t.Errorf("device node: rdev %#x mode %#o", a.Rdev, a.Mode)
	}
	if got := readAll(k, "mydev"); got != "device" || dev.opened != 1 {
		t.Errorf("opening the node read %q, opened %d", got, dev.opened)
	}
	fd, _ := k.open("mydev", linux.O_RDWR, 0)
	_, err := k.lseek(fd, 0, linux.SEEK_SET)
	wantErr(t, "lseek on a stream device", err, linux.ESPIPE)
	k.close(fd)
	k.mknod("nodev", linux.S_IFCHR|0o666, linux.MakeDev(10, 201))
	_, err = k.open("nodev", linux.O_RDONLY, 0)
	wantErr(t, "unregistered device", err, linux.ENXIO)
	k.mknod("blk", linux.S_IFBLK|0o666, linux.MakeDev(10, 200))
	_, err = k.open("blk", linux.O_RDONLY, 0)
	wantErr(t, "block device with a char device's number", err, linux.ENXIO)
	k.mknod("sock", linux.S_IFSOCK|0o666, 0)
	_, err = k.open("sock", linux.O_RDONLY, 0)
	wantErr(t, "socket node", err, linux.ENXIO)
	k.as(1000, 1000, nil)
	wantErr(t, "mknod of a device by a user", k.mknod("x", linux.S_IFCHR|0o666, 0), linux.EPERM)
}

// TestConcurrentNamespace renames, creates, removes and looks up from
// many goroutines at once; run with -race. Every file must end up under
// exactly one of its two names.
func TestConcurrentNamespace(t *testing.T) {
	k := newKernelSys(t)
	k.mkdir("a", 0o777)
	k.mkdir("b", 0o777)
	const files = 20
	for i := range files {
		create(t, k, fmt.Sprintf("a/f%d", i), "x")
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := k.ctx
			for i := range 200 {
				n := (i + g) % files
				src, dst := fmt.Sprintf("/a/f%d", n), fmt.Sprintf("/b/f%d", n)
				if i%2 == 1 {
					src, dst = dst, src
				}
				k.v.Rename(&c, nil, src, nil, dst, linux.RENAME_NOREPLACE)
				name := fmt.Sprintf("/a/tmp%d-%d", g, i)
				if f, err := k.v.Open(&c, nil, name, linux.O_CREAT|linux.O_WRONLY, 0o644); err == nil {
					f.DecRef()
				}
				k.v.Unlink(&c, nil, name)
				k.v.Mkdir(&c, nil, name, 0o755)
				k.v.Rmdir(&c, nil, name)
			}
		}()
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := k.ctx
			buf := make([]byte, 1024)
			for i := range 300 {
				k.v.Stat(&c, nil, fmt.Sprintf("/a/f%d", i%files), 0)
				if f, err := k.v.Open(&c, nil, "/a", linux.O_RDONLY, 0); err == nil {
					for {
						n, err := f.Getdents(buf)
						if n == 0 || err != nil {
							break
						}
					}
					f.DecRef()
				}
				k.v.Getcwd(&c, nil)
			}
		}()
	}
	wg.Wait()
	for i := range files {
		_, errA := k.stat(fmt.Sprintf("a/f%d", i))
		_, errB := k.stat(fmt.Sprintf("b/f%d", i))
		if (errA == nil) == (errB == nil) {
			t.Errorf("f%d: in a %v, in b %v", i, errA == nil, errB == nil)
		}
	}
	a, _ := k.stat("a")
	if a.Nlink != 2 {
		t.Errorf("a has nlink %d after all subdirectories went", a.Nlink)
	}
}

func TestPath(t *testing.T) {
	k := newKernelSys(t)
	k.mkdir("d", 0o755)
	fd, _ := k.open("d/f", linux.O_CREAT|linux.O_RDWR, 0o644)
	f, _ := k.fdt.Get(fd)
	defer f.DecRef()
	if got := k.v.Path(&k.ctx, f.Dentry()); got != "/d/f" {
		t.Errorf("path %q", got)
	}
	k.rename("d", "e")
	if got := k.v.Path(&k.ctx, f.Dentry()); got != "/e/f" {
		t.Errorf("path after renaming the directory %q", got)
	}
	k.unlink("e/f")
	if got := k.v.Path(&k.ctx, f.Dentry()); got != "/e/f (deleted)" {
		t.Errorf("path after unlink %q", got)
	}
	if got := k.v.Path(&k.ctx, k.v.Root()); got != "/" {
		t.Errorf("root path %q", got)
	}
}
