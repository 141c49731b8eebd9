package vfs

import (
	"testing"
	"time"
)

// sleepResult runs w.Sleep(intr) on a goroutine of its own and returns
// the channel its answer arrives on.
func sleepResult(w *Waiter, intr <-chan struct{}) <-chan bool {
	r := make(chan bool, 1)
	go func() { r <- w.Sleep(intr) }()
	return r
}

// answer waits for a Sleep's answer; a minute without one fails (the
// host may be loaded, so the wait is long; a correct Sleep answers at
// once).
func answer(t *testing.T, r <-chan bool) bool {
	t.Helper()
	select {
	case v := <-r:
		return v
	case <-time.After(time.Minute):
		t.Fatal("Sleep did not return")
		return false
	}
}

// interrupt does what kernel/proc's Thread.wake does.
func interrupt(c chan struct{}, x *Interrupter) {
	select {
	case c <- struct{}{}:
	default:
	}
	x.Interrupted()
}

func TestSleepInterrupter(t *testing.T) {
	var q Queue
	c := make(chan struct{}, 1)
	x := NewInterrupter(c)
	x.Register()
	defer x.Unregister()
	w := q.GetWaiter()
	defer w.Release(&q)
	w.Watch(&q)

	// A notification: not interrupted.
	r := sleepResult(w, c)
	q.Notify()
	if answer(t, r) {
		t.Fatal("a notification was taken for an interrupt")
	}

	// An interrupt while asleep wakes the waiter's channel: the Sleep
	// returns, and the caller's next Sleep (after looking at its
	// condition) reports the interrupt, unless the first found it
	// already (sent between publishing and looking). Without
	// Interrupted, the first Sleep would sleep on.
	r = sleepResult(w, c)
	for x.wait.Load() == nil {
		time.Sleep(time.Millisecond) // until the Sleep has published its channel
	}
	interrupt(c, x)
	if !answer(t, r) && !answer(t, sleepResult(w, c)) {
		t.Fatal("an interrupt during Sleep was not reported")
	}

	// An interrupt already sent is reported at once.
	interrupt(c, x)
	if !answer(t, sleepResult(w, c)) {
		t.Fatal("a pending interrupt was not reported")
	}
	if x.wait.Load() != nil {
		t.Fatal("Sleep left its channel published")
	}
}

// TestSleepUnregistered: a channel with no registered Interrupter (or
// none at all) still interrupts, by the select Sleep falls back on.
func TestSleepUnregistered(t *testing.T) {
	var q Queue
	w := q.GetWaiter()
	defer w.Release(&q)
	w.Watch(&q)
	c := make(chan struct{}, 1)
	c <- struct{}{}
	if !answer(t, sleepResult(w, c)) {
		t.Fatal("an unregistered interrupt channel was not looked at")
	}
	r := sleepResult(w, nil)
	q.Notify()
	if answer(t, r) {
		t.Fatal("a nil channel interrupted")
	}
}
