package ext4

import "sync"

// Block group flags (bg_flags).
const (
	bgInodeUninit  = 0x1 // inode bitmap and table not initialized
	bgBlockUninit  = 0x2 // block bitmap not initialized
	bgItableZeroed = 0x4
)

// groupDesc is one block group's descriptor, decoded; raw is its on-disk
// bytes (32 or s_desc_size) so that writing back keeps fields not decoded.
type groupDesc struct {
	raw             []byte
	blockBitmap     uint64
	inodeBitmap     uint64
	inodeTable      uint64
	freeBlocks      uint32
	freeInodes      uint32
	usedDirs        uint32
	flags           uint16
	itableUnused    uint32
	blockBitmapCsum uint32
	inodeBitmapCsum uint32
}

func (fs *FS) groupCount() uint32 {
	sb := &fs.sb
	return uint32((sb.blocksCount - uint64(sb.firstDataBlock) + uint64(sb.blocksPerGroup) - 1) / uint64(sb.blocksPerGroup))
}

// groupFirstBlock is the first block of group g.
func (fs *FS) groupFirstBlock(g uint32) uint64 {
	return uint64(fs.sb.firstDataBlock) + uint64(g)*uint64(fs.sb.blocksPerGroup)
}

// groupBlocks is the number of blocks in group g (the last may be short).
func (fs *FS) groupBlocks(g uint32) uint32 {
	if g == fs.groupCount()-1 {
		return uint32(fs.sb.blocksCount - fs.groupFirstBlock(g))
	}
	return fs.sb.blocksPerGroup
}

// groupHasSuper reports whether group g holds a superblock backup (and
// group descriptor copy): all groups, or with sparse_super only 0, 1 and
// the powers of 3, 5 and 7.
func (fs *FS) groupHasSuper(g uint32) bool {
	if g == 0 || fs.sb.roCompat&roCompatSparseSuper == 0 {
		return true
	}
	if g == 1 {
		return true
	}
	for _, p := range []uint32{3, 5, 7} {
		n := p
		for n < g {
			n *= p
		}
		if n == g {
			return true
		}
	}
	return false
}

// descBlock returns the block that holds descriptor block i (i counting
// descriptor blocks from 0): consecutive after the superblock, or with
// meta_bg, from s_first_meta_bg on, in the first group of each meta group.
func (fs *FS) descBlock(i uint32) uint64 {
	sb := &fs.sb
	if sb.incompat&incompatMetaBG == 0 || i < sb.firstMetaBG {
		// Right after the superblock's block (block 1 with 1 KiB blocks
		// even when bigalloc makes the first data block 0).
		return uint64(superOffset/fs.blockSize) + 1 + uint64(i)
	}
	g := i * fs.descPerBlk
	b := fs.groupFirstBlock(g)
	if fs.groupHasSuper(g) {
		b++
	}
	return b
}

func (fs *FS) readGroups() error {
	sb := &fs.sb
	n := fs.groupCount()
	fs.descPerBlk = fs.blockSize / uint32(sb.descSize)
	nblocks := (n + fs.descPerBlk - 1) / fs.descPerBlk
	fs.groups = make([]groupDesc, n)
	fs.glocks = make([]sync.Mutex, n)
	buf := make([]byte, fs.blockSize)
	for i := uint32(0); i < nblocks; i++ {
		if err := fs.readRaw(buf, fs.descBlock(i)); err != nil {
			return err
		}
		for j := uint32(0); j < fs.descPerBlk && i*fs.descPerBlk+j < n; j++ {
			g := i*fs.descPerBlk + j
			raw := make([]byte, sb.descSize)
			copy(raw, buf[j*uint32(sb.descSize):])
			if err := fs.decodeGroup(g, raw); err != nil {
				return err
			}
		}
	}
	return nil
}

func (fs *FS) decodeGroup(g uint32, raw []byte) error {
	d := &fs.groups[g]
	d.raw = raw
	d.blockBitmap = uint64(le.Uint32(raw[0x0:]))
	d.inodeBitmap = uint64(le.Uint32(raw[0x4:]))
	d.inodeTable = uint64(le.Uint32(raw[0x8:]))
	d.freeBlocks = uint32(le.Uint16(raw[0xC:]))
	d.freeInodes = uint32(le.Uint16(raw[0xE:]))
	d.usedDirs = uint32(le.Uint16(raw[0x10:]))
	d.flags = le.Uint16(raw[0x12:])
	d.blockBitmapCsum = uint32(le.Uint16(raw[0x18:]))
	d.inodeBitmapCsum = uint32(le.Uint16(raw[0x1A:]))
	d.itableUnused = uint32(le.Uint16(raw[0x1C:]))
	if len(raw) >= 64 {
		d.blockBitmap |= uint64(le.Uint32(raw[0x20:])) << 32
		d.inodeBitmap |= uint64(le.Uint32(raw[0x24:])) << 32
		d.inodeTable |= uint64(le.Uint32(raw[0x28:])) << 32
		d.freeBlocks |= uint32(le.Uint16(raw[0x2C:])) << 16
		d.freeInodes |= uint32(le.Uint16(raw[0x2E:])) << 16
		d.usedDirs |= uint32(le.Uint16(raw[0x30:])) << 16
		d.itableUnused |= uint32(le.Uint16(raw[0x32:])) << 16
		d.blockBitmapCsum |= uint32(le.Uint16(raw[0x38:])) << 16
		d.inodeBitmapCsum |= uint32(le.Uint16(raw[0x3A:])) << 16
	}
	if fs.hasCsum() || fs.hasGdtCsum() {
		if want, got := fs.groupCsum(g, raw), le.Uint16(raw[0x1E:]); want != got {
			return corrupt("group %d descriptor checksum %#x, computed %#x", g, got, want)
		}
	}
	sb := &fs.sb
	itBlocks := (uint64(sb.inodesPerGroup)*uint64(sb.inodeSize) + uint64(fs.blockSize) - 1) / uint64(fs.blockSize)
	for _, b := range []uint64{d.blockBitmap, d.inodeBitmap} {
		if b < uint64(sb.firstDataBlock) || b >= sb.blocksCount {
			return corrupt("group %d bitmap at block %d", g, b)
		}
	}
	if d.inodeTable < uint64(sb.firstDataBlock) || d.inodeTable+itBlocks > sb.blocksCount {
		return corrupt("group %d inode table at block %d", g, d.inodeTable)
	}
	if d.freeInodes > sb.inodesPerGroup || d.itableUnused > sb.inodesPerGroup || d.freeBlocks > sb.blocksPerGroup {
		return corrupt("group %d counts out of range", g)
	}
	return nil
}

// groupCsum computes the descriptor checksum: the low 16 bits of a crc32c
// with metadata_csum, else the crc16 of gdt_csum; both cover the group
// number and the descriptor without its checksum field.
func (fs *FS) groupCsum(g uint32, raw []byte) uint16 {
	var gb [4]byte
	le.PutUint32(gb[:], g)
	if fs.hasCsum() {
		c := crc32c(fs.csumSeed, gb[:])
		c = crc32c(c, raw[:0x1E])
		c = crc32c(c, []byte{0, 0})
		c = crc32c(c, raw[0x20:])
		return uint16(c)
	}
	c := crc16(0xFFFF, fs.sb.uuid[:])
	c = crc16(c, gb[:])
	c = crc16(c, raw[:0x1E])
	if len(raw) > 0x20 {
		c = crc16(c, raw[0x20:])
	}
	return c
}

// writeGroupLocked encodes group g's descriptor, checksums it and writes
// the block holding it.
func (fs *FS) writeGroupLocked(g uint32) error {
	d := &fs.groups[g]
	raw := d.raw
	le.PutUint32(raw[0x0:], uint32(d.blockBitmap))
	le.PutUint32(raw[0x4:], uint32(d.inodeBitmap))
	le.PutUint32(raw[0x8:], uint32(d.inodeTable))
	le.PutUint16(raw[0xC:], uint16(d.freeBlocks))
	le.PutUint16(raw[0xE:], uint16(d.freeInodes))
	le.PutUint16(raw[0x10:], uint16(d.usedDirs))
	le.PutUint16(raw[0x12:], d.flags)
	le.PutUint16(raw[0x18:], uint16(d.blockBitmapCsum))
	le.PutUint16(raw[0x1A:], uint16(d.inodeBitmapCsum))
	le.PutUint16(raw[0x1C:], uint16(d.itableUnused))
	if len(raw) >= 64 {
		le.PutUint16(raw[0x2C:], uint16(d.freeBlocks>>16))
		le.PutUint16(raw[0x2E:], uint16(d.freeInodes>>16))
		le.PutUint16(raw[0x30:], uint16(d.usedDirs>>16))
		le.PutUint16(raw[0x32:], uint16(d.itableUnused>>16))
		le.PutUint16(raw[0x38:], uint16(d.blockBitmapCsum>>16))
		le.PutUint16(raw[0x3A:], uint16(d.inodeBitmapCsum>>16))
	}
	if fs.hasCsum() || fs.hasGdtCsum() {
		le.PutUint16(raw[0x1E:], fs.groupCsum(g, raw))
	}
	blk := fs.descBlock(g / fs.descPerBlk)
	b, err := fs.cache.get(fs, blk)
	if err != nil {
		return err
	}
	copy(b[(g%fs.descPerBlk)*uint32(fs.sb.descSize):], raw)
	return fs.cache.write(fs, blk, b)
}
