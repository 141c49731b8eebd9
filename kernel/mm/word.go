package mm

import (
	"sync/atomic"
	"unsafe"
)

// UpdateWord changes the aligned 32-bit word at va atomically with respect
// to the program's own atomic instructions on it (futex words): f gets
// the current value and returns the value to store, or false to leave the
// word as it is. f may run more than once, when the program changes the
// word between the read and the store. UpdateWord returns the value f
// last saw. The page must be writable: ErrFault otherwise, as a user
// write would fault.
func (s *Space) UpdateWord(va uintptr, f func(old uint32) (uint32, bool)) (uint32, error) {
	if va&3 != 0 || va >= UserTop {
		return 0, ErrFault
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	pa, err := s.accessLocked(va, true)
	if err != nil {
		return 0, err
	}
	page := s.phys.Page(pa)
	w := (*uint32)(unsafe.Pointer(&page[va&(PageSize-1)]))
	for {
		old := atomic.LoadUint32(w)
		v, store := f(old)
		if !store || atomic.CompareAndSwapUint32(w, old, v) {
			return old, nil
		}
	}
}
