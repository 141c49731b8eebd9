//go:build shortbread

// Shortbread machine layer: per-CPU data and descriptor tables.
//
// Each CPU's sbCPU is reached through the GS base: the runtime uses FS
// for its TLS and never touches GS.

package runtime

import (
	"internal/abi"
	"internal/runtime/atomic"
	"unsafe"
)

type sbCPU struct {
	self     uintptr // GS:0
	scratch  uintptr // GS:8
	stackTop uintptr // GS:16
	trapG    uintptr // GS:24, a *g kept as uintptr: no write barriers here
	// tls is the FS block while a trap handler runs: tls[0] = trapG, so
	// FS:-8 (where Go code finds g) names the trap g.
	tls      [2]uintptr
	cur      int32 // index in sbThreads of the running thread
	idle     int32 // this CPU's idle thread
	id       int32
	apicID   uint32
	online   uint32
	resched  bool  // set by timer or IPI: consider switching threads on exit
	sliceEnd int64 // when the running thread's time slice ends
	// sliceStart is when the running thread came to this CPU; rtUsed is
	// the time real-time threads ran here in the period that began at
	// rtPeriod, up to rtSince, the last charge. See sbRTCharge.
	sliceStart, rtPeriod, rtUsed, rtSince int64
	timerAt                               int64 // deadline the timer interrupt is armed for, 0 after it fired
	// nextDeadline is the earliest deadline of the threads that blocked
	// on this CPU (sbSetDeadlineLocked), or earlier; written under
	// sbSched.mu, read by this CPU without it.
	nextDeadline int64
	// kickAt is when this CPU sends the IPI it put off for a woken
	// thread (sbKickLocked), or 0.
	kickAt int64
	// idleClock is the time this CPU's idle thread has run, in one word
	// that machine.IdleTime reads without the scheduler's lock: while the
	// CPU runs a thread, the total (>= 0); while it is idle, -1 minus the
	// time the idle stint would have started at had all its idle time
	// been one stint (so the total is now - (-1 - idleClock)).
	idleClock int64
	// intr counts the interrupts taken per vector from sbVecIRQBase on
	// (/proc/interrupts).
	intr    [sbVecCount - sbVecIRQBase]uint64
	tlbSeen uint64  // last TLB shootdown generation this CPU applied
	tlbAsk  uint32  // a shootdown waits for this CPU to apply it (sbShootdown)
	cr3     uintptr // the address space loaded on this CPU
	leaving uintptr // the one sbLoadCR3 is switching away from, until loaded
	userGS  uint64  // KERNEL_GS_BASE, for sbSetUserGS; an entry from ring 3 may swap in a base the program set (WRGSBASE): its readers refresh this

	// inUser is 1 while this CPU may run ring 3 (set on the way out of a
	// trap to ring 3, cleared on the way to ring 0); tlbStale marks a
	// shootdown that passed it by meanwhile (sbShootdown, sbUserGate).
	inUser, tlbStale uint32

	profNext int64 // next sample with the timer-interrupt source (sb_prof.go)

	// Hard-lockup watchdog (sb_watchdog.go): what this CPU's watcher saw
	// of it, and the interrupted frame the NMI stub copies when asked.
	wdSeen                 uint64
	wdStuck, wdCheck       int64
	wdTold                 bool
	nmiWant, nmiSeq, wdSeq uint32
	nmiRegs                [5]uint64 // rip, cs, rflags, rsp, rbp

	gdt  [10]uint64
	tss  [104]byte
	gdtr [10]byte
	g    g
}

var (
	sbCPUs       [sbMaxCPU]sbCPU
	sbNCPU       int32 = 1
	sbTrapStacks [sbMaxCPU][sbTrapStackSize]byte
	sbDFStacks   [sbMaxCPU][8192]byte // IST2; the NMI stub's CPU is its offset here >> 13
	sbIdleStacks [sbMaxCPU][4096]byte
	sbIDT        [256][2]uint64
	sbIDTR       [10]byte
)

func sbGSBase() uintptr
func sbVectors() // the entry stubs, 16 bytes each (sb_amd64.s)

func sbThisCPU() *sbCPU { return (*sbCPU)(unsafe.Pointer(sbGSBase())) }

// sbBuildIDT fills the shared IDT: every vector an interrupt gate (IF
// cleared on entry) on IST1, the CPU's trap stack; double fault and NMI on
// IST2 so they work even when the trap stack is what broke.
func sbBuildIDT() {
	for v := 0; v < sbVecCount; v++ {
		stub := uint64(abi.FuncPCABI0(sbVectors)) + uint64(v)*16
		ist := uint64(1)
		if v == 2 || v == 8 {
			ist = 2
		}
		lo := stub&0xffff | sbKernelCS<<16 | ist<<32 | 0x8E<<40 | (stub>>16)&0xffff<<48
		sbIDT[v] = [2]uint64{lo, stub >> 32}
	}
	*(*uint16)(unsafe.Pointer(&sbIDTR[0])) = uint16(len(sbIDT)*16 - 1)
	*(*uint64)(unsafe.Pointer(&sbIDTR[2])) = uint64(uintptr(unsafe.Pointer(&sbIDT)))
}

// sbInitTrapG gives c its trap stack, whose top (where frames start) is
// 64-byte aligned, so the frame (whose size is a multiple of 64) and its
// FPU area are too, and the trap g that runs on it.
func sbInitTrapG(c *sbCPU) {
	lo := uintptr(unsafe.Pointer(&sbTrapStacks[c.id]))
	c.stackTop = (lo + sbTrapStackSize) &^ 63
	c.g.stack = stack{lo: lo, hi: c.stackTop}
	c.g.stackguard0, c.g.stackguard1 = lo+sbStackGuard, lo+sbStackGuard
	c.trapG = uintptr(unsafe.Pointer(&c.g))
	c.tls[0] = c.trapG
}

// XSAVE state: sbXSave is set when the CPUs save x87, SSE and AVX state
// with XSAVE (sbXCR0 names the components); otherwise FXSAVE saves x87
// and SSE and programs see no AVX.
var (
	sbXSave bool
	sbXCR0  uint64
	sbFSGS  bool // RDFSBASE/WRFSBASE enabled (CR4.FSGSBASE): the trap path's FS switches
)

// sbFPUInit enables XSAVE for x87, SSE and AVX on this CPU if the
// processor has them and their image fits the frame's FPU area. The boot
// CPU decides; the others follow, before they run any Go code that could
// use AVX (the runtime picks its memmove by what XCR0 enables).
func sbFPUInit(boot bool) {
	const osxsave = 1 << 18
	if boot {
		_, _, c, _ := sbCpuid(1, 0)
		if c&(1<<26) == 0 || c&(1<<28) == 0 { // XSAVE, AVX
			return
		}
		lo, _, _, _ := sbCpuid(0xD, 0)
		if lo&7 != 7 {
			return
		}
		sbWriteCR4(sbReadCR4() | osxsave)
		sbXsetbv(0, 7)
		if _, size, _, _ := sbCpuid(0xD, 0); size > sbFPUSize {
			sbXsetbv(0, 3)
			sbWriteCR4(sbReadCR4() &^ osxsave)
			return
		}
		sbXCR0, sbXSave = 7, true
		return
	}
	if sbXSave {
		sbWriteCR4(sbReadCR4() | osxsave)
		sbXsetbv(0, sbXCR0)
	}
}

// sbFPUSanitize makes an FPU image from user memory safe to restore:
// XRSTOR and FXRSTOR fault (in the kernel) on reserved MXCSR bits, on
// state components XCR0 does not enable and on a non-zero compaction or
// reserved header field.
func sbFPUSanitize(fpu *[sbFPUSize]byte) {
	*(*uint32)(unsafe.Pointer(&fpu[24])) &= 0xffbf
	*(*uint64)(unsafe.Pointer(&fpu[512])) &= sbXCR0
	// The rest of the XSAVE header, as words (a byte loop cost 10%).
	*(*[7]uint64)(unsafe.Pointer(&fpu[520])) = [7]uint64{}
}

// sbFPUReset makes fpu the initial FPU state: with XSAVE, a header that
// marks every component as in its initial state (only MXCSR is read from
// the image); with FXSAVE, the reset control words and zeroed registers.
func sbFPUReset(fpu *[sbFPUSize]byte) {
	if sbXSave {
		*(*uint64)(unsafe.Pointer(&fpu[512])) = 0 // XSTATE_BV
		*(*uint32)(unsafe.Pointer(&fpu[24])) = 0x1f80
		return
	}
	*fpu = [sbFPUSize]byte{}
	*(*uint16)(unsafe.Pointer(&fpu[0])) = 0x37f
	*(*uint32)(unsafe.Pointer(&fpu[24])) = 0x1f80
}

// sbCPUInit loads this CPU's GDT, TSS, IDT and GS base and enables SYSCALL.
func sbCPUInit(id int32) {
	c := &sbCPUs[id]
	c.self = uintptr(unsafe.Pointer(c))
	c.id = id
	// FSGSBASE before the IDT below: CPU 0 decides, the others follow.
	// User programs may use the instructions too, as on Linux.
	if max, _, _, _ := sbCpuid(0, 0); id == 0 && max >= 7 {
		_, b, _, _ := sbCpuid(7, 0)
		sbFSGS = b&1 != 0
	}
	if sbFSGS {
		sbWriteCR4(sbReadCR4() | 1<<16)
	}
	sbFPUInit(id == 0)
	sbInitTrapG(c)

	// TSS: IST1 = trap stack, IST2 = double-fault stack (offsets per
	// Intel SDM vol. 3 §8.7); no I/O bitmap.
	tss := uintptr(unsafe.Pointer(&c.tss))
	*(*uint64)(unsafe.Pointer(tss + 36)) = uint64(c.stackTop)
	*(*uint64)(unsafe.Pointer(tss + 44)) = uint64(uintptr(unsafe.Pointer(&sbDFStacks[id])) + 8192)
	*(*uint16)(unsafe.Pointer(tss + 102)) = 104

	c.gdt[1] = 0x00CF9A000000FFFF // 0x08 kernel code, 32-bit (unused)
	c.gdt[2] = 0x00AF9A000000FFFF // 0x10 kernel code, 64-bit
	c.gdt[3] = 0x00CF92000000FFFF // 0x18 kernel data
	c.gdt[4] = 0x00CFFA000000FFFF // 0x20 user code, 32-bit
	c.gdt[5] = 0x00CFF2000000FFFF // 0x28 user data
	c.gdt[6] = 0x00AFFA000000FFFF // 0x30 user code, 64-bit
	tb := uint64(tss)
	c.gdt[8] = 103 | (tb&0xffffff)<<16 | 0x89<<40 | (tb>>24)&0xff<<56
	c.gdt[9] = tb >> 32
	*(*uint16)(unsafe.Pointer(&c.gdtr[0])) = uint16(len(c.gdt)*8 - 1)
	*(*uint64)(unsafe.Pointer(&c.gdtr[2])) = uint64(uintptr(unsafe.Pointer(&c.gdt)))
	sbLoadTables(uintptr(unsafe.Pointer(&c.gdtr)), uintptr(unsafe.Pointer(&sbIDTR)), sbTSSSel)
	c.cr3 = sbReadCR3()
	sbWrmsr(0xC0000101, uint64(c.self)) // GS base
	sbWrmsr(0xC0000102, 0)              // kernel GS base (for SWAPGS, later)
	if _, _, _, d := sbCpuid(0x80000001, 0); d&(1<<27) != 0 {
		sbWrmsr(0xC0000103, uint64(id)) // TSC_AUX: the vDSO's getcpu reads it (RDTSCP, RDPID)
	}

	// SYSCALL: EFER.SCE (and NXE, already set by the stub); STAR selectors
	// (kernel CS, and user CS32 for SYSRET); LSTAR; mask IF, DF, TF, AC.
	sbWrmsr(0xC0000080, sbRdmsr(0xC0000080)|1|1<<11)
	sbWrmsr(0xC0000081, uint64(sbKernelCS)<<32|uint64(0x20|3)<<48)
	sbWrmsr(0xC0000082, uint64(abi.FuncPCABI0(sbSyscallEntry)))
	sbWrmsr(0xC0000084, 0x40700)
}

var sbTLBGen uint64 // shootdown generation; each CPU's tlbSeen catches up

// sbShootdown makes other CPUs drop stale TLB entries after mappings were
// removed, and waits until they have, so freed frames cannot be reached
// through an old translation. Only CPUs that have root loaded (running it,
// keeping it after a system call, or still switching away from it) can
// hold a user space's translations;
// any other CPU dropped them when it loaded another CR3 (there is no
// PCID); root 0 means every CPU (kernel mappings). Of those, only a CPU
// in ring 3 uses them: one in the kernel or idle (Linux's lazy TLB
// mode) is only marked stale and flushes on its way back to ring 3
// (sbUserGate), unless all is set (the page tables themselves are
// going, which any CPU may walk). A CPU waited for is asked (tlbAsk);
// one spinning with interrupts off (on a machine-layer lock, or here)
// answers from its spin loop, so waiting while holding sbAS.mu cannot
// deadlock. The caller's own TLB is its own business, but starting a
// shootdown applies no other (it once counted as if it did, and ended a
// concurrent sbReleaseCR3's wait while this CPU kept the root loaded).
func sbShootdown(root uintptr, all bool) {
	if sbNCPU == 1 {
		return
	}
	me := sbThisCPU()
	// The locked add orders the caller's page-table stores before the
	// reads of c.cr3 below (sbLoadCR3 publishes c.cr3 before loading).
	gen := atomic.Xadd64(&sbTLBGen, 1)
	var sent [sbMaxCPU]bool
	for i := int32(0); i < sbNCPU; i++ {
		c := &sbCPUs[i]
		if c == me || atomic.Load(&c.online) == 0 || root != 0 && atomic.Loaduintptr(&c.cr3) != root && atomic.Loaduintptr(&c.leaving) != root {
			continue
		}
		if root != 0 && !all {
			// Marked before inUser is read, and sbUserGate sets inUser
			// before it reads the mark (both locked): either the CPU
			// finds the mark or this sees it in ring 3.
			atomic.Store(&c.tlbStale, 1)
			if atomic.Load(&c.inUser) == 0 {
				continue
			}
		}
		atomic.Store(&c.tlbAsk, 1)
		sbSendIPI(c.apicID, sbVecTLB)
		sent[i] = true
	}
	for i := int32(0); i < sbNCPU; i++ {
		c := &sbCPUs[i]
		for sent[i] && atomic.Load64(&c.tlbSeen) < gen {
			sbPause()
			sbServiceTLB() // c may be waiting for this CPU too
		}
	}
}

// sbUserGate runs last on every way out of a trap: on the way to ring 3
// the CPU declares it may use user translations and applies a shootdown
// that passed it by while it did not (sbShootdown); on the way to ring 0
// it declares it uses none. Only the first needs a locked instruction (a
// 1 still seen after the plain store of 0 costs an IPI, no more), so a
// system call's two traps pay one.
func sbUserGate(c *sbCPU, f *sbFrame) {
	if f.cs&3 == 0 {
		c.inUser = 0
		return
	}
	if c.inUser == 0 {
		atomic.Store(&c.inUser, 1)
		if atomic.Load(&c.tlbStale) != 0 {
			atomic.Store(&c.tlbStale, 0)
			sbWriteCR3(sbReadCR3())
		}
	}
}

// sbServiceTLB flushes this CPU's TLB if a shootdown asked it to, and
// leaves an address space being released (sbReleaseCR3). The request is
// taken before the generation is read (atomic.Store is an XCHG, a full
// fence on amd64: a plain store could pass the load and wipe out a request
// made in between): a shootdown asks after its generation exists, so the
// one read here covers every request taken.
func sbServiceTLB() {
	if sbNCPU == 1 {
		return
	}
	me := sbThisCPU()
	if atomic.Load(&me.tlbAsk) == 0 {
		return
	}
	atomic.Store(&me.tlbAsk, 0)
	gen := atomic.Load64(&sbTLBGen)
	if r := atomic.Loaduintptr(&sbReleasing); r != 0 && me.cr3 == r {
		sbLoadCR3(me, sbAS.pml4)
	} else {
		sbWriteCR3(sbReadCR3())
	}
	atomic.Store64(&me.tlbSeen, gen)
}

// A CPU keeps a user address space loaded after the thread leaves user
// mode (the kernel half and the kernel's low ranges are in every space),
// so a system call costs no CR3 switch when the thread goes back. Before
// a space's page tables are freed, sbReleaseCR3 makes every CPU that
// still has it loaded switch to the kernel's: a CPU walking a freed
// PML4 on its next TLB miss would fault on every kernel address.
var (
	sbReleaseLock sbSpin
	sbReleasing   uintptr // the root being released, during sbReleaseCR3
)

func sbReleaseCR3(c *sbCPU, root uintptr) {
	sbReleaseLock.lock()
	atomic.Storeuintptr(&sbReleasing, root)
	if c.cr3 == root {
		sbLoadCR3(c, sbAS.pml4)
	}
	sbShootdown(root, true)
	atomic.Storeuintptr(&sbReleasing, 0)
	sbReleaseLock.unlock()
}
