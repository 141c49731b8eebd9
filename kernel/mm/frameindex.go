package mm

// frameIndex maps a shared object's page indices to its frames: a radix
// of leaves of up to leafLen entries, keyed by index / leafLen, where a
// zero entry is a page without a frame (the frame allocator never hands
// out frame 0).
//
// A Go map from index to frame, what this replaces, cost ~24 bytes a
// page in the heap and grew by doubling: filling memory with one tmpfs
// file raised the kernel heap's high-water mark by several MiB that the
// runtime's metadata then never gave back. Here a dense file costs 8
// bytes a page in leaves that go as they empty, and a small file (the
// common case: a mail message, a lock file) one short slice, because a
// leaf holds only up to its highest page and the first leaf needs no
// map at all.
type frameIndex struct {
	low  []uintptr             // pages [0, leafLen)
	high map[uintptr][]uintptr // leaf number (index / leafLen) -> its pages; nil until needed
	n    int                   // entries that hold a frame
}

const (
	leafShift = 9
	leafLen   = 1 << leafShift // 512 entries: a full leaf is one 4 KiB object
)

// leaf returns the leaf holding index i, which may be nil.
func (x *frameIndex) leaf(i uintptr) []uintptr {
	if i < leafLen {
		return x.low
	}
	return x.high[i>>leafShift]
}

func (x *frameIndex) setLeaf(key uintptr, l []uintptr) {
	if key == 0 {
		x.low = l
		return
	}
	if l == nil {
		delete(x.high, key)
		if len(x.high) == 0 {
			x.high = nil
		}
		return
	}
	if x.high == nil {
		x.high = map[uintptr][]uintptr{}
	}
	x.high[key] = l
}

func (x *frameIndex) len() int { return x.n }

// get returns the frame of page i, or 0.
func (x *frameIndex) get(i uintptr) uintptr {
	l := x.leaf(i)
	if j := i & (leafLen - 1); j < uintptr(len(l)) {
		return l[j]
	}
	return 0
}

// set records frame f (not 0) for page i, which has none.
func (x *frameIndex) set(i, f uintptr) {
	if f == 0 {
		panic("mm: frame 0 in a shared object")
	}
	key, j := i>>leafShift, int(i&(leafLen-1))
	l := x.leaf(i)
	if j >= len(l) {
		if j < cap(l) {
			l = l[:j+1]
		} else {
			// Grow to a power of two, so a file written page by page
			// copies its leaf log(leafLen) times, not leafLen.
			c := max(2*cap(l), 1)
			for c < j+1 {
				c *= 2
			}
			nl := make([]uintptr, j+1, min(c, leafLen))
			copy(nl, l)
			l = nl
		}
		x.setLeaf(key, l)
	}
	if l[j] != 0 {
		panic("mm: page of a shared object given a second frame")
	}
	l[j] = f
	x.n++
}

// replace records frame f (not 0) for page i in place of the one it
// has.
func (x *frameIndex) replace(i, f uintptr) {
	l, j := x.leaf(i), int(i&(leafLen-1))
	if f == 0 || j >= len(l) || l[j] == 0 {
		panic("mm: replacing a frame a shared object does not have")
	}
	l[j] = f
}

// visit calls fn for every page in [from, to) that has a frame; where fn
// returns true the entry is removed. Leaves left empty are freed and a
// leaf whose tail was emptied is shortened, so a file truncated from
// large to small gives its index memory back too.
func (x *frameIndex) visit(from, to uintptr, fn func(i, f uintptr) (remove bool)) {
	if from >= to {
		return
	}
	do := func(key uintptr, l []uintptr) {
		base := key << leafShift
		if base >= to || base+uintptr(len(l)) <= from {
			return
		}
		lo, hi := 0, len(l)
		if from > base {
			lo = int(from - base)
		}
		if to-base < uintptr(hi) {
			hi = int(to - base)
		}
		removed := false
		for j := lo; j < hi; j++ {
			if f := l[j]; f != 0 && fn(base+uintptr(j), f) {
				l[j] = 0
				x.n--
				removed = true
			}
		}
		if !removed {
			return
		}
		end := len(l)
		for end > 0 && l[end-1] == 0 {
			end--
		}
		switch {
		case end == 0:
			l = nil
		case end <= cap(l)/4:
			l = append([]uintptr(nil), l[:end]...)
		default:
			l = l[:end]
		}
		x.setLeaf(key, l)
	}
	if x.low != nil {
		do(0, x.low)
	}
	if to > leafLen {
		// Deleting from a map while ranging over it is allowed; the
		// visit does not add entries.
		for key, l := range x.high {
			do(key, l)
		}
	}
}

// reset forgets every entry (the caller has freed the frames).
func (x *frameIndex) reset() { *x = frameIndex{} }
