package mm

import "sort"

// Stacks that grow down. exec maps a program's stack small, as Linux's
// setup_arg_pages does (the arguments and 128 KiB below them); a fault
// or a kernel copy in the gap just below it extends the mapping to the
// page, as Linux's expand_downwards, and only what it has grown to is
// mapped, counted in VmStk and VmSize, and held to RLIMIT_AS. So a
// program whose RLIMIT_AS is close to its size can still mmap what it
// could on Linux, and a stack that grows past RLIMIT_AS is SIGSEGV, not
// free.

// StackGuardGap is the room a stack keeps from the mapping below it
// (Linux's stack_guard_gap, 256 pages).
const StackGuardGap = 256 * PageSize

// growStack extends the growing stack above va down to va's page, if
// va is within its floor, clear of the mapping below by the guard gap,
// and the space stays within RLIMIT_AS. It reports whether the page is
// now mapped.
func (s *Space) growStack(va uintptr) bool {
	s.lock()
	defer s.unlock()
	return s.growStackLocked(va)
}

func (s *Space) growStackLocked(va uintptr) bool {
	if va >= UserTop {
		return false
	}
	if s.find(va) >= 0 {
		return true // another thread grew it first
	}
	// The first mapping above va.
	i := sort.Search(len(s.vmas), func(i int) bool { return s.vmas[i].End > va })
	if i == len(s.vmas) || !s.vmas[i].GrowsDown {
		return false
	}
	v := &s.vmas[i]
	start := pageDown(va)
	if start < v.Floor || v.MaxSize != 0 && v.End-start > v.MaxSize {
		return false // past RLIMIT_STACK
	}
	if i > 0 {
		if p := &s.vmas[i-1]; !p.GrowsDown && p.Prot != 0 && start-p.End < StackGuardGap {
			return false
		}
	}
	if !s.fitsAddLocked(start, v.Start, v.Start-start, false) {
		return false // past RLIMIT_AS
	}
	v.Start = start // anonymous memory: no Data or Off to move
	return true
}

// GrowStack extends the stack that holds or lies above va down to va, as
// a fault there would: exec uses it to leave Linux's 128 KiB below the
// arguments. It fails with ErrNoMem where a fault would be SIGSEGV.
func (s *Space) GrowStack(va uintptr) error {
	if !s.growStack(va) {
		return ErrNoMem
	}
	return nil
}

// StackBytes is the size of the growing stacks (VmStk).
func (s *Space) StackBytes() uintptr {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := uintptr(0)
	for _, v := range s.vmas {
		if v.GrowsDown {
			n += v.End - v.Start
		}
	}
	return n
}

// DataBytes is the size of the data mappings (VmData): private and
// writable, not the stack.
func (s *Space) DataBytes() uintptr {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.dataLocked()
}
