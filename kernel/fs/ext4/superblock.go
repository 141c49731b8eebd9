package ext4

import (
	"fmt"
	"strings"
)

// The superblock lives 1024 bytes into the device whatever the block size.
const (
	superOffset = 1024
	superSize   = 1024
	superMagic  = 0xEF53
)

// Feature flags (Documentation/filesystems/ext4/super.rst).
const (
	compatHasJournal  = 0x4
	compatExtAttr     = 0x8
	compatResizeInode = 0x10
	compatDirIndex    = 0x20

	incompatCompression = 0x1
	incompatFiletype    = 0x2
	incompatRecover     = 0x4
	incompatJournalDev  = 0x8
	incompatMetaBG      = 0x10
	incompatExtents     = 0x40
	incompat64bit       = 0x80
	incompatMMP         = 0x100
	incompatFlexBG      = 0x200
	incompatEAInode     = 0x400
	incompatDirData     = 0x1000
	incompatCsumSeed    = 0x2000
	incompatLargeDir    = 0x4000
	incompatInlineData  = 0x8000
	incompatEncrypt     = 0x10000
	incompatCasefold    = 0x20000

	roCompatSparseSuper  = 0x1
	roCompatLargeFile    = 0x2
	roCompatHugeFile     = 0x8
	roCompatGdtCsum      = 0x10
	roCompatDirNlink     = 0x20
	roCompatExtraIsize   = 0x40
	roCompatQuota        = 0x100
	roCompatBigalloc     = 0x200
	roCompatMetadataCsum = 0x400
	roCompatReadonly     = 0x1000
	roCompatProject      = 0x2000
	roCompatVerity       = 0x8000
	roCompatOrphan       = 0x10000
)

// incompatSupported are the incompatible features this package reads and
// writes. The journal's recover flag is handled apart.
const incompatSupported = incompatFiletype | incompatMetaBG | incompatExtents | incompat64bit |
	incompatFlexBG | incompatCsumSeed | incompatLargeDir

// roCompatWritable are the read-only-compatible features this package
// keeps valid when it writes; any other forces a read-only mount.
const roCompatWritable = roCompatSparseSuper | roCompatLargeFile | roCompatHugeFile |
	roCompatGdtCsum | roCompatDirNlink | roCompatExtraIsize | roCompatMetadataCsum

var incompatNames = map[uint32]string{
	incompatCompression: "compression", incompatJournalDev: "journal_dev", incompatMMP: "mmp",
	incompatEAInode: "ea_inode", incompatDirData: "dirdata", incompatInlineData: "inline_data",
	incompatEncrypt: "encrypt", incompatCasefold: "casefold", incompatRecover: "needs_recovery",
}

var roCompatNames = map[uint32]string{
	roCompatQuota: "quota", roCompatBigalloc: "bigalloc", roCompatReadonly: "readonly",
	roCompatProject: "project", roCompatVerity: "verity", roCompatOrphan: "orphan_present",
}

func featureNames(bits uint32, names map[uint32]string) string {
	var out []string
	for b := uint32(1); b != 0; b <<= 1 {
		if bits&b == 0 {
			continue
		}
		if n, ok := names[b]; ok {
			out = append(out, n)
		} else {
			out = append(out, fmt.Sprintf("%#x", b))
		}
	}
	return strings.Join(out, ",")
}

// superblock holds the fields of struct ext4_super_block this package
// uses; raw keeps the whole block so that writing it back preserves every
// field it does not know.
type superblock struct {
	raw []byte

	inodesCount     uint32
	blocksCount     uint64
	rBlocksCount    uint64
	freeBlocks      uint64
	freeInodes      uint32
	firstDataBlock  uint32
	logBlockSize    uint32
	logClusterSize  uint32
	blocksPerGroup  uint32
	inodesPerGroup  uint32
	state           uint16
	errors          uint16 // s_errors: what to do after an error (ErrorsBehavior)
	revLevel        uint32
	firstIno        uint32
	inodeSize       uint16
	compat          uint32
	incompat        uint32
	roCompat        uint32
	uuid            [16]byte
	reservedGdt     uint16
	journalInum     uint32
	hashSeed        [4]uint32
	defHashVersion  uint8
	descSize        uint16
	firstMetaBG     uint32
	minExtraIsize   uint16
	wantExtraIsize  uint16
	flags           uint32
	logGroupsPerFlx uint8
	checksumType    uint8
	checksumSeed    uint32
}

// sFlagUnsignedHash in s_flags says directory hashes treat names as
// unsigned chars (the default on x86 since e2fsprogs 1.41).
const (
	sFlagSignedHash   = 0x1
	sFlagUnsignedHash = 0x2
)

func (fs *FS) readSuper() error {
	raw := make([]byte, superSize)
	if fs.dev.Size() < superOffset+superSize {
		return corrupt("device of %d bytes is too small to hold a superblock", fs.dev.Size())
	}
	if _, err := fs.dev.ReadAt(raw, superOffset); err != nil {
		return fmt.Errorf("ext4: read superblock: %w", err)
	}
	sb := &fs.sb
	sb.raw = raw
	if m := le.Uint16(raw[0x38:]); m != superMagic {
		return corrupt("bad superblock magic %#x", m)
	}
	sb.inodesCount = le.Uint32(raw[0x0:])
	sb.blocksCount = uint64(le.Uint32(raw[0x4:]))
	sb.rBlocksCount = uint64(le.Uint32(raw[0x8:]))
	sb.freeBlocks = uint64(le.Uint32(raw[0xC:]))
	sb.freeInodes = le.Uint32(raw[0x10:])
	sb.firstDataBlock = le.Uint32(raw[0x14:])
	sb.logBlockSize = le.Uint32(raw[0x18:])
	sb.logClusterSize = le.Uint32(raw[0x1C:])
	sb.blocksPerGroup = le.Uint32(raw[0x20:])
	sb.inodesPerGroup = le.Uint32(raw[0x28:])
	sb.state = le.Uint16(raw[0x3A:])
	sb.errors = le.Uint16(raw[0x3C:])
	sb.revLevel = le.Uint32(raw[0x4C:])
	sb.firstIno = 11
	sb.inodeSize = 128
	if sb.revLevel >= 1 {
		sb.firstIno = le.Uint32(raw[0x54:])
		sb.inodeSize = le.Uint16(raw[0x58:])
		sb.compat = le.Uint32(raw[0x5C:])
		sb.incompat = le.Uint32(raw[0x60:])
		sb.roCompat = le.Uint32(raw[0x64:])
	}
	copy(sb.uuid[:], raw[0x68:0x78])
	sb.reservedGdt = le.Uint16(raw[0xCE:])
	sb.journalInum = le.Uint32(raw[0xE0:])
	for i := range sb.hashSeed {
		sb.hashSeed[i] = le.Uint32(raw[0xEC+4*i:])
	}
	sb.defHashVersion = raw[0xFC]
	sb.descSize = le.Uint16(raw[0xFE:])
	sb.firstMetaBG = le.Uint32(raw[0x104:])
	if sb.incompat&incompat64bit != 0 {
		sb.blocksCount |= uint64(le.Uint32(raw[0x150:])) << 32
		sb.rBlocksCount |= uint64(le.Uint32(raw[0x154:])) << 32
		sb.freeBlocks |= uint64(le.Uint32(raw[0x158:])) << 32
	}
	sb.minExtraIsize = le.Uint16(raw[0x15C:])
	sb.wantExtraIsize = le.Uint16(raw[0x15E:])
	sb.flags = le.Uint32(raw[0x160:])
	sb.logGroupsPerFlx = raw[0x174]
	sb.checksumType = raw[0x175]
	sb.checksumSeed = le.Uint32(raw[0x270:])

	var csumErr error
	if sb.roCompat&roCompatMetadataCsum != 0 {
		if sb.checksumType != 1 {
			return corrupt("unknown checksum type %d", sb.checksumType)
		}
		if want, got := crc32c(^uint32(0), raw[:0x3FC]), le.Uint32(raw[0x3FC:]); want != got {
			csumErr = &superCsumError{&CorruptError{What: fmt.Sprintf("superblock checksum %#x, computed %#x", got, want)}}
		}
	}
	if err := fs.checkGeometry(); err != nil {
		return err
	}
	if bad := sb.incompat &^ (incompatSupported | incompatRecover); bad != 0 {
		return fmt.Errorf("%w: incompatible features %s", ErrUnsupported, featureNames(bad, incompatNames))
	}
	if bad := sb.roCompat &^ roCompatWritable; bad != 0 && !fs.ro {
		fs.ro = true
		fs.roWhy = "read-only-compatible features " + featureNames(bad, roCompatNames)
	}
	if sb.incompat&incompatMetaBG != 0 && !fs.ro {
		// Reading places descriptors by meta_bg; the allocator's picture
		// of an uninitialized group does not know its layout yet.
		fs.ro = true
		fs.roWhy = "meta_bg is read-only for now"
	}
	if sb.roCompat&roCompatMetadataCsum != 0 {
		if sb.incompat&incompatCsumSeed != 0 {
			fs.csumSeed = sb.checksumSeed
		} else {
			fs.csumSeed = crc32c(^uint32(0), sb.uuid[:])
		}
	}
	// A bad checksum comes last, with every field decoded and checked
	// for range: Mount may still find the superblock whole in the log.
	return csumErr
}

// superCsumError is a superblock that fails only its checksum, what a
// write home torn at a sector leaves (see repairSuper).
type superCsumError struct{ *CorruptError }

func (e *superCsumError) Unwrap() error { return e.CorruptError }

// checkGeometry rejects superblock values that would make the rest of the
// code divide by zero, index out of range or loop forever.
func (fs *FS) checkGeometry() error {
	sb := &fs.sb
	if sb.logBlockSize > 6 {
		return corrupt("block size 2^(10+%d)", sb.logBlockSize)
	}
	fs.blockSize = 1024 << sb.logBlockSize
	bs := uint64(fs.blockSize)
	clustersPerGroup := uint64(le.Uint32(sb.raw[0x24:]))
	if sb.roCompat&roCompatBigalloc == 0 {
		clustersPerGroup = uint64(sb.blocksPerGroup)
	}
	if sb.blocksPerGroup == 0 || clustersPerGroup == 0 || clustersPerGroup > 8*bs || uint64(sb.blocksPerGroup) > 1<<31 {
		return corrupt("%d blocks (%d clusters) per group", sb.blocksPerGroup, clustersPerGroup)
	}
	if sb.roCompat&roCompatBigalloc == 0 && sb.logClusterSize != sb.logBlockSize {
		return corrupt("cluster size differs from block size without bigalloc")
	}
	if sb.inodesPerGroup == 0 || uint64(sb.inodesPerGroup) > 8*bs {
		return corrupt("%d inodes per group", sb.inodesPerGroup)
	}
	if sb.inodeSize < 128 || uint64(sb.inodeSize) > bs || sb.inodeSize&(sb.inodeSize-1) != 0 {
		return corrupt("inode size %d", sb.inodeSize)
	}
	if sb.firstIno < 11 || sb.firstIno > sb.inodesCount {
		return corrupt("first inode %d", sb.firstIno)
	}
	if uint64(sb.firstDataBlock) >= sb.blocksCount || sb.firstDataBlock > 1 || bs > 1024 && sb.firstDataBlock != 0 {
		return corrupt("first data block %d", sb.firstDataBlock)
	}
	if devBlocks := uint64(fs.dev.Size()) / bs; sb.blocksCount > devBlocks {
		return corrupt("%d blocks on a device of %d", sb.blocksCount, devBlocks)
	}
	if sb.incompat&incompat64bit != 0 {
		if sb.descSize < 32 || sb.descSize > 1024 || sb.descSize&(sb.descSize-1) != 0 {
			return corrupt("group descriptor size %d", sb.descSize)
		}
	} else {
		sb.descSize = 32
	}
	ngroups := (sb.blocksCount - uint64(sb.firstDataBlock) + uint64(sb.blocksPerGroup) - 1) / uint64(sb.blocksPerGroup)
	if ngroups == 0 || ngroups*uint64(sb.inodesPerGroup) != uint64(sb.inodesCount) {
		return corrupt("%d groups of %d inodes but %d inodes", ngroups, sb.inodesPerGroup, sb.inodesCount)
	}
	if sb.minExtraIsize > sb.inodeSize-128 || sb.wantExtraIsize > sb.inodeSize-128 {
		return corrupt("extra inode size %d/%d with %d-byte inodes", sb.minExtraIsize, sb.wantExtraIsize, sb.inodeSize)
	}
	return nil
}

func (fs *FS) hasCsum() bool    { return fs.sb.roCompat&roCompatMetadataCsum != 0 }
func (fs *FS) hasGdtCsum() bool { return fs.sb.roCompat&roCompatGdtCsum != 0 }

// encodeSuper stores the counters this package changes and the checksum
// into the superblock's bytes.
func (fs *FS) encodeSuper() {
	sb := &fs.sb
	raw := sb.raw
	// The free counts as they stand (alloc.go), kept in range: a
	// corrupt descriptor's count is e2fsck's to fix.
	freeBlocks := uint64(min(max(fs.freeBlocks.Load(), 0), int64(sb.blocksCount)))
	freeInodes := uint32(min(max(fs.freeInodes.Load(), 0), int64(sb.inodesCount)))
	le.PutUint32(raw[0xC:], uint32(freeBlocks))
	le.PutUint32(raw[0x10:], freeInodes)
	if sb.incompat&incompat64bit != 0 {
		le.PutUint32(raw[0x158:], uint32(freeBlocks>>32))
	}
	le.PutUint16(raw[0x3A:], sb.state)
	le.PutUint32(raw[0x60:], sb.incompat)
	le.PutUint32(raw[0x30:], uint32(fs.clock().Unix()))
	if fs.hasCsum() {
		le.PutUint32(raw[0x3FC:], crc32c(^uint32(0), raw[:0x3FC]))
	}
}

// superBuf returns the cached block holding the superblock, with the
// current superblock copied in.
func (fs *FS) superBuf() (uint64, []byte, error) {
	fs.encodeSuper()
	blk := uint64(superOffset / fs.blockSize)
	b, err := fs.cache.get(fs, blk)
	if err != nil {
		return 0, nil, err
	}
	copy(b[superOffset%fs.blockSize:], fs.sb.raw)
	return blk, b, nil
}

// When the superblock goes to the disk. A disk keeps a 512-byte sector
// whole, not the 1024-byte superblock, and its checksum sits in the
// second sector: a power cut during a write home can land one sector and
// leave a superblock that fails its checksum, which Linux then refuses
// to mount (and this package too, unless the log holds the block whole:
// repairSuper). So, as Linux does, it is written home
// only when it must change outside a transaction: at a read-write mount
// (to set needs_recovery, once, flushed before the first commit), at
// Unmount and Remount read-only (to clear it, after the last commit
// emptied the log), and on sync of a file system without a journal.
// The free block and inode counts live in memory between those times and
// are summed from the group descriptors at mount (Linux's percpu
// counters; e2fsck -n reports stale ones but does not count them as
// errors). A change that must survive a crash, the orphan list's head,
// goes through the journal as a metadata block: if its checkpoint is
// torn, the log still holds the whole block until that checkpoint is
// flushed.

// writeSuperLocked writes the primary superblock through the journal if
// there is one, else home. Backups keep mkfs's values, as Linux's do.
func (fs *FS) writeSuperLocked() error {
	if fs.ro {
		return nil
	}
	blk, b, err := fs.superBuf()
	if err != nil {
		return err
	}
	return fs.cache.write(fs, blk, b)
}

// writeSuperHome writes the superblock straight home, around the
// journal, and flushes it: the callers (mount, unmount, remount) need it
// durable before they go on.
func (fs *FS) writeSuperHome() error {
	blk, b, err := fs.superBuf()
	if err != nil {
		return err
	}
	if err := fs.devWrite(b, blk); err != nil {
		return err
	}
	return fs.flush()
}

// countFree sets the in-memory free counts to the sums of the group
// descriptors', which every allocation keeps exact (through the journal),
// whatever the superblock's stale copy says.
func (fs *FS) countFree() {
	var blocks uint64
	var inodes uint64
	for i := range fs.groups {
		blocks += uint64(fs.groups[i].freeBlocks)
		inodes += uint64(fs.groups[i].freeInodes)
	}
	fs.freeBlocks.Store(int64(min(blocks, fs.sb.blocksCount)))
	fs.freeInodes.Store(int64(min(inodes, uint64(fs.sb.inodesCount))))
	// Linux's reserve (ext4_calculate_resv_clusters): 2% of the blocks,
	// at most 4096, and none without extents, whose indirect blocks a
	// write counts before it allocates.
	fs.resvBlocks = 0
	if fs.sb.incompat&incompatExtents != 0 {
		fs.resvBlocks = int64(min(fs.sb.blocksCount/50, 4096))
	}
}
