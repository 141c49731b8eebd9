//go:build shortbread

// Shortbread machine layer: the physical frame allocator.
//
// Never-used ranges are carved from the low end, so early page-table
// pages sit below 4 GiB, where the boot stub's identity map reaches them.

package runtime

const (
	sbMaxRanges = 128 // kernel/machine.MaxRanges
	sbMaxNodes  = 16
)

type sbRange struct {
	base, end uintptr
	node      uint8
}

type sbFrameAllocator struct {
	mu       sbSpin
	ranges   [sbMaxRanges]sbRange // never-allocated memory, ascending
	nranges  int
	freeHead [sbMaxNodes]uintptr // each node's first returned frame, 0 if none
	nodeFree [sbMaxNodes]uint64  // frames available on each node
	free     uint64              // frames available (ranges + lists)
	total    uint64              // frames ever added
	maxPhys  uintptr             // end of the highest usable RAM

	// NUMA, from setNUMA: one node (0) until then.
	nnodes  int
	spans   [sbMaxRanges]sbRange // each node's physical ranges
	nspans  int
	cpuNode [sbMaxCPU]uint8
	order   [sbMaxNodes][sbMaxNodes]uint8 // order[n]: the nodes a CPU of n takes from
}

var (
	sbFrames    sbFrameAllocator
	sbNewRanges [sbMaxRanges]sbRange // setNUMA's scratch
)

// addRange makes [base, end) available but for its overlap with the
// ranges in keep. Called during boot only.
func (a *sbFrameAllocator) addRange(base, end uintptr, keep [][2]uintptr) {
	base = (base + sbPageSize - 1) &^ (sbPageSize - 1)
	end &^= sbPageSize - 1
	if end <= base {
		return
	}
	a.maxPhys = max(a.maxPhys, end) // RAM kept back is direct-mapped too
	for _, k := range keep {
		if lo, hi := k[0]&^(sbPageSize-1), (k[1]+sbPageSize-1)&^(sbPageSize-1); lo < end && base < hi {
			a.addRange(base, lo, keep)
			a.addRange(hi, end, keep)
			return
		}
	}
	if a.nranges == sbMaxRanges {
		return
	}
	i := 0 // keeping ascending order
	for i < a.nranges && a.ranges[i].base <= base {
		i++
	}
	copy(a.ranges[i+1:a.nranges+1], a.ranges[i:a.nranges])
	a.ranges[i] = sbRange{base: base, end: end}
	a.nranges++
	n := uint64((end - base) / sbPageSize)
	a.free += n
	a.nodeFree[0] += n
	a.total += n
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
	node := uint8(0)
	if a.nnodes > 1 {
		node = a.cpuNode[sbThisCPU().id]
	}
	pa := uintptr(0)
	for k := 0; k < max(a.nnodes, 1) && pa == 0; k++ {
		pa = a.takeLocked(a.order[node][k])
	}
	a.mu.unlock()
	if pa != 0 {
		sbMemzero(sbPhys(pa), sbPageSize)
	}
	return pa
}

// takeLocked takes a frame of node n: a returned one, else the lowest
// never-used one; 0 if the node has none. Nosplit, as what runs under
// the lock must not grow the stack (a new stack's page fault takes it).
//
//go:nosplit
func (a *sbFrameAllocator) takeLocked(n uint8) uintptr {
	pa := a.freeHead[n]
	if pa != 0 {
		a.freeHead[n] = uintptr(sbLoad64(sbPhys(pa)))
	} else {
		for i := 0; i < a.nranges; i++ {
			r := &a.ranges[i]
			if r.node == n && r.base < r.end {
				pa = r.base
				r.base += sbPageSize
				break
			}
		}
	}
	if pa != 0 {
		a.free--
		a.nodeFree[n]--
	}
	return pa
}

// release returns a frame.
func (a *sbFrameAllocator) release(pa uintptr) {
	a.mu.lock()
	a.pushLocked(pa)
	a.mu.unlock()
}

//go:nosplit
func (a *sbFrameAllocator) pushLocked(pa uintptr) {
	n, _ := a.nodeAt(pa, pa+1)
	sbStore64(sbPhys(pa), uint64(a.freeHead[n]))
	a.freeHead[n] = pa
	a.free++
	a.nodeFree[n]++
}

// nodeAt is the node of the frame at p (0 outside every span) and the end
// of the piece from p up to limit in that node: to the end of the span
// holding p, or to the next span's start.
//
//go:nosplit
func (a *sbFrameAllocator) nodeAt(p, limit uintptr) (uint8, uintptr) {
	for i := 0; i < a.nspans; i++ {
		s := a.spans[i]
		if p >= s.base && p < s.end {
			return s.node, min(limit, s.end)
		}
		if s.base > p && s.base < limit {
			limit = s.base
		}
	}
	return 0, limit
}

// setNUMA files free memory by node: spans gives each node's physical
// ranges, cpuNode each CPU's node, order (nnodes x nnodes) the nodes a
// CPU of each node takes from, its own first. The never-used ranges are
// cut at the spans' edges (pieces past sbMaxRanges are dropped) and the
// returned frames moved to their nodes' lists. Once, at boot.
func (a *sbFrameAllocator) setNUMA(spans []sbRange, cpuNode []uint8, order []uint8, nnodes int) {
	a.mu.lock()
	a.nspans = copy(a.spans[:], spans)
	copy(a.cpuNode[:], cpuNode)
	for i := 0; i < nnodes; i++ {
		copy(a.order[i][:nnodes], order[i*nnodes:])
	}
	// Count again: the ranges as cut, then the list as it is refiled.
	a.nodeFree, a.free = [sbMaxNodes]uint64{}, 0
	n := 0
	for i := 0; i < a.nranges; i++ {
		for p, end := a.ranges[i].base, a.ranges[i].end; p < end && n < sbMaxRanges; n++ {
			node, next := a.nodeAt(p, end)
			sbNewRanges[n] = sbRange{base: p, end: next, node: node}
			f := uint64((next - p) / sbPageSize)
			a.nodeFree[node], a.free = a.nodeFree[node]+f, a.free+f
			p = next
		}
	}
	a.ranges, a.nranges = sbNewRanges, n
	list := a.freeHead[0]
	a.freeHead[0] = 0
	for list != 0 {
		next := uintptr(sbLoad64(sbPhys(list)))
		a.pushLocked(list)
		list = next
	}
	a.nnodes = nnodes
	a.mu.unlock()
}
