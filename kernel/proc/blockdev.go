package proc

import (
	"encoding/binary"

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
	case blkFlsBuf:
		if !t.creds().privileged() {
			return -eACCES
		}
		if err := d.Flush(); err != nil {
			return -5 // EIO
		}
		return 0
	default:
		return -eNOTTY
	}
	return errno(t.Proc.Space().CopyOut(arg, b[:n]))
}
