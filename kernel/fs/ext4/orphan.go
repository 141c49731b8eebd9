package ext4

// The life of an inode past its last name: an open file holds it (Hold,
// Release), the orphan list keeps a crash from leaking it, and evict
// frees it.

import (
	"errors"

	"shortbread/kernel/abi/linux"
)

// settle writes an inode that just lost a link: freed if that was its
// last and no open file holds it; put on the orphan list if one does, so
// that a crash before the last close still frees it at the next mount.
func (fs *FS) settle(in *inode) error {
	if in.links > 0 {
		return fs.iput(in)
	}
	// Decided under heldMu, with the mark a Release looks for: either
	// the last Release came first and the inode goes now, or it sees
	// the mark and waits for FS.mu, by when the inode is on the list.
	fs.heldMu.Lock()
	held := fs.held[in.num] > 0
	if held {
		fs.orphans = true
	}
	fs.heldMu.Unlock()
	if !held {
		return fs.evict(in)
	}
	// The orphan list threads through i_dtime from s_last_orphan; its
	// head, in the superblock's bytes, is sbMu's (handles change it:
	// handle.go).
	fs.sbMu.Lock()
	in.dtime = le.Uint32(fs.sb.raw[0xE8:])
	le.PutUint32(fs.sb.raw[0xE8:], in.num)
	fs.sbMu.Unlock()
	err := fs.iput(in)
	fs.sbMu.Lock()
	defer fs.sbMu.Unlock()
	return errors.Join(err, fs.writeSuperLocked())
}

// noteOrphans clears the mark of a possibly non-empty orphan list when
// the list is empty, so that the last Release of an inode goes without
// FS.mu again. Preconditions: fs.mu held.
func (fs *FS) noteOrphans() {
	fs.heldMu.Lock()
	fs.orphans = le.Uint32(fs.sb.raw[0xE8:]) != 0
	fs.heldMu.Unlock()
}

// unorphan takes ino off the orphan list, reporting whether it was on it.
func (fs *FS) unorphan(ino uint32) (bool, error) {
	prev := (*inode)(nil)
	cur := le.Uint32(fs.sb.raw[0xE8:])
	for steps := uint32(0); cur != 0 && steps < fs.sb.inodesCount; steps++ {
		in, err := fs.iget(cur)
		if err != nil {
			return false, err
		}
		if cur == ino {
			if prev == nil {
				le.PutUint32(fs.sb.raw[0xE8:], in.dtime)
				return true, fs.writeSuperLocked()
			}
			prev.dtime = in.dtime
			return true, fs.iput(prev)
		}
		prev, cur = in, in.dtime
	}
	return false, nil
}

// orphansHeld reports whether an inode on the orphan list is held open.
func (fs *FS) orphansHeld() (bool, error) {
	cur := le.Uint32(fs.sb.raw[0xE8:])
	fs.heldMu.Lock()
	defer fs.heldMu.Unlock()
	for steps := uint32(0); cur != 0 && steps < fs.sb.inodesCount; steps++ {
		if fs.held[cur] > 0 {
			return true, nil
		}
		in, err := fs.iget(cur)
		if err != nil {
			return false, err
		}
		cur = in.dtime
	}
	return false, nil
}

// processOrphans frees the inodes a crash left on the orphan list (their
// last name gone while a file was open), as Linux does at mount.
func (fs *FS) processOrphans() error {
	for steps := uint32(0); steps < fs.sb.inodesCount; steps++ {
		ino := le.Uint32(fs.sb.raw[0xE8:])
		if ino == 0 {
			return nil
		}
		in, err := fs.iget(ino)
		if err != nil {
			return err
		}
		if in.dtime > fs.sb.inodesCount {
			return corrupt("orphan inode %d links to %d", ino, in.dtime)
		}
		le.PutUint32(fs.sb.raw[0xE8:], in.dtime)
		if err := fs.writeSuperLocked(); err != nil {
			return err
		}
		if in.links == 0 {
			if err := fs.evict(in); err != nil {
				return err
			}
		} else {
			in.dtime = 0
			if err := fs.iput(in); err != nil {
				return err
			}
		}
	}
	return corrupt("the orphan list loops")
}

// Hold keeps inode ino from being freed when its last name goes, while a
// file is open on it; Release lets it go, freeing it if it has no names.
// Neither takes FS.mu unless the last Release of an inode finds the
// orphan list possibly not empty (every open and close of a file comes
// here).
func (fs *FS) Hold(ino uint32) {
	fs.heldMu.Lock()
	defer fs.heldMu.Unlock()
	if fs.held == nil {
		fs.held = make(map[uint32]int)
	}
	fs.held[ino]++
}

// Release undoes one Hold.
func (fs *FS) Release(ino uint32) error {
	fs.heldMu.Lock()
	if n := fs.held[ino]; n > 1 || n == 1 && !fs.orphans {
		// Not the last hold, or the last of an inode that cannot be
		// on the orphan list: settle marks orphans under heldMu
		// before it puts one on the list.
		if n > 1 {
			fs.held[ino]--
		} else {
			delete(fs.held, ino)
		}
		fs.heldMu.Unlock()
		return nil
	}
	fs.heldMu.Unlock()
	fs.begin()
	defer fs.end()
	fs.heldMu.Lock()
	last := fs.held[ino] <= 1
	if last {
		delete(fs.held, ino)
	} else {
		fs.held[ino]--
	}
	fs.heldMu.Unlock()
	if !last || fs.ro {
		return nil
	}
	was, err := fs.unorphan(ino)
	if err == nil {
		fs.noteOrphans()
	}
	if err != nil || !was {
		return err
	}
	in, err := fs.iget(ino)
	if err != nil {
		return err
	}
	if in.links == 0 {
		return fs.evict(in)
	}
	return fs.iput(in)
}

// evict frees an inode with no links: its data, its xattr block, and the
// inode itself (marked deleted, as e2fsck expects).
func (fs *FS) evict(in *inode) error {
	var errs []error
	t := in.fileType()
	if t == linux.S_IFREG || t == linux.S_IFDIR || t == linux.S_IFLNK && !fs.isFastSymlink(in) {
		errs = append(errs, fs.truncateData(in, 0))
	}
	if in.fileACL != 0 {
		errs = append(errs, fs.dropXattrBlock(in))
	}
	// e2fsck reads a dtime of 0 as "not deleted", and one below the
	// inode count as the next inode of an orphan list: a clock set near
	// the epoch (root may) must make neither of a freed inode. (Linux
	// writes the clock as it is, and e2fsck then finds "deleted inode
	// has zero dtime".)
	in.dtime = max(uint32(fs.clock().Unix()), fs.sb.inodesCount)
	in.size = 0
	fs.closePages(in.num)
	errs = append(errs, fs.iput(in), fs.freeInode(in.num, t == linux.S_IFDIR))
	return errors.Join(errs...)
}

// dropXattrBlock releases in's extended-attribute block: one reference
// fewer, freed with the last.
func (fs *FS) dropXattrBlock(in *inode) error {
	blk := in.fileACL
	if err := fs.checkDataBlock(in, blk); err != nil {
		return err
	}
	b, err := fs.cache.get(fs, blk)
	if err != nil {
		return err
	}
	if le.Uint32(b) != 0xEA020000 {
		return corrupt("inode %d xattr block %d magic %#x", in.num, blk, le.Uint32(b))
	}
	in.fileACL = 0
	in.blocks -= min(in.blocks, uint64(fs.blockSize/512))
	refs := le.Uint32(b[4:])
	if refs <= 1 {
		return fs.freeRun(blk, 1)
	}
	le.PutUint32(b[4:], refs-1)
	if fs.hasCsum() {
		le.PutUint32(b[0x10:], 0)
		var nb [8]byte
		le.PutUint64(nb[:], blk)
		le.PutUint32(b[0x10:], crc32c(crc32c(fs.csumSeed, nb[:]), b))
	}
	return fs.cache.write(fs, blk, b)
}
