package proc

import (
	"encoding/binary"

	"shortbread/kernel/abi/linux"
)

// PR_SET_MM and the speculation-control options of prctl(2).
//
// PR_SET_MM: the checks are Linux 6.1's, in its order (an argument that
// must be 0, PR_SET_MM_MAP_SIZE and PR_SET_MM_MAP before the privilege
// test, CAP_SYS_RESOURCE, the descriptor of PR_SET_MM_EXE_FILE, the
// auxiliary vector's size, the address range). PR_SET_MM_AUXV succeeds
// (what it sets is seen only in /proc/PID/auxv, absent here). A layout
// field's option that passes the checks is EINVAL: this kernel does not
// keep the memory layout fields (start_code, arg_start, the brk base...)
// as settable values, so it cannot move them; programs that use the
// option (checkpoint-restore tools, setproctitle) take EINVAL as "not
// here".
// The exe link cannot be replaced: Linux refuses that (EBUSY) while the
// old program is still mapped, which it always is here.
//
// Speculation control: the answers Linux 6.1 gives on QEMU's "-cpu max"
// under TCG (measured with tools/linux/run.sh): it takes the CPU to be
// affected by speculative store bypass and Spectre v2 but has no
// mitigation it can switch per task (the CPU offers no SSBD, IBPB or
// STIBP), and no L1D flush on context switch. So speculation is
// reported enabled and cannot be disabled, and the L1D flush reported
// force-disabled. This kernel runs no mitigation of its own either.

// PR_SET_MM's options (include/uapi/linux/prctl.h).
const (
	prSetMMStartCode = 1
	prSetMMEnvEnd    = 11
	prSetMMAuxv      = 12
	prSetMMExeFile   = 13
	prSetMMMap       = 14
	prSetMMMapSize   = 15

	// prctlMMMapSize is sizeof(struct prctl_mm_map): eleven addresses,
	// the auxv pointer, its size and the exe descriptor.
	prctlMMMapSize = 104
	// savedAuxvSize is the size of Linux 6.1's saved auxiliary vector
	// (AT_VECTOR_SIZE longs: 2 * (3 + 20 + 1)).
	savedAuxvSize = 48 * 8
	// mmapMinAddr is Debian's vm.mmap_min_addr, the lowest address
	// PR_SET_MM accepts.
	mmapMinAddr = 65536
	// taskSize is TASK_SIZE on x86-64 with 4-level paging.
	taskSize = 1<<47 - 4096
)

// prctlSetMM is PR_SET_MM, Linux's prctl_set_mm.
func (t *Thread) prctlSetMM(a *[6]uint64) int64 {
	opt, addr, arg4, arg5 := a[1], a[2], a[3], a[4]
	if arg5 != 0 || arg4 != 0 && opt != prSetMMAuxv && opt != prSetMMMap && opt != prSetMMMapSize {
		return -eINVAL
	}
	switch opt {
	case prSetMMMapSize:
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], prctlMMMapSize)
		return errno(t.Proc.Space().CopyOut(uintptr(addr), b[:]))
	case prSetMMMap:
		if arg4 != prctlMMMapSize {
			return -eINVAL
		}
		var b [prctlMMMapSize]byte
		if err := t.Proc.Space().CopyIn(uintptr(addr), b[:]); err != nil {
			return errno(err)
		}
		return -eINVAL // valid or not, the layout cannot be set (above)
	}
	if !t.creds().privileged() {
		return -ePERM
	}
	switch opt {
	case prSetMMExeFile:
		f, err := t.file(int(uint32(addr)))
		if err != nil {
			return errno(err)
		}
		x, err := f.Statx(0)
		f.DecRef()
		if err != nil {
			return errno(err)
		}
		if uint32(x.Mode)&linux.S_IFMT != linux.S_IFREG {
			return -eACCES // it must be a program, as the old one
		}
		return -eBUSY
	case prSetMMAuxv:
		// Linux keeps the copy for /proc/PID/auxv, which this kernel
		// does not have: the call checks and reads, and that is all.
		if arg4 > savedAuxvSize {
			return -eINVAL
		}
		b := make([]byte, arg4)
		return errno(t.Proc.Space().CopyIn(uintptr(addr), b))
	}
	if addr >= taskSize || addr < mmapMinAddr {
		return -eINVAL
	}
	return -eINVAL // a field's option, or an unknown one
}

// Speculation-control features and states (include/uapi/linux/prctl.h).
const (
	prSpecStoreBypass    = 0
	prSpecIndirectBranch = 1
	prSpecL1DFlush       = 2
	prSpecNotAffected    = 0
	prSpecPrctl          = 1 << 0
	prSpecEnable         = 1 << 1
	prSpecDisable        = 1 << 2
	prSpecForceDisable   = 1 << 3
	prSpecDisableNoexec  = 1 << 4
)

// What /proc/PID/status says of them on that CPU.
const (
	specStatusSSB = "vulnerable"
	specStatusIB  = "always enabled"
)

// specCtrlGet is PR_GET_SPECULATION_CTRL: ENODEV for an unknown feature.
func specCtrlGet(which uint64) int64 {
	switch which {
	case prSpecStoreBypass, prSpecIndirectBranch:
		return prSpecEnable
	case prSpecL1DFlush:
		// No conditional L1D flush on context switch: Linux reports
		// it force-disabled.
		return prSpecForceDisable
	}
	return -eNODEV
}

// specCtrlSet is PR_SET_SPECULATION_CTRL: ENODEV for an unknown feature,
// ENXIO for store bypass (not under prctl control), and for the indirect
// branch and L1D flush what Linux answers when there is no mitigation
// to switch: enabling is a no-op, disabling EPERM, other values ERANGE.
func specCtrlSet(which, ctrl uint64) int64 {
	switch which {
	case prSpecStoreBypass:
		return -eNXIO
	case prSpecIndirectBranch:
		switch ctrl {
		case prSpecEnable:
			return 0
		case prSpecDisable, prSpecForceDisable:
			return -ePERM
		}
		return -eRANGE
	case prSpecL1DFlush:
		return -ePERM
	}
	return -eNODEV
}
