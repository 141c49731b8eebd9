package linux

import "encoding/binary"

// Timespec is struct timespec: seconds and nanoseconds since the epoch.
type Timespec struct {
	Sec  int64
	Nsec int64
}

// Encode returns the 16 bytes of struct timespec.
func (t Timespec) Encode() [16]byte {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[0:], uint64(t.Sec))
	binary.LittleEndian.PutUint64(b[8:], uint64(t.Nsec))
	return b
}

// DecodeTimespec reads a struct timespec from the first 16 bytes of b.
func DecodeTimespec(b []byte) Timespec {
	return Timespec{
		Sec:  int64(binary.LittleEndian.Uint64(b[0:])),
		Nsec: int64(binary.LittleEndian.Uint64(b[8:])),
	}
}

// MakeDev encodes a device number as st_dev and st_rdev hold it
// (new_encode_dev in include/linux/kdev_t.h, the glibc makedev layout).
func MakeDev(major, minor uint32) uint64 {
	return uint64(minor&0xff) | uint64(major&0xfff)<<8 | uint64(minor&^0xff)<<12 | uint64(major&^0xfff)<<32
}

// DevMajor returns the major number of a device encoded by MakeDev.
func DevMajor(dev uint64) uint32 {
	return uint32((dev>>8)&0xfff) | uint32(dev>>32)&^0xfff
}

// DevMinor returns the minor number of a device encoded by MakeDev.
func DevMinor(dev uint64) uint32 {
	return uint32(dev&0xff) | uint32(dev>>12)&^0xff
}

// StatSize is sizeof(struct stat) on x86-64.
const StatSize = 144

// Stat is struct stat as x86-64 Linux defines it
// (arch/x86/include/uapi/asm/stat.h).
type Stat struct {
	Dev     uint64
	Ino     uint64
	Nlink   uint64
	Mode    uint32
	UID     uint32
	GID     uint32
	Rdev    uint64
	Size    int64
	Blksize int64
	Blocks  int64 // in 512-byte units
	Atime   Timespec
	Mtime   Timespec
	Ctime   Timespec
}

// Encode returns the 144 bytes a stat(2) call copies to user memory.
func (s *Stat) Encode() [StatSize]byte {
	var b [StatSize]byte
	le := binary.LittleEndian
	le.PutUint64(b[0:], s.Dev)
	le.PutUint64(b[8:], s.Ino)
	le.PutUint64(b[16:], s.Nlink)
	le.PutUint32(b[24:], s.Mode)
	le.PutUint32(b[28:], s.UID)
	le.PutUint32(b[32:], s.GID)
	// 36: __pad0
	le.PutUint64(b[40:], s.Rdev)
	le.PutUint64(b[48:], uint64(s.Size))
	le.PutUint64(b[56:], uint64(s.Blksize))
	le.PutUint64(b[64:], uint64(s.Blocks))
	for i, t := range [3]Timespec{s.Atime, s.Mtime, s.Ctime} {
		e := t.Encode()
		copy(b[72+16*i:], e[:])
	}
	// 120: __unused[3]
	return b
}

// statx(2) request and result masks (include/uapi/linux/stat.h).
const (
	STATX_TYPE          = 0x1
	STATX_MODE          = 0x2
	STATX_NLINK         = 0x4
	STATX_UID           = 0x8
	STATX_GID           = 0x10
	STATX_ATIME         = 0x20
	STATX_MTIME         = 0x40
	STATX_CTIME         = 0x80
	STATX_INO           = 0x100
	STATX_SIZE          = 0x200
	STATX_BLOCKS        = 0x400
	STATX_BASIC_STATS   = 0x7ff
	STATX_BTIME         = 0x800
	STATX_ALL           = 0xfff
	STATX_MNT_ID        = 0x1000
	STATX_DIOALIGN      = 0x2000
	STATX_MNT_ID_UNIQUE = 0x4000
	STATX_SUBVOL        = 0x8000
	STATX__RESERVED     = 0x80000000
)

// statx(2) stx_attributes bits.
const (
	STATX_ATTR_COMPRESSED = 0x4
	STATX_ATTR_IMMUTABLE  = 0x10
	STATX_ATTR_APPEND     = 0x20
	STATX_ATTR_NODUMP     = 0x40
	STATX_ATTR_ENCRYPTED  = 0x800
	STATX_ATTR_AUTOMOUNT  = 0x1000
	STATX_ATTR_MOUNT_ROOT = 0x2000
	STATX_ATTR_VERITY     = 0x100000
	STATX_ATTR_DAX        = 0x200000
)

// StatxSize is sizeof(struct statx).
const StatxSize = 256

// Statx is struct statx (include/uapi/linux/stat.h). Timestamps have
// nanoseconds below 1e9.
type Statx struct {
	Mask           uint32 // what the other fields hold (STATX_*)
	Blksize        uint32
	Attributes     uint64
	Nlink          uint32
	UID            uint32
	GID            uint32
	Mode           uint16
	Ino            uint64
	Size           uint64
	Blocks         uint64
	AttributesMask uint64
	Atime          Timespec
	Btime          Timespec
	Ctime          Timespec
	Mtime          Timespec
	RdevMajor      uint32
	RdevMinor      uint32
	DevMajor       uint32
	DevMinor       uint32
	MntID          uint64
	DioMemAlign    uint32
	DioOffsetAlign uint32
	Subvol         uint64
}

// Encode returns the 256 bytes a statx(2) call copies to user memory.
func (s *Statx) Encode() [StatxSize]byte {
	var b [StatxSize]byte
	le := binary.LittleEndian
	le.PutUint32(b[0:], s.Mask)
	le.PutUint32(b[4:], s.Blksize)
	le.PutUint64(b[8:], s.Attributes)
	le.PutUint32(b[16:], s.Nlink)
	le.PutUint32(b[20:], s.UID)
	le.PutUint32(b[24:], s.GID)
	le.PutUint16(b[28:], s.Mode)
	// 30: __spare0
	le.PutUint64(b[32:], s.Ino)
	le.PutUint64(b[40:], s.Size)
	le.PutUint64(b[48:], s.Blocks)
	le.PutUint64(b[56:], s.AttributesMask)
	for i, t := range [4]Timespec{s.Atime, s.Btime, s.Ctime, s.Mtime} {
		// struct statx_timestamp: __s64 tv_sec, __u32 tv_nsec, __s32 __reserved
		le.PutUint64(b[64+16*i:], uint64(t.Sec))
		le.PutUint32(b[72+16*i:], uint32(t.Nsec))
	}
	le.PutUint32(b[128:], s.RdevMajor)
	le.PutUint32(b[132:], s.RdevMinor)
	le.PutUint32(b[136:], s.DevMajor)
	le.PutUint32(b[140:], s.DevMinor)
	le.PutUint64(b[144:], s.MntID)
	le.PutUint32(b[152:], s.DioMemAlign)
	le.PutUint32(b[156:], s.DioOffsetAlign)
	le.PutUint64(b[160:], s.Subvol)
	// 168..256: later fields and spare space, zero
	return b
}
