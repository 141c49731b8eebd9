package mm

// Memory locking (mlock, mlock2, munlock, mlockall, munlockall). Nothing
// here ever pages memory out, so what locking changes is that a locked
// range's pages are made present at once (unless on-fault locking was
// asked for) and that it is accounted: LockedBytes is VmLck, which the
// process layer holds against RLIMIT_MEMLOCK.

import "errors"

// Lock marks the mappings of [start, start+n) locked and, unless onFault,
// makes their pages present: a private writable page is faulted for
// writing (its copy made, as Linux populates it), others for reading;
// PROT_NONE mappings are only marked. The range must be mapped
// throughout (ErrNoMem); a page that cannot be made present fails the
// call, the marks staying as Linux leaves them, with ErrLockNoMem when
// memory ran out and ErrNoMem when the page cannot exist (past a file's
// end).
func (s *Space) Lock(start, n uintptr, onFault bool) error {
	start, end := pageDown(start), pageUp(start+n)
	if end < start {
		return ErrInval
	}
	if err := s.setLocked(start, end, true); err != nil || onFault {
		return err
	}
	return s.populate(start, end)
}

// Unlock clears the mark of the mappings of [start, start+n), which must
// be mapped throughout (ErrNoMem).
func (s *Space) Unlock(start, n uintptr) error {
	start, end := pageDown(start), pageUp(start+n)
	if end < start {
		return ErrInval
	}
	return s.setLocked(start, end, false)
}

// setLocked re-cuts the VMA records of [start, end) with Locked set to
// locked, keeping the pages.
func (s *Space) setLocked(start, end uintptr, locked bool) error {
	if start == end {
		return nil
	}
	s.lock()
	defer s.unlock()
	if err := s.mappedRangeLocked(start, end); err != nil {
		return err
	}
	parts := s.splitLocked(start, end)
	for _, p := range parts {
		p.Locked = locked
		s.insertLocked(p)
	}
	s.dropLater(parts)
	return nil
}

// populate makes the pages of the accessible mappings in [start, end)
// present.
func (s *Space) populate(start, end uintptr) error {
	for _, v := range s.VMAs() {
		lo, hi := max(v.Start, start), min(v.End, end)
		if lo >= hi || v.Prot&(ProtRead|ProtWrite|ProtExec) == 0 {
			continue
		}
		write := v.Prot&ProtWrite != 0 && (v.Shm == nil || v.Private)
		for va := lo; va < hi; va += PageSize {
			if err := s.Fault(va, write, false); errors.Is(err, ErrNoMem) {
				return ErrLockNoMem
			} else if err != nil {
				return ErrNoMem
			}
		}
	}
	return nil
}

// LockAll is mlockall: current locks every mapping there is now (and
// makes it present unless onFault), future every mapping made from now
// on (LocksNew tells the caller of Map to Lock it).
func (s *Space) LockAll(current, future, onFault bool) error {
	s.lock()
	for i := range s.vmas {
		if current {
			s.vmas[i].Locked = true
		}
	}
	s.lockNew, s.lockOnFault = future, future && onFault
	s.unlock()
	if !current || onFault {
		return nil
	}
	return s.populate(0, UserTop)
}

// UnlockAll is munlockall: no mapping is locked, nor will new ones be.
func (s *Space) UnlockAll() {
	s.lock()
	for i := range s.vmas {
		s.vmas[i].Locked = false
	}
	s.lockNew, s.lockOnFault = false, false
	s.unlock()
}

// LocksNew reports whether mlockall(MCL_FUTURE) is in force, and whether
// with MCL_ONFAULT.
func (s *Space) LocksNew() (locked, onFault bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.lockNew, s.lockOnFault
}

// LockedBytes is the size of the locked mappings (VmLck).
func (s *Space) LockedBytes() uintptr {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.lockedInLocked(0, UserTop)
}

// LockedIn is the part of [start, start+n) that is locked already.
func (s *Space) LockedIn(start, n uintptr) uintptr {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.lockedInLocked(pageDown(start), pageUp(start+n))
}

func (s *Space) lockedInLocked(start, end uintptr) uintptr {
	total := uintptr(0)
	for _, v := range s.vmas {
		if lo, hi := max(v.Start, start), min(v.End, end); v.Locked && lo < hi {
			total += hi - lo
		}
	}
	return total
}
