package proc

import (
	"math/rand/v2"
	"sync/atomic"

	"shortbread/kernel/mm"
)

// Address-space layout randomisation, as Linux's (fs/binfmt_elf.c,
// arch/x86/mm/mmap.c). Exec randomises a new program's stack top, the
// first stack pointer within its page, the mmap area's top (and so the
// loader and every mapping placed for it), a position-independent
// program's base and the vDSO; with randomize_va_space 2 also where the
// program break starts. ADDR_NO_RANDOMIZE in the exec'ing process's
// personality (setarch -R) or randomize_va_space 0 (norandmaps on the
// command line) gives the fixed layout, the same at every exec.

// randomizeVASpace is /proc/sys/kernel/randomize_va_space (Linux's
// default 2); see SetRandomizeVASpace.
var randomizeVASpace atomic.Int32

func init() { randomizeVASpace.Store(2) }

// RandomizeVASpace is /proc/sys/kernel/randomize_va_space.
func RandomizeVASpace() int { return int(randomizeVASpace.Load()) }

// SetRandomizeVASpace sets /proc/sys/kernel/randomize_va_space: 0 no
// randomisation, 1 all but the program break, 2 all. Linux takes any
// int (proc_dointvec): other nonzero values randomise as 1 does when
// below 2 and as 2 does above.
func SetRandomizeVASpace(n int32) { randomizeVASpace.Store(n) }

// Personality flags (include/uapi/linux/personality.h): exec randomises
// nothing under ADDR_NO_RANDOMIZE, and a set-ID exec clears
// PER_CLEAR_ON_SETID's flags (READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE,
// ADDR_COMPAT_LAYOUT, MMAP_PAGE_ZERO).
const (
	addrNoRandomize = 0x0040000
	perClearOnSetID = 0x0400000 | addrNoRandomize | 0x0200000 | 0x0100000
)

const (
	// stackRandPages bounds the stack top's random drop: Linux's
	// STACK_RND_MASK for 64-bit programs, 22 bits of pages (16 GiB).
	stackRandPages = 1 << 22
	// mmapRandPages bounds the mmap area's: mmap_rnd_bits 28 (1 TiB).
	mmapRandPages = 1 << 28
	// brkRandPages bounds the break's: randomize_page's 32 MiB.
	brkRandPages = 32 << 20 / mm.PageSize
	// spRandBytes bounds the first stack pointer's drop within the stack
	// (arch_align_stack's 8 KiB).
	spRandBytes = 8192
)

// layout is where exec puts a new program's parts.
type layout struct {
	random    bool    // randomise the stack, mmap area, PIE base, vDSO
	randomBrk bool    // and the program break
	stackTop  uintptr // the stack's top (its highest address, exclusive)
	mmapTop   uintptr // the top of the mmap area (Space.SetMmapTop)
}

// newLayout draws the layout for a program exec'd by a process of the
// given personality. Without randomisation it is the fixed one: the
// stack at stackTop and the mmap area 1 GiB and RLIMIT_STACK's usual
// 8 MiB below it (room for the stack's largest growth, maxStack).
func newLayout(persona uint32) layout {
	mode := RandomizeVASpace()
	l := layout{random: mode != 0 && persona&addrNoRandomize == 0}
	l.randomBrk = l.random && mode > 1
	l.stackTop, l.mmapTop = stackTop, mmapTop
	if l.random {
		// The mmap area keeps the stack's largest drop below the fixed
		// stack top free, so the stack may grow as far wherever it lands
		// (mmap_base's stack_maxrandom_size pad).
		l.stackTop -= uintptr(rand.IntN(stackRandPages)) * mm.PageSize
		l.mmapTop -= (stackRandPages + uintptr(rand.IntN(mmapRandPages))) * mm.PageSize
	}
	return l
}

// draw returns a random number below n if the layout is random, else 0.
func (l layout) draw(n int) uintptr {
	if !l.random {
		return 0
	}
	return uintptr(rand.IntN(n))
}
