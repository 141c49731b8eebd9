package selftest

// Tests of the measurement instruments (issue: the HLL tax): the sampling
// profiler must sample every CPU, and the GC counters must advance.

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"shortbread/kernel/machine"
	"shortbread/kernel/prof"
	"shortbread/kernel/prof/sampler"
)

// HPET is the HPET's physical address, set by the kernel from ACPI before
// the tests run (0: none, the profiler falls back to the timer).
var HPET uint64

func testProfilerEveryCPU() error {
	n := machine.NumCPU()
	const hz = 1000
	s, err := sampler.Start(hz, 4096, HPET)
	if err != nil {
		return err
	}
	// Keep every CPU busy for a while so each has something to sample.
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				spin(10000)
				runtime.Gosched()
			}
		}()
	}
	// Until every CPU has taken a few samples (at least 300 ms), at most
	// 20 s: with 32 vCPUs on a loaded 2-core host a vCPU may run for a
	// few milliseconds in 300, and takes its NMIs only then.
	start := time.Now()
	for time.Since(start) < 20*time.Second {
		time.Sleep(100 * time.Millisecond)
		if time.Since(start) < 300*time.Millisecond {
			continue
		}
		all := true
		for cpu := 0; cpu < n; cpu++ {
			if c, _ := machine.ProfCount(cpu); c < 20 {
				all = false
			}
		}
		if all {
			break
		}
	}
	stop.Store(true)
	wg.Wait()
	r := s.Stop()
	if len(r.Counts) != n {
		return fmt.Errorf("%d sample buffers for %d CPUs", len(r.Counts), n)
	}
	for cpu, c := range r.Counts {
		if c < 10 {
			return fmt.Errorf("CPU %d: %d samples in %v at %d Hz (source %s)", cpu, c, r.Wall.Round(time.Millisecond), hz, r.Source)
		}
	}
	kernelPCs := 0
	for _, smp := range prof.Decode(r.Raw) {
		if runtime.FuncForPC(uintptr(smp.PC)) != nil { // a function of the kernel image

			kernelPCs++
		}
	}
	if kernelPCs < len(r.Raw)/prof.RecordSize/2 {
		return fmt.Errorf("only %d of %d samples are kernel text addresses", kernelPCs, len(r.Raw)/prof.RecordSize)
	}
	if HPET != 0 && r.Source != "nmi-hpet" {
		return fmt.Errorf("HPET present but the source is %s", r.Source)
	}
	return nil
}

func testGCCounters() error {
	a := prof.ReadGC()
	for i := 0; i < 3; i++ {
		heapSink = append(heapSink, make([]byte, 1<<20))
		heapSink = nil
		runtime.GC()
	}
	w := prof.Window(a, prof.ReadGC())
	if w.Cycles < 3 {
		return fmt.Errorf("GC cycles advanced by %d after 3 forced collections", w.Cycles)
	}
	if w.PauseCount < 3 || w.MaxPause <= 0 {
		return fmt.Errorf("%d pauses recorded, longest %v", w.PauseCount, w.MaxPause)
	}
	if w.GCCPU <= 0 || w.AllocBytes < 3<<20 {
		return fmt.Errorf("GC CPU %v, allocated %d bytes", w.GCCPU, w.AllocBytes)
	}
	return nil
}
