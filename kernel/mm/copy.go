package mm

import (
	"sync/atomic"
	"unsafe"
)

// Copying between the kernel and user memory. Every access goes through
// the program's page tables, so a pointer into unmapped memory, the kernel
// half, a reserved range or a page without the needed permission is
// ErrFault, never a kernel fault.

// page is the frame at pa as kernel memory: at the direct map's offset
// when phys has one, with no call.
func (s *Space) page(pa uintptr) *[PageSize]byte {
	if s.direct != nil {
		return (*[PageSize]byte)(unsafe.Add(s.direct, pa))
	}
	return s.phys.Page(pa)
}

// lookup is walk without creating tables, through page: the entry for
// va, or nil where a table is missing or a shared kernel entry (without
// the user bit) or a huge page covers va.
func (s *Space) lookup(va uintptr) *uint64 {
	d := s.direct
	if d == nil {
		return walk(s.phys, s.root, va, false)
	}
	// Every user copy walks here: the three upper levels written out,
	// one test of the bits an entry must have (present, user) and lack
	// (huge) at each.
	table := s.root
	if table = next(d, table, va>>39); table == 0 {
		return nil
	}
	if table = next(d, table, va>>30); table == 0 {
		return nil
	}
	if table = next(d, table, va>>21); table == 0 {
		return nil
	}
	return (*uint64)(unsafe.Add(d, table+(va>>12&511)*8))
}

// next is the table that entry i&511 of table (at the direct map d)
// points to, or 0 where lookup must stop.
func next(d unsafe.Pointer, table, i uintptr) uintptr {
	v := atomic.LoadUint64((*uint64)(unsafe.Add(d, table+(i&511)*8)))
	if v&(PTEPresent|PTEUser|PTEHuge) != PTEPresent|PTEUser {
		return 0
	}
	return uintptr(v & pteAddr)
}

// access makes the page at va present with the access allowed and returns
// its frame. Caller holds s.mu.
func (s *Space) accessLocked(va uintptr, write bool) (uintptr, error) {
	if va >= UserTop {
		return 0, ErrFault
	}
	// The VMA decides, not the page-table entry: Unmap clears the entries
	// of a range after taking it out of the VMA list, outside mu.
	if s.find(va) < 0 {
		return 0, ErrFault
	}
	// Entries change under the read lock too (faults install them by
	// compare-and-swap): read them atomically.
	pte := s.lookup(va)
	var e uint64
	if pte != nil {
		e = atomic.LoadUint64(pte)
	}
	// A fault that another thread raced with may leave the entry as it
	// was; the kernel must never write through a read-only entry (it may
	// map a frame another space or an object owns), so look again.
	for try := 0; e&PTEPresent == 0 || (write && e&PTEWrite == 0); try++ {
		if try == 3 {
			return 0, ErrFault
		}
		if err := s.faultLocked(va, write, false); err != nil {
			return 0, ErrFault
		}
		pte = s.lookup(va)
		if pte == nil {
			return 0, ErrFault
		}
		e = atomic.LoadUint64(pte)
	}
	return uintptr(e & pteAddr), nil
}

func (s *Space) copy(va uintptr, b []byte, write bool) error {
	if len(b) == 0 {
		return nil
	}
	if va+uintptr(len(b)) < va || va+uintptr(len(b)) > UserTop {
		return ErrFault
	}
	// No defer: this runs for every user copy (and nothing below
	// panics but a kernel bug).
	s.mu.RLock()
	for len(b) > 0 {
		pa, err := s.accessLocked(va, write)
		if err != nil && s.find(va) < 0 {
			// Below a stack: grow it, as the page fault a user copy
			// takes there would.
			s.mu.RUnlock()
			grown := s.growStack(va)
			s.mu.RLock()
			if grown {
				pa, err = s.accessLocked(va, write)
			}
		}
		if err != nil {
			s.mu.RUnlock()
			return err
		}
		off := va & (PageSize - 1)
		page := s.page(pa)[off:]
		var n int
		if write {
			n = copy(page, b)
		} else {
			n = copy(b, page)
		}
		b = b[n:]
		va += uintptr(n)
	}
	s.mu.RUnlock()
	return nil
}

// CopyOut writes b to user memory at va.
func (s *Space) CopyOut(va uintptr, b []byte) error { return s.copy(va, b, true) }

// CopyIn reads len(b) bytes of user memory at va.
func (s *Space) CopyIn(va uintptr, b []byte) error { return s.copy(va, b, false) }

// CopyInString reads a NUL-terminated string of at most max bytes.
func (s *Space) CopyInString(va uintptr, max int) (string, error) {
	var out []byte
	s.mu.RLock()
	defer s.mu.RUnlock()
	for len(out) < max {
		if va >= UserTop {
			return "", ErrFault
		}
		pa, err := s.accessLocked(va, false)
		if err != nil {
			return "", err
		}
		off := va & (PageSize - 1)
		page := s.page(pa)[off:]
		for _, c := range page {
			if c == 0 {
				return string(out), nil
			}
			out = append(out, c)
			if len(out) == max {
				return "", ErrNameTooLong
			}
		}
		va += uintptr(len(page))
	}
	return "", ErrNameTooLong
}

// PinUser makes the user buffers iov (address, length) present for a
// copy into them (write) or out of them, up to max bytes, and appends
// the kernel's view of them to segs, page by page; it stops at the
// first page it cannot make present without more than a fault (a stack
// that would have to grow, a bad address: an ordinary copy then deals
// with it), and returns segs and the bytes they cover. It returns
// holding the space's read lock, which keeps the pages mapped: the
// caller copies, must not fault on or change this space meanwhile, and
// then calls UnpinUser.
func (s *Space) PinUser(iov [][2]uint64, max int, write bool, segs [][]byte) ([][]byte, int) {
	s.mu.RLock()
	got := 0
	for _, v := range iov {
		va, n := uintptr(v[0]), int(min(v[1], uint64(max-got)))
		if va+uintptr(n) < va || va+uintptr(n) > UserTop {
			return segs, got
		}
		for n > 0 {
			pa, err := s.accessLocked(va, write)
			if err != nil {
				return segs, got
			}
			off := va & (PageSize - 1)
			k := min(n, int(PageSize-off))
			segs = append(segs, s.phys.Page(pa)[off:int(off)+k])
			got += k
			n -= k
			va += uintptr(k)
		}
		if got == max {
			break
		}
	}
	return segs, got
}

// UnpinUser ends a PinUser.
func (s *Space) UnpinUser() { s.mu.RUnlock() }
