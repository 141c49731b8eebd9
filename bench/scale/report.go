package main

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// workload describes one workload of user/bench/scale.c for the report.
type workload struct {
	what string // what one operation is
	unit string // its name in the rate
}

// workloadInfo holds every workload scale.c knows, in the report's order
// (workloadOrder).
var workloadInfo = map[string]workload{
	"spin":          {"a loop in user space that never enters the kernel: its speed-up is the parallel CPU the host gave the guest, the control for every other row", "k-loops/s"},
	"getppid":       {"getppid(): a system-call round trip", "calls/s"},
	"fault":         {"mmap 64 pages, write one byte to each, munmap; processes", "faults/s"},
	"fault_mt":      {"the same from threads sharing one address space", "faults/s"},
	"malloc_mt":     {"threads malloc, touch and free 256 KiB (musl: mmap+munmap)", "blocks/s"},
	"files_private": {"create, write 4 KiB, close, unlink the file 16 before; a directory per process", "files/s"},
	"files_shared":  {"the same, every process in one directory", "files/s"},
	"files_mt":      {"the same from threads, a directory per thread", "files/s"},
	"read_mt":       {"threads pread 1 byte from one small tmpfs file, a descriptor each (the descriptor look-up under every CPU)", "reads/s"},
	"lookup":        {"stat and open+close of one 8-component path (/tmp/scale.PID/tree/usr/share/doc/pkg/file), shared by all", "lookups/s"},
	"spawn":         {"fork + execve + exit + waitpid", "spawns/s"},
	"pipe_local":    {"1-byte pipe ping-pong, both ends pinned to one CPU", "round trips/s"},
	"pipe_cross":    {"the same with the ends pinned to neighbouring CPUs", "round trips/s"},
	"futex_cross":   {"FUTEX_WAKE/WAIT hand-off between two threads on neighbouring CPUs", "round trips/s"},
	"epoll":         {"a byte over one of 4 pipes to an epoll_wait loop, answered on a 5th", "round trips/s"},
	"unix":          {"1-byte ping-pong over an AF_UNIX stream socketpair", "round trips/s"},
	"tcp":           {"1-byte ping-pong over TCP 127.0.0.1 (TCP_NODELAY)", "round trips/s"},
}

var workloadOrder = []string{"spin", "getppid", "fault", "fault_mt", "malloc_mt", "files_private", "files_shared", "files_mt",
	"read_mt", "lookup", "spawn", "pipe_local", "pipe_cross", "futex_cross", "epoll", "unix", "tcp"}

func workloadNames() []string { return slices.Clone(workloadOrder) }

// Sample is one run of one workload in one boot.
type Sample struct {
	Kernel   string  `json:"kernel"`
	CPUs     int     `json:"cpus"`
	Rep      int     `json:"rep"`
	Workload string  `json:"workload"`
	Workers  int     `json:"workers"`
	Ops      float64 `json:"ops"`
	MS       float64 `json:"ms"`
	Rate     float64 `json:"ops_per_s"`
	PinMiss  int     `json:"pin_miss"`
	TotalMS  float64 `json:"total_ms,omitempty"` // the whole run, set-up and tear-down included
}

// Boot is one guest boot.
type Boot struct {
	Kernel        string   `json:"kernel"`
	CPUs          int      `json:"cpus"`
	Rep           int      `json:"rep"`
	WallSeconds   float64  `json:"wall_seconds"`
	KernelVersion string   `json:"kernel_version"`
	LoadBefore    string   `json:"host_load_before"` // /proc/loadavg: other work on the host slows TCG
	LoadAfter     string   `json:"host_load_after"`
	Errors        []string `json:"errors,omitempty"`
}

// Report is what a run records.
type Report struct {
	Date        string   `json:"date"`
	Commit      string   `json:"commit"`
	Dirty       bool     `json:"dirty"`
	QEMU        string   `json:"qemu"`
	QEMUVersion string   `json:"qemu_version"`
	LinuxBuild  string   `json:"linux_build"`
	HostCPUs    int      `json:"host_cpus"`
	UptimeStart string   `json:"uptime_start"`
	UptimeEnd   string   `json:"uptime_end"`
	Long        bool     `json:"long"`
	Reps        int      `json:"reps"`
	MS          int      `json:"ms_per_run"`
	CPUs        []int    `json:"cpus"`
	Kernels     []string `json:"kernels"`
	Workloads   []string `json:"workloads"`
	FS          string   `json:"fs,omitempty"` // where the file workloads work: "" (tmpfs) or "ext4"
	Boots       []Boot   `json:"boots"`
	Samples     []Sample `json:"samples"`
}

// Parse reads one boot's console output: the "scale ..." result lines,
// "scale-error" lines and the guest's "@@info" lines.
func Parse(out, kernel string, cpus, rep int) (samples []Sample, version string, errs []string) {
	for _, line := range strings.Split(strings.ReplaceAll(out, "\r", ""), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "@@info kernel "):
			version = strings.TrimPrefix(line, "@@info kernel ")
		case strings.HasPrefix(line, "@@info cpus "):
			if n, _ := strconv.Atoi(strings.TrimPrefix(line, "@@info cpus ")); n != cpus {
				errs = append(errs, fmt.Sprintf("guest sees %d CPUs, want %d", n, cpus))
			}
		case strings.HasPrefix(line, "scale-error "):
			errs = append(errs, line)
		case strings.HasPrefix(line, "scale "):
			s, err := parseResult(line)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			if s.CPUs != cpus {
				errs = append(errs, fmt.Sprintf("%q: the guest has %d CPUs", line, cpus))
				continue
			}
			s.Kernel, s.Rep = kernel, rep
			samples = append(samples, s)
		}
	}
	return samples, version, errs
}

// parseResult reads "scale workload=W workers=N cpus=C ms=T ops=K
// ops_per_s=R pin_miss=M [total_ms=U]"; every field but the last must be
// there and make sense.
func parseResult(line string) (Sample, error) {
	kv := map[string]string{}
	for _, f := range strings.Fields(line)[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return Sample{}, fmt.Errorf("bad result line %q", line)
		}
		kv[k] = v
	}
	var s Sample
	var bad []string
	num := func(k string) float64 {
		v, err := strconv.ParseFloat(kv[k], 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			bad = append(bad, k)
		}
		return v
	}
	s.Workload = kv["workload"]
	if _, ok := workloadInfo[s.Workload]; !ok {
		bad = append(bad, "workload")
	}
	s.Workers, s.CPUs, s.PinMiss = int(num("workers")), int(num("cpus")), int(num("pin_miss"))
	s.MS, s.Ops, s.Rate = num("ms"), num("ops"), num("ops_per_s")
	if _, ok := kv["total_ms"]; ok {
		s.TotalMS = num("total_ms")
	}
	if s.Workers < 1 || s.CPUs < 1 || s.MS <= 0 {
		bad = append(bad, "workers/cpus/ms")
	}
	if len(bad) > 0 {
		return Sample{}, fmt.Errorf("result line %q: bad %s", line, strings.Join(bad, ", "))
	}
	return s, nil
}

// stat is a median with its range.
type stat struct {
	Median, Min, Max float64
	N                int
}

func summarize(v []float64) stat {
	if len(v) == 0 {
		return stat{}
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stat{med, s[0], s[len(s)-1], len(s)}
}

// Cell keys the matrix: a workload on a kernel at a CPU count with a
// number of workers.
type cell struct {
	kernel, workload string
	cpus, workers    int
}

// Matrix is the run's figures, derived from the samples.
type Matrix struct {
	rates map[cell][]float64
	// speed-ups of cpus workers over one in the same boot (workers = cpus)
	speedups map[cell][]float64
	// the same divided by the spin control's speed-up in that boot
	normalized map[cell][]float64
}

func NewMatrix(samples []Sample) *Matrix {
	m := &Matrix{rates: map[cell][]float64{}, speedups: map[cell][]float64{}, normalized: map[cell][]float64{}}
	type boot struct {
		kernel, workload string
		cpus, rep        int
	}
	one := map[boot]float64{}
	for _, s := range samples {
		m.rates[cell{s.Kernel, s.Workload, s.CPUs, s.Workers}] = append(m.rates[cell{s.Kernel, s.Workload, s.CPUs, s.Workers}], s.Rate)
		if s.Workers == 1 {
			one[boot{s.Kernel, s.Workload, s.CPUs, s.Rep}] = s.Rate
		}
	}
	type speedup struct {
		boot boot
		v    float64
	}
	var ups []speedup
	control := map[boot]float64{} // the spin workload's speed-up per boot
	for _, s := range samples {
		if s.Workers == 1 || s.Workers != s.CPUs {
			continue
		}
		b := boot{s.Kernel, s.Workload, s.CPUs, s.Rep}
		if r1 := one[b]; r1 > 0 {
			ups = append(ups, speedup{b, s.Rate / r1})
			if s.Workload == "spin" {
				control[boot{s.Kernel, "", s.CPUs, s.Rep}] = s.Rate / r1
			}
		}
	}
	for _, u := range ups {
		c := cell{u.boot.kernel, u.boot.workload, u.boot.cpus, u.boot.cpus}
		m.speedups[c] = append(m.speedups[c], u.v)
		if sp := control[boot{u.boot.kernel, "", u.boot.cpus, u.boot.rep}]; sp > 0 {
			m.normalized[c] = append(m.normalized[c], u.v/sp)
		}
	}
	return m
}

// Normalized is Speedup divided by the spin control's speed-up in the
// same boot: the share of the parallel CPU time the host gave that the
// workload turned into throughput (1: as well as a loop that never enters
// the kernel).
func (m *Matrix) Normalized(kernel, workload string, cpus int) stat {
	return summarize(m.normalized[cell{kernel, workload, cpus, cpus}])
}

// Rate is the throughput of workers workers in a cpus-CPU guest.
func (m *Matrix) Rate(kernel, workload string, cpus, workers int) stat {
	return summarize(m.rates[cell{kernel, workload, cpus, workers}])
}

// Speedup is the throughput of one worker per CPU over one worker's, in
// the same boot.
func (m *Matrix) Speedup(kernel, workload string, cpus int) stat {
	return summarize(m.speedups[cell{kernel, workload, cpus, cpus}])
}

// Verdict says how Shortbread's speed-up at cpus CPUs compares: "" when it
// scales at least about as well as Linux.
func (m *Matrix) Verdict(workload string, cpus int) string {
	s, l := m.Speedup("shortbread", workload, cpus), m.Speedup("linux", workload, cpus)
	switch {
	case workload == "spin":
		return "(the control)"
	case s.N == 0:
		return ""
	case s.Median < 0.95:
		return "**slower with more workers**"
	case l.N > 0 && s.Median < 0.9*l.Median:
		return "scales less than Linux"
	}
	return ""
}

func num(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + "M"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	case v >= 1000:
		return strconv.FormatFloat(v/1e3, 'f', 2, 64) + "k"
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// rateCell is "median (±half the range as % of the median)".
func rateCell(s stat) string {
	if s.N == 0 {
		return "–"
	}
	if s.N == 1 || s.Median == 0 {
		return num(s.Median)
	}
	return fmt.Sprintf("%s ±%.0f%%", num(s.Median), 50*(s.Max-s.Min)/s.Median)
}

// factorCell is "median× [min–max]".
func factorCell(s stat) string {
	if s.N == 0 {
		return "–"
	}
	if s.N == 1 {
		return fmt.Sprintf("%.2f×", s.Median)
	}
	return fmt.Sprintf("%.2f× [%.2f–%.2f]", s.Median, s.Min, s.Max)
}

func medianCell(s stat) string {
	if s.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", s.Median)
}

func ratio(a, b stat) string {
	if a.N == 0 || b.N == 0 || b.Median == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", a.Median/b.Median)
}

func has(list []string, s string) bool { return slices.Contains(list, s) }

// Markdown renders the report: settings, the speed-up table, the
// throughput table, the boots.
func Markdown(rep *Report, plotFile string) []byte {
	m := NewMatrix(rep.Samples)
	multi := []int{} // CPU counts with more than one worker
	for _, c := range rep.CPUs {
		if c > 1 {
			multi = append(multi, c)
		}
	}
	both := has(rep.Kernels, "shortbread") && has(rep.Kernels, "linux")
	var b bytes.Buffer
	date := rep.Date
	if len(date) >= 10 {
		date = date[:10]
	}
	fmt.Fprintf(&b, "# Scaling with CPUs, %s, commit %s", date, rep.Commit)
	if rep.FS != "" {
		fmt.Fprintf(&b, ", file workloads on %s", rep.FS)
	}
	if rep.Dirty {
		b.WriteString(" (with uncommitted changes)")
	}
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "`make bench-scale` (bench/scale, workloads in user/bench/scale.c). Kernels: %s", strings.Join(rep.Kernels, ", "))
	if rep.LinuxBuild != "" && has(rep.Kernels, "linux") {
		fmt.Fprintf(&b, " (Linux: %s)", rep.LinuxBuild)
	}
	fmt.Fprintf(&b, ". QEMU: %s; `%s`. Host: %d CPUs, shared with other work: `uptime` at the start `%s`, at the end `%s`.\n\n",
		rep.QEMUVersion, rep.QEMU, rep.HostCPUs, rep.UptimeStart, rep.UptimeEnd)
	cpus := make([]string, len(rep.CPUs))
	for i, c := range rep.CPUs {
		cpus[i] = strconv.Itoa(c)
	}
	fmt.Fprintf(&b, "Each workload ran for %d ms with 1 worker and with one worker per CPU, in %d boots per kernel and CPU count (%s CPUs, kernels alternating)%s. ",
		rep.MS, rep.Reps, strings.Join(cpus, ", "), map[bool]string{true: ", `-long`"}[rep.Long])
	b.WriteString("Rates are the total over the workers; medians over the boots, ± half the range as a share of the median; " +
		"speed-ups are N workers over 1 in the same boot, median [min–max]. " +
		"QEMU is TCG, and on a shared host (see the load averages and the spin control) rates are slow and noisy in absolute terms: read the speed-ups and the ratios within this run.\n\n")

	if len(multi) > 0 {
		b.WriteString("## Speed-up: N workers over 1, in an N-CPU guest\n\n| workload |")
		for _, c := range multi {
			fmt.Fprintf(&b, " Shortbread %d CPUs | Linux %d CPUs |", c, c)
		}
		spin := has(rep.Workloads, "spin")
		if spin {
			for _, c := range multi {
				fmt.Fprintf(&b, " Shortbread ÷ spin %d CPUs | Linux ÷ spin %d CPUs |", c, c)
			}
		}
		if both {
			b.WriteString(" Shortbread/Linux, 1 worker | Shortbread/Linux, N workers | Shortbread |")
		}
		b.WriteString("\n|---|")
		b.WriteString(strings.Repeat("---:|---:|", len(multi)))
		if spin {
			b.WriteString(strings.Repeat("---:|---:|", len(multi)))
		}
		if both {
			b.WriteString("---:|---:|---|")
		}
		b.WriteString("\n")
		top := multi[len(multi)-1]
		for _, w := range rep.Workloads {
			fmt.Fprintf(&b, "| %s |", w)
			for _, c := range multi {
				fmt.Fprintf(&b, " %s | %s |", factorCell(m.Speedup("shortbread", w, c)), factorCell(m.Speedup("linux", w, c)))
			}
			if spin {
				for _, c := range multi {
					fmt.Fprintf(&b, " %s | %s |", medianCell(m.Normalized("shortbread", w, c)), medianCell(m.Normalized("linux", w, c)))
				}
			}
			if both {
				var v []string
				for _, c := range multi {
					s := m.Verdict(w, c)
					switch {
					case w == "spin" || len(multi) == 1 && s != "":
						v = append(v, s)
					case s != "":
						v = append(v, fmt.Sprintf("%s (%d CPUs)", s, c))
					}
				}
				v = slices.Compact(v)
				fmt.Fprintf(&b, " %s | %s | %s |", ratio(m.Rate("shortbread", w, top, 1), m.Rate("linux", w, top, 1)),
					ratio(m.Rate("shortbread", w, top, top), m.Rate("linux", w, top, top)), strings.Join(v, "; "))
			}
			b.WriteString("\n")
		}
		if has(rep.Workloads, "spin") {
			fmt.Fprintf(&b, "\n**Control**: `spin` never enters the kernel, so its speed-up is the parallel CPU time the host gave the guest:")
			for _, k := range rep.Kernels {
				for _, c := range multi {
					fmt.Fprintf(&b, " %s %d CPUs %s;", k, c, factorCell(m.Speedup(k, "spin", c)))
				}
			}
			b.WriteString(" where it is well below N, the host had no N free cores and no row can be read as the kernel's scaling. " +
				"The ÷ spin columns divide each boot's speed-up by the control's in that boot (median over boots): 1 means the workload turned the parallel time the host gave into throughput as well as the loop did.\n")
		}
		if both {
			fmt.Fprintf(&b, "\nThe ratio columns are at %d CPUs (above 1: Shortbread does more). The last column flags a median speed-up below 0.95× (more workers get less done) or below 90%% of Linux's.\n", top)
		}
		if plotFile != "" {
			fmt.Fprintf(&b, "\n![speed-up per workload](%s)\n", plotFile)
		}
		b.WriteString("\n")
	}

	b.WriteString("## Throughput\n\n| workload | unit |")
	type col struct {
		kernel, label string
		cpus, workers int
	}
	var cols []col
	for _, k := range rep.Kernels {
		for _, c := range rep.CPUs {
			cols = append(cols, col{k, fmt.Sprintf("%s %d CPU ×1", k, c), c, 1})
			if c > 1 {
				cols = append(cols, col{k, fmt.Sprintf("%s %d CPU ×%d", k, c, c), c, c})
			}
		}
	}
	for _, c := range cols {
		fmt.Fprintf(&b, " %s |", c.label)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---:|", len(cols)) + "\n")
	for _, w := range rep.Workloads {
		fmt.Fprintf(&b, "| %s | %s |", w, workloadInfo[w].unit)
		for _, c := range cols {
			fmt.Fprintf(&b, " %s |", rateCell(m.Rate(c.kernel, w, c.cpus, c.workers)))
		}
		b.WriteString("\n")
	}
	if len(multi) > 0 {
		b.WriteString("\nN workers in an N-CPU guest against 1 worker in the 1-CPU guest (what the extra CPUs bring, SMP overheads included):")
		for _, k := range rep.Kernels {
			for _, c := range multi {
				fmt.Fprintf(&b, "\n- %s, %d CPUs:", k, c)
				for i, w := range rep.Workloads {
					sep := ","
					if i == 0 {
						sep = ""
					}
					fmt.Fprintf(&b, "%s %s %s", sep, w, ratio(m.Rate(k, w, c, c), m.Rate(k, w, 1, 1)))
				}
			}
		}
		b.WriteString("\n")
	}

	b.WriteString("\n## Workloads\n\n")
	for _, w := range rep.Workloads {
		fmt.Fprintf(&b, "- `%s`: %s.\n", w, workloadInfo[w].what)
	}
	miss := map[string]int{}
	for _, s := range rep.Samples {
		miss[s.Kernel] += s.PinMiss
	}
	b.WriteString("\nPinned workloads check at the end that their threads are on the CPU they asked for (sched_setaffinity); threads that were not:")
	for _, k := range rep.Kernels {
		fmt.Fprintf(&b, " %s %d;", k, miss[k])
	}
	b.WriteString(" (a kernel that does not honour affinity makes `pipe_local` and `pipe_cross` the same workload).\n")

	b.WriteString("\n## Boots\n\nWall time, the host's load average before → after, and the run that took longest from start to exit when it took over twice its measured time:")
	nerr := 0
	for i, bt := range rep.Boots {
		sep := ";"
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&b, "%s %s %d CPU #%d %.0f s (%s → %s%s)", sep, bt.Kernel, bt.CPUs, bt.Rep, bt.WallSeconds, bt.LoadBefore, bt.LoadAfter, slowest(rep.Samples, bt))
		nerr += len(bt.Errors)
	}
	b.WriteString(".\n")
	if nerr > 0 {
		fmt.Fprintf(&b, "\n**%d errors** (the JSON file's boots[].errors):\n\n", nerr)
		for _, bt := range rep.Boots {
			for _, e := range bt.Errors {
				if strings.HasPrefix(e, "last output") {
					continue
				}
				fmt.Fprintf(&b, "- %s %d CPU #%d: %s\n", bt.Kernel, bt.CPUs, bt.Rep, e)
			}
		}
	}
	return b.Bytes()
}

// slowest names the boot's run that took longest from start to exit, if
// set-up and tear-down made it take more than twice its measured time.
func slowest(samples []Sample, b Boot) string {
	var worst Sample
	for _, s := range samples {
		if s.Kernel == b.Kernel && s.CPUs == b.CPUs && s.Rep == b.Rep && s.TotalMS > worst.TotalMS {
			worst = s
		}
	}
	if worst.TotalMS <= 2*worst.MS {
		return ""
	}
	return fmt.Sprintf("; %s ×%d %.1f s", worst.Workload, worst.Workers, worst.TotalMS/1e3)
}
