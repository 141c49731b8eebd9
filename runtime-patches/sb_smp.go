//go:build shortbread

// Shortbread machine layer: other CPUs and the I/O APIC.
//
// Application processors are started by kernel code above the runtime,
// which counts them from the ACPI MADT and asks for each with the private
// StartCPU system call, with a free page below 640 KiB it found in the
// memory map. The real-mode trampoline in the boot stub (boot/stub.asm:
// ap_trampoline) is copied there; an AP woken by INIT-SIPI-SIPI runs it to
// long mode on the kernel page tables, lands in sbAPEntry on its trap
// stack, sets up its tables and becomes idle, ready for threads.

package runtime

import (
	"internal/abi"
	"internal/runtime/atomic"
	"unsafe"
)

const (
	// Parameter block the trampoline reads (offsets from its page),
	// matching boot/stub.asm.
	sbTrampCR3   = 0xF00
	sbTrampEntry = 0xF08
	sbTrampStack = 0xF10
	sbTrampArg   = 0xF18
	sbTrampG     = 0xF20
)

var (
	// sbTrampoline is the page below 1 MiB the AP start-up code runs in
	// (sbSetTrampoline); sbTrampSrc/Len locate the code in the boot stub.
	sbTrampoline uintptr
	sbTrampSrc   uintptr
	sbTrampLen   uintptr

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

func sbDelay(ns int64) {
	end := sbNanotime() + ns
	for sbNanotime() < end {
		sbPause()
	}
}

// sbStartCPU wakes the CPU with the given local APIC ID, with the start-up
// code at page, and waits until it is idle in the scheduler. Runs in trap
// context on the boot CPU.
func sbStartCPU(apicID uint32, page uintptr) int64 {
	if apicID == sbBootCPU {
		return -sbEEXIST
	}
	if page != sbTrampoline && !sbSetTrampoline(page) {
		return -sbEINVAL
	}
	id := sbNCPU
	if id >= sbMaxCPU {
		return -sbENOMEM
	}
	c := &sbCPUs[id]
	c.id = id
	c.apicID = apicID
	sbInitTrapG(c)

	p := sbPhys(sbTrampoline)
	sbStore64(p+sbTrampCR3, uint64(sbAS.pml4))
	sbStore64(p+sbTrampEntry, uint64(abi.FuncPCABI0(sbAPEntry)))
	// sbAPMain runs below the frame it finally resumes from the top of
	// the trap stack.
	sbStore64(p+sbTrampStack, uint64(c.stackTop-2*unsafe.Sizeof(sbFrame{})))
	sbStore64(p+sbTrampArg, uint64(id))
	sbStore64(p+sbTrampG, uint64(c.trapG))

	// INIT, then two STARTUPs (Intel SDM vol. 3 §9.4.4.1); the SIPI
	// vector is the trampoline's page number.
	sbSendICR(apicID, 0x4500)
	sbDelay(10_000_000)
	for i := 0; i < 2; i++ {
		sbSendICR(apicID, 0x4600|uint32(sbTrampoline>>12))
		sbDelay(200_000)
	}
	deadline := sbNanotime() + 2_000_000_000
	for atomic.Load(&c.online) == 0 {
		if sbNanotime() > deadline {
			return -sbETIMEDOUT
		}
		sbPause()
	}
	return 0
}

// sbSetTrampoline copies the AP start-up code (its stack and parameters
// follow it in the page) to page, which stays identity-mapped: an AP turns
// paging on while executing there. The frame allocator never hands out
// memory below 1 MiB.
func sbSetTrampoline(page uintptr) bool {
	if page < sbPageSize || page+sbPageSize > 0xA0000 || page&(sbPageSize-1) != 0 || sbTrampLen == 0 || sbTrampLen > 0xE00 {
		return false
	}
	pte := sbWalk(sbAS.pml4, page, true)
	if pte == 0 {
		return false
	}
	sbStore64(pte, uint64(page)|ptePresent)
	sbMemcpy(sbPhys(page), sbPhys(sbTrampSrc), sbTrampLen)
	sbTrampoline = page
	return true
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
	t.isIdle = true
	t.state = sbThRunning
	t.cpu = id
	t.frame.rip = uint64(abi.FuncPCABI0(sbIdle))
	t.frame.cs = sbKernelCS
	t.frame.ss = sbKernelDS
	t.frame.rflags = 0x202
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
