package main

import (
	"fmt"
	"image/color"
	"sort"

	"shortbread/bench/internal/plot"
)

// biscuit is Biscuit's throughput relative to Linux as its paper reports
// it (OSDI '18: nginx and redis 10–15% slower, the mail server about
// 10%), drawn beside ours: the middle of each range.
var biscuit = map[string]float64{"redis": 0.875, "nginx": 0.875, "mail": 0.90}

var cpuColours = []color.Color{plot.Blue, plot.Red, color.RGBA{0x2f, 0x8f, 0x3f, 0xff}, color.RGBA{0x90, 0x50, 0xb0, 0xff}}

// ratio is one bar: Shortbread's median throughput over Linux's.
type ratio struct {
	label string // workload and case
	work  string
	cpus  int
	value float64
}

// ratios pairs the throughput results (requests/s, messages/s) of the
// two kernels by workload, case and CPU count: the median of the
// per-repetition ratios where the report has them (the table's numbers),
// else the ratio of the medians (reports from before pairRatios).
func ratios(rep report) []ratio {
	if len(rep.Ratios) > 0 {
		var out []ratio
		for _, r := range rep.Ratios {
			if r.Metric == "requests/s" || r.Metric == "messages/s" {
				out = append(out, ratio{label: r.Workload + " " + r.Case, work: r.Workload, cpus: r.CPUs, value: r.Median})
			}
		}
		sortRatios(out)
		return out
	}
	type key struct {
		w, c string
		n    int
	}
	lin, sb := map[key]float64{}, map[key]float64{}
	var keys []key
	for _, r := range rep.Results {
		if r.Metric != "requests/s" && r.Metric != "messages/s" {
			continue
		}
		k := key{r.Workload, r.Case, r.CPUs}
		switch r.Kernel {
		case "linux":
			lin[k] = r.Median
		case "shortbread":
			sb[k] = r.Median
			keys = append(keys, k)
		}
	}
	var out []ratio
	for _, k := range keys {
		if l := lin[k]; l > 0 {
			out = append(out, ratio{label: k.w + " " + k.c, work: k.w, cpus: k.n, value: sb[k] / l})
		}
	}
	sortRatios(out)
	return out
}

func sortRatios(out []ratio) {
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].label != out[j].label {
			return out[i].label < out[j].label
		}
		return out[i].cpus < out[j].cpus
	})
}

// ratioPlot draws the ratios as horizontal bars, one per case and CPU
// count, a line at 1 (Linux) and Biscuit's ratio for the workload as a
// black tick.
func ratioPlot(rep report) ([]byte, error) {
	rs := ratios(rep)
	if len(rs) == 0 {
		return nil, fmt.Errorf("no throughput measured on both kernels")
	}
	const left, right, top, barH, gap = 180, 110, 50, 12, 3
	maxV := 1.2
	for _, r := range rs {
		maxV = max(maxV, r.value*1.1)
	}
	w := 760
	h := top + len(rs)*(barH+gap) + 60
	c := plot.New(w, h)
	x := func(v float64) int { return left + int(v/maxV*float64(w-left-right)) }
	what := "throughput"
	if rep.Params.Mode == "wire" {
		what = "throughput over the wire (" + rep.Params.NIC + ")"
	}
	c.Text(10, 20, fmt.Sprintf("Shortbread / Linux %s, %s, commit %s (bars: CPUs; black ticks: Biscuit's paper)", what, rep.Date[:10], rep.Commit), plot.Ink)
	for v := 0.0; v <= maxV; v += 0.25 {
		c.Line(x(v), top-5, x(v), h-45, plot.Grid)
		c.Text(x(v)-10, h-30, fmt.Sprintf("%.2f", v), plot.Ink)
	}
	c.Line(x(1), top-5, x(1), h-45, plot.Ink)
	y := top
	last := ""
	for _, r := range rs {
		if r.label != last {
			c.Text(10, y+barH-2, r.label, plot.Ink)
			last = r.label
		}
		col := cpuColours[(r.cpus-1)%len(cpuColours)]
		c.Box(x(0), y, x(r.value), y+barH, col)
		c.Text(x(r.value)+4, y+barH-2, fmt.Sprintf("%.2f (%d CPU)", r.value, r.cpus), plot.Ink)
		if b, ok := biscuit[r.work]; ok {
			c.Line(x(b), y-1, x(b), y+barH+1, plot.Ink)
		}
		y += barH + gap
	}
	return c.PNG()
}
