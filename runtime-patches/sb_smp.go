//go:build shortbread

// Shortbread machine layer: other CPUs and the I/O APIC.
//
// Kernel code (kernel/machine/smp.go) starts application processors; an
// AP lands in sbAPEntry on its trap stack and becomes idle.

package runtime

import (
	"internal/abi"
	"internal/runtime/atomic"
	"unsafe"
)

var (
	sbTrampSrc, sbTrampLen uintptr // the start-up code in the boot stub (sbStart)

	sbIOAPIC   uintptr = 0xFEC00000 // physical; the kernel may correct it from the MADT
	sbIOAPICMu sbSpin
	sbBootCPU  uint32
	// sbAPTLS is the FS block for an AP until it switches to its own
	// trap TLS; APs start one at a time.
	sbAPTLS [2]uintptr
)

func sbAPEntry()
func sbResume(f uintptr)

func sbSendIPI(apicID uint32, vector uint32) {
	sbSendICR(apicID, vector|0x4000) // fixed, assert
}

// sbHookPrepareCPU makes the next CPU slot ready for the AP with the
// given local APIC ID and returns what its start-up code needs: the
// CPU's index, its stack (sbAPMain runs below the frame it finally
// resumes from the top of the trap stack), its trap g and the entry.
//
//go:linkname sbHookPrepareCPU shortbread/kernel/machine.prepareCPU
func sbHookPrepareCPU(apicID uint32) (id int, stack, g, entry uintptr, ok bool) {
	if sbNCPU >= sbMaxCPU {
		return 0, 0, 0, 0, false
	}
	c := &sbCPUs[sbNCPU]
	c.id, c.apicID = sbNCPU, apicID
	sbInitTrapG(c)
	return int(c.id), c.stackTop - 2*unsafe.Sizeof(sbFrame{}), c.trapG, abi.FuncPCABI0(sbAPEntry), true
}

// sbHookSendICR sends an IPI (INIT, STARTUP) with interrupts off: in
// xAPIC mode a trap handler's IPI between the two ICR writes would
// redirect this one.
//
//go:linkname sbHookSendICR shortbread/kernel/machine.sendICR
func sbHookSendICR(dest, low uint32) {
	fl := sbIntrOff()
	sbSendICR(dest, low)
	sbIntrRestore(fl)
}

// sbAPMain runs on a new CPU, on its trap stack as its trap g, with
// interrupts off. It never returns: it resumes the CPU's idle thread.
//
//go:nowritebarrierrec
func sbAPMain(id int32) {
	sbCPUInit(id)
	c := &sbCPUs[id]
	sbWrmsr(0xC0000100, uint64(uintptr(unsafe.Pointer(&c.tls[1]))))
	sbInitLAPIC(false)
	sbSched.mu.lock()
	c.idle = sbNewIdleThreadLocked(id)
	c.cur = c.idle
	c.idleClock = -1 - sbNanotime() // idle from now on, none before
	sbSched.mu.unlock()
	sbNCPU = id + 1
	atomic.Store(&c.online, 1)
	f := c.stackTop - unsafe.Sizeof(sbFrame{})
	*(*sbFrame)(unsafe.Pointer(f)) = sbThreads[c.idle].frame
	sbResume(f)
}

// sbNewIdleThreadLocked creates CPU id's idle thread: it runs sbIdle on a
// small private stack with interrupts on.
func sbNewIdleThreadLocked(id int32) int32 {
	i := sbNewThreadLocked()
	if i < 0 {
		sbFatal("no thread slot for an idle thread")
	}
	t := &sbThreads[i]
	t.isIdle, t.state, t.cpu = true, sbThRunning, id
	t.frame.rip = uint64(abi.FuncPCABI0(sbIdle))
	t.frame.cs, t.frame.ss, t.frame.rflags = sbKernelCS, sbKernelDS, 0x202
	t.frame.rsp = uint64(uintptr(unsafe.Pointer(&sbIdleStacks[id])) + 4096 - 8)
	sbFPUReset(&t.frame.fpu)
	sbSched.nthreads-- // not one of the runtime's threads
	return i
}

func sbIOAPICWrite(reg uint32, v uint32) {
	base := sbPhys(sbIOAPIC)
	atomic.Store((*uint32)(unsafe.Pointer(base)), reg)
	atomic.Store((*uint32)(unsafe.Pointer(base+0x10)), v)
}

// sbIOAPICRoute sets pin's redirection entry: destination the boot CPU
// (physical), low word lo (vector, delivery and trigger mode, polarity,
// mask bit 16).
func sbIOAPICRoute(pin int, lo uint32) {
	sbIOAPICMu.lock()
	sbIOAPICWrite(0x10+2*uint32(pin)+1, sbBootCPU<<24)
	sbIOAPICWrite(0x10+2*uint32(pin), lo)
	sbIOAPICMu.unlock()
}

// sbIOAPICMaskAll masks every redirection entry (boot).
func sbIOAPICMaskAll() {
	for pin := 0; pin < 24; pin++ {
		sbIOAPICRoute(pin, 1<<16)
	}
}
