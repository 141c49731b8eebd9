// Package epoll is epoll(7) over the VFS's readiness: an Instance is the
// File behind an epoll descriptor (so it can be polled and nested), and
// keeps a ready list, as Linux's eventpoll does, so that epoll_wait costs
// what is ready rather than what is watched. kernel/proc's handlers
// decode the system calls and call in here.
//
// Each interest watches its file's queue with a function (vfs.WakeFunc)
// that marks the interest signalled and puts it on the ready list, then
// wakes a waiting epoll_wait and the instance's own pollers. Collect
// (epoll_wait) looks only at interests on the list: it takes each off,
// asks its file for readiness and reports it when ready. A
// level-triggered interest that was reported goes back on the list (the
// next call looks again and drops it if it is no longer ready);
// edge-triggered and one-shot ones come off until their file signals
// again or EPOLL_CTL_MOD re-arms them.
//
// Edge-triggered interests report when readiness gains bits since their
// last report or when their file signalled a change since then (new
// data on an already-readable pipe is an edge too); EPOLLONESHOT
// interests disarm after one report. The signal is recorded before the
// waiter is woken, so a waiter that wakes always finds the edge that
// woke it, and a signal that lands while Collect samples readiness puts
// the interest back on the list for the next call.
//
// An instance holds no reference to the files it watches: an interest
// goes when its file's last reference does (vfs.ReleaseWatcher), as on
// Linux, where closing one of two descriptors of a file leaves the
// interest in place.
//
// The control operations find an interest through its file, whose
// release watchers it is among (usually the only one), rather than in a
// table of the instance's: EPOLL_CTL_MOD and DEL, which event loops
// issue several times a request, do no map look-up and allocate
// nothing. An instance keeps a list of its interests only for its own
// release and the nesting checks, and reuses the records DEL and
// releases leave behind for the next ADD, which allocates nothing
// either when the file names its queues (vfs.QueueWatcher: pipes,
// sockets, eventfds), as the record registers on them itself. ADD and
// MOD put an interest on the ready list, and wake the waiters, only
// when it would report now (Linux's ep_insert and ep_modify): an
// interest that is not ready is queued later by its file's signal,
// which the watch does not miss since it was registered before the
// readiness was asked.
//
// Lock order: Instance.mu (the interests and their settings; Collect and
// the control operations) before the file's locks and queues (Watch,
// Readiness), which come before Instance.rmu (the ready list, taken by
// the wake-up functions inside a queue's Notify). rmu is never held
// while a file is asked anything. A nested instance's mu comes after
// its watcher's (the nesting has no cycles: Add refuses them).
package epoll

import (
	"sync"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/kmem"
	"shortbread/kernel/vfs"
)

// Event bits of epoll_ctl(2) beyond the poll bits.
const (
	ET        = 1 << 31 // EPOLLET
	Oneshot   = 1 << 30 // EPOLLONESHOT
	WakeUp    = 1 << 29 // EPOLLWAKEUP
	Exclusive = 1 << 28 // EPOLLEXCLUSIVE
)

// ExclusiveOK are the events EPOLLEXCLUSIVE may come with (Linux's
// EPOLLEXCLUSIVE_OK_BITS: in, out, error, hang-up, wake-up, edge).
const ExclusiveOK = linux.POLLIN | linux.POLLOUT | linux.POLLERR | linux.POLLHUP | WakeUp | ET | Exclusive

// MaxNests is how deep instances may watch one another (Linux's
// EP_MAX_NESTS).
const MaxNests = 4

// Event is one reported event: the ready bits and the interest's data.
type Event struct {
	Events uint32
	Data   uint64
}

// key names an interest: a descriptor and the file it named when added
// (Linux's epitem key, the file and the descriptor).
type key struct {
	fd   int
	file *vfs.OpenFile
}

// interest is one file watched by an instance (Linux's epitem). A
// record is reused by its instance after it is forgotten: ep and wake
// never change.
type interest struct {
	ep   *Instance
	wake vfs.Wake // it.wakeUp, made once per record

	// key, p, idx, events, data, last and cancel are protected by ep.mu.
	key    key
	p      vfs.Poller // key.file's File, asked directly (no type assertion a poll)
	idx    int        // index in ep.list; -1 when forgotten
	events uint32
	data   uint64
	last   uint32 // readiness at the last report (edge-triggered)
	// The watch on the file's queues: two registrations of the record's
	// own when the file names its queues (vfs.QueueWatcher), else the
	// cancel function of its Watch.
	regs   [2]vfs.Registration
	cancel func()

	// Protected by ep.rmu.
	signalled  bool // the file signalled since the interest was last taken off the list
	queued     bool // on the ready list
	prev, next *interest
}

// Instance is an epoll instance: the File of an epoll descriptor.
type Instance struct {
	mu      sync.Mutex
	list    []*interest // every interest, each at its idx; protected by mu
	free    []*interest // forgotten records for Add to reuse; protected by mu
	scratch []readyItem // Readiness's and Collect's work list; protected by mu

	rmu        sync.Mutex
	head, tail *interest // the ready list; protected by rmu
	nready     int       // its length; protected by rmu

	// q is notified on every wake-up: the instance's pollers (poll,
	// nested epoll) and the epoll_wait calls sleeping on it.
	q vfs.Queue
}

// readyItem is an interest taken from the ready list and whether it had
// been signalled.
type readyItem struct {
	it        *interest
	signalled bool
}

// maxFree bounds the forgotten records an instance keeps for reuse.
const maxFree = 16

// New returns an empty instance.
func New() *Instance {
	return &Instance{}
}

// WaitQueue is the queue every wake-up of the instance notifies:
// epoll_wait sleeps on it between calls of Collect, each caller with a
// channel of its own (a vfs.Waiter), which a thread's interrupt can
// wake too, so that the sleep is one channel receive.
func (e *Instance) WaitQueue() *vfs.Queue { return &e.q }

func (e *Instance) Read(vfs.Blocking, []byte, int64) (int, error)  { return 0, linux.EINVAL }
func (e *Instance) Write(vfs.Blocking, []byte, int64) (int, error) { return 0, linux.EINVAL }

// Release forgets every interest when the instance's last descriptor
// goes.
func (e *Instance) Release() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for len(e.list) > 0 {
		it := e.list[len(e.list)-1]
		it.key.file.StopOnRelease(it)
		e.forgetLocked(it)
	}
	e.free = nil
}

// Watch registers wake with the instance's pollers.
func (e *Instance) Watch(wake vfs.Wake) func() { return e.q.Watch(wake) }

// Readiness: an instance is readable when an interest on its ready list
// is ready as epoll_wait would report it (nothing is consumed).
func (e *Instance) Readiness() uint32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rmu.Lock()
	items := e.scratch[:0]
	for it := e.head; it != nil; it = it.next {
		items = append(items, readyItem{it, it.signalled})
	}
	e.rmu.Unlock()
	var r uint32
	for _, ri := range items {
		if _, ok := ri.it.poll(ri.signalled, false); ok {
			r = linux.POLLIN
			break
		}
	}
	clear(items) // hold no interest past its life
	e.scratch = items[:0]
	return r
}

// wakeUp is an interest's wake-up function, called by its file's queue:
// it records the signal, puts the interest on the ready list and wakes
// the instance's waiters and pollers (every time, even when the interest
// was on the list already: a poller's edge-triggered interest in the
// instance sees a new edge, as a pipe's does on new data).
func (it *interest) wakeUp() {
	e := it.ep
	e.rmu.Lock()
	it.signalled = true
	e.pushLocked(it)
	e.rmu.Unlock()
	e.wakeWaiters()
}

func (e *Instance) wakeWaiters() { e.q.Notify() }

// FileReleased forgets the interest when its file's last reference goes
// (vfs.ReleaseWatcher). A release under way may tell a record that was
// forgotten meanwhile (and perhaps reused for another file): it is left
// alone.
func (it *interest) FileReleased(f *vfs.OpenFile) {
	e := it.ep
	e.mu.Lock()
	defer e.mu.Unlock()
	if it.idx >= 0 && it.key.file == f {
		e.forgetLocked(it)
	}
}

// find returns the instance's interest in (fd, f), or nil: it is among
// f's release watchers. Only e's own interests' keys are read, under
// e.mu; an interest's ep never changes.
// Preconditions: e.mu is held.
func (e *Instance) find(fd int, f *vfs.OpenFile) *interest {
	w := f.FindReleaseWatcher(func(w vfs.ReleaseWatcher) bool {
		it, ok := w.(*interest)
		return ok && it.ep == e && it.key.fd == fd
	})
	it, _ := w.(*interest)
	return it
}

// forgetLocked cancels the interest's watch, takes it off the ready list
// and out of the list, and keeps the record for reuse. After the cancel
// its wake-up function no longer runs (a queue calls it under its lock,
// which the cancel takes), so nothing but a late FileReleased (which
// checks idx and the file) reaches the record again.
// Preconditions: e.mu is held.
func (e *Instance) forgetLocked(it *interest) {
	if it.cancel != nil {
		it.cancel()
	} else {
		it.regs[0].Cancel()
		it.regs[1].Cancel()
	}
	e.rmu.Lock()
	e.removeLocked(it)
	it.signalled = false
	e.rmu.Unlock()
	last := e.list[len(e.list)-1]
	e.list[it.idx], last.idx = last, it.idx
	e.list[len(e.list)-1] = nil
	e.list = e.list[:len(e.list)-1]
	it.idx, it.key, it.p, it.cancel = -1, key{}, nil, nil // hold no file
	if len(e.free) < maxFree {
		e.free = append(e.free, it)
	}
}

// pushLocked appends it to the ready list unless it is there.
// Preconditions: e.rmu is held.
func (e *Instance) pushLocked(it *interest) {
	if it.queued {
		return
	}
	it.queued, it.prev, it.next = true, e.tail, nil
	if e.tail != nil {
		e.tail.next = it
	} else {
		e.head = it
	}
	e.tail = it
	e.nready++
}

// removeLocked takes it off the ready list if it is there.
// Preconditions: e.rmu is held.
func (e *Instance) removeLocked(it *interest) {
	if !it.queued {
		return
	}
	if it.prev != nil {
		it.prev.next = it.next
	} else {
		e.head = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	} else {
		e.tail = it.prev
	}
	it.queued, it.prev, it.next = false, nil, nil
	e.nready--
}

// disarmed reports whether a one-shot interest fired and was not re-armed.
// Preconditions: ep.mu is held.
func (it *interest) disarmed() bool {
	return it.events&Oneshot != 0 && it.events&^(ET|Oneshot|Exclusive) == 0
}

// poll returns what the interest reports now, and whether it reports at
// all; with consume, an edge-triggered interest's last readiness
// advances as for a real report.
// Preconditions: ep.mu is held, ep.rmu is not.
func (it *interest) poll(signalled, consume bool) (uint32, bool) {
	if it.disarmed() {
		return 0, false
	}
	mask := it.events&(linux.POLLIN|linux.POLLOUT|linux.POLLPRI|linux.POLLRDHUP) | linux.POLLERR | linux.POLLHUP
	r := it.p.Readiness() & mask
	if it.events&ET != 0 {
		fresh := r&^it.last != 0 || signalled
		if consume {
			it.last = r
		}
		if !fresh {
			return 0, false
		}
	}
	return r, r != 0
}

// Collect reports up to max ready events, appended to dst[:0], taking
// them off the ready list as epoll_wait does: level-triggered interests
// that were reported go back on it, others stay off until their file
// signals again; one-shot interests disarm.
func (e *Instance) Collect(dst []Event, max int) []Event {
	out := dst[:0]
	e.mu.Lock()
	defer e.mu.Unlock()
	// Only the interests on the list now: one that a wake-up puts back
	// while this runs waits for the next call (it is behind them).
	// Nothing else takes interests off the list while e.mu is held.
	e.rmu.Lock()
	n := e.nready
	e.rmu.Unlock()
	again := e.scratch[:0]
	for ; n > 0 && len(out) < max; n-- {
		e.rmu.Lock()
		it := e.head
		e.removeLocked(it)
		signalled := it.signalled
		it.signalled = false
		e.rmu.Unlock()
		r, ok := it.poll(signalled, true)
		if !ok {
			continue
		}
		out = append(out, Event{r, it.data})
		switch {
		case it.events&Oneshot != 0:
			it.events &= ET | Oneshot
		case it.events&ET == 0:
			again = append(again, readyItem{it: it})
		}
	}
	if len(again) > 0 {
		e.rmu.Lock()
		for _, ri := range again {
			e.pushLocked(ri.it)
		}
		e.rmu.Unlock()
	}
	clear(again)
	e.scratch = again[:0]
	return out
}

// depth returns how many levels of instances e watches below it, and
// whether it reaches stop (adding e to stop would close a cycle).
func (e *Instance) depth(stop *Instance, level int) (int, bool) {
	if e == stop {
		return 0, true
	}
	if level > MaxNests { // deep enough to refuse; do not walk on
		return level, false
	}
	e.mu.Lock()
	var inner []*Instance
	for _, it := range e.list {
		if x, ok := it.p.(*Instance); ok {
			inner = append(inner, x)
		}
	}
	e.mu.Unlock()
	most := 0
	for _, x := range inner {
		d, loop := x.depth(stop, level+1)
		if loop {
			return 0, true
		}
		most = max(most, d+1)
	}
	return most, false
}

// Add registers interest in f, open as descriptor fd (EPOLL_CTL_ADD):
// ELOOP when f is an instance whose nesting would close a cycle or go
// deeper than MaxNests, EEXIST when (fd, f) is registered, ENOMEM when
// memory is short. The caller has checked the events (EPOLLEXCLUSIVE's
// rules). EPERM when f is not pollable.
// Preconditions: the caller holds a reference to f.
func (e *Instance) Add(fd int, f *vfs.OpenFile, events uint32, data uint64) error {
	p, ok := f.Impl().(vfs.Poller)
	if !ok {
		return linux.EPERM // always ready: Linux refuses regular files
	}
	if inner, ok := f.Impl().(*Instance); ok {
		if d, loop := inner.depth(e, 0); loop || d+1 > MaxNests {
			return linux.ELOOP
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.find(fd, f) != nil {
		return linux.EEXIST
	}
	if kmem.Refuse() { // no memory for another watch (Linux: ENOMEM)
		return linux.ENOMEM
	}
	var it *interest
	if n := len(e.free); n > 0 {
		it = e.free[n-1]
		e.free[n-1] = nil
		e.free = e.free[:n-1]
	} else {
		it = &interest{ep: e}
		it.wake = vfs.WakeFunc(it.wakeUp)
	}
	it.key, it.p, it.events, it.data, it.last = key{fd, f}, p, events, data, 0
	it.idx = len(e.list)
	e.list = append(e.list, it)
	if qw, ok := p.(vfs.QueueWatcher); ok {
		q1, q2 := qw.WatchQueues()
		it.regs[0].Register(q1, it.wake)
		if q2 != nil {
			it.regs[1].Register(q2, it.wake)
		}
	} else {
		it.cancel = f.Watch(it.wake)
	}
	f.OnRelease(it)
	e.arm(it)
	return nil
}

// Modify changes an interest's events and data (EPOLL_CTL_MOD): ENOENT
// when (fd, f) is not registered, EINVAL for an exclusive interest. The
// interest is re-armed, and queued for the next Collect when it would
// report now (arm).
func (e *Instance) Modify(fd int, f *vfs.OpenFile, events uint32, data uint64) error {
	e.mu.Lock()
	err := e.modifyLocked(fd, f, events, data)
	e.mu.Unlock()
	return err
}

// modifyLocked is Modify with e.mu held (no deferred unlock on the path
// event loops take several times a request).
func (e *Instance) modifyLocked(fd int, f *vfs.OpenFile, events uint32, data uint64) error {
	it := e.find(fd, f)
	if it == nil {
		return linux.ENOENT
	}
	if it.events&Exclusive != 0 {
		return linux.EINVAL // an exclusive watch cannot be changed
	}
	it.events, it.data, it.last = events, data, 0
	e.arm(it)
	return nil
}

// Delete removes the interest in (fd, f) (EPOLL_CTL_DEL): ENOENT when
// there is none.
func (e *Instance) Delete(fd int, f *vfs.OpenFile) error {
	e.mu.Lock()
	it := e.find(fd, f)
	if it == nil {
		e.mu.Unlock()
		return linux.ENOENT
	}
	f.StopOnRelease(it)
	e.forgetLocked(it)
	e.mu.Unlock()
	return nil // nothing new to report: no one to wake
}

// arm clears a new or changed interest's signal (its readiness alone
// decides, as its last report was reset) and, when it would report now,
// puts it on the ready list and wakes the waiters to look. One that
// would not is queued by its file's next signal: the watch is in place
// before the readiness is asked, so a change after the question is not
// missed.
// Preconditions: e.mu is held.
func (e *Instance) arm(it *interest) {
	e.rmu.Lock()
	it.signalled = false
	e.rmu.Unlock()
	if _, ok := it.poll(false, false); !ok {
		return
	}
	e.rmu.Lock()
	e.pushLocked(it)
	e.rmu.Unlock()
	e.wakeWaiters()
}
