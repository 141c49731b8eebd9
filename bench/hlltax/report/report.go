// Package report turns profiler samples and an instruction classification
// into the Biscuit-style table of the high-level-language tax (the share
// of non-idle kernel CPU time in GC, prologues, write barriers and safety
// checks) and into a pprof profile.
package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"shortbread/bench/hlltax/classify"
	"shortbread/bench/hlltax/samples"
)

// Symbolizer classifies a PC and names its function; *classify.Map is
// one. A Symbolizer that also has a Frames method (as *classify.Map does)
// gives the profile inlined frames and file:line.
type Symbolizer interface {
	Class(pc uint64) (classify.Class, string)
}

// Framer is the optional source of file:line and inlined frames.
type Framer interface {
	Frames(pc uint64) []classify.Frame
}

// BlockInfo is the optional source of basic-block leaders, for the
// sampling-skew check.
type BlockInfo interface {
	IsLeader(pc uint64) bool // pc starts a basic block
	LeaderFraction() float64 // share of the text's instructions that start one
}

// Table is the result for one section.
type Table struct {
	Meta   map[string]string
	Source string
	Hz     int
	CPUs   int
	NS     int64

	Total  int // all samples
	Idle   int // idle thread (whether or not interrupts were off)
	User   int // user mode, not idle
	Kernel int // neither idle nor user: the denominator of the shares

	ByClass      [classify.NumClasses]int // kernel samples per class
	IRQOff       int                      // kernel samples with interrupts off
	MachineLayer int                      // kernel samples in runtime.sb* functions
	Unknown      int                      // kernel samples outside every function

	PerCPU []CPUCount  // by CPU index
	Top    []FuncCount // kernel samples per function and class, most first

	// Sampling-skew check (with a BlockInfo): kernel samples whose PC
	// starts a basic block, and the share of such instructions in the
	// text. AtLeader is -1 without a BlockInfo.
	AtLeader       int
	LeaderFraction float64
}

// CPUCount is one CPU's samples.
type CPUCount struct {
	CPU                       int
	Total, Idle, User, Kernel int
}

// FuncCount is the kernel samples of one function in one class.
type FuncCount struct {
	Func    string
	Class   classify.Class
	Samples int
}

// Compute builds the table of one section.
func Compute(sym Symbolizer, sec *samples.Section) *Table {
	t := &Table{Meta: sec.Meta, Source: sec.Source(), Hz: sec.Hz(), CPUs: sec.CPUs(), NS: sec.NS()}
	cpus := map[int]*CPUCount{}
	type key struct {
		fn string
		cl classify.Class
	}
	funcs := map[key]int{}
	bi, _ := sym.(BlockInfo)
	t.AtLeader = -1
	if bi != nil {
		t.AtLeader = 0
		t.LeaderFraction = bi.LeaderFraction()
	}
	for _, s := range sec.Samples {
		t.Total++
		c := cpus[int(s.CPU)]
		if c == nil {
			c = &CPUCount{CPU: int(s.CPU)}
			cpus[int(s.CPU)] = c
		}
		c.Total++
		switch {
		case s.Idle():
			t.Idle++
			c.Idle++
			continue
		case s.User():
			t.User++
			c.User++
			continue
		}
		t.Kernel++
		c.Kernel++
		if s.IRQOff() {
			t.IRQOff++
		}
		if bi != nil && bi.IsLeader(s.PC) {
			t.AtLeader++
		}
		cl, fn := sym.Class(s.PC)
		t.ByClass[cl]++
		switch {
		case fn == "":
			t.Unknown++
			fn = unknownFunc
		case classify.IsMachineLayer(fn):
			t.MachineLayer++
		}
		funcs[key{fn, cl}]++
	}
	for _, c := range cpus {
		t.PerCPU = append(t.PerCPU, *c)
	}
	sort.Slice(t.PerCPU, func(i, j int) bool { return t.PerCPU[i].CPU < t.PerCPU[j].CPU })
	for k, n := range funcs {
		t.Top = append(t.Top, FuncCount{Func: k.fn, Class: k.cl, Samples: n})
	}
	sort.Slice(t.Top, func(i, j int) bool {
		a, b := t.Top[i], t.Top[j]
		if a.Samples != b.Samples {
			return a.Samples > b.Samples
		}
		if a.Func != b.Func {
			return a.Func < b.Func
		}
		return a.Class < b.Class
	})
	return t
}

const unknownFunc = "[outside kernel text]"

// SkewWarn is the share of samples at block starts, in percent, above
// which the table warns that the sampler only sees block boundaries.
const SkewWarn = 80.0

// Share returns the percentage of kernel samples in class c.
func (t *Table) Share(c classify.Class) float64 { return pct(t.ByClass[c], t.Kernel) }

// Tax returns the percentage of kernel samples in GC, prologues, write
// barriers and safety checks together.
func (t *Table) Tax() float64 { return pct(t.TaxSamples(), t.Kernel) }

// TaxSamples is the number of kernel samples in the four tax classes.
func (t *Table) TaxSamples() int {
	return t.ByClass[classify.GC] + t.ByClass[classify.Prologue] + t.ByClass[classify.WriteBarrier] + t.ByClass[classify.Safety]
}

// CI95 returns the half-width, in percentage points, of the 95% normal
// confidence interval of a share of n out of the kernel samples (samples
// are treated as independent draws).
func (t *Table) CI95(n int) float64 {
	if t.Kernel == 0 {
		return 0
	}
	p := float64(n) / float64(t.Kernel)
	return 100 * 1.96 * math.Sqrt(p*(1-p)/float64(t.Kernel))
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

var classLabels = map[classify.Class]string{
	classify.GC:           "GC",
	classify.Prologue:     "function prologues (stack checks)",
	classify.WriteBarrier: "write barriers",
	classify.Safety:       "safety checks (bounds, nil, divide, shift, type)",
	classify.Other:        "other",
}

// knownKeys are the begin-line keys shown in the heading, not in the
// metrics list.
var knownKeys = map[string]bool{"hz": true, "source": true, "cpus": true, "ns": true}

// WriteMarkdown prints the table; top limits the function list (0: none).
func (t *Table) WriteMarkdown(w io.Writer, title string, top int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", title)
	fmt.Fprintf(&b, "source %s, %d Hz per CPU, %d CPUs, window %.3f s\n\n", orDash(t.Source), t.Hz, t.CPUs, float64(t.NS)/1e9)
	fmt.Fprintf(&b, "| share of non-idle kernel time | samples | %% | ±95%% |\n|---|---:|---:|---:|\n")
	row := func(name string, n int) {
		fmt.Fprintf(&b, "| %s | %d | %.2f%% | %.2f |\n", name, n, pct(n, t.Kernel), t.CI95(n))
	}
	for _, c := range []classify.Class{classify.GC, classify.Prologue, classify.WriteBarrier, classify.Safety} {
		row(classLabels[c], t.ByClass[c])
	}
	row("**high-level-language tax**", t.TaxSamples())
	row(classLabels[classify.Other], t.ByClass[classify.Other])
	fmt.Fprintf(&b, "| **kernel samples** | %d | 100%% | |\n\n", t.Kernel)

	fmt.Fprintf(&b, "%d samples: %d idle, %d user, %d kernel; of the kernel samples %d (%.2f%%) with interrupts off, "+
		"%d (%.2f%%) in the machine layer (runtime.sb*, counted as other), %d outside the kernel text.\n\n",
		t.Total, t.Idle, t.User, t.Kernel, t.IRQOff, pct(t.IRQOff, t.Kernel),
		t.MachineLayer, pct(t.MachineLayer, t.Kernel), t.Unknown)
	if t.AtLeader >= 0 && t.Kernel > 0 {
		share := pct(t.AtLeader, t.Kernel)
		fmt.Fprintf(&b, "Sampling skew check: %.1f%% of the kernel samples are at the first instruction of a basic block, "+
			"against %.1f%% of the kernel's instructions.", share, 100*t.LeaderFraction)
		if share > SkewWarn {
			b.WriteString(" **Warning:** the sampler sees almost only block starts, as under QEMU TCG, which takes " +
				"interrupts only between translated blocks: prologues (a call starts a block at the stack check) are " +
				"over-counted and in-block checks under-counted. Measure under KVM or on hardware.")
		}
		b.WriteString("\n\n")
	}
	if v, ok := t.Meta["samples"]; ok {
		fmt.Fprintf(&b, "The kernel wrote %s samples", v)
		if d, ok := t.Meta["dropped"]; ok {
			fmt.Fprintf(&b, " and dropped %s", d)
		}
		b.WriteString(".\n\n")
	}

	b.WriteString("| CPU | samples | idle | user | kernel |\n|---:|---:|---:|---:|---:|\n")
	for _, c := range t.PerCPU {
		fmt.Fprintf(&b, "| %d | %d | %d | %d | %d |\n", c.CPU, c.Total, c.Idle, c.User, c.Kernel)
	}
	b.WriteString("\n")

	if top > 0 && len(t.Top) > 0 {
		b.WriteString("| function | class | samples | % of kernel |\n|---|---|---:|---:|\n")
		for i, f := range t.Top {
			if i == top {
				break
			}
			fmt.Fprintf(&b, "| `%s` | %v | %d | %.2f%% |\n", f.Func, f.Class, f.Samples, pct(f.Samples, t.Kernel))
		}
		b.WriteString("\n")
	}

	var keys []string
	for k := range t.Meta {
		if !knownKeys[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) > 0 {
		sort.Strings(keys)
		b.WriteString("| metric | value |\n|---|---:|\n")
		for _, k := range keys {
			fmt.Fprintf(&b, "| %s | %s |\n", k, t.Meta[k])
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
