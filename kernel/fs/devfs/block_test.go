package devfs_test

import (
	"bytes"
	"errors"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/blk"
	"shortbread/kernel/fs/devfs"
	"shortbread/kernel/fs/tmpfs"
	"shortbread/kernel/vfs"
)

func TestBlockFile(t *testing.T) {
	root := tmpfs.New(tmpfs.Options{})
	v, _ := vfs.New(root.Root(), "tmpfs")
	c := &vfs.Ctx{}
	v.Mkdir(c, nil, "/dev", 0o755)
	v.Mkdir(c, nil, "/tmp", 0o755)
	dev := devfs.New(devfs.Options{Dev: linux.MakeDev(0, 5)})
	disk := blk.NewMem("vda", 512, 2048) // 1 MiB
	dev.AddBlock("vda", linux.MakeDev(devfs.VirtioBlkMajor, 0), disk)
	v.Mount(c, nil, "/dev", dev.Root(), "devtmpfs", 0)
	dev.Register(v)

	f := open(t, v, c, "/dev/vda", linux.O_RDWR)
	a := f.Attr()
	if a.Type() != linux.S_IFBLK || a.Rdev != linux.MakeDev(254, 0) {
		t.Fatalf("attr %+v", a)
	}
	d, ok := devfs.BlockOf(f)
	if !ok || d != blk.Device(disk) {
		t.Fatal("BlockOf")
	}
	if end, err := f.Seek(0, linux.SEEK_END); end != 1<<20 || err != nil {
		t.Fatalf("SEEK_END %d %v", end, err)
	}
	f.Seek(1000, linux.SEEK_SET)
	if n, err := f.Write([]byte("hello"), nil); n != 5 || err != nil {
		t.Fatalf("write %d %v", n, err)
	}
	got := make([]byte, 7)
	if n, err := f.Pread(got, 999, nil); n != 7 || err != nil || !bytes.Equal(got, []byte("\x00hello\x00")) {
		t.Fatalf("pread %q %d %v", got, n, err)
	}
	if _, err := f.Pwrite([]byte("x"), 1<<20, nil); !errors.Is(err, linux.ENOSPC) {
		t.Errorf("write at the end: %v", err)
	}
	if n, err := f.Pread(got, 1<<20, nil); n != 0 || err != nil {
		t.Errorf("read at the end: %d %v", n, err)
	}
	s, ok := f.Impl().(vfs.Syncer)
	if !ok || s.Sync() != nil || disk.Flushes != 1 {
		t.Errorf("sync: %v, %d flushes", ok, disk.Flushes)
	}
	disk.Fail = func(sector uint64, write bool) bool { return sector == 5 }
	if _, err := f.Pread(got, 5*512, nil); !errors.Is(err, linux.EIO) {
		t.Errorf("bad sector: %v", err)
	}
	f.DecRef()

	// mknod'ed nodes elsewhere open the same disk through the device table.
	if err := v.Mknod(c, nil, "/tmp/disk", linux.S_IFBLK|0o600, linux.MakeDev(254, 0)); err != nil {
		t.Fatal(err)
	}
	g := open(t, v, c, "/tmp/disk", linux.O_RDONLY)
	defer g.DecRef()
	if n, _ := g.Pread(got[:5], 1000, nil); n != 5 || string(got[:5]) != "hello" {
		t.Errorf("through mknod: %q", got[:5])
	}
}
