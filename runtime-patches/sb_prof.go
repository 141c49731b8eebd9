//go:build shortbread

// Shortbread machine layer: the sampling profiler's interrupt source.
//
// The HPET's periodic timer (kernel/drivers/hpet) on an I/O APIC pin set
// to NMI delivery to the boot CPU (82093AA §3.2.4), whose NMI stub passes
// it on to the others, samples interrupts-off code too; the fallback,
// the local APIC timer, cannot.

package runtime

import (
	"internal/runtime/atomic"
	"unsafe"
)

const (
	sbProfNone  = 0
	sbProfHPET  = 1 // NMI from the kernel's periodic timer through the I/O APIC
	sbProfTimer = 2 // local APIC timer interrupt (misses interrupts-off code)
)

// sbProfBuffer is what the kernel passes for each CPU.
type sbProfBuffer struct {
	addr uint64 // pre-touched memory for cap 16-byte records
	cap  uint64
}

var (
	sbProfSource int
	sbProfPeriod int64 // ns between samples
	sbProfPin    int
	sbProfFanout bool // the boot CPU's NMI stub passes NMIs on
)

// sbProfStart installs per-CPU buffers and starts sampling at hz: from
// the interrupt on I/O APIC pin nmiPin (the kernel's periodic timer),
// made an NMI to the boot CPU, or from the timer interrupt when there is
// none (nmiPin < 0) or the I/O APIC's 8-bit destination cannot name the
// boot CPU. It returns the source used or a negative errno.
func sbProfStart(bufs uintptr, n int, hz int64, nmiPin int) int64 {
	if hz <= 0 || hz > 100000 || n <= 0 || nmiPin >= 24 {
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
	if nmiPin >= 0 && sbBootCPU < 0xFF {
		sbProfPin, sbProfFanout = nmiPin, true
		sbIOAPICRoute(nmiPin, 4<<8|2) // NMI, physical, edge
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

// sbProfStop stops sampling; the buffers keep what was recorded.
func sbProfStop() {
	if sbProfSource == sbProfHPET {
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
