package proc

// prctl(2) options beyond sysPrctl's (sys_misc.go), each with Linux
// 6.1's checks: the capability-related ones over the credentials this
// kernel keeps (capabilities follow the user IDs, masked at execve by the
// bounding set: sys_cap.go; the ambient set stays empty, since the
// inheritable set cannot be raised; the securebits are kept per thread
// with Linux's locks, and SECURE_NOROOT is honoured at execve as far as
// the reported sets go), seccomp (sys_seccomp.go), speculation control
// and PR_SET_MM (sys_prctl_mm.go), and the ones whose effect is a flag
// Linux keeps for hardware or accounting this kernel does not have
// (memory-error kill policy, per-task perf counters, process timing),
// kept and reported as Linux does.

// prctl options and values (include/uapi/linux/prctl.h).
const (
	prGetKeepcaps        = 7
	prSetKeepcaps        = 8
	prGetTiming          = 13
	prSetTiming          = 14
	prTimingStatistical  = 0
	prGetSeccomp         = 21
	prSetSeccomp         = 22
	prCapbsetRead        = 23
	prCapbsetDrop        = 24
	prGetSecurebits      = 27
	prSetSecurebits      = 28
	prSetMM              = 35
	prGetSpeculationCtrl = 52
	prSetSpeculationCtrl = 53
	prPerfEventsDisable  = 31
	prPerfEventsEnable   = 32
	prMCEKill            = 33
	prMCEKillGet         = 34
	prCapAmbient         = 47
	prMCEKillClear       = 0
	prMCEKillSet         = 1
	prMCEKillLate        = 0
	prMCEKillEarly       = 1
	prMCEKillDefault     = 2
	prCapAmbientIsSet    = 1
	prCapAmbientRaise    = 2
	prCapAmbientLower    = 3
	prCapAmbientClearAll = 4

	// The securebits (include/uapi/linux/securebits.h): each bit has a
	// lock bit above it that, once set, fixes it and cannot be cleared.
	secureNoRoot         = 0
	secureNoSetuidFixup  = 2
	secureKeepCaps       = 4 // the bit PR_SET_KEEPCAPS sets
	secureKeepCapsLocked = 5
	secureNoCapAmbRaise  = 6
	secureAllBits        = 0x55
	secureAllLocks       = secureAllBits << 1
	capSetpcap           = 8
)

// mceKill is PR_MCE_KILL's policy for a thread: 0 the system's
// default, else prMCEKillEarly+1 or prMCEKillLate+1.
type mceKill uint8

// prctlMore serves the options above; ok is false for one it does not
// know (EINVAL).
func prctlMore(t *Thread, a *[6]uint64) (ret int64, ok bool) {
	switch a[0] {
	// The capability options, which Linux's commoncap module serves
	// before prctl looks at any other: no checks of unused arguments.
	case prCapbsetRead:
		if a[1] > capLast {
			return -eINVAL, true
		}
		bset := capBounding(t.creds())
		return int64(bset[a[1]/32] >> (a[1] % 32) & 1), true
	case prCapbsetDrop:
		// CAP_SETPCAP first, then the capability's number.
		if !t.creds().privileged() {
			return -ePERM, true
		}
		if a[1] > capLast {
			return -eINVAL, true
		}
		t.Proc.mu.Lock()
		t.Proc.cred.bsetDropped[a[1]/32] |= 1 << (a[1] % 32)
		t.Proc.mu.Unlock()
		return 0, true
	case prGetSecurebits:
		return int64(t.securebits), true
	case prSetSecurebits:
		// Every refusal is EPERM: a locked bit changed, a lock cleared,
		// a bit Linux does not have, or no CAP_SETPCAP.
		old := uint64(t.securebits)
		if (old&secureAllLocks)>>1&(old^a[1]) != 0 || old&secureAllLocks&^a[1] != 0 ||
			a[1]&^(secureAllLocks|secureAllBits) != 0 || !t.creds().privileged() {
			return -ePERM, true
		}
		t.securebits = uint32(a[1])
		return 0, true
	case prGetKeepcaps:
		return int64(t.securebits >> secureKeepCaps & 1), true
	case prSetKeepcaps:
		if a[1] > 1 {
			return -eINVAL, true
		}
		if t.securebits&(1<<secureKeepCapsLocked) != 0 {
			return -ePERM, true
		}
		t.securebits = t.securebits&^(1<<secureKeepCaps) | uint32(a[1])<<secureKeepCaps
		return 0, true
	case prGetSeccomp:
		return int64(t.seccompMode.Load()), true
	case prSetSeccomp:
		// The filter argument is ignored for strict mode.
		switch a[1] {
		case seccompModeStrict:
			return t.seccompSet(seccompSetModeStrict, 0, 0), true
		case seccompModeFilter:
			return t.seccompSet(seccompSetModeFilter, 0, a[2]), true
		}
		return -eINVAL, true
	case prGetSpeculationCtrl:
		if a[2]|a[3]|a[4] != 0 {
			return -eINVAL, true
		}
		return specCtrlGet(a[1]), true
	case prSetSpeculationCtrl:
		if a[3]|a[4] != 0 {
			return -eINVAL, true
		}
		return specCtrlSet(a[1], a[2]), true
	case prSetMM:
		return t.prctlSetMM(a), true
	case prGetTiming:
		return prTimingStatistical, true
	case prSetTiming:
		if a[1] != prTimingStatistical {
			return -eINVAL, true
		}
		return 0, true
	case prPerfEventsDisable, prPerfEventsEnable:
		return 0, true // no perf events to switch
	case prMCEKill:
		if a[3]|a[4] != 0 {
			return -eINVAL, true
		}
		switch a[1] {
		case prMCEKillClear:
			if a[2] != 0 {
				return -eINVAL, true
			}
			t.mceKill = 0
		case prMCEKillSet:
			switch a[2] {
			case prMCEKillEarly, prMCEKillLate:
				t.mceKill = mceKill(a[2] + 1)
			case prMCEKillDefault:
				t.mceKill = 0
			default:
				return -eINVAL, true
			}
		default:
			return -eINVAL, true
		}
		return 0, true
	case prMCEKillGet:
		if a[1]|a[2]|a[3]|a[4] != 0 {
			return -eINVAL, true
		}
		if t.mceKill == 0 {
			return prMCEKillDefault, true
		}
		return int64(t.mceKill - 1), true
	case prCapAmbient:
		if a[1] == prCapAmbientClearAll {
			if a[2]|a[3]|a[4] != 0 {
				return -eINVAL, true
			}
			return 0, true
		}
		if a[2] > capLast || a[3]|a[4] != 0 {
			return -eINVAL, true
		}
		switch a[1] {
		case prCapAmbientIsSet:
			return 0, true
		case prCapAmbientRaise:
			// Not in the (empty) inheritable set, and refused anyway
			// under SECURE_NO_CAP_AMBIENT_RAISE.
			return -ePERM, true
		case prCapAmbientLower:
			return 0, true
		}
		return -eINVAL, true
	}
	return 0, false
}
