package proc

import (
	"encoding/binary"
	"errors"

	"shortbread/kernel/wallclock"
)

// struct timex on x86-64 (<linux/timex.h>): 208 bytes, longs at 8-byte
// offsets, status, shift and tai ints, and eleven spare ints at the end.
const (
	timexSize      = 208
	timexOffset    = 8
	timexFreq      = 16
	timexMaxError  = 24
	timexEstError  = 32
	timexStatus    = 40
	timexConstant  = 48
	timexPrecision = 56
	timexTolerance = 64
	timexTime      = 72 // struct timeval: tv_sec, tv_usec (or tv_nsec)
	timexTick      = 88
	timexTAI       = 160
	clockSGICycle  = 10 // a clock id Linux no longer has
)

// sysAdjtimex implements adjtimex(2).
func sysAdjtimex(t *Thread, a *[6]uint64) (int64, bool) {
	return t.adjtimex(uintptr(a[0]), clockRealtime), false
}

// sysClockAdjtime implements clock_adjtime(2): CLOCK_REALTIME is the
// clock adjtimex tunes; the other clocks cannot be adjusted (EOPNOTSUPP),
// and an unknown clock is EINVAL, each after the structure was read, as
// Linux checks.
func sysClockAdjtime(t *Thread, a *[6]uint64) (int64, bool) {
	return t.adjtimex(uintptr(a[1]), int32(a[0])), false
}

func (t *Thread) adjtimex(addr uintptr, clock int32) int64 {
	var b [timexSize]byte
	space := t.Proc.Space()
	if err := space.CopyIn(addr, b[:]); err != nil {
		return errno(err)
	}
	switch {
	case clock == clockRealtime:
	case clock >= 0 && clock <= clockTAI && clock != clockSGICycle:
		return -eOPNOTSUPP
	default:
		return -eINVAL
	}
	le := binary.LittleEndian
	i64 := func(off int) int64 { return int64(le.Uint64(b[off:])) }
	tx := wallclock.Timex{
		Modes: le.Uint32(b[0:]), Offset: i64(timexOffset), Freq: i64(timexFreq),
		MaxError: i64(timexMaxError), EstError: i64(timexEstError), Status: int32(le.Uint32(b[timexStatus:])),
		Constant: i64(timexConstant), Tick: i64(timexTick),
		TimeSec: i64(timexTime), TimeFrac: i64(timexTime + 8),
	}
	state, err := wallclock.Adjtimex(&tx, t.creds().privileged())
	switch {
	case errors.Is(err, wallclock.ErrPerm):
		return -ePERM
	case err != nil:
		return -eINVAL
	}
	put := func(off int, v int64) { le.PutUint64(b[off:], uint64(v)) }
	put(timexOffset, tx.Offset)
	put(timexFreq, tx.Freq)
	put(timexMaxError, tx.MaxError)
	put(timexEstError, tx.EstError)
	le.PutUint32(b[timexStatus:], uint32(tx.Status))
	put(timexConstant, tx.Constant)
	put(timexPrecision, tx.Precision)
	put(timexTolerance, tx.Tolerance)
	put(timexTime, tx.TimeSec)
	put(timexTime+8, tx.TimeFrac)
	put(timexTick, tx.Tick)
	le.PutUint32(b[timexTAI:], uint32(tx.TAI))
	if err := space.CopyOut(addr, b[:]); err != nil {
		return errno(err)
	}
	return int64(state)
}
