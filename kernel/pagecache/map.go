package pagecache

import "slices"

// Pages mapped into address spaces. A file system's pager (mm.Pager)
// lends a mapping the cache's own page, so that loads and stores
// through the mapping and read(2) and write(2) see one copy; while it
// does, the mapping holds the page:
//   - a held page is never evicted (Shrink, drop_caches), so the cache
//     never has two copies of it;
//   - a held page that leaves its file with its contents (truncate,
//     punch hole, a discard, the file's release) is taken out of the
//     index, so readers see the file's new contents, but its frame is
//     kept, in Cache.detached, until the last hold on it goes: page
//     tables may still point at it (until the mapping goes, as for a
//     tmpfs file's pages cut off while mapped);
//   - a writable hold (a shared mapping that stored, or may store, to
//     the page) makes the page dirty, and it stays dirty while any such
//     hold lasts: stores through a page table are invisible to the
//     cache, so a write-back writes the page and leaves it dirty, and
//     the last writable hold leaves it dirty for one more;
//   - except that the flusher and a file system's sync first ask the
//     backing to write-protect such pages (CleanMapped, Cleaner: mm's
//     CleanPages, Linux's page_mkclean): the mappings turn their
//     writable holds into read holds (Downgrade), the write-back leaves
//     the page clean, and the next store faults and takes a writable
//     hold again. So a page a mapping stored to once is written back
//     once, not every flusher round.
//
// A hold is taken by HoldPage and given back by PutPage, with the frame
// HoldPage returned: by then the page may be detached, or another page
// may have taken its place.

// maxHolds bounds a page's holds (the record's counters are 16 bits).
const maxHolds = 1<<16 - 1

// HoldPage returns the frame of page idx, read in (with read-ahead)
// if it is not cached, with a hold taken. write takes a writable hold
// and marks the page dirty. A page at or past the end fails with
// ErrRange.
func (f *File) HoldPage(idx uint64, write bool) (uintptr, error) {
	for {
		if int64(idx) >= (f.size.Load()+PageSize-1)/PageSize {
			return 0, ErrRange
		}
		k := key{f.id, idx}
		s := f.c.shardOf(k)
		s.mu.Lock()
		pg := s.waitLocked(k)
		if pg == nil {
			s.mu.Unlock()
			if err := f.readMiss(idx, 1); err != nil {
				return 0, err
			}
			continue
		}
		if pg.holds == maxHolds {
			s.mu.Unlock()
			return 0, ErrNoMemory
		}
		pg.holds++
		pg.flags |= pgReferenced
		newly := false
		if write {
			if pg.wholds == 0 {
				f.wheld.Add(1)
			}
			pg.wholds++
			newly = pg.flags&pgDirty == 0
			pg.flags |= pgDirty
		}
		pa := pg.pa
		s.mu.Unlock()
		if newly {
			f.c.dirty.Add(1)
			f.markDirty(idx)
		}
		return pa, nil
	}
}

// PutPage gives back a hold HoldPage took on page idx in frame pa;
// write says it was a writable one. The frame of a page detached
// meanwhile is freed with its last hold.
func (f *File) PutPage(idx uint64, pa uintptr, write bool) {
	k := key{f.id, idx}
	s := f.c.shardOf(k)
	s.mu.Lock()
	if pg := s.lookupLocked(k); pg != nil && pg.pa == pa && pg.holds > 0 {
		pg.holds--
		if write && pg.wholds > 0 {
			if pg.wholds--; pg.wholds == 0 {
				f.wheld.Add(-1)
			}
		}
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	f.c.PutDetached(pa)
}

// Downgrade turns a writable hold HoldPage took on page idx in frame pa
// into a read hold: the mapping can no longer store to the page (its
// entries were write-protected), so the page may become clean.
func (f *File) Downgrade(idx uint64, pa uintptr) {
	k := key{f.id, idx}
	s := f.c.shardOf(k)
	s.mu.Lock()
	if pg := s.lookupLocked(k); pg != nil && pg.pa == pa && pg.wholds > 0 {
		if pg.wholds--; pg.wholds == 0 {
			f.wheld.Add(-1)
		}
	}
	s.mu.Unlock()
}

// Cleaner is a Backing whose pages mappings may store to (a file
// system's file): CleanPages write-protects the pages idxs in every
// mapping that holds them writably and Downgrades those holds. It
// takes the locks a page fault takes.
type Cleaner interface {
	CleanPages(idxs []uint64)
}

// CleanMapped asks f's backing, if it is a Cleaner, to write-protect
// the dirty pages mappings hold writably, so that the write-back that
// follows leaves them clean. The caller must hold none of the locks a
// page fault takes (an address space's, the file system's): the
// flusher and a file system's sync call it, a writer's throttling and
// a shrink under memory pressure do not.
func (f *File) CleanMapped() {
	cl, ok := f.b.(Cleaner)
	if !ok || f.wheld.Load() == 0 {
		return
	}
	f.dmu.Lock()
	idxs := make([]uint64, 0, len(f.dirty))
	for i := range f.dirty {
		idxs = append(idxs, i)
	}
	f.dmu.Unlock()
	mapped := idxs[:0]
	for _, idx := range idxs {
		k := key{f.id, idx}
		s := f.c.shardOf(k)
		s.mu.Lock()
		if pg := s.lookupLocked(k); pg != nil && pg.wholds > 0 {
			mapped = append(mapped, idx)
		}
		s.mu.Unlock()
	}
	if len(mapped) > 0 {
		slices.Sort(mapped)
		cl.CleanPages(mapped)
	}
}

// PutDetached gives back a hold on frame pa, which left its file while
// held (its File may be gone).
func (c *Cache) PutDetached(pa uintptr) {
	c.dmu.Lock()
	n, ok := c.detached[pa]
	switch {
	case !ok:
		c.dmu.Unlock()
		panic("pagecache: hold given back on a frame not held")
	case n > 1:
		c.detached[pa] = n - 1
		c.dmu.Unlock()
		return
	}
	delete(c.detached, pa)
	c.dmu.Unlock()
	c.frames.Free(pa)
}

// detach keeps frame pa, held holds times, after its page leaves the
// cache. Preconditions: the page's shard.mu held.
func (c *Cache) detach(pa uintptr, holds uint16) {
	c.dmu.Lock()
	if c.detached == nil {
		c.detached = make(map[uintptr]uint16)
	}
	c.detached[pa] = holds
	c.dmu.Unlock()
}

// Detached reports how many frames wait for their last hold.
func (c *Cache) Detached() int {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	return len(c.detached)
}

// ZeroFrom clears the bytes of the cached page holding offset at from
// at on, if it is cached: a file system cutting the file there keeps
// the page (a mapping may hold it) rather than dropping and reading it
// again. Preconditions: the page is not being read in (the file
// system's lock keeps reads out).
func (f *File) ZeroFrom(at int64) {
	if at%PageSize != 0 {
		f.zeroTail(at)
	}
}

// zeroTail clears the bytes of the cached page holding offset at from
// at on: they were past the end, where a mapping may have stored, and
// the file has grown over them (they must read as zeros, as the disk
// has them), or the file is cut there (ZeroFrom).
func (f *File) zeroTail(at int64) {
	k := key{f.id, uint64(at / PageSize)}
	s := f.c.shardOf(k)
	s.mu.Lock()
	if pg := s.lookupLocked(k); pg != nil && pg.flags&pgBusy == 0 {
		clear(f.c.frames.Page(pg.pa)[at%PageSize:])
	}
	s.mu.Unlock()
}
