package unix

import (
	"sync"

	"shortbread/kernel/vfs"
)

// Sockets in flight: a socket's descriptor sent in an SCM_RIGHTS message
// that nobody has received yet. Reference counting alone cannot free a
// socket whose only references are such messages queued at sockets that
// are themselves only in flight (a socket sent over itself, or two sent
// to each other and then closed): no process can ever read those queues.
// collect finds such groups and throws their queues away, which drops
// the last references and closes them. It runs, as on Linux, whenever an
// AF_UNIX socket closes while some socket is in flight (closing the
// descriptors of a cycle releases nothing by itself).
//
// Lock order: a socket's mu is never held while taking inflight.mu;
// collect takes inflight.mu and then sockets' locks.
var inflight struct {
	mu    sync.Mutex
	count map[*vfs.OpenFile]int // queued messages holding each AF_UNIX socket file; protected by mu
}

// countInflight adds d to the in-flight count of each AF_UNIX socket
// among files.
func countInflight(files []*vfs.OpenFile, d int) {
	for _, f := range files {
		if _, ok := f.Impl().(*sock); !ok {
			continue
		}
		inflight.mu.Lock()
		if inflight.count == nil {
			inflight.count = map[*vfs.OpenFile]int{}
		}
		inflight.count[f] += d
		if inflight.count[f] == 0 {
			delete(inflight.count, f)
		}
		inflight.mu.Unlock()
	}
}

// queues returns the messages queued at s and at the connections
// waiting at it to be accepted (whose queues a listener's holder can
// still reach), for collect.
// Preconditions: s.mu is held.
func (s *sock) queues() [][]*msg {
	qs := [][]*msg{s.rq}
	for _, n := range s.pending {
		n.mu.Lock()
		qs = append(qs, n.rq)
		n.mu.Unlock()
	}
	return qs
}

// collect frees groups of sockets only their own queues hold. Candidates
// are the sockets in flight whose every reference is an in-flight one.
// A candidate held by a message in a queue that is not a candidate's (or
// by one being sent or received right now, which the count sees and the
// queues do not) is alive, and so is everything queued at a live one;
// the rest cannot be reached by any process and their queues are
// dropped.
func collect() {
	inflight.mu.Lock()
	cands := map[*vfs.OpenFile]*sock{}
	for f, n := range inflight.count {
		if f.Refs() == int64(n) {
			cands[f] = f.Impl().(*sock)
		}
	}
	if len(cands) == 0 {
		inflight.mu.Unlock()
		return
	}
	internal := map[*vfs.OpenFile]int{}
	holds := map[*vfs.OpenFile][]*vfs.OpenFile{}
	for f, s := range cands {
		s.mu.Lock()
		for _, q := range s.queues() {
			for _, m := range q {
				for _, g := range m.ctl.Files {
					if cands[g] != nil {
						internal[g]++
						holds[f] = append(holds[f], g)
					}
				}
			}
		}
		s.mu.Unlock()
	}
	alive := map[*vfs.OpenFile]bool{}
	var stack []*vfs.OpenFile
	for f := range cands {
		if internal[f] < inflight.count[f] {
			alive[f] = true
			stack = append(stack, f)
		}
	}
	for len(stack) > 0 {
		f := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, g := range holds[f] {
			if !alive[g] {
				alive[g] = true
				stack = append(stack, g)
			}
		}
	}
	var garbage []*msg
	for f, s := range cands {
		if alive[f] {
			continue
		}
		s.mu.Lock()
		garbage = append(garbage, s.rq...)
		s.rq = nil
		for _, n := range s.pending {
			n.mu.Lock()
			garbage = append(garbage, n.rq...)
			n.rq = nil
			n.mu.Unlock()
		}
		s.mu.Unlock()
	}
	inflight.mu.Unlock()
	// Dropping the messages drops the last references of the sockets in
	// them, which closes those (each close runs collect again, finding
	// nothing left of this group).
	for _, m := range garbage {
		m.drop()
	}
}

// anyInflight reports whether some socket is in flight.
func anyInflight() bool {
	inflight.mu.Lock()
	defer inflight.mu.Unlock()
	return len(inflight.count) > 0
}
