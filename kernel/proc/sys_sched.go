package proc

// Scheduling attributes: nice values (getpriority/setpriority), policies
// and real-time priorities (sched_*), I/O priorities (ioprio_*), and the
// host and domain names (sethostname/setdomainname).
//
// What the scheduler honours: while a thread runs its program it is a
// machine-layer thread (the goroutine's M, inside machine.RunUser, with
// no P), and the machine layer's run queue takes the process's class
// from UserRegs at each RunUser (class below): SCHED_FIFO and SCHED_RR
// priorities run before every lower priority and before all other
// threads, the runtime's Ms included (RR rotates at rrTimesliceNanos,
// FIFO keeps the CPU); real-time threads get at most 950 ms of each second
// on a CPU, as Linux's RT throttling, so the kernel keeps 5%. The nice
// value of SCHED_OTHER and SCHED_BATCH sets the time slice (niceSlice),
// SCHED_IDLE gets nice 19's. In the kernel (system calls, page faults) a
// thread is an ordinary goroutine of priority 0: the Go scheduler knows
// no priorities, so a real-time thread's system call competes as any
// goroutine's does, and a waiting real-time thread takes the CPU from
// a thread that enters the kernel. The attributes are recorded per
// process with Linux's validation and permission rules, inherited by
// fork (SCHED_RESET_ON_FORK honoured) and reported back. Linux keeps
// them per thread; here a thread shares its process's. CPU affinity is
// per thread (sys_misc.go).

import (
	"encoding/binary"
	"sync"

	"shortbread/kernel/machine"
)

// Scheduling policies (include/uapi/linux/sched.h).
const (
	schedOther        = 0
	schedFIFO         = 1
	schedRR           = 2
	schedBatch        = 3
	schedIdle         = 5
	schedDeadline     = 6
	schedResetOnFork  = 0x40000000
	maxRTPrio         = 99
	rrTimesliceNanos  = 100e6 // Linux's RR_TIMESLICE: 100 ms
	defaultSliceNanos = 10e6  // the machine layer's time slice (sbTimeSlice)
	maxSliceNanos     = 100e6 // the longest slice a nice value gives
	prioProcess       = 0
	prioPgrp          = 1
	prioUser          = 2
	ioprioWhoProcess  = 1
	ioprioWhoPgrp     = 2
	ioprioWhoUser     = 3
	ioprioClassShift  = 13
	ioprioClassRT     = 1
	ioprioClassBE     = 2
	ioprioClassIdle   = 3
	ioprioLevels      = 8
	newUTSLen         = 64
	schedSetparamKeep = -1 // sched_setparam: keep the policy
)

// schedAttrs are a process's scheduling attributes. The zero value is
// what init starts with: SCHED_OTHER, nice 0, no I/O class.
type schedAttrs struct {
	nice        int
	policy      int
	rtprio      int
	resetOnFork bool
	ioprio      int
}

// forked is what a child inherits: everything, except that a parent with
// SCHED_RESET_ON_FORK gives its child SCHED_OTHER and no negative nice.
func (s schedAttrs) forked() schedAttrs {
	if s.resetOnFork {
		s.resetOnFork = false
		if rtPolicy(s.policy) {
			s.policy, s.rtprio, s.nice = schedOther, 0, 0
		}
		s.nice = max(s.nice, 0)
	}
	return s
}

func rtPolicy(p int) bool { return p == schedFIFO || p == schedRR }

// niceSlice is the time slice of a SCHED_OTHER or SCHED_BATCH thread at
// nice n: the default slice at nice 0, 4/5 of the slice one step lower
// for each step up, 5/4 for each step down, at most maxSliceNanos (from
// nice -11 on). Linux's CFS weights change by the same factor per step,
// so two CPU-bound threads sharing a CPU split it as they would on
// Linux (nice 0 against nice 5: 3 to 1; nice 19's slice is 144 µs).
func niceSlice(n int) int64 {
	s := int64(defaultSliceNanos)
	for ; n > 0; n-- {
		s = s * 4 / 5
	}
	for ; n < 0 && s < maxSliceNanos; n++ {
		s = s * 5 / 4
	}
	return min(s, maxSliceNanos)
}

// slice is the time slice the machine layer gives a thread of class s;
// 0 for SCHED_FIFO (it runs until it blocks).
func (s schedAttrs) slice() int64 {
	switch s.policy {
	case schedFIFO:
		return 0
	case schedRR:
		return rrTimesliceNanos
	case schedIdle:
		return niceSlice(19)
	}
	return niceSlice(s.nice)
}

// setClassLocked publishes p's scheduling class for its threads' next
// RunUser (machine.UserRegs: Prio, Slice) and kicks every thread but
// self out of user mode, so the class holds at once.
// Preconditions: p.mu is held.
func (p *Process) setClassLocked(self *Thread) {
	slice := uint64(p.sched.slice())
	if p.sched.policy == schedFIFO {
		slice = machine.SliceEndless
	}
	p.classPrio.Store(uint64(p.sched.rtprio))
	p.classSlice.Store(slice)
	p.niced.Store(p.sched.nice > 0)
	for _, t := range p.threads {
		if t != self {
			machine.Kick(&t.regs)
		}
	}
}

// canNice is Linux's can_nice: a nice value is allowed if RLIMIT_NICE
// (as 20 - nice) permits it or the caller is root.
func canNice(p *Process, nice int, priv bool) bool {
	return priv || uint64(20-nice) <= p.rlimits()[rlimitNice].cur
}

// sameOwner is the check of setpriority and sched_setscheduler: the
// caller's effective ID is the target's real or effective one.
func sameOwner(c, target creds) bool { return c.euid == target.ruid || c.euid == target.euid }

// prioTargets returns the live processes a which/who pair names, as
// getpriority, setpriority and the ioprio calls take them (who 0: the
// caller, its group, its real user). ok is false for a bad which.
func (t *Thread) prioTargets(which, who int, process, pgrp, user int) (ps []*Process, ok bool) {
	self := t.Proc
	switch which {
	case process:
		if who == 0 {
			return []*Process{self}, true
		}
		if p := lookup(who); p != nil && p.live() {
			return []*Process{p}, true
		}
		return nil, true
	case pgrp:
		if who == 0 {
			self.mu.Lock()
			who = self.pgid
			self.mu.Unlock()
		}
	case user:
		if who == 0 {
			who = int(t.creds().ruid)
		}
	default:
		return nil, false
	}
	tableMu.Lock()
	all := make([]*Process, 0, len(table))
	for _, p := range table {
		all = append(all, p)
	}
	tableMu.Unlock()
	for _, p := range all {
		p.mu.Lock()
		match := p.state != procReaped && p.state != procZombie && ((which == pgrp && p.pgid == who) || (which == user && int(p.cred.ruid) == who))
		p.mu.Unlock()
		if match {
			ps = append(ps, p)
		}
	}
	return ps, true
}

// live reports whether p has not exited.
func (p *Process) live() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state != procReaped && p.state != procZombie
}

// sysGetpriority returns 20 - nice of the highest priority among the
// targets (the raw system call avoids negative returns; libc converts).
func sysGetpriority(t *Thread, a *[6]uint64) (int64, bool) {
	ps, ok := t.prioTargets(int(int32(a[0])), int(int32(a[1])), prioProcess, prioPgrp, prioUser)
	if !ok {
		return -eINVAL, false
	}
	if len(ps) == 0 {
		return -eSRCH, false
	}
	best := 20
	for _, p := range ps {
		p.mu.Lock()
		best = min(best, p.sched.nice)
		p.mu.Unlock()
	}
	return int64(20 - best), false
}

// sysSetpriority sets the nice value of every target. Each must belong to
// the caller (or the caller is root), and lowering a nice value needs
// root or the target's RLIMIT_NICE; the last refusal is the error, and a
// target that could be changed makes the call succeed, as on Linux.
func sysSetpriority(t *Thread, a *[6]uint64) (int64, bool) {
	ps, ok := t.prioTargets(int(int32(a[0])), int(int32(a[1])), prioProcess, prioPgrp, prioUser)
	if !ok {
		return -eINVAL, false
	}
	nice := min(max(int(int32(a[2])), -20), 19)
	c := t.creds()
	priv := c.privileged()
	ret := int64(-eSRCH)
	for _, p := range ps {
		p.mu.Lock()
		switch {
		case !priv && !sameOwner(c, p.cred):
			ret = -ePERM
		case nice < p.sched.nice && !canNice(p, nice, priv):
			ret = -eACCES
		default:
			p.sched.nice = nice
			p.setClassLocked(t)
			if ret == -eSRCH {
				ret = 0
			}
		}
		p.mu.Unlock()
	}
	return ret, false
}

// schedTarget is the process a sched_* call names (pid 0: the caller).
func (t *Thread) schedTarget(pid int) (*Process, int64) {
	if pid < 0 {
		return nil, -eINVAL
	}
	if pid == 0 || pid == t.Proc.PID {
		return t.Proc, 0
	}
	if p := lookup(pid); p != nil && p.live() {
		return p, 0
	}
	return nil, -eSRCH
}

func sysSchedSetscheduler(t *Thread, a *[6]uint64) (int64, bool) {
	return t.setScheduler(int(int32(a[0])), int(int32(a[1])), uintptr(a[2])), false
}

func sysSchedSetparam(t *Thread, a *[6]uint64) (int64, bool) {
	return t.setScheduler(int(int32(a[0])), schedSetparamKeep, uintptr(a[1])), false
}

// setScheduler is sched_setscheduler and sched_setparam (policy
// schedSetparamKeep) with Linux's checks in Linux's order.
func (t *Thread) setScheduler(pid, policy int, param uintptr) int64 {
	if pid < 0 || param == 0 {
		return -eINVAL
	}
	var b [4]byte
	if err := t.Proc.Space().CopyIn(param, b[:]); err != nil {
		return errno(err)
	}
	prio := int(int32(binary.LittleEndian.Uint32(b[:])))
	p, e := t.schedTarget(pid)
	if e != 0 {
		return e
	}
	reset := false
	if policy != schedSetparamKeep {
		reset = policy&schedResetOnFork != 0
		policy &^= schedResetOnFork
		switch policy {
		case schedOther, schedFIFO, schedRR, schedBatch, schedIdle:
		default:
			return -eINVAL // SCHED_DEADLINE needs sched_setattr
		}
	}
	c := t.creds()
	priv := c.privileged()
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := p.sched
	if policy == schedSetparamKeep {
		policy, reset = cur.policy, cur.resetOnFork
	}
	if prio < 0 || prio > maxRTPrio || rtPolicy(policy) != (prio != 0) {
		return -eINVAL
	}
	if !priv {
		if rtPolicy(policy) {
			rl := p.rlimits()[rlimitRtprio].cur
			if policy != cur.policy && rl == 0 {
				return -ePERM
			}
			if prio > cur.rtprio && uint64(prio) > rl {
				return -ePERM
			}
		}
		if cur.policy == schedIdle && policy != schedIdle && !canNice(p, cur.nice, false) {
			return -ePERM
		}
		if !sameOwner(c, p.cred) {
			return -ePERM
		}
		if cur.resetOnFork && !reset {
			return -ePERM
		}
	}
	p.sched.policy, p.sched.rtprio, p.sched.resetOnFork = policy, prio, reset
	p.setClassLocked(t)
	return 0
}

func sysSchedGetscheduler(t *Thread, a *[6]uint64) (int64, bool) {
	p, e := t.schedTarget(int(int32(a[0])))
	if e != 0 {
		return e, false
	}
	p.mu.Lock()
	s := p.sched
	p.mu.Unlock()
	ret := int64(s.policy)
	if s.resetOnFork {
		ret |= schedResetOnFork
	}
	return ret, false
}

func sysSchedGetparam(t *Thread, a *[6]uint64) (int64, bool) {
	if int32(a[0]) < 0 || a[1] == 0 {
		return -eINVAL, false
	}
	p, e := t.schedTarget(int(int32(a[0])))
	if e != 0 {
		return e, false
	}
	p.mu.Lock()
	prio := p.sched.rtprio
	p.mu.Unlock()
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(prio))
	return errno(t.Proc.Space().CopyOut(uintptr(a[1]), b[:])), false
}

func sysSchedGetPriorityMax(t *Thread, a *[6]uint64) (int64, bool) {
	switch int(int32(a[0])) {
	case schedFIFO, schedRR:
		return maxRTPrio, false
	case schedOther, schedBatch, schedIdle, schedDeadline:
		return 0, false
	}
	return -eINVAL, false
}

func sysSchedGetPriorityMin(t *Thread, a *[6]uint64) (int64, bool) {
	switch int(int32(a[0])) {
	case schedFIFO, schedRR:
		return 1, false
	case schedOther, schedBatch, schedIdle, schedDeadline:
		return 0, false
	}
	return -eINVAL, false
}

// sysSchedRrGetInterval reports the time slice the machine layer gives
// the target: Linux's round-robin slice for SCHED_RR, none for
// SCHED_FIFO (it runs until it yields), the nice value's for the others.
func sysSchedRrGetInterval(t *Thread, a *[6]uint64) (int64, bool) {
	p, e := t.schedTarget(int(int32(a[0])))
	if e != 0 {
		return e, false
	}
	p.mu.Lock()
	ns := p.sched.slice()
	p.mu.Unlock()
	return putTimespec(t, uintptr(a[1]), ns, false), false
}

// ioprioValid checks a class and level as Linux's ioprio_check_cap: the
// real-time class needs root, and "no class" carries no level. The level
// is the low 3 bits of the data (0-7, so never out of range); the bits
// above it are hints, kept as given.
func ioprioValid(ioprio int, priv bool) int64 {
	class, level := ioprio>>ioprioClassShift, ioprio&(ioprioLevels-1)
	switch class {
	case ioprioClassRT:
		if !priv {
			return -ePERM
		}
	case ioprioClassBE, ioprioClassIdle:
	case 0:
		if level != 0 {
			return -eINVAL
		}
	default:
		return -eINVAL
	}
	return 0
}

func sysIoprioSet(t *Thread, a *[6]uint64) (int64, bool) {
	ioprio := int(int32(a[2]))
	c := t.creds()
	priv := c.privileged()
	if e := ioprioValid(ioprio, priv); e != 0 {
		return e, false
	}
	ps, ok := t.prioTargets(int(int32(a[0])), int(int32(a[1])), ioprioWhoProcess, ioprioWhoPgrp, ioprioWhoUser)
	if !ok {
		return -eINVAL, false
	}
	if len(ps) == 0 {
		return -eSRCH, false
	}
	var ret int64
	for _, p := range ps {
		p.mu.Lock()
		// set_task_ioprio: the target's real ID is the caller's real or
		// effective one.
		if !priv && p.cred.ruid != c.euid && p.cred.ruid != c.ruid {
			ret = -ePERM
		} else {
			p.sched.ioprio = ioprio
		}
		p.mu.Unlock()
		if ret != 0 {
			break
		}
	}
	return ret, false
}

// ioprioRank orders I/O priorities as Linux's ioprio_best: a lower class
// number wins (RT over BE over IDLE, "none" counts as BE at level 4 but
// is reported as itself), then a lower level.
func ioprioRank(v int) int {
	if v>>ioprioClassShift == 0 {
		return ioprioClassBE<<ioprioClassShift | 4
	}
	return v
}

func sysIoprioGet(t *Thread, a *[6]uint64) (int64, bool) {
	ps, ok := t.prioTargets(int(int32(a[0])), int(int32(a[1])), ioprioWhoProcess, ioprioWhoPgrp, ioprioWhoUser)
	if !ok {
		return -eINVAL, false
	}
	if len(ps) == 0 {
		return -eSRCH, false
	}
	best := -1
	for _, p := range ps {
		p.mu.Lock()
		v := p.sched.ioprio
		p.mu.Unlock()
		if best < 0 || ioprioRank(v) < ioprioRank(best) {
			best = v
		}
	}
	return int64(best), false
}

// utsNames are the host and domain names uname reports.
var utsNames = struct {
	sync.Mutex
	host, domain string
}{host: "shortbread", domain: "(none)"}

func sysSethostname(t *Thread, a *[6]uint64) (int64, bool) {
	return t.setUTSName(&utsNames.host, uintptr(a[0]), int(int32(a[1]))), false
}

func sysSetdomainname(t *Thread, a *[6]uint64) (int64, bool) {
	return t.setUTSName(&utsNames.domain, uintptr(a[0]), int(int32(a[1]))), false
}

// setUTSName: root only, at most 64 bytes, copied as given (a name may
// hold any byte but NUL ends it when read back).
func (t *Thread) setUTSName(dst *string, at uintptr, n int) int64 {
	if !t.creds().privileged() {
		return -ePERM
	}
	if n < 0 || n > newUTSLen {
		return -eINVAL
	}
	b := make([]byte, n)
	if err := t.Proc.Space().CopyIn(at, b); err != nil {
		return errno(err)
	}
	utsNames.Lock()
	*dst = string(b)
	utsNames.Unlock()
	return 0
}

// SetHostname sets the node name uname reports, for the kernel's own
// configuration (ip='s host name, a DHCP lease's).
func SetHostname(name string) {
	if len(name) > newUTSLen {
		name = name[:newUTSLen]
	}
	utsNames.Lock()
	utsNames.host = name
	utsNames.Unlock()
}

// utsName returns the current host and domain names.
func utsName() (host, domain string) {
	utsNames.Lock()
	defer utsNames.Unlock()
	return utsNames.host, utsNames.domain
}
