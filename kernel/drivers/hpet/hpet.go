// Package hpet programs a periodic timer of the High Precision Event
// Timer block (IA-PC HPET specification 1.0a, §2.3) as the sampling
// profiler's interrupt source. The kernel picks the timer and its I/O
// APIC pin and programs the timer here; the machine layer only routes
// that pin as an NMI to the boot CPU (runtime-patches/sb_prof.go), so
// samples land even where interrupts are off.
package hpet

import (
	"errors"
	"fmt"

	"shortbread/kernel/arch"
)

// Regs reaches the block's 64-bit registers by offset.
type Regs interface {
	Read(off uint32) uint64
	Write(off uint32, v uint64)
}

// MMIO is Regs at a kernel virtual address (the direct map's uncached
// mapping of the block).
type MMIO uintptr

func (m MMIO) Read(off uint32) uint64     { return arch.Read64(uintptr(m) + uintptr(off)) }
func (m MMIO) Write(off uint32, v uint64) { arch.Write64(uintptr(m)+uintptr(off), v) }

const (
	regCap      = 0x000 // bits 63:32 period in fs, 12:8 number of timers - 1
	regConfig   = 0x010 // bit 0 enable, bit 1 legacy replacement routing
	regCounter  = 0x0F0
	regTimerCfg = 0x100 // + 0x20*n: bits 63:32 routable I/O APIC pins
	regTimerCmp = 0x108 // + 0x20*n

	cfgEnable = 1 << 0
	cfgLegacy = 1 << 1

	tnIntEnable   = 1 << 2
	tnPeriodic    = 1 << 3
	tnPeriodicCap = 1 << 4
	tnValSet      = 1 << 6 // the next comparator write sets the period too
	tnRouteShift  = 9
)

// ErrNoTimer means no timer can fire periodically on a free pin.
var ErrNoTimer = errors.New("hpet: no periodic timer with a free I/O APIC pin")

// Timer is one of the block's timers, chosen to fire periodically on an
// I/O APIC pin.
type Timer struct {
	r     Regs
	n     uint32
	Pin   int    // the I/O APIC pin the timer interrupts on
	ticks uint64 // counter ticks per period
}

// Periodic finds a timer that can fire hz times a second on an I/O APIC
// pin no ISA device uses (not 0-1, 4 or 8: the PIT or cascade, keyboard,
// COM1, RTC), preferring the highest (PCI) pins.
func Periodic(r Regs, hz int) (*Timer, error) {
	caps := r.Read(regCap)
	periodFs := caps >> 32
	if hz <= 0 || periodFs == 0 || periodFs > 100_000_000 { // the spec's maximum: 100 ns
		return nil, fmt.Errorf("hpet: period %d fs, %d Hz: %w", periodFs, hz, ErrNoTimer)
	}
	for t := uint32(0); t <= uint32(caps>>8&0x1f); t++ {
		cfg := r.Read(regTimerCfg + 0x20*t)
		if cfg&tnPeriodicCap == 0 {
			continue
		}
		routes := uint32(cfg >> 32)
		for p := 23; p >= 2; p-- {
			if routes&(1<<p) != 0 && p != 4 && p != 8 {
				return &Timer{r: r, n: t, Pin: p, ticks: 1_000_000_000_000_000 / uint64(hz) / periodFs}, nil
			}
		}
	}
	return nil, ErrNoTimer
}

// Start restarts the block's counter from 0 (with legacy routing off)
// and the timer firing every period, edge-triggered on its pin.
func (t *Timer) Start() {
	t.r.Write(regConfig, t.r.Read(regConfig)&^(cfgEnable|cfgLegacy))
	t.r.Write(regCounter, 0)
	t.r.Write(regTimerCfg+0x20*t.n, uint64(t.Pin)<<tnRouteShift|tnValSet|tnPeriodic|tnIntEnable)
	// With VAL_SET the first write sets the comparator (the first
	// interrupt, one period after 0) and on most chips the period; the
	// second, VAL_SET cleared by the first, sets the period on the rest.
	t.r.Write(regTimerCmp+0x20*t.n, t.ticks)
	t.r.Write(regTimerCmp+0x20*t.n, t.ticks)
	t.r.Write(regConfig, t.r.Read(regConfig)|cfgEnable)
}

// Stop turns the timer's interrupt off.
func (t *Timer) Stop() {
	t.r.Write(regTimerCfg+0x20*t.n, t.r.Read(regTimerCfg+0x20*t.n)&^tnIntEnable)
}
