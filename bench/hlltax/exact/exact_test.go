package exact

import (
	"bytes"
	"encoding/binary"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"shortbread/bench/hlltax/classify"
	"shortbread/bench/hlltax/report"
	"shortbread/bench/hlltax/samples"
)

func TestReadWrite(t *testing.T) {
	in := []Count{{PC: 0x1000010, N: 7}, {PC: 0x1000000, N: 1}, {PC: 0x1000010, N: 3}, {PC: 0xffffffff_00000000, N: 1 << 40}}
	var b bytes.Buffer
	if err := Write(&b, in); err != nil {
		t.Fatal(err)
	}
	if b.Len() != len(in)*RecordSize {
		t.Fatalf("%d bytes, want %d", b.Len(), len(in)*RecordSize)
	}
	// The plugin's layout: little-endian pc then count.
	if pc := binary.LittleEndian.Uint64(b.Bytes()); pc != 0x1000010 {
		t.Fatalf("first pc %#x", pc)
	}
	got, err := Read(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	want := []Count{{0x1000000, 1}, {0x1000010, 10}, {0xffffffff_00000000, 1 << 40}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if _, err := Read(bytes.NewReader(b.Bytes()[:RecordSize+5])); err == nil || !strings.Contains(err.Error(), "5 trailing bytes") {
		t.Fatalf("truncated file: err %v", err)
	}
	if c, err := Read(bytes.NewReader(nil)); err != nil || len(c) != 0 {
		t.Fatalf("empty file: %v %v", c, err)
	}
	if _, err := ReadFile("/nonexistent/counts"); err == nil {
		t.Fatal("no error for a missing file")
	}
}

// fakeSym maps address ranges to functions of one class.
type fakeSym []struct {
	lo, hi uint64
	fn     string
	cl     classify.Class
}

func (f fakeSym) Class(pc uint64) (classify.Class, string) {
	for _, r := range f {
		if pc >= r.lo && pc < r.hi {
			return r.cl, r.fn
		}
	}
	return classify.Other, ""
}

var sym = fakeSym{
	{0x100, 0x200, "runtime.gcDrain", classify.GC},
	{0x200, 0x300, "runtime.morestack", classify.Prologue},
	{0x300, 0x400, "runtime.gcWriteBarrier2", classify.WriteBarrier},
	{0x400, 0x500, "runtime.panicBounds", classify.Safety},
	{0x500, 0x600, "main.work", classify.Other},
	{0x600, 0x700, "runtime.sbIdle.abi0", classify.Other},
	{0x700, 0x800, "runtime.sbTrap", classify.Other},
}

func TestCompute(t *testing.T) {
	counts := []Count{
		{0x100, 30}, {0x104, 10}, // GC 40
		{0x200, 5},    // prologue 5
		{0x300, 15},   // write barrier 15
		{0x400, 10},   // safety 10
		{0x500, 20},   // other 20
		{0x600, 1000}, // idle: excluded
		{0x700, 6},    // machine layer, other
		{0x900, 4},    // outside, other
		{0x550, 0},    // zero counts are ignored
	}
	tb := Compute(sym, counts, Options{})
	if tb.Total != 1100 || tb.Excluded != 1000 || tb.Kernel != 100 || tb.PCs != 9 {
		t.Fatalf("total %d excluded %d kernel %d pcs %d", tb.Total, tb.Excluded, tb.Kernel, tb.PCs)
	}
	want := [classify.NumClasses]uint64{40, 5, 15, 10, 30}
	if tb.ByClass != want {
		t.Fatalf("by class %v, want %v", tb.ByClass, want)
	}
	if tb.MachineLayer != 6 || tb.Outside != 4 || tb.Misaligned != 0 || tb.AtLeader != -1 {
		t.Fatalf("machine %d outside %d misaligned %d leader %d", tb.MachineLayer, tb.Outside, tb.Misaligned, tb.AtLeader)
	}
	if tb.TaxN() != 70 || tb.Tax() != 70 || tb.Share(classify.GC) != 40 {
		t.Fatalf("tax %d %.2f gc %.2f", tb.TaxN(), tb.Tax(), tb.Share(classify.GC))
	}
	if tb.Top[0].Func != "runtime.gcDrain" || tb.Top[0].N != 40 || tb.Top[1].Func != "main.work" {
		t.Fatalf("top %v", tb.Top)
	}
	for _, f := range tb.Top {
		if f.Func == "runtime.sbIdle.abi0" {
			t.Fatal("the idle loop is in the function list")
		}
	}
	// Another exclusion rule.
	tb = Compute(sym, counts, Options{Exclude: func(fn string) bool { return fn == "main.work" }})
	if tb.Excluded != 20 || tb.Kernel != 1080 {
		t.Fatalf("custom exclusion: excluded %d kernel %d", tb.Excluded, tb.Kernel)
	}
	if (&Table{}).Share(classify.GC) != 0 {
		t.Fatal("share of an empty table")
	}
}

func TestIsIdle(t *testing.T) {
	for name, want := range map[string]bool{"runtime.sbIdle": true, "runtime.sbIdle.abi0": true,
		"runtime.sbIdleStacks": false, "runtime.gcBgMarkWorker": false, "": false} {
		if IsIdle(name) != want {
			t.Errorf("IsIdle(%q) = %v", name, !want)
		}
	}
}

func TestDuplicates(t *testing.T) {
	sec := &samples.Section{Samples: []samples.Sample{
		{PC: 1}, {PC: 1}, // a repeat
		{PC: 1},                  // a third equal one: a new draw
		{PC: 2, CPU: 1}, {PC: 3}, // other CPU in between does not matter
		{PC: 3},                                     // repeat
		{PC: 4, Flags: samples.FlagIdle},            // idle repeats are not kernel samples
		{PC: 4, Flags: samples.FlagIdle},            //
		{PC: 5}, {PC: 5, Flags: samples.FlagIRQOff}, // flags differ: not a repeat
	}}
	if n := Duplicates(sec); n != 2 {
		t.Fatalf("Duplicates = %d, want 2", n)
	}
}

func sampledTable(n [classify.NumClasses]int) *report.Table {
	var s []samples.Sample
	pcs := [classify.NumClasses]uint64{0x100, 0x200, 0x300, 0x400, 0x500}
	for c, k := range n {
		for i := 0; i < k; i++ {
			s = append(s, samples.Sample{PC: pcs[c]})
		}
	}
	sec := &samples.Section{Meta: map[string]string{"hz": "1000", "source": "nmi-hpet", "cpus": "1", "ns": "1000000000"}, Samples: s}
	return report.Compute(sym, sec)
}

func TestWriteMarkdown(t *testing.T) {
	tb := Compute(sym, []Count{{0x100, 200}, {0x200, 20}, {0x300, 30}, {0x400, 50}, {0x500, 700}, {0x600, 5}}, Options{})
	var b bytes.Buffer
	if err := tb.WriteMarkdown(&b, "t", Compare{}, 3); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"## t\n",
		"| GC | 200 | 20.00% |\n",
		"| function prologues (stack checks) | 20 | 2.00% |\n",
		"| safety checks (bounds, nil, divide, shift, type) | 50 | 5.00% |\n",
		"| **high-level-language tax** | 300 | 30.00% |\n",
		"| other | 700 | 70.00% |\n",
		"| **kernel instructions** | 1000 | 100% |\n",
		"5 (0.50%) in the idle loop",
		"| `main.work` | Other | 700 | 70.00% |\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "sampled %") {
		t.Errorf("sampled columns without a sampled table:\n%s", out)
	}

	// With the sampled table of 1000 samples: GC 19.0% (within its
	// interval), safety 2.0% (3 points off: outside), and the whole run.
	st := sampledTable([classify.NumClasses]int{190, 20, 30, 20, 740})
	whole := Compute(sym, []Count{{0x100, 100}, {0x500, 900}}, Options{})
	b.Reset()
	if err := tb.WriteMarkdown(&b, "", Compare{Sampled: st, Whole: whole}, 2); err != nil {
		t.Fatal(err)
	}
	out = b.String()
	for _, want := range []string{
		"| GC | 200 | 20.00% | 19.00% | 2.43 | -1.00 | yes | 10.00% |\n",
		"| safety checks (bounds, nil, divide, shift, type) | 50 | 5.00% | 2.00% | 0.87 | -3.00 | no | 0.00% |\n",
		"| **high-level-language tax** | 300 | 30.00% | 26.00% | 2.72 | -4.00 | no | 10.00% |\n",
		"| **kernel instructions** | 1000 | 100% | 1000 samples | | |  | 1000 instructions |\n",
		"| `runtime.gcDrain` | GC | 200 | 20.00% | 19.00% |\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.HasPrefix(out, "##") {
		t.Error("heading without a title")
	}
	// Every table row has as many cells as its heading.
	for _, block := range strings.Split(out, "\n\n") {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		if !strings.HasPrefix(lines[0], "|") {
			continue
		}
		cells := strings.Count(lines[0], "|")
		for _, l := range lines[1:] {
			if strings.Count(l, "|") != cells {
				t.Errorf("row %q has %d bars, heading %d", l, strings.Count(l, "|"), cells)
			}
		}
	}

	// Half the samples repeated: intervals widened by sqrt(2).
	b.Reset()
	if err := tb.WriteMarkdown(&b, "", Compare{Sampled: st, Duplicates: 500}, 0); err != nil {
		t.Fatal(err)
	}
	out = b.String()
	for _, want := range []string{
		"±95% (widened ×1.41)",
		"| GC | 200 | 20.00% | 19.00% | 3.44 | -1.00 | yes |\n",
		"**500 of the 1000 kernel samples (50.0%) repeat",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}

// The test binary stands in for the kernel: a Go linux/amd64 ELF with
// symbols.
func testBinary(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the test binary is the kernel stand-in: needs linux/amd64")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func TestComputeClassifyMap(t *testing.T) {
	exe := testBinary(t)
	m, err := classify.Load(exe)
	if err != nil {
		t.Fatal(err)
	}
	var counts []Count
	var leaders, insts uint64
	for _, name := range []string{"runtime.gcDrain", "runtime.mallocgc", "runtime.gcWriteBarrier2"} {
		f := m.Func(name)
		if f == nil {
			t.Fatalf("%s not in the test binary", name)
		}
		for _, in := range f.Insts {
			counts = append(counts, Count{PC: in.Addr, N: 3})
			insts += 3
			if in.Leader {
				leaders += 3
			}
		}
	}
	// One count in the middle of an instruction.
	var mid uint64
	for _, in := range m.Func("runtime.mallocgc").Insts {
		if in.Len > 1 {
			mid = in.Addr + 1
			break
		}
	}
	counts = append(counts, Count{PC: mid, N: 2})
	tb := Compute(m, counts, Options{})
	if tb.Misaligned != 2 {
		t.Errorf("misaligned %d, want 2", tb.Misaligned)
	}
	if tb.AtLeader != int64(leaders) {
		t.Errorf("at leader %d, want %d", tb.AtLeader, leaders)
	}
	if tb.Kernel != insts+2 {
		t.Errorf("kernel %d, want %d", tb.Kernel, insts+2)
	}
	if g := uint64(len(m.Func("runtime.gcDrain").Insts)) * 3; tb.ByClass[classify.GC] < g {
		t.Errorf("GC %d, want at least %d", tb.ByClass[classify.GC], g)
	}
	if tb.ByClass[classify.WriteBarrier] == 0 || tb.ByClass[classify.Other] == 0 {
		t.Errorf("by class %v", tb.ByClass)
	}
}

func TestConfig(t *testing.T) {
	exe := testBinary(t)
	c, err := Config(exe, "", "")
	if err != nil {
		t.Fatal(err)
	}
	m, err := classify.Load(exe)
	if err != nil {
		t.Fatal(err)
	}
	if c.Start > m.TextStart || c.End < m.TextEnd || c.On != 0 || c.Off != 0 {
		t.Fatalf("config %+v, text %#x-%#x", c, m.TextStart, m.TextEnd)
	}
	if got := c.Args(); got != "start="+hex(c.Start)+",end="+hex(c.End) {
		t.Fatalf("args %q", got)
	}
	c, err = Config(exe, "runtime.mallocgc", "runtime.gcDrain")
	if err != nil {
		t.Fatal(err)
	}
	if c.On != m.Func("runtime.mallocgc").Entry || c.Off != m.Func("runtime.gcDrain").Entry {
		t.Fatalf("markers %+v", c)
	}
	if !strings.HasSuffix(c.Args(), ",on="+hex(c.On)+",off="+hex(c.Off)) {
		t.Fatalf("args %q", c.Args())
	}
	if _, err := Config(exe, "runtime.noSuchFunction", ""); err == nil {
		t.Fatal("no error for a missing marker")
	}
	if _, err := Config(exe, "", "runtime.gcDrain"); err == nil {
		t.Fatal("no error for off without on")
	}
	if _, err := Config("/nonexistent", "", ""); err == nil {
		t.Fatal("no error for a missing file")
	}
}

func hex(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }
