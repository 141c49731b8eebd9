package report

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"shortbread/bench/hlltax/classify"
	"shortbread/bench/hlltax/samples"
)

// fakeMap is a synthetic classification: a few functions with known
// classes by address range.
type fakeMap struct{}

type fakeFunc struct {
	name   string
	lo, hi uint64
	class  func(pc uint64) classify.Class
}

func all(c classify.Class) func(uint64) classify.Class {
	return func(uint64) classify.Class { return c }
}

var fakeFuncs = []fakeFunc{
	{"runtime.gcDrain", 0x1000, 0x1100, all(classify.GC)},
	{"main.f", 0x2000, 0x2100, func(pc uint64) classify.Class {
		switch {
		case pc < 0x2010:
			return classify.Prologue
		case pc < 0x2020:
			return classify.Safety
		}
		return classify.Other
	}},
	{"runtime.gcWriteBarrier2", 0x3000, 0x3040, all(classify.WriteBarrier)},
	{"runtime.sbTrap", 0x4000, 0x4100, all(classify.Other)},
	{"runtime.sbIdle.abi0", 0x5000, 0x5010, all(classify.Other)},
}

func (fakeMap) Class(pc uint64) (classify.Class, string) {
	for _, f := range fakeFuncs {
		if pc >= f.lo && pc < f.hi {
			return f.class(pc), f.name
		}
	}
	return classify.Other, ""
}

// Frames: main.f's Safety range is inlined from main.helper.
func (fakeMap) Frames(pc uint64) []classify.Frame {
	_, name := fakeMap{}.Class(pc)
	if name == "" {
		return nil
	}
	if name == "main.f" && pc >= 0x2010 && pc < 0x2020 {
		return []classify.Frame{{Func: "main.helper", File: "/src/f.go", Line: 3}, {Func: "main.f", File: "/src/f.go", Line: 10}}
	}
	return []classify.Frame{{Func: name, File: "/src/" + name + ".go", Line: int(pc & 0xff)}}
}

// Basic blocks start at the functions' entries.
func (fakeMap) IsLeader(pc uint64) bool {
	for _, f := range fakeFuncs {
		if pc == f.lo {
			return true
		}
	}
	return false
}

func (fakeMap) LeaderFraction() float64 { return 0.25 }

// entryOnly is a fakeMap whose samples all start blocks.
type entryOnly struct{ fakeMap }

func (entryOnly) IsLeader(uint64) bool { return true }

const unknownPC = 0x9999999

// section builds the synthetic samples with a hand-counted answer:
//
//	cpu 0: 10 idle, 20 GC, 5 prologue, 1 idle with interrupts off
//	cpu 1: 7 safety, 8 other in main.f, 4 write barrier, 3 user
//	cpu 3: 6 machine layer (interrupts off), 2 outside the text
func section() *samples.Section {
	var s []samples.Sample
	add := func(n int, pc uint64, cpu, flags uint16) {
		for i := 0; i < n; i++ {
			s = append(s, samples.Sample{PC: pc + uint64(i%4), CPU: cpu, Flags: flags})
		}
	}
	add(10, 0x5000, 0, samples.FlagIdle)
	add(20, 0x1000, 0, 0)
	add(5, 0x2000, 0, 0)
	add(1, 0x5004, 0, samples.FlagIdle|samples.FlagIRQOff)
	add(7, 0x2010, 1, 0)
	add(8, 0x2040, 1, 0)
	add(4, 0x3000, 1, 0)
	add(3, 0x400000, 1, samples.FlagUser)
	add(6, 0x4000, 3, samples.FlagIRQOff)
	add(2, unknownPC, 3, 0)
	return &samples.Section{
		Meta:    map[string]string{"hz": "1000", "source": "nmi-hpet", "cpus": "4", "ns": "1500000000", "gc_cycles": "3", "bench_ops": "99"},
		Samples: s,
		Ended:   true,
	}
}

func TestCompute(t *testing.T) {
	tb := Compute(fakeMap{}, section())
	if tb.Total != 66 || tb.Idle != 11 || tb.User != 3 || tb.Kernel != 52 {
		t.Errorf("total %d idle %d user %d kernel %d, want 66 11 3 52", tb.Total, tb.Idle, tb.User, tb.Kernel)
	}
	want := [classify.NumClasses]int{classify.GC: 20, classify.Prologue: 5, classify.WriteBarrier: 4, classify.Safety: 7, classify.Other: 16}
	if tb.ByClass != want {
		t.Errorf("by class %v, want %v", tb.ByClass, want)
	}
	if tb.IRQOff != 6 || tb.MachineLayer != 6 || tb.Unknown != 2 {
		t.Errorf("irqoff %d machine layer %d unknown %d, want 6 6 2", tb.IRQOff, tb.MachineLayer, tb.Unknown)
	}
	if tb.TaxSamples() != 36 || tb.Share(classify.GC) != 100*20.0/52 || tb.Tax() != 100*36.0/52 {
		t.Errorf("tax %d (%.3f%%), GC %.3f%%", tb.TaxSamples(), tb.Tax(), tb.Share(classify.GC))
	}
	cpus := []CPUCount{{0, 36, 11, 0, 25}, {1, 22, 0, 3, 19}, {3, 8, 0, 0, 8}}
	if len(tb.PerCPU) != len(cpus) {
		t.Fatalf("per CPU %+v", tb.PerCPU)
	}
	for i := range cpus {
		if tb.PerCPU[i] != cpus[i] {
			t.Errorf("cpu %+v, want %+v", tb.PerCPU[i], cpus[i])
		}
	}
	if top := tb.Top[0]; top.Func != "runtime.gcDrain" || top.Class != classify.GC || top.Samples != 20 {
		t.Errorf("top function %+v", top)
	}
	// main.f appears once per class.
	n := 0
	for _, f := range tb.Top {
		if f.Func == "main.f" {
			n++
		}
	}
	if n != 3 {
		t.Errorf("main.f in %d rows, want 3", n)
	}
	if tb.Hz != 1000 || tb.CPUs != 4 || tb.NS != 1500000000 || tb.Source != "nmi-hpet" {
		t.Errorf("meta %+v", tb)
	}
	// Samples at pc+i%4 with i%4 == 0 on an entry: 5 GC, 2 prologue, 1
	// write barrier, 2 machine layer.
	if tb.AtLeader != 10 || tb.LeaderFraction != 0.25 {
		t.Errorf("%d samples at block starts (fraction %v), want 10 (0.25)", tb.AtLeader, tb.LeaderFraction)
	}
	// 95% interval of 20/52: 1.96 × sqrt(p(1-p)/52) = 13.2 points.
	if ci := tb.CI95(20); ci < 13.1 || ci > 13.3 {
		t.Errorf("CI95 = %.2f", ci)
	}
}

func TestMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := Compute(fakeMap{}, section()).WriteMarkdown(&b, "vfs", 5); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"## vfs\n",
		"source nmi-hpet, 1000 Hz per CPU, 4 CPUs, window 1.500 s",
		"| GC | 20 | 38.46% |",
		"| function prologues (stack checks) | 5 | 9.62% |",
		"| write barriers | 4 | 7.69% |",
		"| safety checks (bounds, nil, divide, shift, type) | 7 | 13.46% |",
		"| **high-level-language tax** | 36 | 69.23% |",
		"| other | 16 | 30.77% |",
		"| **kernel samples** | 52 | 100% | |",
		"66 samples: 11 idle, 3 user, 52 kernel",
		"6 (11.54%) in the machine layer",
		"| 1 | 22 | 0 | 3 | 19 |",
		"| `runtime.gcDrain` | GC | 20 | 38.46% |",
		"| bench_ops | 99 |",
		"| gc_cycles | 3 |",
		"Sampling skew check: 19.2% of the kernel samples are at the first instruction of a basic block, against 25.0%",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "| hz |") {
		t.Error("hz listed as a metric")
	}
	if strings.Contains(out, "Warning") {
		t.Error("skew warning without skew")
	}
	b.Reset()
	Compute(entryOnly{}, section()).WriteMarkdown(&b, "tcg", 0)
	if !strings.Contains(b.String(), "100.0% of the kernel samples are at the first instruction") || !strings.Contains(b.String(), "**Warning:**") {
		t.Errorf("no skew warning:\n%s", b.String())
	}
	if strings.Count(out, "| `") != 5 {
		t.Errorf("top list has %d rows, want 5", strings.Count(out, "| `"))
	}
}

func parseBack(t *testing.T, secs []*samples.Section, opt ProfileOptions) *profile.Profile {
	t.Helper()
	var b bytes.Buffer
	if err := WriteProfile(&b, fakeMap{}, secs, opt); err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(&b)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProfile(t *testing.T) {
	p := parseBack(t, []*samples.Section{section()}, ProfileOptions{Binary: "kernel.elf"})
	if len(p.SampleType) != 2 || p.SampleType[0].Type != "samples" || p.SampleType[0].Unit != "count" ||
		p.SampleType[1].Unit != "nanoseconds" || p.Period != 1e6 || p.DurationNanos != 1500000000 {
		t.Errorf("sample types %v period %d duration %d", p.SampleType, p.Period, p.DurationNanos)
	}
	byClass := map[string]int64{}
	seen := map[uint64]bool{}
	var total int64
	for _, s := range p.Sample {
		if len(s.Location) != 1 || len(s.Value) != 2 || s.Value[1] != s.Value[0]*1e6 {
			t.Fatalf("sample %v", s)
		}
		pc := s.Location[0].Address
		if seen[pc] {
			t.Errorf("pc %#x in two samples", pc)
		}
		seen[pc] = true
		total += s.Value[0]
		byClass[s.Label["class"][0]] += s.Value[0]
		if s.Label["mode"][0] != "kernel" || s.Label["section"] != nil {
			t.Errorf("labels %v", s.Label)
		}
		cl, name := fakeMap{}.Class(pc)
		if s.Label["class"][0] != cl.String() {
			t.Errorf("pc %#x labelled %v, is %v", pc, s.Label["class"], cl)
		}
		lines := s.Location[0].Line
		switch {
		case name == "":
			if len(lines) != 1 || lines[0].Function.Name != "[outside kernel text]" {
				t.Errorf("unknown pc: %+v", lines)
			}
		case pc >= 0x2010 && pc < 0x2020:
			if len(lines) != 2 || lines[0].Function.Name != "main.helper" || lines[1].Function.Name != "main.f" || lines[1].Line != 10 {
				t.Errorf("inlined location: %+v", lines)
			}
		default:
			if len(lines) != 1 || lines[0].Function.Name != name || lines[0].Function.Filename != "/src/"+name+".go" || lines[0].Line != int64(pc&0xff) {
				t.Errorf("pc %#x: %+v", pc, lines[0])
			}
		}
	}
	if total != 52 {
		t.Errorf("%d samples in the profile, want the 52 kernel samples", total)
	}
	want := map[string]int64{"GC": 20, "Prologue": 5, "WriteBarrier": 4, "Safety": 7, "Other": 16}
	for k, v := range want {
		if byClass[k] != v {
			t.Errorf("class %s: %d samples, want %d", k, byClass[k], v)
		}
	}
	if len(p.Mapping) != 1 || p.Mapping[0].File != "kernel.elf" || !p.Mapping[0].HasFunctions {
		t.Errorf("mapping %+v", p.Mapping)
	}

	// Idle and user samples on request, and a section label with two
	// sections.
	p = parseBack(t, []*samples.Section{section(), section()}, ProfileOptions{IncludeIdle: true, IncludeUser: true})
	modes := map[string]int64{}
	sections := map[string]int64{}
	for _, s := range p.Sample {
		modes[s.Label["mode"][0]] += s.Value[0]
		sections[s.Label["section"][0]] += s.Value[0]
	}
	if modes["kernel"] != 104 || modes["idle"] != 22 || modes["user"] != 6 || sections["1"] != 66 || sections["2"] != 66 {
		t.Errorf("modes %v sections %v", modes, sections)
	}
}

func TestProfileEmpty(t *testing.T) {
	s := &samples.Section{Meta: map[string]string{}, Samples: []samples.Sample{{PC: 0x1000, Flags: samples.FlagIdle}}}
	if _, err := Profile(fakeMap{}, []*samples.Section{s}, ProfileOptions{}); err == nil {
		t.Error("a profile without kernel samples was built")
	}
}

// TestPprofTool: go tool pprof reads the profile and shows the classes.
func TestPprofTool(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.pb.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteProfile(f, fakeMap{}, []*samples.Section{section()}, ProfileOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	out, err := exec.Command("go", "tool", "pprof", "-top", "-sample_index=samples", path).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, out)
	}
	for _, want := range []string{"runtime.gcDrain", "main.helper", "runtime.gcWriteBarrier2", "Showing nodes accounting for 52, 100% of 52 total"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("pprof -top lacks %q:\n%s", want, out)
		}
	}
	out, err = exec.Command("go", "tool", "pprof", "-tags", path).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -tags: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "class: Total") || !strings.Contains(string(out), "GC") {
		t.Errorf("pprof -tags:\n%s", out)
	}
}
