package devfs

// Block device files: /dev lists the disks and partitions of
// Options.Blocks as they are at each lookup, so partitions a BLKRRPART
// adds or removes appear and vanish without a remount.

import (
	"errors"
	"sync"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/blk"
	"shortbread/kernel/vfs"
)

// blockNodes keeps one inode per block device for as long as the device
// is listed, so the VFS's cached dentries stay valid.
type blockNodes struct {
	mu    sync.Mutex
	nodes map[blk.Device]*node // protected by mu
}

// blockList returns the block devices and their inodes now.
func (fs *FS) blockList() ([]blk.Node, []*node) {
	if fs.o.Blocks == nil {
		return nil, nil
	}
	list := fs.o.Blocks.Nodes()
	fs.blocks.mu.Lock()
	defer fs.blocks.mu.Unlock()
	old := fs.blocks.nodes
	fs.blocks.nodes = make(map[blk.Device]*node, len(list))
	inodes := make([]*node, len(list))
	for i, b := range list {
		n := old[b.Dev]
		if n == nil {
			n = fs.newNode(linux.S_IFBLK|0o660, linux.MakeDev(b.Major, b.Minor))
			n.GID = 6 // disk
			d := b.Dev
			n.open = func(*vfs.Ctx, uint32) (vfs.File, error) { return fs.openBlock(d), nil }
		}
		fs.blocks.nodes[b.Dev] = n
		inodes[i] = n
	}
	return list, inodes
}

func (fs *FS) blockLookup(name string) (*node, bool) {
	list, inodes := fs.blockList()
	for i, b := range list {
		if b.Name == name {
			return inodes[i], true
		}
	}
	return nil, false
}

// registerBlocks enters the block devices there are now in v's device
// table, opened by number (a partition a later BLKRRPART makes is found
// only through /dev).
func (fs *FS) registerBlocks(v *vfs.VFS) {
	list, _ := fs.blockList()
	for _, b := range list {
		v.RegisterDevice(linux.S_IFBLK, linux.MakeDev(b.Major, b.Minor), blockOpener{fs, b.Major, b.Minor})
	}
}

type blockOpener struct {
	fs           *FS
	major, minor uint32
}

func (o blockOpener) Open(uint32) (vfs.File, error) {
	n, ok := o.fs.o.Blocks.Find(o.major, o.minor)
	if !ok {
		return nil, linux.ENXIO
	}
	return o.fs.openBlock(n.Dev), nil
}

func (fs *FS) openBlock(d blk.Device) *blockFile {
	if p, ok := d.(*blk.Partition); ok {
		p.Opened()
	}
	return &blockFile{d: d, disks: fs.o.Blocks}
}

// BlockOf returns the disk behind f when f is an open block device
// file, for the BLK* ioctls.
func BlockOf(f *vfs.OpenFile) (blk.Device, bool) {
	b, ok := f.Impl().(*blockFile)
	if !ok {
		return nil, false
	}
	return b.d, true
}

// RereadPartitions reads the partition table of the whole disk f is
// open on again (BLKRRPART): EINVAL on a partition, EBUSY while one of
// the disk's partitions is open.
func RereadPartitions(f *vfs.OpenFile) error {
	b, ok := f.Impl().(*blockFile)
	if !ok || b.disks == nil {
		return linux.ENOTTY
	}
	switch err := b.disks.Reread(b.d); {
	case errors.Is(err, blk.ErrNotDisk):
		return linux.EINVAL
	case errors.Is(err, blk.ErrBusy):
		return linux.EBUSY
	}
	return nil
}

// blockFile is an open block device: any byte range, read and written
// through to the disk (no cache yet).
type blockFile struct {
	d     blk.Device
	disks *blk.Disks // the set d is in (BLKRRPART)
}

func (f *blockFile) Read(_ vfs.Blocking, p []byte, off int64) (int, error) {
	n, err := blk.ReadBytes(f.d, p, off)
	return n, blockErrno(n, err)
}

func (f *blockFile) Write(_ vfs.Blocking, p []byte, off int64) (int, error) {
	n, err := blk.WriteBytes(f.d, p, off)
	return n, blockErrno(n, err)
}

func (f *blockFile) Lseek(pos, off int64, whence int) (int64, error) {
	return vfs.SeekSized(pos, off, whence, blk.Size(f.d))
}

func (f *blockFile) Sync() error { return blockErrno(0, f.d.Flush()) }

func (f *blockFile) Release() {
	if p, ok := f.d.(*blk.Partition); ok {
		p.Closed()
	}
}

// blockErrno is what a program sees: a partial transfer counts; the
// device's failures are EIO (the driver logged which sector).
func blockErrno(n int, err error) error {
	switch {
	case err == nil || n > 0:
		return nil
	case errors.Is(err, blk.ErrRange):
		return linux.ENOSPC
	case errors.Is(err, blk.ErrReadOnly):
		return linux.EROFS
	}
	return linux.EIO
}
