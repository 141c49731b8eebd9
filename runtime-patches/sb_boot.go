//go:build shortbread

// Shortbread machine layer: from the boot stub to the runtime.
//
// sbBoot runs once, on the boot CPU and stack, before any runtime code;
// the order below is the order things depend on each other.

package runtime

import (
	"internal/abi"
	"unsafe"
)

const (
	// sbMinMemory is the least RAM the kernel will start with: its image,
	// page tables and a small heap.
	sbMinMemory = 64 << 20

	mb2TagModule = 3
	mb2TagMmap   = 6
)

// sbBoot is called by sbStart with the multiboot2 information address,
// the kernel ELF module's bounds, the end of the boot stub and the TSC
// when the stub started.
func sbBoot(mbi, modStart, modEnd, stubEnd uintptr, startTSC uint64) {
	sbStartTSC = startTSC
	sbSerialInit()
	sbPrintStr("\nShortbread: machine layer starting\n") // one CPU, no lock needed yet

	sbMBI = mbi
	sbKernelImage(modStart)
	// Never hand out: real-mode memory (BIOS data, the AP start-up code)
	// and the boot stub above it, the multiboot information, the kernel
	// image and the boot modules (the Go ELF, the initramfs).
	keep := [sbMaxRanges][2]uintptr{{0, stubEnd}, {mbi, mbi + uintptr(sbLoad32(mbi))},
		{sbKernelStart - sbKernelVBase, sbKernelEnd - sbKernelVBase}}
	n := 3
	sbForEachTag(mbi, func(typ uint32, tag uintptr) {
		if typ == mb2TagModule && n < len(keep) {
			keep[n] = [2]uintptr{uintptr(sbLoad32(tag + 8)), uintptr(sbLoad32(tag + 12))}
			n++
		} else if typ == mb2TagModule {
			sbFatal("too many boot modules")
		}
	})
	sbParseMultiboot(mbi, keep[:n])

	if sbFrames.free*sbPageSize < sbMinMemory {
		sbLog("only % MiB of usable RAM; Shortbread needs at least % MiB free after the kernel image",
			int64(sbFrames.free*sbPageSize>>20), sbMinMemory>>20)
		sbPowerOff(0x7d)
	}

	sbBuildKernelPageTables(modStart)
	sbBuildIDT()
	sbCPUInit(0)

	// Legacy 8259 PICs: remap away from the exception vectors, then mask
	// everything; interrupts come through the APICs.
	for _, w := range [...][2]uint16{{0x20, 0x11}, {0xA0, 0x11}, {0x21, 0x20}, {0xA1, 0x28},
		{0x21, 4}, {0xA1, 2}, {0x21, 1}, {0xA1, 1}, {0x21, 0xff}, {0xA1, 0xff}} {
		sbOutb(w[0], uint8(w[1]))
	}

	sbCalibrateTSC()
	_, _, c, _ := sbCpuid(1, 0)
	sbRdrandOK = c&(1<<30) != 0
	// sbRandom's seed without RDRAND: the CMOS clock's raw time and date
	// (seconds, minutes, hours, day, month, year), so boots differ.
	for _, reg := range [...]uint8{0, 2, 4, 7, 8, 9} {
		sbOutb(0x70, reg)
		sbRandState = sbRandState<<8 | uint64(sbInb(0x71))
	}
	// The runtime reads its clocks through the vDSO when it has one:
	// point it at ours, which reads the TSC without a trap.
	vdsoClockgettimeSym = abi.FuncPCABI0(sbVdsoClockGettime)
	sbBootCPU = sbLAPICMode()
	sbCPUs[0].apicID = sbBootCPU
	sbIOAPICMaskAll()

	// The first thread (the runtime's m0) is the one running now; the
	// idle thread stands by.
	sbSched.mu.lock()
	m0 := sbNewThreadLocked()
	sbThreads[m0].state, sbThreads[m0].cpu = sbThRunning, 0
	sbCPUs[0].cur = m0
	sbCPUs[0].idle = sbNewIdleThreadLocked(0)
	sbSched.mu.unlock()
	sbCPUs[0].online = 1

	sbBuildProcessStack()
	sbCPUs[0].sliceEnd = sbNanotime() + sbTimeSlice
	sbArmTimer(sbCPUs[0].sliceEnd)
	sbCPUs[0].timerAt = sbCPUs[0].sliceEnd

	// The kernel's cpu: line tells the rest.
	sbLog("% MiB free, TSC % MHz; entering the Go runtime", int64(sbFrames.free*sbPageSize>>20), int64(sbTSCHz/1_000_000))
}

// sbForEachTag calls fn for each multiboot2 tag (spec §3.6).
func sbForEachTag(mbi uintptr, fn func(typ uint32, tag uintptr)) {
	total := uintptr(sbLoad32(mbi))
	for p := mbi + 8; p+8 <= mbi+total; {
		typ, size := sbLoad32(p), uintptr(sbLoad32(p+4))
		if typ == 0 || size < 8 {
			break
		}
		fn(typ, p)
		p += (size + 7) &^ 7
	}
}

// sbParseMultiboot gives the frame allocator the memory map's available
// RAM but for the ranges in keep.
func sbParseMultiboot(mbi uintptr, keep [][2]uintptr) {
	sbForEachTag(mbi, func(typ uint32, tag uintptr) {
		if typ != mb2TagMmap || sbLoad32(tag+8) < 24 {
			return
		}
		size, entSize := uintptr(sbLoad32(tag+4)), uintptr(sbLoad32(tag+8))
		for e := tag + 16; e+entSize <= tag+size; e += entSize {
			base, length := uintptr(sbLoad64(e)), uintptr(sbLoad64(e+8))
			if sbLoad32(e+16) == 1 { // available RAM
				sbFrames.addRange(base, base+length, keep)
			}
		}
	})
	if sbFrames.total == 0 {
		sbFatal("the boot loader reported no usable memory")
	}
}

// sbKernelImage records the kernel image's extent from its ELF headers.
func sbKernelImage(elf uintptr) {
	sbKernelStart = ^uintptr(0)
	sbForEachLoad(elf, func(va, memsz uintptr, _ uint32) {
		sbKernelStart = min(sbKernelStart, va&^(sbPageSize-1))
		sbKernelEnd = max(sbKernelEnd, (va+memsz+sbPageSize-1)&^(sbPageSize-1))
	})
}

// sbBuildProcessStack lays out what Linux gives a new process: argc, argv,
// envp and the auxiliary vector, with the strings and AT_RANDOM bytes
// above them, at the top of m0's stack.
func sbBuildProcessStack() {
	top := uintptr(unsafe.Pointer(&sbM0Stack)) + sbM0StackSize
	p := top
	pushStr := func(s string) uintptr {
		p -= uintptr(len(s) + 1)
		copy(unsafe.Slice((*byte)(unsafe.Pointer(p)), len(s)), s)
		*(*byte)(unsafe.Pointer(p + uintptr(len(s)))) = 0
		return p
	}
	argv0 := pushStr("shortbread")
	// GOTRACEBACK=crash: fatal errors print registers and every goroutine,
	// then abort, which powers off with a failing status.
	env0 := pushStr("GOTRACEBACK=crash")
	// updatemaxprocs=0: there are no cgroups to re-read.
	env1 := pushStr("GODEBUG=updatemaxprocs=0")
	p &^= 15
	p -= 16
	random := p
	sbStore64(random, sbRandom())
	sbStore64(random+8, sbRandom())
	words := [...]uint64{
		1, uint64(argv0), 0, // argc, argv, NULL
		uint64(env0), uint64(env1), 0, // envp, NULL
		6, sbPageSize, // AT_PAGESZ
		25, uint64(random), // AT_RANDOM
		17, 100, // AT_CLKTCK
		0, 0, // AT_NULL
	}
	p -= uintptr(len(words)) * 8
	p &^= 15
	for i, w := range words {
		sbStore64(p+uintptr(i)*8, w)
	}
	sbInitSP = p
}
