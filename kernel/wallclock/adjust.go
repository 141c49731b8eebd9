package wallclock

import "time"

// The clock's discipline as adjtimex(2) sets it: a frequency correction
// and a one-shot slew (adjtime(3)), both applied to the time Now reads,
// and the NTP bookkeeping fields, which Shortbread keeps and reports but
// does not act on (it runs no PLL: offsets given with ADJ_OFFSET outside
// ADJ_OFFSET_SINGLESHOT are stored, not chased).

// SlewRate is how fast a one-shot adjustment moves the clock: 500 µs a
// second, Linux's MAX_TICKADJ (1/slewDiv).
const SlewRate = 1.0 / slewDiv

// MaxFreq bounds the frequency correction: 500 ppm, in adjtimex's units
// (ppm scaled by 2^16).
const MaxFreq = 500 << 16

// Slew starts a one-shot adjustment of d (adjtime), replacing the one in
// progress, and returns what that one had left.
func Slew(d time.Duration) (old time.Duration) {
	update(func(_, _ int64, p *params) {
		old, p.slew = time.Duration(p.slew), int64(d)
	})
	return old
}

// SlewLeft returns the one-shot adjustment not yet applied.
func SlewLeft() time.Duration {
	mono, p := read()
	return time.Duration(slewLeft(mono-p.adjAt, p.slew))
}

// SetFreq sets the clock's rate correction (ppm << 16) from now on.
func SetFreq(f int64) {
	update(func(_, _ int64, p *params) { p.freq = f })
}

// Freq returns the frequency correction (ppm << 16).
func Freq() int64 {
	_, p := read()
	return p.freq
}

// Step moves the wall clock by d at once (ADJ_SETOFFSET).
func Step(d time.Duration) {
	update(func(_, _ int64, p *params) { p.offset += int64(d) })
	notify()
}
