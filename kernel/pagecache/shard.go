package pagecache

import "sync"

// key names a page: its file and its index (offset / PageSize).
type key struct {
	file  uint32
	index uint64
}

// indexBits is the bits of a page index a shard's map key keeps: files
// are at most maxSize bytes.
const indexBits = 40

// maxSize is the largest file the cache holds (4 PiB); a larger size is
// cut to it.
const maxSize = PageSize << indexBits

// packed is k as one word, the shard maps' key: a map of uint64 keys
// hashes in a few instructions, one of structs through the generic
// hash, which was most of a cached read's look-up.
func (k key) packed() uint64 { return uint64(k.file)<<indexBits | k.index }

// Page states (page.flags).
const (
	pgUptodate   = 1 << iota // the frame holds the page's bytes
	pgBusy                   // being read in: wait on the shard's cond
	pgDirty                  // changed since last written back
	pgWriteback              // a copy is being written: do not evict
	pgReferenced             // used since the clock hand last passed
	pgFileKind               // the file is KindFile (else KindBlock)
	pgStale                  // invalidated while busy: drop once read in
	pgReadahead              // read-ahead marker: a reader's hit starts the next window (readahead.go)
)

// groupShift makes runs of 1<<groupShift consecutive pages of a file
// (32 KiB) share a shard, so that a read of many pages takes a shard's
// lock once a run rather than once a page; different files and
// different runs of one file still spread over all shards.
const groupShift = 3

// page is one cached page. It holds no pointers, so the slices of them
// are never scanned by the garbage collector.
type page struct {
	pa    uintptr
	key   key
	flags uint32
	// holds counts the mappings' holds on the page (map.go), wholds
	// those of them that may store to it; both fit in the record's
	// padding, so a page still costs 32 bytes.
	holds, wholds uint16
}

// shard is a sixty-fourth of the cache.
type shard struct {
	mu    sync.Mutex
	cond  sync.Cond        // a page's pgBusy cleared; L is &mu
	index map[uint64]int32 // page slot by key.packed(); protected by mu
	pages []page           // slots; protected by mu
	free  []int32          // unused slots; protected by mu
	hand  int              // clock hand over pages; protected by mu
}

func (c *Cache) shardOf(k key) *shard {
	h := ((k.index>>groupShift)*0x9e3779b97f4a7c15 + uint64(k.file)*0xc2b2ae3d27d4eb4f) >> 58
	return &c.shards[h]
}

// lookupLocked returns the page at k, or nil. Preconditions: s.mu held.
func (s *shard) lookupLocked(k key) *page {
	if i, ok := s.index[k.packed()]; ok {
		return &s.pages[i]
	}
	return nil
}

// insertLocked adds a page for k in frame pa with flags. Preconditions:
// s.mu held, no page at k.
func (s *shard) insertLocked(k key, pa uintptr, flags uint32) {
	var i int32
	if n := len(s.free); n > 0 {
		i = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		s.pages = append(s.pages, page{})
		i = int32(len(s.pages) - 1)
	}
	s.pages[i] = page{pa: pa, key: k, flags: flags}
	s.index[k.packed()] = i
}

// removeLocked forgets the page at k and returns its frame.
// Preconditions: s.mu held, a page at k.
func (s *shard) removeLocked(c *Cache, k key) uintptr {
	i := s.index[k.packed()]
	p := &s.pages[i]
	pa := p.pa
	c.pages[p.kind()].Add(-1)
	if p.flags&pgDirty != 0 {
		c.dirty.Add(-1)
	}
	*p = page{}
	delete(s.index, k.packed())
	s.free = append(s.free, i)
	return pa
}

// shrinkLocked compacts the shard once it holds a quarter of the pages
// it has room for: its slots and its index map keep the size of the most
// pages it ever held (a Go map never shrinks), some 80 bytes a page, so
// a 1 GiB file read once and dropped would leave 20 MiB of the Go heap
// behind (drop_caches, unlink, truncate and eviction all come here).
// Compacting moves pages to other slots, which is safe where append is:
// a slot is used only under mu. Preconditions: s.mu held, and no caller
// holds a *page or slot number across the call.
func (s *shard) shrinkLocked() {
	if cap(s.pages) < shrinkMin || len(s.index) > cap(s.pages)/4 {
		return
	}
	pages := make([]page, 0, 2*len(s.index))
	index := make(map[uint64]int32, len(s.index))
	for k, i := range s.index {
		index[k] = int32(len(pages))
		pages = append(pages, s.pages[i])
	}
	s.pages, s.index, s.free, s.hand = pages, index, nil, 0
}

// shrinkMin is the slots below which a shard is never compacted: a
// small one costs little, and compacting it again and again would cost
// more.
const shrinkMin = 64

func (p *page) kind() int {
	if p.flags&pgFileKind != 0 {
		return KindFile
	}
	return KindBlock
}

// evict drops up to n clean, idle pages of the shard (n < 0: all of
// them, referenced or not) and returns how many went. With clock set, a
// referenced page loses its mark and is spared once.
func (s *shard) evict(c *Cache, n int, clock bool) int {
	var frames [maxRun]uintptr
	got := 0
	s.mu.Lock()
	limit := n
	if limit < 0 || limit > maxRun {
		limit = maxRun
	}
	for steps := 2 * len(s.pages); steps > 0 && got < limit; steps-- {
		if s.hand >= len(s.pages) {
			s.hand = 0
			if len(s.pages) == 0 {
				break
			}
		}
		p := &s.pages[s.hand]
		s.hand++
		if p.pa == 0 || p.flags&(pgBusy|pgDirty|pgWriteback) != 0 || p.holds > 0 {
			continue
		}
		if clock && p.flags&pgReferenced != 0 {
			p.flags &^= pgReferenced
			continue
		}
		frames[got] = s.removeLocked(c, p.key)
		got++
	}
	s.shrinkLocked()
	s.mu.Unlock()
	for _, pa := range frames[:got] {
		c.frames.Free(pa)
	}
	if n < 0 && got == limit {
		return got + s.evict(c, n, clock)
	}
	return got
}
