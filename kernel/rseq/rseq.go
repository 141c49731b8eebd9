// Package rseq holds the rules of restartable sequences (rseq(2)) as
// Linux 6.1 applies them: which registrations and unregistrations are
// accepted, and what a critical-section descriptor must satisfy before
// the kernel moves a thread to its abort handler. The system call and
// the reads and writes of user memory are kernel/proc's (rseq.go).
package rseq

import "shortbread/kernel/abi/linux"

// The user-space structures (include/uapi/linux/rseq.h, Linux 6.1).
const (
	// Size is struct rseq's size, the only length 6.1 accepts, and its
	// alignment.
	Size = 32
	// Field offsets in struct rseq.
	OffCPUIDStart = 0
	OffCPUID      = 4
	OffCS         = 8 // rseq_cs: the current critical section's descriptor, or 0
	OffFlags      = 16
	// CSSize is struct rseq_cs's size: version, flags (u32 each),
	// start_ip, post_commit_offset, abort_ip (u64 each).
	CSSize = 32

	// FlagUnregister is rseq(2)'s one flag.
	FlagUnregister = 1
	// CPUUninitialized is what cpu_id holds once unregistered.
	CPUUninitialized = ^uint32(0)
)

// Reg is a thread's registration; Addr 0 means none.
type Reg struct {
	Addr uint64
	Len  uint32
	Sig  uint32
}

// Call decides rseq(addr, length, flags, sig) for a thread registered as
// cur, with user addresses below userTop, in Linux's order: it returns
// the registration from now on, or the error. An unregistration is
// accepted only with the registered address, length and signature.
func Call(cur Reg, addr uint64, length uint32, flags int32, sig uint32, userTop uint64) (Reg, error) {
	if flags&FlagUnregister != 0 {
		switch {
		case flags != FlagUnregister, cur.Addr == 0, cur.Addr != addr, cur.Len != length:
			return cur, linux.EINVAL
		case cur.Sig != sig:
			return cur, linux.EPERM
		}
		return Reg{}, nil
	}
	if flags != 0 {
		return cur, linux.EINVAL
	}
	if cur.Addr != 0 {
		switch {
		case cur.Addr != addr || cur.Len != length:
			return cur, linux.EINVAL
		case cur.Sig != sig:
			return cur, linux.EPERM
		}
		return cur, linux.EBUSY
	}
	if addr%Size != 0 || length != Size {
		return cur, linux.EINVAL
	}
	if addr+Size < addr || addr+Size > userTop {
		return cur, linux.EFAULT
	}
	return Reg{Addr: addr, Len: length, Sig: sig}, nil
}

// CS is a critical-section descriptor (struct rseq_cs).
type CS struct {
	Version, Flags                 uint32
	Start, PostCommitOffset, Abort uint64
}

// Check validates cs as Linux does before it looks at the thread's
// instruction pointer: addresses below userTop, version 0, a range
// that does not wrap, and an abort handler outside the range. The
// signature word before the handler is checked by the caller, which
// reads it from user memory (SigAddr).
func (cs *CS) Check(userTop uint64) error {
	switch {
	case cs.Start >= userTop, cs.Start+cs.PostCommitOffset >= userTop, cs.Abort >= userTop, cs.Version > 0:
		return linux.EINVAL
	case cs.Start+cs.PostCommitOffset < cs.Start:
		return linux.EINVAL
	case cs.Abort-cs.Start < cs.PostCommitOffset:
		return linux.EINVAL
	}
	return nil
}

// SigAddr is where the signature the abort handler must follow lies.
func (cs *CS) SigAddr() uint64 { return cs.Abort - 4 }

// Contains reports whether ip is inside the critical section.
func (cs *CS) Contains(ip uint64) bool { return ip-cs.Start < cs.PostCommitOffset }
