package vfs

import (
	"sync"
	"sync/atomic"

	"shortbread/kernel/abi/linux"
)

// Blocking says whether and how an operation may wait: a read of an empty
// pipe, a write to a full one, a read of a terminal with no input.
type Blocking struct {
	// NonBlock makes an operation that would wait fail with EAGAIN
	// instead (the open file's O_NONBLOCK).
	NonBlock bool
	// Intr interrupts a wait: when it can be received from (a value sent
	// or the channel closed) the operation gives up with EINTR, or with
	// the count done so far if it made progress. A nil Intr never
	// interrupts.
	Intr <-chan struct{}
	// Direct asks a file that caches its bytes (a block device) to move
	// them between the caller and the device itself (the open file's
	// O_DIRECT, which F_SETFL may change between calls).
	Direct bool
}

// Queue is a set of watchers to tell when an object's readiness may have
// changed. It is the one mechanism behind blocking reads and writes and
// behind poll, select and epoll: a waiter registers a channel, checks the
// condition it waits for, and sleeps on the channel if the condition does
// not hold yet; whoever changes the object calls Notify. A watcher that
// must know which object changed, without a goroutine to listen, registers
// a function instead (WakeFunc: epoll's ready list).
//
// Notify tells watchers in the order they registered.
//
// The zero Queue is empty and ready to use.
type Queue struct {
	mu      sync.Mutex
	watches []*watch // protected by mu; registration order

	// spare is a Waiter whose blocking call on this queue ended, kept
	// for the next one (see Waiter).
	spare atomic.Pointer[Waiter]
}

// Wake is what a Queue's Notify tells: a channel it signals (WakeChan)
// or a function it calls (WakeFunc).
type Wake struct {
	ch chan<- struct{}
	fn func()
}

// WakeChan is a Wake that signals ch. ch should have a buffer of one:
// Notify never blocks and drops a signal that finds the buffer full,
// since the signal already there says the same thing ("look again").
func WakeChan(ch chan<- struct{}) Wake { return Wake{ch: ch} }

// WakeFunc is a Wake that calls fn in Notify, with the queue's lock
// held: fn must not block, must not call back into the queue, and may
// only take locks that no one holds while waiting on this queue's lock
// (epoll puts an interest on its ready list this way, under a lock of
// its own that it never holds around a file's readiness or watches).
func WakeFunc(fn func()) Wake { return Wake{fn: fn} }

type watch struct{ Wake }

// A Registration is a watch whose record its owner keeps inside a
// longer-lived object, so that registering allocates nothing (Watch
// allocates the record and its cancel function): epoll's interests
// watch the queues their files name (QueueWatcher) this way. The zero
// Registration is registered nowhere.
type Registration struct {
	w watch
	q *Queue
}

// Register makes r tell w on every Notify of q until Cancel. r must not
// be registered already.
func (r *Registration) Register(q *Queue, w Wake) {
	r.w, r.q = watch{w}, q
	q.add(&r.w)
}

// Cancel undoes Register; after it returns, the Wake is not told again.
func (r *Registration) Cancel() {
	if r.q != nil {
		r.q.remove(&r.w)
		r.w, r.q = watch{}, nil
	}
}

// QueueWatcher is a Poller whose Watch registers on at most two queues:
// WatchQueues names them (q2 may be nil), as Watch would choose them at
// the time of the call, so that a watcher keeping its own Registrations
// can watch the file without allocating.
type QueueWatcher interface {
	WatchQueues() (q1, q2 *Queue)
}

// Watch registers w to be told by every Notify until cancel is called.
func (q *Queue) Watch(w Wake) (cancel func()) {
	r := &watch{w}
	q.add(r)
	return func() { q.remove(r) }
}

func (q *Queue) add(w *watch) {
	q.mu.Lock()
	q.watches = append(q.watches, w)
	q.mu.Unlock()
}

func (q *Queue) remove(w *watch) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, x := range q.watches {
		if x == w {
			q.watches = append(q.watches[:i], q.watches[i+1:]...)
			return
		}
	}
}

// Waiter is a wake-up channel and its registrations on queues, reused
// from one blocking call to the next: a socket's read or write that
// waits once each time (a request and its answer) would otherwise
// allocate a channel, a watch record and its cancel function per wait.
// The queue a call waits on first keeps one spare Waiter; a second
// caller waiting at the same time gets a new one.
type Waiter struct {
	ch chan struct{}
	// ws are the registrations on the first queues watched, more
	// beyond them: each record's address is its identity in the queue.
	ws    [2]watch
	wq    [2]*Queue
	n     int
	extra []func()
	// intr and intrx are the interrupt channel of the last Sleep that
	// had a registered Interrupter, and that Interrupter (interrupter.go).
	intr  <-chan struct{}
	intrx *Interrupter
}

// GetWaiter returns the queue's spare Waiter, watching nothing, or a
// new one. Give it back with Release.
func (q *Queue) GetWaiter() *Waiter {
	if w := q.spare.Swap(nil); w != nil {
		return w
	}
	return &Waiter{ch: make(chan struct{}, 1)}
}

// C is the channel every watched queue's Notify signals.
func (w *Waiter) C() <-chan struct{} { return w.ch }

// Watch registers the waiter on q until Release.
func (w *Waiter) Watch(q *Queue) {
	if w.n < len(w.ws) {
		r := &w.ws[w.n]
		r.ch = w.ch
		w.wq[w.n] = q
		w.n++
		q.add(r)
		return
	}
	w.extra = append(w.extra, q.Watch(WakeChan(w.ch)))
}

// Release removes every registration, empties the channel (a signal
// left there would only wake the next wait for nothing) and offers the
// waiter to home, the queue it came from, as its spare.
func (w *Waiter) Release(home *Queue) {
	for i := 0; i < w.n; i++ {
		w.wq[i].remove(&w.ws[i])
		w.wq[i] = nil
	}
	w.n = 0
	for _, cancel := range w.extra {
		cancel()
	}
	w.extra = nil
	select {
	case <-w.ch:
	default:
	}
	home.spare.CompareAndSwap(nil, w)
}

// Notify signals every watcher.
func (q *Queue) Notify() {
	q.mu.Lock()
	for _, w := range q.watches {
		if w.fn != nil {
			w.fn()
			continue
		}
		select {
		case w.ch <- struct{}{}:
		default:
		}
	}
	q.mu.Unlock()
}

// Waiters returns how many watchers are registered.
func (q *Queue) Waiters() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.watches)
}

// waiter is one blocking call's registration on a queue, made when
// first armed, with the queue's spare Waiter (no allocation).
type waiter struct {
	w *Waiter
	q *Queue
}

// arm registers a waiter on q; call it before checking the condition
// waited for, so that a change after the check is not missed.
func (w *waiter) arm(q *Queue) {
	if w.w == nil {
		w.w, w.q = q.GetWaiter(), q
		w.w.Watch(q)
	}
}

// wait sleeps until notified (nil) or interrupted (EINTR), through
// Waiter.Sleep: one receive on the waiter's channel when the thread's
// interrupt channel has a registered Interrupter. An interrupt that
// arrives during the sleep wakes it as a notification; the caller then
// looks at its condition again and, finding it still unmet, sleeps
// once more and sees the interrupt before sleeping.
func (w *waiter) wait(b Blocking) error {
	if w.w.Sleep(b.Intr) {
		return linux.EINTR
	}
	return nil
}

// done removes the registration.
func (w *waiter) done() {
	if w.w != nil {
		w.w.Release(w.q)
	}
}

// WaitFor blocks until ready reports true, returning nil, or until the
// wait fails: EAGAIN at once when b.NonBlock, EINTR when interrupted. q
// must be notified whenever ready's answer may change. ready is called
// with no lock held by WaitFor and does its own locking. Devices and
// file systems outside this package use it for their blocking reads.
func WaitFor(q *Queue, b Blocking, ready func() bool) error {
	if ready() {
		return nil
	}
	if b.NonBlock {
		return linux.EAGAIN
	}
	var w waiter
	defer w.done()
	for {
		w.arm(q)
		if ready() {
			return nil
		}
		if err := w.wait(b); err != nil {
			return err
		}
	}
}
