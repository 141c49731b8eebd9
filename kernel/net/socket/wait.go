package socket

import (
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// ErrIntrNoRestart is EINTR from a wait that had a timeout: Linux never
// restarts such a call, whatever SA_RESTART says (sock_intr_errno). It
// maps to EINTR (errors.As gives linux.EINTR) but is not errors.Is
// EINTR, so the system-call layer's restart logic leaves it alone for
// read(2) and write(2) too.
var ErrIntrNoRestart error = intrNoRestart{}

type intrNoRestart struct{}

func (intrNoRestart) Error() string { return linux.EINTR.Error() }

// As makes errors.As see linux.EINTR.
func (intrNoRestart) As(target any) bool {
	if e, ok := target.(*linux.Errno); ok {
		*e = linux.EINTR
		return true
	}
	return false
}

// Wait blocks until ready reports true (nil), as vfs.WaitFor does, but
// watches every queue in qs (a sender waits for its own buffer and for
// room at the receiver) and gives up with EAGAIN after timeout
// (SO_RCVTIMEO, SO_SNDTIMEO; 0 waits forever; interrupted, it returns
// ErrIntrNoRestart, and EINTR without a timeout). The queues must be
// notified whenever ready's answer may change; ready does its own
// locking.
func Wait(b Blocking, timeout time.Duration, ready func() bool, qs ...*vfs.Queue) error {
	if ready() {
		return nil
	}
	return wait(b, timeout, ready, qs)
}

// WaitTried is Wait for a caller that has just tried the operation and
// found it would block: the first look at ready comes after the
// registration, not before it as well (a TCP receive that finds nothing
// would otherwise ask netstack for its readiness twice before
// sleeping). A unix socket's receive, which waits before trying, keeps
// Wait: there the first look usually finds the data.
func WaitTried(b Blocking, timeout time.Duration, ready func() bool, qs ...*vfs.Queue) error {
	return wait(b, timeout, ready, qs)
}

func wait(b Blocking, timeout time.Duration, ready func() bool, qs []*vfs.Queue) error {
	if b.NonBlock {
		return linux.EAGAIN
	}
	if len(qs) == 0 {
		panic("socket.Wait: no queue to wait on")
	}
	// The first queue's spare waiter: a wait allocates nothing.
	w := qs[0].GetWaiter()
	defer w.Release(qs[0])
	for _, q := range qs {
		w.Watch(q)
	}
	if timeout <= 0 {
		// The common case, a receive from one channel (Waiter.Sleep)
		// instead of a select: a round trip over a socket waits once on
		// each side.
		for {
			if ready() {
				return nil
			}
			if w.Sleep(b.Intr) {
				return linux.EINTR
			}
		}
	}
	ch := w.C()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	expired := timer.C
	for {
		if ready() {
			return nil
		}
		vfs.NoteWait(b.Intr)
		select {
		case <-ch:
		case <-b.Intr:
			return ErrIntrNoRestart
		case <-expired:
			if ready() {
				return nil
			}
			return linux.EAGAIN
		}
	}
}
