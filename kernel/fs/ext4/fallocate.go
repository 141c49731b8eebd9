package ext4

import (
	"errors"

	"shortbread/kernel/abi/linux"
)

// fallocate(2) modes, Linux's values (include/uapi/linux/falloc.h).
const (
	FallocKeepSize  = 0x1
	FallocPunchHole = 0x2
)

// Fallocate preallocates (mode 0 or FallocKeepSize) or punches a hole
// (FallocPunchHole|FallocKeepSize) in regular file ino over
// [off, off+length). Preallocated blocks are unwritten extents: they
// read as zeros until written. Files mapped by the old indirect map
// cannot hold either (EOPNOTSUPP), as on Linux.
func (fs *FS) Fallocate(ino uint32, mode uint32, off, length int64) error {
	fs.begin()
	defer fs.end()
	return fs.retryHeld(func() error { return fs.fallocate(ino, mode, off, length) })
}

func (fs *FS) fallocate(ino uint32, mode uint32, off, length int64) error {
	if err := fs.writable(); err != nil {
		return err
	}
	if off < 0 || length <= 0 {
		return linux.EINVAL
	}
	switch mode {
	case 0, FallocKeepSize, FallocPunchHole | FallocKeepSize:
	case FallocPunchHole:
		return linux.EINVAL
	default:
		return linux.EOPNOTSUPP
	}
	in, err := fs.iget(ino)
	if err != nil {
		return err
	}
	if in.fileType() != linux.S_IFREG {
		return linux.ENODEV
	}
	if in.flags&flagExtents == 0 {
		return linux.EOPNOTSUPP
	}
	bs := int64(fs.blockSize)
	end := off + length
	if end < off || (end+bs-1)/bs > 1<<32 {
		return linux.EFBIG
	}
	fm, err := fs.mapping(in)
	if err != nil {
		return err
	}
	if mode&FallocPunchHole != 0 {
		err = fs.punchHole(fm, off, end)
	} else {
		err = fs.preallocate(fm, off, end)
		if err == nil && mode&FallocKeepSize == 0 && uint64(end) > in.size {
			in.size = uint64(end)
		}
	}
	in.ctime = fs.now()
	if mode&FallocPunchHole != 0 {
		in.mtime = in.ctime
	}
	return errors.Join(err, fs.iput(in))
}

// preallocate maps every hole in [off, end) to new unwritten extents.
// Out of space, it keeps what it got, as Linux does; but if the extent
// tree then finds no block for itself, the blocks this call allocated go
// back (saveExtents), so that none is left marked used and mapped by
// nothing.
func (fs *FS) preallocate(fm *fileMapping, off, end int64) error {
	bs := int64(fs.blockSize)
	first, last := uint32(off/bs), uint32((end+bs-1)/bs-1)
	var err error
	for lblk := first; lblk <= last; {
		pblk, n, _, _ := fm.lookup(lblk, last-lblk+1)
		if pblk == 0 {
			var got uint32
			pblk, got, err = fs.allocData(fs.goalFor(fm, lblk), n)
			if err != nil {
				break
			}
			e := extent{lblk: lblk, len: got, pblk: pblk, unwritten: true}
			fm.em.set(e)
			fm.changes = append(fm.changes, mapChange{e: e})
			fm.in.blocks += uint64(got) * uint64(fs.blockSize/512)
			n = got
		}
		if uint64(lblk)+uint64(n) > uint64(last) {
			break
		}
		lblk += n
	}
	if len(fm.changes) == 0 {
		return err
	}
	_, serr := fs.saveExtents(fm)
	return errors.Join(err, serr)
}

// punchHole frees the whole blocks of [off, end) and zeroes the parts of
// blocks at its edges.
func (fs *FS) punchHole(fm *fileMapping, off, end int64) error {
	bs := int64(fs.blockSize)
	if size := int64(fm.in.size); end > size {
		end = size
	}
	if off >= end {
		return nil
	}
	firstWhole := (off + bs - 1) / bs
	endWhole := end / bs
	// The edges' pages too, their dirty bytes written back first: the
	// edges are zeroed on the disk below.
	fs.keepHead(fm.in, uint64(off))
	fs.keepHead(fm.in, uint64(end))
	fs.dropPages(fm.in, off, end)
	if endWhole > firstWhole {
		fs.forgetBlocks(fm.in, uint64(firstWhole), uint64(endWhole))
	}
	zero := func(from, to int64) error {
		if from >= to {
			return nil
		}
		pblk, _, unwritten, err := fm.lookup(uint32(from/bs), 1)
		if err != nil || pblk == 0 || unwritten {
			return err
		}
		z := make([]byte, to-from)
		_, err = fs.dev.WriteAt(z, int64(pblk)*bs+from%bs)
		if err != nil {
			return errors.Join(linux.EIO, err)
		}
		return nil
	}
	if firstWhole > endWhole {
		// Inside one block.
		return zero(off, end)
	}
	if err := zero(off, firstWhole*bs); err != nil {
		return err
	}
	if err := zero(endWhole*bs, end); err != nil {
		return err
	}
	if endWhole > firstWhole {
		removed := fm.em.punch(uint32(firstWhole), uint64(endWhole-firstWhole))
		if len(removed) > 0 {
			return fs.freeExtents(fm, removed)
		}
	}
	return nil
}
