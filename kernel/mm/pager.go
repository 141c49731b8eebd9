package mm

// Mappings of files whose pages live in a cache outside mm (ext4's, in
// the page cache): the design.
//
// A file system that keeps a file's data in frames of its own cache
// offers the file to mappings as a Pager. A mapping of such a file is
// an Shm made by NewPagerShm, one per mmap call, shared by the pieces
// and fork copies of that mapping like any Shm; it owns no frames. Its
// frame index records the cache's pages it has mapped and holds, each
// held once (Pager.HoldPage) however many page tables point at it, and
// it gives every hold back (Pager.ReleasePage) when its last reference
// goes, after every entry that mapped the pages was cleared and
// flushed; then Done tells the file. A held page stays in the cache
// (never reclaimed), and one that leaves the file while held (truncate)
// keeps its frame until the hold goes: so no page table ever points at
// a frame that was freed.
//
// Faults ask the pager every time (a lookup in the cache, or a read):
// a page truncated away and read in again is a new frame, and the old
// one, which the object's other page tables may still map, moves to
// stale, held until the object dies. A page past the end faults with
// ErrBus (the pager's error: its size is the file's, now).
//
// Shared mappings map the cache's page itself, read-only until the
// first store: that store faults (mkwrite) and takes a writable hold,
// which makes the file system allocate the page's blocks (ENOSPC and a
// read-only file system are the fault's SIGBUS, as on Linux) and keeps
// the page dirty while held, so the flusher, fsync and msync(MS_SYNC)
// write it back through the file system's own path (for ext4, ordered
// data). Private mappings map the page copy-on-write, as a program's
// segments map a tmpfs file's pages: read-only, copied at the first
// store (breakCOWLocked); the object keeps its hold on the original.
//
// Processes that map the same file separately get separate objects;
// they share the cache's pages, and futexes in them meet by the file's
// key (Pager.Key).
//
// Pages cut off the file: each object knows the address spaces that map
// it (Shm.spaces, a reverse map at the granularity of objects, as
// Linux's i_mmap), and the file, told of its objects (Pager.Attach),
// calls UnmapPages after a truncate or hole punch: the cut pages'
// entries are cleared in every space, private copies included, and the
// holds given back, so a later touch is SIGBUS past the end or a new
// page in the hole, as on Linux. A tmpfs file does the same after a
// truncate (a hole punched in it zeroes mapped pages in place).
//
// Write-back (Linux's page_mkclean): before the file writes a page
// back, it asks each object to write-protect the page (CleanPages). An
// object that holds it writably clears the write bit of the entries
// that map it in every space (found through the object's reverse map,
// then by the page's offset in each of its mappings), flushes, and
// turns its hold into a read hold (Pager.Downgrade); the page is then
// clean once written, and the next store through a mapping faults and
// takes a writable hold again (mkwriteLocked), making it dirty again.

import "sync/atomic"

// Pager is a file whose pages a cache outside mm keeps.
type Pager interface {
	// HoldPage returns the frame holding page idx, read in first if
	// need be, with a hold taken: the frame stays the page's, or at
	// least allocated, until ReleasePage. write takes a writable hold
	// for a shared mapping about to store to the page. Past the end
	// of the file it fails (ErrBus); ErrNoMem when memory is short.
	HoldPage(idx uintptr, write bool) (uintptr, error)
	// ReleasePage gives back a hold HoldPage took on frame pa.
	ReleasePage(idx, pa uintptr, write bool)
	// Sync writes the file's dirty pages back and makes them durable
	// (msync with MS_SYNC).
	Sync() error
	// Done is called once, when the object that took the pager gives
	// back its last hold.
	Done()
	// Attach tells the pager the object NewPagerShm made for it, once,
	// before any hold: a file that cuts pages off (truncate, hole
	// punch) calls the object's UnmapPages afterwards.
	Attach(o *Shm)
	// Downgrade turns a writable hold HoldPage took on frame pa into a
	// read hold: no entry may store to the page any more (CleanPages).
	Downgrade(idx, pa uintptr)
	// Key names the file for futexes: every pager of one file returns
	// the same comparable value, so that processes mapping the file
	// separately meet on its words.
	Key() any
}

// heldWrite marks a pager object's frame index entry whose hold is
// writable (frames are page-aligned: the low bits are free).
const heldWrite = 1

// heldPage is a hold of a pager object on a page no longer current.
type heldPage struct {
	idx, rec uintptr
}

// NewPagerShm makes an object for a mapping of pg's pages, holding one
// reference, the caller's. phys reaches the frames.
func NewPagerShm(phys Phys, pg Pager) *Shm {
	o := &Shm{phys: phys, refs: 1, pager: pg}
	pg.Attach(o)
	return o
}

// holdPage returns the frame of page idx of a pager object, held by it
// (writably with write), and whether its hold is writable.
func (o *Shm) holdPage(idx uintptr, write bool) (uintptr, bool, error) {
	pa, err := o.pager.HoldPage(idx, write)
	if err != nil {
		return 0, false, err
	}
	rec := pa
	if write {
		rec |= heldWrite
	}
	var put uintptr
	putWrite := false
	o.mu.Lock()
	switch old := o.frames.get(idx); {
	case old == 0:
		o.frames.set(idx, rec)
		o.pages.Store(int64(o.frames.len()))
		if o.maps > 0 {
			mappedFrames.Add(1)
		}
	case old&^heldWrite == pa:
		// Held already: keep one hold, the writable one if either is.
		if write && old&heldWrite == 0 {
			o.frames.replace(idx, rec)
			put = pa
		} else {
			put, putWrite = pa, write
			rec = old
		}
	default:
		// The page left the file while held and was read in again:
		// page tables may still map the old frame.
		o.stale = append(o.stale, heldPage{idx, old})
		o.frames.replace(idx, rec)
		if o.maps > 0 {
			mappedFrames.Add(1)
		}
	}
	o.mu.Unlock()
	if put != 0 {
		o.pager.ReleasePage(idx, put, putWrite)
	}
	return pa, rec&heldWrite != 0, nil
}

// mkwriteLocked makes the present, read-only entry pte (which held cur)
// of a page of v's shared object writable, for a store: a pager's page
// first gets a writable hold (the file allocates its blocks, the page
// becomes dirty).
func (s *Space) mkwriteLocked(v *VMA, page uintptr, pte *uint64, cur uint64) error {
	if v.Shm.pager == nil {
		atomic.CompareAndSwapUint64(pte, cur, cur|PTEWrite)
		return nil
	}
	f, _, err := v.Shm.holdPage((v.Off+page-v.Start)/PageSize, true)
	if err != nil {
		return err
	}
	if atomic.CompareAndSwapUint64(pte, cur, uint64(f)|pteFlags(v.Prot, false)|pteShared) && f != uintptr(cur&pteAddr) {
		// The entry mapped a page that left the file (truncated and
		// read in again): no CPU may go on reading the old frame.
		s.flushLocked()
	}
	return nil
}

// faultPagerPrivateLocked is faultPrivateLocked for a pager's object:
// the page is asked for (held) whatever the fault, as the pager knows
// the file's end; a read maps it copy-on-write, a write copies it. With
// FileEnd (a program's segment) the bytes past it are zeros, and a page
// wholly past it is not the file's at all.
func (s *Space) faultPagerPrivateLocked(v *VMA, page uintptr, pte *uint64, cur uint64, write bool) error {
	off := v.Off + page - v.Start
	n := uintptr(PageSize)
	if v.FileEnd != 0 {
		n = min(n, max(v.FileEnd, off)-off)
	}
	var src uintptr
	if n > 0 {
		var err error
		if src, _, err = v.Shm.holdPage(off/PageSize, false); err != nil {
			return err
		}
		if !write && n == PageSize {
			s.mapObjectPage(v, pte, cur, src)
			return nil
		}
	}
	f := s.phys.Alloc()
	if f == 0 {
		return ErrNoMem
	}
	if n > 0 {
		copy(s.phys.Page(f)[:n], s.phys.Page(src)[:n])
	}
	s.installPrivate(pte, cur, f, v.Prot)
	return nil
}

// takeHoldsLocked empties a dead pager object and returns its holds.
// Preconditions: o.mu is held, no mapping left.
func (o *Shm) takeHoldsLocked() []heldPage {
	holds := o.stale
	o.frames.visit(0, ^uintptr(0), func(i, rec uintptr) bool {
		holds = append(holds, heldPage{i, rec})
		return true
	})
	o.frames.reset()
	o.pages.Store(0)
	o.stale = nil
	return holds
}

// releaseHolds gives back a dead pager object's holds, then tells the
// pager it is done. Called without o.mu.
func (o *Shm) releaseHolds(holds []heldPage) {
	for _, h := range holds {
		o.pager.ReleasePage(h.idx, h.rec&^heldWrite, h.rec&heldWrite != 0)
	}
	o.pager.Done()
}

// Sync writes back the files that shared mappings in [start, start+n)
// map from a pager (msync with MS_SYNC): every one, even if one fails;
// the first failure is returned.
func (s *Space) Sync(start, n uintptr) error {
	var objs []*Shm
	s.rlock()
	for i := range s.vmas {
		v := &s.vmas[i]
		if v.End <= start || v.Start >= start+n || v.Shm == nil || v.Shm.pager == nil || v.Private {
			continue
		}
		objs = append(objs, v.Shm)
	}
	s.mu.RUnlock()
	var first error
	for i, o := range objs {
		// One mapping's pieces side by side (split by mprotect) share
		// their object: one Sync. (Compared as objects, not as Pager
		// interfaces: a pager's dynamic type may be uncomparable, and
		// comparing it panicked the kernel.)
		if i > 0 && objs[i-1] == o {
			continue
		}
		if err := o.pager.Sync(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// CleanPages write-protects the pages among idxs that the object holds
// writably, for a write-back that is about to make them clean: their
// entries in the object's shared mappings lose the write bit (every
// CPU's translations flushed), and the holds become read holds, so a
// later store faults and makes the page dirty again. The hold changes
// first: a store that faults meanwhile takes a writable hold anew, and
// an entry write-protected after that only faults once more. Called
// without the locks a fault takes (a space's, the file system's).
func (o *Shm) CleanPages(idxs []uintptr) {
	o.mu.Lock()
	if o.pager == nil {
		o.mu.Unlock()
		return
	}
	var down []heldPage
	for _, i := range idxs {
		if rec := o.frames.get(i); rec&heldWrite != 0 {
			o.frames.replace(i, rec&^heldWrite)
			down = append(down, heldPage{i, rec &^ heldWrite})
		}
	}
	if len(down) == 0 {
		o.mu.Unlock()
		return
	}
	o.refs++ // the object and its pager outlive the downgrades below
	spaces := o.spacesLocked()
	o.mu.Unlock()
	for _, s := range spaces {
		s.protectObject(o, down)
	}
	for _, h := range down {
		o.pager.Downgrade(h.idx, h.rec)
	}
	o.DecRef()
}

// protectObject clears the write bit of the entries of s's shared
// mappings of o that map pages (at their held frames). A space
// destroyed meanwhile has no mappings left.
func (s *Space) protectObject(o *Shm, pages []heldPage) {
	s.lock()
	defer s.unlock()
	changed := false
	for _, v := range s.vmas {
		if v.Shm != o || v.Private {
			continue
		}
		for _, h := range pages {
			off := h.idx * PageSize
			if off < v.Off || off-v.Off >= v.End-v.Start {
				continue
			}
			pte := walk(s.phys, s.root, v.Start+off-v.Off, false)
			if pte == nil {
				continue
			}
			// The CPU may set the accessed and dirty bits meanwhile.
			for {
				cur := atomic.LoadUint64(pte)
				if cur&PTEWrite == 0 || uintptr(cur&pteAddr) != h.rec {
					break
				}
				if atomic.CompareAndSwapUint64(pte, cur, cur&^PTEWrite) {
					changed = true
					break
				}
			}
		}
	}
	if changed {
		s.flushLocked()
	}
}
