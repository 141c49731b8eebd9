package main

// Kernel-resident benchmarks (bench= on the command line): they print
// their results on the console in the formats bench/hlltax and
// bench/gcheadroom read, then the kernel powers off.

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
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
// dumps the samples with the GC window for bench/hlltax.
func (k *kernel) benchHLLTax() {
	files := k.intOpt("bench.files", 100_000)
	ops := k.intOpt("bench.ops", 400_000)
	hz := k.intOpt("bench.hz", 1000)
	cpus := machine.NumCPU()
	fs := workload.NewFS(files)
	runtime.GC()
	fs.Run(cpus, ops/10, 1) // warm up
	// Room for twice the expected samples.
	s, err := sampler.Start(hz, 2*hz*120, k.hpetAddr())
	if err != nil {
		k.log.Errorf("hlltax: %v", err)
		return
	}
	start := time.Now()
	r := fs.Run(cpus, ops, 2)
	el := time.Since(start)
	res := s.Stop()
	extra := map[string]string{
		"bench":           "vfs",
		"bench_files":     strconv.Itoa(files),
		"bench_ops":       strconv.FormatUint(r.Ops, 10),
		"bench_ns":        strconv.FormatInt(el.Nanoseconds(), 10),
		"bench_ops_per_s": strconv.FormatFloat(float64(r.Ops)/el.Seconds(), 'f', 0, 64),
	}
	res.Dump(os.Stdout, extra)
	for i, n := range res.Counts {
		k.log.Infof("profiler: cpu %d: %d samples, %d dropped (source %s)", i, n, res.Dropped[i], res.Source)
	}
	runtime.KeepAlive(fs)
}

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
