//go:build shortbread

// Shortbread machine layer: trap dispatch.
//
// sbTrap is the one Go entry from sb_amd64.s (trap stack, interrupts off,
// the CPU's trap g). Faults in Go code become the signals Linux would send;
// those the runtime cannot handle (in the machine layer, or before it
// installed handlers) print the registers here and power off failing.

package runtime

import "internal/runtime/atomic"

//go:nowritebarrierrec
func sbTrap(f *sbFrame) {
	c, v := sbThisCPU(), f.vector
	if f.cs&3 == 0 {
		if v != sbVecSyscall && uintptr(f.rsp) > c.stackTop-sbTrapStackSize && uintptr(f.rsp) <= c.stackTop {
			sbDump(f, "trap inside the machine layer")
		}
	} else if v == sbVecSyscall || v < 32 && v != 2 {
		// A system call or fault from user mode ends RunUser (an
		// interrupt is served and the program goes on).
		addr := uintptr(0)
		if v == sbVecPF {
			addr = sbReadCR2()
		}
		sbUserExit(c, f, v, addr)
		sbTrapExit(c, f)
		return
	}
	if v >= sbVecIRQBase && v < sbVecCount {
		c.intr[v-sbVecIRQBase]++
	}
	switch {
	case v == sbVecSyscall && f.rax == sbSysRunUser: // the most made
		sbRunUser(c, f, uintptr(f.rdi), uintptr(f.rsi))
	case v == sbVecSyscall:
		sbSyscall(c, f)
	case v == sbVecPF:
		sbPageFault(c, f)
	case v < 32:
		sbException(c, f)
	case v == sbVecTimer:
		c.timerAt = 0
		sbProfTick(c, f)
		sbWatchdog(c, f)
		c.resched = true
		sbEOI()
	case v == sbVecResched:
		c.resched = true
		sbEOI()
	case v == sbVecTLB:
		sbServiceTLB()
		sbEOI()
	case v >= sbVecIRQBase && v < sbVecIRQBase+24:
		sbIRQ(int(v - sbVecIRQBase))
		sbEOI()
	case v == sbVecSpurious:
	}
	sbTrapExit(c, f)
}

// sbTrapExit runs on every way out of a trap: switch away from the idle
// thread or an expired time slice, deliver signals, arm the timer.
func sbTrapExit(c *sbCPU, f *sbFrame) {
	// Deadlines pass only at timer interrupts: the timer is always armed
	// at or before the earliest of this CPU's (below), so other traps
	// need not read the clock to look.
	next := c.nextDeadline
	if c.timerAt == 0 {
		next = sbExpireTimers(c)
	}
	cur := &sbThreads[c.cur]
	if cur.isIdle || c.resched && (atomic.Loadint32(&sbSched.nrt) > 0 || sbNanotime() >= c.sliceEnd) {
		sbYield(c, f)
		cur = &sbThreads[c.cur]
	}
	c.resched = false
	if c.kickAt != 0 {
		sbKickLate(c)
	}
	// cur stays the running thread from here on: nothing below switches.
	if cur.inUser && (sbSignalsReady(cur) != 0 || sbUserKicked(cur)) {
		// The runtime needs this thread (async preemption, a fault
		// signal...), or the kernel kicked it (a signal for the
		// program): leave user mode so the event is handled in Go.
		sbUserExit(c, f, sbTrapInterrupt, 0)
	}
	// Runtime signals go to kernel frames only. A thread still in user
	// mode here had no signal ready a moment ago; one that became pending
	// since (tgkill from another CPU) comes with an IPI, and the next
	// trap takes the thread out of user mode first. Delivering it now
	// would build the runtime's signal frame on the program's registers
	// and return to ring 3 at runtime.sigtramp.
	if !cur.isIdle && !cur.inUser && sbSignalsReady(cur) != 0 {
		sbDeliverSignals(c, f)
	}
	deadline := next
	if !cur.isIdle && (deadline == 0 || c.sliceEnd < deadline) {
		deadline = c.sliceEnd
	}
	if k := c.kickAt; k != 0 && (deadline == 0 || k < deadline) {
		deadline = k
	}
	if sbProfSource == sbProfTimer {
		if pn := sbProfTick(c, f); pn != 0 && (deadline == 0 || pn < deadline) {
			deadline = pn
		}
	}
	deadline = sbWdDeadline(c, deadline)
	// Re-arming is a LAPIC register write, an MMIO exit under
	// virtualization (under QEMU TCG it also takes the emulator's global
	// lock, serializing the vCPUs): skip it when an interrupt at or
	// before deadline is already coming. That interrupt re-arms the timer
	// for whatever is due then.
	if deadline != 0 && (c.timerAt == 0 || deadline < c.timerAt) {
		sbArmTimer(deadline)
		c.timerAt = deadline
	}
	sbUserGate(c, f)
}

func sbPageFault(c *sbCPU, f *sbFrame) {
	addr := sbReadCR2()
	r := sbFaultMapErr
	if f.errcode&1 == 0 { // not present: maybe demand paging (of a write, of a fetch)
		r = sbAS.fault(addr, f.errcode&2 != 0, f.errcode&16 != 0)
	} else if sbAS.findVMA(addr) >= 0 {
		r = sbFaultAccErr
	}
	switch r {
	case sbFaultOK:
	case sbFaultNoMem:
		sbDump(f, "out of physical memory")
	default:
		sbForceSignal(c, f, _SIGSEGV, int32(r), addr)
	}
}

func sbException(c *sbCPU, f *sbFrame) {
	switch f.vector {
	case 0: // #DE
		sbForceSignal(c, f, _SIGFPE, 1, uintptr(f.rip)) // FPE_INTDIV
	case 3: // #BP
		sbForceSignal(c, f, _SIGTRAP, 0x80, uintptr(f.rip))
	case 6: // #UD
		sbForceSignal(c, f, _SIGILL, 2, uintptr(f.rip)) // ILL_ILLOPN
	case 12, 13: // #SS, #GP
		sbForceSignal(c, f, _SIGSEGV, 0x80, 0) // SI_KERNEL
	case 16, 19: // #MF, #XM
		sbForceSignal(c, f, _SIGFPE, 0, uintptr(f.rip))
	case 17: // #AC
		sbForceSignal(c, f, _SIGBUS, 1, 0)
	default:
		sbDump(f, "unexpected CPU exception")
	}
}

// sbForceSignal queues a synchronous fault signal for the running thread.
// A fault the runtime cannot take (signal blocked or no handler yet, or
// in the idle thread) is fatal.
func sbForceSignal(c *sbCPU, f *sbFrame, sig int32, code int32, addr uintptr) {
	t := &sbThreads[c.cur]
	bit := uint64(1) << (sig - 1)
	if t.isIdle || t.sigMask&bit != 0 || sbSigactions[sig].handler <= 1 {
		sbLog("fault with no handler: signal %", int64(sig)) // the address: cr2 or rip below
		sbDump(f, "fatal fault")
	}
	atomic.Or64(&t.sigPending, bit)
	t.lastFault = sbRegsOf(f, addr)
	t.hasFault = true
	t.faultSig = sig
	t.faultCode = code
	t.faultAddr = addr
}

// sbRegs is the register part of a frame, kept per thread for its last
// fault so a crash report can show where the fault happened.
type sbRegs struct {
	vals          [20]uint64
	vector, error uint64
	cr2           uint64
}

// sbRegNames names sbRegs.vals, as printed before each value. The first
// five are what the NMI stub copies for the watchdog (sbCPU.nmiRegs), so
// both print alike.
var sbRegNames = [20]string{" rip=", " cs=", " rflags=", " rsp=", " rbp=", " rax=", " rbx=", " rcx=", " rdx=", " rsi=",
	" rdi=", " r8=", " r9=", " r10=", " r11=", " r12=", " r13=", " r14=", " r15=", " fsbase="}

func sbRegsOf(f *sbFrame, cr2 uintptr) sbRegs {
	return sbRegs{
		vals: [20]uint64{f.rip, f.cs, f.rflags, f.rsp, f.rbp, f.rax, f.rbx, f.rcx, f.rdx, f.rsi,
			f.rdi, f.r8, f.r9, f.r10, f.r11, f.r12, f.r13, f.r14, f.r15, f.fsbase},
		vector: f.vector, error: f.errcode, cr2: uint64(cr2),
	}
}

// sbPrintRegs prints a register set; the caller holds the console.
func sbPrintRegs(r *sbRegs) {
	sbPrintf("  cpu % vector % error ", int64(sbThisCPU().id), int64(r.vector))
	sbPrintHex(r.error)
	sbPrintStr(" cr2 ")
	sbPrintHex(r.cr2)
	sbPrintVals(r.vals[:])
}

// sbPrintVals prints the first len(v) registers of sbRegNames.
func sbPrintVals(v []uint64) {
	for i := range v {
		if i%5 == 0 {
			sbPrintStr("\n ")
		}
		sbPrintStr(sbRegNames[i])
		sbPrintHex(v[i])
	}
	sbPrintStr("\n")
}

// sbPrintStack prints the call stack of registers ordered as sbRegNames
// by frame pointers (Go keeps them on amd64), each frame checked present
// first, with function names from the runtime's symbol table.
func sbPrintStack(v []uint64) {
	rip, cs, rsp, rbp := uintptr(v[0]), v[1], uintptr(v[3]), uintptr(v[4])
	if cs&3 != 0 {
		sbPrintStr("  (user mode)\n")
		return
	}
	sbPrintFunc("  ", rip)
	// A frameless leaf (sbPause, sbNanotime...) has its caller's return
	// address on top of the stack, not in the frame chain: shown with
	// "?", as Linux marks a stack word that may be a return address.
	if rsp&7 == 0 && sbAS.present(rsp, 8, false, false) && findfunc(uintptr(sbLoad64(rsp))).valid() {
		sbPrintFunc("  ? ", uintptr(sbLoad64(rsp)))
	}
	for fp, i := rbp, 0; i < 32 && fp != 0 && fp&7 == 0 && sbAS.present(fp, 16, false, false); i++ {
		sbPrintFunc("  ", uintptr(sbLoad64(fp+8)))
		fp = uintptr(sbLoad64(fp))
	}
}

// sbPrintFunc prints one stack entry by function name and offset (not
// file and line: funcline needs an M's cache).
func sbPrintFunc(prefix string, pc uintptr) {
	sbPrintStr(prefix)
	if fn := findfunc(pc); fn.valid() {
		sbPrintStr(funcname(fn))
		sbPrintStr("+")
		sbPrintHex(uint64(pc - fn.entry()))
	} else {
		sbPrintHex(uint64(pc))
	}
	sbPrintStr("\n")
}

// sbDump prints the frame and its call stack and powers off with a
// failing status.
func sbDump(f *sbFrame, why string) {
	r := sbRegsOf(f, sbReadCR2())
	sbConsoleLock.lock()
	sbPrintStr("\nmachine: PANIC: ")
	sbPrintStr(why)
	sbPrintStr("\n")
	sbPrintRegs(&r)
	sbPrintStack(r.vals[:])
	sbConsoleLock.unlock()
	sbPowerOff(0x7e)
}

// sbPowerOff ends the machine: under QEMU through isa-debug-exit (QEMU
// exits with status*2+1), else by halting every CPU; kernel code above
// does ACPI power-off on real hardware before it gets here.
func sbPowerOff(status uint8) {
	sbOutb(0xf4, status)
	sbHalt()
}
