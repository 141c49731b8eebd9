package timer

import (
	"sync/atomic"
	"testing"
	"time"

	"shortbread/kernel/wallclock"
)

func TestOneShot(t *testing.T) {
	var got atomic.Uint64
	tm := New(func(n uint64) { got.Add(n) })
	tm.Set(10*time.Millisecond, 0)
	if left, _ := tm.Get(); left <= 0 || left > 10*time.Millisecond {
		t.Fatalf("left %v", left)
	}
	time.Sleep(50 * time.Millisecond)
	tm.Sync() // counts it even if the Go timer behind it is late
	if got.Load() != 1 {
		t.Fatalf("%d expirations, want 1", got.Load())
	}
	if left, _ := tm.Get(); left != 0 {
		t.Fatalf("a fired one-shot timer reports %v left", left)
	}
}

// A periodic timer counts every period, including those it was late for:
// once Sync has counted what is due, the count is the periods that
// passed by the clock, however late the Go timer behind it runs (a
// loaded host delays it by tens of milliseconds).
func TestPeriodicCounts(t *testing.T) {
	var got atomic.Uint64
	tm := New(func(n uint64) { got.Add(n) })
	start := time.Now()
	tm.Set(5*time.Millisecond, 5*time.Millisecond)
	time.Sleep(103 * time.Millisecond)
	tm.Sync()
	elapsed := time.Since(start)
	old, iv := tm.Set(0, 0)
	if old <= 0 || iv != 5*time.Millisecond {
		t.Errorf("old setting %v/%v", old, iv)
	}
	// Armed a moment after start, counted a moment before elapsed was
	// read: one period may fall between.
	want := uint64(elapsed / (5 * time.Millisecond))
	if n := got.Load(); n+1 < want || n > want {
		t.Errorf("%d expirations in %v of 5 ms periods, want %d (or one fewer)", n, elapsed, want)
	}
	n := got.Load()
	time.Sleep(20 * time.Millisecond)
	if got.Load() != n {
		t.Errorf("disarmed timer still fires")
	}
}

// Re-arming cancels the old expiry.
func TestRearm(t *testing.T) {
	var got atomic.Uint64
	tm := New(func(n uint64) { got.Add(n) })
	tm.Set(10*time.Millisecond, 0)
	tm.Set(time.Hour, 0)
	time.Sleep(30 * time.Millisecond)
	if got.Load() != 0 {
		t.Fatal("old expiry fired after re-arming")
	}
	tm.Stop()
}

// Closing a timerfd stops its timer: nothing keeps running for it.
func TestFDReleaseStops(t *testing.T) {
	f := NewFD(true, 1)
	fd, _ := FDOf(f)
	fd.Set(time.Hour, time.Hour)
	if left, _ := fd.Get(); left == 0 {
		t.Fatal("not armed")
	}
	f.DecRef()
	if left, _ := fd.Get(); left != 0 {
		t.Fatalf("timer still armed after the last close: %v left", left)
	}
}

// A timer set for a time of day follows the wall clock: moved past the
// time, it fires at once, counting the periods jumped over; the clock-set
// hook runs.
func TestWallFollowsClock(t *testing.T) {
	defer wallclock.Set(time.Now())
	var got atomic.Uint64
	var hooked atomic.Bool
	tm := New(func(n uint64) { got.Add(n) })
	tm.SetClockSetHook(func() { hooked.Store(true) })
	tm.SetWall(wallclock.Now().Add(time.Hour), time.Minute)
	time.Sleep(10 * time.Millisecond)
	if got.Load() != 0 {
		t.Fatal("fired early")
	}
	wallclock.Set(wallclock.Now().Add(time.Hour + 10*time.Minute + time.Second))
	waitUntil(t, func() bool { return got.Load() >= 11 })
	if n := got.Load(); n != 11 || !hooked.Load() {
		t.Errorf("%d expirations (want 11: the first and 10 jumped over), hook ran: %v", n, hooked.Load())
	}
	tm.Stop()
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 1000 && !cond(); i++ { // up to 5 s: a loaded host delays Go timers
		time.Sleep(5 * time.Millisecond)
	}
}

// Sync counts the periods that are due even when the Go timer behind
// them has not run yet (a reader of a late timer sees them all), and the
// late callback then counts nothing twice.
func TestSyncCountsDue(t *testing.T) {
	var got atomic.Uint64
	tm := New(func(n uint64) { got.Add(n) })
	tm.Set(time.Hour, 10*time.Millisecond)
	tm.mu.Lock()
	tm.deadline = time.Now().Add(-95 * time.Millisecond) // 10 periods due
	gen := tm.gen
	tm.mu.Unlock()
	tm.Sync()
	if n := got.Load(); n != 10 {
		t.Fatalf("Sync counted %d, want 10", n)
	}
	tm.expire(gen) // the late Go timer of the same setting
	if n := got.Load(); n != 10 {
		t.Fatalf("the late callback counted again: %d", n)
	}
	tm.Stop()
}
