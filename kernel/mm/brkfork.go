package mm

// SetBrk sets where the program break starts (just past the loaded
// program, or higher) for a new program.
func (s *Space) SetBrk(base uintptr) {
	s.lock()
	defer s.unlock()
	s.brkBase, s.brk = base, base
}

// SetMmapTop sets the top of the area mmap places mappings in for a new
// program, before the space is in use.
func (s *Space) SetMmapTop(top uintptr) { s.mmapTop = top }

// MmapTop is the top of the area mmap places mappings in.
func (s *Space) MmapTop() uintptr { return s.mmapTop }

// Brk implements brk(2): it moves the break to want if it can and returns
// the break in effect afterwards (the old one on failure, as Linux does).
func (s *Space) Brk(want uintptr) uintptr {
	s.lock()
	defer s.unlock()
	if want < s.brkBase || want >= UserTop {
		return s.brk
	}
	oldEnd, newEnd := pageUp(s.brk), pageUp(want)
	switch {
	case newEnd > oldEnd:
		if !s.usable(oldEnd, newEnd) || s.overlaps(oldEnd, newEnd) || !s.fitsLocked(oldEnd, newEnd, true) {
			return s.brk
		}
		if i := s.find(oldEnd - 1); oldEnd > s.brkBase && i >= 0 && s.vmas[i].Name == "[heap]" && s.vmas[i].End == oldEnd {
			s.vmas[i].End = newEnd
		} else {
			s.insertLocked(VMA{Start: oldEnd, End: newEnd, Prot: ProtRead | ProtWrite, Name: "[heap]"})
		}
	case newEnd < oldEnd:
		s.carveLocked(newEnd, oldEnd)
	}
	s.brk = want
	return want
}

// Fork returns a copy of the address space for a child process: the same
// mappings, with every resident page shared copy-on-write (read-only in
// both until one of them writes).
func (s *Space) Fork(init func(pml4, pdpt, pd uintptr) error) (*Space, error) {
	c, err := NewSpace(s.phys, init, s.reserve, s.tlb)
	if err != nil {
		return nil, err
	}
	s.lock()
	defer s.unlock()
	c.vmas = append([]VMA(nil), s.vmas...)
	for i := range c.vmas {
		c.vmas[i].Locked = false // memory locks are not inherited (a stack's Floor is)
	}
	for _, v := range c.vmas {
		if v.Shm != nil {
			v.Shm.mapRef(c, v.mayWriteShared()) // the child's mapping; c.Destroy drops it
		}
	}
	c.brkBase, c.brk, c.mmapTop, c.limit, c.dataLimit = s.brkBase, s.brk, s.mmapTop, s.limit, s.dataLimit
	for _, v := range s.vmas {
		if v.Shm != nil && !v.Private {
			continue // the child maps the same object and faults its pages in
		}
		var err error
		leafTables(s.phys, s.root, v.Start, v.End, func(va uintptr, ptes []uint64) {
			for i := range ptes {
				pte := &ptes[i]
				// An object's own page (in a private mapping) the child
				// faults in from the object too.
				if err != nil || !holdsFrame(*pte) || *pte&pteShared != 0 {
					continue
				}
				cpte := walk(c.phys, c.root, va+uintptr(i)*PageSize, true)
				if cpte == nil {
					err = ErrNoMem
					return
				}
				*pte = (*pte | pteCOW) &^ PTEWrite
				*cpte = *pte
				cowShare(uintptr(*pte & pteAddr))
				c.resident.Add(1)
			}
		})
		if err != nil {
			c.Destroy()
			return nil, err
		}
	}
	s.flushLocked()
	return c, nil
}
