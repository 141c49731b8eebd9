package devfs_test

import (
	"errors"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/blk"
	"shortbread/kernel/fs/devfs"
	"shortbread/kernel/fs/tmpfs"
	"shortbread/kernel/mm"
	"shortbread/kernel/pagecache"
	"shortbread/kernel/vfs"
)

// cachedDisk mounts a devfs with a page cache over one in-memory disk
// (name, 1 MiB) and returns the disk.
func cachedDisk(t *testing.T, name string) (*vfs.VFS, *vfs.Ctx, *blk.Mem) {
	root := tmpfs.New(tmpfs.Options{})
	v, _ := vfs.New(root.Root(), "tmpfs")
	c := &vfs.Ctx{}
	v.Mkdir(c, nil, "/dev", 0o755)
	disk := blk.NewMem(name, 512, 2048)
	disks := blk.NewDisks(nil, nil)
	disks.Add(disk, 254, 0, 16)
	cache := pagecache.New(&mm.HeapPhys{}, 1<<20)
	dev := devfs.New(devfs.Options{Dev: linux.MakeDev(0, 5), Blocks: disks, Cache: cache})
	v.Mount(c, nil, "/dev", dev.Root(), "devtmpfs", 0)
	dev.Register(v)
	return v, c, disk
}

func fsync(f *vfs.OpenFile) error { return f.Impl().(vfs.Syncer).Sync() }

// A failed write-back reaches each open file of the device once, and
// one opened after a report not at all; a failure at the last close
// reaches the next open.
func TestBlockWriteBackFailurePerOpenFile(t *testing.T) {
	v, c, disk := cachedDisk(t, "vdx")
	disk.Fail = func(s uint64, write bool) bool { return write && s == 16 }
	a := open(t, v, c, "/dev/vdx", linux.O_RDWR)
	b := open(t, v, c, "/dev/vdx", linux.O_RDWR)
	if n, err := a.Pwrite([]byte("x"), 16*512, nil); n != 1 || err != nil {
		t.Fatalf("cached write: %d %v", n, err)
	}
	if err := fsync(a); !errors.Is(err, linux.EIO) {
		t.Fatalf("first file's fsync: %v", err)
	}
	if err := fsync(a); err != nil {
		t.Fatalf("first file's second fsync: %v", err)
	}
	late := open(t, v, c, "/dev/vdx", linux.O_RDWR)
	if err := fsync(b); !errors.Is(err, linux.EIO) {
		t.Fatalf("second file's fsync: %v", err)
	}
	if err := fsync(late); err != nil {
		t.Fatalf("a file opened after the report: %v", err)
	}
	// sync(2): nobody reported it, so a file opened after it does.
	b.Pwrite([]byte("y"), 16*512, nil)
	devfs.WritebackBlocks()
	after := open(t, v, c, "/dev/vdx", linux.O_RDWR)
	for i, f := range []*vfs.OpenFile{a, b, late, after} {
		if err := fsync(f); !errors.Is(err, linux.EIO) {
			t.Errorf("file %d after a failed sync(2): %v", i, err)
		}
		if err := fsync(f); err != nil {
			t.Errorf("file %d, again: %v", i, err)
		}
	}
	late.DecRef()
	after.DecRef()
	b.DecRef()
	a.Pwrite([]byte("z"), 16*512, nil)
	a.DecRef() // the last close writes back, and fails
	a = open(t, v, c, "/dev/vdx", linux.O_RDWR)
	if err := fsync(a); !errors.Is(err, linux.EIO) {
		t.Errorf("the next open after a failed last close: %v", err)
	}
	if err := fsync(a); err != nil {
		t.Errorf("again: %v", err)
	}
	a.DecRef()
}

// CheckDirect refuses O_DIRECT transfers out of the device's alignment,
// after the checks at the end, and only for O_DIRECT block files.
func TestCheckDirect(t *testing.T) {
	v, c, _ := cachedDisk(t, "vdy")
	f := open(t, v, c, "/dev/vdy", linux.O_RDWR|linux.O_DIRECT)
	defer f.DecRef()
	const end = 1 << 20
	for _, tc := range []struct {
		name  string
		iov   [][2]uint64
		off   int64
		write bool
		want  error
	}{
		{"aligned", [][2]uint64{{0x1000, 4096}}, 512, false, nil},
		{"odd offset", [][2]uint64{{0x1000, 4096}}, 100, false, linux.EINVAL},
		{"odd length", [][2]uint64{{0x1000, 100}}, 0, true, linux.EINVAL},
		{"odd buffer", [][2]uint64{{0x1004, 4096}}, 0, false, linux.EINVAL},
		{"odd piece", [][2]uint64{{0x1000, 100}, {0x2000, 412}}, 0, false, linux.EINVAL},
		{"pieces", [][2]uint64{{0x1000, 512}, {0x2000, 1024}}, 0, false, nil},
		{"empty", [][2]uint64{{0x1001, 0}}, 1, true, nil},
		{"at the end", [][2]uint64{{0x1001, 7}}, end, true, nil},
		{"cut at the end", [][2]uint64{{0x1000, 512}, {0x3001, 9}}, end - 512, false, nil},
		{"file position", [][2]uint64{{0x1000, 512}}, -1, false, nil},
	} {
		if err := devfs.CheckDirect(f, tc.iov, tc.off, tc.write); !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	f.Seek(3, linux.SEEK_SET)
	if err := devfs.CheckDirect(f, [][2]uint64{{0x1000, 512}}, -1, false); !errors.Is(err, linux.EINVAL) {
		t.Errorf("at an odd file position: %v", err)
	}
	// Without O_DIRECT (F_SETFL), or a read of a write-only file: no check.
	f.SetFlags(0)
	if err := devfs.CheckDirect(f, [][2]uint64{{0x1001, 100}}, 3, false); err != nil {
		t.Errorf("without O_DIRECT: %v", err)
	}
	w := open(t, v, c, "/dev/vdy", linux.O_WRONLY|linux.O_DIRECT)
	defer w.DecRef()
	if err := devfs.CheckDirect(w, [][2]uint64{{0x1001, 100}}, 3, false); err != nil {
		t.Errorf("a read of a write-only file: %v", err)
	}
	if err := devfs.CheckDirect(w, [][2]uint64{{0x1001, 100}}, 3, true); !errors.Is(err, linux.EINVAL) {
		t.Errorf("a write of a write-only file: %v", err)
	}
}
