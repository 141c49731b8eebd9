package mm

// mremap and madvise: moving, growing and shrinking mappings, and giving
// pages back.

// ErrBus is a fault on a page of a file mapping wholly past the end of
// the file (SIGBUS, BUS_ADRERR).
var ErrBus = errorString("access past the end of a mapped file")

type errorString string

func (e errorString) Error() string { return string(e) }

// Remap implements mremap(2) for the range [old, old+oldSize), which must
// lie inside one mapping: shrinking unmaps the tail; growing extends the
// mapping in place when the pages after it are free, else (mayMove)
// moves it, page-table entries and all, to a free range below top, or to
// fixed when fixed is non-zero. It returns the new address.
func (s *Space) Remap(old, oldSize, newSize uintptr, mayMove bool, fixed, top uintptr) (uintptr, error) {
	if old&(PageSize-1) != 0 || fixed&(PageSize-1) != 0 || newSize == 0 {
		return 0, ErrInval
	}
	oldSize, newSize = pageUp(oldSize), pageUp(newSize)
	if old+oldSize < old || old+newSize < old || oldSize == 0 {
		return 0, ErrInval
	}
	s.lock()
	defer s.unlock()
	i := s.find(old)
	if i < 0 || s.vmas[i].End < old+oldSize {
		return 0, ErrFault
	}
	v := s.vmas[i]
	if fixed != 0 {
		if fixed < old+oldSize && old < fixed+newSize {
			return 0, ErrInval // the ranges may not overlap
		}
		if !s.usable(fixed, fixed+newSize) {
			return 0, ErrNoMem
		}
		s.carveLocked(fixed, fixed+newSize)
		return fixed, s.moveLocked(v, old, oldSize, fixed, newSize)
	}
	switch {
	case newSize == oldSize:
		return old, nil
	case newSize < oldSize:
		s.carveLocked(old+newSize, old+oldSize)
		return old, nil
	}
	// Grow in place: the range must end the mapping, with room after it.
	end := old + newSize
	if old+oldSize == v.End && s.usable(v.End, end) && !s.overlaps(v.End, end) && s.fitsLocked(v.End, end, v.isData()) {
		s.vmas[i].End = end
		return old, nil
	}
	if !mayMove {
		return 0, ErrNoMem
	}
	to, err := s.findFreeLocked(newSize, top)
	if err != nil {
		return 0, err
	}
	return to, s.moveLocked(v, old, oldSize, to, newSize)
}

// moveLocked moves [old, old+oldSize) of mapping v to a free range at to
// of newSize bytes: the pages keep their frames (their entries move), the
// old range is left unmapped, and a larger new range is filled on demand
// the way v would have been.
func (s *Space) moveLocked(v VMA, old, oldSize, to, newSize uintptr) error {
	nv := v
	nv.Off += old - v.Start
	nv.Start, nv.End = to, to+newSize
	if !s.fitsLocked(to, to+newSize, v.isData()) && newSize > oldSize {
		return ErrNoMem
	}
	// Make the destination tables first, so running out of memory leaves
	// the old mapping whole.
	n := min(oldSize, newSize)
	var err error
	leafTables(s.phys, s.root, old, old+n, func(va uintptr, ptes []uint64) {
		for i, pte := range ptes {
			if err == nil && holdsFrame(pte) && walk(s.phys, s.root, to+va-old+uintptr(i)*PageSize, true) == nil {
				err = ErrNoMem
			}
		}
	})
	if err != nil {
		return err
	}
	leafTables(s.phys, s.root, old, old+n, func(va uintptr, ptes []uint64) {
		for i := range ptes {
			if holdsFrame(ptes[i]) {
				*walk(s.phys, s.root, to+va-old+uintptr(i)*PageSize, true) = ptes[i]
				ptes[i] = 0
			}
		}
	})
	s.dropLater(s.splitLocked(old, old+oldSize))
	s.unmapLocked(old+n, old+oldSize) // a shrinking move drops the tail
	s.insertLocked(nv)
	s.flushLocked()
	return nil
}

// findFreeLocked finds n free, usable bytes below top (top-down, like
// MapAnywhere) without mapping them.
func (s *Space) findFreeLocked(n, top uintptr) (uintptr, error) {
	end := min(pageDown(top), UserTop)
	for i := len(s.vmas); i >= 0; i-- {
		gapStart := uintptr(PageSize * 16)
		if i > 0 {
			gapStart = s.vmas[i-1].End
		}
		gapEnd := end
		if i < len(s.vmas) {
			gapEnd = min(gapEnd, s.vmas[i].Start)
		}
		for gapEnd >= gapStart+n {
			a := gapEnd - n
			if s.usable(a, gapEnd) {
				return a, nil
			}
			moved := false
			for _, r := range s.reserve {
				if a < r[1] && r[0] < gapEnd {
					gapEnd, moved = r[0], true
				}
			}
			if !moved {
				break
			}
		}
	}
	return 0, ErrNoMem
}

// Discard implements madvise(MADV_DONTNEED) and MADV_FREE: the pages of
// [start, start+n) go back; private pages read as zero (or as the file)
// when touched again, shared ones come back from their object. The range
// must be mapped.
func (s *Space) Discard(start, n uintptr) error {
	if start&(PageSize-1) != 0 || start+n < start {
		return ErrInval
	}
	end := pageUp(start + n)
	s.lock()
	defer s.unlock()
	if err := s.mappedRangeLocked(start, end); err != nil {
		return err
	}
	s.unmapLocked(start, end)
	return nil
}

// Advise checks the range of a madvise that needs no work (WILLNEED,
// NORMAL...): it must be mapped.
func (s *Space) Advise(start, n uintptr) error {
	if start&(PageSize-1) != 0 || start+n < start {
		return ErrInval
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mappedRangeLocked(start, pageUp(start+n))
}

func (s *Space) mappedRangeLocked(start, end uintptr) error {
	for va := start; va < end; {
		i := s.find(va)
		if i < 0 {
			return ErrNoMem
		}
		va = s.vmas[i].End
	}
	return nil
}
