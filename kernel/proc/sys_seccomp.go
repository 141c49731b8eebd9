package proc

import (
	"encoding/binary"

	"shortbread/kernel/seccomp"
)

// seccomp(2) and PR_SET_SECCOMP, as Linux 6.1 has them.
//
// Strict mode: a thread may make only read, write, exit and
// rt_sigreturn; any other system call ends the thread as if by SIGKILL
// (Linux's do_exit(SIGKILL): the thread, not the process, though a
// process of one thread is then killed by SIGKILL as its parent sees it).
//
// Filter mode: classic BPF programs (package seccomp checks and runs
// them) see each system call's number, architecture, instruction pointer
// and arguments, and the most urgent answer of all the thread's filters
// decides: kill the process or the thread (SIGSYS), SIGSYS to a handler
// (SECCOMP_RET_TRAP, with si_syscall, si_arch and the data in si_errno,
// RAX back to the call's number), an errno, ENOSYS for
// SECCOMP_RET_TRACE (no tracer can exist: no ptrace) and
// SECCOMP_RET_USER_NOTIF (no listener can exist, below), a log line
// (SECCOMP_RET_LOG), or the call. Attaching needs no_new_privs or
// privilege (EACCES); filters stack up to Linux's total length; TSYNC
// puts the caller's filters on every thread of the process whose own
// filters are an ancestor of the caller's, else fails with the first
// other thread's TID (ESRCH with TSYNC_ESRCH), and passes on the
// caller's no_new_privs. What is missing:
// SECCOMP_FILTER_FLAG_NEW_LISTENER (user notification, a file to answer
// system calls from user space: EINVAL) and the per-architecture allow
// cache (a speed-up only).
//
// Either mode is the thread's, inherited by the threads and processes it
// makes and kept across execve, and cannot be left.

// seccomp(2) operations, modes, flags, and what a filter sees
// (include/uapi/linux/seccomp.h, audit.h).
const (
	seccompSetModeStrict  = 0
	seccompSetModeFilter  = 1
	seccompGetActionAvail = 2
	seccompGetNotifSizes  = 3
	seccompModeStrict     = 1
	seccompModeFilter     = 2

	seccompFlagTsync            = 1 << 0
	seccompFlagLog              = 1 << 1
	seccompFlagSpecAllow        = 1 << 2
	seccompFlagNewListener      = 1 << 3
	seccompFlagTsyncEsrch       = 1 << 4
	seccompFlagWaitKillableRecv = 1 << 5
	seccompFlagMask             = 1<<6 - 1

	auditArchX8664 = 0xc000003e
	maxErrno       = 4095
	siSysSeccomp   = 1 // SIGSYS's si_code for seccomp (SYS_SECCOMP)

	nrRead, nrWrite, nrExit, nrRtSigreturn = 0, 1, 60, 15
)

// sysSeccomp implements seccomp(2).
func sysSeccomp(t *Thread, a *[6]uint64) (int64, bool) {
	return t.seccompSet(uint32(a[0]), uint32(a[1]), a[2]), false
}

// seccompSet is Linux's do_seccomp.
func (t *Thread) seccompSet(op, flags uint32, args uint64) int64 {
	s := t.Proc.Space()
	switch op {
	case seccompSetModeStrict:
		// No flags and no argument; a thread in filter mode stays so.
		if flags != 0 || args != 0 {
			return -eINVAL
		}
		if m := t.seccompMode.Load(); m != 0 && m != seccompModeStrict {
			return -eINVAL
		}
		t.seccompMode.Store(seccompModeStrict)
		return 0
	case seccompSetModeFilter:
		return t.seccompAttach(flags, args)
	case seccompGetActionAvail:
		if flags != 0 {
			return -eINVAL
		}
		var b [4]byte
		if err := s.CopyIn(uintptr(args), b[:]); err != nil {
			return errno(err)
		}
		if !seccomp.KnownAction(binary.LittleEndian.Uint32(b[:])) {
			return -eOPNOTSUPP
		}
		return 0
	case seccompGetNotifSizes:
		if flags != 0 {
			return -eINVAL
		}
		// struct seccomp_notif_sizes: a notification (id, pid, flags,
		// seccomp_data), a response, seccomp_data.
		var b [6]byte
		binary.LittleEndian.PutUint16(b[0:], 16+seccomp.DataSize)
		binary.LittleEndian.PutUint16(b[2:], 24)
		binary.LittleEndian.PutUint16(b[4:], seccomp.DataSize)
		return errno(s.CopyOut(uintptr(args), b[:]))
	}
	return -eINVAL
}

// seccompAttach is SECCOMP_SET_MODE_FILTER, its checks in Linux's order:
// the flags and their combinations, the struct sock_fprog (EFAULT), its
// length (EINVAL), no_new_privs or privilege (EACCES), the program
// (EFAULT, EINVAL), the thread's mode (EINVAL), the total length
// (ENOMEM), TSYNC.
func (t *Thread) seccompAttach(flags uint32, args uint64) int64 {
	if flags&^seccompFlagMask != 0 {
		return -eINVAL
	}
	if flags&seccompFlagTsync != 0 && flags&seccompFlagNewListener != 0 && flags&seccompFlagTsyncEsrch == 0 {
		return -eINVAL
	}
	if flags&seccompFlagWaitKillableRecv != 0 && flags&seccompFlagNewListener == 0 {
		return -eINVAL
	}
	s := t.Proc.Space()
	var fprog [16]byte // struct sock_fprog: a u16 length, a pointer
	if err := s.CopyIn(uintptr(args), fprog[:]); err != nil {
		return errno(err)
	}
	n := int(binary.LittleEndian.Uint16(fprog[:]))
	if n == 0 || n > seccomp.MaxInsns {
		return -eINVAL
	}
	if !t.noNewPrivs.Load() && !t.creds().privileged() {
		return -eACCES
	}
	at := binary.LittleEndian.Uint64(fprog[8:])
	if at == 0 {
		return -eINVAL // Linux's bpf_check_basics_ok: no program
	}
	raw := make([]byte, n*seccomp.InsnSize)
	if err := s.CopyIn(uintptr(at), raw); err != nil {
		return errno(err)
	}
	prog, err := seccomp.Check(seccomp.Decode(raw))
	if err != nil {
		return -eINVAL
	}
	if flags&seccompFlagNewListener != 0 {
		return -eINVAL // no user notification (above)
	}
	if m := t.seccompMode.Load(); m != 0 && m != seccompModeFilter {
		return -eINVAL
	}
	old := t.seccompFilter.Load()
	if len(prog)+seccomp.PathPenalty+old.Len() > seccomp.MaxPathInsns {
		return -eNOMEM
	}
	f := &seccomp.Filter{Prog: prog, Prev: old, Log: flags&seccompFlagLog != 0}
	p := t.Proc
	p.mu.Lock()
	defer p.mu.Unlock()
	if flags&seccompFlagTsync != 0 {
		for _, u := range p.threads {
			if u == t {
				continue
			}
			m := u.seccompMode.Load()
			if m == 0 || m == seccompModeFilter && old.HasAncestor(u.seccompFilter.Load()) {
				continue
			}
			if flags&seccompFlagTsyncEsrch != 0 {
				return -eSRCH
			}
			return int64(u.TID)
		}
	}
	t.seccompFilter.Store(f)
	t.seccompMode.Store(seccompModeFilter)
	if flags&seccompFlagTsync != 0 {
		nnp := t.noNewPrivs.Load()
		for _, u := range p.threads {
			if nnp {
				u.noNewPrivs.Store(true)
			}
			u.seccompFilter.Store(f)
			u.seccompMode.Store(seccompModeFilter)
		}
	}
	return 0
}

// seccompCheck runs before every system call of a thread in a seccomp
// mode. It reports done when the call is not to be made: then exit says
// whether the thread ends (as a handler's result does), and the
// registers hold what the program sees.
func (t *Thread) seccompCheck(no uint64) (done, exit bool) {
	if t.seccompMode.Load() == seccompModeStrict {
		if no == nrRead || no == nrWrite || no == nrExit || no == nrRtSigreturn {
			return false, false
		}
		Log.Infof("proc: %v tid %d: seccomp: system call %d in strict mode: killed", t.Proc, t.TID, no)
		return true, t.seccompExitThread(sigKILL)
	}
	r := &t.regs
	d := seccomp.Data{Nr: int32(no), Arch: auditArchX8664, IP: r.RIP,
		Args: [6]uint64{r.RDI, r.RSI, r.RDX, r.R10, r.R8, r.R9}}
	ret, match := t.seccompFilter.Load().Eval(&d)
	data := ret & seccomp.RetData
	switch action := ret & seccomp.RetActionFull; action {
	case seccomp.RetAllow:
		return false, false
	case seccomp.RetLog:
		Log.Infof("proc: %v tid %d: seccomp: system call %d logged", t.Proc, t.TID, no)
		return false, false
	case seccomp.RetErrno:
		r.RAX = uint64(-int64(min(data, maxErrno)))
	case seccomp.RetTrace, seccomp.RetUserNotif:
		e := int64(-eNOSYS)
		r.RAX = uint64(e)
	case seccomp.RetTrap:
		r.RAX = no // the handler sees the call's registers
		t.seccompSignal(no, data)
	default: // the kill actions, and any action Linux does not know
		Log.Infof("proc: %v tid %d: seccomp: system call %d: action %#x: killed", t.Proc, t.TID, no, action)
		t.seccompMode.Store(0) // Linux's SECCOMP_MODE_DEAD: nothing more is checked
		t.seccompFilter.Store(nil)
		t.Proc.mu.Lock()
		alone := len(t.Proc.threads) == 1
		t.Proc.mu.Unlock()
		if action == seccomp.RetKillThread && !alone {
			return true, t.seccompExitThread(sigSYS)
		}
		t.fatalSignal(sigSYS)
		return true, true
	}
	if match != nil && match.Log {
		Log.Infof("proc: %v tid %d: seccomp: system call %d: action %#x", t.Proc, t.TID, no, ret&seccomp.RetActionFull)
	}
	return true, false
}

// seccompSignal sends SIGSYS for SECCOMP_RET_TRAP, forced as a fault's
// signal is (blocked or ignored, it kills).
func (t *Thread) seccompSignal(no uint64, data uint32) {
	raw := make([]byte, 128)
	le := binary.LittleEndian
	le.PutUint32(raw[4:], data)            // si_errno
	le.PutUint64(raw[16:], t.regs.RIP)     // si_call_addr
	le.PutUint32(raw[24:], uint32(no))     // si_syscall
	le.PutUint32(raw[28:], auditArchX8664) // si_arch
	a := t.Proc.sig.get(sigSYS)
	if a.handler <= sigIgn || t.sigMask&bit(sigSYS) != 0 {
		t.fatalSignal(sigSYS)
		return
	}
	t.Proc.mu.Lock()
	t.pending.add(sigInfo{signo: sigSYS, code: siSysSeccomp, raw: raw}, false)
	t.Proc.mu.Unlock()
}

// seccompExitThread ends t alone (Linux's do_exit(sig)); a process left
// with no thread exits as killed by sig. It returns true, as a system
// call handler that ends the thread does.
func (t *Thread) seccompExitThread(sig int) bool {
	p := t.Proc
	p.mu.Lock()
	if !p.exiting && len(p.threads) == 1 {
		p.status = sig
	}
	p.mu.Unlock()
	return true
}
