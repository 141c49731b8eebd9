package wallclock

import (
	"sync"
	"sync/atomic"
	"time"
)

// The clock's discipline as adjtimex(2) sets it: a frequency correction
// and a one-shot slew (adjtime(3)), both applied to the time Now reads,
// and the NTP bookkeeping fields, which Shortbread keeps and reports but
// does not act on (it runs no PLL: offsets given with ADJ_OFFSET outside
// ADJ_OFFSET_SINGLESHOT are stored, not chased).

// SlewRate is how fast a one-shot adjustment moves the clock: 500 µs a
// second, Linux's MAX_TICKADJ.
const SlewRate = 500e-6

// MaxFreq bounds the frequency correction: 500 ppm, in adjtimex's units
// (ppm scaled by 2^16).
const MaxFreq = 500 << 16

var (
	// adjusting is set while a slew or a frequency correction is in
	// force, so that Now pays for the lock only then.
	adjusting atomic.Bool

	adjMu    sync.Mutex
	adjAt    time.Time     // monotonic reading when the slew and frequency were last folded into offset
	slewLeft time.Duration // one-shot adjustment still to apply; protected by adjMu
	freq     int64         // ppm << 16; protected by adjMu
)

// adjustment returns what the slew and the frequency add to offset at
// monotonic time now, and the slew still left then.
// Preconditions: adjMu is held.
func adjustment(now time.Time) (add, left time.Duration) {
	el := now.Sub(adjAt)
	if el <= 0 {
		return 0, slewLeft
	}
	step := time.Duration(float64(el) * SlewRate)
	switch {
	case slewLeft > 0:
		add = min(step, slewLeft)
	case slewLeft < 0:
		add = max(-step, slewLeft)
	}
	left = slewLeft - add
	add += time.Duration(float64(el) * float64(freq) / (1e6 * 65536))
	return add, left
}

// fold makes offset include the adjustment so far, from a new start.
// Preconditions: adjMu is held.
func fold(now time.Time) {
	add, left := adjustment(now)
	offset.Add(int64(add))
	slewLeft, adjAt = left, now
	adjusting.Store(slewLeft != 0 || freq != 0)
}

// adjustedOffset is offset with the adjustment in force at now.
func adjustedOffset(now time.Time) time.Duration {
	adjMu.Lock()
	defer adjMu.Unlock()
	add, _ := adjustment(now)
	return time.Duration(offset.Load()) + add
}

// Slew starts a one-shot adjustment of d (adjtime), replacing the one in
// progress, and returns what that one had left.
func Slew(d time.Duration) (old time.Duration) {
	adjMu.Lock()
	defer adjMu.Unlock()
	fold(time.Now())
	old, slewLeft = slewLeft, d
	adjusting.Store(slewLeft != 0 || freq != 0)
	return old
}

// SlewLeft returns the one-shot adjustment not yet applied.
func SlewLeft() time.Duration {
	adjMu.Lock()
	defer adjMu.Unlock()
	_, left := adjustment(time.Now())
	return left
}

// SetFreq sets the clock's rate correction (ppm << 16) from now on.
func SetFreq(f int64) {
	adjMu.Lock()
	defer adjMu.Unlock()
	fold(time.Now())
	freq = f
	adjusting.Store(slewLeft != 0 || freq != 0)
}

// Freq returns the frequency correction (ppm << 16).
func Freq() int64 {
	adjMu.Lock()
	defer adjMu.Unlock()
	return freq
}

// Step moves the wall clock by d at once (ADJ_SETOFFSET).
func Step(d time.Duration) {
	adjMu.Lock()
	fold(time.Now())
	offset.Add(int64(d))
	adjMu.Unlock()
	notify()
}
