package proc

import (
	"encoding/binary"
	"errors"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/blk"
	"shortbread/kernel/fs/devfs"
	"shortbread/kernel/vfs"
)

// Block device ioctls (include/uapi/linux/fs.h).
const (
	blkROGet     = 0x125e     // int: read-only
	blkRRPart    = 0x125f     // re-read the partition table
	blkGetSize   = 0x1260     // unsigned long: size in 512-byte sectors
	blkFlsBuf    = 0x1261     // flush buffers (and the disk's cache)
	blkSSZGet    = 0x1268     // int: logical sector size
	blkGetSize64 = 0x80081272 // u64: size in bytes
	blkPBSZGet   = 0x127b     // unsigned int: physical sector size
	blkDiscard   = 0x1277     // u64 range[2]: discard [start, start+len)
	// BLKDISCARDZEROES, unsigned int: 0 on Linux since 4.12 whatever
	// the device (a discard is not a way to zero), and so here.
	blkDiscardZeroes = 0x127c
)

// blockIoctl serves the BLK* ioctls on a block device file.
func (t *Thread) blockIoctl(f *vfs.OpenFile, d blk.Device, cmd uint64, arg uintptr) int64 {
	var b [8]byte
	n := 4
	switch cmd {
	case blkGetSize64:
		binary.LittleEndian.PutUint64(b[:], uint64(blk.Size(d)))
		n = 8
	case blkGetSize:
		binary.LittleEndian.PutUint64(b[:], uint64(blk.Size(d))/512)
		n = 8
	case blkSSZGet, blkPBSZGet:
		binary.LittleEndian.PutUint32(b[:], uint32(d.SectorSize()))
	case blkROGet:
		if ro, ok := d.(interface{ ReadOnly() bool }); ok && ro.ReadOnly() {
			b[0] = 1
		}
	case blkRRPart:
		if !t.creds().privileged() {
			return -eACCES
		}
		return errno(devfs.RereadPartitions(f))
	case blkDiscard:
		return t.blockDiscard(f, d, arg)
	case blkDiscardZeroes:
	case blkFlsBuf:
		if !t.creds().privileged() {
			return -eACCES
		}
		return errno(devfs.FlushBuffers(f))
	default:
		return -eNOTTY
	}
	return errno(t.Proc.Space().CopyOut(arg, b[:n]))
}

// blockDiscard is BLKDISCARD in Linux 6.1's order of checks
// (blk_ioctl_discard): the file open for writing (EBADF), a device that
// discards (EOPNOTSUPP), the range readable (EFAULT), start and length
// multiples of 512 and the range within the device (EINVAL); then, as
// Linux, the range leaves the device's page cache.
func (t *Thread) blockDiscard(f *vfs.OpenFile, d blk.Device, arg uintptr) int64 {
	if f.Flags()&linux.O_ACCMODE == linux.O_RDONLY {
		return -eBADF
	}
	if !blk.CanDiscard(d) {
		return -eOPNOTSUPP
	}
	var b [16]byte
	if err := t.Proc.Space().CopyIn(arg, b[:]); err != nil {
		return errno(err)
	}
	start, n := binary.LittleEndian.Uint64(b[0:]), binary.LittleEndian.Uint64(b[8:])
	if start&511 != 0 || n&511 != 0 || start+n < start || start+n > uint64(blk.Size(d)) {
		return -eINVAL
	}
	if n == 0 {
		return 0
	}
	devfs.DiscardCached(f, int64(start), int64(n))
	if err := blk.Discard(d, int64(start), int64(n)); err != nil {
		if errors.Is(err, blk.ErrAlign) {
			return -eINVAL // a 4 KiB-sector disk and a range of 512-byte sectors
		}
		return -5 // EIO
	}
	return 0
}

// fiTrim is FITRIM (_IOWR('X', 121, struct fstrim_range)) on any file of
// a file system: discard its free blocks in the range {start, len,
// minlen} and report the bytes discarded in len. Linux 6.1's ext4
// order: ENOTTY where the file system has no FITRIM, EPERM without
// CAP_SYS_ADMIN, EOPNOTSUPP when the device does not discard, EFAULT,
// then the file system's own checks (EINVAL).
const fiTrim = 0xc0185879

func (t *Thread) fiTrim(f *vfs.OpenFile, arg uintptr) int64 {
	d := f.Dentry()
	if d == nil {
		return -eNOTTY
	}
	trim, can := d.Mount().Trimmer()
	switch {
	case trim == nil:
		return -eNOTTY
	case !t.creds().privileged():
		return -ePERM
	case !can:
		return -eOPNOTSUPP
	}
	var b [24]byte
	if err := t.Proc.Space().CopyIn(arg, b[:]); err != nil {
		return errno(err)
	}
	start, n, minLen := binary.LittleEndian.Uint64(b[0:]), binary.LittleEndian.Uint64(b[8:]), binary.LittleEndian.Uint64(b[16:])
	done, err := trim(start, n, minLen)
	if err != nil {
		return errno(err)
	}
	binary.LittleEndian.PutUint64(b[8:], done)
	return errno(t.Proc.Space().CopyOut(arg, b[:]))
}
