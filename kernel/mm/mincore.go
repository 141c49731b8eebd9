package mm

import "sync/atomic"

// Resident fills out (one byte a page from start, len(out) pages) with
// mincore(2)'s answer: 1 for a page in memory, 0 for one that is not.
// A page is in memory when this space maps a frame for it (the shared
// zero page too), or, for a mapping of an object (shared memory, a tmpfs
// file, a program's segments), when the object holds the page, mapped
// here or not, as Linux answers from the page cache. start must be page
// aligned (ErrInval); a page no mapping covers is ErrNoMem, as Linux's
// ENOMEM.
func (s *Space) Resident(start uintptr, out []byte) error {
	if start&(PageSize-1) != 0 {
		return ErrInval
	}
	end := start + uintptr(len(out))*PageSize
	if end < start || end > UserTop {
		return ErrNoMem
	}
	s.rlock()
	defer s.mu.RUnlock()
	zero := s.zero.Load()
	for i := range out {
		va := start + uintptr(i)*PageSize
		k := s.find(va)
		if k < 0 {
			return ErrNoMem
		}
		v := &s.vmas[k]
		out[i] = 0
		if pte := walk(s.phys, s.root, va, false); pte != nil && touched(atomic.LoadUint64(pte), zero) {
			out[i] = 1
			continue
		}
		if v.Shm != nil {
			if _, ok := v.Shm.lookup((v.Off + va - v.Start) / PageSize); ok {
				out[i] = 1
			}
		}
	}
	return nil
}

// touched reports whether pte maps a frame that mincore counts: not the
// zero page where fault-around put it and the program never went
// (zeroAround), so the answer is Linux's, which maps anonymous reads one
// page at a time.
func touched(pte uint64, zero uintptr) bool {
	return holdsFrame(pte) && (uintptr(pte&pteAddr) != zero || pte&PTEAccessed != 0)
}
