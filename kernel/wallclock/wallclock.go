// Package wallclock is the time of day (CLOCK_REALTIME) as the system
// reports and stamps it: the machine's clock plus the offset that
// clock_settime(2) and settimeofday(2) set. Intervals and deadlines use
// Go's monotonic clock and are not moved by setting the wall clock.
package wallclock

import (
	"sync"
	"sync/atomic"
	"time"
)

var (
	// offset is what was added to the machine's clock, in nanoseconds.
	offset atomic.Int64

	changedMu sync.Mutex
	changed   = make(chan struct{}) // closed and replaced at each Set; protected by changedMu
)

// Changed returns a channel closed the next time the clock is set:
// timers on the wall clock recompute their deadlines then.
func Changed() <-chan struct{} {
	changedMu.Lock()
	defer changedMu.Unlock()
	return changed
}

// Now returns the wall-clock time. It carries no monotonic reading:
// measure intervals with time.Now, which setting the clock does not move.
func Now() time.Time {
	now := time.Now()
	if adjusting.Load() {
		return now.Round(0).Add(adjustedOffset(now))
	}
	return now.Round(0).Add(time.Duration(offset.Load()))
}

// Set makes the wall clock read t now. A slew in progress keeps going
// from there, as on Linux.
func Set(t time.Time) {
	adjMu.Lock()
	now := time.Now()
	fold(now)
	offset.Store(int64(t.Round(0).Sub(now.Round(0))))
	adjMu.Unlock()
	notify()
}

// notify wakes the timers on the wall clock.
func notify() {
	changedMu.Lock()
	close(changed)
	changed = make(chan struct{})
	changedMu.Unlock()
}
