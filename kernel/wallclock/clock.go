package wallclock

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// Data is the clocks' state, laid out for the vDSO to read too
// (kernel/vdso/c/vdso.h: struct vvar mirrors it field by field; the
// layout test keeps the two in step). Writers hold adjMu and bracket
// their stores with Seq: odd while a change is under way. A reader
// takes Seq, the fields, then the counter, then Seq again, and retries
// if Seq was odd or moved: since a writer makes Seq odd before it reads
// the counter for the moment of its change, a reader whose counter
// reading came later always retries, and one whose reading came
// earlier computed a time the new parameters continue from.
type Data struct {
	Seq atomic.Uint32
	// Mode is ModeCounter when user code may read the counter itself
	// (the TSC, with CR4.TSD clear); the vDSO makes the system call
	// otherwise.
	Mode atomic.Uint32
	// Counter0 is the counter's value at CLOCK_MONOTONIC's zero, Hz its
	// rate: monotonic ns = (counter - Counter0) * 1e9 / Hz, rounded down.
	Counter0 atomic.Uint64
	Hz       atomic.Uint64
	// Realtime is monotonic time + Offset + the adjustment since AdjAt
	// (monotonic ns): the one-shot Slew (ns) applied at SlewRate and the
	// frequency correction Freq (ppm << 16).
	Offset atomic.Int64
	AdjAt  atomic.Int64
	Slew   atomic.Int64
	Freq   atomic.Int64
}

// ModeCounter: user code may read the counter (see Data.Mode).
const ModeCounter = 1

// params are the fields a writer changes, as one value.
type params struct {
	offset, adjAt, slew, freq int64
}

var (
	// data is where the clocks' state lives: a record of this package's
	// until Init moves it into the vDSO's page.
	data atomic.Pointer[Data]
	// counter reads the counter Data describes: nanoseconds since this
	// package started on the host, the TSC (with its reads ordered)
	// in the kernel after Init.
	counter func() uint64
	adjMu   sync.Mutex // serializes writers of data
)

func init() {
	start := time.Now()
	d := new(Data)
	d.Hz.Store(1e9)
	d.Offset.Store(start.UnixNano())
	data.Store(d)
	counter = func() uint64 { return uint64(time.Since(start)) }
}

// Init makes d the clocks' state, read through read at hz counts a
// second, with CLOCK_MONOTONIC starting at zero now; userCounter says
// whether user code can read the counter itself. The wall clock goes on
// from the time it read. It must run before any other goroutine reads
// the clocks (the kernel calls it first thing).
func Init(d *Data, read func() uint64, hz uint64, userCounter bool) {
	adjMu.Lock()
	defer adjMu.Unlock()
	real := Realtime()
	c0 := read()
	d.Counter0.Store(c0)
	d.Hz.Store(hz)
	d.Offset.Store(real)
	d.AdjAt.Store(0)
	d.Slew.Store(0)
	d.Freq.Store(0)
	if userCounter {
		d.Mode.Store(ModeCounter)
	}
	counter = read
	data.Store(d)
}

// Monotonic returns CLOCK_MONOTONIC in nanoseconds.
func Monotonic() int64 {
	d := data.Load()
	return toNanos(counter(), d.Counter0.Load(), d.Hz.Load())
}

// Realtime returns CLOCK_REALTIME in nanoseconds since the Unix epoch.
func Realtime() int64 {
	mono, p := read()
	return realtime(mono, &p)
}

// CoarseTick is the coarse clocks' resolution, what clock_getres reports
// for them: Linux's tick at Debian's HZ=250. CLOCK_MONOTONIC_COARSE is
// CLOCK_MONOTONIC at the last multiple of the tick since its zero, and
// CLOCK_REALTIME_COARSE the wall clock at that moment, as Linux's are
// the time its last tick recorded; this kernel has no periodic tick to
// record one, so it computes the moment (the vDSO the same way:
// VVAR_COARSE_NS in kernel/vdso/c/vdso.h).
const CoarseTick = 4_000_000

// coarse is the last tick at or before monotonic time mono.
func coarse(mono int64) int64 { return mono - mono%CoarseTick }

// MonotonicCoarse returns CLOCK_MONOTONIC_COARSE in nanoseconds.
func MonotonicCoarse() int64 { return coarse(Monotonic()) }

// RealtimeCoarse returns CLOCK_REALTIME_COARSE in nanoseconds since the
// Unix epoch.
func RealtimeCoarse() int64 {
	mono, p := read()
	return realtime(coarse(mono), &p)
}

// read returns monotonic time and the parameters in force then, as one
// consistent reading (see Data).
func read() (int64, params) {
	d := data.Load()
	for {
		s := d.Seq.Load()
		if s&1 != 0 {
			continue
		}
		p := params{d.Offset.Load(), d.AdjAt.Load(), d.Slew.Load(), d.Freq.Load()}
		c := counter()
		if d.Seq.Load() == s {
			return toNanos(c, d.Counter0.Load(), d.Hz.Load()), p
		}
	}
}

// update changes the parameters: fn gets monotonic and real time at the
// moment of the change and parameters that continue the clock from
// there (the adjustment so far folded into the offset, the slew's rest
// still to go), and changes them.
func update(fn func(mono, real int64, p *params)) {
	adjMu.Lock()
	defer adjMu.Unlock()
	d := data.Load()
	d.Seq.Add(1) // a locked instruction: visible before the counter is read
	mono := toNanos(counter(), d.Counter0.Load(), d.Hz.Load())
	old := params{d.Offset.Load(), d.AdjAt.Load(), d.Slew.Load(), d.Freq.Load()}
	real := realtime(mono, &old)
	p := params{offset: real - mono, adjAt: mono, slew: slewLeft(mono-old.adjAt, old.slew), freq: old.freq}
	fn(mono, real, &p)
	d.Offset.Store(p.offset)
	d.AdjAt.Store(p.adjAt)
	d.Slew.Store(p.slew)
	d.Freq.Store(p.freq)
	d.Seq.Add(1)
}

// The arithmetic below is repeated in C in kernel/vdso/c/vdso.c; change
// both together.

const (
	// freqDiv is what Freq is divided by to give ns per ns: ppm << 16.
	freqDiv = 1_000_000 << 16
	// slewDiv: a slew moves the clock 1 ns every 2,000 ns (500 ppm);
	// in Freq's units that is freqDiv/slewDiv.
	slewDiv  = 2000
	slewFreq = freqDiv / slewDiv
)

// toNanos is (c - c0) * 1e9 / hz rounded down; 0 for a counter read
// behind c0 (another CPU's TSC a few cycles behind at boot).
func toNanos(c, c0, hz uint64) int64 {
	if int64(c-c0) < 0 {
		return 0
	}
	hi, lo := bits.Mul64(c-c0, 1e9)
	if hi >= hz {
		return 1<<63 - 1
	}
	q, _ := bits.Div64(hi, lo, hz)
	return int64(q)
}

// mulDivFloor is a*b/d rounded down, for a*|b|/d below 2^63.
func mulDivFloor(a uint64, b int64, d uint64) int64 {
	ub := uint64(b)
	if b < 0 {
		ub = -ub
	}
	hi, lo := bits.Mul64(a, ub)
	q, r := bits.Div64(hi, lo, d)
	if b < 0 {
		if r != 0 {
			q++
		}
		return -int64(q)
	}
	return int64(q)
}

// adjustment is what the slew and the frequency have added el ns after
// they started. While the slew runs, both are one rate and one rounding,
// so the clock's reading (el + adjustment) never decreases as el grows;
// the slew ends exactly when it has added all of slew.
func adjustment(el, slew, freq int64) int64 {
	if el <= 0 {
		return 0
	}
	if slew != 0 {
		mag, rate := uint64(slew), freq+slewFreq
		if slew < 0 {
			mag, rate = -mag, freq-slewFreq
		}
		if hi, lo := bits.Mul64(mag, slewDiv); hi != 0 || uint64(el) < lo {
			return mulDivFloor(uint64(el), rate, freqDiv)
		}
	}
	return slew + mulDivFloor(uint64(el), freq, freqDiv)
}

// slewLeft is what is left of a slew el ns after it started.
func slewLeft(el, slew int64) int64 {
	if el <= 0 || slew == 0 {
		return slew
	}
	step := el / slewDiv
	if slew > 0 {
		return max(slew-step, 0)
	}
	return min(slew+step, 0)
}

// realtime is CLOCK_REALTIME at monotonic time mono under p.
func realtime(mono int64, p *params) int64 {
	return mono + p.offset + adjustment(mono-p.adjAt, p.slew, p.freq)
}
