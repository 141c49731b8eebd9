package proc

// System calls for processes, signals and process groups.

import (
	"encoding/binary"
)

const (
	wNoHang    = 1
	wUntraced  = 2
	wExited    = 4
	wContinued = 8
	wNoWait    = 0x01000000
	eCHILD     = 10
	eSRCH      = 3
)

func sysExitThread(t *Thread, a *[6]uint64) (int64, bool) {
	t.Proc.mu.Lock()
	if !t.Proc.exiting && len(t.Proc.threads) == 1 {
		t.Proc.status = int(a[0]&0xff) << 8
	}
	t.Proc.mu.Unlock()
	return 0, true
}

func sysExitGroup(t *Thread, a *[6]uint64) (int64, bool) {
	t.Proc.exitGroup(int(a[0]&0xff)<<8, t)
	return 0, true
}

func sysGetppid(t *Thread, a *[6]uint64) (int64, bool) {
	p := t.Proc
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.parent == nil {
		return 0, false
	}
	return int64(p.parent.PID), false
}

func sysFork(t *Thread, a *[6]uint64) (int64, bool) {
	return t.clone(uint64(sigCHLD), 0, 0, 0, 0), false
}

func sysVfork(t *Thread, a *[6]uint64) (int64, bool) {
	return t.clone(cloneVM|cloneVfork|uint64(sigCHLD), 0, 0, 0, 0), false
}

func sysClone(t *Thread, a *[6]uint64) (int64, bool) {
	// x86-64 argument order: flags, newsp, parent_tid, child_tid, tls.
	return t.clone(a[0], a[1], a[2], a[3], a[4]), false
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
		str, err := s.CopyInString(uintptr(ptr), maxArgSize)
		if err != nil {
			return nil, err
		}
		total += len(str) + 1
		if total > maxArgSize || i > 1<<16 {
			return nil, errArgTooLong
		}
		out = append(out, str)
	}
	return out, nil
}

func sysExecve(t *Thread, a *[6]uint64) (int64, bool) {
	s := t.Proc.Space()
	path, err := s.CopyInString(uintptr(a[0]), 4096)
	if err != nil {
		return errno(err), false
	}
	argv, err := t.readStrings(uintptr(a[1]))
	if err != nil {
		return errno(err), false
	}
	envp, err := t.readStrings(uintptr(a[2]))
	if err != nil {
		return errno(err), false
	}
	if err := t.execve(path, argv, envp); err != nil {
		return errno(err), false
	}
	return 0, false
}

// execve replaces the process image: other threads end first (Linux
// "de-threads" the group), handlers reset, a vfork parent resumes.
func (t *Thread) execve(path string, argv, envp []string) error {
	p := t.Proc
	// Load first: a failed exec leaves the process as it was.
	if err := t.exec(path, argv, envp); err != nil {
		return err
	}
	p.stopOthers(t)
	p.sig.resetForExec()
	p.files.CloseOnExec()
	t.altStack = stackT{}
	t.clearTID = 0
	p.mu.Lock()
	if p.vforkDone != nil {
		close(p.vforkDone)
		p.vforkDone = nil
	}
	p.mu.Unlock()
	return nil
}

// matches reports whether child c is selected by wait4's pid argument.
func (p *Process) matches(c *Process, pid int) bool {
	switch {
	case pid > 0:
		return c.PID == pid
	case pid == -1:
		return true
	case pid == 0:
		return c.pgid == p.pgid
	default:
		return c.pgid == -pid
	}
}

func sysWait4(t *Thread, a *[6]uint64) (int64, bool) {
	pid, statusAddr, options := int(int32(a[0])), uintptr(a[1]), int(a[2])
	if options&^(wNoHang|wUntraced|wContinued|0x40000000|0x80000000) != 0 {
		return -eINVAL, false
	}
	p := t.Proc
	for {
		p.mu.Lock()
		found := false
		for _, c := range p.children {
			c.mu.Lock()
			ok := p.matches(c, pid)
			zombie := c.state == procZombie
			status := c.status
			c.mu.Unlock()
			if !ok {
				continue
			}
			found = true
			if !zombie {
				continue
			}
			delete(p.children, c.PID)
			p.mu.Unlock()
			c.mu.Lock()
			c.state = procReaped
			c.mu.Unlock()
			tableMu.Lock()
			delete(table, c.PID)
			tableMu.Unlock()
			ct, faults, rss := p.addChildUsage(c)
			if a[3] != 0 {
				if e := putRusage(t, uintptr(a[3]), ct, rss, faults); e != 0 {
					return e, false
				}
			}
			if statusAddr != 0 {
				var b [4]byte
				binary.LittleEndian.PutUint32(b[:], uint32(status))
				if err := p.Space().CopyOut(statusAddr, b[:]); err != nil {
					return errno(err), false
				}
			}
			return int64(c.PID), false
		}
		changed := p.changed
		p.mu.Unlock()
		if !found {
			return -eCHILD, false
		}
		if options&wNoHang != 0 {
			return 0, false
		}
		t.sleepBegin()
		select {
		case <-changed:
			t.sleepEnd()
		case <-t.sigWake:
			t.sleepEnd()
			if t.interrupted() {
				return t.restartOrEINTR(), false
			}
		}
	}
}

func sysKill(t *Thread, a *[6]uint64) (int64, bool) {
	pid, sig := int(int32(a[0])), int(a[1])
	if sig < 0 || sig > nSig {
		return -eINVAL, false
	}
	var targets []*Process
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
	live := 0
	for _, p := range targets {
		p.mu.Lock()
		running := p.state == procRunning
		p.mu.Unlock()
		if !running {
			continue
		}
		live++
		if sig != 0 {
			p.signal(sig)
		}
	}
	if live == 0 {
		return -eSRCH, false
	}
	return 0, false
}

func sysTgkill(t *Thread, a *[6]uint64) (int64, bool) {
	return tkill(int(int32(a[0])), int(int32(a[1])), int(a[2]))
}

func sysTkill(t *Thread, a *[6]uint64) (int64, bool) {
	return tkill(-1, int(int32(a[0])), int(a[1]))
}

func tkill(tgid, tid, sig int) (int64, bool) {
	if sig < 0 || sig > nSig || tid <= 0 {
		return -eINVAL, false
	}
	target := lookupThread(tid)
	if target == nil || (tgid > 0 && target.Proc.PID != tgid) {
		return -eSRCH, false
	}
	if sig != 0 {
		target.signalThread(sig)
	}
	return 0, false
}

func sysRtSigaction(t *Thread, a *[6]uint64) (int64, bool) {
	sig, act, oact := int(a[0]), uintptr(a[1]), uintptr(a[2])
	if a[3] != 8 || sig < 1 || sig > nSig || (act != 0 && (sig == sigKILL || sig == sigSTOP)) {
		return -eINVAL, false
	}
	s := t.Proc.Space()
	var nb [32]byte
	if act != 0 {
		if err := s.CopyIn(act, nb[:]); err != nil {
			return errno(err), false
		}
	}
	h := t.Proc.sig
	h.mu.Lock()
	old := h.act[sig]
	if act != 0 {
		le := binary.LittleEndian
		h.act[sig] = sigAction{le.Uint64(nb[0:]), le.Uint64(nb[8:]), le.Uint64(nb[16:]), le.Uint64(nb[24:]) &^ unblockable}
	}
	h.mu.Unlock()
	if act != 0 {
		// Setting SIG_IGN discards what is pending.
		if a := h.get(sig); a.handler == sigIgn || (a.handler == sigDfl && ignoredByDefault(sig)) {
			t.Proc.mu.Lock()
			t.Proc.pending &^= bit(sig)
			for _, th := range t.Proc.threads {
				th.pending &^= bit(sig)
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
			t.sigMask |= v
		case 1:
			t.sigMask &^= v
		case 2:
			t.sigMask = v
		default:
			return -eINVAL, false
		}
		t.sigMask &^= unblockable
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

func sysRtSigpending(t *Thread, a *[6]uint64) (int64, bool) {
	if a[1] != 8 {
		return -eINVAL, false
	}
	t.Proc.mu.Lock()
	set := (t.pending | t.Proc.pending) & t.sigMask
	t.Proc.mu.Unlock()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], set)
	return errno(t.Proc.Space().CopyOut(uintptr(a[0]), b[:])), false
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
	t.sigMask = binary.LittleEndian.Uint64(b[:]) &^ unblockable
	for !t.interrupted() {
		t.sleepBegin()
		<-t.sigWake
		t.sleepEnd()
	}
	return -eINTR, false
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
		rsp := t.regs.RSP
		if old.size != 0 && rsp > old.sp && rsp <= old.sp+old.size {
			return -ePERM, false // on the alternate stack now
		}
		switch {
		case n.flags&2 != 0: // SS_DISABLE
			t.altStack = stackT{flags: 2}
		case n.flags != 0:
			return -eINVAL, false
		case n.size < 2048: // MINSIGSTKSZ
			return -eNOMEM, false
		default:
			t.altStack = n
		}
	}
	if oss != 0 {
		var b [24]byte
		le := binary.LittleEndian
		flags := old.flags
		if old.size == 0 {
			flags = 2
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
	target := t.Proc
	if pid != 0 && pid != t.Proc.PID {
		target = lookup(pid)
		if target == nil || target.parent != t.Proc {
			return -eSRCH, false
		}
	}
	if pgid < 0 {
		return -eINVAL, false
	}
	if pgid == 0 {
		pgid = target.PID
	}
	target.mu.Lock()
	target.pgid = pgid
	target.mu.Unlock()
	return 0, false
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
	p.sid, p.pgid = p.PID, p.PID
	return int64(p.PID), false
}

func sysGetsid(t *Thread, a *[6]uint64) (int64, bool) {
	return idOf(t, int(int32(a[0])), func(p *Process) int { return p.sid })
}

func sysSetRobustList(t *Thread, a *[6]uint64) (int64, bool) {
	if a[1] != 24 {
		return -eINVAL, false
	}
	t.robustList = uintptr(a[0])
	return 0, false
}

// sysPause sleeps until a signal is delivered; it always fails with EINTR.
func sysPause(t *Thread, a *[6]uint64) (int64, bool) {
	for !t.interrupted() {
		t.sleepBegin()
		<-t.sigWake
		t.sleepEnd()
	}
	return -eINTR, false
}
