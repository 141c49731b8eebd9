package socket

import (
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// Wait blocks until ready reports true (nil), as vfs.WaitFor does, but
// watches every queue in qs (a sender waits for its own buffer and for
// room at the receiver) and gives up with EAGAIN after timeout
// (SO_RCVTIMEO, SO_SNDTIMEO; 0 waits forever). The queues must be
// notified whenever ready's answer may change; ready does its own
// locking.
func Wait(b Blocking, timeout time.Duration, ready func() bool, qs ...*vfs.Queue) error {
	if ready() {
		return nil
	}
	if b.NonBlock {
		return linux.EAGAIN
	}
	ch := make(chan struct{}, 1)
	for _, q := range qs {
		defer q.Watch(ch)()
	}
	var expired <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		expired = timer.C
	}
	for {
		if ready() {
			return nil
		}
		select {
		case <-ch:
		case <-b.Intr:
			return linux.EINTR
		case <-expired:
			if ready() {
				return nil
			}
			return linux.EAGAIN
		}
	}
}
