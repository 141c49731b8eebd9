package ext4

import "shortbread/kernel/abi/linux"

// Reserved inode numbers.
const (
	RootIno    = 2
	journalIno = 8
)

// Inode flags (i_flags) this package acts on.
const (
	flagIndex      = 0x1000     // hashed directory
	flagHugeFile   = 0x40000    // i_blocks counts file system blocks
	flagExtents    = 0x80000    // i_block holds an extent tree
	flagEAInode    = 0x200000   // inode holds a large xattr value
	flagInlineData = 0x10000000 // data inside the inode
)

// inode is one decoded on-disk inode. The package never keeps one across
// operations: each operation reads it (through the cached inode table
// block), changes it and writes it back, so there is one copy of the
// truth, the cached block.
type inode struct {
	num   uint32
	raw   []byte // the whole on-disk inode, s_inode_size bytes
	mode  uint16
	uid   uint32
	gid   uint32
	size  uint64
	links uint16
	flags uint32
	// blocks counts 512-byte sectors held by the file, metadata blocks of
	// its map included.
	blocks     uint64
	atime      linux.Timespec
	ctime      linux.Timespec
	mtime      linux.Timespec
	crtime     linux.Timespec
	dtime      uint32
	generation uint32
	fileACL    uint64
	block      [60]byte // i_block: extent root, block map, or symlink target
	extraIsize uint16
}

func (in *inode) fileType() uint32 { return uint32(in.mode) & linux.S_IFMT }
func (in *inode) isDir() bool      { return in.fileType() == linux.S_IFDIR }

// Offsets of the extra fields, and how far i_extra_isize must reach to
// hold each.
const (
	offExtraIsize  = 0x80
	offChecksumHi  = 0x82
	offCtimeExtra  = 0x84
	offMtimeExtra  = 0x88
	offAtimeExtra  = 0x8C
	offCrtime      = 0x90
	offCrtimeExtra = 0x94
)

func (in *inode) hasExtra(off int) bool {
	return len(in.raw) > 128 && 128+int(in.extraIsize) >= off+4
}

func (fs *FS) inodeLoc(ino uint32) (blk uint64, off uint32, err error) {
	if ino == 0 || ino > fs.sb.inodesCount {
		return 0, 0, corrupt("inode number %d out of range", ino)
	}
	g := (ino - 1) / fs.sb.inodesPerGroup
	idx := (ino - 1) % fs.sb.inodesPerGroup
	byteOff := uint64(idx) * uint64(fs.sb.inodeSize)
	return fs.groups[g].inodeTable + byteOff/uint64(fs.blockSize), uint32(byteOff % uint64(fs.blockSize)), nil
}

// iget reads and checks inode ino.
func (fs *FS) iget(ino uint32) (*inode, error) {
	blk, off, err := fs.inodeLoc(ino)
	if err != nil {
		return nil, err
	}
	b, err := fs.cache.get(fs, blk)
	if err != nil {
		return nil, err
	}
	in := &inode{num: ino, raw: make([]byte, fs.sb.inodeSize)}
	copy(in.raw, b[off:])
	if err := fs.decodeInode(in); err != nil {
		return nil, err
	}
	return in, nil
}

func decodeTime(lo uint32, extra uint32, hasExtra bool) linux.Timespec {
	t := linux.Timespec{Sec: int64(int32(lo))}
	if hasExtra {
		t.Sec += int64(extra&3) << 32
		t.Nsec = int64(extra >> 2)
		if t.Nsec > 999999999 {
			t.Nsec = 999999999
		}
	}
	return t
}

func encodeTime(t linux.Timespec) (lo, extra uint32) {
	lo = uint32(t.Sec)
	epoch := uint32((t.Sec - int64(int32(lo))) >> 32)
	return lo, epoch&3 | uint32(t.Nsec)<<2
}

func (fs *FS) decodeInode(in *inode) error {
	r := in.raw
	if len(r) > 128 {
		in.extraIsize = le.Uint16(r[offExtraIsize:])
		if 128+int(in.extraIsize) > len(r) || in.extraIsize&3 != 0 {
			return corrupt("inode %d extra size %d", in.num, in.extraIsize)
		}
	}
	if fs.hasCsum() {
		if want, got := fs.inodeCsum(in), in.storedCsum(); want != got {
			return corrupt("inode %d checksum %#x, computed %#x", in.num, got, want)
		}
	}
	in.mode = le.Uint16(r[0x0:])
	in.uid = uint32(le.Uint16(r[0x2:])) | uint32(le.Uint16(r[0x78:]))<<16
	in.gid = uint32(le.Uint16(r[0x18:])) | uint32(le.Uint16(r[0x7A:]))<<16
	in.size = uint64(le.Uint32(r[0x4:])) | uint64(le.Uint32(r[0x6C:]))<<32
	in.links = le.Uint16(r[0x1A:])
	in.flags = le.Uint32(r[0x20:])
	in.dtime = le.Uint32(r[0x14:])
	in.generation = le.Uint32(r[0x64:])
	in.fileACL = uint64(le.Uint32(r[0x68:])) | uint64(le.Uint16(r[0x76:]))<<32
	copy(in.block[:], r[0x28:0x64])
	blocks := uint64(le.Uint32(r[0x1C:]))
	if fs.sb.roCompat&roCompatHugeFile != 0 {
		blocks |= uint64(le.Uint16(r[0x74:])) << 32
		if in.flags&flagHugeFile != 0 {
			blocks *= uint64(fs.blockSize / 512)
		}
	}
	in.blocks = blocks
	in.atime = decodeTime(le.Uint32(r[0x8:]), in.extra(offAtimeExtra), in.hasExtra(offAtimeExtra))
	in.ctime = decodeTime(le.Uint32(r[0xC:]), in.extra(offCtimeExtra), in.hasExtra(offCtimeExtra))
	in.mtime = decodeTime(le.Uint32(r[0x10:]), in.extra(offMtimeExtra), in.hasExtra(offMtimeExtra))
	if in.hasExtra(offCrtime) {
		in.crtime = decodeTime(le.Uint32(r[offCrtime:]), in.extra(offCrtimeExtra), in.hasExtra(offCrtimeExtra))
	}
	if in.flags&flagInlineData != 0 {
		return corrupt("inode %d has inline data without the inline_data feature", in.num)
	}
	return nil
}

func (in *inode) extra(off int) uint32 {
	if !in.hasExtra(off) {
		return 0
	}
	return le.Uint32(in.raw[off:])
}

func (in *inode) storedCsum() uint32 {
	c := uint32(le.Uint16(in.raw[0x7C:]))
	if in.hasExtra(offChecksumHi - 2) {
		c |= uint32(le.Uint16(in.raw[offChecksumHi:])) << 16
	}
	return c
}

// csumSeed is the per-inode seed of the checksums of the inode and of the
// blocks it owns (extent blocks, directory blocks).
func (fs *FS) inodeSeed(ino, gen uint32) uint32 {
	return crc32cU32(crc32cU32(fs.csumSeed, ino), gen)
}

// inodeCsum is crc32c over the inode number, generation and the whole
// inode with both checksum fields taken as zero; only the low 16 bits are
// kept when the inode has no room for the high half.
func (fs *FS) inodeCsum(in *inode) uint32 {
	r := in.raw
	c := fs.inodeSeed(in.num, le.Uint32(r[0x64:]))
	var zero [2]byte
	c = crc32c(c, r[:0x7C])
	c = crc32c(c, zero[:])
	c = crc32c(c, r[0x7E:128])
	if len(r) > 128 {
		hasHi := in.hasExtra(offChecksumHi - 2)
		c = crc32c(c, r[128:offChecksumHi])
		if hasHi {
			c = crc32c(c, zero[:])
		} else {
			c = crc32c(c, r[offChecksumHi:offChecksumHi+2])
		}
		c = crc32c(c, r[offChecksumHi+2:])
		if !hasHi {
			c &= 0xFFFF
		}
	} else {
		c &= 0xFFFF
	}
	return c
}

// iput encodes in, checksums it and writes its inode table block.
func (fs *FS) iput(in *inode) error {
	r := in.raw
	le.PutUint16(r[0x0:], in.mode)
	le.PutUint16(r[0x2:], uint16(in.uid))
	le.PutUint16(r[0x78:], uint16(in.uid>>16))
	le.PutUint16(r[0x18:], uint16(in.gid))
	le.PutUint16(r[0x7A:], uint16(in.gid>>16))
	le.PutUint32(r[0x4:], uint32(in.size))
	le.PutUint32(r[0x6C:], uint32(in.size>>32))
	le.PutUint16(r[0x1A:], in.links)
	le.PutUint32(r[0x14:], in.dtime)
	le.PutUint32(r[0x64:], in.generation)
	le.PutUint32(r[0x68:], uint32(in.fileACL))
	le.PutUint16(r[0x76:], uint16(in.fileACL>>32))
	copy(r[0x28:0x64], in.block[:])
	blocks := in.blocks
	in.flags &^= flagHugeFile
	if blocks >= 1<<32 {
		if fs.sb.roCompat&roCompatHugeFile == 0 {
			return linux.EFBIG
		}
		if blocks >= 1<<48 {
			in.flags |= flagHugeFile
			blocks /= uint64(fs.blockSize / 512)
		}
	}
	le.PutUint32(r[0x1C:], uint32(blocks))
	if fs.sb.roCompat&roCompatHugeFile != 0 {
		le.PutUint16(r[0x74:], uint16(blocks>>32))
	}
	le.PutUint32(r[0x20:], in.flags)
	put := func(loOff, extraOff int, t linux.Timespec) {
		lo, extra := encodeTime(t)
		le.PutUint32(r[loOff:], lo)
		if in.hasExtra(extraOff) {
			le.PutUint32(r[extraOff:], extra)
		}
	}
	put(0x8, offAtimeExtra, in.atime)
	put(0xC, offCtimeExtra, in.ctime)
	put(0x10, offMtimeExtra, in.mtime)
	if in.hasExtra(offCrtime) {
		put(offCrtime, offCrtimeExtra, in.crtime)
	}
	if len(r) > 128 {
		le.PutUint16(r[offExtraIsize:], in.extraIsize)
	}
	if fs.hasCsum() {
		c := fs.inodeCsum(in)
		le.PutUint16(r[0x7C:], uint16(c))
		if in.hasExtra(offChecksumHi - 2) {
			le.PutUint16(r[offChecksumHi:], uint16(c>>16))
		}
	}
	fs.changes.Add(1)
	blk, off, err := fs.inodeLoc(in.num)
	if err != nil {
		return err
	}
	b, err := fs.cache.get(fs, blk)
	if err != nil {
		return err
	}
	copy(b[off:], r)
	return fs.cache.write(fs, blk, b)
}

// rdev decodes a device node's number from i_block: the old 16-bit form
// in i_block[0], else the new form in i_block[1].
func (in *inode) rdev() (major, minor uint32) {
	if old := le.Uint32(in.block[0:]); old != 0 {
		return (old >> 8) & 0xFF, old & 0xFF
	}
	n := le.Uint32(in.block[4:])
	return (n & 0xFFF00) >> 8, n&0xFF | (n>>12)&0xFFF00
}

func (in *inode) setRdev(major, minor uint32) {
	in.block = [60]byte{}
	if major < 256 && minor < 256 {
		le.PutUint32(in.block[0:], major<<8|minor)
		return
	}
	le.PutUint32(in.block[4:], minor&0xFF|major<<8|(minor&^0xFF)<<12)
}
