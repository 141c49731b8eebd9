package ext4

import "sort"

// Extent trees (Documentation/filesystems/ext4/ifork.rst). Every node
// starts with a 12-byte header; index nodes hold (logical block, child
// block) pairs, leaves hold extents. The root is the inode's i_block
// (room for 4 entries), the other nodes are whole blocks ending, with
// metadata_csum, in a 4-byte checksum.
//
// This package reads a file's whole tree into a sorted list of extents
// and, when a write or truncate changes the list, writes the tree anew
// from the list, reusing the old tree's blocks. That keeps every change
// (inserting, splitting an unwritten extent, growing the tree past the
// inode's four slots) one simple step.

const (
	extentMagic    = 0xF30A
	extentMaxDepth = 5
	// maxWrittenLen and maxUnwrittenLen bound an extent's length: the
	// high bit of ee_len marks an unwritten (preallocated) extent.
	maxWrittenLen   = 32768
	maxUnwrittenLen = 32767
)

// extent maps len logical blocks from lblk to physical blocks from pblk.
type extent struct {
	lblk      uint32
	len       uint32
	pblk      uint64
	unwritten bool
}

func (e extent) end() uint64 { return uint64(e.lblk) + uint64(e.len) }

// extentMap is a file's extents, sorted, and the blocks of its tree.
type extentMap struct {
	exts []extent
	tree []uint64 // index and leaf blocks below the root
	seen map[uint64]struct{}
}

// readExtents walks in's tree and checks every node.
func (fs *FS) readExtents(in *inode) (*extentMap, error) {
	m := &extentMap{seen: make(map[uint64]struct{})}
	if err := fs.walkExtentNode(in, in.block[:], -1, 0, m); err != nil {
		return nil, err
	}
	for i := 1; i < len(m.exts); i++ {
		if uint64(m.exts[i].lblk) < m.exts[i-1].end() {
			return nil, corrupt("inode %d extents overlap at logical block %d", in.num, m.exts[i].lblk)
		}
	}
	return m, nil
}

// walkExtentNode reads one node; wantDepth is the depth its parent says
// it has (-1 for the root).
func (fs *FS) walkExtentNode(in *inode, node []byte, wantDepth int, minLblk uint32, m *extentMap) error {
	magic := le.Uint16(node[0:])
	entries := int(le.Uint16(node[2:]))
	max := int(le.Uint16(node[4:]))
	depth := int(le.Uint16(node[6:]))
	if magic != extentMagic {
		return corrupt("inode %d extent header magic %#x", in.num, magic)
	}
	if max == 0 || 12+12*max > len(node) || entries > max {
		return corrupt("inode %d extent node holds %d of %d entries", in.num, entries, max)
	}
	if depth > extentMaxDepth || (wantDepth >= 0 && depth != wantDepth) {
		return corrupt("inode %d extent node depth %d", in.num, depth)
	}
	next := int64(minLblk) // the least logical block the next entry may start at
	for i := 0; i < entries; i++ {
		e := node[12+12*i:]
		lblk := le.Uint32(e[0:])
		if int64(lblk) < next {
			return corrupt("inode %d extent entries out of order at logical block %d", in.num, lblk)
		}
		next = int64(lblk) + 1
		if depth == 0 {
			n := uint32(le.Uint16(e[4:]))
			x := extent{lblk: lblk, len: n, pblk: uint64(le.Uint16(e[6:]))<<32 | uint64(le.Uint32(e[8:]))}
			if n > maxWrittenLen {
				x.len, x.unwritten = n-maxWrittenLen, true
			}
			if x.len == 0 || x.pblk < uint64(fs.sb.firstDataBlock) || x.pblk+uint64(x.len) > fs.sb.blocksCount || x.end() > 1<<32 {
				return corrupt("inode %d extent (%d, %d blocks at %d) out of range", in.num, x.lblk, x.len, x.pblk)
			}
			m.exts = append(m.exts, x)
			next = int64(x.end())
			continue
		}
		child := uint64(le.Uint16(e[8:]))<<32 | uint64(le.Uint32(e[4:]))
		if child < uint64(fs.sb.firstDataBlock) || child >= fs.sb.blocksCount {
			return corrupt("inode %d extent index points at block %d", in.num, child)
		}
		// A block met twice would make the walk loop or fan out
		// without bound.
		if _, dup := m.seen[child]; dup {
			return corrupt("inode %d extent tree uses block %d twice", in.num, child)
		}
		m.seen[child] = struct{}{}
		m.tree = append(m.tree, child)
		b, err := fs.cache.get(fs, child)
		if err != nil {
			return err
		}
		if err := fs.checkExtentBlock(in, b); err != nil {
			return err
		}
		if err := fs.walkExtentNode(in, b, depth-1, lblk, m); err != nil {
			return err
		}
	}
	return nil
}

func (fs *FS) extentTailOff(b []byte) int {
	return 12 + 12*int(le.Uint16(b[4:]))
}

func (fs *FS) checkExtentBlock(in *inode, b []byte) error {
	if !fs.hasCsum() {
		return nil
	}
	off := fs.extentTailOff(b)
	if off+4 > len(b) {
		return corrupt("inode %d extent block has no room for its checksum", in.num)
	}
	if want, got := crc32c(fs.inodeSeed(in.num, in.generation), b[:off]), le.Uint32(b[off:]); want != got {
		return corrupt("inode %d extent block checksum %#x, computed %#x", in.num, got, want)
	}
	return nil
}

// find returns the index of the extent holding lblk, or of the first
// extent after it (len(exts) if none), and whether lblk is inside it.
func (m *extentMap) find(lblk uint32) (int, bool) {
	i := sort.Search(len(m.exts), func(i int) bool { return m.exts[i].end() > uint64(lblk) })
	return i, i < len(m.exts) && m.exts[i].lblk <= lblk
}

// lookup maps lblk: its physical block (0 in a hole), how many blocks
// from it map contiguously (or how long the hole is, up to limit), and
// whether the blocks are unwritten.
func (m *extentMap) lookup(lblk, limit uint32) (pblk uint64, n uint32, unwritten bool) {
	i, in := m.find(lblk)
	if in {
		e := m.exts[i]
		return e.pblk + uint64(lblk-e.lblk), min(uint32(e.end()-uint64(lblk)), limit), e.unwritten
	}
	n = limit
	if i < len(m.exts) {
		n = min(n, m.exts[i].lblk-lblk)
	}
	return 0, n, false
}

// set maps [lblk, lblk+n) to pblk.., written or not, replacing whatever
// mapped those blocks before (the caller has dealt with their blocks).
func (m *extentMap) set(x extent) {
	m.punch(x.lblk, uint64(x.len))
	i, _ := m.find(x.lblk)
	m.exts = append(m.exts, extent{})
	copy(m.exts[i+1:], m.exts[i:])
	m.exts[i] = x
}

// punch unmaps [lblk, lblk+n) and returns the extents (pieces) removed.
func (m *extentMap) punch(lblk uint32, n uint64) []extent {
	end := uint64(lblk) + n
	var out, removed []extent
	for _, e := range m.exts {
		if e.end() <= uint64(lblk) || uint64(e.lblk) >= end {
			out = append(out, e)
			continue
		}
		if e.lblk < lblk {
			head := e
			head.len = lblk - e.lblk
			out = append(out, head)
		}
		cs := max(uint64(e.lblk), uint64(lblk))
		ce := min(e.end(), end)
		removed = append(removed, extent{lblk: uint32(cs), len: uint32(ce - cs), pblk: e.pblk + (cs - uint64(e.lblk)), unwritten: e.unwritten})
		if e.end() > end {
			tail := e
			tail.lblk = uint32(end)
			tail.pblk = e.pblk + (end - uint64(e.lblk))
			tail.len = uint32(e.end() - end)
			out = append(out, tail)
		}
	}
	m.exts = out
	return removed
}

// normalize merges neighbours that continue each other on disk.
func (m *extentMap) normalize() {
	var out []extent
	for _, e := range m.exts {
		if k := len(out) - 1; k >= 0 {
			p := &out[k]
			limit := uint32(maxWrittenLen)
			if p.unwritten {
				limit = maxUnwrittenLen
			}
			if p.unwritten == e.unwritten && p.end() == uint64(e.lblk) && p.pblk+uint64(p.len) == e.pblk && p.len+e.len <= limit {
				p.len += e.len
				continue
			}
		}
		out = append(out, e)
	}
	m.exts = out
}

// split cuts extents longer than the format allows.
func (m *extentMap) split() {
	var out []extent
	for _, e := range m.exts {
		limit := uint32(maxWrittenLen)
		if e.unwritten {
			limit = maxUnwrittenLen
		}
		for e.len > limit {
			head := e
			head.len = limit
			out = append(out, head)
			e.lblk += limit
			e.pblk += uint64(limit)
			e.len -= limit
		}
		out = append(out, e)
	}
	m.exts = out
}

// writeExtents stores m as in's tree: in the inode if four extents fit,
// else in as few levels of full blocks as it takes. Blocks of the old
// tree are reused first; the rest are allocated near the file's data or
// freed. in's i_blocks is adjusted; the caller writes in.
func (fs *FS) writeExtents(in *inode, m *extentMap) error {
	m.normalize()
	m.split()
	// (blocksize-12)/12 entries always leave room for the 4-byte tail.
	perBlock := int((fs.blockSize - 12) / 12)
	// Count the blocks each level takes, leaves first.
	var levels []int
	for n := len(m.exts); n > 4; {
		nb := (n + perBlock - 1) / perBlock
		levels = append(levels, nb)
		n = nb
	}
	need := 0
	for _, n := range levels {
		need += n
	}
	old := m.tree
	blocks := old
	if need > len(old) {
		goal := uint64(0)
		if len(m.exts) > 0 {
			goal = m.exts[0].pblk
		}
		more, err := fs.allocBlockList(goal, need-len(old), in.num)
		if err != nil {
			return err
		}
		blocks = append(append([]uint64(nil), old...), more...)
		in.blocks += uint64(len(more)) * uint64(fs.blockSize/512)
	} else if need < len(old) {
		if err := fs.freeBlockList(old[need:]); err != nil {
			return err
		}
		in.blocks -= uint64(len(old)-need) * uint64(fs.blockSize/512)
		blocks = old[:need]
	}
	m.tree = blocks

	// Entries of the level being built: (first logical block, payload).
	type entry struct {
		lblk uint32
		body [12]byte
	}
	cur := make([]entry, len(m.exts))
	for i, e := range m.exts {
		var b [12]byte
		le.PutUint32(b[0:], e.lblk)
		n := e.len
		if e.unwritten {
			n += maxWrittenLen
		}
		le.PutUint16(b[4:], uint16(n))
		le.PutUint16(b[6:], uint16(e.pblk>>32))
		le.PutUint32(b[8:], uint32(e.pblk))
		cur[i] = entry{e.lblk, b}
	}
	seed := fs.inodeSeed(in.num, in.generation)
	next := 0
	for depth := range levels {
		var up []entry
		for i := 0; i < len(cur); i += perBlock {
			chunk := cur[i:min(i+perBlock, len(cur))]
			blk := blocks[next]
			next++
			b := fs.cache.zero(fs, blk)
			putExtentHeader(b, len(chunk), perBlock, depth)
			for j, e := range chunk {
				copy(b[12+12*j:], e.body[:])
			}
			if fs.hasCsum() {
				off := 12 + 12*perBlock
				le.PutUint32(b[off:], crc32c(seed, b[:off]))
			}
			if err := fs.cache.write(fs, blk, b); err != nil {
				return err
			}
			var ib [12]byte
			le.PutUint32(ib[0:], chunk[0].lblk)
			le.PutUint32(ib[4:], uint32(blk))
			le.PutUint16(ib[8:], uint16(blk>>32))
			up = append(up, entry{chunk[0].lblk, ib})
		}
		cur = up
	}
	root := in.block[:]
	for i := range root {
		root[i] = 0
	}
	putExtentHeader(root, len(cur), 4, len(levels))
	for j, e := range cur {
		copy(root[12+12*j:], e.body[:])
	}
	return nil
}

func putExtentHeader(b []byte, entries, max, depth int) {
	le.PutUint16(b[0:], extentMagic)
	le.PutUint16(b[2:], uint16(entries))
	le.PutUint16(b[4:], uint16(max))
	le.PutUint16(b[6:], uint16(depth))
	le.PutUint32(b[8:], 0)
}
