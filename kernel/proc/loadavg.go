package proc

// /proc/loadavg: the load averages Linux's calc_load keeps, from the
// same sample every 5 seconds (threads runnable or running, plus those
// in uninterruptible sleep: none here, see runnableThreads), decayed in
// the same fixed point (FSHIFT 11, EXP_1/5/15 = 1884, 2014, 2037), so
// uptime, top and w read the numbers Linux's formula gives.

import (
	"fmt"
	"sync"
	"time"
)

const (
	fshift  = 11
	fixed1  = 1 << fshift
	loadExp = 5 * time.Second
)

var loadExps = [3]uint64{1884, 2014, 2037} // 1, 5 and 15 minutes

var (
	loadMu   sync.Mutex
	avenrun  [3]uint64 // protected by loadMu
	loadOnce sync.Once
)

// calcLoad decays one average toward active (both fixed point), as
// Linux's calc_load does, rounding up while the load grows.
func calcLoad(load, exp, active uint64) uint64 {
	n := load*exp + active*(fixed1-exp)
	if active >= load {
		n += fixed1 - 1
	}
	return n / fixed1
}

// sampleLoad folds one sample of n active threads into the averages.
func sampleLoad(n int) {
	active := uint64(n) * fixed1
	loadMu.Lock()
	for i, e := range loadExps {
		avenrun[i] = calcLoad(avenrun[i], e, active)
	}
	loadMu.Unlock()
}

// StartLoadAverage starts the 5-second sampler.
func StartLoadAverage() {
	loadOnce.Do(func() {
		go func() {
			for range time.Tick(loadExp) {
				running, blocked := runnableThreads()
				sampleLoad(running + blocked)
			}
		}()
	})
}

// ProcLoadavg is /proc/loadavg: the three averages with two decimals,
// runnable/total threads, and the last process ID handed out.
func ProcLoadavg() []byte {
	loadMu.Lock()
	a := avenrun
	loadMu.Unlock()
	running, _ := runnableThreads()
	f := func(x uint64) (uint64, uint64) {
		x += fixed1 / 200 // round to two decimals, as loadavg_proc_show does
		return x >> fshift, (x & (fixed1 - 1)) * 100 >> fshift
	}
	i1, f1 := f(a[0])
	i5, f5 := f(a[1])
	i15, f15 := f(a[2])
	return fmt.Appendf(nil, "%d.%02d %d.%02d %d.%02d %d/%d %d\n", i1, f1, i5, f5, i15, f15,
		running, len(allThreads()), lastPID.Load())
}
