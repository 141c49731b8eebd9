//go:build shortbread

// Shortbread machine layer: clocks (the TSC, calibrated once against PIT
// channel 2, the one timer every PC and QEMU has) and the local APIC.

package runtime

import (
	"internal/runtime/atomic"
	"internal/runtime/math"
	"unsafe"
)

const (
	lapicID       = 0x020
	lapicEOI      = 0x0B0
	lapicSVR      = 0x0F0
	lapicICRLow   = 0x300
	lapicICRHigh  = 0x310
	lapicLVTTmr   = 0x320
	lapicLVTLint0 = 0x350
	lapicLVTLint1 = 0x360
	lapicLVTErr   = 0x370
	lapicInitCnt  = 0x380
	lapicCurCnt   = 0x390
	lapicDivide   = 0x3E0

	msrAPICBase     = 0x1B
	msrX2APIC       = 0x800 // + xAPIC offset >> 4 (Intel SDM vol. 3 §11.12.1.2)
	msrTSCDeadline  = 0x6E0
	sbTimeSlice     = 10_000_000 // ns a thread runs before others get the CPU
	sbPITHz         = 1193182
	sbCalibrateTick = 11932 // PIT ticks in ~10 ms
)

var (
	sbTSCHz        uint64
	sbTSCMult      uint64 // ns = (tsc-sbTSC0) * sbTSCMult >> 32
	sbTSC0         uint64
	sbBootUnixNano int64
	sbLAPIC        uintptr // direct-map address of the local APIC registers
	sbX2APIC       bool    // registers are MSRs (x2APIC mode), not MMIO
	sbTSCDeadline  bool
	sbAPICPerNs32  uint64 // APIC timer ticks per ns, << 32
	sbTSCPerNs32   uint64 // TSC ticks per ns, << 32
)

func sbLAPICRead(reg uintptr) uint32 {
	if sbX2APIC {
		return uint32(sbRdmsr(msrX2APIC + uint32(reg>>4)))
	}
	return atomic.Load((*uint32)(unsafe.Pointer(sbLAPIC + reg)))
}

func sbLAPICWrite(reg uintptr, v uint32) {
	if sbX2APIC {
		sbWrmsr(msrX2APIC+uint32(reg>>4), uint64(v))
		return
	}
	atomic.Store((*uint32)(unsafe.Pointer(sbLAPIC+reg)), v)
}

// sbLAPICMode picks x2APIC mode when the CPU has it (CPUID.1:ECX[21];
// firmware may have turned it on already, and then MMIO no longer
// works) and returns the boot CPU's APIC ID, 32 bits in x2APIC mode.
func sbLAPICMode() uint32 {
	_, _, c, _ := sbCpuid(1, 0)
	sbX2APIC = c&(1<<21) != 0
	sbLAPIC = sbPhys(uintptr(sbRdmsr(msrAPICBase) &^ 0xfff))
	sbInitLAPIC(true)
	if sbX2APIC {
		return sbLAPICRead(lapicID)
	}
	return sbLAPICRead(lapicID) >> 24
}

// sbSendICR sends an interprocessor interrupt to APIC ID dest; low is
// the ICR's low word. In x2APIC mode that is one MSR write, which is not
// serializing, so sbX2APICICR fences it behind earlier stores (SDM vol. 3
// §11.12.3); there is no delivery status to wait for.
func sbSendICR(dest, low uint32) {
	if sbX2APIC {
		sbX2APICICR(uint64(dest)<<32 | uint64(low))
		return
	}
	for sbLAPICRead(lapicICRLow)&(1<<12) != 0 { // previous IPI still pending
		sbPause()
	}
	sbLAPICWrite(lapicICRHigh, dest<<24)
	sbLAPICWrite(lapicICRLow, low)
}

func sbX2APICICR(v uint64)

// sbNanotime is monotonic nanoseconds since boot.
func sbNanotime() int64 {
	hi, lo := math.Mul64(sbRdtsc()-sbTSC0, sbTSCMult)
	return int64(hi<<32 | lo>>32)
}

// sbCalibrateTSC measures the TSC against PIT channel 2. The host may
// stop this CPU for tens of ms at any moment (a loaded host preempts
// QEMU's vCPU threads: a guest's clock once ran 16% fast), so a window
// ends not at "counter set" and "counter expired", which a stall at
// either widens, but at two readings of the counter each between TSC
// reads close together. The median of three windows is kept.
func sbCalibrateTSC() {
	sbTSC0 = sbRdtsc()
	var hz [3]uint64
	for i := 0; i < 3; {
		if hz[i] = sbPITWindow(); hz[i] != 0 {
			i++
		}
	}
	hz[0], hz[1] = min(hz[0], hz[1]), max(hz[0], hz[1])
	if sbTSCHz = max(hz[0], min(hz[1], hz[2])); sbTSCHz < 1_000_000 {
		sbFatal("TSC calibration failed")
	}
	sbTSCMult = (1_000_000_000 << 32) / sbTSCHz
	sbTSCPerNs32 = sbTSCHz/1_000_000_000<<32 + (sbTSCHz%1_000_000_000<<32)/1_000_000_000
}

// sbPITWindow returns the TSC rate over ~10 ms of PIT channel 2 counting
// down from 0xffff (mode 0), or 0 if the count passed zero (a stall of
// over 45 ms). A reading wider than twice the narrowest of the first
// eight was stalled and is skipped. A missing PIT is fatal.
func sbPITWindow() uint64 {
	sbOutb(0x61, (sbInb(0x61)&^0x02)|0x01) // gate on, speaker off
	sbOutb(0x43, 0xB0)                     // channel 2, lobyte/hibyte, mode 0
	sbOutb(0x42, 0xff)
	sbOutb(0x42, 0xff)
	tsc0, tight, pit0 := uint64(0), ^uint64(0), uint32(0)
	for i := 0; i < 1<<24; i++ {
		t0 := sbRdtsc()
		sbOutb(0x43, 0x80) // latch channel 2's count
		lo, hi := sbInb(0x42), sbInb(0x42)
		t1 := sbRdtsc()
		t, c, w := t0+(t1-t0)/2, uint32(hi)<<8|uint32(lo), t1-t0
		switch {
		case sbInb(0x61)&0x20 != 0:
			return 0 // c may have wrapped
		case i < 8:
			tight = min(tight, 2*w)
		case w > tight:
		case tsc0 == 0:
			tsc0, pit0 = t, c
		case pit0-c >= sbCalibrateTick:
			return (t - tsc0) * sbPITHz / uint64(pit0-c)
		}
	}
	sbFatal("TSC calibration: PIT channel 2 does not count (no PIT?)")
	return 0
}

// sbInitLAPIC enables this CPU's local APIC and calibrates its timer
// against the TSC (once, on the boot CPU).
func sbInitLAPIC(calibrate bool) {
	if b := sbRdmsr(msrAPICBase); sbX2APIC && b&(1<<10) == 0 {
		// Enabled (bit 11), then x2APIC mode (bit 10): going there
		// straight from disabled is an invalid transition (§11.12.5).
		sbWrmsr(msrAPICBase, b|1<<11)
		sbWrmsr(msrAPICBase, b|1<<11|1<<10)
	}
	sbLAPICWrite(lapicSVR, 0x100|sbVecSpurious) // enable
	sbLAPICWrite(lapicLVTLint0, 1<<16)          // masked
	sbLAPICWrite(lapicLVTLint1, 1<<16)
	sbLAPICWrite(lapicLVTErr, 1<<16)
	_, _, c, _ := sbCpuid(1, 0)
	sbTSCDeadline = c&(1<<24) != 0
	if sbTSCDeadline {
		sbLAPICWrite(lapicLVTTmr, 2<<17|sbVecTimer)
		return
	}
	sbLAPICWrite(lapicDivide, 0x3) // divide by 16
	if calibrate {
		sbLAPICWrite(lapicLVTTmr, 1<<16) // masked while measuring
		sbLAPICWrite(lapicInitCnt, 0xffffffff)
		t0, c0 := sbAPICCount()
		for sbNanotime()-t0 < 10_000_000 {
		}
		t1, c1 := sbAPICCount()
		sbAPICPerNs32 = (uint64(c0-c1) << 32) / uint64(t1-t0)
	}
	sbLAPICWrite(lapicLVTTmr, sbVecTimer) // one-shot
}

// sbAPICCount reads the APIC timer's count and when, between clock reads
// at most 20 µs apart: a loaded host that stopped the vCPU between a
// one-sided pair stretched the window, and every timer was late by it.
func sbAPICCount() (int64, uint32) {
	for {
		a := sbNanotime()
		c := sbLAPICRead(lapicCurCnt)
		if b := sbNanotime(); b-a <= 20_000 {
			return a + (b-a)/2, c
		}
	}
}

// sbArmTimer asks for a timer interrupt at deadline (ns since boot).
func sbArmTimer(deadline int64) {
	delta := uint64(max(deadline-sbNanotime(), 1000))
	if sbTSCDeadline {
		hi, lo := math.Mul64(delta, sbTSCPerNs32) // delta*sbTSCHz/1e9 overflowed past ~6 s
		sbWrmsr(msrTSCDeadline, sbRdtsc()+(hi<<32|lo>>32))
		return
	}
	hi, lo := math.Mul64(delta, sbAPICPerNs32)
	sbLAPICWrite(lapicInitCnt, uint32(min(max(hi<<32|lo>>32, 1), 0xffffffff)))
}

func sbEOI() { sbLAPICWrite(lapicEOI, 0) }

// sbVdsoClockGettime is the runtime's vDSO clock_gettime (sb_amd64.s).
func sbVdsoClockGettime()
