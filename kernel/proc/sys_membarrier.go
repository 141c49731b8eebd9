package proc

// membarrier(2).
//
// A membarrier is an interrupt: the machine layer's TLB shootdown sends
// an IPI to every CPU that has the address space loaded (or to every CPU)
// and waits until each has taken it, and taking an interrupt (and
// returning with IRETQ) is a full barrier that also serializes the
// instruction stream. So the private commands interrupt the CPUs running
// the caller's space, and the global ones every CPU. rseq(2) is rseq.go.
//
// MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ also restarts the rseq critical
// sections the process's other threads are in, as Linux's IPI does with
// rseq_preempt: each other thread is marked (rseqRestart, which its next
// return to user mode turns into an abort) and kicked (machine.Kick sets
// its kick word, which every trap taken in its user mode looks at), then
// the shootdown interrupts each CPU running the space and waits for it.
// So when the call returns no other thread is still in user mode inside
// a section it was in, and one in the kernel (a page fault in the
// section) aborts it on its way back. A thread blocked in the kernel is
// marked too: an abort Linux would make as well (its switch-out counted
// as a preemption), which a correct program never sees, being outside
// any section while in a system call.

import "shortbread/kernel/machine"

// membarrier commands (include/uapi/linux/membarrier.h).
const (
	mbQuery                         = 0
	mbGlobal                        = 1 << 0
	mbGlobalExpedited               = 1 << 1
	mbRegisterGlobalExpedited       = 1 << 2
	mbPrivateExpedited              = 1 << 3
	mbRegisterPrivateExpedited      = 1 << 4
	mbPrivateExpeditedSyncCore      = 1 << 5
	mbRegisterPrivateExpeditedSyncC = 1 << 6
	mbPrivateExpeditedRseq          = 1 << 7
	mbRegisterPrivateExpeditedRseq  = 1 << 8
	mbSupported                     = mbGlobal | mbGlobalExpedited | mbRegisterGlobalExpedited | mbPrivateExpedited |
		mbRegisterPrivateExpedited | mbPrivateExpeditedSyncCore | mbRegisterPrivateExpeditedSyncC |
		mbPrivateExpeditedRseq | mbRegisterPrivateExpeditedRseq

	// mbFlagCPU (MEMBARRIER_CMD_FLAG_CPU) limits the RSEQ command to the
	// thread running on the CPU cpu_id names.
	mbFlagCPU = 1
)

// sysMembarrier implements membarrier(2): flags must be 0 (EINVAL),
// except MEMBARRIER_CMD_FLAG_CPU for the RSEQ command; unknown commands
// are EINVAL, the private commands need their registration first
// (EPERM).
func sysMembarrier(t *Thread, a *[6]uint64) (int64, bool) {
	cmd, flags, cpuID := int(int32(a[0])), uint32(a[1]), int(int32(a[2]))
	if cmd == mbPrivateExpeditedRseq {
		if flags != 0 && flags != mbFlagCPU {
			return -eINVAL, false
		}
	} else if flags != 0 {
		return -eINVAL, false
	}
	if flags&mbFlagCPU == 0 {
		cpuID = -1
	}
	p := t.Proc
	switch cmd {
	case mbQuery:
		return mbSupported, false
	case mbGlobal, mbGlobalExpedited:
		machine.FlushTLB()
		return 0, false
	case mbRegisterGlobalExpedited, mbRegisterPrivateExpedited, mbRegisterPrivateExpeditedSyncC,
		mbRegisterPrivateExpeditedRseq:
		p.mu.Lock()
		p.membarriers |= uint32(cmd)
		p.mu.Unlock()
		return 0, false
	case mbPrivateExpedited, mbPrivateExpeditedSyncCore:
		p.mu.Lock()
		registered := p.membarriers&uint32(cmd<<1) != 0
		p.mu.Unlock()
		if !registered {
			return -ePERM, false
		}
		machine.FlushSpaceTLB(p.Space().Root())
		return 0, false
	case mbPrivateExpeditedRseq:
		p.mu.Lock()
		registered := p.membarriers&mbRegisterPrivateExpeditedRseq != 0
		p.mu.Unlock()
		if !registered {
			return -ePERM, false
		}
		p.rseqRestart(t, cpuID)
		return 0, false
	}
	return -eINVAL, false
}

// rseqRestart is the RSEQ membarrier: every other thread of p is taken
// out of user mode, and so out of any critical section it was in. With
// a CPU (MEMBARRIER_CMD_FLAG_CPU) Linux interrupts only the thread
// running there; all are here still (more aborts, which rseq allows:
// which CPU a thread runs on is its own to read), except that a CPU
// that does not exist is nothing to do, as on Linux.
func (p *Process) rseqRestart(self *Thread, cpu int) {
	if cpu >= machine.NumCPU() {
		return
	}
	p.mu.Lock()
	for _, u := range p.threads {
		if u != self {
			u.rseqRestart.Store(true)
		}
	}
	p.mu.Unlock()
	p.kickThreads(self)
	machine.FlushSpaceTLB(p.Space().Root())
}
