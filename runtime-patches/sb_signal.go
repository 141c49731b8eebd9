//go:build shortbread

// Shortbread machine layer: signals for the runtime (SIGURG for async
// preemption, the fault signals that become panics), delivered as Linux
// x86-64 does; the handler may edit the ucontext to inject a call
// (asyncPreempt, sigpanic), which rt_sigreturn restores.

package runtime

import (
	"internal/runtime/atomic"
	"internal/runtime/sys"
	"unsafe"
)

const (
	sbSigDfl = 0
	sbSigIgn = 1

	sbSAOnStack = 0x08000000

	sbUnblockable = 1<<(_SIGKILL-1) | 1<<(_SIGSTOP-1)
)

type sbSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// sbSigactions is process-wide, as CLONE_SIGHAND makes it on Linux.
var (
	sbSigLock    sbSpin
	sbSigactions [65]sbSigaction
)

// sbSignalThread makes sig pending for thread i and makes sure it notices:
// a blocked thread's wait is interrupted, a thread running on another CPU
// gets an IPI so it passes through the trap exit path.
func sbSignalThread(i int32, sig int32) {
	sbSched.mu.lock()
	t := &sbThreads[i]
	atomic.Or64(&t.sigPending, 1<<(sig-1))
	if t.sigMask&(1<<(sig-1)) == 0 {
		switch {
		case t.state == sbThBlocked:
			sbWakeLocked(i, sbWakeSignal)
		case t.state == sbThRunning && t.cpu >= 0 && t.cpu != sbThisCPU().id:
			sbSched.ipis |= 1 << uint32(t.cpu) // sent by unlock
		}
	}
	sbSched.unlock()
}

// sbSignalsReady is the set of t's pending signals it does not block.
func sbSignalsReady(t *sbThread) uint64 {
	return atomic.Load64(&t.sigPending) &^ (t.sigMask &^ sbUnblockable)
}

// sbDeliverSignals builds a signal frame for the lowest pending unblocked
// signal of the running thread, if any.
func sbDeliverSignals(c *sbCPU, f *sbFrame) {
	t := &sbThreads[c.cur]
	for ready := sbSignalsReady(t); ready != 0; ready = sbSignalsReady(t) {
		sig := int32(sys.TrailingZeros64(ready)) + 1
		atomic.And64(&t.sigPending, ^uint64(1<<(sig-1)))
		act := sbSigactions[sig]
		// SIGCHLD, SIGURG, SIGWINCH and SIGCONT are ignored by default.
		if act.handler == sbSigIgn || act.handler == sbSigDfl && (sig == _SIGCHLD || sig == _SIGURG || sig == _SIGWINCH || sig == _SIGCONT) {
			continue
		}
		if act.handler == sbSigDfl {
			sbKilled(t, f, sig)
		}
		sbBuildSignalFrame(t, f, sig, act)
		return
	}
}

func sbBuildSignalFrame(t *sbThread, f *sbFrame, sig int32, act sbSigaction) {
	sp := uintptr(f.rsp)
	onAlt := t.altSize != 0 && sp > t.altSP && sp <= t.altSP+t.altSize
	if act.flags&sbSAOnStack != 0 && t.altSize != 0 && !onAlt {
		sp = t.altSP + t.altSize
	} else {
		sp -= 128 // the interrupted code's red zone
	}
	sp = (sp - sbFPUSize) &^ 63
	fpAddr := sp
	ucSize, infoSize := unsafe.Sizeof(ucontext{}), unsafe.Sizeof(siginfo{})
	sp = ((sp - 8 - ucSize - infoSize) &^ 15) - 8
	if !sbAS.touch(sp, fpAddr+sbFPUSize-sp, true) {
		sbDump(f, "signal stack not writable")
	}
	ucAddr, infoAddr := sp+8, sp+8+ucSize
	sbMemzero(ucAddr, ucSize+infoSize)
	sbMemcpy(fpAddr, uintptr(unsafe.Pointer(&f.fpu)), sbFPUSize)
	sbStore64(sp, uint64(act.restorer))

	uc := (*ucontext)(unsafe.Pointer(ucAddr))
	*(*uintptr)(unsafe.Pointer(&uc.uc_stack.ss_sp)) = t.altSP
	uc.uc_stack.ss_size, uc.uc_stack.ss_flags = t.altSize, t.altFlags
	m := (*sigcontext)(unsafe.Pointer(&uc.uc_mcontext))
	m.r8, m.r9, m.r10, m.r11 = f.r8, f.r9, f.r10, f.r11
	m.r12, m.r13, m.r14, m.r15 = f.r12, f.r13, f.r14, f.r15
	m.rdi, m.rsi, m.rbp, m.rbx = f.rdi, f.rsi, f.rbp, f.rbx
	m.rdx, m.rax, m.rcx, m.rsp = f.rdx, f.rax, f.rcx, f.rsp
	m.rip, m.eflags, m.cs, m.err, m.trapno = f.rip, f.rflags, uint16(f.cs), f.errcode, f.vector
	*(*uintptr)(unsafe.Pointer(&m.fpstate)) = fpAddr
	*(*uint64)(unsafe.Pointer(&uc.uc_sigmask)) = t.sigMask

	info := (*siginfoFields)(unsafe.Pointer(infoAddr))
	info.si_signo = sig
	if sig == t.faultSig {
		info.si_code, info.si_addr, m.cr2 = t.faultCode, uint64(t.faultAddr), uint64(t.faultAddr)
		t.faultSig = 0
	} else {
		info.si_code = -6                            // SI_TKILL
		*(*int32)(unsafe.Pointer(infoAddr + 16)) = 1 // si_pid
	}

	f.rip, f.rsp = uint64(act.handler), uint64(sp)
	f.rdi, f.rsi, f.rdx, f.rax = uint64(sig), uint64(infoAddr), uint64(ucAddr), 0
	f.rflags &^= 1<<8 | 1<<10 // TF, DF
	// The runtime sets neither SA_NODEFER nor SA_RESETHAND.
	t.sigMask = (t.sigMask | act.mask | 1<<(sig-1)) &^ sbUnblockable
}

// sbSigreturn restores the state saved by sbBuildSignalFrame from the
// ucontext at the stack pointer (the handler's RET popped the return
// address). Only flags a program may change are taken from the saved
// RFLAGS; interrupts stay on.
func sbSigreturn(c *sbCPU, f *sbFrame) {
	t := &sbThreads[c.cur]
	ucAddr := uintptr(f.rsp)
	if !sbAS.touch(ucAddr, unsafe.Sizeof(ucontext{}), false) {
		sbDump(f, "rt_sigreturn with a bad frame")
	}
	uc := (*ucontext)(unsafe.Pointer(ucAddr))
	m := (*sigcontext)(unsafe.Pointer(&uc.uc_mcontext))
	f.r8, f.r9, f.r10, f.r11 = m.r8, m.r9, m.r10, m.r11
	f.r12, f.r13, f.r14, f.r15 = m.r12, m.r13, m.r14, m.r15
	f.rdi, f.rsi, f.rbp, f.rbx = m.rdi, m.rsi, m.rbp, m.rbx
	f.rdx, f.rax, f.rcx, f.rsp = m.rdx, m.rax, m.rcx, m.rsp
	f.rip = m.rip
	const userFlags = 0xDD5 // CF PF AF ZF SF TF DF OF
	f.rflags = m.eflags&userFlags | 0x202
	f.cs, f.ss = sbKernelCS, sbKernelDS
	fp := *(*uintptr)(unsafe.Pointer(&m.fpstate))
	if fp != 0 && sbAS.touch(fp, sbFPUSize, false) {
		sbMemcpy(uintptr(unsafe.Pointer(&f.fpu)), fp, sbFPUSize)
		sbFPUSanitize(&f.fpu)
	}
	f.noFPU = 0 // the interrupted code's state, or the initial one
	t.sigMask = *(*uint64)(unsafe.Pointer(&uc.uc_sigmask)) &^ sbUnblockable
}

// sbKilled ends the kernel for a signal whose default action is to
// terminate (the runtime raises SIGABRT after printing a fatal panic): it
// prints the registers of the thread's last fault, which is usually what
// the panic was about, and of the point of death, then powers off with
// status 0x40+sig.
func sbKilled(t *sbThread, f *sbFrame, sig int32) {
	now := sbRegsOf(f, 0)
	sbConsoleLock.lock()
	sbPrintf("machine: kernel killed by signal %\n", int64(sig))
	if t.hasFault {
		sbPrintStr("machine: registers at the thread's last fault:\n")
		sbPrintRegs(&t.lastFault)
	}
	sbPrintStr("machine: registers at the signal:\n")
	sbPrintRegs(&now)
	sbConsoleLock.unlock()
	sbPowerOff(uint8(0x40 + sig))
}
