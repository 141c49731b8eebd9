// Package timer holds the interval timer behind timerfd(2) and the POSIX
// per-process timers (timer_create(2)): armed for a first expiry and then
// every interval, it counts expirations, including those missed while
// the callback was late (the overrun Linux's hrtimer_forward computes),
// so a consumer sees one call per firing with how many periods passed.
//
// Deadlines are kept on Go's monotonic clock; callers turn absolute
// times on their clock into durations from now before arming.
package timer

import (
	"sync"
	"time"
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
	oldLeft, oldInterval = t.leftLocked(), t.interval
	if t.t != nil {
		t.t.Stop()
		t.t = nil
	}
	t.gen++
	t.interval = 0
	if value <= 0 {
		return
	}
	t.interval = interval
	t.deadline = time.Now().Add(value)
	gen := t.gen
	t.t = time.AfterFunc(value, func() { t.expire(gen) })
	return
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
	if t.gen != gen || t.t == nil {
		t.mu.Unlock()
		return
	}
	n := uint64(1)
	if t.interval > 0 {
		late := time.Since(t.deadline)
		if late > 0 {
			n += uint64(late / t.interval)
		}
		t.deadline = t.deadline.Add(time.Duration(n) * t.interval)
		t.t = time.AfterFunc(time.Until(t.deadline), func() { t.expire(gen) })
	} else {
		t.t = nil
	}
	t.fire(n)
	t.mu.Unlock()
}
