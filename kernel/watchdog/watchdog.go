// Package watchdog decides when a thread is hung: it is given, at each
// look, every thread's kernel-entry counter (odd while the thread is in a
// system call, bumped at entry and exit) and whether it is sleeping
// interruptibly, and it reports a thread that stayed in one system call,
// awake, for longer than a timeout — once per system call, as Linux's
// hung-task detector reports a task in uninterruptible sleep. It keeps no
// clock of its own, so it runs under go test.
package watchdog

import "time"

// Tracker remembers where each thread was at the previous look.
type Tracker struct {
	Timeout time.Duration
	marks   map[any]*mark
	looked  map[any]bool
}

type mark struct {
	seq   uint64
	since time.Time
	told  bool
}

// Observe records thread id at time now and reports whether it must be
// reported as hung now, and for how long it has been stuck.
func (tr *Tracker) Observe(id any, seq uint64, sleeping bool, now time.Time) (stuck time.Duration, report bool) {
	if tr.marks == nil {
		tr.marks, tr.looked = map[any]*mark{}, map[any]bool{}
	}
	tr.looked[id] = true
	m := tr.marks[id]
	if seq%2 == 0 || sleeping {
		delete(tr.marks, id) // in user mode, or waiting as it may
		return 0, false
	}
	if m == nil || m.seq != seq {
		tr.marks[id] = &mark{seq: seq, since: now}
		return 0, false
	}
	stuck = now.Sub(m.since)
	if m.told || tr.Timeout <= 0 || stuck < tr.Timeout {
		return stuck, false
	}
	m.told = true
	return stuck, true
}

// Done ends a look: threads not observed since the last Done are gone.
func (tr *Tracker) Done() {
	for id := range tr.marks {
		if !tr.looked[id] {
			delete(tr.marks, id)
		}
	}
	clear(tr.looked)
}

// Len is how many threads the tracker is following.
func (tr *Tracker) Len() int { return len(tr.marks) }
