package wallclock

import (
	"testing"
	"time"
)

func TestSet(t *testing.T) {
	defer offset.Store(0)
	want := time.Unix(2_000_000_000, 0)
	Set(want)
	if d := Now().Sub(want); d < 0 || d > time.Second {
		t.Fatalf("after Set: %v off", d)
	}
	// Intervals measured on the monotonic clock are not moved by a set.
	a := time.Now()
	Set(time.Unix(1_000_000_000, 0))
	if d := time.Since(a); d < 0 || d > time.Second {
		t.Errorf("monotonic interval across a set: %v", d)
	}
	if Now().Unix() > 1_000_000_010 {
		t.Errorf("wall time after the second set: %v", Now())
	}
}
