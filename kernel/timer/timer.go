// Package timer holds the interval timer behind timerfd(2) and the POSIX
// per-process timers (timer_create(2)): armed for a first expiry and then
// every interval, it counts expirations, including those missed while
// the callback was late (the overrun Linux's hrtimer_forward computes),
// so a consumer sees one call per firing with how many periods passed.
//
// Deadlines are kept on Go's monotonic clock; callers turn absolute
// times on a monotonic clock into durations from now before arming. A
// timer set for a time of day (SetWall) follows the wall clock instead:
// when the clock is set it recomputes its deadline, so it expires when
// the clock says so, at once (with the periods jumped over as overruns)
// if the clock was moved past it, as Linux's CLOCK_REALTIME timers do.
package timer

import (
	"sync"
	"time"

	"shortbread/kernel/wallclock"
)

// Timer is one interval timer. The zero Timer is not usable: use New.
type Timer struct {
	mu       sync.Mutex
	t        *time.Timer   // protected by mu; nil when disarmed
	deadline time.Time     // next expiry; protected by mu
	interval time.Duration // protected by mu
	// gen tells a firing Go timer whether it is still the armed one: one
	// that fires as the timer is being re-armed or stopped must not
	// count.
	gen  uint64 // protected by mu
	fire func(n uint64)

	// A timer armed by SetWall: the wall-clock time of the next expiry,
	// and a channel closed when this setting ends (its follower goes).
	wall     bool      // protected by mu
	wallNext time.Time // protected by mu
	unarm    chan struct{}
	// onClockSet, when set, runs (under mu) when the wall clock is set
	// while a wall timer is armed (timerfd's TFD_TIMER_CANCEL_ON_SET).
	onClockSet func()
}

// New returns a disarmed timer that calls fire, from its own goroutine,
// at each expiry with the number of periods that elapsed (1, or more
// when it ran late). fire runs under the timer's lock, so once Set or
// Stop returns no expiry of the old setting can still be reported; fire
// must not call the timer's methods, nor take a lock held around them.
func New(fire func(n uint64)) *Timer { return &Timer{fire: fire} }

// leftLocked is the time to the next expiry; an armed timer that is due
// reports a nanosecond, never 0 (0 means disarmed).
func (t *Timer) leftLocked() time.Duration {
	if t.t == nil {
		return 0
	}
	return max(time.Until(t.deadline), 1)
}

// Set arms the timer to expire after value and then every interval (0:
// once), or disarms it when value is 0, and returns what the old setting
// had left and its interval.
func (t *Timer) Set(value, interval time.Duration) (oldLeft, oldInterval time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	oldLeft, oldInterval = t.disarmLocked()
	if value > 0 {
		t.armLocked(value, interval)
	}
	return
}

// SetWall arms the timer to expire when the wall clock reads at (at once
// if that has passed) and then every interval, following changes of the
// clock; it returns the old setting like Set.
func (t *Timer) SetWall(at time.Time, interval time.Duration) (oldLeft, oldInterval time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	oldLeft, oldInterval = t.disarmLocked()
	changed := wallclock.Changed()
	t.armLocked(at.Sub(wallclock.Now()), interval)
	t.wall, t.wallNext = true, at
	t.unarm = make(chan struct{})
	go t.followWall(t.gen, changed, t.unarm)
	return
}

// SetClockSetHook makes f run when the wall clock is set while the
// timer is armed by SetWall. f runs under the timer's lock.
func (t *Timer) SetClockSetHook(f func()) {
	t.mu.Lock()
	t.onClockSet = f
	t.mu.Unlock()
}

// disarmLocked ends the current setting and returns what it had left.
func (t *Timer) disarmLocked() (left, interval time.Duration) {
	left, interval = t.leftLocked(), t.interval
	if t.t != nil {
		t.t.Stop()
		t.t = nil
	}
	if t.unarm != nil {
		close(t.unarm)
		t.unarm = nil
	}
	t.gen++
	t.interval, t.wall = 0, false
	return
}

// armLocked starts a setting: the first expiry after d (at once if d is
// not positive: the periods already past count as overruns).
func (t *Timer) armLocked(d, interval time.Duration) {
	t.interval = interval
	t.deadline = time.Now().Add(d)
	gen := t.gen
	t.t = time.AfterFunc(max(d, 0), func() { t.expire(gen) })
}

// followWall re-aims the timer of setting gen at each change of the
// wall clock until the setting ends.
func (t *Timer) followWall(gen uint64, changed <-chan struct{}, unarm chan struct{}) {
	for {
		select {
		case <-unarm:
			return
		case <-changed:
		}
		changed = wallclock.Changed()
		t.mu.Lock()
		if t.gen != gen || t.t == nil {
			t.mu.Unlock()
			return
		}
		t.t.Stop()
		t.deadline = time.Now().Add(t.wallNext.Sub(wallclock.Now()))
		t.t = time.AfterFunc(max(time.Until(t.deadline), 0), func() { t.expire(gen) })
		if t.onClockSet != nil {
			t.onClockSet()
		}
		t.mu.Unlock()
	}
}

// Get returns the time to the next expiry (0: disarmed) and the interval.
func (t *Timer) Get() (left, interval time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.leftLocked(), t.interval
}

// Stop disarms the timer.
func (t *Timer) Stop() { t.Set(0, 0) }

func (t *Timer) expire(gen uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gen != gen || t.t == nil || time.Now().Before(t.deadline) {
		return // re-armed, stopped, or already counted by Sync
	}
	t.expireLocked()
}

// Sync counts the expiries that are due but whose Go timer has not run
// yet, as Linux counts a timer's overruns when it is read: a reader sees
// every period that has passed even if the callbacks run late.
func (t *Timer) Sync() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.t != nil && !time.Now().Before(t.deadline) {
		t.t.Stop()
		t.expireLocked()
	}
}

// expireLocked reports the expiries up to now and arms the next.
// Preconditions: t.mu is held; the timer is armed and due.
func (t *Timer) expireLocked() {
	gen := t.gen
	n := uint64(1)
	if t.interval > 0 {
		late := time.Since(t.deadline)
		if late > 0 {
			n += uint64(late / t.interval)
		}
		t.deadline = t.deadline.Add(time.Duration(n) * t.interval)
		t.wallNext = t.wallNext.Add(time.Duration(n) * t.interval)
		t.t = time.AfterFunc(time.Until(t.deadline), func() { t.expire(gen) })
	} else {
		t.t = nil
		if t.unarm != nil {
			close(t.unarm) // a fired one-shot no longer follows the clock
			t.unarm = nil
		}
	}
	t.fire(n)
}
