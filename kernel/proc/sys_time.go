package proc

// Interval timers and interruptible sleeps.

import (
	"encoding/binary"
	"time"
)

// realTimer is ITIMER_REAL: SIGALRM at expiry, then every interval.
type realTimer struct {
	timer    *time.Timer
	deadline time.Time
	interval time.Duration
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
	p.alarm = realTimer{}
	if value > 0 {
		p.alarm.deadline = time.Now().Add(value)
		p.alarm.interval = interval
		var fire func()
		fire = func() {
			p.signal(sigALRM)
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.alarm.interval > 0 && p.state == procRunning {
				p.alarm.deadline = time.Now().Add(p.alarm.interval)
				p.alarm.timer = time.AfterFunc(p.alarm.interval, fire)
			} else {
				p.alarm.timer = nil
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

func sysSetitimer(t *Thread, a *[6]uint64) (int64, bool) {
	if a[0] != 0 { // only ITIMER_REAL
		return -eINVAL, false
	}
	s := t.Proc.Space()
	var nb [32]byte
	var value, interval time.Duration
	if a[1] != 0 {
		if err := s.CopyIn(uintptr(a[1]), nb[:]); err != nil {
			return errno(err), false
		}
		var ok1, ok2 bool
		interval, ok1 = readTimeval(nb[0:])
		value, ok2 = readTimeval(nb[16:])
		if !ok1 || !ok2 {
			return -eINVAL, false
		}
	}
	left, oldInterval := t.Proc.setRealTimer(value, interval)
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
	if a[0] != 0 {
		return -eINVAL, false
	}
	p := t.Proc
	p.mu.Lock()
	var left time.Duration
	if p.alarm.timer != nil {
		left = max(time.Until(p.alarm.deadline), time.Microsecond)
	}
	interval := p.alarm.interval
	p.mu.Unlock()
	var ob [32]byte
	putTimeval(ob[0:], interval)
	putTimeval(ob[16:], left)
	return errno(p.Space().CopyOut(uintptr(a[1]), ob[:])), false
}

// sleep waits for d unless a signal comes first; it returns the time left.
func (t *Thread) sleep(d time.Duration) (left time.Duration, interrupted bool) {
	end := time.Now().Add(d)
	tm := time.NewTimer(d)
	defer tm.Stop()
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
