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

func TestReserve(t *testing.T) {
	for _, c := range []struct{ mib, want uint64 }{{64, 8}, {512, 32}, {1024, 64}, {8192, 256}} {
		if got := Reserve(c.mib << 8); got != c.want<<8 {
			t.Errorf("Reserve(%d MiB) = %d frames, want %d MiB", c.mib, got, c.want)
		}
	}
}
