package proc

// Interval timers and interruptible sleeps.

import (
	"encoding/binary"
	"time"

	"shortbread/kernel/wallclock"
)

// realTimer is ITIMER_REAL: SIGALRM at expiry, then every interval.
type realTimer struct {
	timer    *time.Timer
	deadline time.Time
	interval time.Duration
	// gen tells a firing timer whether it is still the armed one: a
	// timer that fires as it is being replaced or disarmed must not
	// signal (setitimer returned, no SIGALRM may follow) nor re-arm.
	gen uint64
}

// setRealTimer arms (or, with a zero value, disarms) the process's
// ITIMER_REAL and returns what was left of the old one.
func (p *Process) setRealTimer(value, interval time.Duration) (left, oldInterval time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.alarm
	if old.timer != nil {
		old.timer.Stop()
		left = max(time.Until(old.deadline), 0)
		if left == 0 {
			left = time.Microsecond // armed but due: report a sliver, as Linux does
		}
	}
	gen := old.gen + 1
	p.alarm = realTimer{gen: gen}
	if value > 0 {
		p.alarm.deadline = time.Now().Add(value)
		p.alarm.interval = interval
		var fire func()
		fire = func() {
			p.mu.Lock()
			if p.alarm.gen != gen {
				p.mu.Unlock()
				return
			}
			target, _ := p.queueLocked(sigInfo{signo: sigALRM, code: siKernel})
			if p.alarm.interval > 0 && p.state == procRunning {
				p.alarm.deadline = time.Now().Add(p.alarm.interval)
				p.alarm.timer = time.AfterFunc(p.alarm.interval, fire)
			} else {
				p.alarm.timer = nil
			}
			p.mu.Unlock()
			if target != nil {
				target.wake()
			}
		}
		p.alarm.timer = time.AfterFunc(value, fire)
	}
	return left, old.interval
}

func sysAlarm(t *Thread, a *[6]uint64) (int64, bool) {
	left, _ := t.Proc.setRealTimer(time.Duration(a[0])*time.Second, 0)
	secs := int64(left / time.Second)
	if left%time.Second >= time.Second/2 || (secs == 0 && left > 0) {
		secs++ // alarm rounds to the nearest second, never to 0 if armed
	}
	return secs, false
}

func readTimeval(b []byte) (time.Duration, bool) {
	sec, usec := int64(binary.LittleEndian.Uint64(b)), int64(binary.LittleEndian.Uint64(b[8:]))
	if sec < 0 || usec < 0 || usec >= 1e6 {
		return 0, false
	}
	return time.Duration(sec)*time.Second + time.Duration(usec)*time.Microsecond, true
}

func putTimeval(b []byte, d time.Duration) {
	binary.LittleEndian.PutUint64(b, uint64(d/time.Second))
	binary.LittleEndian.PutUint64(b[8:], uint64(d%time.Second/time.Microsecond))
}

// itimer reads and sets the interval timer which (ITIMER_REAL,
// ITIMER_VIRTUAL or ITIMER_PROF); set false only reads it.
func (p *Process) itimer(which uint64, set bool, value, interval time.Duration) (left, oldInterval time.Duration) {
	switch which {
	case itimerReal:
		if !set {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.alarm.timer != nil {
				left = max(time.Until(p.alarm.deadline), time.Microsecond)
			}
			return left, p.alarm.interval
		}
		return p.setRealTimer(value, interval)
	default:
		i := int(which - itimerVirtual)
		if !set {
			return p.getCPUTimer(i)
		}
		return p.setCPUTimer(i, value, interval)
	}
}

// sysSetitimer reads the new value first (EFAULT), then checks which and
// the value, as Linux; a null new value disarms the timer.
func sysSetitimer(t *Thread, a *[6]uint64) (int64, bool) {
	s := t.Proc.Space()
	var nb [32]byte
	if a[1] != 0 {
		if err := s.CopyIn(uintptr(a[1]), nb[:]); err != nil {
			return errno(err), false
		}
	}
	if a[0] > itimerProf {
		return -eINVAL, false
	}
	var value, interval time.Duration
	if a[1] != 0 {
		var ok1, ok2 bool
		interval, ok1 = readTimeval(nb[0:])
		value, ok2 = readTimeval(nb[16:])
		if !ok1 || !ok2 {
			return -eINVAL, false
		}
	}
	left, oldInterval := t.Proc.itimer(a[0], true, value, interval)
	if a[2] != 0 {
		var ob [32]byte
		putTimeval(ob[0:], oldInterval)
		putTimeval(ob[16:], left)
		if err := s.CopyOut(uintptr(a[2]), ob[:]); err != nil {
			return errno(err), false
		}
	}
	return 0, false
}

func sysGetitimer(t *Thread, a *[6]uint64) (int64, bool) {
	if a[0] > itimerProf {
		return -eINVAL, false
	}
	left, interval := t.Proc.itimer(a[0], false, 0, 0)
	var ob [32]byte
	putTimeval(ob[0:], interval)
	putTimeval(ob[16:], left)
	return errno(t.Proc.Space().CopyOut(uintptr(a[1]), ob[:])), false
}

// Clocks (include/uapi/linux/time.h).
const (
	clockRealtime       = 0
	clockMonotonic      = 1
	clockProcessCPU     = 2
	clockThreadCPU      = 3
	clockMonotonicRaw   = 4
	clockRealtimeCoarse = 5
	clockMonoCoarse     = 6
	clockBoottime       = 7
	clockRealtimeAlarm  = 8
	clockBoottimeAlarm  = 9
	clockTAI            = 11

	timerAbstime = 1
)

// clockNow reads clock id in nanoseconds. The coarse clocks read the
// time at the last tick (wallclock.CoarseTick), as Linux's do.
func (t *Thread) clockNow(id int32) (int64, bool) {
	switch id {
	case clockRealtime, clockRealtimeAlarm, clockTAI:
		return wallclock.Realtime(), true
	case clockMonotonic, clockMonotonicRaw, clockBoottime, clockBoottimeAlarm:
		return monotonicNow(), true
	case clockRealtimeCoarse:
		return wallclock.RealtimeCoarse(), true
	case clockMonoCoarse:
		return wallclock.MonotonicCoarse(), true
	}
	return t.cpuClockNow(id)
}

func sysClockGettime(t *Thread, a *[6]uint64) (int64, bool) {
	ns, ok := t.clockNow(int32(a[0]))
	if !ok {
		return -eINVAL, false
	}
	return putTimespec(t, uintptr(a[1]), ns, false), false
}

// sysClockGetres: every clock counts in nanoseconds (the TSC behind them
// is finer), except the coarse ones, which count ticks.
func sysClockGetres(t *Thread, a *[6]uint64) (int64, bool) {
	id := int32(a[0])
	if _, ok := t.clockNow(id); !ok {
		return -eINVAL, false
	}
	if a[1] == 0 {
		return 0, false
	}
	res := int64(1)
	if id == clockRealtimeCoarse || id == clockMonoCoarse {
		res = wallclock.CoarseTick
	}
	return putTimespec(t, uintptr(a[1]), res, false), false
}

// sysClockNanosleep sleeps on the wall and monotonic clocks, and on the
// CPU-time clock of a process or of another thread of the caller's
// (EINVAL for the caller's own thread clock, which cannot advance while
// it sleeps, as Linux). Flags other than TIMER_ABSTIME are ignored, as by
// Linux.
func sysClockNanosleep(t *Thread, a *[6]uint64) (int64, bool) {
	id, flags := int32(a[0]), a[1]
	cpu := false
	switch id {
	case clockRealtime, clockMonotonic, clockBoottime, clockTAI, clockRealtimeAlarm, clockBoottimeAlarm:
	case clockMonotonicRaw, clockRealtimeCoarse, clockMonoCoarse:
		return -eOPNOTSUPP, false // clocks one can read but not sleep on
	case clockProcessCPU:
		cpu = true
	case clockThreadCPU:
		return -eOPNOTSUPP, false // Linux's thread clock has no sleep
	default:
		if id >= 0 {
			return -eINVAL, false
		}
		if id&7 == 3 {
			return -eOPNOTSUPP, false // a clock by descriptor (CLOCKFD): none sleep
		}
		cpu = true
	}
	var b [16]byte
	if err := t.Proc.Space().CopyIn(uintptr(a[2]), b[:]); err != nil {
		return errno(err), false
	}
	sec, nsec := int64(binary.LittleEndian.Uint64(b[:])), int64(binary.LittleEndian.Uint64(b[8:]))
	if sec < 0 || nsec < 0 || nsec >= 1e9 {
		return -eINVAL, false
	}
	d := time.Duration(sec)*time.Second + time.Duration(nsec)
	if cpu {
		return t.cpuNanosleep(id, flags&timerAbstime != 0, d, uintptr(a[3])), false
	}
	if flags&timerAbstime != 0 && isWallClock(id) {
		// A time of day: the sleep follows changes of the clock.
		if t.sleepUntilWall(time.Unix(0, int64(d))) {
			return -eRESTARTNOHAND, false
		}
		return 0, false
	}
	if flags&timerAbstime != 0 {
		now, _ := t.clockNow(id)
		d -= time.Duration(now)
		if d <= 0 {
			return 0, false
		}
	}
	if flags&timerAbstime == 0 {
		return t.relativeSleep(time.Now().Add(d), uintptr(a[3])), false
	}
	if _, intr := t.sleep(d); intr {
		return -eRESTARTNOHAND, false // the same deadline again, unless a handler runs
	}
	return 0, false
}

// cpuNanosleep sleeps until CPU-time clock id has advanced by d (or
// reads d, if abs), woken by a watch on the clock (cputimer.go). It also
// looks at the clock every second of real time, to end the sleep when
// the clock's process or thread is gone (Linux's timer fires then).
func (t *Thread) cpuNanosleep(id int32, abs bool, d time.Duration, remAt uintptr) int64 {
	if id&4 != 0 && (int(^id>>3) == 0 || int(^id>>3) == t.TID) {
		return -eINVAL
	}
	c, ok := t.cpuClock(id)
	if !ok {
		return -eINVAL
	}
	end := int64(d)
	if !abs {
		end += c.now()
	}
	return t.cpuSleepUntil(id, end, abs, remAt)
}

// cpuSleepUntil is cpuNanosleep's wait, until CPU-time clock id reads
// end. A relative sleep (abs false) that a signal or a stop interrupts
// writes what is left and goes on through restart_syscall to the same
// reading, as Linux's posix_cpu_nsleep_restart; an absolute one
// restarts unless a handler runs.
func (t *Thread) cpuSleepUntil(id int32, end int64, abs bool, remAt uintptr) int64 {
	c, ok := t.cpuClock(id)
	if !ok {
		return -eINVAL
	}
	now := c.now()
	if now >= end {
		return 0
	}
	done := make(chan struct{})
	w := &cpuWatch{clock: c, fire: func(uint64) { close(done) }, expires: end}
	owner := c.owner()
	owner.addWatch(w)
	defer owner.removeWatch(w)
	w.check()
	owner.kickThreads(t)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	t.waitBegin()
	defer t.sleepEnd()
	for {
		select {
		case <-done:
			return 0
		case <-tick.C:
			if _, ok := t.cpuClock(id); !ok {
				return 0
			}
			w.check()
		case <-t.sigWake:
			if !t.interrupted() {
				continue
			}
			if abs {
				return -eRESTARTNOHAND // the same deadline again, unless a handler runs
			}
			if remAt != 0 {
				if e := putTimespec(t, remAt, max(end-c.now(), 0), false); e != 0 {
					return e
				}
			}
			t.restartFn = func(t *Thread) int64 { return t.cpuSleepUntil(id, end, false, remAt) }
			return -eRESTARTBLOCK
		}
	}
}

// sleepUntilWall waits until the wall clock reads at, following changes
// of the clock, and reports whether a signal interrupted it.
func (t *Thread) sleepUntilWall(at time.Time) (interrupted bool) {
	t.waitBegin()
	defer t.sleepEnd()
	for {
		changed := wallclock.Changed()
		d := at.Sub(wallclock.Now())
		if d <= 0 {
			return false
		}
		tm := time.NewTimer(d)
		select {
		case <-tm.C:
		case <-changed:
		case <-t.sigWake:
			if t.interrupted() {
				tm.Stop()
				return true
			}
		}
		tm.Stop()
	}
}

// sleep waits for d unless a signal comes first; it returns the time left.
func (t *Thread) sleep(d time.Duration) (left time.Duration, interrupted bool) {
	end := time.Now().Add(d)
	tm := time.NewTimer(d)
	defer tm.Stop()
	t.waitBegin()
	defer t.sleepEnd()
	for {
		select {
		case <-tm.C:
			return 0, false
		case <-t.sigWake:
			if t.interrupted() {
				return max(time.Until(end), 0), true
			}
		}
	}
}

// settodMax bounds the times the wall clock may be set to
// (TIME_SETTOD_SEC_MAX: KTIME_SEC_MAX less 30 years).
const settodMax = (1<<63-1)/1_000_000_000 - 30*365*86400

// setWallClock applies clock_settime's and settimeofday's last checks
// (EINVAL for a time out of range, then EPERM without CAP_SYS_TIME) and
// sets the clock.
func (t *Thread) setWallClock(sec, nsec int64) int64 {
	if sec < 0 || nsec < 0 || nsec >= 1e9 || sec > settodMax {
		return -eINVAL
	}
	if !t.creds().privileged() {
		return -ePERM
	}
	wallclock.Set(time.Unix(sec, nsec))
	return 0
}

// sysClockSettime implements clock_settime(2): only CLOCK_REALTIME can be
// set (EINVAL for the others, before the pointer is read). A CPU-time
// clock is read first, then EINVAL if it names no process or thread,
// else EPERM: no one may set one.
func sysClockSettime(t *Thread, a *[6]uint64) (int64, bool) {
	id := int32(a[0])
	cpu := id == clockProcessCPU || id == clockThreadCPU || id < 0
	if id != clockRealtime && !cpu {
		return -eINVAL, false
	}
	var b [16]byte
	if err := t.Proc.Space().CopyIn(uintptr(a[1]), b[:]); err != nil {
		return errno(err), false
	}
	if cpu {
		if _, ok := t.cpuClockNow(id); !ok {
			return -eINVAL, false
		}
		return -ePERM, false
	}
	le := binary.LittleEndian
	return t.setWallClock(int64(le.Uint64(b[:])), int64(le.Uint64(b[8:]))), false
}

// sysSettimeofday implements settimeofday(2). The time zone is checked and
// otherwise ignored (the kernel keeps no time zone).
func sysSettimeofday(t *Thread, a *[6]uint64) (int64, bool) {
	var sec, usec int64
	if a[0] != 0 {
		var b [16]byte
		if err := t.Proc.Space().CopyIn(uintptr(a[0]), b[:]); err != nil {
			return errno(err), false
		}
		sec, usec = int64(binary.LittleEndian.Uint64(b[:])), int64(binary.LittleEndian.Uint64(b[8:]))
		if usec < 0 || usec >= 1e6 {
			return -eINVAL, false
		}
	}
	if a[1] != 0 {
		var tz [8]byte // tz_minuteswest, tz_dsttime
		if err := t.Proc.Space().CopyIn(uintptr(a[1]), tz[:]); err != nil {
			return errno(err), false
		}
		if mw := int32(binary.LittleEndian.Uint32(tz[:])); mw < -15*60 || mw > 15*60 {
			return -eINVAL, false
		}
	}
	if a[0] == 0 {
		if !t.creds().privileged() {
			return -ePERM, false
		}
		return 0, false
	}
	return t.setWallClock(sec, usec*1000), false
}
