//go:build shortbread

// Shortbread machine layer: page tables and the runtime's own mappings.

package runtime

import "unsafe"

const (
	ptePresent = 1 << 0
	pteWrite   = 1 << 1
	ptePCD     = 1 << 4
	pteHuge    = 1 << 7
	pteGlobal  = 1 << 8
	pteNX      = 1 << 63
	pteAddr    = 0x000ffffffffff000

	sbProtWrite = 2
	sbProtExec  = 4

	sbMaxVMAs = 1024

	// The runtime's mappings live in the kernel half, in
	// [sbMmapMin, sbMmapMax), so the whole lower half (but the kernel
	// image) is left to user programs. The runtime's address hints are all
	// in the lower half, so it falls back to asking without a hint, and its
	// amd64 arena index covers the upper half. Mappings are placed from
	// sbMmapBase upwards. The region is 4 TiB: eight PML4 slots whose PDPT
	// pages exist from boot, so the kernel half of every address space
	// can share them without the PML4 entries ever changing.
	sbMmapMin  = 0xffffc00000000000
	sbMmapBase = sbMmapMin
	sbMmapMax  = sbMmapMin + 4<<40
)

type sbVMA struct {
	start, end uintptr
	prot       uint32
}

type sbAddrSpace struct {
	mu   sbSpin
	pml4 uintptr // physical
	vmas [sbMaxVMAs]sbVMA
	n    int
	// committed counts frames currently backing runtime mappings.
	committed uint64
	// zaps counts the passes that took pages away (zap, mprotect),
	// changed under mu (an aligned word: readers see old or new).
	zaps uint64
}

var (
	sbAS       sbAddrSpace
	sbDmapBase uintptr // 0 until the kernel page tables are live
	sbDmapEnd  uintptr // physical addresses below this are direct-mapped

	sbDevMemStart uintptr = 4 << 30 // the direct map is uncached from here to 4 GiB
)

// sbWalk returns the direct-map address of the 4 KiB PTE for va, creating
// intermediate tables if create is set. It returns 0 if a table is missing
// (and create is unset), memory ran out, or a huge page covers va.
func sbWalk(pml4 uintptr, va uintptr, create bool) uintptr { return sbEntry(pml4, va, 0, create) }

// sbEntry is sbWalk down to the entry at level (0: the PTE, 1: the page
// directory's, which maps 2 MiB).
func sbEntry(pml4, va uintptr, level int, create bool) uintptr {
	table := pml4
	for l := 3; l > level; l-- {
		e := sbPhys(table) + ((va>>(12+9*uint(l)))&511)*8
		v := sbLoad64(e)
		if v&ptePresent == 0 {
			f := uintptr(0)
			if create {
				f = sbFrames.alloc()
			}
			if f == 0 {
				return 0
			}
			v = uint64(f) | ptePresent | pteWrite
			sbStore64(e, v)
		} else if v&pteHuge != 0 {
			return 0
		}
		table = uintptr(v & pteAddr)
	}
	return sbPhys(table) + ((va>>(12+9*uint(level)))&511)*8
}

// sbMapLarge maps one 2 MiB page. Boot only.
func sbMapLarge(pml4, va, pa uintptr, flags uint64) bool {
	e := sbEntry(pml4, va, 1, true)
	if e != 0 {
		sbStore64(e, uint64(pa)|flags|pteHuge|ptePresent)
	}
	return e != 0
}

// sbBuildKernelPageTables replaces the boot stub's identity map.
func sbBuildKernelPageTables(elf uintptr) {
	pml4 := sbFrames.alloc()
	if pml4 == 0 {
		sbFatal("out of memory building page tables")
	}
	dmapEnd := max(sbFrames.maxPhys, 4<<30)
	dmapEnd = (dmapEnd + (1 << 30) - 1) &^ ((1 << 30) - 1)
	sbDmapEnd = dmapEnd
	// Device registers below 4 GiB (the PCI hole, which on q35 starts at
	// 2 or 2.75 GiB with its ECAM window) are uncached: everything from
	// the end of the RAM below 4 GiB.
	lowEnd := uintptr(0)
	for i := 0; i < sbFrames.nranges; i++ {
		if e := sbFrames.ranges[i].end; e <= 4<<30 && e > lowEnd {
			lowEnd = e
		}
	}
	for pa := uintptr(0); pa < dmapEnd; pa += 2 << 20 {
		flags := uint64(pteWrite | pteNX | pteGlobal)
		if pa >= lowEnd && pa < 4<<30 {
			flags |= ptePCD
			sbDevMemStart = min(sbDevMemStart, pa)
		}
		if !sbMapLarge(pml4, sbDirectMap+pa, pa, flags) {
			sbFatal("out of memory building the direct map")
		}
	}
	// Kernel image: one 4 KiB mapping per page, permissions from the ELF
	// program headers.
	sbForEachLoad(elf, func(va, memsz uintptr, pflags uint32) {
		flags := sbProtFlags(pflags&2|pflags&1<<2) | pteGlobal // PF_W is PROT_WRITE, PF_X 1
		for p := va &^ (sbPageSize - 1); p < va+memsz; p += sbPageSize {
			pte := sbWalk(pml4, p, true)
			if pte == 0 {
				sbFatal("out of memory mapping the kernel image")
			}
			sbStore64(pte, uint64(p-sbKernelVBase)|flags)
		}
	})
	// The kernel half's PDPTs for the runtime's mappings, made now so the
	// top-level entries never change (see sbMmapMin).
	for va := uintptr(sbMmapMin); va < sbMmapMax; va += 1 << 39 {
		if sbEntry(pml4, va, 2, true) == 0 {
			sbFatal("out of memory building page tables")
		}
	}
	sbAS.pml4 = pml4
	sbWriteCR3(pml4)
	sbDmapBase = sbDirectMap
}

// sbForEachLoad calls fn for each PT_LOAD segment of the kernel ELF at
// elf: its address, size in memory and flags (PF_X = 1, PF_W = 2).
func sbForEachLoad(elf uintptr, fn func(va, memsz uintptr, flags uint32)) {
	phoff, phnum := uintptr(sbLoad64(elf+32)), uintptr(*(*uint16)(unsafe.Pointer(elf + 56)))
	for ph := elf + phoff; ph < elf+phoff+phnum*56; ph += 56 {
		if sbLoad32(ph) == 1 {
			fn(uintptr(sbLoad64(ph+16)), uintptr(sbLoad64(ph+40)), sbLoad32(ph+4))
		}
	}
}

// findVMA returns the index of the VMA containing va, or -1.
func (as *sbAddrSpace) findVMA(va uintptr) int {
	lo, hi := 0, as.n
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case va < as.vmas[m].start:
			hi = m
		case va >= as.vmas[m].end:
			lo = m + 1
		default:
			return m
		}
	}
	return -1
}

// free reports whether [start, end) overlaps no VMA.
func (as *sbAddrSpace) free(start, end uintptr) bool {
	for i := 0; i < as.n; i++ {
		if as.vmas[i].start < end && start < as.vmas[i].end {
			return false
		}
	}
	return true
}

// findGap returns the lowest free range of length n at or above sbMmapBase.
func (as *sbAddrSpace) findGap(n uintptr) uintptr {
	cand := uintptr(sbMmapBase)
	for i := 0; i < as.n; i++ {
		v := as.vmas[i]
		if v.end <= cand {
			continue
		}
		if v.start >= cand+n {
			break
		}
		cand = v.end
	}
	if cand+n > sbMmapMax {
		return 0
	}
	return cand
}

// insert adds a VMA for a free range, merging with equal neighbours.
func (as *sbAddrSpace) insert(start, end uintptr, prot uint32) bool {
	i := 0
	for i < as.n && as.vmas[i].start < start {
		i++
	}
	if i > 0 && as.vmas[i-1].end == start && as.vmas[i-1].prot == prot {
		as.vmas[i-1].end = end
		if i < as.n && as.vmas[i].start == end && as.vmas[i].prot == prot {
			as.vmas[i-1].end = as.vmas[i].end
			as.remove(i)
		}
		return true
	}
	if i < as.n && as.vmas[i].start == end && as.vmas[i].prot == prot {
		as.vmas[i].start = start
		return true
	}
	if as.n == sbMaxVMAs {
		return false
	}
	copy(as.vmas[i+1:as.n+1], as.vmas[i:as.n])
	as.vmas[i] = sbVMA{start, end, prot}
	as.n++
	return true
}

func (as *sbAddrSpace) remove(i int) {
	copy(as.vmas[i:as.n-1], as.vmas[i+1:as.n])
	as.n--
}

// carve removes [start, end) from the VMA list, splitting as needed. It
// fails only if a split needs a slot and the table is full.
func (as *sbAddrSpace) carve(start, end uintptr) bool {
	for i := 0; i < as.n; i++ {
		v := as.vmas[i]
		if end <= v.start || start >= v.end {
			continue
		}
		switch {
		case start <= v.start && end >= v.end:
			as.remove(i)
			i--
		case start <= v.start:
			as.vmas[i].start = end
		case end >= v.end:
			as.vmas[i].end = start
		default:
			if as.n == sbMaxVMAs {
				return false
			}
			copy(as.vmas[i+2:as.n+1], as.vmas[i+1:as.n])
			as.vmas[i].end = start
			as.vmas[i+1] = sbVMA{end, v.end, v.prot}
			as.n++
			return true
		}
	}
	return true
}

// zap unmaps every page in [start, end) and frees the frames, skipping
// absent page-table subtrees so huge PROT_NONE reservations cost little.
func (as *sbAddrSpace) zap(start, end uintptr) {
	// Only the runtime's mappings live in [sbMmapMin, sbMmapMax): the
	// kernel image and the AP trampoline below are not to be unmapped, and
	// the bound keeps va from wrapping past the top of the address space.
	start, end = max(start, sbMmapMin), min(end, sbMmapMax)
	as.zaps++ // under as.mu; sbRunUser reads it without
	va := start
	for va < end {
		// Find the deepest present table covering va.
		table := as.pml4
		skip := uintptr(0)
		for level := 3; level > 0; level-- {
			shift := 12 + 9*uint(level)
			v := sbLoad64(sbPhys(table) + ((va>>shift)&511)*8)
			if v&ptePresent == 0 || v&pteHuge != 0 {
				skip = uintptr(1) << shift
				break
			}
			table = uintptr(v & pteAddr)
		}
		if skip != 0 {
			va = (va + skip) &^ (skip - 1)
			continue
		}
		pte := sbPhys(table) + ((va>>12)&511)*8
		v := sbLoad64(pte)
		if v&ptePresent != 0 {
			sbStore64(pte, 0)
			sbInvlpg(va)
			sbFrames.release(uintptr(v & pteAddr))
			as.committed--
		}
		va += sbPageSize
	}
	sbShootdown(0, true)
}

func sbProtFlags(prot uint32) uint64 {
	f := uint64(ptePresent)
	if prot&sbProtWrite != 0 {
		f |= pteWrite
	}
	if prot&sbProtExec == 0 {
		f |= pteNX
	}
	return f
}

// mmap serves anonymous private mappings. Returns the address or a
// negative errno.
func (as *sbAddrSpace) mmap(hint, n uintptr, prot uint32, fixed bool) int64 {
	if n == 0 {
		return -sbEINVAL
	}
	n = (n + sbPageSize - 1) &^ (sbPageSize - 1)
	if n == 0 || n > sbMmapMax-sbMmapMin { // rounding wrapped, or cannot fit
		return -sbENOMEM
	}
	as.mu.lock()
	defer as.mu.unlock()
	var addr uintptr
	switch {
	case fixed:
		if hint&(sbPageSize-1) != 0 || hint < sbMmapMin || hint+n > sbMmapMax || hint+n < hint {
			return -sbEINVAL
		}
		as.zap(hint, hint+n)
		if !as.carve(hint, hint+n) {
			return -sbENOMEM
		}
		addr = hint
	case hint >= sbMmapMin && hint+n <= sbMmapMax && hint+n > hint && hint&(sbPageSize-1) == 0 && as.free(hint, hint+n):
		addr = hint
	default:
		addr = as.findGap(n)
		if addr == 0 {
			return -sbENOMEM
		}
	}
	if !as.insert(addr, addr+n, prot) {
		return -sbENOMEM
	}
	return int64(addr)
}

func (as *sbAddrSpace) munmap(addr, n uintptr) int64 {
	end := (addr + n + sbPageSize - 1) &^ (sbPageSize - 1)
	if addr&(sbPageSize-1) != 0 || n == 0 || end <= addr {
		return -sbEINVAL
	}
	as.mu.lock()
	defer as.mu.unlock()
	as.zap(addr, end)
	if !as.carve(addr, end) {
		return -sbENOMEM
	}
	return 0
}

// discard implements MADV_DONTNEED and MADV_FREE: the range stays mapped
// but its frames go back, so the next touch sees zeros.
func (as *sbAddrSpace) discard(addr, n uintptr) int64 {
	if addr&(sbPageSize-1) != 0 {
		return -sbEINVAL
	}
	end := (addr + n + sbPageSize - 1) &^ (sbPageSize - 1)
	as.mu.lock()
	as.zap(addr, end)
	as.mu.unlock()
	return 0
}

func (as *sbAddrSpace) mprotect(addr, n uintptr, prot uint32) int64 {
	if addr&(sbPageSize-1) != 0 {
		return -sbEINVAL
	}
	if n == 0 {
		return 0
	}
	end := (addr + n + sbPageSize - 1) &^ (sbPageSize - 1)
	if end <= addr {
		return -sbENOMEM
	}
	as.mu.lock()
	defer as.mu.unlock()
	for va := addr; va < end; va += sbPageSize {
		if as.findVMA(va) < 0 {
			return -sbENOMEM
		}
	}
	// Fail before changing anything if the table might not hold the result
	// (counted without merges): the VMAs of the range become one, plus the
	// parts of the first and the last outside the range.
	i, j := as.findVMA(addr), as.findVMA(end-1)
	slots := as.n - (j - i)
	if as.vmas[i].start < addr {
		slots++
	}
	if as.vmas[j].end > end {
		slots++
	}
	if slots > sbMaxVMAs {
		return -sbENOMEM
	}
	if !as.carve(addr, end) || !as.insert(addr, end, prot) {
		return -sbENOMEM
	}
	as.zaps++ // under as.mu; sbRunUser reads it without
	for va := addr; va < end; va += sbPageSize {
		pte := sbWalk(as.pml4, va, false)
		if pte != 0 && sbLoad64(pte)&ptePresent != 0 {
			if prot == 0 {
				sbFrames.release(uintptr(sbLoad64(pte) & pteAddr))
				as.committed--
				sbStore64(pte, 0)
			} else {
				sbStore64(pte, sbLoad64(pte)&pteAddr|sbProtFlags(prot))
			}
			sbInvlpg(va)
		}
	}
	sbShootdown(0, true)
	return 0
}

// Results of a fault; the two errors are their SIGSEGV si_code.
const (
	sbFaultOK     = iota
	sbFaultMapErr // no mapping: SEGV_MAPERR (1)
	sbFaultAccErr // mapping forbids the access: SEGV_ACCERR (2)
	sbFaultNoMem
)

// fault resolves a page fault at va. write and exec describe the access.
func (as *sbAddrSpace) fault(va uintptr, write, exec bool) int {
	as.mu.lock()
	defer as.mu.unlock()
	i := as.findVMA(va)
	if i < 0 {
		return sbFaultMapErr
	}
	prot := as.vmas[i].prot
	if prot == 0 || (write && prot&sbProtWrite == 0) || (exec && prot&sbProtExec == 0) {
		return sbFaultAccErr
	}
	pte := sbWalk(as.pml4, va, true)
	if pte == 0 {
		return sbFaultNoMem
	}
	if sbLoad64(pte)&ptePresent != 0 {
		return sbFaultOK // another CPU got there first
	}
	f := sbFrames.alloc()
	if f == 0 {
		return sbFaultNoMem
	}
	sbStore64(pte, uint64(f)|sbProtFlags(prot))
	as.committed++
	return sbFaultOK
}

// touch makes [va, va+n) present so the machine layer can read (or write)
// it without faulting inside a trap handler. It reports false if some page
// is not accessible.
func (as *sbAddrSpace) touch(va, n uintptr, write bool) bool { return as.present(va, n, write, true) }

// present reports whether [va, va+n) is present (and writable, with
// write), faulting pages in with fault; without, it takes no lock and
// changes nothing (used while reporting a crash).
func (as *sbAddrSpace) present(va, n uintptr, write, fault bool) bool {
	if va+n < va {
		return false
	}
	// The direct map and the kernel image are mapped from boot on, never
	// demand-paged.
	if n == 0 || va >= sbDirectMap && va+n <= sbDirectMap+sbDmapEnd || va >= sbKernelStart && va+n <= sbKernelEnd {
		return true
	}
	for p := va &^ (sbPageSize - 1); p < va+n; p += sbPageSize {
		pte := sbWalk(as.pml4, p, false)
		if pte != 0 {
			v := sbLoad64(pte)
			if v&ptePresent != 0 && (!write || v&pteWrite != 0) {
				continue
			}
		}
		if !fault || as.fault(p, write, false) != sbFaultOK {
			return false
		}
	}
	return true
}
