// Package mm manages user address spaces: x86-64 page tables for the lower
// half, the mappings (VMAs) of a program, demand paging, and copying to
// and from user memory, which turns every bad user pointer into EFAULT.
// Physical memory is reached through the Phys interface, so everything
// here runs under go test with a simulated machine.
//
// Page-table format: Intel SDM vol. 3 §4.5 (4-level paging).
package mm

import (
	"sync/atomic"
	"unsafe"
)

// Phys is the physical memory the page tables live in.
type Phys interface {
	// Alloc returns a zeroed 4 KiB frame, or 0 when memory is exhausted.
	Alloc() uintptr
	// Free returns a frame.
	Free(pa uintptr)
	// Page returns the frame at pa as kernel-addressable memory.
	Page(pa uintptr) *[PageSize]byte
}

// DirectPhys is a Phys whose frames all lie at one offset in the
// kernel's address space (the machine's direct map): Page(pa) is the
// memory at DirectMap() plus pa. The copies between the kernel and user
// memory then walk page tables and reach frames with no call per table
// (Space.page).
type DirectPhys interface {
	Phys
	DirectMap() unsafe.Pointer
}

// PageSize is the size of a page and a frame.
const PageSize = 4096

// Page-table entry bits.
const (
	PTEPresent = 1 << 0
	PTEWrite   = 1 << 1
	PTEUser    = 1 << 2
	// PTEAccessed is set by the CPU when it first uses an entry; an entry
	// that fault-around made carries none until the program touches it.
	PTEAccessed = 1 << 5
	PTEHuge     = 1 << 7
	PTENX       = 1 << 63
	pteAddr     = 0x000ffffffffff000
	// pteCOW is a software bit (available to the OS, §4.5 table 4-19):
	// the page is shared copy-on-write and mapped read-only.
	pteCOW = 1 << 9
	// pteShared marks a page of shared anonymous memory (an Shm owns the
	// frame; unmapping never frees it).
	pteShared = 1 << 10
	// pteNone marks a page made inaccessible by PROT_NONE: not present
	// (every access faults), but the frame stays, for a later mprotect
	// to give back. The CPU ignores the other bits of a non-present entry.
	pteNone = 1 << 11
)

// holdsFrame reports whether a PTE maps a frame, accessible or not.
func holdsFrame(pte uint64) bool { return pte&(PTEPresent|pteNone) != 0 }

// UserTop is the end of the user half of the address space.
const UserTop = 0x0000800000000000

func entries(p Phys, pa uintptr) *[512]uint64 {
	return (*[512]uint64)(unsafe.Pointer(p.Page(pa)))
}

// walk returns the PTE slot for va, creating tables if create is set. It
// returns nil if a table is missing, memory ran out, or va is covered by a
// shared kernel entry (one without the user bit), which user mappings must
// never change.
func walk(p Phys, root uintptr, va uintptr, create bool) *uint64 {
	table := root
	for level := 3; level > 0; level-- {
		e := &entries(p, table)[(va>>(12+9*uint(level)))&511]
		v := atomic.LoadUint64(e)
		if v&PTEPresent == 0 {
			if !create {
				return nil
			}
			f := p.Alloc()
			if f == 0 {
				return nil
			}
			// Faults run concurrently (under the space's read lock):
			// the table goes in only if no other fault put one there.
			nv := uint64(f) | PTEPresent | PTEWrite | PTEUser
			if atomic.CompareAndSwapUint64(e, v, nv) {
				v = nv
				tableFrames.Add(1)
			} else {
				p.Free(f)
				v = atomic.LoadUint64(e)
			}
		} else if v&PTEUser == 0 || v&PTEHuge != 0 {
			return nil
		}
		table = uintptr(v & pteAddr)
	}
	return &entries(p, table)[(va>>12)&511]
}

// freeTables frees the user-owned page tables below root (not root
// itself), leaving shared kernel entries alone. Mapped frames must have
// been released before.
func freeTables(p Phys, table uintptr, level int) {
	t := entries(p, table)
	n := 512
	if level == 4 {
		n = 256 // the lower half; the upper half is the shared kernel
	}
	for i := 0; i < n; i++ {
		e := t[i]
		if e&PTEPresent == 0 || e&PTEUser == 0 || e&PTEHuge != 0 {
			continue
		}
		if level > 2 {
			freeTables(p, uintptr(e&pteAddr), level-1)
		}
		if level > 1 {
			p.Free(uintptr(e & pteAddr))
			tableFrames.Add(-1)
		}
		t[i] = 0
	}
}

// leafTables calls fn for each leaf page table that exists under
// [start, end), with va the address of ptes[0] and ptes the table's
// entries inside the range. Missing tables are skipped whole at every
// level (a missing PML4 entry skips 512 GiB), so a pass over a huge,
// sparse range costs what the space maps, not its length in pages.
// Entries of the shared kernel tables are never visited.
func leafTables(p Phys, root, start, end uintptr, fn func(va uintptr, ptes []uint64)) {
	for va := start; va < end; {
		table, level := root, 3
		for ; level > 0; level-- {
			v := atomic.LoadUint64(&entries(p, table)[(va>>(12+9*uint(level)))&511])
			if v&PTEPresent == 0 || v&PTEUser == 0 || v&PTEHuge != 0 {
				break
			}
			table = uintptr(v & pteAddr)
		}
		// What the missing entry covers, or the leaf table: its 512
		// entries go to fn in one call.
		span := uintptr(1) << (12 + 9*uint(max(level, 1)))
		next := (va | (span - 1)) + 1
		if next <= va || next > end { // the top of the address space, or the range's end
			next = end
		}
		if level == 0 {
			t := entries(p, table)
			i := (va >> 12) & 511
			fn(va, t[i:i+(next-va)/PageSize])
		}
		va = next
	}
}
