//go:build shortbread

// Shortbread machine layer: the sampling profiler's interrupt source, an
// NMI where the kernel has a periodic timer, as it samples interrupts-off
// code too; the fallback, the local APIC timer, cannot.

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

// sbProfBuffer mirrors machine.ProfBuffer, one per CPU, in kernel
// memory: cap 16-byte records at addr (pre-touched), which the NMI stub
// (or sbProfTick) fills, counting them in n and the samples lost to a
// full buffer in dropped.
type sbProfBuffer struct {
	addr, cap, n, dropped uint64
}

var (
	sbProfBufs   uintptr // the kernel's sbProfBuffers while sampling, else 0
	sbProfNBufs  uint64  // how many (CPUs from this index on take no samples)
	sbProfSource int
	sbProfPeriod int64 // ns between samples
	sbProfPin    int
	sbProfFanout bool // the boot CPU's NMI stub passes NMIs on
)

// sbProfStart starts sampling into the n buffers at bufs at hz: from
// the interrupt on I/O APIC pin nmiPin (the kernel's periodic timer),
// made an NMI to the boot CPU, or from the timer interrupt when there is
// none (nmiPin < 0) or the I/O APIC's 8-bit destination cannot name the
// boot CPU. It returns the source used or a negative errno.
func sbProfStart(bufs uintptr, n int, hz int64, nmiPin int) int64 {
	if hz <= 0 || hz > 100000 || n <= 0 || nmiPin >= 24 {
		return -sbEINVAL
	}
	if !sbAS.touch(bufs, uintptr(n)*unsafe.Sizeof(sbProfBuffer{}), true) {
		return -sbEFAULT
	}
	sbProfStop()
	n = min(n, int(sbNCPU))
	for i := 0; i < n; i++ {
		b := sbProfBufferOf(bufs, uint64(i))
		if !sbAS.touch(uintptr(b.addr), uintptr(b.cap)*16, true) {
			return -sbEFAULT
		}
		b.n, b.dropped = 0, 0
	}
	sbProfNBufs = uint64(n)
	atomic.Storeuintptr(&sbProfBufs, bufs)
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

func sbProfBufferOf(bufs uintptr, cpu uint64) *sbProfBuffer {
	return (*sbProfBuffer)(unsafe.Pointer(bufs + uintptr(cpu)*unsafe.Sizeof(sbProfBuffer{})))
}

// sbProfStop stops sampling; the buffers keep what was recorded.
func sbProfStop() {
	if sbProfSource == sbProfHPET {
		sbIOAPICRoute(sbProfPin, 1<<16)
		sbProfFanout = false
	}
	sbProfSource = sbProfNone
	atomic.Storeuintptr(&sbProfBufs, 0)
}

// sbProfTick takes a timer-source sample of the interrupted frame when one
// is due; it returns the time of the next sample (0 if not sampling).
func sbProfTick(c *sbCPU, f *sbFrame) int64 {
	if sbProfSource != sbProfTimer {
		return 0
	}
	bufs := atomic.Loaduintptr(&sbProfBufs)
	if bufs == 0 || uint64(c.id) >= sbProfNBufs {
		return 0
	}
	now := sbNanotime()
	if now < c.profNext {
		return c.profNext
	}
	for c.profNext <= now {
		c.profNext += sbProfPeriod
	}
	b := sbProfBufferOf(bufs, uint64(c.id))
	if b.n >= b.cap {
		b.dropped++
		return c.profNext
	}
	rec := uintptr(b.addr + b.n*16)
	flags := uint64(bool2int(sbThreads[c.cur].isIdle) | bool2int(f.cs&3 != 0)<<2) // the NMI stub's 1 and 4
	sbStore64(rec, f.rip)
	sbStore64(rec+8, uint64(c.id)|flags<<16|(sbRdtsc()&0xffffffff)<<32)
	b.n++
	return c.profNext
}
