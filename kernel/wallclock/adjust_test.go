package wallclock

import (
	"testing"
	"time"
)

// TestAdjustment checks the slew's rate and end and the frequency
// correction.
func TestAdjustment(t *testing.T) {
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
		add := time.Duration(adjustment(int64(c.el), int64(c.slew), c.freq))
		left := time.Duration(slewLeft(int64(c.el), int64(c.slew)))
		if d := add - c.add; d < -time.Microsecond || d > time.Microsecond || left != c.leftNow {
			t.Errorf("slew %v freq %d after %v: add %v left %v, want %v and %v", c.slew, c.freq, c.el, add, left, c.add, c.leftNow)
		}
	}
}

// TestNeverBackwards walks the adjusted clock nanosecond by nanosecond
// around the slew's end and across changes of the parameters: the
// reading never decreases.
func TestNeverBackwards(t *testing.T) {
	for _, c := range []struct{ slew, freq int64 }{
		{1000, 0}, {-1000, 0}, {1000, -MaxFreq}, {-1000, -MaxFreq}, {-1000, MaxFreq},
		{7, -(MaxFreq + 1000<<16*100)}, {0, -(1000 << 16 * 100)}, // a 9,000 µs tick: -10%
	} {
		prev := int64(-1)
		for el := int64(0); el < 2_100_000+5000; el++ {
			v := el + adjustment(el, c.slew, c.freq)
			if v < prev {
				t.Fatalf("slew %d freq %d: %d at %d after %d", c.slew, c.freq, v, el, prev)
			}
			prev = v
		}
		if c.slew != 0 && slewLeft(2_000_000, c.slew) != 0 {
			t.Errorf("slew %d left %d after its time", c.slew, slewLeft(2_000_000, c.slew))
		}
	}
	// Huge slews and long times do not overflow.
	if a := adjustment(1<<62, 1<<62, MaxFreq); a <= 0 {
		t.Errorf("huge slew: %d", a)
	}
}

// TestUpdateContinues: a change of the parameters leaves the clock where
// the old ones had it at that moment.
func TestUpdateContinues(t *testing.T) {
	defer SetFreq(0)
	defer Slew(0)
	Slew(time.Second)
	SetFreq(MaxFreq / 3)
	for range 100 {
		var before, after int64
		update(func(mono, real int64, p *params) {
			before = real
			p.slew, p.freq = -p.slew/2, -p.freq
			after = realtime(mono, p)
		})
		if before != after {
			t.Fatalf("update moved the clock from %d to %d", before, after)
		}
	}
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
	SetFreq(MaxFreq)
	if Freq() != MaxFreq {
		t.Errorf("frequency %d", Freq())
	}
	SetFreq(0)
}
