//go:build shortbread

// Shortbread machine layer: running user programs.
//
// A user thread is a kernel goroutine that calls machine.RunUser in a
// loop. RunUser keeps no P (syscall.Syscall), so a stop-the-world does
// not wait for user code.

package runtime

import (
	"internal/runtime/atomic"
	"unsafe"
)

// sbUserRegs mirrors machine.UserRegs; the layouts must match.
type sbUserRegs struct {
	gprs                  [15]uint64 // R15 to RAX, as sbGPRs.gprs
	fsbase, gsbase        uint64
	rip, rflags, rsp      uint64
	trap, errcode, addr   uint64
	kick                  uint64 // non-zero: leave user mode at the next trap
	cpu                   uint64 // non-zero: the CPU+1 the program was told (rseq)
	affinity, prio, slice uint64 // its scheduling class (sbSetClass)
	exitCPU, preempts     uint64 // where RunUser last returned; times switched out in ring 3
	away                  uint64 // TSC cycles switched out in ring 3 in this or the last RunUser
	// fpu holds the program's FPU image at its first 64-byte boundary
	// (XSAVE's alignment; the heap's is 8), where traps from user mode
	// save it and the way back loads it (sbUserImage, sb_amd64.s).
	fpu [sbFPUSize + 64]byte
}

// sbTrapInterrupt in sbUserRegs.trap, besides the vector of a CPU
// exception (0-31) or system call (sbVecSyscall) from user mode, means
// the runtime needed the thread back.
const sbTrapInterrupt = 512

const sbUserTop = 0x0000800000000000 // first non-canonical lower-half address

// sbSysretMaxRIP bounds the RIPs the trap exit returns to with SYSRET
// (sb_amd64.s); a variable so the assembly can compare with it.
var sbSysretMaxRIP uint64 = sbUserTop - sbPageSize

func sbCanonicalUser(v uint64) uint64 {
	if v >= sbUserTop {
		return 0
	}
	return v
}

// sbRunUser implements the RunUser private system call.
func sbRunUser(c *sbCPU, f *sbFrame, regs, cr3 uintptr) {
	t := &sbThreads[c.cur]
	// The UserRegs must be present before the machine layer touches them
	// (it takes no page faults). They are a live Go object, whose memory
	// the runtime releases only once it is dead: a pointer checked since
	// the last page went away (sbAS.zaps) stays good, and sbUserExit
	// writes them without another look. Two are kept, as two programs'
	// threads often alternate on one M.
	if z := atomic.Load64(&sbAS.zaps); z != t.checkedZaps {
		t.userChecked, t.checkedZaps = [2]uintptr{}, z
	}
	if regs != t.userChecked[0] && regs != t.userChecked[1] {
		if regs&7 != 0 || !sbAS.touch(regs, unsafe.Sizeof(sbUserRegs{}), true) {
			f.rax = sbNeg(sbEFAULT)
			return
		}
		t.userChecked = [2]uintptr{regs, t.userChecked[0]}
	}
	if cr3 == 0 || cr3&(sbPageSize-1) != 0 || cr3 >= sbFrames.maxPhys {
		f.rax = sbNeg(sbEINVAL)
		return
	}
	r := (*sbUserRegs)(unsafe.Pointer(regs))
	// The kernel names online CPUs only (a thread with none would never run).
	aff, prio, slice := r.affinity&(1<<uint32(sbNCPU)-1), int32(r.prio&0xff), int64(r.slice)
	if aff != t.affinity || prio != t.prio || slice != t.slice && (slice != 0 || t.slice != sbTimeSlice) {
		sbSetClass(c, t, aff, prio, slice) // not the default class sbUserExit left
	}
	if t.affinity != 0 && t.affinity&(1<<uint32(c.id)) == 0 {
		// Made again on a CPU the program may use: f.rax still holds
		// the call's number.
		f.rip -= 2
		sbYield(c, f)
		return
	}
	f.rax = 0
	if r.cpu != 0 && r.cpu != uint64(c.id)+1 { // moved since the kernel told the program
		r.trap = sbTrapInterrupt
		sbSetClass(c, t, 0, 0, 0)
		return
	}
	t.switched, t.outAt, t.away = 0, 0, 0
	// Only the kernel's general registers are kept: RunUser is a system
	// call to the Go code that makes it, and no vector register is live
	// across one (X15, the ABI's zero register, comes back zero: see
	// sbUserExit's noFPU).
	t.kframe = f.sbGPRs
	t.user = regs
	t.inUser = true
	t.cr3 = cr3
	*f.gprs() = r.gprs
	f.rip, f.rsp = r.rip, r.rsp
	const userFlags = 0xCD5 // CF PF AF ZF SF DF OF (no TF, IOPL, NT)
	f.rflags = r.rflags&userFlags | 0x202
	f.cs, f.ss = sbUserCS, sbUserDS
	f.fsbase = sbCanonicalUser(r.fsbase)
	// The image stays in r (the kernel may have written it: sigreturn).
	sbFPUSanitize((*[sbFPUSize]byte)(unsafe.Pointer((uintptr(unsafe.Pointer(&r.fpu)) + 63) &^ 63)))
	sbSetUserGS(c, sbCanonicalUser(r.gsbase))
	sbLoadCR3(c, cr3)
}

// sbUserExit ends RunUser for the thread whose user state is in f: the
// user registers go back to its UserRegs and its kernel frame resumes.
func sbUserExit(c *sbCPU, f *sbFrame, trap uint64, addr uintptr) {
	t := &sbThreads[c.cur]
	r := (*sbUserRegs)(unsafe.Pointer(t.user)) // checked by sbRunUser
	r.gprs = *f.gprs()
	r.rip, r.rflags, r.rsp = f.rip, f.rflags, f.rsp
	r.fsbase = f.fsbase
	c.userGS = sbRdmsr(0xC0000102) // the program's, by SWAPGS (or WRGSBASE)
	r.gsbase = c.userGS
	r.trap, r.errcode, r.addr = trap, f.errcode, uint64(addr)
	r.exitCPU, r.preempts, r.away = uint64(c.id), r.preempts+t.switched, t.away
	f.sbGPRs = t.kframe // the FPU image is in r already (sbTrapCommon)
	sbFPUReset(&f.fpu)
	f.noFPU = 1
	t.inUser, t.user, t.cr3 = false, 0, 0
	if t.affinity != 0 || t.prio != 0 || t.slice != sbTimeSlice {
		sbSetClass(c, t, 0, 0, 0)
	}
	if sbSched.nrt > 0 {
		c.resched = true // a waiting real-time thread outranks the kernel
	}
	// The user space stays loaded (see sbReleaseCR3): going back to it
	// after the system call then needs no CR3 write, which flushes the
	// TLB (and, under TCG, QEMU's whole soft TLB).
}

// sbUserKicked reports whether the kernel asked t to leave user mode:
// by its kick word, or by its cpu word once t was switched out.
func sbUserKicked(t *sbThread) bool {
	r := (*sbUserRegs)(unsafe.Pointer(t.user))
	return t.inUser && (atomic.Load64(&r.kick) != 0 || t.switched != 0 && r.cpu != 0)
}

// sbKick asks the thread running the user state at regs to come back to
// the kernel: its kick word is set by the caller; if it runs on another
// CPU that CPU gets an IPI so it passes through sbTrapExit now rather
// than at its next timer tick.
func sbKick(regs uintptr) int64 {
	sbSched.mu.lock()
	for i := range sbThreads {
		t := &sbThreads[i]
		if t.state == sbThRunning && t.inUser && t.user == regs && t.cpu >= 0 && t.cpu != sbThisCPU().id {
			sbSendIPI(sbCPUs[t.cpu].apicID, sbVecResched)
		}
	}
	sbSched.mu.unlock()
	return 0
}

// sbSetUserGS makes v the GS base SWAPGS gives ring 3 unless it is
// there already (under TCG an MSR write ends the translated block).
func sbSetUserGS(c *sbCPU, v uint64) {
	if c.userGS != v {
		c.userGS = v
		sbWrmsr(0xC0000102, v)
	}
}

// sbLoadCR3 switches this CPU's address space if it differs.
func sbLoadCR3(c *sbCPU, cr3 uintptr) {
	if cr3 == 0 {
		cr3 = sbAS.pml4
	}
	if c.cr3 != cr3 {
		// The new root is published first: a shootdown that misses
		// this CPU must find it before it can cache anything under cr3
		// (sbShootdown). The old one stays published until the load:
		// until then this CPU can still walk it.
		atomic.Storeuintptr(&c.leaving, c.cr3)
		atomic.Storeuintptr(&c.cr3, cr3)
		sbWriteCR3(cr3)
		atomic.Storeuintptr(&c.leaving, 0)
	}
}
