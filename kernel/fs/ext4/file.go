package ext4

import (
	"errors"
	"fmt"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/pagecache"
)

// File data. Writes go straight to the device, a block at a time for
// partial blocks and a run at a time for whole ones; reads too, or
// through the page cache for a regular file when the mount has one
// (pages.go); holes and unwritten extents read as zeros.

// maxFileBlocks bounds a file's logical blocks: 2^32 with extents; with
// the indirect map, what its three levels reach.
func (fs *FS) maxFileBlocks(in *inode) uint64 {
	if in.flags&flagExtents != 0 {
		return 1 << 32
	}
	per := uint64(fs.blockSize / 4)
	return directBlocks + per + per*per + per*per*per
}

// fileMapping is a file's block map, loaded once per operation.
type fileMapping struct {
	fs *FS
	in *inode
	em *extentMap // nil for the indirect map
	// changes are the extents mapped since the map was last stored
	// (saveExtents), for it to undo if the tree finds no room.
	changes []mapChange
}

// mapChange is an extent an operation mapped: new blocks for a hole, or
// an unwritten extent made written (converted).
type mapChange struct {
	e         extent
	converted bool
}

// saveExtents stores fm's extent map as the file's tree. If the tree
// finds no block for itself (ENOSPC, or errExclusive in a handle), the
// changes mapped since the last save are undone first: blocks
// allocated for holes are freed, unwritten extents made written are
// unwritten again, and the page cache forgets their blocks. So nothing
// on the disk is allocated for, or maps, what the tree does not hold,
// and the operation ends, or runs again alone, as if it had not mapped
// them; undone is the least logical block it undid (1<<32 if none).
// The tree on the disk is as it was: writeExtents allocates before it
// writes.
func (fs *FS) saveExtents(fm *fileMapping) (undone uint64, err error) {
	changes := fm.changes
	fm.changes = nil
	undone = 1 << 32
	if fm.em == nil {
		return undone, nil
	}
	err = fs.writeExtents(fm.in, fm.em)
	if err == nil || !errors.Is(err, errNoSpace) && !errors.Is(err, errExclusive) {
		return undone, err
	}
	errs := []error{err}
	per := uint64(fs.blockSize / 512)
	for i := len(changes) - 1; i >= 0; i-- {
		e := changes[i].e
		undone = min(undone, uint64(e.lblk))
		fs.forgetBlocks(fm.in, uint64(e.lblk), uint64(e.lblk)+uint64(e.len))
		if changes[i].converted {
			e.unwritten = true
			fm.em.set(e)
			continue
		}
		fm.em.punch(e.lblk, uint64(e.len))
		if err := fs.freeRun(e.pblk, e.len); err != nil {
			errs = append(errs, err)
			continue
		}
		fm.in.blocks -= min(fm.in.blocks, uint64(e.len)*per)
	}
	return undone, errors.Join(errs...)
}

func (fs *FS) mapping(in *inode) (*fileMapping, error) {
	fm := &fileMapping{fs: fs, in: in}
	if in.flags&flagExtents != 0 {
		em, err := fs.readExtents(in)
		if err != nil {
			return nil, err
		}
		fm.em = em
	}
	return fm, nil
}

// lookup maps lblk: physical block (0: hole), run length, unwritten.
func (fm *fileMapping) lookup(lblk, limit uint32) (uint64, uint32, bool, error) {
	if fm.em != nil {
		p, n, u := fm.em.lookup(lblk, limit)
		return p, n, u, nil
	}
	p, n, err := fm.fs.blockmapLookup(fm.in, lblk, limit)
	return p, n, false, err
}

// clipRead cuts p to the bytes of in from off: empty at or past the end.
func clipRead(in *inode, p []byte, off int64) ([]byte, error) {
	if off < 0 {
		return nil, linux.EINVAL
	}
	if uint64(off) >= in.size {
		return nil, nil
	}
	if rem := in.size - uint64(off); uint64(len(p)) > rem {
		p = p[:rem]
	}
	return p, nil
}

// readData reads from in at off into p, stopping at the file's size.
func (fs *FS) readData(in *inode, p []byte, off int64) (int, error) {
	p, err := clipRead(in, p, off)
	if err != nil || len(p) == 0 {
		return 0, err
	}
	if f := fs.pageFile(in); f != nil {
		return fs.readCached(f, in, p, off)
	}
	return fs.readBlocks(in, p, off)
}

// readBlocks reads from in at off into p from the disk, stopping at the
// file's size.
func (fs *FS) readBlocks(in *inode, p []byte, off int64) (int, error) {
	p, err := clipRead(in, p, off)
	if err != nil || len(p) == 0 {
		return 0, err
	}
	fm, err := fs.mapping(in)
	if err != nil {
		return 0, err
	}
	bs := int64(fs.blockSize)
	done := 0
	for done < len(p) {
		pos := off + int64(done)
		lblk := uint32(pos / bs)
		inBlk := pos % bs
		want := uint32((inBlk + int64(len(p)-done) + bs - 1) / bs)
		pblk, n, unwritten, err := fm.lookup(lblk, want)
		if err != nil {
			return done, err
		}
		chunk := min(int64(n)*bs-inBlk, int64(len(p)-done))
		dst := p[done : done+int(chunk)]
		if pblk == 0 || unwritten {
			clear(dst)
		} else if _, err := fs.dev.ReadAt(dst, int64(pblk)*bs+inBlk); err != nil {
			return done, fmt.Errorf("ext4: read inode %d: %w", in.num, errors.Join(linux.EIO, err))
		}
		done += int(chunk)
	}
	return done, nil
}

// writeData writes p at off, allocating blocks for holes and turning the
// unwritten extents it covers into written ones; the size grows if the
// write ends past it. The caller writes in back.
func (fs *FS) writeData(in *inode, p []byte, off int64) (int, error) {
	if fs.ro {
		return 0, linux.EROFS
	}
	if off < 0 {
		return 0, linux.EINVAL
	}
	bs := int64(fs.blockSize)
	end := uint64(off) + uint64(len(p))
	if (end+uint64(bs)-1)/uint64(bs) > fs.maxFileBlocks(in) {
		return 0, linux.EFBIG
	}
	if len(p) == 0 {
		return 0, nil
	}
	fm, err := fs.mapping(in)
	if err != nil {
		return 0, err
	}
	var done int
	var werr error
	if fs.buffered(in) {
		done, werr = fs.writeCached(in, fm, p, off)
	} else {
		done, werr = fs.writeDisk(in, fm, p, off)
		done, werr = fs.saveWritten(fm, off, done, werr)
	}
	size := in.size
	if done > 0 {
		// Not a write that wrote nothing: it leaves the size as it
		// was, however far past the end it asked to write.
		size = max(size, uint64(off)+uint64(done))
	}
	if done < len(p) && end > (size+uint64(bs)-1)/uint64(bs)*uint64(bs) {
		// A failed or short write (no memory for its pages, a device
		// error) may have allocated blocks for bytes it never wrote,
		// past what is now the end: they go again, as every block past
		// the end does (Linux's ext4_truncate_failed_write), so the
		// file maps no block past its size and none is lost.
		keep := (size + uint64(bs) - 1) / uint64(bs)
		fs.forgetBlocks(in, keep, 1<<32)
		if err := fs.freeFrom(fm, keep); err != nil {
			werr = errors.Join(werr, err)
		}
	}
	in.size = size
	return done, werr
}

// saveWritten stores the extent map after a write of done bytes at off
// mapped blocks (if it did), and cuts the write short before the first
// block saveExtents had to undo.
func (fs *FS) saveWritten(fm *fileMapping, off int64, done int, werr error) (int, error) {
	if len(fm.changes) == 0 {
		return done, werr
	}
	undone, err := fs.saveExtents(fm)
	if err == nil {
		return done, werr
	}
	if keep := int64(undone)*int64(fs.blockSize) - off; keep < int64(done) {
		done = int(max(keep, 0))
	}
	if werr == nil {
		return done, err
	}
	return done, errors.Join(werr, err)
}

// writeDisk writes p at off to the disk, block by block; it returns the
// bytes written. The caller stores the block map.
func (fs *FS) writeDisk(in *inode, fm *fileMapping, p []byte, off int64) (int, error) {
	bs := int64(fs.blockSize)
	done := 0
	var werr error
	for done < len(p) {
		pos := off + int64(done)
		inBlk := pos % bs
		pblk, n, fresh, err := fs.mapForWrite(fm, pos, len(p)-done)
		if err != nil {
			werr = err
			break
		}
		chunk := min(int64(n)*bs-inBlk, int64(len(p)-done))
		if err := fs.writeRun(pblk, inBlk, p[done:done+int(chunk)], fresh); err != nil {
			werr = err
			break
		}
		done += int(chunk)
	}
	// Bytes the disk has now and the cache may hold older: what was
	// written, and a failed write's whole range.
	fs.dropPages(in, off, off+int64(len(p)))
	return done, werr
}

// mapForWrite maps the blocks a write of size bytes at pos starts in: a
// run of n blocks from pblk, allocated for a hole or turned from unwritten
// to written, in which case fresh is set (their old contents must read as
// zeros, and the block map changed).
func (fs *FS) mapForWrite(fm *fileMapping, pos int64, size int) (pblk uint64, n uint32, fresh bool, err error) {
	bs := int64(fs.blockSize)
	lblk := uint32(pos / bs)
	want := uint32((pos%bs + int64(size) + bs - 1) / bs)
	pblk, n, unwritten, err := fm.lookup(lblk, want)
	switch {
	case err != nil:
		return 0, 0, false, err
	case pblk == 0:
		pblk, n, err = fs.mapNew(fm, lblk, n)
		return pblk, n, err == nil, err
	case unwritten:
		e := extent{lblk: lblk, len: n, pblk: pblk}
		fm.em.set(e)
		fm.changes = append(fm.changes, mapChange{e: e, converted: true})
		return pblk, n, true, nil
	}
	return pblk, n, false, nil
}

// mapNew allocates up to n blocks for the hole at lblk and maps them.
func (fs *FS) mapNew(fm *fileMapping, lblk, n uint32) (uint64, uint32, error) {
	in := fm.in
	goal := fs.goalFor(fm, lblk)
	if fm.em == nil {
		n = 1
	}
	pblk, got, err := fs.allocData(goal, n)
	if err != nil {
		return 0, 0, err
	}
	if fm.em != nil {
		e := extent{lblk: lblk, len: got, pblk: pblk}
		fm.em.set(e)
		fm.changes = append(fm.changes, mapChange{e: e})
	} else if err := fs.blockmapSet(in, lblk, pblk); err != nil {
		fs.freeRun(pblk, got)
		return 0, 0, err
	}
	in.blocks += uint64(got) * uint64(fs.blockSize/512)
	return pblk, got, nil
}

// goalFor picks where to look for a new block of the file: right after
// the block mapped before lblk, else in the inode's group.
func (fs *FS) goalFor(fm *fileMapping, lblk uint32) uint64 {
	if fm.em != nil {
		if i, _ := fm.em.find(lblk); i > 0 {
			e := fm.em.exts[i-1]
			return e.pblk + uint64(lblk-e.lblk)
		}
	} else if lblk > 0 {
		if p, _, err := fs.blockmapLookup(fm.in, lblk-1, 1); err == nil && p != 0 {
			return p + 1
		}
	}
	g := (fm.in.num - 1) / fs.sb.inodesPerGroup
	return fs.groupFirstBlock(g)
}

// writeRun writes data at byte inBlk of the run of blocks from pblk.
// Partial blocks are read, changed and written back, or, when fresh,
// filled out with zeros.
func (fs *FS) writeRun(pblk uint64, inBlk int64, data []byte, fresh bool) error {
	bs := int64(fs.blockSize)
	base := int64(pblk) * bs
	pos := inBlk
	for len(data) > 0 {
		blkOff := pos % bs
		if blkOff == 0 && int64(len(data)) >= bs {
			whole := int64(len(data)) / bs * bs
			if _, err := fs.dev.WriteAt(data[:whole], base+pos); err != nil {
				return errors.Join(linux.EIO, err)
			}
			pos += whole
			data = data[whole:]
			continue
		}
		buf := make([]byte, bs)
		blkStart := base + pos - blkOff
		if !fresh {
			if _, err := fs.dev.ReadAt(buf, blkStart); err != nil {
				return errors.Join(linux.EIO, err)
			}
		}
		n := copy(buf[blkOff:], data)
		if _, err := fs.dev.WriteAt(buf, blkStart); err != nil {
			return errors.Join(linux.EIO, err)
		}
		pos += int64(n)
		data = data[n:]
	}
	return nil
}

// truncateData sets in's size, freeing the blocks past a size no larger
// than the old one and zeroing the rest of its last block, so that
// growing the file again shows zeros. Blocks past the end that
// fallocate(FALLOC_FL_KEEP_SIZE) left go even when the size stays, as
// on Linux (ext4_setattr truncates at an unchanged size too): evict
// truncates to 0, and a file of size 0 may hold blocks. The caller
// writes in back.
func (fs *FS) truncateData(in *inode, size uint64) error {
	if fs.ro {
		return linux.EROFS
	}
	bs := uint64(fs.blockSize)
	if (size+bs-1)/bs > fs.maxFileBlocks(in) {
		return linux.EFBIG
	}
	if size <= in.size {
		shrink := size < in.size
		if shrink {
			// The page the new end cuts through stays, its tail
			// zeroed as its block's is below (its dirty bytes
			// before the end written back first): a mapping may
			// hold it, and must go on sharing it with read(2) and
			// write(2).
			fs.keepHead(in, size)
			fs.zeroPageTail(in, size)
			fs.dropPages(in, int64(size+pagecache.PageSize-1)/pagecache.PageSize*pagecache.PageSize, int64(in.size))
		}
		keep := (size + bs - 1) / bs
		fs.forgetBlocks(in, keep, 1<<32)
		fm, err := fs.mapping(in)
		if err != nil {
			return err
		}
		if err := fs.freeFrom(fm, keep); err != nil {
			return err
		}
		if tail := size % bs; shrink && tail != 0 {
			pblk, _, unwritten, err := fm.lookup(uint32(size/bs), 1)
			if err != nil {
				return err
			}
			if pblk != 0 && !unwritten {
				zero := make([]byte, bs-tail)
				if _, err := fs.dev.WriteAt(zero, int64(pblk*bs+tail)); err != nil {
					return errors.Join(linux.EIO, err)
				}
			}
		}
	}
	in.size = size
	fs.resizePages(in)
	return nil
}

// freeFrom frees every block of the file from logical block keep on.
func (fs *FS) freeFrom(fm *fileMapping, keep uint64) error {
	in := fm.in
	if fm.em == nil {
		if keep >= fs.maxFileBlocks(in) {
			return nil
		}
		return fs.blockmapTruncate(in, uint32(keep))
	}
	if keep >= 1<<32 {
		return nil
	}
	removed := fm.em.punch(uint32(keep), 1<<32-keep)
	if len(removed) == 0 {
		return nil
	}
	return fs.freeExtents(fm, removed)
}

// freeExtents writes fm's map, from which removed were just taken, and
// then frees their blocks: the tree first, so that a tree with no room
// for itself (a hole punched in the middle of an extent makes two of
// it) fails the operation with the blocks still its own, the map as it
// was, and no block freed that the disk still maps.
func (fs *FS) freeExtents(fm *fileMapping, removed []extent) error {
	in := fm.in
	if err := fs.writeExtents(in, fm.em); err != nil {
		for _, e := range removed {
			fm.em.set(e)
		}
		return err
	}
	var errs []error
	for _, e := range removed {
		if err := fs.freeRun(e.pblk, e.len); err != nil {
			errs = append(errs, err)
			continue
		}
		in.blocks -= min(in.blocks, uint64(e.len)*uint64(fs.blockSize/512))
	}
	return errors.Join(errs...)
}
