// Package exact computes the exact high-level-language tax of a kernel run
// from per-instruction execution counts, as a cross-check of the sampled
// figures of package report.
//
// The counts come from the QEMU TCG plugin tools/tcgcount/pccount.c, which
// adds an inline counter before every instruction of the kernel's
// executable segment and writes, at exit, one 16-byte little-endian record
// per executed instruction address:
//
//	offset 0  uint64  PC (virtual address of the instruction)
//	offset 8  uint64  number of times it executed
//
// Every counted instruction is classified with package classify (GC,
// function prologue, write barrier, safety check, other) and the table
// gives each class's share of the kernel's executed instructions, the idle
// loop (runtime.sbIdle) left out of the total, as the sampled report
// leaves out idle samples. Under QEMU -icount shift=0 guest time is one
// nanosecond per instruction, so instruction shares are the time shares
// that the profiler estimates by sampling.
//
// With the plugin's window markers (Config: the entry of
// runtime.sbProfStart and of sampler.(*Session).Stop) the plugin also
// writes the counts of the sampled window alone, FILE.window, which is the
// file to compare with the samples of the same run.
package exact

import (
	"bufio"
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"shortbread/bench/hlltax/classify"
	"shortbread/bench/hlltax/report"
	"shortbread/bench/hlltax/samples"
)

// RecordSize is the size of one record of a counts file.
const RecordSize = 16

// Count is one record: the instruction at PC executed N times.
type Count struct {
	PC, N uint64
}

// Read reads a counts file. Records may come in any order; a PC that
// appears twice is summed.
func Read(r io.Reader) ([]Count, error) {
	br := bufio.NewReader(r)
	var out []Count
	var rec [RecordSize]byte
	for {
		n, err := io.ReadFull(br, rec[:])
		if err == io.EOF {
			break
		}
		if err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("counts: %d trailing bytes after %d records (not a multiple of %d)", n, len(out), RecordSize)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Count{PC: binary.LittleEndian.Uint64(rec[:]), N: binary.LittleEndian.Uint64(rec[8:])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PC < out[j].PC })
	merged := out[:0]
	for _, c := range out {
		if k := len(merged); k > 0 && merged[k-1].PC == c.PC {
			merged[k-1].N += c.N
			continue
		}
		merged = append(merged, c)
	}
	return merged, nil
}

// ReadFile reads the counts file at path.
func ReadFile(path string) ([]Count, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Write writes counts in the plugin's format (for tests and tools).
func Write(w io.Writer, counts []Count) error {
	bw := bufio.NewWriter(w)
	var rec [RecordSize]byte
	for _, c := range counts {
		binary.LittleEndian.PutUint64(rec[:], c.PC)
		binary.LittleEndian.PutUint64(rec[8:], c.N)
		bw.Write(rec[:])
	}
	return bw.Flush()
}

// Symbolizer classifies a PC and names its function; *classify.Map is
// one.
type Symbolizer interface {
	Class(pc uint64) (classify.Class, string)
}

// funcFinder is the optional instruction-boundary check (*classify.Map).
type funcFinder interface {
	FuncAt(pc uint64) *classify.Func
}

// IsIdle reports whether fn is the idle loop, whose instructions the
// table leaves out of the kernel total.
func IsIdle(fn string) bool { return strings.TrimSuffix(fn, ".abi0") == "runtime.sbIdle" }

// Options adjust Compute.
type Options struct {
	// Exclude reports whether the instructions of function fn are left
	// out of the kernel total; nil means IsIdle.
	Exclude func(fn string) bool
}

// Table is the exact tax of one counts file.
type Table struct {
	Total    uint64 // every counted instruction execution
	Excluded uint64 // in excluded functions (the idle loop)
	Kernel   uint64 // Total - Excluded: the denominator of the shares
	PCs      int    // distinct instruction addresses counted (excluded ones too)

	ByClass      [classify.NumClasses]uint64
	MachineLayer uint64 // in runtime.sb* functions (class Other), idle loop excluded
	Outside      uint64 // at PCs outside every function of the ELF (class Other)
	// Misaligned counts executions at PCs inside a function that are not
	// the first byte of an instruction the classifier decoded: the
	// classifier's disassembly and the executed code disagree there (or
	// the counts are from another binary). Zero for a good run.
	Misaligned uint64

	Top []FuncCount // per function and class, most first

	// AtLeader is the executions of instructions that start a basic
	// block (with a Symbolizer that is a report.BlockInfo, as
	// *classify.Map is; -1 without): the exact counterpart of the sampled
	// report's skew check.
	AtLeader int64
}

// FuncCount is the executions of one function's instructions of one class.
type FuncCount struct {
	Func  string
	Class classify.Class
	N     uint64
}

const outsideFunc = "[outside kernel text]"

// Compute classifies every count.
func Compute(sym Symbolizer, counts []Count, opt Options) *Table {
	excl := opt.Exclude
	if excl == nil {
		excl = IsIdle
	}
	ff, _ := sym.(funcFinder)
	bi, _ := sym.(report.BlockInfo)
	t := &Table{AtLeader: -1}
	if bi != nil {
		t.AtLeader = 0
	}
	type key struct {
		fn string
		cl classify.Class
	}
	funcs := map[key]uint64{}
	for _, c := range counts {
		if c.N == 0 {
			continue
		}
		t.PCs++
		t.Total += c.N
		cl, fn := sym.Class(c.PC)
		if fn != "" && excl(fn) {
			t.Excluded += c.N
			continue
		}
		t.Kernel += c.N
		t.ByClass[cl] += c.N
		switch {
		case fn == "":
			t.Outside += c.N
			fn = outsideFunc
		case classify.IsMachineLayer(fn):
			t.MachineLayer += c.N
		}
		if ff != nil && fn != outsideFunc {
			if f := ff.FuncAt(c.PC); f != nil {
				if in := f.InstAt(c.PC); in == nil || in.Addr != c.PC {
					t.Misaligned += c.N
				}
			}
		}
		if bi != nil && bi.IsLeader(c.PC) {
			t.AtLeader += int64(c.N)
		}
		funcs[key{fn, cl}] += c.N
	}
	for k, n := range funcs {
		t.Top = append(t.Top, FuncCount{Func: k.fn, Class: k.cl, N: n})
	}
	sort.Slice(t.Top, func(i, j int) bool {
		a, b := t.Top[i], t.Top[j]
		if a.N != b.N {
			return a.N > b.N
		}
		if a.Func != b.Func {
			return a.Func < b.Func
		}
		return a.Class < b.Class
	})
	return t
}

// Share returns the percentage of the kernel's instructions in class c.
func (t *Table) Share(c classify.Class) float64 { return pct(t.ByClass[c], t.Kernel) }

// TaxN is the executions in the four tax classes together.
func (t *Table) TaxN() uint64 {
	return t.ByClass[classify.GC] + t.ByClass[classify.Prologue] + t.ByClass[classify.WriteBarrier] + t.ByClass[classify.Safety]
}

// Tax returns the percentage of the kernel's instructions in GC,
// prologues, write barriers and safety checks together.
func (t *Table) Tax() float64 { return pct(t.TaxN(), t.Kernel) }

func pct(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

func ipct(a, b int) float64 {
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

// Compare holds the other figures WriteMarkdown can print beside the
// exact shares; every field is optional.
type Compare struct {
	// Sampled is the sampled table of the same run and window (package
	// report); its shares, their 95% intervals and the differences get
	// columns of their own.
	Sampled *report.Table
	// Whole is the exact table of the whole run (boot, set-up, the
	// unsampled runs), to show how far it is from the window's.
	Whole *Table
	// Duplicates is the number of sampled kernel records that repeat the
	// previous record of the same CPU (Duplicates). When they are
	// frequent (more than a quarter of the kernel samples) the samples
	// are not independent draws, and the ±95% column is widened to the
	// independent ones: by sqrt(kernel / (kernel - duplicates)).
	Duplicates int
}

// Duplicates counts the kernel samples of sec that repeat the previous
// sample of the same CPU (same PC and flags), a third equal one counting
// as a new draw. Under QEMU -icount about half of them are such repeats:
// the HPET timer fires exactly when the counter equals the comparator,
// QEMU 7.2's hpet_timer() advances the comparator only when the counter
// is strictly past it and so re-arms one HPET tick (10 ns) later; that
// second NMI arrives while the first one's handler runs, is latched, and
// is taken right after IRETQ, before the interrupted instruction: a
// second record with the same PC for every period.
func Duplicates(sec *samples.Section) int {
	last := map[uint16]samples.Sample{}
	seen := map[uint16]bool{}
	n := 0
	for _, s := range sec.Samples {
		if p, ok := last[s.CPU]; ok && seen[s.CPU] && p == s && s.Kernel() {
			n++
			seen[s.CPU] = false // a third equal one is a new draw
		} else {
			seen[s.CPU] = true
		}
		last[s.CPU] = s
	}
	return n
}

// WriteMarkdown prints the table; top limits the function list (0: none).
func (t *Table) WriteMarkdown(w io.Writer, title string, cmp Compare, top int) error {
	var b strings.Builder
	s := cmp.Sampled
	if title != "" {
		fmt.Fprintf(&b, "## %s\n\n", title)
	}
	head := "| share of non-idle kernel instructions | instructions executed | exact %"
	rule := "|---|---:|---:"
	widen := 1.0
	if s != nil {
		ci := "±95%"
		if s.Kernel > 0 && cmp.Duplicates*4 > s.Kernel && cmp.Duplicates < s.Kernel {
			widen = math.Sqrt(float64(s.Kernel) / float64(s.Kernel-cmp.Duplicates))
			ci = "±95% (widened ×" + strconv.FormatFloat(widen, 'f', 2, 64) + ")"
		}
		head += " | sampled % | " + ci + " | sampled − exact (points) | exact within ±95%?"
		rule += "|---:|---:|---:|:---:"
	}
	if cmp.Whole != nil {
		head += " | whole run, exact %"
		rule += "|---:"
	}
	b.WriteString(head + " |\n" + rule + "|\n")
	row := func(name string, n uint64, sn int, whole func(*Table) float64) {
		e := pct(n, t.Kernel)
		fmt.Fprintf(&b, "| %s | %d | %.2f%%", name, n, e)
		if s != nil {
			sp := ipct(sn, s.Kernel)
			ci := s.CI95(sn) * widen
			in := "yes"
			if math.Abs(sp-e) > ci {
				in = "no"
			}
			fmt.Fprintf(&b, " | %.2f%% | %.2f | %+.2f | %s", sp, ci, sp-e, in)
		}
		if cmp.Whole != nil {
			fmt.Fprintf(&b, " | %.2f%%", whole(cmp.Whole))
		}
		b.WriteString(" |\n")
	}
	for _, c := range []classify.Class{classify.GC, classify.Prologue, classify.WriteBarrier, classify.Safety, classify.Other} {
		if c == classify.Other {
			taxS := 0
			if s != nil {
				taxS = s.TaxSamples()
			}
			row("**high-level-language tax**", t.TaxN(), taxS, (*Table).Tax)
		}
		sn := 0
		if s != nil {
			sn = s.ByClass[c]
		}
		row(classLabels[c], t.ByClass[c], sn, func(w *Table) float64 { return w.Share(c) })
	}
	fmt.Fprintf(&b, "| **kernel instructions** | %d | 100%%", t.Kernel)
	if s != nil {
		fmt.Fprintf(&b, " | %d samples | | | ", s.Kernel)
	}
	if cmp.Whole != nil {
		fmt.Fprintf(&b, " | %d instructions", cmp.Whole.Kernel)
	}
	b.WriteString(" |\n\n")

	fmt.Fprintf(&b, "%d instruction executions counted at %d addresses; %d (%.2f%%) in the idle loop "+
		"(runtime.sbIdle: STI; HLT; JMP), left out of the total as the sampled report leaves out idle samples; "+
		"of the %d kernel instructions %d (%.2f%%) in the machine layer (runtime.sb*, counted as other), "+
		"%d outside every function of the ELF, %d at addresses that are not an instruction start of the classifier's disassembly.\n\n",
		t.Total, t.PCs, t.Excluded, pct(t.Excluded, t.Total), t.Kernel, t.MachineLayer, pct(t.MachineLayer, t.Kernel),
		t.Outside, t.Misaligned)
	if s != nil {
		fmt.Fprintf(&b, "Sampled: %d kernel samples of %d (%d idle, %d user), source %s, %d Hz, window %.3f s. "+
			"The ±95%% column is the sampled share's normal interval; \"exact within\" tells whether the exact share falls in it.\n\n",
			s.Kernel, s.Total, s.Idle, s.User, orDash(s.Source), s.Hz, float64(s.NS)/1e9)
		if widen > 1 {
			fmt.Fprintf(&b, "**%d of the %d kernel samples (%.1f%%) repeat the previous sample of their CPU** (same PC): "+
				"the samples are not independent draws, so the intervals are widened to the %d independent ones. "+
				"Under QEMU -icount this is QEMU 7.2's periodic HPET raising two NMIs per period (it fires exactly at "+
				"the comparator value and re-arms one tick later; the second NMI is taken right after the first one's IRETQ).\n\n",
				cmp.Duplicates, s.Kernel, ipct(cmp.Duplicates, s.Kernel), s.Kernel-cmp.Duplicates)
		}
	}
	if t.AtLeader >= 0 && t.Kernel > 0 {
		fmt.Fprintf(&b, "Block starts: %.2f%% of the executed kernel instructions start a basic block", pct(uint64(t.AtLeader), t.Kernel))
		if s != nil && s.AtLeader >= 0 && s.Kernel > 0 {
			fmt.Fprintf(&b, ", against %.2f%% of the kernel samples (the sampled report's skew check; "+
				"a sampler that sees only block starts would put far more there)", ipct(s.AtLeader, s.Kernel))
		}
		b.WriteString(".\n\n")
	}

	if top > 0 && len(t.Top) > 0 {
		sf := map[string]int{}
		if s != nil {
			for _, f := range s.Top {
				sf[f.Func+"\x00"+f.Class.String()] = f.Samples
			}
		}
		b.WriteString("| function | class | instructions | exact % of kernel")
		if s != nil {
			b.WriteString(" | sampled % |\n|---|---|---:|---:|---:|\n")
		} else {
			b.WriteString(" |\n|---|---|---:|---:|\n")
		}
		for i, f := range t.Top {
			if i == top {
				break
			}
			fmt.Fprintf(&b, "| `%s` | %v | %d | %.2f%%", f.Func, f.Class, f.N, pct(f.N, t.Kernel))
			if s != nil {
				fmt.Fprintf(&b, " | %.2f%%", ipct(sf[f.Func+"\x00"+f.Class.String()], s.Kernel))
			}
			b.WriteString(" |\n")
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

// Default window markers: the plugin's window opens when the sampler
// starts (the machine layer's sbProfStart, reached only through
// sampler.Start) and closes when the kernel stops it (the entry of
// sampler.(*Session).Stop), which is the window the samples cover.
const (
	DefaultOn  = "runtime.sbProfStart"
	DefaultOff = "shortbread/kernel/prof/sampler.(*Session).Stop"
)

// PluginConfig is what the plugin needs for one kernel ELF.
type PluginConfig struct {
	Start, End uint64 // the executable segment, [Start, End)
	On, Off    uint64 // window markers, 0 if none
}

// Config reads the ELF's executable segment and the addresses of the
// window marker functions (empty names: no window).
func Config(path, on, off string) (PluginConfig, error) {
	var pc PluginConfig
	f, err := elf.Open(path)
	if err != nil {
		return pc, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			if pc.End != 0 {
				return pc, fmt.Errorf("%s: more than one executable segment", path)
			}
			pc.Start, pc.End = p.Vaddr, p.Vaddr+p.Memsz
		}
	}
	if pc.End == 0 {
		return pc, fmt.Errorf("%s: no executable segment", path)
	}
	if on == "" && off == "" {
		return pc, nil
	}
	if on == "" {
		return pc, errors.New("a window needs an on marker")
	}
	// The symbol table, or the Go pclntab of a stripped ELF.
	entries := map[string]uint64{}
	if syms, err := f.Symbols(); err == nil {
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC {
				entries[s.Name] = s.Value
			}
		}
	} else if sec := f.Section(".gopclntab"); sec != nil {
		data, err := sec.Data()
		if err != nil {
			return pc, fmt.Errorf("%s: %v", path, err)
		}
		text := f.Section(".text")
		if text == nil {
			return pc, fmt.Errorf("%s: no .text section", path)
		}
		tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
		if err != nil {
			return pc, fmt.Errorf("%s: pclntab: %v", path, err)
		}
		for _, fn := range tab.Funcs {
			entries[fn.Name] = fn.Entry
		}
	} else {
		return pc, fmt.Errorf("%s: no symbol table and no pclntab", path)
	}
	find := func(name string) (uint64, error) {
		v, ok := entries[name]
		if !ok {
			return 0, fmt.Errorf("%s: no function %s", path, name)
		}
		if v < pc.Start || v >= pc.End {
			return 0, fmt.Errorf("%s: %s at %#x is outside the executable segment", path, name, v)
		}
		return v, nil
	}
	if pc.On, err = find(on); err != nil {
		return pc, err
	}
	if off != "" {
		if pc.Off, err = find(off); err != nil {
			return pc, err
		}
	}
	return pc, nil
}

// Args formats the plugin arguments, without out=.
func (c PluginConfig) Args() string {
	s := fmt.Sprintf("start=%#x,end=%#x", c.Start, c.End)
	if c.On != 0 {
		s += fmt.Sprintf(",on=%#x", c.On)
	}
	if c.Off != 0 {
		s += fmt.Sprintf(",off=%#x", c.Off)
	}
	return s
}
