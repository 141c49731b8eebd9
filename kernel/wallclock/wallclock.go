// Package wallclock is the system's clocks as programs read them:
// CLOCK_MONOTONIC, a counter (the TSC) scaled to nanoseconds, and the
// time of day (CLOCK_REALTIME), monotonic time plus an offset that
// clock_settime(2) and settimeofday(2) set and adjtimex(2) slews.
// Intervals and deadlines inside the kernel use Go's monotonic clock and
// are not moved by setting the wall clock.
//
// The clocks' parameters live in a Data record that the vDSO's page
// shares with user programs (kernel/vdso): the system calls and the vDSO
// compute the time from the same counter reading and the same
// parameters with the same integer arithmetic (clock.go), so the two
// agree to the nanosecond and neither can see time go backwards.
package wallclock

import (
	"sync"
	"time"
)

var (
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
func Now() time.Time { return time.Unix(0, Realtime()) }

// Set makes the wall clock read t now. A slew in progress keeps going
// from there, as on Linux.
func Set(t time.Time) {
	update(func(mono, _ int64, p *params) {
		p.offset = t.UnixNano() - mono
	})
	notify()
}

// notify wakes the timers on the wall clock.
func notify() {
	changedMu.Lock()
	close(changed)
	changed = make(chan struct{})
	changedMu.Unlock()
}
