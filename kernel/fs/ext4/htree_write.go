package ext4

import (
	"errors"
	"sort"

	"shortbread/kernel/abi/linux"
)

// Lookups and inserts through a directory's hash index. A name's hash
// picks one entry at each level of the index (the last whose hash is at
// most the name's), down to a leaf. Inserting where the leaf is full
// splits it by hash, the upper half going to a new block whose first
// hash enters the parent; a full parent grows the tree by a level (from
// the root alone) or splits (below a root with room). Past what that
// handles (a full root over full nodes), the index is dropped and the
// directory continues unindexed, as before.
//
// A plain directory gets an index when it grows past one block, as on
// Linux.

// dxFrame is one index block on the path to a leaf.
type dxFrame struct {
	lblk     uint32
	pblk     uint64
	b        []byte
	countOff int
	idx      int // the entry followed
}

func (f *dxFrame) count() int { return int(le.Uint16(f.b[f.countOff+2:])) }
func (f *dxFrame) limit() int { return int(le.Uint16(f.b[f.countOff:])) }
func (f *dxFrame) hash(i int) uint32 {
	if i == 0 {
		return 0
	}
	return le.Uint32(f.b[f.countOff+8*i:])
}
func (f *dxFrame) block(i int) uint32 { return le.Uint32(f.b[f.countOff+8*i+4:]) & dxBlockMask }

// insert puts (hash, block) at position i, shifting the rest up.
func (f *dxFrame) insert(i int, hash, block uint32) {
	n := f.count()
	base := f.countOff
	copy(f.b[base+8*(i+1):base+8*(n+1)], f.b[base+8*i:base+8*n])
	le.PutUint32(f.b[base+8*i:], hash)
	le.PutUint32(f.b[base+8*i+4:], block)
	le.PutUint16(f.b[base+2:], uint16(n+1))
}

func (fs *FS) dxVersion(root []byte) uint8 {
	v := root[dxRootInfoOff+4]
	if v <= hashTea && fs.sb.flags&sFlagUnsignedHash != 0 {
		v += 3
	}
	return v
}

func (fs *FS) indexed(in *inode) bool {
	return in.flags&flagIndex != 0 && fs.sb.compat&compatDirIndex != 0
}

// dxPath walks the index of in for hash and returns the frames and the
// leaf's logical block.
func (fs *FS) dxPath(in *inode, fm *fileMapping, hash uint32) ([]*dxFrame, uint32, error) {
	nblocks, err := fs.dirBlocks(in)
	if err != nil {
		return nil, 0, err
	}
	root, pblk, err := fs.dirBlock(fm, 0)
	if err != nil {
		return nil, 0, err
	}
	if err := fs.checkIndexBlock(in, 0, pblk, root); err != nil {
		return nil, 0, err
	}
	levels := int(root[dxRootInfoOff+6])
	frames := []*dxFrame{{lblk: 0, pblk: pblk, b: root, countOff: dxCountOffset(0, root)}}
	for {
		f := frames[len(frames)-1]
		i := sort.Search(f.count(), func(i int) bool { return i > 0 && f.hash(i) > hash }) - 1
		f.idx = i
		child := f.block(i)
		if child == 0 || child >= nblocks {
			return nil, 0, corrupt("directory %d index points at block %d", in.num, child)
		}
		if len(frames) > levels {
			return frames, child, nil
		}
		b, p, err := fs.dirBlock(fm, child)
		if err != nil {
			return nil, 0, err
		}
		if !fs.isIndexBlock(in, child, b) {
			return nil, 0, corrupt("directory %d block %d should be an index node", in.num, child)
		}
		if err := fs.checkIndexBlock(in, child, p, b); err != nil {
			return nil, 0, err
		}
		frames = append(frames, &dxFrame{lblk: child, pblk: p, b: b, countOff: 8})
	}
}

// dxFind looks name up through the index. ok false means the index could
// not decide (a run of equal hashes crossing index nodes): search
// linearly. With need above 0 and the name not found, it also returns
// the first entry of the name's leaf (where dxAdd would put it) that
// leaves need bytes, if one does.
func (fs *FS) dxFind(in *inode, name string, need int) (loc *dirLoc, slot *dirSlot, ok bool, err error) {
	fm, err := fs.mapping(in)
	if err != nil {
		return nil, nil, false, err
	}
	root, _, err := fs.dirBlock(fm, 0)
	if err != nil {
		return nil, nil, false, err
	}
	hash, _, known := nameHash([]byte(name), fs.dxVersion(root), fs.sb.hashSeed)
	if !known {
		return nil, nil, false, nil
	}
	frames, leaf, err := fs.dxPath(in, fm, hash)
	if err != nil {
		return nil, nil, false, err
	}
	last := frames[len(frames)-1]
	for {
		b, pblk, err := fs.dirBlock(fm, leaf)
		if err != nil {
			return nil, nil, false, err
		}
		prev := -1
		var found *dirLoc
		err = fs.walkDirBlock(in, leaf, pblk, b, func(d dirent) bool {
			if d.ino != 0 && d.nameLen == len(name) && string(b[d.off+direntHeader:d.off+direntHeader+d.nameLen]) == name {
				found = &dirLoc{lblk: leaf, pblk: pblk, d: d, prev: prev}
				return false
			}
			if need > 0 && slot == nil && roomAfter(d, need) {
				slot = &dirSlot{lblk: leaf, pblk: pblk, b: b, d: d}
			}
			prev = d.off
			return true
		})
		need = 0 // only the first leaf is dxAdd's
		if err != nil || found != nil {
			return found, nil, true, err
		}
		// Names of one hash may continue in the next leaf, whose index
		// hash then has its low bit set.
		next := last.idx + 1
		if next >= last.count() {
			if len(frames) > 1 {
				return nil, nil, false, nil
			}
			return nil, slot, true, linux.ENOENT
		}
		if h := last.hash(next); h&1 == 0 || h&^1 != hash {
			return nil, slot, true, linux.ENOENT
		}
		last.idx = next
		leaf = last.block(next)
	}
}

// leafEntry is a name to pack into a leaf block.
type leafEntry struct {
	ino   uint32
	ftype uint8
	name  string
	hash  uint32
}

// packLeaf writes entries into leaf block b from its start.
func (fs *FS) packLeaf(b []byte, ents []leafEntry) bool {
	clear(b)
	end := len(b)
	if fs.hasCsum() {
		end -= dirTailSize
	}
	off := 0
	for i, e := range ents {
		size := direntSize(len(e.name))
		if off+size > end {
			return false
		}
		rec := size
		if i == len(ents)-1 {
			rec = end - off
		}
		fs.putDirent(b[off:], e.ino, rec, e.name, e.ftype)
		off += size
	}
	if len(ents) == 0 {
		fs.putRecLen(b[4:], end)
	}
	return true
}

// leafEntries decodes the live entries of a leaf with their hashes.
func (fs *FS) leafEntries(in *inode, lblk uint32, pblk uint64, b []byte, version uint8) ([]leafEntry, error) {
	ents, err := fs.parseDirBlock(in, lblk, pblk, b)
	if err != nil {
		return nil, err
	}
	var out []leafEntry
	for _, d := range ents {
		if d.ino == 0 {
			continue
		}
		name := string(b[d.off+direntHeader : d.off+direntHeader+d.nameLen])
		h, _, _ := nameHash([]byte(name), version, fs.sb.hashSeed)
		out = append(out, leafEntry{ino: d.ino, ftype: d.ftype, name: name, hash: h})
	}
	return out, nil
}

// newDirBlock appends a block to directory in and returns its logical
// and physical numbers and a zeroed cached buffer for it.
func (fs *FS) newDirBlock(in *inode) (uint32, uint64, []byte, error) {
	n, err := fs.dirBlocks(in)
	if err != nil {
		return 0, 0, nil, err
	}
	fm, err := fs.mapping(in)
	if err != nil {
		return 0, 0, nil, err
	}
	pblk, _, err := fs.mapNew(fm, n, 1)
	if err != nil {
		return 0, 0, nil, err
	}
	if _, err := fs.saveExtents(fm); err != nil {
		return 0, 0, nil, err // the block went again
	}
	in.size += uint64(fs.blockSize)
	return n, pblk, fs.cache.zero(fs, pblk), nil
}

// dropDirBlocks frees directory in's blocks from lblk on, the last ones
// newDirBlock gave it, and its size with them.
func (fs *FS) dropDirBlocks(in *inode, lblk uint32) error {
	fm, err := fs.mapping(in)
	if err != nil {
		return err
	}
	if err := fs.freeFrom(fm, uint64(lblk)); err != nil {
		return err
	}
	in.size = uint64(lblk) * uint64(fs.blockSize)
	return nil
}

func (fs *FS) dxLimit(countOff int) int {
	n := int(fs.blockSize) - countOff
	if fs.hasCsum() {
		n -= 8
	}
	return n / 8
}

// errNoRoom says the index cannot take another entry where needed.
var errNoRoom = errors.New("ext4: index full")

// dxAdd inserts name through the index. errNoRoom means the caller should
// drop the index and insert linearly.
func (fs *FS) dxAdd(in *inode, name string, ino uint32, ftype uint8) error {
	for tries := 0; tries < 4; tries++ {
		err := fs.dxAddOnce(in, name, ino, ftype)
		if err != errRetry {
			return err
		}
	}
	return errNoRoom
}

var errRetry = errors.New("ext4: index changed, retry")

func (fs *FS) dxAddOnce(in *inode, name string, ino uint32, ftype uint8) error {
	fm, err := fs.mapping(in)
	if err != nil {
		return err
	}
	root, _, err := fs.dirBlock(fm, 0)
	if err != nil {
		return err
	}
	version := fs.dxVersion(root)
	hash, _, known := nameHash([]byte(name), version, fs.sb.hashSeed)
	if !known {
		return errNoRoom
	}
	frames, leaf, err := fs.dxPath(in, fm, hash)
	if err != nil {
		return err
	}
	b, pblk, err := fs.dirBlock(fm, leaf)
	if err != nil {
		return err
	}
	// Room in the leaf: put the name in the slack after an entry, moving
	// none (a listing in progress keeps its place).
	need := direntSize(len(name))
	parsed, err := fs.parseDirBlock(in, leaf, pblk, b)
	if err != nil {
		return err
	}
	for _, d := range parsed {
		if roomAfter(d, need) {
			fs.putAfter(b, d, name, ino, ftype)
			return fs.writeDirBlock(in, pblk, b)
		}
	}
	ents, err := fs.leafEntries(in, leaf, pblk, b, version)
	if err != nil {
		return err
	}
	ents = append(ents, leafEntry{ino: ino, ftype: ftype, name: name, hash: hash})
	// Split the leaf; first make sure its parent can take an entry.
	parent := frames[len(frames)-1]
	if parent.count() >= parent.limit() {
		if err := fs.dxGrow(in, frames); err != nil {
			return err
		}
		return errRetry
	}
	sort.SliceStable(ents, func(i, j int) bool { return ents[i].hash < ents[j].hash })
	total := 0
	for _, e := range ents {
		total += direntSize(len(e.name))
	}
	mid, acc := 0, 0
	for mid < len(ents)-1 && acc+direntSize(len(ents[mid].name)) <= total/2 {
		acc += direntSize(len(ents[mid].name))
		mid++
	}
	if mid == 0 {
		mid = 1
	}
	splitHash := ents[mid].hash
	if ents[mid-1].hash == splitHash {
		splitHash |= 1 // the run of this hash continues in the new block
	}
	nl, np, nb, err := fs.newDirBlock(in)
	if err != nil {
		return err
	}
	if !fs.packLeaf(b, ents[:mid]) || !fs.packLeaf(nb, ents[mid:]) {
		return corrupt("directory %d: a split leaf does not fit", in.num)
	}
	if err := fs.writeDirBlock(in, pblk, b); err != nil {
		return err
	}
	if err := fs.writeDirBlock(in, np, nb); err != nil {
		return err
	}
	parent.insert(parent.idx+1, splitHash, nl)
	return fs.writeIndexBlock(in, parent.pblk, parent.b, parent.lblk)
}

// dxGrow makes room in the full index block at the end of frames: a full
// root alone gains a level; a full node under a root with room splits.
func (fs *FS) dxGrow(in *inode, frames []*dxFrame) error {
	root := frames[0]
	levels := int(root.b[dxRootInfoOff+6])
	if len(frames) == 1 {
		if levels != 0 {
			return errNoRoom
		}
		// Move the root's entries into a new node under it.
		nl, np, nb, err := fs.newDirBlock(in)
		if err != nil {
			return err
		}
		fs.putRecLen(nb[4:], len(nb))
		limit := fs.dxLimit(8)
		n := root.count()
		copy(nb[8:], root.b[root.countOff:root.countOff+8*n])
		le.PutUint16(nb[8:], uint16(limit))
		le.PutUint16(nb[10:], uint16(n))
		if err := fs.writeIndexBlock(in, np, nb, nl); err != nil {
			return err
		}
		le.PutUint16(root.b[root.countOff+2:], 1)
		le.PutUint32(root.b[root.countOff+4:], nl)
		root.b[dxRootInfoOff+6] = 1
		return fs.writeIndexBlock(in, root.pblk, root.b, 0)
	}
	if len(frames) != 2 || root.count() >= root.limit() {
		return errNoRoom
	}
	node := frames[1]
	n := node.count()
	half := n / 2
	moveHash := node.hash(half)
	nl, np, nb, err := fs.newDirBlock(in)
	if err != nil {
		return err
	}
	fs.putRecLen(nb[4:], len(nb))
	limit := fs.dxLimit(8)
	copy(nb[8:], node.b[8+8*half:8+8*n])
	le.PutUint16(nb[8:], uint16(limit))
	le.PutUint16(nb[10:], uint16(n-half))
	le.PutUint16(node.b[10:], uint16(half))
	if err := fs.writeIndexBlock(in, np, nb, nl); err != nil {
		return err
	}
	if err := fs.writeIndexBlock(in, node.pblk, node.b, node.lblk); err != nil {
		return err
	}
	root.insert(root.idx+1, moveHash, nl)
	return fs.writeIndexBlock(in, root.pblk, root.b, 0)
}

// makeIndexed turns the one-block directory in into an indexed one whose
// entries (and the new name) go to two leaves under a root in block 0.
func (fs *FS) makeIndexed(in *inode, name string, ino uint32, ftype uint8) error {
	fm, err := fs.mapping(in)
	if err != nil {
		return err
	}
	b0, p0, err := fs.dirBlock(fm, 0)
	if err != nil {
		return err
	}
	version := fs.sb.defHashVersion
	if version > hashTea {
		return errNoRoom
	}
	root := []byte(nil)
	parsed, err := fs.parseDirBlock(in, 0, p0, b0)
	if err != nil {
		return err
	}
	if len(parsed) < 2 || parsed[0].nameLen != 1 || parsed[1].nameLen != 2 || parsed[0].recLen != 12 {
		return errNoRoom // not the usual "." and ".." first: leave it linear
	}
	dotdot := parsed[1].ino
	unsignedV := version
	if fs.sb.flags&sFlagUnsignedHash != 0 {
		unsignedV += 3
	}
	var ents []leafEntry
	for _, d := range parsed[2:] {
		if d.ino == 0 {
			continue
		}
		n := string(b0[d.off+direntHeader : d.off+direntHeader+d.nameLen])
		h, _, _ := nameHash([]byte(n), unsignedV, fs.sb.hashSeed)
		ents = append(ents, leafEntry{ino: d.ino, ftype: d.ftype, name: n, hash: h})
	}
	h, _, _ := nameHash([]byte(name), unsignedV, fs.sb.hashSeed)
	ents = append(ents, leafEntry{ino: ino, ftype: ftype, name: name, hash: h})
	sort.SliceStable(ents, func(i, j int) bool { return ents[i].hash < ents[j].hash })
	mid := len(ents) / 2
	if mid == 0 {
		return errNoRoom
	}
	splitHash := ents[mid].hash
	if ents[mid-1].hash == splitHash {
		splitHash |= 1
	}
	l1, p1, b1, err := fs.newDirBlock(in)
	if err != nil {
		return err
	}
	l2, p2, b2, err := fs.newDirBlock(in)
	if err != nil {
		// The directory stays linear, one block long: the first new
		// block, not yet a directory block, goes again.
		return errors.Join(err, fs.dropDirBlocks(in, l1))
	}
	if !fs.packLeaf(b1, ents[:mid]) || !fs.packLeaf(b2, ents[mid:]) {
		return corrupt("directory %d: entries do not fit two blocks", in.num)
	}
	if err := fs.writeDirBlock(in, p1, b1); err != nil {
		return err
	}
	if err := fs.writeDirBlock(in, p2, b2); err != nil {
		return err
	}
	root = b0
	clear(root)
	fs.putDirent(root, in.num, 12, ".", ftDir)
	fs.putDirent(root[12:], dotdot, len(root)-12, "..", ftDir)
	info := root[dxRootInfoOff:]
	info[4] = version
	info[5] = 8
	countOff := dxRootInfoOff + 8
	le.PutUint16(root[countOff:], uint16(fs.dxLimit(countOff)))
	le.PutUint16(root[countOff+2:], 2)
	le.PutUint32(root[countOff+4:], l1)
	le.PutUint32(root[countOff+8:], splitHash)
	le.PutUint32(root[countOff+12:], l2)
	in.flags |= flagIndex
	return fs.writeIndexBlock(in, p0, root, 0)
}
