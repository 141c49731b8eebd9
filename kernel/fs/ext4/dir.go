package ext4

import (
	"bytes"
	"errors"

	"shortbread/kernel/abi/linux"
)

// Directories are files of blocks of variable-length entries (inode,
// record length, name length, file type, name). With metadata_csum each
// leaf block ends in a 12-byte fake entry holding a checksum; blocks of a
// hashed directory's index hold their own tail (htree.go).

const (
	direntHeader = 8
	dirTailSize  = 12
	maxNameLen   = 255
)

// Directory entry file types (with the filetype feature).
const (
	ftUnknown = 0
	ftReg     = 1
	ftDir     = 2
	ftChr     = 3
	ftBlk     = 4
	ftFifo    = 5
	ftSock    = 6
	ftSymlink = 7
)

func fileTypeOf(mode uint32) uint8 {
	switch mode & linux.S_IFMT {
	case linux.S_IFREG:
		return ftReg
	case linux.S_IFDIR:
		return ftDir
	case linux.S_IFCHR:
		return ftChr
	case linux.S_IFBLK:
		return ftBlk
	case linux.S_IFIFO:
		return ftFifo
	case linux.S_IFSOCK:
		return ftSock
	case linux.S_IFLNK:
		return ftSymlink
	}
	return ftUnknown
}

// DirEntry is one name in a directory.
type DirEntry struct {
	Name string
	Ino  uint32
	// Type is the file type the entry records (linux.DT_*), or DT_UNKNOWN
	// without the filetype feature.
	Type uint8
	// Off is the entry's listing position (ReadDirAt): a byte offset
	// or made of the name's hash.
	Off int64
}

// dirent is a decoded entry at offset off of a block.
type dirent struct {
	off     int
	ino     uint32
	recLen  int
	nameLen int
	ftype   uint8
}

func (fs *FS) recLen(b []byte) int {
	n := int(le.Uint16(b))
	if fs.blockSize >= 65536 && (n == 65535 || n == 0) {
		return int(fs.blockSize)
	}
	return n
}

func (fs *FS) putRecLen(b []byte, n int) {
	if n == 65536 {
		n = 65535
	}
	le.PutUint16(b, uint16(n))
}

func direntSize(nameLen int) int { return (direntHeader + nameLen + 3) &^ 3 }

// hasTail reports whether block b ends in a checksum tail.
func (fs *FS) hasTail(b []byte) bool {
	t := b[len(b)-dirTailSize:]
	return le.Uint32(t) == 0 && le.Uint16(t[4:]) == dirTailSize && t[6] == 0 && t[7] == 0xDE
}

func (fs *FS) setTail(dirIno, gen uint32, b []byte) {
	t := b[len(b)-dirTailSize:]
	clear(t)
	le.PutUint16(t[4:], dirTailSize)
	t[7] = 0xDE
	le.PutUint32(t[8:], crc32c(fs.inodeSeed(dirIno, gen), b[:len(b)-dirTailSize]))
}

// parseDirBlock decodes the entries of leaf block lblk (at pblk, read
// into b), checking each.
func (fs *FS) parseDirBlock(in *inode, lblk uint32, pblk uint64, b []byte) ([]dirent, error) {
	return fs.appendDirBlock(nil, in, lblk, pblk, b)
}

// appendDirBlock is parseDirBlock appending to out: a walk over a
// directory's blocks reuses one slice for them all.
func (fs *FS) appendDirBlock(out []dirent, in *inode, lblk uint32, pblk uint64, b []byte) ([]dirent, error) {
	err := fs.walkDirBlock(in, lblk, pblk, b, func(d dirent) bool {
		out = append(out, d)
		return true
	})
	return out, err
}

// walkDirBlock checks leaf block lblk (at pblk, the cache's buffer b)
// and calls f with each entry until f returns false; every entry is
// checked before f sees any. The checksum is checked once while the
// block stays in the cache (cache.checked).
func (fs *FS) walkDirBlock(in *inode, lblk uint32, pblk uint64, b []byte, f func(d dirent) bool) error {
	limit := len(b)
	if fs.hasCsum() {
		if !fs.hasTail(b) {
			return corrupt("directory %d block %d has no checksum tail", in.num, lblk)
		}
		limit -= dirTailSize
		if !fs.cache.isChecked(pblk) {
			if want, got := crc32c(fs.inodeSeed(in.num, in.generation), b[:limit]), le.Uint32(b[limit+8:]); want != got {
				return corrupt("directory %d block %d checksum %#x, computed %#x", in.num, lblk, got, want)
			}
			fs.cache.markChecked(pblk, b)
		}
	}
	for pass := 0; pass < 2; pass++ {
		for off := 0; off < limit; {
			e := b[off:]
			if limit-off < direntHeader {
				return corrupt("directory %d block %d: entry at %d runs past the block", in.num, lblk, off)
			}
			d := dirent{off: off, ino: le.Uint32(e), recLen: fs.recLen(e[4:]), nameLen: int(e[6])}
			if fs.sb.incompat&incompatFiletype != 0 {
				d.ftype = e[7]
			} else {
				d.nameLen |= int(e[7]) << 8
			}
			if d.recLen < 12 || d.recLen%4 != 0 || off+d.recLen > limit || direntSize(d.nameLen) > d.recLen && d.ino != 0 {
				return corrupt("directory %d block %d: bad entry at %d (length %d, name %d)", in.num, lblk, off, d.recLen, d.nameLen)
			}
			if d.ino > fs.sb.inodesCount {
				return corrupt("directory %d block %d: entry names inode %d", in.num, lblk, d.ino)
			}
			if pass == 1 && !f(d) {
				return nil
			}
			off += d.recLen
		}
	}
	return nil
}

// dirBlocks returns the number of blocks of directory in.
func (fs *FS) dirBlocks(in *inode) (uint32, error) {
	if in.size%uint64(fs.blockSize) != 0 || in.size/uint64(fs.blockSize) >= 1<<32 {
		return 0, corrupt("directory %d size %d", in.num, in.size)
	}
	return uint32(in.size / uint64(fs.blockSize)), nil
}

// dirBlock returns the cached block lblk of directory in and its
// physical number.
func (fs *FS) dirBlock(fm *fileMapping, lblk uint32) ([]byte, uint64, error) {
	pblk, _, unwritten, err := fm.lookup(lblk, 1)
	if err != nil {
		return nil, 0, err
	}
	if pblk == 0 || unwritten {
		return nil, 0, corrupt("directory %d has a hole at block %d", fm.in.num, lblk)
	}
	b, err := fs.cache.get(fs, pblk)
	return b, pblk, err
}

// isIndexBlock reports whether block lblk of in is an htree index block,
// which holds no entries and a dx tail instead of a dirent tail.
func (fs *FS) isIndexBlock(in *inode, lblk uint32, b []byte) bool {
	if in.flags&flagIndex == 0 || fs.sb.compat&compatDirIndex == 0 {
		return false
	}
	if lblk == 0 {
		return true
	}
	return le.Uint32(b) == 0 && fs.recLen(b[4:]) == len(b) && b[6] == 0
}

// forEachDirent calls f with every entry of directory in, in block
// order, until f returns false or an error.
func (fs *FS) forEachDirent(in *inode, f func(lblk uint32, b []byte, pblk uint64, d dirent) (bool, error)) error {
	return fs.forEachDirentFrom(in, 0, f)
}

// forEachDirentFrom is forEachDirent starting at block first.
func (fs *FS) forEachDirentFrom(in *inode, first uint32, f func(lblk uint32, b []byte, pblk uint64, d dirent) (bool, error)) error {
	if !in.isDir() {
		return linux.ENOTDIR
	}
	n, err := fs.dirBlocks(in)
	if err != nil {
		return err
	}
	fm, err := fs.mapping(in)
	if err != nil {
		return err
	}
	var ents []dirent
	for lblk := first; lblk < n; lblk++ {
		b, pblk, err := fs.dirBlock(fm, lblk)
		if err != nil {
			return err
		}
		if fs.isIndexBlock(in, lblk, b) {
			if err := fs.checkIndexBlock(in, lblk, pblk, b); err != nil {
				return err
			}
			if lblk != 0 {
				continue
			}
			// The root block starts with "." and "..": report them.
			ents, err := fs.parseRootDots(in, b)
			if err != nil {
				return err
			}
			for _, d := range ents {
				if more, err := f(lblk, b, pblk, d); !more || err != nil {
					return err
				}
			}
			continue
		}
		ents, err = fs.appendDirBlock(ents[:0], in, lblk, pblk, b)
		if err != nil {
			return err
		}
		for _, d := range ents {
			if more, err := f(lblk, b, pblk, d); !more || err != nil {
				return err
			}
		}
	}
	return nil
}

func (fs *FS) readDir(in *inode) ([]DirEntry, error) {
	var out []DirEntry
	err := fs.forEachDirent(in, func(_ uint32, b []byte, _ uint64, d dirent) (bool, error) {
		if d.ino != 0 {
			name := string(b[d.off+direntHeader : d.off+direntHeader+d.nameLen])
			out = append(out, DirEntry{Name: name, Ino: d.ino, Type: dtOf(d.ftype)})
		}
		return true, nil
	})
	return out, err
}

func dtOf(ft uint8) uint8 {
	switch ft {
	case ftReg:
		return linux.DT_REG
	case ftDir:
		return linux.DT_DIR
	case ftChr:
		return linux.DT_CHR
	case ftBlk:
		return linux.DT_BLK
	case ftFifo:
		return linux.DT_FIFO
	case ftSock:
		return linux.DT_SOCK
	case ftSymlink:
		return linux.DT_LNK
	}
	return linux.DT_UNKNOWN
}

// dirLoc is where a name was found.
type dirLoc struct {
	lblk uint32
	pblk uint64
	d    dirent
	prev int // offset of the entry before it in its block, -1 if first
}

// dirSlot is where a name that a lookup did not find can go: in the
// slack after entry d of block lblk, or in d itself if unused; the block
// addEntry would put it in. The lookup notes it as it passes, so that
// addEntry need not scan again (addEntryAt).
type dirSlot struct {
	lblk uint32
	pblk uint64
	b    []byte
	d    dirent
}

// roomAfter reports whether entry d leaves need bytes for another.
func roomAfter(d dirent, need int) bool {
	used := 0
	if d.ino != 0 {
		used = direntSize(d.nameLen)
	}
	return d.recLen-used >= need
}

// findEntry looks name up in directory in.
func (fs *FS) findEntry(in *inode, name string) (*dirLoc, error) {
	loc, _, err := fs.lookupEntry(in, name, false)
	return loc, err
}

// lookupEntry looks name up in directory in and, with slot and the name
// not found, also returns where it would go (nil if no block the lookup
// passed has room).
func (fs *FS) lookupEntry(in *inode, name string, slot bool) (*dirLoc, *dirSlot, error) {
	need := 0
	if slot {
		need = direntSize(len(name))
	}
	if fs.indexed(in) && name != "." && name != ".." {
		loc, s, ok, err := fs.dxFind(in, name, need)
		if ok || err != nil && !errors.Is(err, linux.ENOENT) {
			return loc, s, err
		}
	}
	// A slot only in a plain directory: in an indexed one addEntry goes
	// through the index (or drops it first).
	if in.flags&flagIndex != 0 {
		need = 0
	}
	var loc *dirLoc
	var s *dirSlot
	prev, prevBlk := -1, uint32(0)
	err := fs.forEachDirent(in, func(lblk uint32, b []byte, pblk uint64, d dirent) (bool, error) {
		if lblk != prevBlk {
			prev, prevBlk = -1, lblk
		}
		if d.ino != 0 && d.nameLen == len(name) && bytes.Equal(b[d.off+direntHeader:d.off+direntHeader+d.nameLen], []byte(name)) {
			loc = &dirLoc{lblk: lblk, pblk: pblk, d: d, prev: prev}
			return false, nil
		}
		if need > 0 && s == nil && roomAfter(d, need) {
			s = &dirSlot{lblk: lblk, pblk: pblk, b: b, d: d}
		}
		prev = d.off
		return true, nil
	})
	if err != nil {
		return nil, nil, err
	}
	if loc == nil {
		return nil, s, linux.ENOENT
	}
	return loc, nil, nil
}

// writeDirBlock rechecksums and writes a leaf block of directory in.
func (fs *FS) writeDirBlock(in *inode, pblk uint64, b []byte) error {
	if fs.hasCsum() {
		fs.setTail(in.num, in.generation, b)
	}
	return fs.cache.write(fs, pblk, b)
}

// addEntry adds name -> ino to directory in: through the index of an
// indexed directory (htree_write.go), else in the first block with room
// or a new block at the end, which a directory outgrowing one block gets
// as an index. An index that cannot grow further is dropped.
func (fs *FS) addEntry(in *inode, name string, ino uint32, ftype uint8) error {
	return fs.addEntryAt(in, name, ino, ftype, nil)
}

// addEntryAt is addEntry with the slot the lookup that found name free
// noted (lookupEntry), if any: nothing changed the directory since (its
// caller holds the directory's lock), so the name goes there, as
// addEntry would put it, unless the block is no longer the one seen.
//
// A directory may grow and then fail to take the name (an htree gains
// a level or splits a leaf, and the next block finds no room): what it
// grew is a valid directory and stays, and the inode is written here,
// since the callers write it only when the name went in; else the
// blocks it took would be mapped by a copy of the inode no one writes.
func (fs *FS) addEntryAt(in *inode, name string, ino uint32, ftype uint8, s *dirSlot) error {
	size, blocks, flags := in.size, in.blocks, in.flags
	err := fs.placeEntry(in, name, ino, ftype, s)
	if err != nil && (in.size != size || in.blocks != blocks || in.flags != flags) {
		err = errors.Join(err, fs.iput(in))
	}
	return err
}

// placeEntry is addEntryAt's work.
func (fs *FS) placeEntry(in *inode, name string, ino uint32, ftype uint8, s *dirSlot) error {
	if len(name) == 0 || len(name) > maxNameLen {
		return linux.ENAMETOOLONG
	}
	if s != nil {
		b, err := fs.cache.get(fs, s.pblk)
		if err != nil {
			return err
		}
		if &b[0] == &s.b[0] && le.Uint32(b[s.d.off:]) == s.d.ino && fs.recLen(b[s.d.off+4:]) == s.d.recLen {
			fs.putAfter(b, s.d, name, ino, ftype)
			return fs.writeDirBlock(in, s.pblk, b)
		}
	}
	if fs.indexed(in) {
		err := fs.dxAdd(in, name, ino, ftype)
		if err != errNoRoom {
			return err
		}
	}
	if in.flags&flagIndex != 0 {
		if err := fs.dropIndex(in); err != nil {
			return err
		}
	}
	need := direntSize(len(name))
	var placed bool
	var werr error
	err := fs.forEachDirent(in, func(lblk uint32, b []byte, pblk uint64, d dirent) (bool, error) {
		if !roomAfter(d, need) {
			return true, nil
		}
		fs.putAfter(b, d, name, ino, ftype)
		werr = fs.writeDirBlock(in, pblk, b)
		placed = true
		return false, nil
	})
	if err != nil || placed {
		return errors2(err, werr)
	}
	if fs.sb.compat&compatDirIndex != 0 && in.size == uint64(fs.blockSize) && !fs.noIndex {
		err := fs.makeIndexed(in, name, ino, ftype)
		if err != errNoRoom {
			return err
		}
	}
	// Append a block.
	n, err := fs.dirBlocks(in)
	if err != nil {
		return err
	}
	fm, err := fs.mapping(in)
	if err != nil {
		return err
	}
	pblk, _, err := fs.mapNew(fm, n, 1)
	if err != nil {
		return err
	}
	if _, err := fs.saveExtents(fm); err != nil {
		return err // the block went again
	}
	b := fs.cache.zero(fs, pblk)
	span := len(b)
	if fs.hasCsum() {
		span -= dirTailSize
	}
	fs.putDirent(b, ino, span, name, ftype)
	in.size += uint64(fs.blockSize)
	return fs.writeDirBlock(in, pblk, b)
}

func errors2(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// putAfter puts name in the slack after entry d of block b, or in d
// itself if unused (roomAfter said it fits), moving no entry: a listing
// in progress keeps its place.
func (fs *FS) putAfter(b []byte, d dirent, name string, ino uint32, ftype uint8) {
	off, recLen := d.off, d.recLen
	if d.ino != 0 {
		used := direntSize(d.nameLen)
		fs.putRecLen(b[off+4:], used)
		off += used
		recLen -= used
	}
	fs.putDirent(b[off:], ino, recLen, name, ftype)
}

func (fs *FS) putDirent(b []byte, ino uint32, recLen int, name string, ftype uint8) {
	le.PutUint32(b, ino)
	fs.putRecLen(b[4:], recLen)
	b[6] = uint8(len(name))
	if fs.sb.incompat&incompatFiletype != 0 {
		b[7] = ftype
	} else {
		b[7] = 0
	}
	copy(b[direntHeader:], name)
	// Clear the bytes after the name inside the entry.
	clear(b[direntHeader+len(name) : direntSize(len(name))])
}

// removeEntry takes the entry at loc out of its block: the entry before
// it absorbs its space, or, first in its block, it is marked unused.
func (fs *FS) removeEntry(in *inode, loc *dirLoc) error {
	b, err := fs.cache.get(fs, loc.pblk)
	if err != nil {
		return err
	}
	if loc.prev >= 0 {
		p := b[loc.prev:]
		fs.putRecLen(p[4:], fs.recLen(p[4:])+loc.d.recLen)
	} else {
		le.PutUint32(b[loc.d.off:], 0)
	}
	return fs.writeDirBlock(in, loc.pblk, b)
}

// setEntryIno points the entry at loc at another inode (rename over an
// existing name, or ".." of a moved directory).
func (fs *FS) setEntryIno(in *inode, loc *dirLoc, ino uint32, ftype uint8) error {
	b, err := fs.cache.get(fs, loc.pblk)
	if err != nil {
		return err
	}
	le.PutUint32(b[loc.d.off:], ino)
	if fs.sb.incompat&incompatFiletype != 0 {
		b[loc.d.off+7] = ftype
	}
	if in.flags&flagIndex != 0 && loc.lblk == 0 {
		return fs.writeIndexBlock(in, loc.pblk, b, 0)
	}
	return fs.writeDirBlock(in, loc.pblk, b)
}

// isEmptyDir reports whether directory in holds only "." and "..".
func (fs *FS) isEmptyDir(in *inode) (bool, error) {
	empty := true
	err := fs.forEachDirent(in, func(_ uint32, b []byte, _ uint64, d dirent) (bool, error) {
		if d.ino == 0 {
			return true, nil
		}
		name := string(b[d.off+direntHeader : d.off+direntHeader+d.nameLen])
		if name != "." && name != ".." {
			empty = false
			return false, nil
		}
		return true, nil
	})
	return empty, err
}
