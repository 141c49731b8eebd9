package wallclock

import (
	"testing"
	"time"
)

// TestAdjustment checks the slew's rate and end and the frequency
// correction against a fixed clock.
func TestAdjustment(t *testing.T) {
	t0 := time.Now()
	for _, c := range []struct {
		slew    time.Duration
		freq    int64
		el      time.Duration
		add     time.Duration
		leftNow time.Duration
	}{
		{10 * time.Millisecond, 0, time.Second, 500 * time.Microsecond, 9500 * time.Microsecond},
		{10 * time.Millisecond, 0, 100 * time.Second, 10 * time.Millisecond, 0},
		{-3 * time.Millisecond, 0, 2 * time.Second, -time.Millisecond, -2 * time.Millisecond},
		{0, 100 << 16, 10 * time.Second, time.Millisecond, 0}, // 100 ppm for 10 s
		{time.Millisecond, -(50 << 16), 4 * time.Second, 2*time.Millisecond/2 - 200*time.Microsecond, 0},
	} {
		adjMu.Lock()
		slewLeft, freq, adjAt = c.slew, c.freq, t0
		add, left := adjustment(t0.Add(c.el))
		adjMu.Unlock()
		if d := add - c.add; d < -time.Microsecond || d > time.Microsecond || left != c.leftNow {
			t.Errorf("slew %v freq %d after %v: add %v left %v, want %v and %v", c.slew, c.freq, c.el, add, left, c.add, c.leftNow)
		}
	}
	adjMu.Lock()
	slewLeft, freq = 0, 0
	adjusting.Store(false)
	adjMu.Unlock()
}

// TestSlewAndStep slews and steps the clock it reads.
func TestSlewAndStep(t *testing.T) {
	before := Now()
	Step(time.Hour)
	if d := Now().Sub(before); d < time.Hour || d > time.Hour+time.Minute {
		t.Errorf("a step of an hour moved the clock %v", d)
	}
	Step(-time.Hour)
	if old := Slew(time.Second); old != 0 {
		t.Errorf("first slew: %v left of none", old)
	}
	if left := SlewLeft(); left <= 0 || left > time.Second {
		t.Errorf("slew left %v of 1 s", left)
	}
	if old := Slew(0); old <= 0 || old > time.Second {
		t.Errorf("cancelled slew had %v left", old)
	}
	if adjusting.Load() {
		t.Error("still adjusting with no slew and no frequency")
	}
	SetFreq(MaxFreq)
	if Freq() != MaxFreq || !adjusting.Load() {
		t.Errorf("frequency %d, adjusting %v", Freq(), adjusting.Load())
	}
	SetFreq(0)
}
