package main

// Kernel-resident benchmarks (bench= on the command line): they print
// their results on the console in the formats bench/hlltax and
// bench/gcheadroom read, then the kernel powers off.

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"shortbread/kernel/machine"
	"shortbread/kernel/prof"
	"shortbread/kernel/prof/sampler"
	"shortbread/kernel/workload"
)

func (k *kernel) intOpt(name string, def int) int {
	if v, ok := k.opts[name]; ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			return n
		}
		k.log.Warnf("%s=%q: using %d", name, v, def)
	}
	return def
}

func (k *kernel) hpetAddr() uint64 {
	if k.tables == nil {
		return 0
	}
	h, err := k.tables.HPET()
	if err != nil {
		k.log.Infof("profiler: no HPET (%v); sampling from the timer interrupt", err)
		return 0
	}
	return h.Address.Address
}

// benchHLLTax runs the vnode workload with the sampling profiler on and
// dumps the samples with the GC window for bench/hlltax. It also runs the
// same workload twice without the profiler, around the profiled run, to
// state the profiler's overhead.
func (k *kernel) benchHLLTax() {
	files := k.intOpt("bench.files", 100_000)
	ops := k.intOpt("bench.ops", 400_000)
	hz := k.intOpt("bench.hz", 997) // prime: no aliasing with periodic work
	cpus := machine.NumCPU()
	fs := workload.NewFS(files)
	runtime.GC()
	fs.Run(cpus, ops/10, 1) // warm up
	timed := func(seed uint64) (workload.Result, time.Duration) {
		runtime.GC()
		start := time.Now()
		r := fs.Run(cpus, ops, seed)
		return r, time.Since(start)
	}
	_, base1 := timed(2)
	// Room for twice the expected samples.
	expect := int(float64(hz) * base1.Seconds() * 2)
	s, err := sampler.Start(hz, max(expect, 4096), k.hpetAddr())
	if err != nil {
		k.log.Errorf("hlltax: %v", err)
		return
	}
	start := time.Now()
	r := fs.Run(cpus, ops, 2)
	el := time.Since(start)
	res := s.Stop()
	overhead := k.profilerOverhead(hz)
	extra := map[string]string{
		"bench":             "vfs",
		"bench_files":       strconv.Itoa(files),
		"bench_ops":         strconv.FormatUint(r.Ops, 10),
		"bench_ns":          strconv.FormatInt(el.Nanoseconds(), 10),
		"bench_ops_per_s":   strconv.FormatFloat(float64(r.Ops)/el.Seconds(), 'f', 0, 64),
		"profiler_overhead": strconv.FormatFloat(overhead, 'f', 4, 64),
	}
	res.Dump(os.Stdout, extra)
	for i, n := range res.Counts {
		k.log.Infof("profiler: cpu %d: %d samples, %d dropped (source %s)", i, n, res.Dropped[i], res.Source)
	}
	runtime.KeepAlive(fs)
}

// profileInit starts the sampling profiler if the command line asks for
// it (prof=HZ) and returns the function that stops it and dumps the
// samples for bench/hlltax, so any user workload can be profiled the way
// the kernel-resident benchmarks are. User-mode samples are kept: their
// share is the time the CPUs spent outside the kernel.
func (k *kernel) profileInit() (stop func()) {
	if _, ok := k.opts["prof"]; !ok {
		return func() {}
	}
	hz := k.intOpt("prof", 997)
	// Room for a minute at full rate on every CPU; later samples are
	// counted as dropped.
	s, err := sampler.Start(hz, hz*60, k.hpetAddr())
	if err != nil {
		k.log.Errorf("prof: %v", err)
		return func() {}
	}
	return func() {
		res := s.Stop()
		res.Dump(os.Stdout, map[string]string{"bench": "init"})
		for i, n := range res.Counts {
			k.log.Infof("profiler: cpu %d: %d samples, %d dropped (source %s)", i, n, res.Dropped[i], res.Source)
		}
	}
}

// profilerOverhead times a fixed amount of pure computation on every CPU
// (no allocation, so no GC noise) with and without sampling, alternating
// three times, and returns the relative slowdown of the median.
func (k *kernel) profilerOverhead(hz int) float64 {
	cpus := machine.NumCPU()
	work := func() time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for i := 0; i < cpus; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				x := uint64(i + 1)
				for j := 0; j < 50_000_000; j++ {
					x = x*6364136223846793005 + 1442695040888963407
				}
				overheadSink.Add(x)
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	var with, without []time.Duration
	for i := 0; i < 3; i++ {
		without = append(without, work())
		s, err := sampler.Start(hz, 1<<16, k.hpetAddr())
		if err != nil {
			return 0
		}
		with = append(with, work())
		s.Stop()
	}
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return d[len(d)/2].Seconds()
	}
	return med(with)/med(without) - 1
}

var overheadSink atomic.Uint64

// benchGCHeadroom keeps files vnodes live and runs the same workload with
// the heap allowed to grow to live × (1 + headroom) before each GC
// (GOGC = 100 × headroom), one line per headroom.
func (k *kernel) benchGCHeadroom() {
	files := k.intOpt("bench.files", 100_000)
	ops := k.intOpt("bench.ops", 2_000_000)
	list := k.opts["bench.headroom"]
	if list == "" {
		list = "0.5,1,2,3"
	}
	cpus := machine.NumCPU()
	fs := workload.NewFS(files)
	runtime.GC()
	live := prof.ReadGC().LiveHeap
	fmt.Printf("gcheadroom-begin files=%d ops=%d cpus=%d live_bytes=%d\n", files, ops, cpus, live)
	for _, h := range strings.Split(list, ",") {
		hr, err := strconv.ParseFloat(h, 64)
		if err != nil || hr <= 0 {
			k.log.Warnf("gcheadroom: bad headroom %q", h)
			continue
		}
		old := debug.SetGCPercent(int(hr * 100))
		runtime.GC()
		a := prof.ReadGC()
		start := time.Now()
		r := fs.Run(cpus, ops, 3)
		el := time.Since(start)
		w := prof.Window(a, prof.ReadGC())
		debug.SetGCPercent(old)
		var kv strings.Builder
		w.KeyValues(&kv)
		fmt.Printf("gcheadroom headroom=%s ops=%d ns=%d ops_per_s=%.0f %s\n",
			h, r.Ops, el.Nanoseconds(), float64(r.Ops)/el.Seconds(), kv.String())
	}
	fmt.Println("gcheadroom-end")
	runtime.KeepAlive(fs)
}

// benchGCScale runs the vnode workload (a GC-heavy kernel workload: about
// 380 bytes allocated per operation) with 1, 2, ... NumCPU workers, each
// doing the same number of operations, so a worker count's throughput over
// one worker's is the kernel's speed-up with the collector's costs in it.
// One line per count: throughput and the GC window (cycles, stop-the-world
// pauses, the CPU time of assists, dedicated and idle mark workers), for
// the runtime-on-several-CPUs part of issue 21 (bench/gcscale.sh).
func (k *kernel) benchGCScale() {
	files := k.intOpt("bench.files", 100_000)
	ops := k.intOpt("bench.ops", 200_000) // per worker
	cpus := machine.NumCPU()
	fs := workload.NewFS(files)
	runtime.GC()
	fs.Run(cpus, ops/10, 1) // warm up
	fmt.Printf("gcscale-begin files=%d ops_per_worker=%d cpus=%d gomaxprocs=%d\n", files, ops, cpus, runtime.GOMAXPROCS(0))
	for rep := 0; rep < 3; rep++ {
		for n := 1; n <= cpus; n++ {
			runtime.GC()
			a := prof.ReadGC()
			start := time.Now()
			r := fs.Run(n, ops*n, uint64(4+rep))
			el := time.Since(start)
			w := prof.Window(a, prof.ReadGC())
			var kv strings.Builder
			w.KeyValues(&kv)
			fmt.Printf("gcscale rep=%d workers=%d ops=%d ns=%d ops_per_s=%.0f %s\n",
				rep, n, r.Ops, el.Nanoseconds(), float64(r.Ops)/el.Seconds(), kv.String())
		}
	}
	fmt.Println("gcscale-end")
	runtime.KeepAlive(fs)
}
