package mm

import "sync"

// Copy-on-write sharing: frames mapped by more than one address space
// after fork. A frame is in the table while two or more mappings share it;
// a mapping that carries the COW bit but finds no entry is the last one
// left and owns the frame outright.
var cow struct {
	mu     sync.Mutex
	shares map[uintptr]int
}

// cowShare records one more mapping of pa.
func cowShare(pa uintptr) {
	cow.mu.Lock()
	if cow.shares == nil {
		cow.shares = make(map[uintptr]int)
	}
	if n := cow.shares[pa]; n == 0 {
		cow.shares[pa] = 2
	} else {
		cow.shares[pa] = n + 1
	}
	cow.mu.Unlock()
}

// cowRelease drops one mapping of pa and reports whether the caller was
// its only user (and so may keep or free the frame).
func cowRelease(pa uintptr) bool {
	cow.mu.Lock()
	defer cow.mu.Unlock()
	n, ok := cow.shares[pa]
	if !ok {
		return true
	}
	if n <= 2 {
		delete(cow.shares, pa)
	} else {
		cow.shares[pa] = n - 1
	}
	return false
}

// cowShared reports how many mappings share pa (1 if not shared).
func cowShared(pa uintptr) int {
	cow.mu.Lock()
	defer cow.mu.Unlock()
	if n, ok := cow.shares[pa]; ok {
		return n
	}
	return 1
}
