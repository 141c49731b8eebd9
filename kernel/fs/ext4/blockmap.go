package ext4

// The indirect block map of ext2 and ext3 files (and ext4 files without
// the extents flag): i_block holds 12 direct block numbers, then one
// single, one double and one triple indirect block; each indirect block
// holds blockSize/4 block numbers, 0 meaning a hole.

const (
	directBlocks = 12
	indIndex     = 12
)

// blockPath returns, for logical block lblk, which i_block slot starts
// its path and the index at each indirect level below it.
func (fs *FS) blockPath(lblk uint32) (slot int, idx []uint32, ok bool) {
	per := uint64(fs.blockSize / 4)
	l := uint64(lblk)
	if l < directBlocks {
		return int(l), nil, true
	}
	l -= directBlocks
	if l < per {
		return indIndex, []uint32{uint32(l)}, true
	}
	l -= per
	if l < per*per {
		return indIndex + 1, []uint32{uint32(l / per), uint32(l % per)}, true
	}
	l -= per * per
	if l < per*per*per {
		return indIndex + 2, []uint32{uint32(l / (per * per)), uint32(l / per % per), uint32(l % per)}, true
	}
	return 0, nil, false
}

func (fs *FS) checkDataBlock(in *inode, b uint64) error {
	if b != 0 && (b < uint64(fs.sb.firstDataBlock) || b >= fs.sb.blocksCount) {
		return corrupt("inode %d maps block %d, outside the file system", in.num, b)
	}
	return nil
}

// blockmapLookup maps lblk through the indirect map. It returns the
// physical block (0 for a hole) and how many blocks from lblk continue
// the same way within one indirect block (contiguous, or all holes), at
// most limit.
func (fs *FS) blockmapLookup(in *inode, lblk, limit uint32) (uint64, uint32, error) {
	slot, idx, ok := fs.blockPath(lblk)
	if !ok {
		return 0, 1, nil
	}
	entries := in.block[:]
	i := uint32(slot)
	for _, next := range idx {
		b := uint64(le.Uint32(entries[4*i:]))
		if err := fs.checkDataBlock(in, b); err != nil {
			return 0, 0, err
		}
		if b == 0 {
			return 0, 1, nil
		}
		blk, err := fs.cache.get(fs, b)
		if err != nil {
			return 0, 0, err
		}
		entries, i = blk, next
	}
	p := uint64(le.Uint32(entries[4*i:]))
	if err := fs.checkDataBlock(in, p); err != nil {
		return 0, 0, err
	}
	n := uint32(1)
	end := uint32(len(entries) / 4)
	if slot < directBlocks {
		end = directBlocks
	}
	for n < limit && i+n < end {
		q := uint64(le.Uint32(entries[4*(i+n):]))
		if (p == 0) != (q == 0) || p != 0 && q != p+uint64(n) {
			break
		}
		n++
	}
	return p, n, nil
}

// blockmapSet maps lblk to p, allocating the indirect blocks on the way;
// the caller writes in (whose i_blocks grows by the indirect blocks).
func (fs *FS) blockmapSet(in *inode, lblk uint32, p uint64) error {
	slot, idx, ok := fs.blockPath(lblk)
	if !ok {
		return errFileTooBig
	}
	if p >= 1<<32 {
		return corrupt("block %d does not fit an indirect map", p)
	}
	entries := in.block[:]
	var entriesBlk uint64 // 0: the inode
	i := uint32(slot)
	for _, next := range idx {
		b := uint64(le.Uint32(entries[4*i:]))
		var blk []byte
		if b == 0 {
			nb, err := fs.allocBlockList(p, 1, in.num)
			if err != nil {
				return err
			}
			b = nb[0]
			blk = fs.cache.zero(fs, b)
			if err := fs.cache.write(fs, b, blk); err != nil {
				return err
			}
			in.blocks += uint64(fs.blockSize / 512)
			le.PutUint32(entries[4*i:], uint32(b))
			if entriesBlk != 0 {
				if err := fs.cache.write(fs, entriesBlk, entries); err != nil {
					return err
				}
			}
		} else {
			var err error
			if blk, err = fs.cache.get(fs, b); err != nil {
				return err
			}
		}
		entries, entriesBlk, i = blk, b, next
	}
	le.PutUint32(entries[4*i:], uint32(p))
	if entriesBlk != 0 {
		return fs.cache.write(fs, entriesBlk, entries)
	}
	return nil
}

// blockmapTruncate frees every data block from logical block from on, and
// the indirect blocks left empty; i_blocks shrinks to match.
func (fs *FS) blockmapTruncate(in *inode, from uint32) error {
	per := uint64(fs.blockSize / 4)
	var free []uint64
	for s := uint64(from); s < directBlocks; s++ {
		if b := uint64(le.Uint32(in.block[4*s:])); b != 0 {
			free = append(free, b)
			le.PutUint32(in.block[4*s:], 0)
		}
	}
	start := uint64(directBlocks)
	span := per
	// A damaged map could name one indirect block many times, making the
	// walk fan out without end: each may be met once.
	seen := map[uint64]bool{}
	for level := 1; level <= 3; level++ {
		slot := indIndex + level - 1
		root := uint64(le.Uint32(in.block[4*slot:]))
		if root != 0 && uint64(from) < start+span {
			keepFrom := uint64(0)
			if uint64(from) > start {
				keepFrom = uint64(from) - start
			}
			empty, err := fs.truncIndirect(in, root, level, keepFrom, span, &free, seen)
			if err != nil {
				return err
			}
			if empty {
				free = append(free, root)
				le.PutUint32(in.block[4*slot:], 0)
			}
		}
		start += span
		span *= per
	}
	for _, b := range free {
		if err := fs.checkDataBlock(in, b); err != nil {
			return err
		}
	}
	if err := fs.freeBlockList(free); err != nil {
		return err
	}
	in.blocks -= min(in.blocks, uint64(len(free))*uint64(fs.blockSize/512))
	return nil
}

// truncIndirect clears the entries of indirect block b (covering span
// logical blocks at the given level) from offset keepFrom on, collecting
// the freed blocks; it reports whether b holds nothing more.
func (fs *FS) truncIndirect(in *inode, b uint64, level int, keepFrom, span uint64, free *[]uint64, seen map[uint64]bool) (bool, error) {
	if err := fs.checkDataBlock(in, b); err != nil {
		return false, err
	}
	if seen[b] || uint64(len(*free)) > fs.sb.blocksCount {
		return false, corrupt("inode %d: indirect block %d used twice", in.num, b)
	}
	seen[b] = true
	blk, err := fs.cache.get(fs, b)
	if err != nil {
		return false, err
	}
	per := uint64(fs.blockSize / 4)
	child := span / per
	changed, empty := false, true
	for i := uint64(0); i < per; i++ {
		e := uint64(le.Uint32(blk[4*i:]))
		if e == 0 {
			continue
		}
		lo := i * child
		if lo+child <= keepFrom {
			empty = false
			continue
		}
		if level == 1 {
			*free = append(*free, e)
			le.PutUint32(blk[4*i:], 0)
			changed = true
			continue
		}
		sub := uint64(0)
		if keepFrom > lo {
			sub = keepFrom - lo
		}
		childEmpty, err := fs.truncIndirect(in, e, level-1, sub, child, free, seen)
		if err != nil {
			return false, err
		}
		if childEmpty {
			*free = append(*free, e)
			le.PutUint32(blk[4*i:], 0)
			changed = true
		} else {
			empty = false
		}
	}
	if changed && !empty {
		if err := fs.cache.write(fs, b, blk); err != nil {
			return false, err
		}
	}
	return empty, nil
}
