package wallclock

import (
	"errors"
	"sync"
	"time"
)

// Timex is struct timex as adjtimex(2) takes and returns it, decoded.
// Offset is in µs (ns with STA_NANO); Freq in ppm << 16; Time is the
// wall-clock time, filled on return.
type Timex struct {
	Modes                                     uint32
	Offset, Freq, MaxError, EstError          int64
	Status                                    int32
	Constant, Precision, Tolerance, Tick, TAI int64
	TimeSec, TimeFrac                         int64 // tv_sec, and tv_usec (tv_nsec with ADJ_NANO or STA_NANO)
}

// adjtimex modes and status bits (<linux/timex.h>).
const (
	AdjOffset          = 0x0001
	AdjFrequency       = 0x0002
	AdjMaxError        = 0x0004
	AdjEstError        = 0x0008
	AdjStatus          = 0x0010
	AdjTimeConst       = 0x0020
	AdjTAI             = 0x0080
	AdjSetOffset       = 0x0100
	AdjMicro           = 0x1000
	AdjNano            = 0x2000
	AdjTick            = 0x4000
	adjAdjtime         = 0x8000
	adjReadonly        = 0x2000
	AdjOffsetSingle    = 0x8001 // adjtime(3)
	AdjOffsetSingleRd  = 0xa001 // adjtime(3) reading only
	StaPLL             = 0x0001
	StaUnsync          = 0x0040
	StaNano            = 0x2000
	staReadOnly        = 0xff00 // PPS and clock state bits: not settable
	TimeOK             = 0
	TimeError          = 5
	phaseLimit         = 16_000_000 // µs: NTP_PHASE_LIMIT, where maxerror stops and the clock counts as unsynchronized
	maxTimeConst       = 10
	userHz             = 100
	defaultTick        = 1_000_000 / userHz
	maxTAI             = 0x7fffffff
	maxErrorGrowthUsPS = 500 // maxerror grows 500 µs a second, as Linux's second_overflow adds
)

// Errors of Adjtimex, as the system call reports them.
var (
	ErrInvalid = errors.New("wallclock: invalid adjtimex request")    // EINVAL
	ErrPerm    = errors.New("wallclock: adjtimex needs CAP_SYS_TIME") // EPERM
)

// ntpState is the NTP state Linux's kernel/time/ntp.c keeps. Shortbread keeps
// it for programs that read it back (ntpd, chronyd, adjtimex(8)) and acts
// on the parts that move the clock: the frequency, the tick length and
// the one-shot slew; it runs no phase-locked loop, so an ADJ_OFFSET with
// STA_PLL is remembered, not chased.
type ntpState struct {
	sync.Mutex
	status     int32
	freq       int64 // ppm << 16, as set
	maxError   int64 // µs, as of maxErrorAt
	maxErrorAt time.Time
	estError   int64
	constant   int64
	tick       int64
	tai        int64
	offset     int64 // ADJ_OFFSET's last value (ns)
}

var ntp = ntpState{status: StaUnsync, maxError: phaseLimit, estError: phaseLimit, constant: 2, tick: defaultTick}

// Adjtimex carries out adjtimex(2) on tx as Linux's do_adjtimex does,
// for a caller with (privileged) or without CAP_SYS_TIME, and fills tx
// with the clock's state. It returns the clock state: TimeOK, or
// TimeError while the clock is unsynchronized.
func Adjtimex(tx *Timex, privileged bool) (int, error) {
	m := tx.Modes
	if m&adjAdjtime != 0 {
		if m&AdjOffsetSingle != AdjOffsetSingle {
			return 0, ErrInvalid // singleshot takes no other mode
		}
		if m&adjReadonly == 0 && !privileged {
			return 0, ErrPerm
		}
	} else {
		if m != 0 && !privileged {
			return 0, ErrPerm
		}
		if m&AdjTick != 0 && (tx.Tick < 900_000/userHz || tx.Tick > 1_100_000/userHz) {
			return 0, ErrInvalid
		}
	}
	if m&AdjSetOffset != 0 {
		if !privileged {
			return 0, ErrPerm
		}
		unit, limit := int64(time.Microsecond), int64(1e6)
		if m&AdjNano != 0 {
			unit, limit = 1, 1e9
		}
		if tx.TimeFrac < 0 || tx.TimeFrac >= limit {
			return 0, ErrInvalid
		}
		Step(time.Duration(tx.TimeSec)*time.Second + time.Duration(tx.TimeFrac*unit))
	}
	const ppmScale = 1 << 16
	if m&AdjFrequency != 0 && (tx.Freq > (1<<63-1)/1000 || tx.Freq < -(1<<63-1)/1000) {
		return 0, ErrInvalid // what Linux's multiplication by PPM_SCALE would overflow
	}
	ntp.Lock()
	defer ntp.Unlock()
	now := time.Now()
	ntp.ageLocked(now)
	if m&adjAdjtime != 0 {
		left := SlewLeft()
		if m&adjReadonly == 0 {
			left = Slew(time.Duration(tx.Offset) * time.Microsecond)
		}
		tx.Offset = int64(left / time.Microsecond)
	} else {
		if m&AdjStatus != 0 {
			if ntp.status&StaPLL != 0 && tx.Status&StaPLL == 0 {
				ntp.status = StaUnsync // leaving PLL mode resets the state
			}
			ntp.status = ntp.status&staReadOnly | tx.Status&^staReadOnly
		}
		if m&AdjNano != 0 {
			ntp.status |= StaNano
		}
		if m&AdjMicro != 0 {
			ntp.status &^= StaNano
		}
		if m&AdjFrequency != 0 {
			ntp.freq = min(max(tx.Freq, -MaxFreq), MaxFreq)
		}
		if m&AdjMaxError != 0 {
			ntp.maxError, ntp.maxErrorAt = tx.MaxError, now
		}
		if m&AdjEstError != 0 {
			ntp.estError = tx.EstError
		}
		if m&AdjTimeConst != 0 {
			c := min(max(tx.Constant, 0), maxTimeConst)
			if ntp.status&StaNano == 0 {
				c += 4 // microsecond mode: Linux's PLL counts 16 times the steps
			}
			ntp.constant = min(c, maxTimeConst)
		}
		if m&AdjTAI != 0 && tx.Constant >= 0 && tx.Constant <= maxTAI {
			ntp.tai = tx.Constant
		}
		if m&AdjOffset != 0 && ntp.status&StaPLL != 0 {
			o := tx.Offset
			if ntp.status&StaNano == 0 {
				o *= 1000
			}
			ntp.offset = o
		}
		if m&AdjTick != 0 {
			ntp.tick = tx.Tick
		}
		if m&(AdjTick|AdjFrequency) != 0 {
			// A tick of 10,001 µs in place of 10,000 runs the
			// clock 100 ppm fast, as in ntp_update_frequency.
			SetFreq(ntp.freq + (ntp.tick-defaultTick)*ppmScale*1_000_000/defaultTick)
		}
		tx.Offset = ntp.offset
		if ntp.status&StaNano == 0 {
			tx.Offset /= 1000
		}
	}
	tx.Freq = ntp.freq
	tx.MaxError, tx.EstError = ntp.maxError, ntp.estError
	tx.Status = ntp.status
	tx.Constant = ntp.constant
	tx.Precision = 1
	tx.Tolerance = MaxFreq
	tx.Tick = ntp.tick
	tx.TAI = ntp.tai
	wall := Now()
	tx.TimeSec = wall.Unix()
	tx.TimeFrac = int64(wall.Nanosecond())
	if ntp.status&StaNano == 0 {
		tx.TimeFrac /= 1000
	}
	if ntp.status&StaUnsync != 0 {
		return TimeError, nil
	}
	return TimeOK, nil
}

// ageLocked grows maxerror by 500 µs a second since it was set, up to
// the phase limit, where the clock counts as unsynchronized again.
func (n *ntpState) ageLocked(now time.Time) {
	if n.maxErrorAt.IsZero() {
		n.maxErrorAt = now
	}
	secs := int64(now.Sub(n.maxErrorAt) / time.Second)
	if secs <= 0 {
		return
	}
	n.maxErrorAt = n.maxErrorAt.Add(time.Duration(secs) * time.Second)
	n.maxError += secs * maxErrorGrowthUsPS
	if n.maxError > phaseLimit {
		n.maxError = phaseLimit
		n.status |= StaUnsync
	}
}
