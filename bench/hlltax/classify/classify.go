// Package classify assigns every instruction of a Go linux/amd64 ELF (the
// Shortbread kernel) to one class of the "high-level-language tax" measured
// by the Biscuit paper (OSDI'18): garbage collection, function prologues
// (stack-bound checks), write barriers, safety checks, or other.
//
// Load disassembles every function of the ELF's text (bounds and names from
// the ELF symbol table, or from the Go pclntab when the ELF is stripped)
// with golang.org/x/arch/x86/x86asm and classifies each instruction in
// three steps; the first rule that claims an instruction wins:
//
//  1. Name rules (FuncClass, rules.go) on the function's symbol name. A
//     function matching one belongs to that class entirely, its own
//     prologue and bounds checks included. Machine-layer functions
//     (runtime.sbXxx, see IsMachineLayer) are Other. runtime.morestack*,
//     newstack and badmorestack* are Prologue. runtime.gcWriteBarrier*,
//     wbBuf*, (*wbBuf).*, wbZero, wbMove, bulkBarrierPreWrite*,
//     bulkBarrierBitmap, typeBitsBulkBarrier and atomicwb are WriteBarrier.
//     The check-failure helpers (runtime.panicBounds*, panicExtend*,
//     panicIndex*, panicSlice*, goPanicIndex*, goPanicSlice*, panicdivide,
//     panicoverflow, panicshift, panicfloat, panicdottype*,
//     panicnildottype, panicmem*, panicwrap, panicunsafeslice*,
//     panicunsafestring*, panicmakeslicelen/cap, panicrangestate,
//     panicCheck1/2) and runtime.typeAssert, assertE2I are Safety. GC is
//     every runtime.gcXxx function (upper-case X; gcStart, gcDrain,
//     gcBgMarkWorker, gcAssistAlloc, gcMarkDone, gcMarkTermination,
//     gcSweep, gcTrigger.test, ...) except gcWriteBarrier*, plus the
//     listed mark (markroot*, scanobject, scanblock, scanstack, greyobject,
//     shade, the Green Tea span queue and internal/runtime/gc/scan, work
//     buffers, (*gcWork).*), sweep (sweepone, bgsweep, (*sweepLocked).*,
//     (*mheap).reclaim*, (*mspan).ensureSwept, ...), scavenge (bgscavenge,
//     (*pageAlloc).scavenge*, (*scavengerState).*, ...) and pacer
//     ((*gcControllerState).*, (*gcCPULimiterState).*) functions; see
//     gcFuncs and gcPrefixes.
//  2. Instruction patterns in every other function (patterns.go):
//     - Prologue: the entry stack-bound check (an optional TLS load of g,
//     LEAQ -n(SP), R12 or MOVQ SP, R12 / SUBQ / JCS for big frames, CMPQ
//     SP|R12, 16(g) or 24(g), JLS) and the out-of-line block it branches
//     to (register spills, CALL runtime.morestack*, reloads, JMP back).
//     - Inlining: an instruction whose DWARF inlining chain holds a
//     function that a GC, WriteBarrier or Safety name rule matches gets
//     that class (for example the GC assist-credit code inlined into
//     mallocgc), the innermost such function deciding.
//     - WriteBarrier: a CMP/TEST (or load and TEST) of runtime.writeBarrier,
//     its conditional branch, and the barrier path it guards: the
//     straight-line block holding the old-value loads, the CALL
//     runtime.gcWriteBarrierN (or wbMove, wbZero, bulkBarrierPreWrite,
//     atomicwb), the stores into the buffer through R11, and the jump back;
//     plus, when the path falls into the join point, the JMP by which the
//     flag-clear side skips it. A source-level "if writeBarrier.enabled"
//     test in the runtime gets only its CMP and branch.
//     - Safety: explicit nil checks (TESTB AL, (reg)); panic blocks (the
//     straight-line argument set-up ending in a CALL to a check-failure
//     helper, plus the padding after the call); every conditional branch
//     with a panic block as one successor, directly or through NOPs and
//     JMPs, with those JMPs and the CMP/TEST that sets its flags (bounds,
//     slice, divide-by-zero, shift, type-assertion and nil-wrapper checks);
//     and the signed-division fix-up (CMP divisor, $-1, its branch and the
//     NEG/XOR/JMP block that gives MinInt/-1 its Go result without a trap).
//  3. Everything else is Other. Runtime assertions that call
//     runtime.throw are the runtime's own invariants, not language checks:
//     Other.
//
// Each instruction also records why it got its class (Reason), so tests
// can count check sites and users can audit the result (hlltax -disasm),
// and whether it starts a basic block (Leader), for the sampling-skew
// check of package report.
//
// Limits: samples are attributed by leaf PC only, so helpers shared by
// the collector and others (memmove, spanOf, typePointers used by bulk
// barriers) count for their own class; x86asm does not decode some VEX
// instructions (AVX2 code in internal/bytealg), which is then split into
// one-byte "?" instructions, all Other.
package classify

import (
	"debug/elf"
	"debug/gosym"
	"fmt"
	"sort"
	"strings"
)

// Class is one share of the high-level-language tax.
type Class uint8

// The classes, in the order the report prints them.
const (
	GC Class = iota
	Prologue
	WriteBarrier
	Safety
	Other
	NumClasses = 5 // number of classes
)

var classNames = [NumClasses]string{"GC", "Prologue", "WriteBarrier", "Safety", "Other"}

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", c)
}

// Classes lists every class in order.
func Classes() []Class { return []Class{GC, Prologue, WriteBarrier, Safety, Other} }

// Reason says which rule gave an instruction its class.
type Reason uint8

// Reasons.
const (
	ReasonNone        Reason = iota // no rule matched (Other)
	ReasonFunc                      // the function matched a name rule
	ReasonInlined                   // inlined from a function that matched a name rule
	ReasonStackCheck                // entry stack-bound check
	ReasonMorestack                 // out-of-line morestack call block
	ReasonWBTest                    // test of runtime.writeBarrier and its branch
	ReasonWBPath                    // write-barrier path: loads, call, buffer stores, jump back
	ReasonCheckBranch               // CMP/TEST and branch guarding a panic block
	ReasonPanicBlock                // argument set-up, call to a check-failure helper, padding
	ReasonNilCheck                  // TESTB AL, (reg) nil probe
	ReasonDivFixup                  // signed division by -1 fix-up
	numReasons
)

var reasonNames = [numReasons]string{"none", "func", "inlined", "stack-check", "morestack",
	"wb-test", "wb-path", "check-branch", "panic-block", "nil-check", "div-fixup"}

func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", r)
}

// Inst is one classified instruction.
type Inst struct {
	Addr   uint64
	Len    int
	Text   string // Go assembler syntax
	Class  Class
	Reason Reason
	// Helper is, for a check branch, the check-failure helper its panic
	// block calls ("runtime.panicBounds"); for a write-barrier test, the
	// barrier function its path calls; for a call, the callee.
	Helper string
	// Leader marks the first instruction of a basic block: the function
	// entry, a branch target, or the instruction after a branch or call.
	Leader bool
}

// Func is one function of the text.
type Func struct {
	Name        string
	Entry, End  uint64 // [Entry, End), padding excluded
	File        string // source file of the entry, if known
	RuleClass   Class  // class given by a name rule
	RuleMatched bool   // a name rule matched (RuleClass applies to every instruction)
	Insts       []Inst
}

// Counts are static instruction and byte counts per class.
type Counts struct {
	Insts [NumClasses]int
	Bytes [NumClasses]int
}

// Sites counts the distinct check sites found by the instruction patterns.
type Sites struct {
	StackChecks  int // functions with an entry stack check
	Morestack    int // out-of-line morestack blocks
	WBTests      int // writeBarrier flag tests
	WBPaths      int // of which with a recognised barrier path
	CheckBranch  int // conditional branches to panic blocks
	PanicBlocks  int // calls to check-failure helpers in other functions
	NilChecks    int // TESTB AL, (reg) probes
	DivFixups    int // signed-division -1 fix-ups
	DecodeErrors int // bytes that did not decode
}

// Map is the classification of one ELF's text.
type Map struct {
	Path               string
	TextStart, TextEnd uint64
	Funcs              []*Func // sorted by Entry
	Static             Counts  // over every function's instructions
	Leaders            int     // instructions that start a basic block
	Sites              Sites
	// Notes lists what the classifier could not do (no DWARF, unusual
	// code shapes); empty for a normal kernel build.
	Notes []string

	byName map[string]*Func
	lines  *gosym.Table
	inl    *inlineIndex
}

// Load reads and classifies the ELF at path.
func Load(path string) (*Map, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		return nil, fmt.Errorf("%s: not an x86-64 ELF (%v)", path, f.Machine)
	}
	text := f.Section(".text")
	if text == nil {
		return nil, fmt.Errorf("%s: no .text section", path)
	}
	code, err := text.Data()
	if err != nil {
		return nil, fmt.Errorf("%s: reading .text: %v", path, err)
	}
	m := &Map{Path: path, TextStart: text.Addr, TextEnd: text.Addr + uint64(len(code)), byName: map[string]*Func{}}

	if pcln := f.Section(".gopclntab"); pcln != nil {
		if data, err := pcln.Data(); err == nil {
			if t, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr)); err == nil {
				m.lines = t
			} else {
				m.note("pclntab: %v", err)
			}
		}
	} else {
		m.note("no .gopclntab: no file:line information")
	}

	syms, _ := f.Symbols()
	var wb symRange
	for _, s := range syms {
		if s.Name == "runtime.writeBarrier" {
			wb = symRange{s.Value, s.Value + max(s.Size, 1)}
		}
	}
	if wb.lo == 0 {
		m.note("no runtime.writeBarrier symbol: write-barrier tests are not recognised")
	}
	m.Funcs = funcBounds(syms, text, m.lines)
	if len(m.Funcs) == 0 {
		return nil, fmt.Errorf("%s: no functions (no symbol table and no pclntab)", path)
	}
	for _, fn := range m.Funcs {
		m.byName[fn.Name] = fn
		if m.lines != nil {
			fn.File, _, _ = m.lines.PCToLine(fn.Entry)
		}
	}

	if d, err := f.DWARF(); err == nil {
		m.inl, err = newInlineIndex(d)
		if err != nil {
			m.note("DWARF inlining: %v", err)
		}
	} else {
		m.note("no DWARF: inlined functions are not seen")
	}

	c := classifier{m: m, code: code, wb: wb}
	for _, fn := range m.Funcs {
		c.function(fn)
		for _, in := range fn.Insts {
			m.Static.Insts[in.Class]++
			m.Static.Bytes[in.Class] += in.Len
			if in.Leader {
				m.Leaders++
			}
		}
	}
	return m, nil
}

func (m *Map) note(format string, args ...any) {
	m.Notes = append(m.Notes, fmt.Sprintf(format, args...))
}

type symRange struct{ lo, hi uint64 }

// funcBounds lists the text's functions from the ELF symbol table, or from
// the pclntab when there is none.
func funcBounds(syms []elf.Symbol, text *elf.Section, lines *gosym.Table) []*Func {
	var fs []*Func
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 ||
			s.Value < text.Addr || s.Value+s.Size > text.Addr+text.Size {
			continue
		}
		fs = append(fs, &Func{Name: s.Name, Entry: s.Value, End: s.Value + s.Size})
	}
	if len(fs) == 0 && lines != nil {
		for _, g := range lines.Funcs {
			fs = append(fs, &Func{Name: g.Name, Entry: g.Entry, End: g.End})
		}
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].Entry < fs[j].Entry })
	// Drop aliases and clip overlaps.
	out := fs[:0]
	for _, f := range fs {
		if n := len(out); n > 0 {
			if out[n-1].Entry == f.Entry {
				continue
			}
			out[n-1].End = min(out[n-1].End, f.Entry)
		}
		out = append(out, f)
	}
	return out
}

// FuncAt returns the function containing pc, or nil.
func (m *Map) FuncAt(pc uint64) *Func {
	i := sort.Search(len(m.Funcs), func(i int) bool { return m.Funcs[i].End > pc })
	if i < len(m.Funcs) && m.Funcs[i].Entry <= pc {
		return m.Funcs[i]
	}
	return nil
}

// Func returns the function with the given symbol name, or nil.
func (m *Map) Func(name string) *Func { return m.byName[name] }

// InstAt returns the instruction containing pc, or nil.
func (f *Func) InstAt(pc uint64) *Inst {
	i := sort.Search(len(f.Insts), func(i int) bool { return f.Insts[i].Addr+uint64(f.Insts[i].Len) > pc })
	if i < len(f.Insts) && f.Insts[i].Addr <= pc {
		return &f.Insts[i]
	}
	return nil
}

// Class returns the class of the instruction at pc and the name of its
// function. A pc outside every function is Other with an empty name.
func (m *Map) Class(pc uint64) (Class, string) {
	f := m.FuncAt(pc)
	if f == nil {
		return Other, ""
	}
	if f.RuleMatched {
		return f.RuleClass, f.Name
	}
	if in := f.InstAt(pc); in != nil {
		return in.Class, f.Name
	}
	return Other, f.Name
}

// IsLeader reports whether pc is the first byte of an instruction that
// starts a basic block (see Inst.Leader).
func (m *Map) IsLeader(pc uint64) bool {
	if f := m.FuncAt(pc); f != nil {
		if in := f.InstAt(pc); in != nil {
			return in.Addr == pc && in.Leader
		}
	}
	return false
}

// LeaderFraction returns the share of the text's instructions that start
// a basic block.
func (m *Map) LeaderFraction() float64 {
	n := 0
	for _, c := range m.Static.Insts {
		n += c
	}
	if n == 0 {
		return 0
	}
	return float64(m.Leaders) / float64(n)
}

// Reason returns why the instruction at pc has its class.
func (m *Map) Reason(pc uint64) Reason {
	if f := m.FuncAt(pc); f != nil {
		if in := f.InstAt(pc); in != nil {
			return in.Reason
		}
	}
	return ReasonNone
}

// Frame is one function of a pc's inlining chain.
type Frame struct {
	Func string
	File string
	Line int
}

// Frames returns the source frames at pc, innermost (inlined) first and
// the ELF function last. It returns nil for a pc outside every function.
func (m *Map) Frames(pc uint64) []Frame {
	f := m.FuncAt(pc)
	if f == nil {
		return nil
	}
	var file string
	var line int
	if m.lines != nil {
		file, line, _ = m.lines.PCToLine(pc)
	}
	var chain []inlRange
	if m.inl != nil {
		chain = m.inl.at(pc, f.Entry)
	}
	frames := make([]Frame, 0, len(chain)+1)
	for i := len(chain) - 1; i >= 0; i-- {
		frames = append(frames, Frame{Func: chain[i].name, File: file, Line: line})
		file, line = chain[i].callFile, chain[i].callLine
	}
	return append(frames, Frame{Func: f.Name, File: file, Line: line})
}

// Summary formats the static counts as text, one class a line.
func (c Counts) Summary() string {
	var b strings.Builder
	var ti, tb int
	for _, k := range Classes() {
		ti += c.Insts[k]
		tb += c.Bytes[k]
	}
	fmt.Fprintf(&b, "%-13s %9s %7s %10s %7s\n", "class", "insts", "%", "bytes", "%")
	for _, k := range Classes() {
		fmt.Fprintf(&b, "%-13s %9d %6.2f%% %10d %6.2f%%\n", k, c.Insts[k], pct(c.Insts[k], ti), c.Bytes[k], pct(c.Bytes[k], tb))
	}
	fmt.Fprintf(&b, "%-13s %9d %6.2f%% %10d %6.2f%%\n", "total", ti, 100.0, tb, 100.0)
	return b.String()
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}
