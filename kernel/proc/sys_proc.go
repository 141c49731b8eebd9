package proc

// System calls for processes, signals and process groups.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/klog"
	"shortbread/kernel/mm"
)

const (
	eCHILD = 10
	eSRCH  = 3
	eACCES = 13
)

func sysExitThread(t *Thread, a *[6]uint64) (int64, bool) {
	t.Proc.mu.Lock()
	if !t.Proc.exiting && len(t.Proc.threads) == 1 {
		t.Proc.status = int(a[0]&0xff) << 8
	}
	t.leaving = true // Linux's PF_EXITING: signals go to other threads
	t.Proc.mu.Unlock()
	return 0, true
}

func sysExitGroup(t *Thread, a *[6]uint64) (int64, bool) {
	t.Proc.exitGroup(int(a[0]&0xff)<<8, t)
	return 0, true
}

func sysGetppid(t *Thread, a *[6]uint64) (int64, bool) {
	p := t.Proc
	ppid := 0
	p.mu.Lock()
	if p.parent != nil {
		ppid = p.parent.PID
	}
	p.mu.Unlock()
	return int64(ppid), false
}

func sysFork(t *Thread, a *[6]uint64) (int64, bool) {
	return t.clone(cloneArgs{exitSignal: sigCHLD}), false
}

func sysVfork(t *Thread, a *[6]uint64) (int64, bool) {
	return t.clone(cloneArgs{flags: cloneVM | cloneVfork, exitSignal: sigCHLD}), false
}

func sysClone(t *Thread, a *[6]uint64) (int64, bool) {
	// x86-64 argument order: flags, newsp, parent_tid, child_tid, tls.
	return t.clone(cloneLegacy(a[0], a[1], a[2], a[3], a[4])), false
}

// struct clone_args sizes: VER0 ends at tls, VER1 adds set_tid and
// set_tid_size, VER2 cgroup.
const (
	cloneArgsVer0 = 64
	cloneArgsVer1 = 80
	cloneArgsVer2 = 88
	maxSetTID     = 32 // MAX_PID_NS_LEVEL
)

// sysClone3 is clone with its arguments in a struct clone_args of the
// given size: a larger struct than this kernel knows is fine when the
// rest is zero (E2BIG otherwise, and past a page). It checks what Linux's
// copy_clone_args_from_user and clone3_args_valid check, in their order.
// There is one PID namespace, so set_tid names at most one ID, which
// needs CAP_SYS_ADMIN (CAP_CHECKPOINT_RESTORE) and must be free. There
// are no cgroups: CLONE_INTO_CGROUP's descriptor is checked for range
// and ignored, as in a Linux built without CONFIG_CGROUPS.
func sysClone3(t *Thread, a *[6]uint64) (int64, bool) {
	at, size := uintptr(a[0]), a[1]
	if size > mm.PageSize {
		return -e2BIG, false
	}
	if size < cloneArgsVer0 {
		return -eINVAL, false
	}
	s := t.Proc.Space()
	buf := make([]byte, size)
	if err := s.CopyIn(at, buf); err != nil {
		return errno(err), false
	}
	for _, c := range buf[min(size, cloneArgsVer2):] {
		if c != 0 {
			return -e2BIG, false
		}
	}
	var w [11]uint64
	for i := range w {
		if off := 8 * uint64(i); off < size {
			w[i] = binary.LittleEndian.Uint64(buf[off:])
		}
	}
	flags, pidfd, ctid, ptid, exitSig, stack, stackSize, tls, setTID, setTIDSize, cgroup :=
		w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10]
	switch {
	case setTIDSize > maxSetTID,
		setTID == 0 && setTIDSize > 0,
		setTID != 0 && setTIDSize == 0,
		exitSig&^cloneSignalMask != 0 || exitSig > 64,
		flags&cloneIntoCgroup != 0 && (cgroup > 1<<31-1 || size < cloneArgsVer2):
		return -eINVAL, false
	}
	var tids []int32
	if setTIDSize > 0 {
		b := make([]byte, 4*setTIDSize)
		if err := s.CopyIn(uintptr(setTID), b); err != nil {
			return errno(err), false
		}
		for i := range setTIDSize {
			tids = append(tids, int32(binary.LittleEndian.Uint32(b[4*i:])))
		}
	}
	switch {
	case flags&^(cloneLegacyFlags|cloneClearSighand|cloneIntoCgroup) != 0,
		flags&(cloneDetached|cloneSignalMask) != 0,
		flags&(cloneSighand|cloneClearSighand) == cloneSighand|cloneClearSighand,
		flags&(cloneThread|cloneParent) != 0 && exitSig != 0,
		stack == 0 && stackSize != 0,
		stack != 0 && (stackSize == 0 || stack+stackSize < stack || stack+stackSize > mm.UserTop):
		return -eINVAL, false
	}
	args := cloneArgs{flags: flags, pidfd: pidfd, ptid: ptid, ctid: ctid, tls: tls, exitSignal: int(exitSig)}
	if stack != 0 {
		args.stack = stack + stackSize // the stack grows down from its end
	}
	if len(tids) > 0 {
		// alloc_pid's checks: one level of namespace, an ID in range,
		// then the privilege.
		switch {
		case len(tids) > 1, tids[0] < 1 || tids[0] >= maxPID:
			return -eINVAL, false
		case !t.creds().privileged():
			return -ePERM, false
		}
		args.setTID = int(tids[0])
	}
	return t.clone(args), false
}

// readStrings copies in a NULL-terminated array of string pointers.
func (t *Thread) readStrings(at uintptr) ([]string, error) {
	s := t.Proc.Space()
	var out []string
	total := 0
	for i := 0; at != 0; i++ {
		var b [8]byte
		if err := s.CopyIn(at+uintptr(8*i), b[:]); err != nil {
			return nil, err
		}
		ptr := binary.LittleEndian.Uint64(b[:])
		if ptr == 0 {
			break
		}
		str, err := s.CopyInString(uintptr(ptr), maxArgStrlen)
		if errors.Is(err, mm.ErrNameTooLong) {
			return nil, errArgTooLong
		}
		if err != nil {
			return nil, err
		}
		// No more than the largest room exec gives (checkArgRoom
		// applies the caller's).
		total += len(str) + 1 + 8
		if total > maxArgRoom {
			return nil, errArgTooLong
		}
		out = append(out, str)
	}
	return out, nil
}

func sysExecve(t *Thread, a *[6]uint64) (int64, bool) {
	path, err := t.Proc.Space().CopyInString(uintptr(a[0]), 4096)
	if err != nil {
		return errno(err), false
	}
	return t.execveArgs(execPath(path), a[1], a[2]), false
}

// sysExecveat is execve on a path from a directory descriptor, or on the
// descriptor itself with an empty path and AT_EMPTY_PATH (fexecve).
func sysExecveat(t *Thread, a *[6]uint64) (int64, bool) {
	dirfd, flags := int(int32(a[0])), int(a[4])
	if flags&^(linux.AT_EMPTY_PATH|linux.AT_SYMLINK_NOFOLLOW) != 0 {
		return -eINVAL, false
	}
	path, err := t.path(a[1])
	if err != nil {
		return errno(err), false
	}
	if path == "" && flags&linux.AT_EMPTY_PATH == 0 {
		return -eNOENT, false
	}
	dir, err := t.dirOf(dirfd, path)
	if err != nil {
		return errno(err), false
	}
	tgt := execTarget{dir: dir, path: path, flags: flags, name: path}
	if dir != nil {
		fdFlags, _ := t.Proc.files.FDFlags(dirfd)
		tgt.closedByExec = fdFlags&linux.FD_CLOEXEC != 0
	}
	switch {
	case dir == nil:
	case path == "":
		tgt.name = fmt.Sprintf("/dev/fd/%d", dirfd)
	default:
		tgt.name = fmt.Sprintf("/dev/fd/%d/%s", dirfd, path)
	}
	return t.execveArgs(tgt, a[2], a[3]), false
}

// execveArgs reads argv and envp and runs the program tgt names.
func (t *Thread) execveArgs(tgt execTarget, argvAt, envpAt uint64) int64 {
	if e := t.checkExecNproc(); e != 0 {
		return e
	}
	argv, err := t.readStrings(uintptr(argvAt))
	if err != nil {
		return errno(err)
	}
	envp, err := t.readStrings(uintptr(envpAt))
	if err != nil {
		return errno(err)
	}
	t.Proc.mu.Lock()
	room := argRoom(t.Proc.rlimits()[rlimitStack].cur)
	t.Proc.mu.Unlock()
	if err := checkArgRoom(room, tgt.name, argv, envp); err != nil {
		return errno(err)
	}
	if err := t.execve(tgt, argv, envp); err != nil {
		// Why a program was refused (which segment, which check) is in
		// err; the caller only sees the errno.
		if Log != nil && Log.Enabled(klog.Debug) {
			Log.Debugf("proc: %v: execve %q refused: %v", t.Proc, tgt.name, err)
		}
		return errno(err)
	}
	return 0
}

// execve replaces the process image: other threads end first (Linux
// "de-threads" the group; exec does it once the new image is built, and
// releases the futexes the old program held), handlers reset, a vfork
// parent resumes.
func (t *Thread) execve(tgt execTarget, argv, envp []string) error {
	p := t.Proc
	// Load first: a failed exec leaves the process as it was.
	if err := t.exec(tgt, argv, envp); err != nil {
		return err
	}
	p.sig.resetForExec()
	p.deleteTimers()
	p.files.CloseOnExec()
	t.altStack = stackT{}
	t.clearTID, t.clearSpace = 0, nil
	t.rseq = rseqState{} // the area was in the old program's memory
	t.securebits &^= 1 << secureKeepCaps
	p.mu.Lock()
	if p.vforkDone != nil {
		close(p.vforkDone)
		p.vforkDone = nil
	}
	p.mu.Unlock()
	return nil
}

func sysKill(t *Thread, a *[6]uint64) (int64, bool) {
	pid, sig := int(int32(a[0])), int(a[1])
	if pid == math.MinInt32 {
		return -eSRCH, false // -INT_MIN names no group
	}
	var targets []*Process
	if pid <= 0 {
		// A group or every process: a member's fork in progress
		// passes the signal on to its child (forkWatch).
		groupSendMu.RLock()
		defer groupSendMu.RUnlock()
	}
	tableMu.Lock()
	switch {
	case pid > 0:
		if p := table[pid]; p != nil {
			targets = append(targets, p)
		}
	case pid == -1:
		for _, p := range table {
			if p.PID != 1 && p != t.Proc {
				targets = append(targets, p)
			}
		}
	default:
		pg := -pid
		if pid == 0 {
			pg = t.Proc.pgid
		}
		for _, p := range table {
			if p.pgid == pg {
				targets = append(targets, p)
			}
		}
	}
	tableMu.Unlock()
	// Linux looks the targets up first and checks the signal number for
	// each (so a missing process is ESRCH whatever the number). A group
	// succeeds if one member took the signal, else fails as its last
	// member did; kill(-1) succeeds unless a member failed other than
	// by EPERM, so a user who may signal none of them gets 0.
	count, ret, success := 0, int64(0), false
	for _, p := range targets {
		p.mu.Lock()
		exists := p.state != procReaped // a zombie can be signalled (in vain)
		p.mu.Unlock()
		if !exists {
			continue
		}
		count++
		e := t.killOne(p, sig)
		if e == 0 && sig != 0 && pid <= 0 {
			p.noteGroupSignal(t.senderInfo(sig, siUser))
		}
		success = success || e == 0
		if pid != -1 || e != -ePERM {
			ret = e
		}
	}
	switch {
	case count == 0:
		return -eSRCH, false
	case pid > 0 || pid == -1 || !success:
		return ret, false
	}
	return 0, false
}

// killOne is kill's work for one process: Linux's check_kill_permission
// (the signal number, then the sender's right), then the signal.
func (t *Thread) killOne(p *Process, sig int) int64 {
	if sig < 0 || sig > nSig {
		return -eINVAL
	}
	if !t.mayKill(p, sig) {
		return -ePERM
	}
	if sig != 0 && !p.shielded(sig) {
		p.sendSignal(t.senderInfo(sig, siUser))
	}
	return 0
}

// senderInfo is the siginfo of a signal t sends.
func (t *Thread) senderInfo(sig int, code int32) sigInfo {
	return sigInfo{signo: sig, code: code, pid: int32(t.Proc.PID), uid: t.creds().ruid}
}

// mayKill reports whether t may signal p (kill_ok_by_cred): root may, and
// so may a sender whose real or effective ID is the target's real or
// saved one, and SIGCONT may go to any process of the sender's session
// (a shell resumes the jobs it started, whatever their IDs became).
func (t *Thread) mayKill(p *Process, sig int) bool {
	c := t.creds()
	if c.privileged() || p == t.Proc {
		return true
	}
	self := t.Proc
	self.mu.Lock()
	sid := self.sid
	self.mu.Unlock()
	p.mu.Lock()
	tr, ts, tsid := p.cred.ruid, p.cred.suid, p.sid
	p.mu.Unlock()
	if sig == sigCONT && tsid == sid {
		return true
	}
	return c.euid == tr || c.euid == ts || c.ruid == tr || c.ruid == ts
}

func sysTgkill(t *Thread, a *[6]uint64) (int64, bool) {
	tgid, tid := int(int32(a[0])), int(int32(a[1]))
	if tgid <= 0 || tid <= 0 {
		return -eINVAL, false
	}
	return t.tkill(tgid, tid, int(a[2]), nil), false
}

func sysTkill(t *Thread, a *[6]uint64) (int64, bool) {
	tid := int(int32(a[0]))
	if tid <= 0 {
		return -eINVAL, false
	}
	return t.tkill(-1, tid, int(a[1]), nil), false
}

// tkill sends a signal to thread tid (in thread group tgid, if positive)
// with the given siginfo, or SI_TKILL's. As Linux's do_send_specific it
// finds the thread first (ESRCH), then checks the signal number and the
// sender's right. An exited leader whose process is not yet reaped is
// still there to be signalled, in vain.
func (t *Thread) tkill(tgid, tid, sig int, info *sigInfo) int64 {
	target := lookupThread(tid)
	var proc *Process
	if target != nil {
		proc = target.Proc
	} else if p := lookup(tid); p != nil {
		p.mu.Lock()
		zombie := p.state == procZombie
		p.mu.Unlock()
		if zombie {
			proc = p
		}
	}
	if proc == nil || (tgid > 0 && proc.PID != tgid) {
		return -eSRCH
	}
	if sig < 0 || sig > nSig {
		return -eINVAL
	}
	if !t.mayKill(proc, sig) {
		return -ePERM
	}
	if sig == 0 || target == nil || proc.shielded(sig) {
		return 0
	}
	if info == nil {
		in := t.senderInfo(sig, siTkill)
		info = &in
	}
	return target.sendSignal(*info)
}

// queuedInfo reads rt_sigqueueinfo's siginfo (EFAULT before anything
// else is checked). A thread may not pretend to be the kernel (si_code
// >= 0) or tkill when signalling a thread other than itself (Linux
// compares the target with the caller's thread ID).
func (t *Thread) queuedInfo(target, sig int, at uintptr) (sigInfo, int64) {
	raw := make([]byte, siSize)
	if err := t.Proc.Space().CopyIn(at, raw); err != nil {
		return sigInfo{}, errno(err)
	}
	code := int32(binary.LittleEndian.Uint32(raw[8:]))
	if (code >= 0 || code == siTkill) && target != t.TID {
		return sigInfo{}, -ePERM
	}
	return sigInfo{signo: sig, code: code, raw: raw}, 0
}

func sysRtSigqueueinfo(t *Thread, a *[6]uint64) (int64, bool) {
	pid, sig := int(int32(a[0])), int(int32(a[1]))
	info, e := t.queuedInfo(pid, sig, uintptr(a[2]))
	if e != 0 {
		return e, false
	}
	p := lookup(pid)
	if p == nil || pid <= 0 {
		return -eSRCH, false
	}
	if sig < 0 || sig > nSig {
		return -eINVAL, false
	}
	if !t.mayKill(p, sig) {
		return -ePERM, false
	}
	if sig == 0 || p.shielded(sig) {
		return 0, false
	}
	return p.sendSignal(info), false
}

func sysRtTgsigqueueinfo(t *Thread, a *[6]uint64) (int64, bool) {
	tgid, tid, sig := int(int32(a[0])), int(int32(a[1])), int(int32(a[2]))
	raw := make([]byte, siSize)
	if err := t.Proc.Space().CopyIn(uintptr(a[3]), raw); err != nil {
		return errno(err), false
	}
	if tgid <= 0 || tid <= 0 {
		return -eINVAL, false
	}
	info, e := t.queuedInfo(tid, sig, uintptr(a[3]))
	if e != 0 {
		return e, false
	}
	return t.tkill(tgid, tid, sig, &info), false
}

func sysRtSigaction(t *Thread, a *[6]uint64) (int64, bool) {
	sig, act, oact := int(a[0]), uintptr(a[1]), uintptr(a[2])
	if a[3] != 8 {
		return -eINVAL, false
	}
	// The new action is read before the signal number is checked.
	s := t.Proc.Space()
	var nb [32]byte
	if act != 0 {
		if err := s.CopyIn(act, nb[:]); err != nil {
			return errno(err), false
		}
	}
	if sig < 1 || sig > nSig || (act != 0 && (sig == sigKILL || sig == sigSTOP)) {
		return -eINVAL, false
	}
	h := t.Proc.sig
	h.mu.Lock()
	old := h.act[sig]
	if act != 0 {
		le := binary.LittleEndian
		// Unknown flag bits are dropped, so that a program can tell
		// which ones this kernel knows (SA_UNSUPPORTED's probe).
		h.act[sig] = sigAction{le.Uint64(nb[0:]), le.Uint64(nb[8:]) & saKnownFlags, le.Uint64(nb[16:]), le.Uint64(nb[24:]) &^ unblockable}
	}
	h.mu.Unlock()
	if act != 0 {
		// Setting SIG_IGN discards what is pending.
		if a := h.get(sig); a.handler == sigIgn || (a.handler == sigDfl && ignoredByDefault(sig)) {
			t.Proc.mu.Lock()
			t.Proc.pending.discard(sig)
			for _, th := range t.Proc.threads {
				th.pending.discard(sig)
			}
			t.Proc.mu.Unlock()
		}
	}
	if oact != 0 {
		var ob [32]byte
		le := binary.LittleEndian
		le.PutUint64(ob[0:], old.handler)
		le.PutUint64(ob[8:], old.flags)
		le.PutUint64(ob[16:], old.restorer)
		le.PutUint64(ob[24:], old.mask)
		if err := s.CopyOut(oact, ob[:]); err != nil {
			return errno(err), false
		}
	}
	return 0, false
}

func sysRtSigprocmask(t *Thread, a *[6]uint64) (int64, bool) {
	how, set, oset := int(a[0]), uintptr(a[1]), uintptr(a[2])
	if a[3] != 8 {
		return -eINVAL, false
	}
	s := t.Proc.Space()
	old := t.sigMask
	if set != 0 {
		var b [8]byte
		if err := s.CopyIn(set, b[:]); err != nil {
			return errno(err), false
		}
		v := binary.LittleEndian.Uint64(b[:])
		switch how {
		case 0:
			t.setSigMask(old | v)
		case 1:
			t.setSigMask(old &^ v)
		case 2:
			t.setSigMask(v)
		default:
			return -eINVAL, false
		}
	}
	if oset != 0 {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], old)
		if err := s.CopyOut(oset, b[:]); err != nil {
			return errno(err), false
		}
	}
	return 0, false
}

// sysRtSigpending writes as much of the set as the caller's size asks,
// up to the whole 8 bytes (Linux refuses only a larger size).
func sysRtSigpending(t *Thread, a *[6]uint64) (int64, bool) {
	if a[1] > 8 {
		return -eINVAL, false
	}
	t.Proc.mu.Lock()
	set := (t.pending.mask | t.Proc.pending.mask) & t.sigMask
	t.Proc.mu.Unlock()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], set)
	return errno(t.Proc.Space().CopyOut(uintptr(a[0]), b[:a[1]])), false
}

func sysRtSigsuspend(t *Thread, a *[6]uint64) (int64, bool) {
	if a[1] != 8 {
		return -eINVAL, false
	}
	var b [8]byte
	if err := t.Proc.Space().CopyIn(uintptr(a[0]), b[:]); err != nil {
		return errno(err), false
	}
	t.suspendOld, t.inSuspend = t.sigMask, true
	t.setSigMask(binary.LittleEndian.Uint64(b[:]))
	for !t.interrupted() {
		t.waitBegin()
		<-t.sigWake
		t.sleepEnd()
	}
	return -eRESTARTNOHAND, false // a stop and SIGCONT, no handler: it waits again
}

// onAltStack reports whether the thread runs on its alternate signal
// stack.
func (t *Thread) onAltStack() bool {
	a, rsp := t.altStack, t.regs.RSP
	return a.size != 0 && rsp > a.sp && rsp <= a.sp+a.size
}

func sysSigaltstack(t *Thread, a *[6]uint64) (int64, bool) {
	s := t.Proc.Space()
	ss, oss := uintptr(a[0]), uintptr(a[1])
	old := t.altStack
	if ss != 0 {
		var b [24]byte
		if err := s.CopyIn(ss, b[:]); err != nil {
			return errno(err), false
		}
		le := binary.LittleEndian
		n := stackT{sp: le.Uint64(b[0:]), flags: int32(le.Uint32(b[8:])), size: le.Uint64(b[16:])}
		if t.onAltStack() {
			return -ePERM, false
		}
		const ssOnStack, ssDisable, ssAutoDisarm = 1, 2, 1 << 31
		switch mode := uint32(n.flags) &^ ssAutoDisarm; {
		case mode == ssDisable:
			t.altStack = stackT{flags: ssDisable}
		case mode != 0 && mode != ssOnStack:
			return -eINVAL, false
		case n.size < 2048: // MINSIGSTKSZ
			return -eNOMEM, false
		default:
			n.flags &^= ssOnStack // the old spelling of "enable"
			t.altStack = n
		}
	}
	if oss != 0 {
		var b [24]byte
		le := binary.LittleEndian
		flags := old.flags
		switch {
		case old.size == 0:
			flags = 2
		case t.onAltStack():
			flags = 1 // SS_ONSTACK
		}
		le.PutUint64(b[0:], old.sp)
		le.PutUint32(b[8:], uint32(flags))
		le.PutUint64(b[16:], old.size)
		if err := s.CopyOut(oss, b[:]); err != nil {
			return errno(err), false
		}
	}
	return 0, false
}

func sysSetpgid(t *Thread, a *[6]uint64) (int64, bool) {
	pid, pgid := int(int32(a[0])), int(int32(a[1]))
	self := t.Proc
	if pgid < 0 {
		return -eINVAL, false
	}
	target := self
	if pid != 0 && pid != self.PID {
		target = lookup(pid)
		if target == nil {
			return -eSRCH, false
		}
		target.mu.Lock()
		child, execed := target.parent == self, target.execed
		target.mu.Unlock()
		if !child {
			return -eSRCH, false
		}
		if execed {
			return -eACCES, false
		}
	}
	if pgid == 0 {
		pgid = target.PID
	}
	self.mu.Lock()
	sid := self.sid
	self.mu.Unlock()
	target.mu.Lock()
	leader, tsid := target.sid == target.PID, target.sid
	target.mu.Unlock()
	if leader || tsid != sid {
		return -ePERM, false
	}
	// Joining another group: it must exist in the caller's session.
	if pgid != target.PID && !groupInSession(pgid, sid) {
		return -ePERM, false
	}
	target.mu.Lock()
	target.pgid = pgid
	target.mu.Unlock()
	return 0, false
}

// groupInSession reports whether process group pgid has a member in
// session sid.
func groupInSession(pgid, sid int) bool {
	tableMu.Lock()
	defer tableMu.Unlock()
	for _, p := range table {
		p.mu.Lock()
		ok := p.pgid == pgid && p.sid == sid && p.state != procReaped
		p.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}

// idOf returns a field of the calling process (pid 0) or another one.
func idOf(t *Thread, pid int, field func(*Process) int) (int64, bool) {
	target := t.Proc
	if pid != 0 {
		if target = lookup(pid); target == nil {
			return -eSRCH, false
		}
	}
	target.mu.Lock()
	defer target.mu.Unlock()
	return int64(field(target)), false
}

func sysGetpgid(t *Thread, a *[6]uint64) (int64, bool) {
	return idOf(t, int(int32(a[0])), func(p *Process) int { return p.pgid })
}

func sysGetpgrp(t *Thread, a *[6]uint64) (int64, bool) {
	t.Proc.mu.Lock()
	defer t.Proc.mu.Unlock()
	return int64(t.Proc.pgid), false
}

func sysSetsid(t *Thread, a *[6]uint64) (int64, bool) {
	p := t.Proc
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pgid == p.PID {
		return -ePERM, false
	}
	p.sid, p.pgid, p.ctty = p.PID, p.PID, nil
	return int64(p.PID), false
}

func sysGetsid(t *Thread, a *[6]uint64) (int64, bool) {
	return idOf(t, int(int32(a[0])), func(p *Process) int { return p.sid })
}

// sysPause sleeps until a signal is delivered; it always fails with EINTR.
func sysPause(t *Thread, a *[6]uint64) (int64, bool) {
	for !t.interrupted() {
		t.waitBegin()
		<-t.sigWake
		t.sleepEnd()
	}
	return -eRESTARTNOHAND, false // only a handler ends it (EINTR), as on Linux
}
