package devfs

import (
	"errors"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/blk"
	"shortbread/kernel/vfs"
)

// VirtioBlkMajor is the block major Linux's virtio-blk gets (dynamic
// there, 254 on a Debian guest); each disk has 16 minors, partitions
// after the whole disk.
const VirtioBlkMajor = 254

// BlockExtMajor is Linux's block major for disks numbered dynamically
// (BLOCK_EXT_MAJOR): NVMe namespaces are 259:0, 259:1, ...
const BlockExtMajor = 259

// AddBlock adds block device file name for d with device number rdev
// (linux.MakeDev). Call it before Register.
func (fs *FS) AddBlock(name string, rdev uint64, d blk.Device) {
	n := fs.newNode(linux.S_IFBLK|0o660, rdev)
	n.GID = 6 // disk
	n.open = func(uint32) (vfs.File, error) { return &blockFile{d: d}, nil }
	fs.devices = append(fs.devices, n)
	fs.root.add(name, n)
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

// blockFile is an open block device: any byte range, read and written
// through to the disk (no cache yet).
type blockFile struct{ d blk.Device }

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

func (f *blockFile) Release() {}

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
