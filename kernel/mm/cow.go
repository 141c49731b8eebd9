package mm

import "sync"

// Copy-on-write sharing: frames mapped by more than one address space
// after fork. A frame is in the table while two or more mappings share it;
// a mapping that carries the COW bit but finds no entry is the last one
// left and owns the frame outright.
//
// The table is split by frame number, each shard with its own lock, so
// forks and copy-on-write breaks on different CPUs seldom meet. A shard
// whose map has emptied to a quarter of its peak is rebuilt: a Go map
// never shrinks, and one fork of a large process (redis saving its
// data set) would otherwise leave a table of its size behind for good.
var cow [cowShards]cowShard

const cowShards = 16

type cowShard struct {
	mu     sync.Mutex
	shares map[uintptr]int // frame -> mappings sharing it (2 or more)
	peak   int             // the most entries since the map was made
	_      [40]byte        // a cache line each
}

// shrinkMin is the peak below which a shard's map is not worth
// rebuilding.
const shrinkMin = 1024

func cowShardOf(pa uintptr) *cowShard { return &cow[(pa/PageSize)%cowShards] }

// cowShare records one more mapping of pa.
func cowShare(pa uintptr) {
	s := cowShardOf(pa)
	s.mu.Lock()
	if s.shares == nil {
		s.shares = make(map[uintptr]int)
	}
	if n := s.shares[pa]; n == 0 {
		s.shares[pa] = 2
		s.peak = max(s.peak, len(s.shares))
	} else {
		s.shares[pa] = n + 1
	}
	s.mu.Unlock()
}

// cowRelease drops one mapping of pa and reports whether the caller was
// its only user (and so may keep or free the frame).
func cowRelease(pa uintptr) bool {
	s := cowShardOf(pa)
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.shares[pa]
	if !ok {
		return true
	}
	if n > 2 {
		s.shares[pa] = n - 1
		return false
	}
	delete(s.shares, pa)
	if s.peak >= shrinkMin && len(s.shares) <= s.peak/4 {
		m := make(map[uintptr]int, len(s.shares))
		for k, v := range s.shares {
			m[k] = v
		}
		s.shares, s.peak = m, len(m)
	}
	return false
}

// cowShared reports how many mappings share pa (1 if not shared).
func cowShared(pa uintptr) int {
	s := cowShardOf(pa)
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.shares[pa]; ok {
		return n
	}
	return 1
}

// cowEntries counts the frames shared copy-on-write (for tests).
func cowEntries() int {
	n := 0
	for i := range cow {
		s := &cow[i]
		s.mu.Lock()
		n += len(s.shares)
		s.mu.Unlock()
	}
	return n
}
