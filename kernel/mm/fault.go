package mm

// Page faults: demand paging of anonymous, file-backed and shared
// mappings, fault-around (an object's present pages, or the zero page, in
// the window around a read fault) and copy-on-write breaks. Split from
// space.go, which keeps the mappings themselves.

import (
	"sync/atomic"
)

// Fault resolves a page fault at va for a read, write or instruction
// fetch. It returns ErrNoMap or ErrAccess for a genuine fault, which the
// caller turns into SIGSEGV.
func (s *Space) Fault(va uintptr, write, exec bool) error {
	// Faults run under the read lock, so a fault that needs a frame
	// allocates (and zeroes) it there without holding up its siblings.
	s.rlock()
	err := s.faultLocked(va, write, exec)
	s.mu.RUnlock()
	if err == ErrNoMap && s.growStack(va) {
		s.rlock()
		err = s.faultLocked(va, write, exec)
		s.mu.RUnlock()
	}
	return err
}

// faultLocked resolves a fault.
func (s *Space) faultLocked(va uintptr, write, exec bool) error {
	i := s.find(va)
	if i < 0 {
		return ErrNoMap
	}
	v := &s.vmas[i]
	if v.Prot == 0 || (write && v.Prot&ProtWrite == 0) || (exec && v.Prot&ProtExec == 0) || (!write && !exec && v.Prot&ProtRead == 0 && v.Prot&ProtExec == 0) {
		return ErrAccess
	}
	page := pageDown(va)
	pte := walk(s.phys, s.root, page, true)
	if pte == nil {
		return ErrNoMem
	}
	cur := atomic.LoadUint64(pte)
	if holdsFrame(cur) {
		if write && cur&pteCOW != 0 {
			return s.breakCOWLocked(pte, cur, v.Prot)
		}
		if cur&PTEPresent == 0 { // PROT_NONE lifted without the PTE
			atomic.CompareAndSwapUint64(pte, cur, cur&(pteAddr|pteCOW|pteShared|PTEAccessed)|pteFlags(v.Prot, readOnly(cur)))
			return nil
		}
		if write && cur&PTEWrite == 0 && v.Shm != nil && !v.Private {
			return s.mkwriteLocked(v, page, pte, cur)
		}
		return nil // another thread resolved it
	}
	if !write && v.zeroFill(page) {
		z, err := s.zeroPage()
		if err != nil {
			return err
		}
		// Read-only and copy-on-write like an object's page; accessed,
		// as the CPU would mark it when the program's load retries
		// (Resident tells it from the pages zeroAround adds).
		zpte := uint64(z) | pteFlags(v.Prot, true) | pteShared | pteCOW
		if atomic.CompareAndSwapUint64(pte, cur, zpte|PTEAccessed) {
			s.zeroAround(v, page, zpte)
		}
		return nil
	}
	if v.Shm != nil && v.Private {
		return s.faultPrivateLocked(v, page, pte, cur, write)
	}
	if v.Shm != nil && v.Shm.pager != nil {
		// The file's page, read-only until the first store takes a
		// writable hold (mkwriteLocked), unless the object holds it
		// writably already.
		f, writable, err := v.Shm.holdPage((v.Off+page-v.Start)/PageSize, write)
		if err != nil {
			return err
		}
		if atomic.CompareAndSwapUint64(pte, cur, uint64(f)|pteFlags(v.Prot, !writable)|pteShared) {
			s.resident.Add(1)
		}
		return nil
	}
	if v.Shm != nil {
		if size := v.Shm.size; size != nil && v.Off+page-v.Start >= pageUp(uintptr(max(size(), 0))) {
			return ErrBus
		}
		f, err := v.Shm.frame((v.Off + page - v.Start) / PageSize)
		if err != nil {
			return err
		}
		if atomic.CompareAndSwapUint64(pte, cur, uint64(f)|pteFlags(v.Prot, false)|pteShared) {
			s.resident.Add(1)
		}
		return nil
	}
	if v.File && v.Off+(page-v.Start) >= pageUp(uintptr(len(v.Data))) {
		return ErrBus
	}

	f := s.phys.Alloc()
	if f == 0 {
		return ErrNoMem
	}
	if v.Data != nil {
		off := v.Off + (page - v.Start)
		if off < uintptr(len(v.Data)) {
			copy(s.phys.Page(f)[:], v.Data[off:])
		}
	}
	if !atomic.CompareAndSwapUint64(pte, cur, uint64(f)|pteFlags(v.Prot, false)) {
		s.phys.Free(f) // another thread of the process mapped the page first
		return nil
	}
	s.resident.Add(1)
	anonFrames.Add(1)
	return nil
}

// faultPrivateLocked resolves a fault on a page without an entry in a
// private mapping of an object: a read maps the object's page read-only
// (copy-on-write), a write or a page the object does not wholly back gets
// a frame of its own with what the object holds there.
func (s *Space) faultPrivateLocked(v *VMA, page uintptr, pte *uint64, cur uint64, write bool) error {
	off := v.Off + page - v.Start
	if v.Shm.pager != nil {
		return s.faultPagerPrivateLocked(v, page, pte, cur, write)
	}
	end := v.FileEnd
	if end == 0 && v.Shm.size != nil {
		size := uintptr(max(v.Shm.size(), 0))
		if off >= pageUp(size) {
			return ErrBus
		}
		end = size
	}
	idx := off / PageSize
	if !write && v.objectBacked(page) {
		if f, ok := v.Shm.lookup(idx); ok {
			if s.mapObjectPage(v, pte, cur, f) {
				s.faultAround(v, page)
			}
			return nil
		}
	}
	f := s.phys.Alloc()
	if f == 0 {
		return ErrNoMem
	}
	if end == 0 || off < end {
		if src, _ := v.Shm.Page(idx, false); src != nil {
			n := uintptr(PageSize)
			if end != 0 {
				n = min(n, end-off)
			}
			copy(s.phys.Page(f)[:n], src[:n])
		}
	}
	s.installPrivate(pte, cur, f, v.Prot)
	return nil
}

// readOnly reports whether the entry cur must stay read-only whatever
// the mapping's protection: a copy-on-write page, or a shared object's
// page that has not been stored to through this entry (the first store
// goes through mkwriteLocked, which a pager's file must see).
func readOnly(cur uint64) bool {
	return cur&pteCOW != 0 || cur&pteShared != 0 && cur&PTEWrite == 0
}

// zeroPage returns the space's zero page, making it first if needed.
func (s *Space) zeroPage() (uintptr, error) {
	if z := s.zero.Load(); z != 0 {
		return z, nil
	}
	z := s.phys.Alloc()
	if z == 0 {
		return 0, ErrNoMem
	}
	if !s.zero.CompareAndSwap(0, z) {
		s.phys.Free(z) // a sibling thread made it first
	}
	return s.zero.Load(), nil
}

// mapObjectPage maps frame f of v's object (or the zero page) at the entry
// pte (which held cur): shared and copy-on-write, so read-only whatever
// the protection, and the object keeps the frame.
func (s *Space) mapObjectPage(v *VMA, pte *uint64, cur uint64, f uintptr) bool {
	if !atomic.CompareAndSwapUint64(pte, cur, uint64(f)|pteFlags(v.Prot, true)|pteShared|pteCOW) {
		return false
	}
	if f != s.zero.Load() { // the zero page is in no one's resident set, as on Linux
		s.resident.Add(1)
	}
	return true
}

// faultAroundPages is how many pages around a read fault in a private
// object mapping are mapped with it, as Linux's fault-around does for the
// page cache: a program reading its data sequentially takes one fault per
// 64 KiB instead of one per page.
const faultAroundPages = 16

// faultAround maps the object's pages that are present, unmapped and
// wholly backed in the aligned window of faultAroundPages around page.
func (s *Space) faultAround(v *VMA, page uintptr) {
	if v.Shm.pager != nil {
		return // its frame index may hold pages that left the file
	}
	const span = faultAroundPages * PageSize
	lo, hi := max(page&^(span-1), v.Start), min(page&^(span-1)+span, v.End)
	for va := lo; va < hi; va += PageSize {
		if va == page || !v.objectBacked(va) {
			continue
		}
		pte := walk(s.phys, s.root, va, false) // the window is in page's table
		if pte == nil || atomic.LoadUint64(pte) != 0 {
			continue
		}
		if f, ok := v.Shm.lookup((v.Off + va - v.Start) / PageSize); ok {
			s.mapObjectPage(v, pte, 0, f)
		}
	}
}

// zeroAround maps the zero page (entry zpte) at the unmapped zero-fill
// pages of v in the aligned window of faultAroundPages around page. A
// program that reads a large bss or a fresh mapping page by page (a
// checksum, a search, a reader of memory it has not written yet) then
// takes one fault per 64 KiB instead of one per page. The entries cost no
// frame; a later store to one takes the copy-on-write path, as a store
// after a read does on any zero page. Linux maps anonymous reads one page
// at a time: the window is Shortbread's own, and the entries it adds stay
// unaccessed until the program touches them, so mincore still reports
// only the pages the program read.
func (s *Space) zeroAround(v *VMA, page uintptr, zpte uint64) {
	const span = faultAroundPages * PageSize
	lo, hi := max(page&^(span-1), v.Start), min(page&^(span-1)+span, v.End)
	leafTables(s.phys, s.root, lo, hi, func(va uintptr, ptes []uint64) {
		for i := range ptes {
			if atomic.LoadUint64(&ptes[i]) == 0 && v.zeroFill(va+uintptr(i)*PageSize) {
				atomic.CompareAndSwapUint64(&ptes[i], 0, zpte)
			}
		}
	})
}

// breakCOWLocked gives a copy-on-write page its own frame; cur is the PTE
// as the fault saw it.
//
// The copy is taken while this space still holds its share: once the
// share is released, the last other sharer owns the frame outright and
// may write to it or free it (on another CPU, under another space's
// lock), so copying after the release could copy that sharer's writes or
// a recycled frame. Two threads of this space may break the same page at
// once: the entry is swapped in atomically, and only the winner releases
// the share; the loser drops its copy and the thread faults again if it
// must.
func (s *Space) breakCOWLocked(pte *uint64, cur uint64, prot int) error {
	// One break at a time per space: a sibling thread that released this
	// space's share while we copied would let the other sharer free the
	// frame under the copy.
	s.cowMu.Lock()
	defer s.cowMu.Unlock()
	if atomic.LoadUint64(pte) != cur {
		return nil // a sibling broke it first
	}
	old := uintptr(cur & pteAddr)
	if cur&pteShared != 0 {
		// An object's page in a private mapping, or the zero page: the
		// owner keeps it. Frames come zeroed: the zero page needs no copy.
		f := s.phys.Alloc()
		if f == 0 {
			return ErrNoMem
		}
		zero := old == s.zero.Load()
		if !zero {
			*s.phys.Page(f) = *s.phys.Page(old)
		}
		if !atomic.CompareAndSwapUint64(pte, cur, uint64(f)|pteFlags(prot, false)) {
			s.phys.Free(f)
			return nil
		}
		anonFrames.Add(1)
		if zero { // the zero page was not counted
			s.resident.Add(1)
			// An entry without the accessed bit was swapped out before
			// any CPU used it, so no TLB holds it (a CPU sets the bit
			// before it caches a translation, SDM vol. 3 §4.8; one that
			// set it meanwhile failed the swap): the pages zeroAround
			// added. Otherwise this CPU dropped the read-only entry when
			// it took the fault (§4.10.4.1), and one it cached again
			// before the swap reads zeros, as the new frame holds, until
			// a store faults through it: only other CPUs must flush. (An
			// object's page may change under a stale entry: that one
			// flushes here too.)
			if cur&PTEAccessed != 0 {
				s.flushOthersLocked()
			}
			return nil
		}
		s.flushLocked()
		return nil
	}
	if cowShared(old) == 1 {
		// We are the last sharer: nobody else can share the frame again
		// without forking this space, which needs the write lock.
		// Making the entry writable needs no shootdown: a CPU with
		// the old read-only translation faults, finds the entry done
		// and retries.
		if atomic.CompareAndSwapUint64(pte, cur, uint64(old)|pteFlags(prot, false)) {
			cowRelease(old)
		}
		return nil
	}
	f := s.phys.Alloc()
	if f == 0 {
		return ErrNoMem
	}
	*s.phys.Page(f) = *s.phys.Page(old)
	if !atomic.CompareAndSwapUint64(pte, cur, uint64(f)|pteFlags(prot, false)) {
		s.phys.Free(f)
		return nil
	}
	anonFrames.Add(1)
	last := cowRelease(old)
	s.flushLocked()
	if last {
		// The other sharers left while we copied; free the frame only
		// now that no CPU can still read it through our entry.
		s.phys.Free(old)
		anonFrames.Add(-1)
	}
	return nil
}

// installPrivate maps f, a filled private frame, at pte unless the entry
// changed from cur meanwhile (another fault on the page won: f goes back).
func (s *Space) installPrivate(pte *uint64, cur uint64, f uintptr, prot int) {
	if !atomic.CompareAndSwapUint64(pte, cur, uint64(f)|pteFlags(prot, false)) {
		s.phys.Free(f)
		return
	}
	s.resident.Add(1)
	anonFrames.Add(1)
}
