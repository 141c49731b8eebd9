//go:build shortbread

// Shortbread machine layer: the Linux system calls the runtime makes.
//
// The "Linux" the unmodified runtime's SYSCALLs reach: only the calls it
// makes (design notes §3.1), and the kernel's private ones; anything else
// is ENOSYS, logged once per number below 512. Pointer arguments are made
// present with sbAS.touch before use.

package runtime

import "unsafe"

// Linux errno values used here.
const (
	sbEPERM     = 1
	sbENOENT    = 2
	sbEINTR     = 4
	sbEBADF     = 9
	sbEAGAIN    = 11
	sbENOMEM    = 12
	sbEFAULT    = 14
	sbEINVAL    = 22
	sbENOTTY    = 25
	sbENOSYS    = 38
	sbETIMEDOUT = 110
)

var sbENOSYSSeen [512]bool

func sbSyscall(c *sbCPU, f *sbFrame) {
	a0, a1, a2, a3 := uintptr(f.rdi), uintptr(f.rsi), uintptr(f.rdx), uintptr(f.r10)
	a4 := uintptr(f.r8)
	var r int64
	switch no := f.rax; no {
	case 0: // read: no fd is readable
		r = -sbEBADF
	case 1: // write
		r = sbWrite(int32(a0), a1, a2)
	case 3: // close
	case 9: // mmap: anonymous only (file mappings belong to the VFS)
		const mapFixed, mapAnon = 0x10, 0x20 // the runtime uses no other flag but MAP_PRIVATE
		r = -sbENOSYS
		if a3&mapAnon != 0 && int32(a4) == -1 {
			r = sbAS.mmap(a0, a1, uint32(a2)&7, a3&mapFixed != 0)
		}
	case 10: // mprotect
		r = sbAS.mprotect(a0, a1, uint32(a2))
	case 11: // munmap
		r = sbAS.munmap(a0, a1)
	case 13: // rt_sigaction
		r = sbRtSigaction(int32(a0), a1, a2)
	case 14: // rt_sigprocmask
		r = sbRtSigprocmask(c, int32(a0), a1, a2)
	case 15: // rt_sigreturn
		sbSigreturn(c, f)
		return
	case 16: // ioctl
		r = -sbENOTTY
	case 24: // sched_yield
		f.rax = 0
		c.resched = true
		c.sliceEnd = 0
		return
	case 28: // madvise
		r = 0
		if a2 == 4 || a2 == 8 { // MADV_DONTNEED, MADV_FREE
			r = sbAS.discard(a0, a1)
		}
	case 35: // nanosleep
		if !sbAS.touch(a0, 16, false) {
			r = -sbEFAULT
			break
		}
		ts := (*timespec)(unsafe.Pointer(a0))
		f.rax = 0
		sbSleep(c, f, sbNanotime()+ts.tv_sec*1_000_000_000+ts.tv_nsec)
		return
	case 39: // getpid
		r = 1
	case 56: // clone
		r = sbClone(c, f, a0, a1, uintptr(f.r8))
	case 60: // exit: this thread only
		sbExitThread(c, f)
		return
	case 62: // kill: the runtime only signals itself
		if a0 != 1 && a0 != 0 {
			r = -sbEPERM
			break
		}
		r = sbKill(c, int32(sbThreads[c.cur].tid), int32(a1))
	case 72: // fcntl: only the console's fds 0-2 exist; F_GETFL says O_RDWR
		r = -sbEBADF
		if a0 <= 2 {
			r = 2 * int64(bool2int(a1 == 3))
		}
	case 89: // readlink
		r = -sbENOENT
	case 131: // sigaltstack
		r = sbSigaltstack(c, a0, a1)
	case 157: // prctl
		r = -sbEINVAL
	case 158: // arch_prctl: the runtime only sets its FS base
		if a0 != 0x1002 { // ARCH_SET_FS
			r = -sbEINVAL
			break
		}
		f.fsbase = uint64(a1)
	case 186: // gettid
		r = int64(sbThreads[c.cur].tid)
	case 202: // futex
		sbFutex(c, f, a0, int32(a1), uint32(a2), a3, uint64(uint32(f.r9)))
		return
	case 204: // sched_getaffinity
		if a1 < 8 || !sbAS.touch(a2, 8, true) {
			r = -sbEINVAL
			break
		}
		sbStore64(a2, uint64(1)<<sbNCPU-1)
		r = 8
	case 231: // exit_group
		sbLog("kernel exited with status %", int64(int32(a0)))
		sbPowerOff(uint8(a0))
	case 234: // tgkill
		r = sbKill(c, int32(a1), int32(a2))
	case 257: // openat
		r = -sbENOENT
	case 302: // prlimit64
		r = -sbENOSYS
	case 318: // getrandom
		r = sbGetrandom(a0, a1)
	case sbSysIRQOpen: // the kernel's private calls (sb_hooks.go) from here
		if a0 >= 24 {
			r = -sbEINVAL
			break
		}
		// (QEMU and PCs wire the PIT, IRQ 0, to pin 2, which the kernel
		// corrects from the MADT overrides when it needs the PIT.)
		sbIRQEntry[a0] = uint32(sbVecIRQBase+a0) | uint32(a1)&(sbIOAPICLevel|sbIOAPICActiveLow)
		if a1&sbIRQNoPin == 0 {
			sbIOAPICRoute(int(a0), sbIRQEntry[a0])
		}
	case sbSysProfStart:
		r = sbProfStart(a0, int(a1), int64(a2), int(int64(a3)))
	case sbSysProfStop:
		sbProfStop()
	case sbSysIOAPIC:
		if a0 == 0 || a0&0xfff != 0 || a0 >= sbDmapEnd {
			r = -sbEINVAL
			break
		}
		sbIOAPIC = a0
		sbIOAPICMaskAll()
	case sbSysFlushTLB:
		if a1 == 1 {
			sbReleaseCR3(c, a0)
			break
		}
		switch {
		case a1 == 3 && c.cr3 == a0 && a3 > a2 && a3-a2 <= 32*sbPageSize:
			// A few pages of the space this CPU has loaded (Linux's
			// tlb_single_page_flush_ceiling is 33): INVLPG each instead
			// of dropping the whole TLB.
			for va := a2; va < a3; va += sbPageSize {
				sbInvlpg(va)
			}
		case a1 == 0 || a1 == 3 && c.cr3 == a0:
			sbWriteCR3(sbReadCR3())
		}
		sbShootdown(a0, false)
	case sbSysKick:
		r = sbKick(a0)
	case sbSysDebugSpin:
		r = sbDebugSpin(int64(a0))
	default:
		if no < uint64(len(sbENOSYSSeen)) && !sbENOSYSSeen[no] {
			sbENOSYSSeen[no] = true
			sbLog("unimplemented runtime syscall %", int64(no))
		}
		r = -sbENOSYS
	}
	f.rax = uint64(r)
}

func sbWrite(fd int32, buf, n uintptr) int64 {
	if fd != 1 && fd != 2 {
		return -sbEBADF
	}
	if !sbAS.touch(buf, n, false) {
		return -sbEFAULT
	}
	sbConsoleLock.lock()
	for i := uintptr(0); i < n; i++ {
		sbPutch(*(*byte)(unsafe.Pointer(buf + i)))
	}
	sbConsoleLock.unlock()
	return int64(n)
}

// sbFutex serves the runtime's futexes: FUTEX_WAIT (with a relative
// timeout) and FUTEX_WAKE, private; it uses no other operation. A
// FUTEX_WAKE's val3, which Linux ignores, is Shortbread's: the CPUs the
// woken thread goes to (readyAway, proc.diff), 0 for any.
func sbFutex(c *sbCPU, f *sbFrame, addr uintptr, op int32, val uint32, timeout uintptr, cpus uint64) {
	const futexWait, futexWake, futexCmdMask = 0, 1, 0x7f
	switch op & futexCmdMask {
	case futexWait:
		deadline := int64(0)
		if timeout != 0 {
			if !sbAS.touch(timeout, 16, false) {
				f.rax = sbNeg(sbEFAULT)
				return
			}
			ts := (*timespec)(unsafe.Pointer(timeout))
			deadline = max(sbNanotime()+ts.tv_sec*1_000_000_000+ts.tv_nsec, 1)
		}
		sbFutexWait(c, f, addr, val, deadline)
	case futexWake:
		f.rax = uint64(sbFutexWake(addr, int64(val), cpus&(1<<uint32(sbNCPU)-1)))
	default:
		f.rax = sbNeg(sbENOSYS)
	}
}

func sbRtSigaction(sig int32, act, oact uintptr) int64 {
	if sig < 1 || sig > 64 || act != 0 && (sig == _SIGKILL || sig == _SIGSTOP) {
		return -sbEINVAL
	}
	size := unsafe.Sizeof(sbSigaction{})
	if (act != 0 && !sbAS.touch(act, size, false)) || (oact != 0 && !sbAS.touch(oact, size, true)) {
		return -sbEFAULT
	}
	sbSigLock.lock()
	old := sbSigactions[sig]
	if act != 0 {
		sbSigactions[sig] = *(*sbSigaction)(unsafe.Pointer(act))
	}
	sbSigLock.unlock()
	if oact != 0 {
		*(*sbSigaction)(unsafe.Pointer(oact)) = old
	}
	return 0
}

func sbRtSigprocmask(c *sbCPU, how int32, set, oset uintptr) int64 {
	if (set != 0 && !sbAS.touch(set, 8, false)) || (oset != 0 && !sbAS.touch(oset, 8, true)) {
		return -sbEFAULT
	}
	t := &sbThreads[c.cur]
	old := t.sigMask
	if set != 0 {
		v := sbLoad64(set)
		switch how {
		case 0: // SIG_BLOCK
			t.sigMask |= v
		case 1: // SIG_UNBLOCK
			t.sigMask &^= v
		case 2: // SIG_SETMASK
			t.sigMask = v
		default:
			return -sbEINVAL
		}
		t.sigMask &^= sbUnblockable
	}
	if oset != 0 {
		sbStore64(oset, old)
	}
	return 0
}

func sbSigaltstack(c *sbCPU, ss, oss uintptr) int64 {
	size := unsafe.Sizeof(stackt{})
	if (ss != 0 && !sbAS.touch(ss, size, false)) || (oss != 0 && !sbAS.touch(oss, size, true)) {
		return -sbEFAULT
	}
	t := &sbThreads[c.cur]
	oldSP, oldSize, oldFlags := t.altSP, t.altSize, t.altFlags
	if ss != 0 {
		st := (*stackt)(unsafe.Pointer(ss))
		if st.ss_flags&2 != 0 { // SS_DISABLE
			t.altSP, t.altSize, t.altFlags = 0, 0, 2
		} else {
			t.altSP, t.altSize, t.altFlags = uintptr(unsafe.Pointer(st.ss_sp)), st.ss_size, 0
		}
	}
	if oss != 0 {
		st := (*stackt)(unsafe.Pointer(oss))
		*(*uintptr)(unsafe.Pointer(&st.ss_sp)) = oldSP
		st.ss_size, st.ss_flags = oldSize, oldFlags
		if oldSize == 0 {
			st.ss_flags = 2
		}
	}
	return 0
}

// sbKill sends sig to the thread with the given TID.
func sbKill(c *sbCPU, tid, sig int32) int64 {
	if sig < 0 || sig > 64 {
		return -sbEINVAL
	}
	sbSched.mu.lock()
	i := sbFindTIDLocked(tid)
	sbSched.unlock()
	if i < 0 {
		return -3 // ESRCH
	}
	if sig != 0 {
		sbSignalThread(i, sig)
	}
	return 0
}

func sbGetrandom(buf, n uintptr) int64 {
	n = min(n, 256)
	if !sbAS.touch(buf, n, true) {
		return -sbEFAULT
	}
	for i := uintptr(0); i < n; i++ {
		*(*byte)(unsafe.Pointer(buf + i)) = byte(sbRandom())
	}
	return int64(n)
}

var sbRdrandOK bool // CPUID's RDRAND bit (the instruction faults without it)
var sbRandState uint64

// sbRandom returns RDRAND output (retried, as Intel advises). Without RDRAND
// (Intel before 2012, AMD before 2015) it is splitmix64 over the boot's CMOS
// clock with the TSC mixed in at each call: WEAK, guessable by anyone who can
// estimate those times; it seeds AT_RANDOM and the kernel's generators.
func sbRandom() uint64 {
	for i := 0; sbRdrandOK && i < 10; i++ {
		if v, ok := sbRdrand(); ok {
			return v
		}
	}
	sbRandState += 0x9e3779b97f4a7c15 ^ sbRdtsc()
	z := sbRandState
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
