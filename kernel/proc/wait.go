package proc

// wait4 and waitid: collecting children that exited, stopped or
// continued.

import (
	"encoding/binary"
)

// wait options (include/uapi/linux/wait.h).
const (
	wNoHang    = 1
	wUntraced  = 2 // WSTOPPED for waitid
	wExited    = 4
	wContinued = 8
	wNoWait    = 0x01000000
	wNoThread  = 0x20000000
	wAll       = 0x40000000
	wClone     = 0x80000000

	// si_code of SIGCHLD and waitid for stops and continues.
	cldStopped   = 5
	cldContinued = 6
)

// waitEvent is what a wait collected from one child.
type waitEvent struct {
	pid    int
	uid    uint32
	status int   // wait4's status word
	code   int32 // waitid's si_code
	sig    int32 // waitid's si_status
	usage  cpuTimes
	faults int64
	maxRSS int64
	sw     switches
}

// selects reports whether child c is chosen by wait4's pid argument.
func (p *Process) selects(c *Process, pid int) bool {
	c.mu.Lock()
	pgid := c.pgid
	c.mu.Unlock()
	switch {
	case pid > 0:
		return c.PID == pid
	case pid == -1:
		return true
	case pid == 0:
		return pgid == p.pgid
	default:
		return pgid == -pid
	}
}

// waitChild waits for a child chosen by pid (wait4's convention) to have
// something the options ask for. found is false when no child matches
// at all (ECHILD); a zero event with found means WNOHANG found nothing.
func (t *Thread) waitChild(pid, options int) (ev waitEvent, e int64) {
	p := t.Proc
	// interrupted: a signal is pending. As Linux's do_wait, the children
	// are looked at once more before the call gives way to it: the
	// signal may be the exit signal of the very child being waited for.
	interrupted := false
	for {
		opts := options
		if p.sig.ignoresChildren() {
			// SIGCHLD ignored or SA_NOCLDWAIT: exited children are
			// the kernel's to reap; a wait ends with ECHILD when the
			// last is gone.
			opts &^= wExited
		}
		p.mu.Lock()
		found := false
		for _, c := range p.children {
			if !p.selects(c, pid) || !c.waitKind(options) {
				continue
			}
			found = true
			if ev, ok := c.takeWaitEvent(opts); ok {
				if ev.code == cldExited || ev.code == cldKilled || ev.code == cldDumped {
					if options&wNoWait == 0 {
						delete(p.children, c.PID)
					}
				}
				p.mu.Unlock()
				if options&wNoWait == 0 && c.reapable(ev) {
					c.reap()
					ev.usage, ev.faults, ev.maxRSS, ev.sw = p.addChildUsage(c)
				}
				return ev, 0
			}
		}
		changed := p.changed
		p.mu.Unlock()
		if !found {
			return waitEvent{}, -eCHILD
		}
		if options&wNoHang != 0 {
			return waitEvent{}, 0
		}
		if interrupted {
			return waitEvent{}, t.restartOrEINTR()
		}
		t.waitBegin()
		select {
		case <-changed:
			t.sleepEnd()
		case <-t.sigWake:
			t.sleepEnd()
			interrupted = t.interrupted()
		}
	}
}

// waitKind reports whether a wait with these options looks at p: a
// child that sends SIGCHLD at exit without __WCLONE, another ("clone")
// child with it, either with __WALL (Linux's eligible_child).
func (p *Process) waitKind(options int) bool {
	if options&wAll != 0 {
		return true
	}
	p.mu.Lock()
	clone := p.exitSignal != sigCHLD
	p.mu.Unlock()
	return clone == (options&wClone != 0)
}

// takeWaitEvent reports what a wait with these options would collect from
// p, consuming a stop or continue report unless WNOWAIT.
func (p *Process) takeWaitEvent(options int) (waitEvent, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ev := waitEvent{pid: p.PID, uid: p.cred.ruid}
	switch {
	case p.state == procZombie && options&wExited != 0:
		ev.status = p.status
		ev.code, ev.sig = exitCode(p.status)
		return ev, true
	case p.state == procRunning && p.job.stopReport && options&wUntraced != 0:
		if options&wNoWait == 0 {
			p.job.stopReport = false
		}
		ev.status = p.job.stopSig<<8 | 0x7f
		ev.code, ev.sig = cldStopped, int32(p.job.stopSig)
		return ev, true
	case p.state == procRunning && p.job.contReport && options&wContinued != 0:
		if options&wNoWait == 0 {
			p.job.contReport = false
		}
		ev.status = 0xffff
		ev.code, ev.sig = cldContinued, sigCONT
		return ev, true
	}
	return waitEvent{}, false
}

// exitCode turns a wait status into siginfo's si_code and si_status:
// CLD_EXITED with the exit code, or CLD_KILLED / CLD_DUMPED with the
// signal.
func exitCode(status int) (code, value int32) {
	switch {
	case status&0x7f == 0:
		return cldExited, int32(status >> 8 & 0xff)
	case status&0x80 != 0:
		return cldDumped, int32(status & 0x7f)
	}
	return cldKilled, int32(status & 0x7f)
}

// reapable reports whether ev is an exit (the child goes away).
func (p *Process) reapable(ev waitEvent) bool {
	return ev.code == cldExited || ev.code == cldKilled || ev.code == cldDumped
}

// reap removes a collected zombie for good.
func (p *Process) reap() {
	p.mu.Lock()
	p.state = procReaped
	left := p.threadsLocked()
	p.mu.Unlock()
	tableMu.Lock()
	dropPID(p.PID)
	tableMu.Unlock()
	dropThreads(left)
}

// threadsLocked lists p's threads. Preconditions: p.mu is held.
func (p *Process) threadsLocked() []*Thread {
	var ts []*Thread
	for _, t := range p.threads {
		ts = append(ts, t)
	}
	return ts
}

// dropThreads takes a reaped process's threads out of the TID table. The
// thread that ended the group (exitGroup) turns the process into a zombie
// before it finishes leaving itself, so its parent may reap it first;
// after the reap its IDs must be gone, as Linux's release_task detaches
// them (pidfd_open found the thread and said EINVAL instead of ESRCH).
func dropThreads(ts []*Thread) {
	for _, t := range ts {
		unregisterThread(t)
	}
}

func sysWait4(t *Thread, a *[6]uint64) (int64, bool) {
	pid, statusAddr, options := int(int32(a[0])), uintptr(a[1]), int(uint32(a[2])) // options is a C int: __WCLONE is its sign bit
	if options&^(wNoHang|wUntraced|wContinued|wNoThread|wAll|wClone) != 0 {
		return -eINVAL, false
	}
	if pid == -1<<31 { // -INT_MIN is no process group: Linux says ESRCH
		return -eSRCH, false
	}
	ev, e := t.waitChild(pid, options|wExited)
	if e != 0 || ev.pid == 0 {
		return e, false
	}
	if a[3] != 0 {
		if e := putRusage(t, uintptr(a[3]), ev.usage, ev.maxRSS, ev.faults, ev.sw); e != 0 {
			return e, false
		}
	}
	if statusAddr != 0 {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(ev.status))
		if err := t.Proc.Space().CopyOut(statusAddr, b[:]); err != nil {
			return errno(err), false
		}
	}
	return int64(ev.pid), false
}

// waitid id types.
const (
	pAll   = 0
	pPID   = 1
	pPGID  = 2
	pPIDFD = 3
)

func sysWaitid(t *Thread, a *[6]uint64) (int64, bool) {
	idtype, id, infoAddr, options := int(a[0]), int(int32(a[1])), uintptr(a[2]), int(uint32(a[3]))
	if options&^(wNoHang|wUntraced|wExited|wContinued|wNoWait|wNoThread|wAll|wClone) != 0 ||
		options&(wUntraced|wExited|wContinued) == 0 {
		return -eINVAL, false
	}
	pid, nonblock := -1, false
	switch idtype {
	case pAll:
	case pPID:
		if id <= 0 {
			return -eINVAL, false
		}
		pid = id
	case pPGID:
		if id < 0 {
			return -eINVAL, false
		}
		pid = -id // 0: the caller's group, as wait4's 0
	case pPIDFD:
		if id < 0 {
			return -eINVAL, false
		}
		c, nb, err := t.pidfdOf(id)
		if err != nil {
			return errno(err), false
		}
		pid, nonblock = c.PID, nb
	default:
		return -eINVAL, false
	}
	// A non-blocking pidfd waits as WNOHANG would, and finding nothing
	// is EAGAIN unless the caller asked for WNOHANG itself.
	asked := options
	if nonblock {
		options |= wNoHang
	}
	ev, e := t.waitChild(pid, options)
	if e != 0 {
		return e, false
	}
	if nonblock && ev.pid == 0 && asked&wNoHang == 0 {
		return -eAGAIN, false
	}
	if a[4] != 0 && ev.pid != 0 {
		if e := putRusage(t, uintptr(a[4]), ev.usage, ev.maxRSS, ev.faults, ev.sw); e != 0 {
			return e, false
		}
	}
	if infoAddr != 0 {
		// Nothing collected (WNOHANG): Linux zeroes the siginfo.
		b := make([]byte, siSize)
		if ev.pid != 0 {
			info := sigInfo{signo: sigCHLD, code: ev.code, pid: int32(ev.pid), uid: ev.uid, status: ev.sig,
				value: ticks(ev.usage.user), stime: ticks(ev.usage.sys)}
			info.encode(b)
		}
		if err := t.Proc.Space().CopyOut(infoAddr, b); err != nil {
			return errno(err), false
		}
	}
	return 0, false
}
