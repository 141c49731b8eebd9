package mm

import (
	"sync"
	"sync/atomic"
)

// Shm is memory whose pages belong to an object rather than to the
// address spaces mapping it: anonymous shared memory (mmap
// MAP_SHARED|MAP_ANONYMOUS), and a tmpfs file's data, which MAP_SHARED
// maps directly and exec maps copy-on-write. A fork child and its parent
// see the same pages, including pages first touched after the fork; a
// file's readers and writers see what its mappings wrote.
//
// The object is reference counted, and its frames go back the moment the
// last reference is dropped: a file holds one while it has a name or an
// open file, every mapping (VMA) of it holds one, and so does a caller
// between finding the object and mapping it. A finalizer cannot do this
// job: a file's size function refers back to the file that holds the
// object, a cycle the collector never finalizes, and even without one
// frames would wait for a collection the Go heap may not need for a long
// time (a 200 MB file is a few hundred bytes of Go memory).
type Shm struct {
	phys   Phys
	mu     sync.Mutex
	frames frameIndex // page index -> frame
	// pages is frames.len(), changed with mu held and read without it:
	// stat(2) of a file counts its blocks, and a lock there was where
	// stats of one file from several CPUs waited.
	pages atomic.Int64
	// counter, when set, follows pages: a file system's count of the
	// pages its files hold (CountIn). Protected by mu.
	counter *atomic.Int64
	// refs counts the holders; maps how many of them are mappings. While
	// any mapping holds the object, frames cut off by Truncate may still
	// be in page tables, so they wait in detached until the last mapping
	// is gone (its entries cleared and flushed) or the object dies.
	refs     int
	maps     int
	detached []uintptr
	// spaces counts the mappings (VMAs) of the object in each address
	// space: the reverse map that lets a truncate clear the entries of
	// the pages it cuts off (UnmapPages).
	spaces map[*Space]int
	// writers counts the mappings that may write the object: shared
	// ones whose descriptor allowed writing (Linux's i_mmap_writable),
	// which a file's write seal must wait out.
	writers int
	// size, when set, is the object's size in bytes (a file's): mapped
	// pages wholly past it fault with ErrBus.
	size func() int64
	// unmapped, when set, is called (without o.mu) each time the last
	// mapping of the object goes: a System V segment removed while
	// attached is destroyed then.
	unmapped func()
	// pager, when set, makes the object a mapping's window on a file
	// whose pages a cache outside mm keeps (pager.go): frames holds the
	// pages the object holds (with heldWrite), stale those it holds
	// that left the file. It owns no frames.
	pager Pager
	stale []heldPage
}

// OnUnmapped sets the function called whenever the object's last
// mapping goes away.
func (o *Shm) OnUnmapped(f func()) {
	o.mu.Lock()
	o.unmapped = f
	o.mu.Unlock()
}

// Maps returns how many mappings hold the object (a System V segment's
// shm_nattch: a mapping split in two counts twice, as on Linux).
func (o *Shm) Maps() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.maps
}

// NewShm makes an empty shared memory object holding one reference, the
// caller's.
func NewShm(p Phys) *Shm {
	return &Shm{phys: p, refs: 1}
}

// SetSize gives the object a size for mappings to respect (a file's
// length); without one every page of a mapping is valid.
func (o *Shm) SetSize(size func() int64) { o.size = size }

// IncRef takes a reference.
func (o *Shm) IncRef() {
	o.mu.Lock()
	o.refs++
	o.mu.Unlock()
}

// DecRef drops a reference; the last one frees every frame. An object
// used again after that starts empty.
// It reports whether that was the last reference (the pages are gone).
func (o *Shm) DecRef() (last bool) {
	o.mu.Lock()
	holds := o.dropLocked()
	last = o.refs == 0
	o.mu.Unlock()
	if last && o.pager != nil {
		o.releaseHolds(holds)
	}
	return last
}

// dropLocked drops a reference; the last one frees the frames, or
// returns a pager object's holds for the caller to give back once it
// has released o.mu.
func (o *Shm) dropLocked() []heldPage {
	o.refs--
	switch {
	case o.refs < 0:
		panic("mm: Shm reference count below zero")
	case o.refs == 0 && o.pager != nil:
		return o.takeHoldsLocked()
	case o.refs == 0:
		o.frames.visit(0, ^uintptr(0), func(_, f uintptr) bool {
			o.free(f)
			return true
		})
		o.frames.reset()
		o.pagesChangedLocked()
		o.freeDetachedLocked()
	}
	return nil
}

// mapRef takes the reference of a new mapping of the object; writer
// says whether the mapping may write it (VMA.mayWriteShared).
func (o *Shm) mapRef(s *Space, writer bool) {
	o.mu.Lock()
	o.refs++
	if o.spaces == nil {
		o.spaces = make(map[*Space]int)
	}
	o.spaces[s]++
	if writer {
		o.writers++
	}
	if o.maps++; o.maps == 1 {
		mappedFrames.Add(int64(o.frames.len() + len(o.detached) + len(o.stale)))
	}
	o.mu.Unlock()
}

// unmapRef drops a mapping's reference. The caller has cleared the
// mapping's page-table entries and flushed the TLBs.
func (o *Shm) unmapRef(s *Space, writer bool) {
	o.mu.Lock()
	if o.spaces[s]--; o.spaces[s] <= 0 {
		delete(o.spaces, s)
	}
	if writer {
		o.writers--
	}
	var last func()
	if o.maps--; o.maps == 0 {
		mappedFrames.Add(-int64(o.frames.len() + len(o.detached) + len(o.stale)))
		o.freeDetachedLocked()
		last = o.unmapped
	}
	holds := o.dropLocked()
	dead := o.refs == 0
	o.mu.Unlock()
	if dead && o.pager != nil {
		o.releaseHolds(holds)
	}
	if last != nil {
		last()
	}
}

// WriteMapped reports whether a mapping that may write the object exists
// (a shared one made from a descriptor open for writing, whatever its
// protection now: mprotect may add PROT_WRITE).
func (o *Shm) WriteMapped() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.writers > 0
}

func (o *Shm) freeDetachedLocked() {
	for _, f := range o.detached {
		o.free(f)
	}
	o.detached = nil
}

// free frees a frame of the object. Preconditions: o.mu is held.
func (o *Shm) free(f uintptr) {
	o.phys.Free(f)
	shmFrames.Add(-1)
	if o.maps > 0 {
		mappedFrames.Add(-1)
	}
}

// frame returns the frame of page idx, allocating a zeroed one first.
func (o *Shm) frame(idx uintptr) (uintptr, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if f := o.frames.get(idx); f != 0 {
		return f, nil
	}
	f := o.phys.Alloc()
	if f == 0 {
		return 0, ErrNoMem
	}
	shmFrames.Add(1)
	if o.maps > 0 {
		mappedFrames.Add(1)
	}
	o.frames.set(idx, f)
	o.pagesChangedLocked()
	return f, nil
}

// lookup returns the frame of page idx if the object has one (a pager
// object: holds one).
func (o *Shm) lookup(idx uintptr) (uintptr, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f := o.frames.get(idx) &^ heldWrite
	return f, f != 0
}

// Page returns page idx's memory; a missing page is allocated (zeroed)
// if alloc is set, else nil is returned for it (it reads as zeros).
func (o *Shm) Page(idx uintptr, alloc bool) (*[PageSize]byte, error) {
	if !alloc {
		o.mu.Lock()
		f := o.frames.get(idx)
		o.mu.Unlock()
		if f == 0 {
			return nil, nil
		}
		return o.phys.Page(f), nil
	}
	f, err := o.frame(idx)
	if err != nil {
		return nil, err
	}
	return o.phys.Page(f), nil
}

// pagesChangedLocked publishes the page count after frames changed, and
// moves the counter it is counted in by as much.
// Preconditions: o.mu is held.
func (o *Shm) pagesChangedLocked() {
	n := int64(o.frames.len())
	if o.counter != nil {
		o.counter.Add(n - o.pages.Load())
	}
	o.pages.Store(n)
}

// CountIn makes c follow the object's page count from now on (adding
// the pages it has), or with nil stops the counter it was in following
// it (taking them out again). A tmpfs file counts in its file system's
// pages while it holds its own: statfs reads one number, where it once
// walked a set of every file with data, whose map kept its peak size.
func (o *Shm) CountIn(c *atomic.Int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := o.pages.Load()
	if o.counter != nil {
		o.counter.Add(-n)
	}
	o.counter = c
	if c != nil {
		c.Add(n)
	}
}

// Pages reports how many pages hold memory.
func (o *Shm) Pages() int { return int(o.pages.Load()) }

// Truncate drops the pages from index idx on.
func (o *Shm) Truncate(idx uintptr) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.frames.visit(idx, ^uintptr(0), func(_, f uintptr) bool {
		if o.maps > 0 {
			o.detached = append(o.detached, f)
		} else {
			o.free(f)
		}
		return true
	})
	o.pagesChangedLocked()
}

// PunchHole makes pages [first, last) read as zeros again. Unmapped, they
// are freed; while a mapping holds the object they are zeroed in place
// instead, so every mapping sees the hole at once (Linux zaps the page
// table entries; here the frames stay and keep the mappings coherent).
func (o *Shm) PunchHole(first, last uintptr) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.frames.visit(first, last, func(_, f uintptr) bool {
		if o.maps > 0 {
			clear(o.phys.Page(f)[:])
			return false
		}
		o.free(f)
		return true
	})
	o.pagesChangedLocked()
}

// FutexKey names the futex word at va as every process sees it: memory
// of a shared object is keyed by the object and offset (so processes
// sharing it meet), other memory by this space and the address.
func (s *Space) FutexKey(va uintptr) (obj any, off uintptr, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	i := s.find(va)
	if i < 0 {
		return nil, 0, ErrFault
	}
	if v := s.vmas[i]; v.Shm != nil && !v.Private {
		if v.Shm.pager != nil {
			// Separate mappings of one file are separate objects.
			return v.Shm.pager.Key(), v.Off + va - v.Start, nil
		}
		return v.Shm, v.Off + va - v.Start, nil
	}
	return s, va, nil
}

// HeapPhys is physical memory simulated with Go pages: for host tests,
// and for a tmpfs that no address space maps from.
type HeapPhys struct {
	mu    sync.Mutex
	pages map[uintptr]*[PageSize]byte
	next  uintptr
}

func (h *HeapPhys) Alloc() uintptr {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pages == nil {
		h.pages = map[uintptr]*[PageSize]byte{}
		h.next = PageSize
	}
	pa := h.next
	h.next += PageSize
	h.pages[pa] = new([PageSize]byte)
	return pa
}

func (h *HeapPhys) Free(pa uintptr) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.pages, pa)
}

func (h *HeapPhys) Page(pa uintptr) *[PageSize]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pages[pa]
}

// Live returns how many frames are allocated and not freed: the host
// tests of caches and mappings read it to see every frame come back.
func (h *HeapPhys) Live() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.pages)
}

// UnmapPages clears the page-table entries that map pages [first, last)
// of the object in every address space that maps it, private copies
// made from them included (Linux's unmap_mapping_range with even_cows),
// and flushes the TLBs, so that the next touch faults and finds the
// file as it is now: SIGBUS past a truncated end, a fresh page in a
// punched hole (where a store through the old entry would have gone to
// a page no longer the file's and been lost). A pager object also gives
// back its holds on those pages, once no entry maps them.
//
// A fault holds its space's lock while it asks the object and the
// object's file, so the caller must hold no lock of the file's: call it
// after the truncate or hole punch, which has already cut the pages off
// (a fault between the two finds the file's new state).
func (o *Shm) UnmapPages(first, last uintptr) {
	if first >= last {
		return
	}
	o.mu.Lock()
	if o.maps == 0 {
		o.mu.Unlock()
		return
	}
	o.refs++ // the object and its pager outlive the holds given back below
	spaces := o.spacesLocked()
	var holds []heldPage
	if o.pager != nil {
		// Taken out first: a fault from now on holds the file's page
		// anew, and only holds no entry can reach are given back.
		o.frames.visit(first, last, func(i, rec uintptr) bool {
			holds = append(holds, heldPage{i, rec})
			return true
		})
		mappedFrames.Add(-int64(len(holds)))
		o.pages.Store(int64(o.frames.len()))
	}
	o.mu.Unlock()
	for _, s := range spaces {
		s.unmapObject(o, first, last)
	}
	for _, h := range holds {
		o.pager.ReleasePage(h.idx, h.rec&^heldWrite, h.rec&heldWrite != 0)
	}
	o.DecRef()
}

// spacesLocked lists the spaces that map o. Preconditions: o.mu held.
func (o *Shm) spacesLocked() []*Space {
	spaces := make([]*Space, 0, len(o.spaces))
	for s := range o.spaces {
		spaces = append(spaces, s)
	}
	return spaces
}

// unmapObject clears the entries of s's mappings of o that map pages
// [first, last) of it. A space destroyed meanwhile has no mappings left.
func (s *Space) unmapObject(o *Shm, first, last uintptr) {
	lo, hi := first*PageSize, ^uintptr(0)
	if last < hi/PageSize {
		hi = last * PageSize
	}
	s.lock()
	defer s.unlock()
	for _, v := range s.vmas {
		if v.Shm != o {
			continue
		}
		a, b := max(lo, v.Off), min(hi, v.Off+(v.End-v.Start))
		if a < b {
			s.unmapLocked(v.Start+a-v.Off, v.Start+b-v.Off)
		}
	}
}
