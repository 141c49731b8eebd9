//go:build shortbread

// Shortbread machine layer: the hook surface.
//
// shortbread/kernel/machine reaches the machine layer only through the
// functions below (go:linkname) and private system calls (sbSysBase + n)
// for what must run in trap context, under locks taken with interrupts off.

package runtime

import (
	"internal/runtime/atomic"
	"internal/runtime/sys"
	"unsafe"
)

// Private system calls (served in sbSyscall).
const (
	sbSysBase      = 0x5300
	sbSysIRQOpen   = sbSysBase + 0  // (irq, flags) -> 0: vector sbVecIRQBase+irq is routed, for sbHookWaitInterrupt
	sbSysProfStart = sbSysBase + 2  // (buffers, n, hz, nmiPin) -> source or errno
	sbSysProfStop  = sbSysBase + 3  // () -> 0
	sbSysIOAPIC    = sbSysBase + 4  // (physical address) -> 0: the MADT's I/O APIC
	sbSysRunUser   = sbSysBase + 5  // (regs, cr3) -> 0 when the program traps back (sbTrap calls sbRunUser first)
	sbSysFlushTLB  = sbSysBase + 7  // (root, how, start, end) -> 0: CPUs using root (0: every CPU) drop non-global translations (how 2: except this one; how 3: this one only those of [start, end) when they are few); how 1: every CPU stops using root as CR3
	sbSysKick      = sbSysBase + 8  // (regs) -> 0: hurry a kicked user thread back
	sbSysDebugSpin = sbSysBase + 10 // (ns) -> 0: sbDebugSpin

	// sbSysIRQOpen flags: an MSI vector has no I/O APIC pin; else the
	// pin's redirection entry bits: level-triggered (a PCI INTx pin,
	// masked from its interrupt until the driver's next wait) and active
	// low (PCI INTx on q35). Edge and active high are the ISA defaults.
	sbIRQNoPin        = 1
	sbIOAPICLevel     = 1 << 15
	sbIOAPICActiveLow = 1 << 13
)

var (
	sbMBI                      uintptr // physical address of the multiboot2 information
	sbStartTSC                 uint64  // TSC when the boot stub started
	sbKernelStart, sbKernelEnd uintptr
	sbIRQEntry                 [24]uint32 // the pin's redirection entry (low word, unmasked)
	sbIRQLock                  sbSpin     // interrupts off; guards sbIRQPending and level pins' masks
	sbIRQPending               [24]bool   // an interrupt since the driver last looked
)

// sbIRQ records a device interrupt and wakes the netpoller, which in turn
// readies the driver goroutine waiting on the vector.
func sbIRQ(irq int) {
	sbIRQLock.lock()
	// Masked under the lock sbIRQTake unmasks under, or a read in between
	// leaves the pin masked with nothing pending. Then sbIOAPICMu.
	if sbIRQEntry[irq]&sbIOAPICLevel != 0 {
		sbIOAPICRoute(irq, sbIRQEntry[irq]|1<<16)
	}
	sbIRQPending[irq] = true
	sbIRQLock.unlock()
	atomic.Or(&sbIRQEdges, 1<<irq)
	atomic.Xadd(&sbPollSeq, 1)
	sbFutexWake(uintptr(unsafe.Pointer(&sbPollSeq)), 1<<31, 0)
}

// The runtime's netpoller (netpoll_epoll.go is left out of the kernel by
// netpoll_epoll.diff). It serves no fd: a driver's goroutine waits on its
// vector's pollDesc in sbIRQPoll (sbHookWaitInterrupt). A blocking netpoll
// sleeps on the futex word sbPollSeq, which every interrupt and
// netpollBreak changes after what they report, so none is missed between
// netpoll's look and its sleep. An edge is only a wake-up: sbIRQPending
// says whether the vector had an interrupt, so one that comes before the
// driver waits is found by its first look.
var (
	sbPollSeq      uint32
	sbIRQEdges     uint32        // bit irq: an interrupt since netpoll last looked
	sbIRQPoll      [24]pollDesc  // not in the heap, as pollcache's are
	netpollWakeSig atomic.Uint32 // a netpollBreak no blocking netpoll has taken
)

func netpollinit()                                 {}
func netpollIsPollDescriptor(uintptr) bool         { return false }
func netpollarm(pd *pollDesc, mode int)            { throw("runtime: unused") }
func netpollclose(fd uintptr) uintptr              { return 0 }
func netpollopen(fd uintptr, pd *pollDesc) uintptr { return sbEPERM } // as epoll answers for a regular file

// sbHookWaitInterrupt blocks until vector irq has had an interrupt since
// it last returned, the way internal/poll reads a non-blocking fd: clear
// the pollDesc's readiness, look, then park until netpoll readies it.
// False once sbHookCloseInterrupt closed the vector.
//
//go:linkname sbHookWaitInterrupt shortbread/kernel/machine.waitInterrupt
func sbHookWaitInterrupt(irq int) bool {
	pd := &sbIRQPoll[irq]
	for poll_runtime_pollReset(pd, 'r') == pollNoError {
		if sbIRQTake(irq) {
			return true
		}
		poll_runtime_pollWait(pd, 'r')
	}
	return false
}

// sbHookCloseInterrupt wakes vector irq's waiter for good (the kernel
// closes a vector once).
//
//go:linkname sbHookCloseInterrupt shortbread/kernel/machine.closeInterrupt
func sbHookCloseInterrupt(irq int) { poll_runtime_pollUnblock(&sbIRQPoll[irq]) }

// sbIRQTake reports whether vector irq had an interrupt since it last
// looked; a level-triggered pin, masked since its interrupt, is unmasked.
func sbIRQTake(irq int) bool {
	mp := acquirem() // no preemption at a stack check with interrupts off
	fl := sbIntrOff()
	sbIRQLock.lock()
	v := sbIRQPending[irq]
	sbIRQPending[irq] = false
	if v && sbIRQEntry[irq]&sbIOAPICLevel != 0 {
		sbIOAPICRoute(irq, sbIRQEntry[irq]) // unmask, under the lock: see sbIRQ
	}
	sbIRQLock.unlock()
	sbIntrRestore(fl)
	releasem(mp)
	return v
}

func netpollBreak() {
	if netpollWakeSig.CompareAndSwap(0, 1) {
		atomic.Xadd(&sbPollSeq, 1)
		futexwakeup(&sbPollSeq, 1<<31-1)
	}
}

// netpoll readies the goroutines waiting on vectors that had an interrupt since
// it last looked; with a delay, it sleeps first if there are none and no
// netpollBreak is pending (only a blocking netpoll takes one, as with
// epoll's eventfd: one taken by a non-blocking poll would leave the
// sleeping one with a stale timeout).
func netpoll(delay int64) (gList, int32) {
	seq := atomic.Load(&sbPollSeq)
	toRun, delta := sbPollReady()
	if delay != 0 && toRun.empty() && netpollWakeSig.Swap(0) == 0 {
		futexsleep(&sbPollSeq, seq, min(delay, 1e15))
		netpollWakeSig.Store(0)
		toRun, delta = sbPollReady()
	}
	return toRun, delta
}

func sbPollReady() (toRun gList, delta int32) {
	if atomic.Load(&sbIRQEdges) == 0 {
		return toRun, 0
	}
	for edges := atomic.Xchg(&sbIRQEdges, 0); edges != 0; edges &= edges - 1 {
		delta += netpollready(&toRun, &sbIRQPoll[sys.TrailingZeros32(edges)], 'r')
	}
	return toRun, delta
}

//go:linkname sbHookSetWakeDelay shortbread/kernel/machine.setWakeDelay
func sbHookSetWakeDelay(ns int64) { sbWakeDelayNs = ns }

// sbBootConfig mirrors machine.bootConfig (the layouts must match): what
// the machine layer settled before the runtime started, read once.
type sbBootConfig struct {
	bootInfo, directMap, physEnd, deviceMemStart, kernelPML4 uintptr
	trampSrc, trampLen                                       uintptr
	startTSC, tscHz, xFeatures                               uint64
	bootAPICID                                               uint32
	x2APIC                                                   bool
}

//go:linkname sbHookBootConfig shortbread/kernel/machine.readBootConfig
func sbHookBootConfig(c *sbBootConfig) {
	*c = sbBootConfig{sbMBI, sbDmapBase, sbDmapEnd, sbDevMemStart, sbAS.pml4, sbTrampSrc, sbTrampLen, sbStartTSC, sbTSCHz, sbXCR0, sbBootCPU, sbX2APIC}
}

//go:linkname sbHookExit shortbread/kernel/machine.Exit
func sbHookExit(status uint8) { sbPowerOff(status) }

//go:linkname sbHookNumCPU shortbread/kernel/machine.NumCPU
func sbHookNumCPU() int { return int(sbNCPU) }

//go:linkname sbHookCurrentCPU shortbread/kernel/machine.CurrentCPU
func sbHookCurrentCPU() int { return int(sbThisCPU().id) }

//go:linkname sbHookSetThreadCPUs shortbread/kernel/machine.SetThreadCPUs
func sbHookSetThreadCPUs(cpus uint64) { getg().sbCPUs = cpus }

//go:linkname sbHookSetWalltime shortbread/kernel/machine.SetWalltime
func sbHookSetWalltime(unixNano int64) { atomic.Storeint64(&sbBootUnixNano, unixNano-sbNanotime()) }

//go:linkname sbHookMemStats shortbread/kernel/machine.memStats
func sbHookMemStats() (total, free, committed, vmas uint64) {
	return sbFrames.total, sbFrames.free, sbAS.committed, uint64(sbAS.n)
}

//go:linkname sbHookInterrupts shortbread/kernel/machine.Interrupts
func sbHookInterrupts(cpu, vec int) uint64 {
	if cpu < 0 || cpu >= int(sbNCPU) || vec < sbVecIRQBase || vec >= sbVecCount {
		return 0
	}
	return sbCPUs[cpu].intr[vec-sbVecIRQBase]
}

//go:linkname sbHookIdleTime shortbread/kernel/machine.IdleTime
func sbHookIdleTime(cpu int) int64 {
	if cpu < 0 || cpu >= int(sbNCPU) {
		return 0
	}
	v := atomic.Loadint64(&sbCPUs[cpu].idleClock)
	if v < 0 {
		return sbNanotime() - (-1 - v)
	}
	return v
}

//go:linkname sbHookThreads shortbread/kernel/machine.Threads
func sbHookThreads() int { return int(sbSched.nthreads) }

//go:linkname sbHookPhysPointer shortbread/kernel/machine.physPointer
func sbHookPhysPointer(pa uintptr) unsafe.Pointer { return unsafe.Pointer(sbPhys(pa)) }

func sbIntrOff() uintptr
func sbIntrRestore(flags uintptr)

//go:linkname sbHookAllocFrame shortbread/kernel/machine.allocFrame
func sbHookAllocFrame(keep uint64) uintptr {
	// Interrupts off: a trap handler on this CPU may need the allocator.
	// And no preemption at a stack check meanwhile (acquirem), which
	// would leave the M running other goroutines with interrupts off.
	mp := acquirem()
	fl := sbIntrOff()
	pa := sbFrames.allocKeeping(keep)
	sbIntrRestore(fl)
	releasem(mp)
	return pa
}

//go:linkname sbHookFreeFrame shortbread/kernel/machine.freeFrame
func sbHookFreeFrame(pa uintptr) {
	if pa == 0 || pa&(sbPageSize-1) != 0 || pa >= sbFrames.maxPhys {
		return
	}
	mp := acquirem() // as in sbHookAllocFrame
	fl := sbIntrOff()
	sbFrames.release(pa)
	sbIntrRestore(fl)
	releasem(mp)
}

// sbHookSetNUMA: the kernel (kernel/machine/numa.go) checked every node
// number against nnodes.
//
//go:linkname sbHookSetNUMA shortbread/kernel/machine.setNUMA
func sbHookSetNUMA(spans []sbRange, cpuNode, order []uint8, nnodes int) {
	mp := acquirem() // as in sbHookAllocFrame
	fl := sbIntrOff()
	sbFrames.setNUMA(spans, cpuNode, order, nnodes)
	sbIntrRestore(fl)
	releasem(mp)
}

//go:linkname sbHookNodeFreeFrames shortbread/kernel/machine.NodeFreeFrames
func sbHookNodeFreeFrames(node int) uint64 {
	if node < 0 || node >= sbMaxNodes {
		return 0
	}
	return atomic.Load64(&sbFrames.nodeFree[node])
}
