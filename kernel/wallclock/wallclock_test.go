package wallclock

import (
	"testing"
	"time"
)

func TestSet(t *testing.T) {
	defer Set(time.Now())
	want := time.Unix(2_000_000_000, 0)
	Set(want)
	if d := Now().Sub(want); d < 0 || d > time.Second {
		t.Fatalf("after Set: %v off", d)
	}
	// Intervals measured on the monotonic clock are not moved by a set.
	a := time.Now()
	m := Monotonic()
	Set(time.Unix(1_000_000_000, 0))
	if d := time.Since(a); d < 0 || d > time.Second {
		t.Errorf("monotonic interval across a set: %v", d)
	}
	if d := Monotonic() - m; d < 0 || d > int64(time.Second) {
		t.Errorf("CLOCK_MONOTONIC moved %d ns across a set", d)
	}
	if Now().Unix() > 1_000_000_010 {
		t.Errorf("wall time after the second set: %v", Now())
	}
}

// TestInit: moving the state into another record keeps the wall clock
// going and starts CLOCK_MONOTONIC at zero.
func TestInit(t *testing.T) {
	old, oldCounter := data.Load(), counter
	defer func() { data.Store(old); counter = oldCounter }()
	before := Realtime()
	var ticks uint64 = 1 << 40
	d := new(Data)
	Init(d, func() uint64 { ticks += 3; return ticks }, 3e9, true) // 1 ns a read
	if m := Monotonic(); m < 0 || m > 10 {
		t.Errorf("monotonic after Init: %d", m)
	}
	if r := Realtime(); r < before || r > before+int64(time.Second) {
		t.Errorf("realtime %d after Init, %d before", r, before)
	}
	if d.Mode.Load() != ModeCounter || d.Hz.Load() != 3e9 {
		t.Errorf("mode %d hz %d", d.Mode.Load(), d.Hz.Load())
	}
}

// TestCoarse: the coarse clocks read the fine ones at the last multiple
// of the tick, so they step by whole ticks, never pass the fine clocks
// and never lag them by a tick or more, with a slew and a frequency
// correction running too.
func TestCoarse(t *testing.T) {
	old, oldCounter := data.Load(), counter
	defer func() { data.Store(old); counter = oldCounter }()
	var ticks uint64 = 1 << 40
	Init(new(Data), func() uint64 { ticks += 333_333; return ticks }, 1e9, true) // 333 µs a read
	defer SetFreq(0)
	defer Slew(0)
	Slew(time.Second)
	SetFreq(MaxFreq / 2)
	prevM, prevR := int64(-1), int64(0)
	for range 1000 {
		m0, mc, m1 := Monotonic(), MonotonicCoarse(), Monotonic()
		r0, rc, r1 := Realtime(), RealtimeCoarse(), Realtime()
		if mc%CoarseTick != 0 || mc > m1 || mc <= m0-CoarseTick || mc < prevM {
			t.Fatalf("monotonic %d, coarse %d, %d; last coarse %d", m0, mc, m1, prevM)
		}
		if rc > r1 || rc <= r0-2*CoarseTick || rc < prevR {
			t.Fatalf("realtime %d, coarse %d, %d; last coarse %d", r0, rc, r1, prevR)
		}
		prevM, prevR = mc, rc
	}
}
