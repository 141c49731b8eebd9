package blk

import "time"

// Watch is a driver's request timeout: one runtime timer for a disk (or
// a queue, or a port), not one per request. A timer made and stopped per
// request, and the two-way select that waits on it, cost a request about
// a thousand instructions and two allocations; a Watch costs a
// comparison. It runs while requests are outstanding and fires, calling
// the driver's expire function, at the deadline of the oldest one it
// was told of; expire times out what is overdue and calls Next with the
// time left to the oldest of the rest.
//
// A Watch is not safe for concurrent use: the driver calls Start and Next
// under the lock that guards its outstanding requests (expire
// takes that lock first).
type Watch struct {
	t  *time.Timer
	on bool      // the timer is set (requests are outstanding)
	at time.Time // when it fires, while on
}

// NewWatch makes a stopped Watch that calls expire when it fires.
func NewWatch(expire func()) *Watch {
	w := &Watch{t: time.AfterFunc(time.Hour, expire)}
	w.t.Stop()
	return w
}

// Start is told of a request sent at now that times out after d. The
// timer is set if it was not, or if this deadline comes before the one
// it is set for (the driver's timeout may have been made shorter).
func (w *Watch) Start(now time.Time, d time.Duration) {
	if at := now.Add(d); !w.on || at.Before(w.at) {
		w.on, w.at = true, at
		w.t.Reset(d)
	}
}

// Next sets the timer again, from expire, for the oldest request still
// outstanding, whose deadline is left after now; left <= 0 says none is
// left and the Watch stops.
func (w *Watch) Next(now time.Time, left time.Duration) {
	w.on = left > 0
	if w.on {
		w.at = now.Add(left)
		w.t.Reset(left)
	}
}
