package vfs

import (
	"sync/atomic"
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
	x := NewInterrupter(c, nil)
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

// TestSleepCountsWaits: a Sleep that blocks tells the Interrupter's
// owner once (a voluntary context switch); one that finds its
// notification already there, or is interrupted before it sleeps,
// tells nothing. NoteWait tells the owner of a registered channel only.
func TestSleepCountsWaits(t *testing.T) {
	var q Queue
	c := make(chan struct{}, 1)
	var waits atomic.Int64
	x := NewInterrupter(c, func() { waits.Add(1) })
	x.Register()
	defer x.Unregister()
	w := q.GetWaiter()
	defer w.Release(&q)
	w.Watch(&q)

	q.Notify() // before the Sleep: it does not block
	if answer(t, sleepResult(w, c)) || waits.Load() != 0 {
		t.Fatalf("a Sleep that found its notification counted %d waits", waits.Load())
	}
	interrupt(c, x)
	if !answer(t, sleepResult(w, c)) || waits.Load() != 0 {
		t.Fatalf("an interrupted Sleep counted %d waits", waits.Load())
	}
	r := sleepResult(w, c)
	for waits.Load() == 0 {
		time.Sleep(time.Millisecond) // until the Sleep blocks
	}
	q.Notify()
	if answer(t, r) || waits.Load() != 1 {
		t.Fatalf("a Sleep that blocked counted %d waits, want 1", waits.Load())
	}

	NoteWait(c)
	NoteWait(nil)
	NoteWait(make(chan struct{}))
	if waits.Load() != 2 {
		t.Fatalf("NoteWait: %d waits, want 2", waits.Load())
	}
}
