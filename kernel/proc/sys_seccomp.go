package proc

// seccomp(2) and PR_SET_SECCOMP: strict mode, as Linux 6.1 has it. A
// thread in strict mode may make only read, write, exit and rt_sigreturn;
// any other system call ends the thread as if by SIGKILL (Linux's
// do_exit(SIGKILL): the thread, not the process, though a process of one
// thread is then killed by SIGKILL as its parent sees it). The mode is
// the thread's, inherited by the threads and processes it makes and kept
// across execve, and it cannot be left.
//
// Filter mode (SECCOMP_SET_MODE_FILTER, classic BPF programs) is not
// supported: it fails with EINVAL, as on a Linux built without
// CONFIG_SECCOMP_FILTER, which is how programs probe for it (systemd,
// browsers and container runtimes then go on without a sandbox or
// refuse to start, rather than run believing in a filter that is not
// there). SECCOMP_GET_ACTION_AVAIL and SECCOMP_GET_NOTIF_SIZES, which
// describe filters, are EINVAL too.

// seccomp(2) operations and modes (include/uapi/linux/seccomp.h).
const (
	seccompSetModeStrict  = 0
	seccompSetModeFilter  = 1
	seccompGetActionAvail = 2
	seccompGetNotifSizes  = 3
	seccompModeStrict     = 1
	seccompModeFilter     = 2

	nrRead, nrWrite, nrExit, nrRtSigreturn = 0, 1, 60, 15
)

// sysSeccomp implements seccomp(2).
func sysSeccomp(t *Thread, a *[6]uint64) (int64, bool) {
	return t.seccompSet(uint32(a[0]), uint32(a[1]), a[2]), false
}

// seccompSet is Linux's do_seccomp: strict mode takes no flags and no
// argument (EINVAL), and is refused (EINVAL) to a thread in another mode.
func (t *Thread) seccompSet(op, flags uint32, args uint64) int64 {
	switch op {
	case seccompSetModeStrict:
		if flags != 0 || args != 0 {
			return -eINVAL
		}
		t.seccomp = seccompModeStrict
		return 0
	case seccompSetModeFilter, seccompGetActionAvail, seccompGetNotifSizes:
		return -eINVAL // no filter support (above)
	}
	return -eINVAL
}

// seccompAllows reports whether a thread in strict mode may make system
// call no.
func seccompAllows(no uint64) bool {
	return no == nrRead || no == nrWrite || no == nrExit || no == nrRtSigreturn
}

// seccompKill ends t for a system call strict mode forbids; it returns
// true (the thread exits), as a system call handler that ends it does.
func (t *Thread) seccompKill(no uint64) bool {
	Log.Infof("proc: %v tid %d: seccomp: system call %d in strict mode: killed", t.Proc, t.TID, no)
	p := t.Proc
	p.mu.Lock()
	if !p.exiting && len(p.threads) == 1 {
		p.status = sigKILL
	}
	p.mu.Unlock()
	return true
}
