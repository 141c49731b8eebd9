package blk

import (
	"testing"
	"time"
)

// A Watch fires at the earliest deadline it was told of, not the first:
// a request started with a shorter timeout moves it earlier, a later one
// leaves it alone.
func TestWatchEarliestDeadline(t *testing.T) {
	fired := make(chan time.Time, 4)
	w := NewWatch(func() { fired <- time.Now() })
	now := time.Now()
	w.Start(now, time.Hour)
	if !w.on || !w.at.Equal(now.Add(time.Hour)) {
		t.Fatalf("after Start: on %v at %v", w.on, w.at)
	}
	w.Start(now, 2*time.Hour)
	if !w.at.Equal(now.Add(time.Hour)) {
		t.Fatalf("a later deadline moved the watch to %v", w.at)
	}
	w.Start(time.Now(), 10*time.Millisecond)
	select {
	case <-fired:
	case <-time.After(time.Minute):
		t.Fatal("the shorter deadline never fired")
	}
}

// Next with nothing left stops the Watch: it fires no more, and the next
// Start sets it again.
func TestWatchNextStops(t *testing.T) {
	fired := make(chan struct{}, 4)
	w := NewWatch(func() { fired <- struct{}{} })
	w.Start(time.Now(), time.Hour)
	w.Next(time.Now(), 0)
	if w.on {
		t.Fatal("Next(0) left the watch on")
	}
	w.Next(time.Now(), 5*time.Millisecond)
	if !w.on {
		t.Fatal("Next with time left did not set the watch")
	}
	select {
	case <-fired:
	case <-time.After(time.Minute):
		t.Fatal("Next's deadline never fired")
	}
	w.Next(time.Now(), -time.Second)
	w.Start(time.Now(), time.Hour)
	if !w.on || time.Until(w.at) < 59*time.Minute {
		t.Fatalf("Start after a stop: on %v at %v", w.on, w.at)
	}
	w.Next(time.Now(), 0)
}
