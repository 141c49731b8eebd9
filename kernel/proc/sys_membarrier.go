package proc

// membarrier(2).
//
// A membarrier is an interrupt: the machine layer's TLB shootdown sends
// an IPI to every CPU that has the address space loaded (or to every CPU)
// and waits until each has taken it, and taking an interrupt (and
// returning with IRETQ) is a full barrier that also serializes the
// instruction stream. So the private commands interrupt the CPUs running
// the caller's space, and the global ones every CPU. rseq(2) is rseq.go.

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
	// The RSEQ commands (1<<7, 1<<8) are not offered: EINVAL.
	mbSupported = mbGlobal | mbGlobalExpedited | mbRegisterGlobalExpedited | mbPrivateExpedited |
		mbRegisterPrivateExpedited | mbPrivateExpeditedSyncCore | mbRegisterPrivateExpeditedSyncC
)

// sysMembarrier implements membarrier(2): flags must be 0 (EINVAL),
// unknown commands are EINVAL, the private commands need their
// registration first (EPERM).
func sysMembarrier(t *Thread, a *[6]uint64) (int64, bool) {
	cmd, flags := int(int32(a[0])), a[1]
	if flags != 0 {
		return -eINVAL, false
	}
	p := t.Proc
	switch cmd {
	case mbQuery:
		return mbSupported, false
	case mbGlobal, mbGlobalExpedited:
		machine.FlushTLB()
		return 0, false
	case mbRegisterGlobalExpedited, mbRegisterPrivateExpedited, mbRegisterPrivateExpeditedSyncC:
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
	}
	return -eINVAL, false
}

// sysNosys answers ENOSYS for a call that is known and deliberately not
// provided (see above).
func sysNosys(t *Thread, a *[6]uint64) (int64, bool) { return -eNOSYS, false }
