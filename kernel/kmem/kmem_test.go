package kmem

import "testing"

func TestProbe(t *testing.T) {
	if Low() || Refuse() {
		t.Fatal("low without a probe")
	}
	low := true
	SetProbe(func() bool { return low })
	if !Refuse() || Refused() != 1 {
		t.Fatalf("refuse with a low probe: refused %d", Refused())
	}
	low = false
	if Refuse() || Refused() != 1 {
		t.Fatalf("refused with memory back: %d", Refused())
	}
	SetProbe(nil)
	if Low() {
		t.Fatal("low after the probe was removed")
	}
}
