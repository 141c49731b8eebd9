package proc

// rseq(2): restartable sequences, as Linux 6.1 has them.
//
// A registered thread's struct rseq holds the CPU it runs on (cpu_id and
// cpu_id_start), written before it returns to user mode on a CPU other
// than the one written last, and a pointer to the critical section it
// is in (rseq_cs). When the thread was preempted or moved while in
// user mode, or a signal is delivered to it, and its instruction
// pointer is inside that section, it goes on at the section's abort
// handler instead, after the signature word before the handler was
// checked; outside a section the pointer is cleared. A descriptor or
// area that cannot be read, or that breaks a rule, is a SIGSEGV.
//
// How the kernel learns of preemption and migration: the thread's
// UserRegs.CPU holds the CPU the program was told; the machine layer
// then makes RunUser return TrapInterrupt when the thread comes back
// from being switched out in user mode, and instead of entering user
// mode on another CPU (machine.UserRegs). Any TrapInterrupt counts as
// a preemption (a kick for a signal or a CPU timer too): an abort more
// than Linux would make, which rseq allows. Switches while the thread
// is in the kernel (a system call that blocks) are not seen: Linux
// clears rseq_cs after them when the system call's return address is
// outside a section, which is always so for a correct program.

import (
	"encoding/binary"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/machine"
	"shortbread/kernel/rseq"
)

// taskSizeMax is Linux's TASK_SIZE_MAX on x86-64 (4-level paging): the
// end of the addresses access_ok accepts.
const taskSizeMax = 1<<47 - 4096

// rseqState is a thread's registration.
type rseqState struct {
	reg rseq.Reg
	// resume: cpu_id must be written before the next return to user
	// mode (a new registration); event: a preemption, migration or
	// signal happened since the last one, so a section must abort.
	resume, event bool
}

// sysRseq implements rseq(2).
func sysRseq(t *Thread, a *[6]uint64) (int64, bool) {
	reg, err := rseq.Call(t.rseq.reg, a[0], uint32(a[1]), int32(a[2]), uint32(a[3]), taskSizeMax)
	if err != nil {
		return errno(err), false
	}
	// Both ways the area is reset first (cpu_id_start 0, cpu_id -1), so
	// an area that cannot be written fails here with EFAULT, as Linux
	// 6.1 does; a new registration's CPU is written on the way back.
	var b [8]byte
	binary.LittleEndian.PutUint32(b[4:], rseq.CPUUninitialized)
	if err := t.Proc.Space().CopyOut(uintptr(max(reg.Addr, t.rseq.reg.Addr)), b[:]); err != nil {
		return errno(err), false
	}
	if reg.Addr == 0 {
		t.rseq = rseqState{}
		t.regs.CPU = 0
		return 0, false
	}
	t.rseq.reg, t.rseq.resume = reg, true
	return 0, false
}

// rseqEvent records a preemption, migration or signal for a registered
// thread.
func (t *Thread) rseqEvent() {
	if t.rseq.reg.Addr != 0 {
		t.rseq.event = true
	}
}

// rseqBeforeUser runs before each return to user mode: a registered
// thread whose area must be updated, or that would run on another CPU
// than the one it was told, gets its section fixed up and its CPU
// written. It reports false if that failed (SIGSEGV is then queued).
func (t *Thread) rseqBeforeUser() bool {
	if t.rseq.reg.Addr == 0 {
		return true
	}
	if t.rseqRestart.Swap(false) {
		t.rseq.event = true
	}
	cpu := uint64(machine.CurrentCPU())
	if t.regs.CPU == cpu+1 && !t.rseq.resume && !t.rseq.event {
		return true
	}
	if t.regs.CPU != 0 && t.regs.CPU != cpu+1 {
		t.rseq.event = true // migrated
	}
	if err := t.rseqNotify(cpu); err != nil {
		t.faultSignal(sigSEGV, siKernel, 0)
		return false
	}
	return true
}

// rseqNotify fixes up the critical section the thread is in (Linux's
// rseq_ip_fixup) and writes cpu into the area (rseq_update_cpu_id).
func (t *Thread) rseqNotify(cpu uint64) error {
	s := t.Proc.Space()
	area := uintptr(t.rseq.reg.Addr)
	le := binary.LittleEndian
	var b [8]byte
	if err := s.CopyIn(area+rseq.OffCS, b[:]); err != nil {
		return err
	}
	if ptr := le.Uint64(b[:]); ptr != 0 {
		if ptr >= taskSizeMax {
			return linux.EINVAL
		}
		var d [rseq.CSSize]byte
		if err := s.CopyIn(uintptr(ptr), d[:]); err != nil {
			return err
		}
		cs := rseq.CS{Version: le.Uint32(d[0:]), Flags: le.Uint32(d[4:]), Start: le.Uint64(d[8:]),
			PostCommitOffset: le.Uint64(d[16:]), Abort: le.Uint64(d[24:])}
		if err := cs.Check(taskSizeMax); err != nil {
			return err
		}
		var sig [4]byte
		if err := s.CopyIn(uintptr(cs.SigAddr()), sig[:]); err != nil {
			return err
		}
		if le.Uint32(sig[:]) != t.rseq.reg.Sig {
			Log.Warnf("proc: %v tid %d: rseq signature %#x at %#x, registered %#x", t.Proc, t.TID,
				le.Uint32(sig[:]), cs.SigAddr(), t.rseq.reg.Sig)
			return linux.EINVAL
		}
		restart := false
		if cs.Contains(t.regs.RIP) {
			// Linux 6.1 refuses every flag (the NO_RESTART ones are
			// deprecated), the section's and the thread's.
			var f [4]byte
			if err := s.CopyIn(area+rseq.OffFlags, f[:]); err != nil {
				return err
			}
			if cs.Flags != 0 || le.Uint32(f[:]) != 0 {
				return linux.EINVAL
			}
			restart = t.rseq.event
		}
		if !cs.Contains(t.regs.RIP) || restart {
			clear(b[:])
			if err := s.CopyOut(area+rseq.OffCS, b[:]); err != nil {
				return err
			}
		}
		if restart {
			t.regs.RIP = cs.Abort
		}
	}
	t.rseq.event = false
	le.PutUint32(b[0:], uint32(cpu))
	le.PutUint32(b[4:], uint32(cpu))
	if err := s.CopyOut(area+rseq.OffCPUIDStart, b[:]); err != nil {
		return err
	}
	t.regs.CPU = cpu + 1
	t.rseq.resume = false
	return nil
}
