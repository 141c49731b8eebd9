package ext4

import (
	"cmp"
	"slices"
	"sort"
	"strings"
)

// Hashed directories (dir_index). Block 0 of an indexed directory holds
// "." and "..", whose record covers the rest of the block, then the
// index root: a header, a count/limit pair and (hash, block) pairs. With
// more than one level, the blocks it points at are index nodes: a fake
// empty entry spanning the block, then count/limit and pairs. Leaves are
// ordinary directory blocks, so a linear walk (readdir) sees every name,
// checking the index blocks' checksums as it passes them; lookups and
// inserts go through the index (htree_write.go).
//
// Where the index cannot grow (a full root over full nodes, or three
// levels) dropIndex turns the directory back into a plain one: the root
// becomes an ordinary block holding "." and "..", the nodes become empty
// blocks, and the inode loses its index flag. e2fsck accepts that and
// Linux reads it linearly.

const (
	dxRootInfoOff = 24
	dxBlockMask   = 0x0FFFFFFF
)

// dxCountOffset returns where the count/limit pair of index block b sits.
func dxCountOffset(lblk uint32, b []byte) int {
	if lblk == 0 {
		return dxRootInfoOff + int(b[dxRootInfoOff+5])
	}
	return 8
}

// parseRootDots decodes "." and ".." at the start of an index root.
func (fs *FS) parseRootDots(in *inode, b []byte) ([]dirent, error) {
	dot := dirent{off: 0, ino: le.Uint32(b), recLen: fs.recLen(b[4:]), nameLen: int(b[6]), ftype: b[7]}
	dotdot := dirent{off: 12, ino: le.Uint32(b[12:]), recLen: fs.recLen(b[16:]), nameLen: int(b[18]), ftype: b[19]}
	if dot.recLen != 12 || dot.nameLen != 1 || b[8] != '.' || dotdot.nameLen != 2 || b[20] != '.' || b[21] != '.' ||
		dotdot.recLen != len(b)-12 || dotdot.ino > fs.sb.inodesCount {
		return nil, corrupt("directory %d index root lacks . and ..", in.num)
	}
	return []dirent{dot, dotdot}, nil
}

// checkIndexBlock checks index block lblk's geometry and checksum (at
// pblk, the cache's buffer b; the checksum once while the block stays in
// the cache, as walkDirBlock's).
func (fs *FS) checkIndexBlock(in *inode, lblk uint32, pblk uint64, b []byte) error {
	if lblk == 0 {
		info := b[dxRootInfoOff:]
		if info[5] != 8 || info[6] > 2 && !(info[6] == 3 && fs.sb.incompat&incompatLargeDir != 0) {
			return corrupt("directory %d index root header (length %d, %d levels)", in.num, info[5], info[6])
		}
	}
	countOff := dxCountOffset(lblk, b)
	limit, count := int(le.Uint16(b[countOff:])), int(le.Uint16(b[countOff+2:]))
	tail := 0
	if fs.hasCsum() {
		tail = 8
	}
	if count > limit || count == 0 || countOff+limit*8+tail > len(b) {
		return corrupt("directory %d index block %d holds %d of %d entries", in.num, lblk, count, limit)
	}
	if fs.hasCsum() && !fs.cache.isChecked(pblk) {
		t := countOff + limit*8
		if want, got := fs.dxCsum(in, b, countOff, count, t), le.Uint32(b[t+4:]); want != got {
			return corrupt("directory %d index block %d checksum %#x, computed %#x", in.num, lblk, got, want)
		}
		fs.cache.markChecked(pblk, b)
	}
	return nil
}

// dxCsum covers the block up to the last used entry, then the tail with
// its checksum taken as zero.
func (fs *FS) dxCsum(in *inode, b []byte, countOff, count, tailOff int) uint32 {
	c := crc32c(fs.inodeSeed(in.num, in.generation), b[:countOff+count*8])
	c = crc32c(c, b[tailOff:tailOff+4])
	return crc32c(c, []byte{0, 0, 0, 0})
}

// writeIndexBlock rechecksums and writes index block lblk of in.
func (fs *FS) writeIndexBlock(in *inode, pblk uint64, b []byte, lblk uint32) error {
	if fs.hasCsum() {
		countOff := dxCountOffset(lblk, b)
		limit, count := int(le.Uint16(b[countOff:])), int(le.Uint16(b[countOff+2:]))
		t := countOff + limit*8
		le.PutUint32(b[t+4:], fs.dxCsum(in, b, countOff, count, t))
	}
	return fs.cache.write(fs, pblk, b)
}

// dropIndex turns indexed directory in into a plain one (see above). The
// caller writes in.
func (fs *FS) dropIndex(in *inode) error {
	fm, err := fs.mapping(in)
	if err != nil {
		return err
	}
	root, rootPblk, err := fs.dirBlock(fm, 0)
	if err != nil {
		return err
	}
	if err := fs.checkIndexBlock(in, 0, rootPblk, root); err != nil {
		return err
	}
	nblocks, err := fs.dirBlocks(in)
	if err != nil {
		return err
	}
	levels := int(root[dxRootInfoOff+6])
	var nodes []uint32
	frontier := []uint32{0}
	for level := 0; level < levels; level++ {
		var next []uint32
		for _, lb := range frontier {
			b, pblk, err := fs.dirBlock(fm, lb)
			if err != nil {
				return err
			}
			if lb != 0 {
				if err := fs.checkIndexBlock(in, lb, pblk, b); err != nil {
					return err
				}
			}
			countOff := dxCountOffset(lb, b)
			count := int(le.Uint16(b[countOff+2:]))
			for i := 0; i < count; i++ {
				// Entry i is (hash, block) at countOff+8i; entry 0's
				// hash slot holds the limit and count.
				child := le.Uint32(b[countOff+8*i+4:]) & dxBlockMask
				if child == 0 || child >= nblocks {
					return corrupt("directory %d index points at block %d", in.num, child)
				}
				next = append(next, child)
			}
		}
		nodes = append(nodes, next...)
		frontier = next
	}
	span := int(fs.blockSize)
	if fs.hasCsum() {
		span -= dirTailSize
	}
	for _, lb := range nodes {
		b, pblk, err := fs.dirBlock(fm, lb)
		if err != nil {
			return err
		}
		clear(b)
		fs.putRecLen(b[4:], span)
		if err := fs.writeDirBlock(in, pblk, b); err != nil {
			return err
		}
	}
	clear(root[24:])
	fs.putRecLen(root[16:], span-12)
	if err := fs.writeDirBlock(in, rootPblk, root); err != nil {
		return err
	}
	in.flags &^= flagIndex
	return nil
}

// dxLeaf is a leaf of the index and the least hash it may hold.
type dxLeaf struct {
	hash uint32
	lblk uint32
}

// dxLeaves lists the leaves of indexed directory in, in hash order.
func (fs *FS) dxLeaves(in *inode, fm *fileMapping) ([]dxLeaf, error) {
	nblocks, err := fs.dirBlocks(in)
	if err != nil {
		return nil, err
	}
	root, rootPblk, err := fs.dirBlock(fm, 0)
	if err != nil {
		return nil, err
	}
	if err := fs.checkIndexBlock(in, 0, rootPblk, root); err != nil {
		return nil, err
	}
	levels := int(root[dxRootInfoOff+6])
	seen := map[uint32]bool{}
	var out []dxLeaf
	var walk func(b []byte, lblk uint32, level int, low uint32) error
	walk = func(b []byte, lblk uint32, level int, low uint32) error {
		f := &dxFrame{b: b, countOff: dxCountOffset(lblk, b)}
		for i := 0; i < f.count(); i++ {
			h := f.hash(i)
			if i == 0 {
				h = low
			}
			child := f.block(i)
			if child == 0 || child >= nblocks || seen[child] {
				return corrupt("directory %d index points at block %d", in.num, child)
			}
			seen[child] = true
			if level == levels {
				out = append(out, dxLeaf{h, child})
				continue
			}
			cb, cp, err := fs.dirBlock(fm, child)
			if err != nil {
				return err
			}
			if !fs.isIndexBlock(in, child, cb) {
				return corrupt("directory %d block %d should be an index node", in.num, child)
			}
			if err := fs.checkIndexBlock(in, child, cp, cb); err != nil {
				return err
			}
			if err := walk(cb, child, level+1, h); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(root, 0, 0, 0)
}

// Listing positions on a dir_index file system are made of hashes, for
// every directory that has an index or fits one block (the one that
// gets an index when it outgrows its block), as Linux's are: a name's
// position stays put when a leaf split moves it to another block, and
// does not change kind when its directory becomes indexed, so a listing
// that spans either sees each name once. A position is what Linux gives
// a 64-bit process: the major hash without its low bit (always clear)
// over the 32-bit minor hash, "." at 0 and ".." at hash 2 (1<<32). Names
// whose hashes are equal share a position (the VFS keeps track of the
// ones it returned there, vfs.DirEntry.Shared). Other directories list
// in block order, at byte offsets.

const (
	dotPos    = 0
	dotdotPos = 1 << 32
)

// hashPos is the listing position of a name with hashes hash and minor.
func hashPos(hash, minor uint32) int64 {
	return int64(hash>>1)<<32 | int64(minor)
}

// hashOrdered reports whether directory in is listed in hash order.
// A one-block directory is if its index will use the default hash
// (makeIndexed); tests that grow directories without an index (noIndex)
// keep offsets.
func (fs *FS) hashOrdered(in *inode) bool {
	if fs.sb.compat&compatDirIndex == 0 {
		return false
	}
	if in.flags&flagIndex != 0 {
		return true
	}
	return in.size == uint64(fs.blockSize) && fs.sb.defHashVersion <= hashTea && !fs.noIndex
}

// sortByPos orders entries by position, names sharing one by name.
func sortByPos(ents []DirEntry) {
	slices.SortFunc(ents, func(a, b DirEntry) int {
		if c := cmp.Compare(a.Off, b.Off); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// readDirOneBlock lists a one-block directory in hash order (see above),
// hashing its names as makeIndexed will.
func (fs *FS) readDirOneBlock(in *inode, pos int64) ([]DirEntry, error) {
	fm, err := fs.mapping(in)
	if err != nil {
		return nil, err
	}
	b, pblk, err := fs.dirBlock(fm, 0)
	if err != nil {
		return nil, err
	}
	version := fs.sb.defHashVersion
	if fs.sb.flags&sFlagUnsignedHash != 0 {
		version += 3
	}
	var out []DirEntry
	err = fs.walkDirBlock(in, 0, pblk, b, func(d dirent) bool {
		if d.ino == 0 {
			return true
		}
		name := b[d.off+direntHeader : d.off+direntHeader+d.nameLen]
		var p int64
		switch string(name) {
		case ".":
			p = dotPos
		case "..":
			p = dotdotPos
		default:
			h, minor, _ := nameHash(name, version, fs.sb.hashSeed)
			p = hashPos(h, minor)
		}
		if p >= pos {
			out = append(out, DirEntry{Name: string(name), Ino: d.ino, Type: dtOf(d.ftype), Off: p})
		}
		return true
	})
	sortByPos(out)
	return out, err
}

// readDirHashed lists an indexed directory in hash order from position
// pos, a leaf (or a run of leaves sharing a hash) at a time, until it
// has max entries: names sharing a position are never split between two
// calls.
func (fs *FS) readDirHashed(in *inode, pos int64, max int) ([]DirEntry, error) {
	fm, err := fs.mapping(in)
	if err != nil {
		return nil, err
	}
	root, _, err := fs.dirBlock(fm, 0)
	if err != nil {
		return nil, err
	}
	var out []DirEntry
	dots, err := fs.parseRootDots(in, root)
	if err != nil {
		return nil, err
	}
	for i, d := range dots {
		if p := []int64{dotPos, dotdotPos}[i]; p >= pos {
			out = append(out, DirEntry{Name: []string{".", ".."}[i], Ino: d.ino, Type: dtOf(d.ftype), Off: p})
		}
	}
	leaves, err := fs.dxLeaves(in, fm)
	if err != nil {
		return nil, err
	}
	version := fs.dxVersion(root)
	startHash := uint32(pos>>32) << 1
	i := sort.Search(len(leaves), func(i int) bool { return leaves[i].hash > startHash }) - 1
	if i < 0 {
		i = 0
	}
	for i < len(leaves) && len(out) < max {
		// A run of leaves continuing one hash is listed as one.
		var group []DirEntry
		for first := true; i < len(leaves) && (first || leaves[i].hash&1 != 0); first = false {
			b, pblk, err := fs.dirBlock(fm, leaves[i].lblk)
			if err != nil {
				return nil, err
			}
			ents, err := fs.parseDirBlock(in, leaves[i].lblk, pblk, b)
			if err != nil {
				return nil, err
			}
			for _, d := range ents {
				if d.ino == 0 {
					continue
				}
				name := b[d.off+direntHeader : d.off+direntHeader+d.nameLen]
				h, minor, _ := nameHash(name, version, fs.sb.hashSeed)
				if p := hashPos(h, minor); p >= pos {
					group = append(group, DirEntry{Name: string(name), Ino: d.ino, Type: dtOf(d.ftype), Off: p})
				}
			}
			i++
		}
		sortByPos(group)
		out = append(out, group...)
	}
	return out, nil
}
