package ext4

// Mapped files: a mapping (package mm, through ext4vfs's pager) maps a
// regular file's pages in the page cache in place, holding each while
// it does (pagecache's map.go). A store through a shared mapping first
// takes a writable hold, which does here what a write(2) of the page
// would do before copying into it (Linux's page_mkwrite): the page's
// blocks are allocated (or unwritten extents made written) under the
// file system's lock, so that ENOSPC is the faulting store's SIGBUS and
// never a lost write-back; they are noted for write-back; the file
// joins the ordered set (its pages go to the disk before the commit
// that makes the blocks reachable) and the unsynced one; and the times
// change. While writable holds last the page stays dirty (the cache
// cannot see stores through a page table), and the file is kept in
// mapped, so every Sync writes it back: fsync, fdatasync, syncfs, sync
// and msync(MS_SYNC) find what the mapping stored. A truncate keeps the
// page its new end cuts through (its tail zeroed), so a mapping of it
// still shares it with read(2) and write(2); pages wholly cut off leave
// the file, their frames kept until the mapping gives them back.
//
// Before the flusher or a Sync writes a file's pages back, the cache
// asks (fileBacking.CleanPages, through SetMkclean's function) the
// mappings to write-protect the pages they hold writably and turn those
// holds into read holds (DowngradePage): the page is then clean once
// written, until the next store faults and takes a writable hold anew.

import (
	"errors"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/pagecache"
)

// Mappable reports whether regular file ino's pages can be mapped: the
// mount has a page cache and blocks no larger than a page.
func (fs *FS) Mappable(ino uint32) bool {
	defer fs.rbeginInode(ino)()
	in, err := fs.iget(ino)
	return err == nil && fs.buffered(in)
}

// HoldPage returns the frame of file ino's page idx in the page cache,
// held for a mapping (pagecache.File.HoldPage), read in first if need
// be; write takes a writable hold, for a store through a shared
// mapping, allocating the page's blocks first. Past the end it fails
// with pagecache.ErrRange. A read hold of a file whose pages are open
// and sized holds FS.mu only for reading (holdShared): page faults on
// mapped programs and files from several CPUs go side by side.
func (fs *FS) HoldPage(ino uint32, idx uint64, write bool) (uintptr, error) {
	if !write {
		if pa, ok, err := fs.holdShared(ino, idx); ok {
			return pa, err
		}
	}
	fs.begin()
	defer fs.end()
	var pa uintptr
	err := fs.retryHeld(func() error {
		var err error
		pa, err = fs.holdPage(ino, idx, write)
		return err
	})
	return pa, err
}

// holdShared is HoldPage for a read hold, as readShared is ReadAt:
// holding FS.mu and the inode's lock for reading, where the file's pages
// are open and of the inode's size (the page cache fills a missing page
// through fileBacking, which only reads the file's map). ok false: they
// are not, and HoldPage takes FS.mu for writing.
func (fs *FS) holdShared(ino uint32, idx uint64) (pa uintptr, ok bool, err error) {
	fs.rbegin()
	defer fs.rend()
	l := fs.ilock(ino)
	fs.rlockInode(l)
	defer l.RUnlock()
	f, in, err := fs.sizedPages(ino)
	if f == nil {
		return 0, err != nil, err
	}
	if idx >= (in.size+pagecache.PageSize-1)/pagecache.PageSize {
		return 0, true, pagecache.ErrRange
	}
	pa, err = f.HoldPage(idx, false)
	return pa, true, err
}

func (fs *FS) holdPage(ino uint32, idx uint64, write bool) (uintptr, error) {
	in, err := fs.iget(ino)
	if err != nil {
		return 0, err
	}
	if !fs.buffered(in) {
		return 0, linux.ENODEV
	}
	if idx >= (in.size+pagecache.PageSize-1)/pagecache.PageSize {
		return 0, pagecache.ErrRange
	}
	f := fs.pageFile(in)
	f.Resize(int64(in.size)) // as a read does: writes grow the inode first
	if write {
		if err := fs.writable(); err != nil {
			return 0, err
		}
		if err := fs.mapPageBlocks(in, idx); err != nil {
			return 0, err
		}
	}
	pa, err := f.HoldPage(idx, write)
	if err != nil {
		return 0, err
	}
	if write {
		if fs.mapped == nil {
			fs.mapped = make(map[uint32]int)
		}
		fs.mapped[ino]++
		in.mtime = fs.now()
		in.ctime = in.mtime
		if err := fs.iput(in); err != nil {
			fs.mapped[ino]--
			f.PutPage(idx, pa, true)
			return 0, err
		}
	}
	return pa, nil
}

// PutPage gives back a hold HoldPage took on frame pa.
func (fs *FS) PutPage(ino uint32, idx uint64, pa uintptr, write bool) {
	if !write {
		// Nothing of the file system's changes: its pages' file is
		// enough, looked up as readShared does.
		fs.rbegin()
		f := fs.fileOf(ino)
		fs.rend()
		if f != nil {
			f.PutPage(idx, pa, false)
		} else {
			fs.pages.PutDetached(pa) // the file's pages went (unmount)
		}
		return
	}
	fs.mu.Lock()
	f := fs.files[ino]
	if write && fs.mapped[ino] > 0 {
		if fs.mapped[ino]--; fs.mapped[ino] == 0 {
			delete(fs.mapped, ino)
		}
		// The page stays dirty for one more write-back: the next Sync
		// must find the file.
		if f != nil {
			fs.unsynced[ino] = true
		}
	}
	fs.mu.Unlock()
	if f != nil {
		f.PutPage(idx, pa, write)
	} else {
		fs.pages.PutDetached(pa) // the file's pages went (unmount)
	}
}

// SetMkclean sets the function that write-protects file ino's pages
// idxs in its mappings (the VFS layer's, which knows the mappings),
// called before a write-back without the file system's locks.
func (fs *FS) SetMkclean(fn func(ino uint32, idxs []uint64)) { fs.mkclean = fn }

// CleanPages implements pagecache.Cleaner.
func (b fileBacking) CleanPages(idxs []uint64) {
	if b.fs.mkclean != nil {
		b.fs.mkclean(b.ino, idxs)
	}
}

// DowngradePage turns a writable hold HoldPage took on frame pa into a
// read hold, once the mapping's entries for the page are write-protected.
func (fs *FS) DowngradePage(ino uint32, idx uint64, pa uintptr) {
	fs.mu.Lock()
	if fs.mapped[ino] > 0 {
		if fs.mapped[ino]--; fs.mapped[ino] == 0 {
			delete(fs.mapped, ino)
		}
	}
	fs.mu.Unlock()
	if f := fs.fileOf(ino); f != nil {
		f.Downgrade(idx, pa)
	}
}

// mapPageBlocks gives page idx of in (within its size) blocks on the
// disk, as a write of it would, and notes them for the page's
// write-back. Preconditions: fs.mu held, in buffered and its pages open.
func (fs *FS) mapPageBlocks(in *inode, idx uint64) error {
	fm, err := fs.mapping(in)
	if err != nil {
		return err
	}
	bs := int64(fs.blockSize)
	pos := int64(idx) * pagecache.PageSize
	end := min(pos+pagecache.PageSize, int64(in.size))
	changed := false
	var merr error
	for pos < end {
		pblk, n, fresh, err := fs.mapForWrite(fm, pos, int(end-pos))
		if err != nil {
			merr = err
			break
		}
		changed = changed || fresh
		chunk := min(int64(n)*bs-pos%bs, end-pos)
		fs.noteBlocks(in, uint32(pos/bs), pblk, uint32((pos%bs+chunk+bs-1)/bs), fresh)
		pos += chunk
	}
	if len(fm.changes) > 0 {
		// A tree with no room undoes the page's new blocks: the
		// fault fails (SIGBUS) with nothing allocated.
		_, err := fs.saveExtents(fm)
		merr = errors.Join(merr, err)
	}
	if fs.ordered == nil {
		fs.ordered = make(map[uint32]bool)
		fs.unsynced = make(map[uint32]bool)
	}
	fs.ordered[in.num] = true
	fs.unsynced[in.num] = true
	if changed {
		merr = errors.Join(merr, fs.iput(in)) // i_blocks grew
	}
	return merr
}
