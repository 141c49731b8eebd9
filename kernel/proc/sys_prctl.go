package proc

// prctl(2) options beyond sysPrctl's (sys_misc.go), each with Linux
// 6.1's checks: the capability-related ones over the credentials this
// kernel keeps (no capability sets per process: the ambient set stays
// empty, since the inheritable set cannot be raised), and the ones whose
// effect is a flag Linux keeps for hardware or accounting this kernel
// does not have (memory-error kill policy, per-task perf counters,
// process timing), kept and reported as Linux does.

// prctl options and values (include/uapi/linux/prctl.h).
const (
	prGetKeepcaps        = 7
	prSetKeepcaps        = 8
	prGetTiming          = 13
	prSetTiming          = 14
	prTimingStatistical  = 0
	prGetSecurebits      = 27
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
	secureKeepCaps       = 4 // the securebits bit PR_SET_KEEPCAPS sets
)

// mceKill is PR_MCE_KILL's policy for a thread: 0 the system's
// default, else prMCEKillEarly+1 or prMCEKillLate+1.
type mceKill uint8

// prctlMore serves the options above; ok is false for one it does not
// know (EINVAL).
func prctlMore(t *Thread, a *[6]uint64) (ret int64, ok bool) {
	switch a[0] {
	case prGetKeepcaps:
		if t.keepCaps {
			return 1, true
		}
		return 0, true
	case prSetKeepcaps:
		if a[1] > 1 {
			return -eINVAL, true
		}
		t.keepCaps = a[1] == 1 // cleared by execve
		return 0, true
	case prGetSecurebits:
		if t.keepCaps {
			return 1 << secureKeepCaps, true
		}
		return 0, true
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
			return -ePERM, true // not in the (empty) inheritable set
		case prCapAmbientLower:
			return 0, true
		}
		return -eINVAL, true
	}
	return 0, false
}
