//go:build shortbread

// Shortbread machine layer: the physical frame allocator.
//
// Free memory is kept two ways so boot does not have to touch every frame:
// ranges that were never handed out (carved from the low end, so early
// page-table pages sit below 4 GiB where the boot stub's identity map can
// reach them) and a stack of returned frames, linked through the frames
// themselves via the direct map. Both are guarded by one spinlock; the hot
// path is a pop or a push.

package runtime

const sbMaxRanges = 64

type sbRange struct{ base, end uintptr }

type sbFrameAllocator struct {
	mu       sbSpin
	ranges   [sbMaxRanges]sbRange // never-allocated memory, ascending
	nranges  int
	freeHead uintptr // physical address of the first returned frame, 0 if none
	free     uint64  // frames available (ranges + list)
	total    uint64  // frames ever added
	maxPhys  uintptr // end of the highest usable RAM
}

var sbFrames sbFrameAllocator

// addRange makes [base, end) available. Called during boot only.
func (a *sbFrameAllocator) addRange(base, end uintptr) {
	base = (base + sbPageSize - 1) &^ (sbPageSize - 1)
	end &^= sbPageSize - 1
	if end <= base || a.nranges == sbMaxRanges {
		return
	}
	// Insert keeping ascending order.
	i := a.nranges
	for i > 0 && a.ranges[i-1].base > base {
		a.ranges[i] = a.ranges[i-1]
		i--
	}
	a.ranges[i] = sbRange{base, end}
	a.nranges++
	n := uint64((end - base) / sbPageSize)
	a.free += n
	a.total += n
	if end > a.maxPhys {
		a.maxPhys = end
	}
}

// reserve removes [base, end) from the never-allocated ranges (the kernel
// image, boot modules, the boot information). Called during boot only.
func (a *sbFrameAllocator) reserve(base, end uintptr) {
	base &^= sbPageSize - 1
	end = (end + sbPageSize - 1) &^ (sbPageSize - 1)
	for i := 0; i < a.nranges; i++ {
		r := a.ranges[i]
		if end <= r.base || base >= r.end {
			continue
		}
		cut := uint64((min(end, r.end) - max(base, r.base)) / sbPageSize)
		a.free -= cut
		a.total -= cut
		switch {
		case base <= r.base && end >= r.end:
			a.ranges[i].end = r.base // empty; left in place
		case base <= r.base:
			a.ranges[i].base = end
		case end >= r.end:
			a.ranges[i].end = base
		default:
			// Split in two.
			if a.nranges == sbMaxRanges {
				// No slot for the tail: drop it from the counts too.
				lost := uint64((r.end - end) / sbPageSize)
				a.free -= lost
				a.total -= lost
				a.ranges[i].end = base
				continue
			}
			copy(a.ranges[i+2:a.nranges+1], a.ranges[i+1:a.nranges])
			a.ranges[i].end = base
			a.ranges[i+1] = sbRange{end, r.end}
			a.nranges++
			i++
		}
	}
}

// alloc returns the physical address of a zeroed frame, or 0 when memory is
// exhausted.
func (a *sbFrameAllocator) alloc() uintptr { return a.allocKeeping(0) }

// allocKeeping is alloc that fails while no more than keep frames are
// free (the kernel's reserve, for frames of user memory): checked under
// the allocator's lock, so concurrent callers cannot take the reserve.
func (a *sbFrameAllocator) allocKeeping(keep uint64) uintptr {
	a.mu.lock()
	if a.free <= keep {
		a.mu.unlock()
		return 0
	}
	pa := a.freeHead
	if pa != 0 {
		a.freeHead = uintptr(sbLoad64(sbPhys(pa)))
	} else {
		for i := 0; i < a.nranges; i++ {
			r := &a.ranges[i]
			if r.base < r.end {
				pa = r.base
				r.base += sbPageSize
				break
			}
		}
	}
	if pa != 0 {
		a.free--
	}
	a.mu.unlock()
	if pa != 0 {
		sbMemzero(sbPhys(pa), sbPageSize)
	}
	return pa
}

// release returns a frame.
func (a *sbFrameAllocator) release(pa uintptr) {
	a.mu.lock()
	sbStore64(sbPhys(pa), uint64(a.freeHead))
	a.freeHead = pa
	a.free++
	a.mu.unlock()
}
