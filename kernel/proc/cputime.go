package proc

// CPU time accounting, the CPU-time clocks and the CPU-time interval
// timers (ITIMER_VIRTUAL, ITIMER_PROF).
//
// A thread's user time is the time it spends inside RunUser. Its system
// time is the rest of the time its goroutine works for it (system calls,
// faults, signal delivery) less the time it sleeps in a blocking call:
// each blocking point brackets its wait with sleepBegin/sleepEnd. Reads
// and writes of files that can block (pipes, terminals) count as sleep
// as a whole; their copying is small next to their waiting. A machine
// thread descheduled under a running user thread is charged to that
// thread, as a tick-based kernel would charge the whole tick.
//
// Context switches are counted as Linux counts them per task (nvcsw,
// nivcsw). Voluntary: the thread blocked, counted where it is about to
// wait — the kernel's own waits here (noteWait) and the VFS's, sockets'
// and IPC's through the thread's Interrupter (vfs.NoteWait), only when
// the condition is not met already, so a read that finds its data
// counts none although its bracket counts it as sleep. Involuntary: the
// machine layer switched the thread out while it ran the program (its
// slice ended with another thread waiting; UserRegs.Preempts). Not
// seen: Go's scheduling of the thread's goroutine while it runs kernel
// code (a P not free at the end of RunUser, the runtime's preemption)
// and waits for a lock or a disk inside the kernel: a few switches less
// than Linux would count, never more. /proc/stat's ctxt adds up the
// voluntary switches per CPU (noteWait), not the involuntary ones.
//
// Every system call passes two of these marks (into and out of user
// mode), and a read or write that may block two more, so they count
// time-stamp counter cycles: one RDTSC each, with no scaling and no
// call through the clock's function value. Whoever reads the times
// (threadTimes, /proc/stat, the CPU timers) turns them into
// nanoseconds (cyclesToNs); TSC readings on different CPUs compare,
// as CLOCK_MONOTONIC's do.

import (
	"encoding/binary"
	"math"
	"math/bits"
	"sync/atomic"
	"time"

	"shortbread/kernel/machine"
)

// cycles reads the time-stamp counter, the accounting's clock. Unlike
// the clocks programs read it is not fenced: a reading that moves by a
// few instructions moves a little time between user and system.
func cycles() int64 { return int64(machine.Rdtsc()) }

// cyclesToNs converts a count of TSC cycles to nanoseconds, rounding
// down, exactly (a 128-bit product and quotient); 0 for a count below 1.
func cyclesToNs(c int64) int64 {
	if c <= 0 {
		return 0
	}
	hz := machine.TSCHz()
	hi, lo := bits.Mul64(uint64(c), 1e9)
	if hi >= hz { // centuries at any real rate
		return math.MaxInt64
	}
	ns, _ := bits.Div64(hi, lo, hz)
	return int64(min(ns, math.MaxInt64))
}

// cpuClock is one thread's account, in TSC cycles. user, sys and faults
// are read by other threads; the sleep fields only by the thread itself.
type cpuClock struct {
	// user is the user time while the thread is in the kernel. In user
	// mode it is that time less the TSC at entry, a negative number
	// (the TSC, counting since the machine started, is past any
	// thread's user time): a reader that finds it negative adds the TSC
	// now, so the clocks of a thread that spins without leaving user
	// mode still advance. One word: the thread changes it with one
	// store each way, and a reader needs no retry loop.
	user   atomic.Int64
	sys    atomic.Int64
	faults atomic.Int64 // page faults resolved (minor: there is no disk)
	// nvcsw is the thread's voluntary context switches (noteWait); the
	// involuntary ones are the machine layer's count in its UserRegs
	// (Preempts), read where they are reported: no work per return
	// from user mode.
	nvcsw      atomic.Int64
	slept      int64 // cycles
	sleepStart int64 // TSC
}

// switches are context switch counts, voluntary and involuntary.
type switches struct{ vol, invol int64 }

func (s switches) add(o switches) switches { return switches{s.vol + o.vol, s.invol + o.invol} }

// switches reads the thread's counts. Preempts is written by the
// machine layer when RunUser returns, one aligned word: an atomic load
// reads it whole from any goroutine.
func (t *Thread) switches() switches {
	return switches{t.cpu.nvcsw.Load(), int64(atomic.LoadUint64(&t.regs.Preempts))}
}

// noteWait counts a voluntary context switch: the thread is about to
// block. The kernel's waits call it, the VFS's through the thread's
// Interrupter; both run on the thread's goroutine. /proc/stat's ctxt
// counts it on the CPU the last RunUser returned on (no look-up).
func (t *Thread) noteWait() {
	t.cpu.nvcsw.Add(1)
	cpuStats[t.regs.ExitCPU%uint64(len(cpuStats))].ctxt.Add(1)
}

// enterUser marks the start of a stretch in user mode (now: the TSC).
func (t *Thread) enterUser(now int64) {
	// Cleared before the stretch shows as live: a reader of the clock
	// must not take the last RunUser's turns off this one.
	atomic.StoreUint64(&t.regs.Away, 0)
	t.cpu.user.Store(t.cpu.user.Load() - now)
}

// SleepBegin and SleepEnd let the VFS mark a wait (vfs.Sleeper).
func (t *Thread) SleepBegin() { t.sleepBegin() }
func (t *Thread) SleepEnd()   { t.sleepEnd() }

// sleepBegin marks the start of a stretch that may sleep; it counts no
// context switch (noteWait does, where the thread really waits).
func (t *Thread) sleepBegin() {
	t.cpu.sleepStart = cycles()
	t.sleeping.Store(true)
}

// waitBegin is sleepBegin for a wait the thread blocks in (it found
// its condition unmet): a voluntary context switch.
func (t *Thread) waitBegin() {
	t.noteWait()
	t.sleepBegin()
}

func (t *Thread) sleepEnd() {
	t.cpu.slept += cycles() - t.cpu.sleepStart
	t.sleeping.Store(false)
}

// chargeSys charges the kernel time from start to now (TSC readings),
// less the time slept, to the thread and to the CPU the last RunUser
// returned on (where the time mostly went; no look-up of the current
// CPU per system call).
func (t *Thread) chargeSys(start, now int64) {
	d := now - start - t.cpu.slept
	t.cpu.slept = 0
	if d > 0 {
		t.cpu.sys.Add(d)
		cpuStats[t.regs.ExitCPU%uint64(len(cpuStats))].sys.Add(d)
		if t.Proc.cpuCounting.Load() != 0 {
			t.Proc.countCPUTime(0, d)
		}
	}
}

// leaveUser ends the stretch in user mode that began at the TSC
// reading start, at now, and charges it to the thread and to the CPU
// RunUser returned on, less the time the thread was switched out in
// user mode (UserRegs.Away: another thread had the CPU).
func (t *Thread) leaveUser(start, now int64) {
	now -= int64(min(t.regs.Away, uint64(max(now-start, 0))))
	// At least start comes off again: a TSC read on another CPU a hair
	// behind (the thread moved in user mode) charges 0, never less.
	t.cpu.user.Store(t.cpu.user.Load() + max(now, start))
	if d := now - start; d > 0 {
		st := &cpuStats[t.regs.ExitCPU%uint64(len(cpuStats))]
		if t.Proc.niced.Load() {
			st.nice.Add(d) // /proc/stat's nice column, as Linux's
		} else {
			st.user.Add(d)
		}
		if t.Proc.cpuCounting.Load() != 0 {
			t.Proc.countCPUTime(d, 0)
		}
	}
}

// Bits of Process.cpuCounting.
const (
	countTimers  = 1 << iota // ITIMER_VIRTUAL, ITIMER_PROF or RLIMIT_CPU is armed
	countWatches             // a timer or sleep on a CPU-time clock waits
)

// countCPUTime counts user and system cycles just charged down p's CPU
// timers and checks its watches.
func (p *Process) countCPUTime(user, sys int64) {
	c := p.cpuCounting.Load()
	if c&countTimers != 0 {
		p.cpuTimersTick(user, sys)
	}
	if c&countWatches != 0 {
		p.checkWatches()
	}
}

// cpuTimes is a user/system pair in nanoseconds.
type cpuTimes struct{ user, sys int64 }

func (c cpuTimes) add(o cpuTimes) cpuTimes { return cpuTimes{c.user + o.user, c.sys + o.sys} }
func (c cpuTimes) total() int64            { return c.user + c.sys }

// processUsage is what the process's threads have used, live and exited.
type processUsage struct {
	dead     cpuTimes // threads that have exited
	children cpuTimes // reaped children, with their own reaped children
	faults   int64    // of exited threads
	cfaults  int64
	cmaxRSS  int64 // largest resident size of a reaped child, KiB
	// Context switches of exited threads and of reaped children, and
	// the thread-group leader's own once it has exited (/proc/PID/status
	// shows the leader's, as Linux does).
	deadSw, childSw, leaderSw switches
}

// threadTimes reports one thread's account in nanoseconds, with the
// time it has been in user mode so far if it is there now.
func (t *Thread) threadTimes() cpuTimes {
	return cpuTimes{cyclesToNs(t.userCycles()), cyclesToNs(t.cpu.sys.Load())}
}

// userCycles is the thread's user time in TSC cycles. In user mode now,
// the stretch so far counts less the turns other threads had on its CPU
// meanwhile (UserRegs.Away, with the turn under way if the thread is
// switched out), which the machine layer keeps current as it switches
// the thread: two programs spinning on one CPU each see half of the
// time pass on their clocks, not all of it. The loads repeat until the
// clock read fell between two that saw one state.
func (t *Thread) userCycles() int64 {
	for {
		user := t.cpu.user.Load()
		if user >= 0 {
			return user
		}
		away := int64(atomic.LoadUint64(&t.regs.Away))
		now := cycles()
		if int64(atomic.LoadUint64(&t.regs.Away)) != away || t.cpu.user.Load() != user {
			continue
		}
		if away < 0 { // switched out since now+away
			away = max(away+now, 0)
		}
		return max(user+now-away, 0)
	}
}

// selfTimes adds up the process's threads, live and exited.
func (p *Process) selfTimes() (cpuTimes, int64) {
	c, faults, _ := p.selfUsage()
	return c, faults
}

// selfUsage adds up the process's threads, live and exited: times,
// faults and context switches.
func (p *Process) selfUsage() (cpuTimes, int64, switches) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, faults, sw := p.usage.dead, p.usage.faults, p.usage.deadSw
	for _, t := range p.threads {
		c = c.add(t.threadTimes())
		faults += t.cpu.faults.Load()
		sw = sw.add(t.switches())
	}
	return c, faults, sw
}

// leaderSwitches are the context switches of the thread-group leader,
// live or exited (/proc/PID/status).
func (p *Process) leaderSwitches() switches {
	if t := lookupThread(p.PID); t != nil && t.Proc == p {
		return t.switches()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.usage.leaderSw
}

// threadGone moves an exiting thread's account into the process's.
// Caller holds p.mu.
func (p *Process) threadGoneLocked(t *Thread) {
	p.usage.dead = p.usage.dead.add(t.threadTimes())
	p.usage.faults += t.cpu.faults.Load()
	sw := t.switches()
	p.usage.deadSw = p.usage.deadSw.add(sw)
	if t.TID == p.PID {
		p.usage.leaderSw = sw
	}
}

// addChildUsage adds a reaped child's usage (and its children's) to p
// and returns the child's as wait4 reports it.
func (p *Process) addChildUsage(c *Process) (cpuTimes, int64, int64, switches) {
	// The child's own time counts its threads still on their way out
	// too: exit_group makes the process a zombie before the calling
	// thread leaves it, and a parent reaping at once must not lose that
	// thread's time (Linux adds the live threads' times at reaping).
	self, selfFaults, selfSw := c.selfUsage()
	c.mu.Lock()
	ct := self.add(c.usage.children)
	faults := selfFaults + c.usage.cfaults
	rss := max(c.maxRSS, c.usage.cmaxRSS)
	sw := selfSw.add(c.usage.childSw)
	c.mu.Unlock()
	p.mu.Lock()
	p.usage.children = p.usage.children.add(ct)
	p.usage.cfaults += faults
	p.usage.cmaxRSS = max(p.usage.cmaxRSS, rss)
	p.usage.childSw = p.usage.childSw.add(sw)
	p.mu.Unlock()
	return ct, faults, rss, sw
}

// noteRSS records the process's resident size for ru_maxrss.
func (p *Process) noteRSS() {
	s := p.Space()
	if s == nil {
		return
	}
	kib := int64(s.ResidentPages()) * 4
	p.mu.Lock()
	p.maxRSS = max(p.maxRSS, kib)
	p.mu.Unlock()
}

// putRusage writes a struct rusage.
func putRusage(t *Thread, at uintptr, c cpuTimes, maxRSS, faults int64, sw switches) int64 {
	var b [144]byte
	putTimeval(b[0:], time.Duration(c.user))
	putTimeval(b[16:], time.Duration(c.sys))
	binary.LittleEndian.PutUint64(b[32:], uint64(maxRSS))
	binary.LittleEndian.PutUint64(b[64:], uint64(faults))    // ru_minflt
	binary.LittleEndian.PutUint64(b[128:], uint64(sw.vol))   // ru_nvcsw
	binary.LittleEndian.PutUint64(b[136:], uint64(sw.invol)) // ru_nivcsw
	return errno(t.Proc.Space().CopyOut(at, b[:]))
}

const (
	rusageSelf     = 0
	rusageChildren = -1
	rusageThread   = 1
)

func sysGetrusage(t *Thread, a *[6]uint64) (int64, bool) {
	p := t.Proc
	var c cpuTimes
	var rss, faults int64
	var sw switches
	switch int32(a[0]) {
	case rusageSelf:
		p.noteRSS()
		c, faults, sw = p.selfUsage()
		p.mu.Lock()
		rss = p.maxRSS
		p.mu.Unlock()
	case rusageThread:
		p.noteRSS()
		c, faults, sw = t.threadTimes(), t.cpu.faults.Load(), t.switches()
		p.mu.Lock()
		rss = p.maxRSS
		p.mu.Unlock()
	case rusageChildren:
		p.mu.Lock()
		c, faults, rss, sw = p.usage.children, p.usage.cfaults, p.usage.cmaxRSS, p.usage.childSw
		p.mu.Unlock()
	default:
		return -eINVAL, false
	}
	return putRusage(t, uintptr(a[1]), c, rss, faults, sw), false
}

// clockTicks is the unit of times(2) and /proc: USER_HZ.
const clockTicks = 100

func ticks(ns int64) uint64 { return uint64(ns / (1e9 / clockTicks)) }

func sysTimes(t *Thread, a *[6]uint64) (int64, bool) {
	p := t.Proc
	if a[0] != 0 {
		self, _ := p.selfTimes()
		p.mu.Lock()
		ch := p.usage.children
		p.mu.Unlock()
		var b [32]byte
		binary.LittleEndian.PutUint64(b[0:], ticks(self.user))
		binary.LittleEndian.PutUint64(b[8:], ticks(self.sys))
		binary.LittleEndian.PutUint64(b[16:], ticks(ch.user))
		binary.LittleEndian.PutUint64(b[24:], ticks(ch.sys))
		if err := p.Space().CopyOut(uintptr(a[0]), b[:]); err != nil {
			return errno(err), false
		}
	}
	return int64(ticks(monotonicNow())), false
}

// CPU-time interval timers, counting down process CPU time.
type cpuTimer struct {
	left, interval int64 // ns; left == 0: disarmed
}

const (
	itimerReal    = 0
	itimerVirtual = 1
	itimerProf    = 2
)

// cpuTimersTick counts user and system time (cycles) down the process's
// CPU timers and sends their signals.
func (p *Process) cpuTimersTick(userCycles, sysCycles int64) {
	var fire [2]bool
	limitSig := 0
	p.mu.Lock()
	// Each charge in nanoseconds is the step between two conversions of
	// the running totals, so no fraction is lost from charge to charge.
	user := cyclesToNs(p.timerUser+userCycles) - cyclesToNs(p.timerUser)
	sys := cyclesToNs(p.timerSys+sysCycles) - cyclesToNs(p.timerSys)
	p.timerUser += userCycles
	p.timerSys += sysCycles
	if p.cpuLimitLeft != 0 {
		p.cpuLimitLeft -= user + sys
		if p.cpuLimitLeft <= 0 {
			limitSig = p.cpuLimitReachedLocked()
		}
	}
	for i, d := range [2]int64{user, user + sys} {
		it := &p.cpuTimers[i]
		if it.left == 0 || d == 0 {
			continue
		}
		it.left -= d
		if it.left <= 0 {
			fire[i] = true
			it.left = it.interval
		}
	}
	p.cpuTimersUpdateLocked()
	p.mu.Unlock()
	if limitSig != 0 {
		p.signal(limitSig)
	}
	if fire[0] {
		p.signal(sigVTALRM)
	}
	if fire[1] {
		p.signal(sigPROF)
	}
}

// cpuTimersUpdateLocked records whether anything counts CPU time down.
func (p *Process) cpuTimersUpdateLocked() {
	if p.cpuTimers[0].left != 0 || p.cpuTimers[1].left != 0 || p.cpuLimitLeft != 0 {
		p.cpuCounting.Or(countTimers)
	} else {
		p.cpuCounting.And(^uint32(countTimers))
	}
}

// armCPULimitLocked starts RLIMIT_CPU's count-down from used, the
// process's CPU time so far: its soft limit is an event at that many
// seconds of CPU time (caller holds p.mu).
func (p *Process) armCPULimitLocked(used int64) {
	l := p.rlimits()[rlimitCPU]
	p.cpuLimitLeft = 0
	if l.cur != rlimInfinity {
		p.cpuLimitLeft = max(int64(min(l.cur, 1<<32))*int64(time.Second)-used, 1)
	}
	p.cpuTimersUpdateLocked()
}

// cpuLimitReachedLocked is RLIMIT_CPU's event at the soft limit's
// seconds of CPU time, as Linux's check_process_timers does it: at or
// past the hard limit, SIGKILL and nothing more; else SIGXCPU, the soft
// limit moved one second on, and another event a second later. It
// returns the signal to send (caller holds p.mu).
func (p *Process) cpuLimitReachedLocked() int {
	l := &p.rlimits()[rlimitCPU]
	if l.cur == rlimInfinity {
		p.cpuLimitLeft = 0
		return 0
	}
	if l.max != rlimInfinity && l.cur >= l.max {
		p.cpuLimitLeft = 0
		return sigKILL
	}
	l.cur++
	p.cpuLimitLeft = int64(time.Second)
	return sigXCPU
}

// setCPUTimer arms (value 0: disarms) ITIMER_VIRTUAL (i=0) or ITIMER_PROF
// (i=1) and returns the old setting.
func (p *Process) setCPUTimer(i int, value, interval time.Duration) (left, oldInterval time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.cpuTimers[i]
	p.cpuTimers[i] = cpuTimer{left: int64(value), interval: int64(interval)}
	p.cpuTimersUpdateLocked()
	return time.Duration(old.left), time.Duration(old.interval)
}

func (p *Process) getCPUTimer(i int) (left, interval time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Duration(p.cpuTimers[i].left), time.Duration(p.cpuTimers[i].interval)
}

// cpuTimerKick returns a timer that brings t out of user mode when the
// nearest CPU timer could expire, so a program spinning in user mode gets
// its signal on time; nil when no CPU timer is armed.
func (t *Thread) cpuTimerKick() *time.Timer {
	p := t.Proc
	c := p.cpuCounting.Load()
	timersOn, watchOn := c&countTimers != 0, c&countWatches != 0
	if !timersOn && !watchOn {
		return nil
	}
	var next int64
	if timersOn {
		p.mu.Lock()
		next = p.cpuLimitLeft
		for _, it := range p.cpuTimers {
			if it.left != 0 && (next == 0 || it.left < next) {
				next = it.left
			}
		}
		p.mu.Unlock()
	}
	if watchOn {
		if w := p.nextWatch(); w != 0 && (next == 0 || w < next) {
			next = w
		}
	}
	if next == 0 {
		return nil
	}
	return time.AfterFunc(time.Duration(next), func() { machine.Kick(&t.regs) })
}
