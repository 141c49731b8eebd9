// Package prof measures what the Go runtime costs the kernel: garbage
// collector accounting from runtime/metrics (this file) and the sampling
// profiler (profile.go) whose samples the host tool bench/hlltax turns
// into the GC / prologue / write-barrier / safety shares.
package prof

import (
	"fmt"
	"io"
	"runtime"
	"runtime/metrics"
	"sort"
	"time"
)

// GCStats is a snapshot of the collector's counters. CPU times are the
// runtime's own estimates (runtime/metrics /cpu/classes), in which the
// total is GOMAXPROCS × wall time.
type GCStats struct {
	When        time.Time
	Cycles      uint64
	Assist      time.Duration // mark assists by allocating goroutines
	Dedicated   time.Duration // background mark workers, dedicated
	Idle        time.Duration // background mark workers in idle time
	Pause       time.Duration // stop-the-world pauses × GOMAXPROCS
	GCTotal     time.Duration
	CPUTotal    time.Duration
	CPUIdle     time.Duration
	LiveHeap    uint64
	HeapGoal    uint64
	AllocBytes  uint64
	AllocObjs   uint64
	Pauses      []time.Duration // pause lengths of the cycles still in the runtime's ring
	PauseHist   *metrics.Float64Histogram
	NumGC       uint32 // MemStats.NumGC, to match Pauses to cycles
	HeapObjects uint64
}

var gcMetrics = []string{
	"/gc/cycles/total:gc-cycles",
	"/cpu/classes/gc/mark/assist:cpu-seconds",
	"/cpu/classes/gc/mark/dedicated:cpu-seconds",
	"/cpu/classes/gc/mark/idle:cpu-seconds",
	"/cpu/classes/gc/pause:cpu-seconds",
	"/cpu/classes/gc/total:cpu-seconds",
	"/cpu/classes/total:cpu-seconds",
	"/cpu/classes/idle:cpu-seconds",
	"/gc/heap/live:bytes",
	"/gc/heap/goal:bytes",
	"/gc/heap/allocs:bytes",
	"/gc/heap/allocs:objects",
	"/sched/pauses/total/gc:seconds",
	"/gc/heap/objects:objects",
}

// ReadGC takes a snapshot. It stops the world briefly (ReadMemStats) for
// the exact pause lengths, so call it at the edges of a measurement.
func ReadGC() GCStats {
	s := make([]metrics.Sample, len(gcMetrics))
	for i, n := range gcMetrics {
		s[i].Name = n
	}
	metrics.Read(s)
	u := func(i int) uint64 {
		if s[i].Value.Kind() == metrics.KindUint64 {
			return s[i].Value.Uint64()
		}
		return 0
	}
	sec := func(i int) time.Duration {
		if s[i].Value.Kind() == metrics.KindFloat64 {
			return time.Duration(s[i].Value.Float64() * 1e9)
		}
		return 0
	}
	g := GCStats{
		When:        time.Now(),
		Cycles:      u(0),
		Assist:      sec(1),
		Dedicated:   sec(2),
		Idle:        sec(3),
		Pause:       sec(4),
		GCTotal:     sec(5),
		CPUTotal:    sec(6),
		CPUIdle:     sec(7),
		LiveHeap:    u(8),
		HeapGoal:    u(9),
		AllocBytes:  u(10),
		AllocObjs:   u(11),
		HeapObjects: u(13),
	}
	if s[12].Value.Kind() == metrics.KindFloat64Histogram {
		g.PauseHist = s[12].Value.Float64Histogram()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	g.NumGC = ms.NumGC
	n := min(int(ms.NumGC), len(ms.PauseNs))
	for i := 0; i < n; i++ {
		g.Pauses = append(g.Pauses, time.Duration(ms.PauseNs[(int(ms.NumGC)-1-i+len(ms.PauseNs))%len(ms.PauseNs)]))
	}
	return g
}

// GCWindow is what the collector did between two snapshots.
type GCWindow struct {
	Wall                                  time.Duration
	Cycles                                uint64
	Assist, Dedicated, Idle, Pause, GCCPU time.Duration
	CPUTotal, CPUIdle                     time.Duration
	AllocBytes, AllocObjs                 uint64
	LiveHeap, HeapGoal                    uint64 // at the end
	MaxPause                              time.Duration
	PauseCount                            int
	PausesExact                           bool // false if more cycles ran than the runtime remembers
	PauseP50, PauseP99                    time.Duration
}

// Window returns the difference between snapshots a (earlier) and b.
func Window(a, b GCStats) GCWindow {
	w := GCWindow{
		Wall:       b.When.Sub(a.When),
		Cycles:     b.Cycles - a.Cycles,
		Assist:     b.Assist - a.Assist,
		Dedicated:  b.Dedicated - a.Dedicated,
		Idle:       b.Idle - a.Idle,
		Pause:      b.Pause - a.Pause,
		GCCPU:      b.GCTotal - a.GCTotal,
		CPUTotal:   b.CPUTotal - a.CPUTotal,
		CPUIdle:    b.CPUIdle - a.CPUIdle,
		AllocBytes: b.AllocBytes - a.AllocBytes,
		AllocObjs:  b.AllocObjs - a.AllocObjs,
		LiveHeap:   b.LiveHeap,
		HeapGoal:   b.HeapGoal,
	}
	// b.Pauses holds the most recent pauses first; the window's are the
	// first NumGC difference of them (each cycle has two pauses in the
	// runtime's accounting, but MemStats records one total per cycle).
	k := int(b.NumGC - a.NumGC)
	w.PausesExact = k <= len(b.Pauses)
	k = min(k, len(b.Pauses))
	p := append([]time.Duration(nil), b.Pauses[:k]...)
	sort.Slice(p, func(i, j int) bool { return p[i] < p[j] })
	w.PauseCount = len(p)
	if len(p) > 0 {
		w.MaxPause = p[len(p)-1]
		w.PauseP50 = p[len(p)/2]
		w.PauseP99 = p[(len(p)*99)/100]
	}
	return w
}

// GCShare is the collector's share of the CPU time that was not idle.
func (w GCWindow) GCShare() float64 {
	busy := w.CPUTotal - w.CPUIdle
	if busy <= 0 {
		return 0
	}
	return float64(w.GCCPU) / float64(busy)
}

// KeyValues writes the window as gc_*=value pairs (the format the host
// tools read from the serial log).
func (w GCWindow) KeyValues(out io.Writer) {
	fmt.Fprintf(out, "gc_cycles=%d gc_cpu_ns=%d gc_assist_ns=%d gc_dedicated_ns=%d gc_idle_ns=%d gc_pause_cpu_ns=%d "+
		"cpu_total_ns=%d cpu_idle_ns=%d gc_share=%.4f gc_max_pause_ns=%d gc_p50_pause_ns=%d gc_p99_pause_ns=%d "+
		"gc_pauses=%d gc_pauses_exact=%t alloc_bytes=%d alloc_objects=%d live_heap=%d heap_goal=%d wall_ns=%d",
		w.Cycles, w.GCCPU.Nanoseconds(), w.Assist.Nanoseconds(), w.Dedicated.Nanoseconds(), w.Idle.Nanoseconds(),
		w.Pause.Nanoseconds(), w.CPUTotal.Nanoseconds(), w.CPUIdle.Nanoseconds(), w.GCShare(),
		w.MaxPause.Nanoseconds(), w.PauseP50.Nanoseconds(), w.PauseP99.Nanoseconds(), w.PauseCount, w.PausesExact,
		w.AllocBytes, w.AllocObjs, w.LiveHeap, w.HeapGoal, w.Wall.Nanoseconds())
}
