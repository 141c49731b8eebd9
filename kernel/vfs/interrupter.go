package vfs

import (
	"sync"
	"sync/atomic"
)

// An Interrupter lets a thread's interrupt wake the blocking wait the
// thread is in through the wait's own channel, so that the wait
// receives from one channel instead of selecting between its channel
// and the interrupt channel (Waiter.Sleep): a two-case select costs
// about four times a plain receive, and a socket round trip waits on
// both sides.
//
// The thread's owner (kernel/proc) makes one per thread around the
// channel it passes as Blocking.Intr, registers it while the thread
// runs, and calls Interrupted after each value it sends on the channel.
type Interrupter struct {
	c chan struct{}
	// wait is the wake-up channel of the Sleep in progress, nil
	// outside one.
	wait atomic.Pointer[chan struct{}]
	// waited, if not nil, is called each time the thread is about to
	// block in a wait its channel interrupts: the owner counts its
	// voluntary context switches (NoteWait).
	waited func()
}

// NewInterrupter makes the Interrupter of the interrupt channel c;
// waited, if not nil, is told of each wait that blocks.
func NewInterrupter(c chan struct{}, waited func()) *Interrupter {
	return &Interrupter{c: c, waited: waited}
}

// NoteWait tells the owner of intr's registered Interrupter, if any,
// that its thread is about to block in a wait intr interrupts. A wait
// that receives from a channel of its own calls it once it has found
// its condition unmet, before it blocks; Sleep does so itself.
func NoteWait(intr <-chan struct{}) {
	if intr == nil {
		return
	}
	if v, ok := interrupters.Load(intr); ok {
		v.(*Interrupter).noteWait()
	}
}

func (x *Interrupter) noteWait() {
	if x.waited != nil {
		x.waited()
	}
}

// interrupters maps each registered Interrupter's channel, as a
// Blocking.Intr, to it. A Waiter remembers the last one it found, so
// the look-up is made only when a Waiter serves another thread.
var interrupters sync.Map // <-chan struct{} -> *Interrupter

// Register makes x known to Sleep for waits interrupted by its channel.
func (x *Interrupter) Register() { interrupters.Store((<-chan struct{})(x.c), x) }

// Unregister undoes Register (the thread has ended).
func (x *Interrupter) Unregister() { interrupters.Delete((<-chan struct{})(x.c)) }

// Interrupted wakes the Sleep in progress, if any; call it after
// sending on the interrupt channel. A wake-up that reaches a Waiter
// after its Sleep has ended only makes a later Sleep look again.
func (x *Interrupter) Interrupted() {
	if p := x.wait.Load(); p != nil {
		select {
		case *p <- struct{}{}:
		default:
		}
	}
}

// interrupter is the registered Interrupter of intr, or nil.
func (w *Waiter) interrupter(intr <-chan struct{}) *Interrupter {
	if intr == w.intr {
		return w.intrx
	}
	v, ok := interrupters.Load(intr)
	if !ok {
		return nil
	}
	w.intr, w.intrx = intr, v.(*Interrupter)
	return w.intrx
}

// Sleep blocks until a watched queue is notified (false) or intr
// interrupts (true: a value was received from it). A nil intr never
// interrupts. With a registered Interrupter for intr it receives from
// the waiter's channel alone: the interrupt is looked for before
// sleeping (after publishing the channel, so that an interrupt sent in
// between wakes the channel instead) and, after a notification, by the
// caller's next Sleep once it has looked at its condition again, as a
// select that found both ready may take either.
func (w *Waiter) Sleep(intr <-chan struct{}) (interrupted bool) {
	if intr == nil {
		<-w.ch
		return false
	}
	x := w.interrupter(intr)
	if x == nil {
		select {
		case <-w.ch:
			return false
		case <-intr:
			return true
		}
	}
	x.wait.Store(&w.ch)
	select {
	case <-intr:
		x.wait.Store(nil)
		return true
	default:
	}
	// A notification already there (it came since the caller looked)
	// means no wait, so no switch to count; len is one load, where a
	// non-blocking receive first would cost a channel operation.
	if len(w.ch) == 0 {
		x.noteWait()
	}
	<-w.ch
	x.wait.Store(nil)
	return false
}
