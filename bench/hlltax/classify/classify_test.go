package classify

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The test program (testdata/prog.go.txt) is built once with the
// compiler's own reports as ground truth:
//
//	-S                       the final assembly listing, with offsets
//	-d=ssa/check_bce/debug=1 "Found IsInBounds" / "Found IsSliceInBounds" per bounds check
//	-d=nil=1                 "generated nil check" per explicit nil check
//	-d=wb=1                  "write barrier" per store that needs one

type listed struct {
	off  int
	line int
	op   string
	args string
}

type compiled struct {
	m       *Map
	nosplit map[string]bool     // function → -S header says nosplit
	listing map[string][]listed // function → real instructions, in order
	reports map[string][]string // function (by source span) → report messages
	lines   map[string][2]int   // function → first and last source line
	err     error
	out     string
}

var (
	progOnce sync.Once
	prog     compiled
)

func build(t *testing.T) *compiled {
	t.Helper()
	progOnce.Do(func() { prog = buildProg() })
	if prog.err != nil {
		t.Fatalf("building the test program: %v\n%s", prog.err, prog.out)
	}
	return &prog
}

func buildProg() compiled {
	var c compiled
	src, err := os.ReadFile("testdata/prog.go.txt")
	if err != nil {
		c.err = err
		return c
	}
	dir, err := os.MkdirTemp("", "hlltax-classify")
	if err != nil {
		c.err = err
		return c
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), src, 0o644); err != nil {
		c.err = err
		return c
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module prog\n\ngo 1.26\n"), 0o644); err != nil {
		c.err = err
		return c
	}
	exe := filepath.Join(dir, "prog.elf")
	cmd := exec.Command("go", "build", "-o", exe,
		"-gcflags=-S -d=ssa/check_bce/debug=1,nil=1,wb=1", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	c.out = string(out)
	if err != nil {
		c.err = err
		return c
	}
	if c.m, err = Load(exe); err != nil {
		c.err = err
		return c
	}
	if c.lines, err = funcLines(src); err != nil {
		c.err = err
		return c
	}
	c.parseOutput(c.out)
	return c
}

// funcLines maps each top-level function to its source lines.
func funcLines(src []byte) (map[string][2]int, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "main.go", src, 0)
	if err != nil {
		return nil, err
	}
	lines := map[string][2]int{}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok {
			lines["main."+fd.Name.Name] = [2]int{fset.Position(fd.Pos()).Line, fset.Position(fd.End()).Line}
		}
	}
	return lines, nil
}

var (
	reportRE  = regexp.MustCompile(`^\./main\.go:(\d+):(\d+): (.*)$`)
	headerRE  = regexp.MustCompile(`^(\S+) STEXT (.*)$`)
	listingRE = regexp.MustCompile(`^\t0x[0-9a-f]+ (\d+) \([^)]*:(\d+)\)\t(\S+)(?:\t(.*))?$`)
)

func (c *compiled) parseOutput(out string) {
	c.nosplit = map[string]bool{}
	c.listing = map[string][]listed{}
	c.reports = map[string][]string{}
	cur := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := reportRE.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			for name, r := range c.lines {
				if n >= r[0] && n <= r[1] {
					c.reports[name] = append(c.reports[name], m[3])
				}
			}
			continue
		}
		if m := headerRE.FindStringSubmatch(line); m != nil {
			cur = m[1]
			c.nosplit[cur] = strings.Contains(" "+m[2]+" ", " nosplit ")
			continue
		}
		if !strings.HasPrefix(line, "\t0x") {
			if !strings.HasPrefix(line, "\t") {
				cur = "" // a data symbol
			}
			continue
		}
		m := listingRE.FindStringSubmatch(line)
		if m == nil || cur == "" {
			continue
		}
		off, _ := strconv.Atoi(m[1])
		ln, _ := strconv.Atoi(m[2])
		op := m[3]
		switch op {
		case "TEXT", "PCDATA", "FUNCDATA":
			continue
		}
		l := c.listing[cur]
		// A zero-size NOP shares its offset with the next instruction.
		if n := len(l); n > 0 && l[n-1].off == off {
			l = l[:n-1]
		}
		c.listing[cur] = append(l, listed{off: off, line: ln, op: op, args: m[4]})
	}
}

func (c *compiled) count(name, msg string) int {
	n := 0
	for _, r := range c.reports[name] {
		if r == msg {
			n++
		}
	}
	return n
}

// mainFuncs lists the functions of package main in the listing.
func (c *compiled) mainFuncs() []string {
	var fs []string
	for name := range c.listing {
		if strings.HasPrefix(name, "main.") {
			fs = append(fs, name)
		}
	}
	sort.Strings(fs)
	return fs
}

func mustFunc(t *testing.T, m *Map, name string) *Func {
	t.Helper()
	f := m.Func(name)
	if f == nil {
		t.Fatalf("function %s not in the ELF", name)
	}
	return f
}

// instsBy returns the offsets of f's instructions with the given reason
// whose text starts with prefix ("" for any).
func instsBy(f *Func, r Reason, prefix string) []int {
	var offs []int
	for _, in := range f.Insts {
		if in.Reason == r && strings.HasPrefix(in.Text, prefix) {
			offs = append(offs, int(in.Addr-f.Entry))
		}
	}
	return offs
}

func branches(f *Func, r Reason, helper string) int {
	n := 0
	for _, in := range f.Insts {
		if in.Reason == r && in.Helper == helper && strings.HasPrefix(in.Text, "J") && !strings.HasPrefix(in.Text, "JMP") {
			n++
		}
	}
	return n
}

func classCount(f *Func, cl Class) int {
	n := 0
	for _, in := range f.Insts {
		if in.Class == cl {
			n++
		}
	}
	return n
}

func sameInts(a, b []int) bool {
	sort.Ints(a)
	sort.Ints(b)
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// listedOffs returns the offsets of listing instructions matching op
// (exactly) and whose arguments start with args.
func listedOffs(l []listed, op, args string) []int {
	var offs []int
	for _, x := range l {
		if x.op == op && strings.HasPrefix(x.args, args) {
			offs = append(offs, x.off)
		}
	}
	return offs
}

// Known answers for each test function, from the Go language rules and
// the shape of each function; the tests below also check them against
// the compiler's reports.
type expect struct {
	bounds, divide, shift, dottype int // check branches by failure helper
	fixups                         int // signed-division -1 fix-ups
	nil                            int // explicit nil checks
	wbTests                        int // writeBarrier flag tests
	wbEntries                      int // write-barrier buffer slots filled (sum of N in gcWriteBarrierN)
	prologue                       bool
}

var expected = map[string]expect{
	"main.Idx3":        {bounds: 3},
	"main.IdxConst":    {bounds: 1},
	"main.IdxArray":    {bounds: 1, nil: 1}, // the nil check must come before the bounds check
	"main.IdxString":   {bounds: 1},
	"main.IdxRepeat":   {bounds: 1},
	"main.IdxNone":     {},
	"main.IdxMasked":   {nil: 1}, // indexed loads are not used as implicit nil checks
	"main.Varint":      {bounds: 2, nil: 2},
	"main.Slice2":      {bounds: 2},
	"main.Slice3":      {bounds: 3},
	"main.SliceFrom":   {bounds: 1},
	"main.Nil2":        {nil: 2},
	"main.NilImplicit": {},
	"main.WBGlobal":    {wbTests: 1, wbEntries: 2, prologue: true},
	"main.WB3":         {wbTests: 1, wbEntries: 6, nil: 1, prologue: true},
	"main.WBTwo":       {wbTests: 2, wbEntries: 4, nil: 2, prologue: true},
	"main.WBSlice":     {bounds: 1, wbTests: 1, wbEntries: 2, prologue: true},
	"main.NoWB":        {},
	"main.Div3":        {divide: 3, fixups: 3},
	"main.UDiv":        {divide: 1},
	"main.DivConst":    {},
	"main.Shift":       {shift: 1},
	"main.ShiftU":      {},
	"main.Assert":      {dottype: 1, prologue: true},
	"main.AssertOK":    {},
	"main.AssertIface": {dottype: 1, prologue: true}, // nil interface; the rest is runtime.typeAssert
	"main.NoSplit":     {},
	"main.Leaf":        {},
	"main.Calls":       {prologue: true},
	"main.BigFrame":    {prologue: true},
	"main.HugeFrame":   {prologue: true},
	"main.Closure":     {wbTests: 1, wbEntries: 1, prologue: true}, // stores &x into the new closure
	"main.Inlines":     {bounds: 1},
}

func TestKnownAnswers(t *testing.T) {
	c := build(t)
	for name, want := range expected {
		f := mustFunc(t, c.m, name)
		got := expect{
			bounds: branches(f, ReasonCheckBranch, "runtime.panicBounds"),
			divide: branches(f, ReasonCheckBranch, "runtime.panicdivide"),
			shift:  branches(f, ReasonCheckBranch, "runtime.panicshift"),
			dottype: branches(f, ReasonCheckBranch, "runtime.panicdottypeE") +
				branches(f, ReasonCheckBranch, "runtime.panicnildottype"),
			fixups:   len(instsBy(f, ReasonDivFixup, "CMPQ")),
			nil:      len(instsBy(f, ReasonNilCheck, "")),
			wbTests:  len(instsBy(f, ReasonWBTest, "CMP")),
			prologue: classCount(f, Prologue) > 0,
		}
		for _, in := range f.Insts {
			if in.Reason == ReasonWBPath && strings.HasPrefix(in.Text, "CALL runtime.gcWriteBarrier") {
				n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(in.Text, "CALL runtime.gcWriteBarrier"), "(SB)"))
				got.wbEntries += n
			}
		}
		if got != want {
			t.Errorf("%s: got %+v, want %+v", name, got, want)
		}
		// Each check branch has its own CMP or TEST, and each division
		// fix-up is CMP, JNE, NEGQ, XORL, JMP.
		setters := len(instsBy(f, ReasonCheckBranch, "CMP")) + len(instsBy(f, ReasonCheckBranch, "TEST"))
		if n := want.bounds + want.divide + want.shift + want.dottype; setters != n {
			t.Errorf("%s: %d flag-setting instructions in check branches, want %d", name, setters, n)
		}
		if n := len(instsBy(f, ReasonDivFixup, "")); n != 5*want.fixups {
			t.Errorf("%s: %d division fix-up instructions, want %d", name, n, 5*want.fixups)
		}
		// Every classified site in these functions is explained by the
		// table: no Safety, WB or Prologue instruction is left over.
		for _, in := range f.Insts {
			if in.Class != Other && in.Reason == ReasonNone {
				t.Errorf("%s: %#x %s has class %v without a reason", name, in.Addr, in.Text, in.Class)
			}
		}
	}
}

// TestBoundsChecksMatchCompiler: for every function the compiler's
// check_bce pass reports one "Found IsInBounds" per index check and one
// "Found IsSliceInBounds" per slice expression (several checks at one
// position are reported once). The classifier must find exactly one check
// branch per index check, and for slice expressions at least one per
// report and the table's number.
func TestBoundsChecksMatchCompiler(t *testing.T) {
	c := build(t)
	checked := 0
	for name := range c.lines {
		if name == "main.helper" || name == "main.Inlines" || name == "main.main" {
			continue // helper is compiled twice (inlined and alone): reports merge
		}
		f := mustFunc(t, c.m, name)
		idx, sl := c.count(name, "Found IsInBounds"), c.count(name, "Found IsSliceInBounds")
		got := branches(f, ReasonCheckBranch, "runtime.panicBounds")
		if sl == 0 && got != idx {
			t.Errorf("%s: %d bounds-check branches, compiler reports %d index checks", name, got, idx)
		}
		if sl > 0 && (got < idx+sl || got != expected[name].bounds) {
			t.Errorf("%s: %d bounds-check branches, compiler reports %d index and %d slice checks, want %d",
				name, got, idx, sl, expected[name].bounds)
		}
		checked += idx + sl
	}
	if checked < 10 {
		t.Fatalf("only %d compiler bounds reports: is -d=ssa/check_bce/debug=1 working?\n%s", checked, c.out)
	}
}

// TestNilChecksMatchCompiler: one TESTB probe per "generated nil check".
func TestNilChecksMatchCompiler(t *testing.T) {
	c := build(t)
	total := 0
	for name := range c.lines {
		if name == "main.helper" || name == "main.main" {
			continue
		}
		f := mustFunc(t, c.m, name)
		want := c.count(name, "generated nil check")
		if got := len(instsBy(f, ReasonNilCheck, "")); got != want {
			t.Errorf("%s: %d nil checks, compiler generated %d", name, got, want)
		}
		total += want
	}
	if total < 3 {
		t.Fatalf("only %d generated nil checks reported: is -d=nil=1 working?", total)
	}
}

// TestWriteBarriersMatchCompiler: a function has barrier tests exactly
// when the compiler reports stores needing a write barrier.
func TestWriteBarriersMatchCompiler(t *testing.T) {
	c := build(t)
	for name := range c.lines {
		if name == "main.helper" {
			continue
		}
		f := mustFunc(t, c.m, name)
		reported := c.count(name, "write barrier")
		tests := len(instsBy(f, ReasonWBTest, "CMP"))
		if (reported > 0) != (tests > 0) || tests > reported {
			t.Errorf("%s: %d write-barrier tests, compiler reports %d barriered stores", name, tests, reported)
		}
	}
	if c.count("main.WB3", "write barrier") != 3 {
		t.Errorf("compiler reports %d barriers in WB3, want 3", c.count("main.WB3", "write barrier"))
	}
}

// TestMatchesListing compares, offset by offset, the classifier's
// findings with the compiler's own assembly listing for every function of
// package main.
func TestMatchesListing(t *testing.T) {
	c := build(t)
	funcs := c.mainFuncs()
	if len(funcs) < len(expected) {
		t.Fatalf("listing has %d main functions, want ≥ %d", len(funcs), len(expected))
	}
	for _, name := range funcs {
		l := c.listing[name]
		f := c.m.Func(name)
		if f == nil {
			if name != "main.helper" {
				t.Errorf("%s: in the listing but not in the ELF", name)
			}
			continue // inlined everywhere, dropped by the linker
		}

		// Explicit nil checks.
		var probes []int
		for _, x := range l {
			if x.op == "TESTB" && regexp.MustCompile(`^AL, \([A-Z0-9]+\)$`).MatchString(x.args) {
				probes = append(probes, x.off)
			}
		}
		if got := instsBy(f, ReasonNilCheck, ""); !sameInts(got, probes) {
			t.Errorf("%s: nil checks at %v, listing has TESTB probes at %v", name, got, probes)
		}

		// Calls to check-failure helpers.
		var panics, got []int
		for _, x := range l {
			if x.op == "CALL" && IsCheckPanic(strings.TrimSuffix(x.args, "(SB)")) {
				panics = append(panics, x.off)
			}
		}
		got = instsBy(f, ReasonPanicBlock, "CALL")
		if !sameInts(got, panics) {
			t.Errorf("%s: panic calls at %v, listing has %v", name, got, panics)
		}

		// Write-barrier flag tests and barrier calls.
		wbTests := append(listedOffs(l, "CMPL", "runtime.writeBarrier(SB)"), listedOffs(l, "CMPB", "runtime.writeBarrier(SB)")...)
		if got := instsBy(f, ReasonWBTest, "CMP"); !sameInts(got, wbTests) {
			t.Errorf("%s: writeBarrier tests at %v, listing has %v", name, got, wbTests)
		}
		wbCalls := listedOffs(l, "CALL", "runtime.gcWriteBarrier")
		if got := instsBy(f, ReasonWBPath, "CALL runtime.gcWriteBarrier"); !sameInts(got, wbCalls) {
			t.Errorf("%s: gcWriteBarrier calls at %v, listing has %v", name, got, wbCalls)
		}
		// The stores into the buffer (through R11) are barrier code.
		for _, x := range l {
			if x.op == "MOVQ" && strings.HasSuffix(x.args, "(R11)") {
				if in := f.InstAt(f.Entry + uint64(x.off)); in == nil || in.Reason != ReasonWBPath {
					t.Errorf("%s: buffer store at %#x (%s %s) not in a write-barrier path", name, x.off, x.op, x.args)
				}
			}
		}

		// Prologue: the listing's stack check runs from offset 0 to the
		// first JLS; the morestack block from its target to the end.
		var want []int
		if !c.nosplit[name] {
			jls := -1
			for i, x := range l {
				if x.op == "JLS" {
					jls = i
					break
				}
			}
			if jls < 0 {
				t.Errorf("%s: listing has no stack check", name)
				continue
			}
			target, _ := strconv.Atoi(l[jls].args)
			for i, x := range l {
				if i <= jls || x.off >= target {
					want = append(want, x.off)
				}
			}
		}
		var pro []int
		for _, in := range f.Insts {
			if in.Class == Prologue {
				pro = append(pro, int(in.Addr-f.Entry))
			}
		}
		if !sameInts(pro, want) {
			t.Errorf("%s: prologue instructions at %v, listing says %v (nosplit %v)", name, pro, want, c.nosplit[name])
		}
	}
}

func TestPrologueShapes(t *testing.T) {
	c := build(t)
	for name, want := range map[string][]string{
		"main.Calls":         {"CMPQ SP, 0x10(R14)", "JBE"},
		"main.BigFrame":      {"LEAQ", "CMPQ R12, 0x10(R14)", "JBE"},
		"main.HugeFrame":     {"MOVQ SP, R12", "SUBQ", "JB", "CMPQ R12, 0x10(R14)", "JBE"},
		"main.Closure.func1": {"CMPQ SP, 0x10(R14)", "JBE"},
	} {
		f := mustFunc(t, c.m, name)
		var got []string
		for _, in := range f.Insts {
			if in.Reason == ReasonStackCheck {
				got = append(got, in.Text)
			}
		}
		ok := len(got) == len(want)
		for i := 0; ok && i < len(want); i++ {
			ok = strings.HasPrefix(got[i], want[i]+" ") || got[i] == want[i]
		}
		if !ok {
			t.Errorf("%s: stack check %q, want %q", name, got, want)
		}
		// The morestack block calls runtime.morestack (closures, which
		// need their context register) or morestack_noctxt and jumps back
		// to the entry.
		callee := "runtime.morestack_noctxt.abi0"
		if name == "main.Closure.func1" {
			callee = "runtime.morestack.abi0"
		}
		var calls, jmps int
		for _, in := range f.Insts {
			if in.Reason == ReasonMorestack {
				if in.Helper == callee {
					calls++
				}
				if strings.HasPrefix(in.Text, "JMP "+name+"(SB)") {
					jmps++
				}
			}
		}
		if calls != 1 || jmps != 1 {
			t.Errorf("%s: morestack block with %d calls to %s and %d jumps to the entry, want 1 and 1", name, calls, callee, jmps)
		}
	}
}

// TestFuncRules checks the name rules on the runtime functions of the
// test program.
func TestFuncRules(t *testing.T) {
	c := build(t)
	for name, want := range map[string]Class{
		"runtime.gcBgMarkWorker":        GC,
		"runtime.gcDrain":               GC,
		"runtime.scanstack":             GC,
		"runtime.markroot":              GC,
		"runtime.bgsweep":               GC,
		"runtime.bgscavenge":            GC,
		"runtime.(*gcWork).tryGetObj":   GC,
		"runtime.gcWriteBarrier2":       WriteBarrier,
		"runtime.wbBufFlush1":           WriteBarrier,
		"runtime.bulkBarrierPreWrite":   WriteBarrier,
		"runtime.morestack.abi0":        Prologue,
		"runtime.newstack":              Prologue,
		"runtime.panicBounds":           Safety,
		"runtime.panicdivide":           Safety,
		"runtime.panicshift":            Safety,
		"runtime.panicdottypeE":         Safety,
		"runtime.typeAssert":            Safety,
		"internal/runtime/gc/scan.init": GC,
	} {
		f := c.m.Func(name)
		if f == nil {
			if name == "internal/runtime/gc/scan.init" {
				continue // not every build links it
			}
			t.Errorf("%s: not in the test program", name)
			continue
		}
		if !f.RuleMatched || f.RuleClass != want {
			t.Errorf("%s: rule %v/%v, want %v", name, f.RuleMatched, f.RuleClass, want)
		}
		if n := classCount(f, want); n != len(f.Insts) || n == 0 {
			t.Errorf("%s: %d of %d instructions in %v", name, n, len(f.Insts), want)
		}
		if cl, fn := c.m.Class(f.Insts[len(f.Insts)-1].Addr); cl != want || fn != name {
			t.Errorf("Class(last pc of %s) = %v, %q", name, cl, fn)
		}
	}
	for _, name := range []string{"runtime.mallocgc", "runtime.schedule", "main.main"} {
		if f := mustFunc(t, c.m, name); f.RuleMatched {
			t.Errorf("%s matched a rule (%v)", name, f.RuleClass)
		}
	}
}

// TestInlinedFrames: an instruction of an inlined function reports the
// inlined function first and the caller, at the call's line, after it.
func TestInlinedFrames(t *testing.T) {
	c := build(t)
	f := mustFunc(t, c.m, "main.Inlines")
	helperLines, callerLines := c.lines["main.helper"], c.lines["main.Inlines"]
	found := false
	for _, in := range f.Insts {
		if in.Reason != ReasonCheckBranch || !strings.HasPrefix(in.Text, "J") {
			continue
		}
		found = true
		fr := c.m.Frames(in.Addr)
		if len(fr) != 2 || fr[0].Func != "main.helper" || fr[1].Func != "main.Inlines" {
			t.Fatalf("frames at the inlined bounds check: %+v", fr)
		}
		if fr[0].Line <= helperLines[0] || fr[0].Line > helperLines[1] || filepath.Base(fr[0].File) != "main.go" {
			t.Errorf("inlined frame at %s:%d, want main.go lines %v", fr[0].File, fr[0].Line, helperLines)
		}
		if fr[1].Line <= callerLines[0] || fr[1].Line > callerLines[1] {
			t.Errorf("caller frame at line %d, want within %v", fr[1].Line, callerLines)
		}
	}
	if !found {
		t.Fatal("no bounds-check branch in main.Inlines")
	}
	// A plain function has one frame.
	g := mustFunc(t, c.m, "main.Idx3")
	if fr := c.m.Frames(g.Entry); len(fr) != 1 || fr[0].Func != "main.Idx3" || fr[0].Line != c.lines["main.Idx3"][0] {
		t.Errorf("frames at Idx3's entry: %+v, want main.Idx3 at line %d", fr, c.lines["main.Idx3"][0])
	}
}

// TestInlinedRuleClass: instructions inlined from a GC function into a
// function without a rule are GC, and only those.
func TestInlinedRuleClass(t *testing.T) {
	c := build(t)
	n := 0
	for _, f := range c.m.Funcs {
		if f.RuleMatched {
			continue
		}
		for _, in := range f.Insts {
			if in.Reason == ReasonStackCheck || in.Reason == ReasonMorestack {
				continue
			}
			want := Class(255)
			for _, fr := range c.m.Frames(in.Addr)[:len(c.m.Frames(in.Addr))-1] {
				if cl, ok := FuncClass(fr.Func); ok && cl != Other && cl != Prologue {
					want = cl
					break
				}
			}
			if want != 255 {
				n++
				if in.Class != want || in.Reason != ReasonInlined {
					t.Errorf("%s %#x: %v/%v, inlined from a %v function", f.Name, in.Addr, in.Class, in.Reason, want)
				}
			} else if in.Reason == ReasonInlined {
				t.Errorf("%s %#x: inlined class %v without an inlined rule function", f.Name, in.Addr, in.Class)
			}
		}
	}
	if n == 0 {
		t.Error("no instruction inlined from a GC, write-barrier or safety function in the whole runtime")
	}
}

// TestLeaders: basic blocks start exactly at the entry, at branch targets
// and after branches and calls.
func TestLeaders(t *testing.T) {
	c := build(t)
	n := 0
	for _, f := range c.m.Funcs {
		want := map[uint64]bool{f.Entry: true}
		for i, in := range f.Insts {
			op, _, _ := strings.Cut(in.Text, " ")
			branch := strings.HasPrefix(op, "J") || strings.HasPrefix(op, "UD") || strings.HasPrefix(op, "IRET") ||
				op == "RET" || op == "LRET" || op == "CALL" || op == "INT" || op == "HLT"
			if branch && i+1 < len(f.Insts) {
				want[f.Insts[i+1].Addr] = true
			}
			if strings.HasPrefix(op, "J") {
				if a, err := strconv.ParseUint(strings.TrimPrefix(in.Text, op+" 0x"), 16, 64); err == nil {
					want[a] = true
				} else if strings.HasPrefix(in.Text, op+" "+f.Name+"(SB)") {
					want[f.Entry] = true
				}
			}
		}
		for _, in := range f.Insts {
			if in.Leader != want[in.Addr] {
				t.Fatalf("%s %#x %s: leader %v, want %v", f.Name, in.Addr, in.Text, in.Leader, want[in.Addr])
			}
			if in.Leader != c.m.IsLeader(in.Addr) || (in.Len > 1 && c.m.IsLeader(in.Addr+1)) {
				t.Fatalf("IsLeader(%#x) disagrees", in.Addr)
			}
			if in.Leader {
				n++
			}
		}
	}
	if n != c.m.Leaders || c.m.LeaderFraction() <= 0.05 || c.m.LeaderFraction() >= 0.6 {
		t.Errorf("%d leaders counted, map says %d (fraction %.3f)", n, c.m.Leaders, c.m.LeaderFraction())
	}
}

// TestCoverage: the instructions of every function tile it exactly, each
// has one class, Class agrees with the instruction list for every byte,
// and the static counts add up.
func TestCoverage(t *testing.T) {
	c := build(t)
	m := c.m
	var insts, bytes int
	for i, f := range m.Funcs {
		if i > 0 && m.Funcs[i-1].End > f.Entry {
			t.Fatalf("%s overlaps %s", f.Name, m.Funcs[i-1].Name)
		}
		pc := f.Entry
		for _, in := range f.Insts {
			if in.Addr != pc || in.Len <= 0 {
				t.Fatalf("%s: instruction at %#x, want %#x", f.Name, in.Addr, pc)
			}
			if in.Class >= NumClasses {
				t.Fatalf("%s %#x: class %v", f.Name, in.Addr, in.Class)
			}
			for b := in.Addr; b < in.Addr+uint64(in.Len); b++ {
				if cl, name := m.Class(b); cl != in.Class || name != f.Name {
					t.Fatalf("Class(%#x) = %v, %s; instruction says %v, %s", b, cl, name, in.Class, f.Name)
				}
			}
			pc += uint64(in.Len)
			insts++
			bytes += in.Len
		}
		if pc != f.End {
			t.Fatalf("%s: instructions end at %#x, function at %#x", f.Name, pc, f.End)
		}
	}
	var si, sb int
	for _, k := range Classes() {
		si += m.Static.Insts[k]
		sb += m.Static.Bytes[k]
	}
	if si != insts || sb != bytes {
		t.Errorf("static counts %d insts %d bytes, functions have %d and %d", si, sb, insts, bytes)
	}
	if cl, name := m.Class(m.TextEnd + 100); cl != Other || name != "" {
		t.Errorf("Class outside the text = %v, %q", cl, name)
	}
	if len(m.Notes) != 0 {
		t.Errorf("notes: %q", m.Notes)
	}
	if !strings.Contains(m.Static.Summary(), "total") {
		t.Errorf("summary: %q", m.Static.Summary())
	}
}

func TestNameRules(t *testing.T) {
	for _, tc := range []struct {
		name  string
		class Class
		ok    bool
	}{
		{"runtime.sbTrap", Other, true},
		{"runtime.(*sbAddrSpace).fault.deferwrap1", Other, true},
		{"runtime.sbStart.abi0", Other, true},
		{"runtime.sbrk", Other, false},
		{"runtime.gcStart", GC, true},
		{"runtime.gcStart.func1", GC, true},
		{"runtime.gcMarkDone.forEachP.func5", GC, true},
		{"runtime.(*sweepLocked).sweep", GC, true},
		{"runtime.(*pageAlloc).scavenge.func1", GC, true},
		{"runtime.scanobject", GC, true},
		{"runtime.shadeSomething", Other, false},
		{"runtime.gcallers", Other, false},
		{"runtime.gcWriteBarrier8", WriteBarrier, true},
		{"runtime.wbBufFlush.func1", WriteBarrier, true},
		{"runtime.(*wbBuf).reset", WriteBarrier, true},
		{"runtime.morestack_noctxt.abi0", Prologue, true},
		{"runtime.newstack", Prologue, true},
		{"runtime.panicIndexU", Safety, true},
		{"runtime.goPanicSliceAcap", Safety, true},
		{"runtime.panicBounds64", Safety, true},
		{"runtime.gopanic", Other, false},
		{"runtime.mallocgc", Other, false},
		{"main.gcStart", Other, false},
		{"internal/runtime/gc/scan.ScanSpanPacked", GC, true},
	} {
		cl, ok := FuncClass(tc.name)
		if cl != tc.class || ok != tc.ok {
			t.Errorf("FuncClass(%q) = %v, %v; want %v, %v", tc.name, cl, ok, tc.class, tc.ok)
		}
	}
	if !IsMachineLayer("runtime.sbIdle.abi0") || IsMachineLayer("runtime.scanstack") || IsMachineLayer("shortbread/kernel/machine.NumCPU") {
		t.Error("IsMachineLayer")
	}
	if got := qualify("gcWriteBarrier", "/usr/local/go/src/runtime/asm_amd64.s"); got != "runtime.gcWriteBarrier" {
		t.Errorf("qualify = %q", got)
	}
	if got := qualify("expandAVX512_1", "/usr/local/go/src/internal/runtime/gc/scan/expand_amd64.s"); got != "internal/runtime/gc/scan.expandAVX512_1" {
		t.Errorf("qualify = %q", got)
	}
	if got := qualify("runtime.main", "/usr/local/go/src/runtime/proc.go"); got != "runtime.main" {
		t.Errorf("qualify = %q", got)
	}
	for _, cl := range Classes() {
		if strings.HasPrefix(cl.String(), "Class(") {
			t.Errorf("class %d has no name", cl)
		}
	}
}

// TestKernel classifies the kernel ELF when it has been built (make
// kernel); the machine layer must be Other and the counts sane.
func TestKernel(t *testing.T) {
	path := "../../../build/kernel.elf"
	if _, err := os.Stat(path); err != nil {
		t.Skip("build/kernel.elf not built")
	}
	m, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ml := 0
	for _, f := range m.Funcs {
		if IsMachineLayer(f.Name) {
			ml++
			if classCount(f, Other) != len(f.Insts) {
				t.Errorf("machine-layer %s has non-Other instructions", f.Name)
			}
		}
	}
	if ml < 20 {
		t.Errorf("only %d machine-layer functions", ml)
	}
	for _, cl := range Classes() {
		if m.Static.Insts[cl] == 0 {
			t.Errorf("no %v instructions in the kernel", cl)
		}
	}
	if len(m.Notes) != 0 {
		t.Errorf("notes: %q", m.Notes)
	}
}
