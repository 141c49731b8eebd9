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
	// marks follows only the threads seen in the kernel and awake, so it
	// stays small however many threads there are (a map keeps the room
	// it once grew to).
	marks map[any]*mark
	look  uint64 // counts Done calls: the look marks were last seen in
}

type mark struct {
	seq   uint64
	since time.Time
	told  bool
	seen  uint64 // the look it was last observed in
}

// Observe records thread id at time now and reports whether it must be
// reported as hung now, and for how long it has been stuck.
func (tr *Tracker) Observe(id any, seq uint64, sleeping bool, now time.Time) (stuck time.Duration, report bool) {
	if tr.marks == nil {
		tr.marks = map[any]*mark{}
	}
	m := tr.marks[id]
	if seq%2 == 0 || sleeping {
		delete(tr.marks, id) // in user mode, or waiting as it may
		return 0, false
	}
	if m == nil || m.seq != seq {
		tr.marks[id] = &mark{seq: seq, since: now, seen: tr.look}
		return 0, false
	}
	m.seen = tr.look
	stuck = now.Sub(m.since)
	if m.told || tr.Timeout <= 0 || stuck < tr.Timeout {
		return stuck, false
	}
	m.told = true
	return stuck, true
}

// Done ends a look: threads not observed since the last Done are gone.
func (tr *Tracker) Done() {
	for id, m := range tr.marks {
		if m.seen != tr.look {
			delete(tr.marks, id)
		}
	}
	tr.look++
}

// Len is how many threads the tracker is following.
func (tr *Tracker) Len() int { return len(tr.marks) }
