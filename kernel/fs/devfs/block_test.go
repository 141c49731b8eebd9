package devfs_test

import (
	"bytes"
	"encoding/binary"
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
	disk := blk.NewMem("vda", 512, 2048) // 1 MiB
	disks := blk.NewDisks(nil, nil)
	disks.Add(disk, 254, 0, 16)
	dev := devfs.New(devfs.Options{Dev: linux.MakeDev(0, 5), Blocks: disks})
	v.Mount(c, nil, "/dev", dev.Root(), "devtmpfs", 0)
	dev.Register(v)

	f := open(t, v, c, "/dev/vda", linux.O_RDWR)
	a := f.Attr()
	if a.Type() != linux.S_IFBLK || a.Rdev != linux.MakeDev(254, 0) {
		t.Fatalf("attr %+v", a)
	}
	// The device file reaches the disk through the wrapper that counts
	// its requests for /proc/diskstats.
	d, ok := devfs.BlockOf(f)
	if c, counted := d.(*blk.Counted); !ok || d != disks.Nodes()[0].Dev || !counted || c.Unwrap() != blk.Device(disk) {
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

// Partitions appear in /dev with their numbers, follow BLKRRPART, and
// keep their disk's bytes apart.
func TestPartitionFiles(t *testing.T) {
	root := tmpfs.New(tmpfs.Options{})
	v, _ := vfs.New(root.Root(), "tmpfs")
	c := &vfs.Ctx{}
	v.Mkdir(c, nil, "/dev", 0o755)
	disk := blk.NewMem("sda", 512, 4096) // 2 MiB
	mbr := make([]byte, 512)
	entry := func(i int, start, size uint32) {
		e := mbr[446+16*i:]
		e[4] = 0x83
		binary.LittleEndian.PutUint32(e[8:], start)
		binary.LittleEndian.PutUint32(e[12:], size)
	}
	entry(0, 2048, 1024)
	mbr[510], mbr[511] = 0x55, 0xaa
	disk.WriteAt(mbr, 0)
	disks := blk.NewDisks(nil, nil)
	disks.Add(disk, 8, 0, 16)
	dev := devfs.New(devfs.Options{Dev: linux.MakeDev(0, 5), Blocks: disks})
	v.Mount(c, nil, "/dev", dev.Root(), "devtmpfs", 0)
	dev.Register(v)

	p := open(t, v, c, "/dev/sda1", linux.O_RDWR)
	if a := p.Attr(); a.Type() != linux.S_IFBLK || a.Rdev != linux.MakeDev(8, 1) {
		t.Fatalf("sda1 attr %+v", a)
	}
	if end, _ := p.Seek(0, linux.SEEK_END); end != 1024*512 {
		t.Errorf("sda1 size %d", end)
	}
	if n, err := p.Pwrite([]byte("part"), 100, nil); n != 4 || err != nil {
		t.Fatal(n, err)
	}
	disk.ReadAt(mbr, 2048*512)
	if string(mbr[100:104]) != "part" {
		t.Errorf("write to sda1 not at sector 2048")
	}
	d := open(t, v, c, "/dev/sda", linux.O_RDWR)
	if err := devfs.RereadPartitions(p); !errors.Is(err, linux.EINVAL) {
		t.Errorf("BLKRRPART on a partition: %v", err)
	}
	if err := devfs.RereadPartitions(d); !errors.Is(err, linux.EBUSY) {
		t.Errorf("BLKRRPART with sda1 open: %v", err)
	}
	p.DecRef()
	// A second partition, then BLKRRPART.
	disk.ReadAt(mbr[:512], 0)
	entry(1, 3072, 512)
	disk.WriteAt(mbr[:512], 0)
	if _, err := v.Stat(c, nil, "/dev/sda2", 0); !errors.Is(err, linux.ENOENT) {
		t.Errorf("sda2 before BLKRRPART: %v", err)
	}
	if err := devfs.RereadPartitions(d); err != nil {
		t.Fatal(err)
	}
	q := open(t, v, c, "/dev/sda2", linux.O_RDONLY)
	if end, _ := q.Seek(0, linux.SEEK_END); end != 512*512 {
		t.Errorf("sda2 size %d", end)
	}
	q.DecRef()
	d.DecRef()
	var names []string
	dir := open(t, v, c, "/dev", linux.O_RDONLY|linux.O_DIRECTORY)
	buf := make([]byte, 4096)
	n, err := dir.Getdents(buf)
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < n; {
		e, l := linux.DecodeDirent64(buf[off:n])
		names = append(names, e.Name)
		off += l
	}
	dir.DecRef()
	if n := len(names); n < 3 || names[n-3] != "sda" || names[n-2] != "sda1" || names[n-1] != "sda2" {
		t.Errorf("/dev lists %q", names)
	}
}
