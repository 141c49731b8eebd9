package proc

// Timers and sleeps on CPU-time clocks: POSIX timers made by timer_create
// on CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID or a clock from
// clock_getcpuclockid/pthread_getcpuclockid, and clock_nanosleep on such
// a clock. Each is a cpuWatch registered with the process whose time
// moves the clock; the accounting (leaveUser, chargeSys) looks at that
// process's watches whenever it charges time, as Linux's tick-time
// run_posix_cpu_timers does, and a thread about to run user code arranges
// to be kicked out of it when the nearest watch could expire
// (cpuTimerKick), so a program that spins gets its signal on time. A
// watch fires at most one accounting step late.

import (
	"sync"
	"time"

	"shortbread/kernel/machine"
)

// cpuClockRef names a CPU-time clock: a process's or a thread's, all its
// time or its user time alone (Linux's CPUCLOCK_VIRT).
type cpuClockRef struct {
	p    *Process // a process's clock; nil for a thread's
	t    *Thread
	user bool
}

func (c cpuClockRef) now() int64 {
	var ct cpuTimes
	if c.t != nil {
		ct = c.t.threadTimes()
	} else {
		ct, _ = c.p.selfTimes()
	}
	if c.user {
		return ct.user
	}
	return ct.total()
}

// owner is the process whose accounting moves the clock.
func (c cpuClockRef) owner() *Process {
	if c.t != nil {
		return c.t.Proc
	}
	return c.p
}

// cpuClock resolves a CPU-time clock id: PROCESS_CPUTIME_ID,
// THREAD_CPUTIME_ID, or Linux's encoding of clock_getcpuclockid's and
// pthread_getcpuclockid's clocks (~pid << 3, bit 2 per-thread, bits 0-1
// the kind: 0 PROF, 1 VIRT, 2 SCHED; 3 is invalid). A thread's clock is
// only one of the caller's own process (Linux's same_thread_group).
func (t *Thread) cpuClock(id int32) (cpuClockRef, bool) {
	switch id {
	case clockProcessCPU:
		return cpuClockRef{p: t.Proc}, true
	case clockThreadCPU:
		return cpuClockRef{t: t}, true
	}
	if id >= 0 {
		return cpuClockRef{}, false
	}
	kind, perThread, who := id&3, id&4 != 0, int(^id>>3)
	if kind == 3 {
		return cpuClockRef{}, false
	}
	if perThread {
		tt := t
		if who != 0 {
			if tt = lookupThread(who); tt == nil || tt.Proc != t.Proc {
				return cpuClockRef{}, false
			}
		}
		return cpuClockRef{t: tt, user: kind == 1}, true
	}
	p := t.Proc
	if who != 0 {
		if p = lookup(who); p == nil {
			return cpuClockRef{}, false
		}
	}
	return cpuClockRef{p: p, user: kind == 1}, true
}

// cpuClockNow reads a CPU-time clock.
func (t *Thread) cpuClockNow(id int32) (int64, bool) {
	c, ok := t.cpuClock(id)
	if !ok {
		return 0, false
	}
	return c.now(), true
}

// cpuWatch counts a CPU-time clock down to an expiry, then every
// interval, calling fire (without locks held) with the periods that
// passed.
type cpuWatch struct {
	clock cpuClockRef
	fire  func(n uint64)

	mu       sync.Mutex
	expires  int64 // the clock's reading to fire at; 0: disarmed; protected by mu
	interval int64 // protected by mu
}

// check fires w if its clock has reached the expiry.
func (w *cpuWatch) check() {
	w.mu.Lock()
	if w.expires == 0 {
		w.mu.Unlock()
		return
	}
	now := w.clock.now()
	if now < w.expires {
		w.mu.Unlock()
		return
	}
	n := uint64(1)
	if w.interval > 0 {
		n += uint64((now - w.expires) / w.interval)
		w.expires += int64(n) * w.interval
	} else {
		w.expires = 0
	}
	w.mu.Unlock()
	w.fire(n)
}

// leftLocked is the clock time to the expiry: 0 when disarmed, and a
// nanosecond when due but not fired yet, as Linux reports it.
func (w *cpuWatch) leftLocked(now int64) int64 {
	if w.expires == 0 {
		return 0
	}
	return max(w.expires-now, 1)
}

// set arms w for value from now (abs: at the clock reading value; 0
// disarms) and every interval after, and returns the old setting. An
// expiry already passed fires at once.
func (w *cpuWatch) set(self *Thread, value, interval time.Duration, abs bool) (oldLeft, oldInterval time.Duration) {
	w.mu.Lock()
	now := w.clock.now()
	oldLeft, oldInterval = time.Duration(w.leftLocked(now)), time.Duration(w.interval)
	w.interval = int64(interval)
	switch {
	case value <= 0:
		w.expires = 0
	case abs:
		w.expires = int64(value)
	default:
		w.expires = now + int64(value)
	}
	w.mu.Unlock()
	w.check()
	w.clock.owner().kickThreads(self)
	return oldLeft, oldInterval
}

func (w *cpuWatch) get() (left, interval time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Duration(w.leftLocked(w.clock.now())), time.Duration(w.interval)
}

func (p *Process) addWatch(w *cpuWatch) {
	p.mu.Lock()
	p.cpuWatches = append(p.cpuWatches, w)
	p.cpuCounting.Or(countWatches)
	p.mu.Unlock()
}

func (p *Process) removeWatch(w *cpuWatch) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.cpuWatches {
		if x == w {
			p.cpuWatches = append(p.cpuWatches[:i:i], p.cpuWatches[i+1:]...)
			break
		}
	}
	if len(p.cpuWatches) == 0 {
		p.cpuCounting.And(^uint32(countWatches))
	}
}

// checkWatches fires the watches whose clocks have reached their
// expiries; the accounting calls it as it charges p's threads' time.
func (p *Process) checkWatches() {
	p.mu.Lock()
	ws := append([]*cpuWatch(nil), p.cpuWatches...)
	p.mu.Unlock()
	for _, w := range ws {
		w.check()
	}
}

// nextWatch is the least clock time until one of p's watches could
// expire (0: none armed). Clock time passes no faster than real time per
// thread, so a thread kicked after that long will not be late by more
// than the other threads' share.
func (p *Process) nextWatch() int64 {
	p.mu.Lock()
	ws := append([]*cpuWatch(nil), p.cpuWatches...)
	p.mu.Unlock()
	next := int64(0)
	for _, w := range ws {
		w.mu.Lock()
		if w.expires != 0 {
			if left := w.leftLocked(w.clock.now()); next == 0 || left < next {
				next = left
			}
		}
		w.mu.Unlock()
	}
	return next
}

// kickThreads brings p's threads out of user mode, so each arms its kick
// (cpuTimerKick) for a watch set while it ran.
func (p *Process) kickThreads(self *Thread) {
	p.mu.Lock()
	ts := make([]*Thread, 0, len(p.threads))
	for _, t := range p.threads {
		if t != self {
			ts = append(ts, t)
		}
	}
	p.mu.Unlock()
	for _, t := range ts {
		machine.Kick(&t.regs)
	}
}
