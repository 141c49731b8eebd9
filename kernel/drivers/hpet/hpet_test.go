package hpet

import (
	"errors"
	"testing"
)

// fakeRegs is a register file that records the offsets written, in order.
type fakeRegs struct {
	m      map[uint32]uint64
	writes []uint32
}

func (f *fakeRegs) Read(off uint32) uint64 { return f.m[off] }
func (f *fakeRegs) Write(off uint32, v uint64) {
	f.m[off] = v
	f.writes = append(f.writes, off)
}

// block returns an HPET with a 10 ns period (QEMU's) and timers whose
// configuration registers hold cfgs.
func block(cfgs ...uint64) *fakeRegs {
	f := &fakeRegs{m: map[uint32]uint64{regCap: 10_000_000<<32 | uint64(len(cfgs)-1)<<8, regConfig: cfgLegacy}}
	for i, c := range cfgs {
		f.m[regTimerCfg+0x20*uint32(i)] = c
	}
	return f
}

func TestPeriodicPicksHighFreePin(t *testing.T) {
	const pins = 1<<2 | 1<<8 | 1<<17 | 1<<23
	// Timer 0 cannot run periodically; timer 1 can, on pins 2, 8, 17, 23.
	f := block(uint64(pins)<<32, uint64(pins)<<32|tnPeriodicCap)
	tm, err := Periodic(f, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if tm.n != 1 || tm.Pin != 23 {
		t.Fatalf("timer %d pin %d, want timer 1 pin 23", tm.n, tm.Pin)
	}
	if tm.ticks != 100_000 { // 1 ms of 10 ns ticks
		t.Fatalf("ticks %d, want 100000", tm.ticks)
	}
}

func TestPeriodicSkipsISAPins(t *testing.T) {
	f := block(uint64(1<<0|1<<1|1<<4|1<<8)<<32 | tnPeriodicCap)
	if _, err := Periodic(f, 1000); !errors.Is(err, ErrNoTimer) {
		t.Fatalf("err %v, want ErrNoTimer", err)
	}
}

func TestPeriodicRejectsBadPeriodOrRate(t *testing.T) {
	f := block(uint64(1<<20)<<32 | tnPeriodicCap)
	if _, err := Periodic(f, 0); !errors.Is(err, ErrNoTimer) {
		t.Fatalf("hz 0: err %v", err)
	}
	f.m[regCap] = 0
	if _, err := Periodic(f, 1000); !errors.Is(err, ErrNoTimer) {
		t.Fatalf("period 0: err %v", err)
	}
}

func TestStartStop(t *testing.T) {
	f := block(uint64(1<<20)<<32|tnPeriodicCap, uint64(1<<20)<<32|tnPeriodicCap)
	f.m[regCounter] = 12345
	tm, err := Periodic(f, 100)
	if err != nil {
		t.Fatal(err)
	}
	tm.Start()
	if f.m[regConfig] != cfgEnable {
		t.Errorf("config %#x, want enabled without legacy routing", f.m[regConfig])
	}
	if f.m[regCounter] != 0 {
		t.Errorf("counter %d, want 0", f.m[regCounter])
	}
	cfg := f.m[regTimerCfg]
	if cfg>>tnRouteShift&0x1f != 20 || cfg&(tnPeriodic|tnIntEnable) != tnPeriodic|tnIntEnable {
		t.Errorf("timer config %#x, want periodic, enabled, pin 20", cfg)
	}
	cmp := 0
	for _, off := range f.writes {
		if off == regTimerCmp {
			cmp++
		}
	}
	if cmp != 2 || f.m[regTimerCmp] != 1_000_000 {
		t.Errorf("%d comparator writes of %d, want 2 of 1000000", cmp, f.m[regTimerCmp])
	}
	// The counter is enabled last, after the timer is set up.
	if last := f.writes[len(f.writes)-1]; last != regConfig {
		t.Errorf("last write to %#x, want the configuration", last)
	}
	tm.Stop()
	if f.m[regTimerCfg]&tnIntEnable != 0 {
		t.Errorf("timer config %#x after Stop, want its interrupt off", f.m[regTimerCfg])
	}
}
