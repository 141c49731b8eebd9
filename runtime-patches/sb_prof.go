//go:build shortbread

// Shortbread machine layer: the sampling profiler's interrupt source.
//
// Samples must also land in code that runs with interrupts off (every
// machine-layer trap handler), so the preferred source is an NMI: an HPET
// timer in periodic mode, routed through an I/O APIC pin whose redirection
// entry uses NMI delivery to the boot CPU (physical destination). The NMI
// stub in sb_amd64.s writes the record and, on the boot CPU, sends an NMI
// to every other online CPU by its APIC ID, so all CPUs are sampled at
// once, in xAPIC and x2APIC mode and at any CPU count. Without an HPET
// (or with a boot CPU the I/O APIC's 8-bit destination cannot name) the
// fallback samples from the local APIC timer interrupt, which cannot see
// code running with interrupts off; the kernel reports which source it
// got. References: IA-PC HPET specification 1.0a §2.3; I/O APIC (82093AA)
// data sheet §3.2.4.

package runtime

import (
	"internal/runtime/atomic"
	"unsafe"
)

const (
	sbProfNone  = 0
	sbProfHPET  = 1 // NMI from an HPET timer through the I/O APIC
	sbProfTimer = 2 // local APIC timer interrupt (misses interrupts-off code)

	hpetCap      = 0x000
	hpetConfig   = 0x010
	hpetCounter  = 0x0F0
	hpetTimerCfg = 0x100 // + 0x20*n
	hpetTimerCmp = 0x108 // + 0x20*n
)

// sbProfBuffer is what the kernel passes for each CPU.
type sbProfBuffer struct {
	addr uint64 // pre-touched memory for cap 16-byte records
	cap  uint64
}

var (
	sbProfSource int
	sbProfPeriod int64 // ns between samples
	sbProfHPETVA uintptr
	sbProfTimerN int
	sbProfPin    int
	sbProfFanout bool // the boot CPU's NMI stub passes NMIs on
)

func sbHPETRead(off uintptr) uint64 {
	return atomic.Load64((*uint64)(unsafe.Pointer(sbProfHPETVA + off)))
}

func sbHPETWrite(off uintptr, v uint64) {
	atomic.Store64((*uint64)(unsafe.Pointer(sbProfHPETVA+off)), v)
}

// sbProfStart installs per-CPU buffers and starts sampling at hz. It
// returns the source used or a negative errno.
func sbProfStart(bufs uintptr, n int, hz int64, hpetPhys uintptr) int64 {
	if hz <= 0 || hz > 100000 || n <= 0 {
		return -sbEINVAL
	}
	size := uintptr(n) * unsafe.Sizeof(sbProfBuffer{})
	if !sbAS.touch(bufs, size, false) {
		return -sbEFAULT
	}
	sbProfStop()
	for i := 0; i < n && i < int(sbNCPU); i++ {
		b := (*sbProfBuffer)(unsafe.Pointer(bufs + uintptr(i)*unsafe.Sizeof(sbProfBuffer{})))
		if !sbAS.touch(uintptr(b.addr), uintptr(b.cap)*16, true) {
			return -sbEFAULT
		}
		c := &sbCPUs[i]
		c.profN, c.profDropped = 0, 0
		c.profCap = b.cap
		atomic.Storeuintptr(&c.profBuf, uintptr(b.addr))
	}
	sbProfPeriod = 1_000_000_000 / hz
	if hpetPhys != 0 && sbBootCPU < 0xFF && sbProfStartHPET(hpetPhys, hz) {
		sbProfSource = sbProfHPET
		return sbProfHPET
	}
	now := sbNanotime()
	for i := int32(0); i < sbNCPU; i++ {
		sbCPUs[i].profNext = now + sbProfPeriod
	}
	sbProfSource = sbProfTimer
	return sbProfTimer
}

// sbProfStartHPET programs a periodic HPET timer whose interrupt reaches
// every CPU as an NMI. It reports false if no timer can do it.
func sbProfStartHPET(phys uintptr, hz int64) bool {
	sbProfHPETVA = sbPhys(phys)
	caps := sbHPETRead(hpetCap)
	periodFs := caps >> 32
	ntimers := int(caps>>8&0x1f) + 1
	if periodFs == 0 || periodFs > 100_000_000 {
		return false
	}
	for t := 0; t < ntimers; t++ {
		cfg := sbHPETRead(hpetTimerCfg + uintptr(t)*0x20)
		if cfg&(1<<4) == 0 { // no periodic mode
			continue
		}
		routes := uint32(cfg >> 32)
		pin := -1
		for p := 23; p >= 0; p-- { // prefer high (PCI) pins, free of ISA devices
			if routes&(1<<p) != 0 && p != 0 && p != 1 && p != 4 && p != 8 {
				pin = p
				break
			}
		}
		if pin < 0 {
			continue
		}
		ticks := uint64(1_000_000_000_000_000/hz) / periodFs
		sbProfFanout = true
		sbIOAPICRoute(pin, 4<<8|2)                         // NMI, physical, edge
		sbHPETWrite(hpetConfig, sbHPETRead(hpetConfig)&^3) // halt, no legacy routing
		sbHPETWrite(hpetCounter, 0)
		// Periodic, enabled, edge, routed to pin; VAL_SET lets the next
		// comparator write set the period.
		sbHPETWrite(hpetTimerCfg+uintptr(t)*0x20, uint64(pin)<<9|1<<6|1<<3|1<<2)
		sbHPETWrite(hpetTimerCmp+uintptr(t)*0x20, ticks)
		sbHPETWrite(hpetTimerCmp+uintptr(t)*0x20, ticks)
		sbHPETWrite(hpetConfig, sbHPETRead(hpetConfig)|1)
		sbProfTimerN, sbProfPin = t, pin
		return true
	}
	return false
}

// sbProfStop stops sampling; the buffers keep what was recorded.
func sbProfStop() {
	if sbProfSource == sbProfHPET {
		t := uintptr(sbProfTimerN) * 0x20
		sbHPETWrite(hpetTimerCfg+t, sbHPETRead(hpetTimerCfg+t)&^(1<<2))
		sbIOAPICRoute(sbProfPin, 1<<16)
		sbProfFanout = false
	}
	sbProfSource = sbProfNone
	for i := range sbCPUs {
		atomic.Storeuintptr(&sbCPUs[i].profBuf, 0)
	}
}

// sbProfTick takes a timer-source sample of the interrupted frame when one
// is due; it returns the time of the next sample (0 if not sampling).
func sbProfTick(c *sbCPU, f *sbFrame) int64 {
	if sbProfSource != sbProfTimer || c.profBuf == 0 {
		return 0
	}
	now := sbNanotime()
	if now < c.profNext {
		return c.profNext
	}
	for c.profNext <= now {
		c.profNext += sbProfPeriod
	}
	if c.profN >= c.profCap {
		c.profDropped++
		return c.profNext
	}
	rec := c.profBuf + uintptr(c.profN)*16
	flags := uint64(0)
	if sbThreads[c.cur].isIdle {
		flags |= 1
	}
	if f.cs&3 != 0 {
		flags |= 4
	}
	sbStore64(rec, f.rip)
	sbStore64(rec+8, uint64(c.id)|flags<<16|(sbRdtsc()&0xffffffff)<<32)
	c.profN++
	return c.profNext
}
