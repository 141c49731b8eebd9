package classify

import (
	"sort"

	"golang.org/x/arch/x86/x86asm"
)

// classifier holds what the instruction patterns need across functions.
type classifier struct {
	m    *Map
	code []byte
	wb   symRange // runtime.writeBarrier
}

// dec is a decoded instruction with the analysis state of one function.
type dec struct {
	x      x86asm.Inst
	addr   uint64
	bad    bool // did not decode (one byte)
	class  Class
	reason Reason
	helper string
	set    bool // class assigned
}

func (d *dec) end() uint64 { return d.addr + uint64(d.x.Len) }

// target returns the destination of a direct branch or call.
func (d *dec) target() (uint64, bool) {
	if d.bad {
		return 0, false
	}
	if r, ok := d.x.Args[0].(x86asm.Rel); ok {
		return uint64(int64(d.end()) + int64(r)), true
	}
	return 0, false
}

func (d *dec) isJcc() bool  { return !d.bad && jccOps[d.x.Op] }
func (d *dec) isJmp() bool  { return !d.bad && d.x.Op == x86asm.JMP }
func (d *dec) isCall() bool { return !d.bad && d.x.Op == x86asm.CALL }
func (d *dec) isNop() bool  { return !d.bad && d.x.Op == x86asm.NOP }

// transfers reports whether d ends straight-line code (any branch, return,
// trap), calls excluded.
func (d *dec) transfers() bool {
	if d.bad {
		return true
	}
	switch d.x.Op {
	case x86asm.JMP, x86asm.RET, x86asm.LRET, x86asm.IRET, x86asm.IRETD, x86asm.IRETQ,
		x86asm.INT, x86asm.UD1, x86asm.UD2, x86asm.HLT:
		return true
	}
	return jccOps[d.x.Op]
}

var jccOps = map[x86asm.Op]bool{
	x86asm.JA: true, x86asm.JAE: true, x86asm.JB: true, x86asm.JBE: true, x86asm.JE: true,
	x86asm.JG: true, x86asm.JGE: true, x86asm.JL: true, x86asm.JLE: true, x86asm.JNE: true,
	x86asm.JNO: true, x86asm.JNP: true, x86asm.JNS: true, x86asm.JO: true, x86asm.JP: true,
	x86asm.JS: true, x86asm.JCXZ: true, x86asm.JECXZ: true, x86asm.JRCXZ: true,
}

// fn is one function being classified.
type fn struct {
	c     *classifier
	f     *Func
	ins   []dec
	index map[uint64]int // instruction start → index
}

func (c *classifier) function(f *Func) {
	m := c.m
	code := c.code[f.Entry-m.TextStart : f.End-m.TextStart]
	w := &fn{c: c, f: f, index: make(map[uint64]int)}
	for off := 0; off < len(code); {
		x, err := x86asm.Decode(code[off:], 64)
		d := dec{x: x, addr: f.Entry + uint64(off)}
		if err != nil || x.Len == 0 {
			d = dec{addr: f.Entry + uint64(off), bad: true}
			d.x.Len = 1
			m.Sites.DecodeErrors++
		}
		w.index[d.addr] = len(w.ins)
		w.ins = append(w.ins, d)
		off += d.x.Len
	}

	name := qualify(f.Name, f.File)
	if cl, ok := FuncClass(name); ok {
		f.RuleClass, f.RuleMatched = cl, true
		for i := range w.ins {
			w.mark(i, cl, ReasonFunc, "")
		}
	} else {
		w.prologue()
		w.inlined()
		w.writeBarriers()
		w.safety()
	}

	leaders := map[uint64]bool{f.Entry: true}
	for i := range w.ins {
		d := &w.ins[i]
		if !d.bad && (d.transfers() || d.isCall()) {
			leaders[d.end()] = true
			if t, ok := d.target(); ok && !d.isCall() {
				leaders[t] = true
			}
		}
	}

	f.Insts = make([]Inst, len(w.ins))
	for i := range w.ins {
		d := &w.ins[i]
		in := Inst{Addr: d.addr, Len: d.x.Len, Class: Other, Reason: ReasonNone, Helper: d.helper, Leader: leaders[d.addr]}
		if d.set {
			in.Class, in.Reason = d.class, d.reason
		}
		if d.bad {
			in.Text = "?"
		} else {
			in.Text = x86asm.GoSyntax(d.x, d.addr, c.symname)
			if t, ok := d.target(); ok && d.isCall() && in.Helper == "" {
				in.Helper = c.funcName(t)
			}
		}
		f.Insts[i] = in
	}
}

// mark gives instruction i a class unless an earlier rule already did.
func (w *fn) mark(i int, cl Class, r Reason, helper string) {
	d := &w.ins[i]
	if d.set {
		return
	}
	d.class, d.reason, d.set = cl, r, true
	if helper != "" {
		d.helper = helper
	}
}

func (c *classifier) funcName(addr uint64) string {
	if f := c.m.FuncAt(addr); f != nil && f.Entry == addr {
		return f.Name
	}
	return ""
}

func (c *classifier) symname(addr uint64) (string, uint64) {
	if f := c.m.FuncAt(addr); f != nil {
		return f.Name, f.Entry
	}
	if addr >= c.wb.lo && addr < c.wb.hi {
		return "runtime.writeBarrier", c.wb.lo
	}
	return "", 0
}

// callee returns the function a direct call at i calls.
func (w *fn) callee(i int) string {
	d := &w.ins[i]
	if !d.isCall() {
		return ""
	}
	if t, ok := d.target(); ok {
		return w.c.funcName(t)
	}
	return ""
}

// at returns the index of the instruction starting at addr.
func (w *fn) at(addr uint64) (int, bool) {
	i, ok := w.index[addr]
	return i, ok
}

// nextNonNop returns the index of the first instruction at or after i
// that is not a NOP, or len(ins).
func (w *fn) nextNonNop(i int) int {
	for i < len(w.ins) && w.ins[i].isNop() {
		i++
	}
	return i
}

// isReg reports whether a is register r.
func isReg(a x86asm.Arg, r x86asm.Reg) bool {
	g, ok := a.(x86asm.Reg)
	return ok && g == r
}

// --- Prologue ---------------------------------------------------------

// prologue finds the entry stack-bound check and its morestack block:
//
//	[MOVQ FS:-8, R14]                            (assembly: load g from TLS)
//	[LEAQ -n(SP), R12 | MOVQ SP, R12; SUBQ $n, R12; JCS more]
//	CMPQ SP|R12, 16(R14)                         (24(R14) for stackguard1)
//	JLS more
//	...
//	more: spills; CALL runtime.morestack*; reloads; JMP entry
func (w *fn) prologue() {
	ins := w.ins
	i := 0
	g := x86asm.R14
	var seq []int
	if i < len(ins) && !ins[i].bad && ins[i].x.Op == x86asm.MOV {
		if mem, ok := ins[i].x.Args[1].(x86asm.Mem); ok && mem.Segment == x86asm.FS {
			if r, ok := ins[i].x.Args[0].(x86asm.Reg); ok {
				g = r
				seq = append(seq, i)
				i++
			}
		}
	}
	cmpReg := x86asm.RSP
	extraBranch := -1
	switch {
	case i < len(ins) && !ins[i].bad && ins[i].x.Op == x86asm.LEA && isReg(ins[i].x.Args[0], x86asm.R12):
		if mem, ok := ins[i].x.Args[1].(x86asm.Mem); ok && mem.Base == x86asm.RSP {
			cmpReg = x86asm.R12
			seq = append(seq, i)
			i++
		}
	case i+2 < len(ins) && !ins[i].bad && ins[i].x.Op == x86asm.MOV &&
		isReg(ins[i].x.Args[0], x86asm.R12) && isReg(ins[i].x.Args[1], x86asm.RSP) &&
		!ins[i+1].bad && ins[i+1].x.Op == x86asm.SUB && isReg(ins[i+1].x.Args[0], x86asm.R12) &&
		ins[i+2].isJcc():
		cmpReg = x86asm.R12
		extraBranch = i + 2
		seq = append(seq, i, i+1, i+2)
		i += 3
	}
	if i >= len(ins) || ins[i].bad || ins[i].x.Op != x86asm.CMP || !isReg(ins[i].x.Args[0], cmpReg) {
		return
	}
	mem, ok := ins[i].x.Args[1].(x86asm.Mem)
	if !ok || mem.Base != g || mem.Index != 0 || (mem.Disp != 16 && mem.Disp != 24) || mem.Segment != 0 {
		return
	}
	seq = append(seq, i)
	j := w.nextNonNop(i + 1)
	if j >= len(ins) || ins[j].x.Op != x86asm.JBE {
		return
	}
	for k := i + 1; k <= j; k++ {
		seq = append(seq, k)
	}
	for _, k := range seq {
		w.mark(k, Prologue, ReasonStackCheck, "")
	}
	w.c.m.Sites.StackChecks++

	more, _ := ins[j].target()
	if extraBranch >= 0 {
		if t, _ := ins[extraBranch].target(); t != more {
			w.c.m.note("%s: huge-frame stack check branches to two blocks", w.f.Name)
		}
	}
	k, ok := w.at(more)
	if !ok {
		return
	}
	var block []int
	called := false
	for ; k < len(ins); k++ {
		block = append(block, k)
		if ins[k].isCall() && isMorestack(w.callee(k)) {
			called = true
		}
		if ins[k].transfers() {
			break
		}
	}
	if !called || k == len(ins) || !ins[k].isJmp() {
		w.c.m.note("%s: stack check without a recognised morestack block", w.f.Name)
		return
	}
	for _, k := range block {
		w.mark(k, Prologue, ReasonMorestack, "")
	}
	w.c.m.Sites.Morestack++
}

// --- Inlined functions -------------------------------------------------

// inlined classifies instructions whose DWARF inlining chain holds a
// function that a name rule puts in GC, WriteBarrier or Safety.
func (w *fn) inlined() {
	idx := w.c.m.inl
	if idx == nil {
		return
	}
	rs := idx.within(w.f.Entry, w.f.End)
	if len(rs) == 0 {
		return
	}
	type hit struct {
		r  inlRange
		cl Class
	}
	var hits []hit
	for _, r := range rs {
		if cl, ok := FuncClass(r.name); ok && cl != Other && cl != Prologue {
			hits = append(hits, hit{r, cl})
		}
	}
	if len(hits) == 0 {
		return
	}
	// Innermost (deepest) match wins.
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].r.depth > hits[j].r.depth })
	for i := range w.ins {
		pc := w.ins[i].addr
		for _, h := range hits {
			if pc >= h.r.lo && pc < h.r.hi {
				w.mark(i, h.cl, ReasonInlined, h.r.name)
				break
			}
		}
	}
}

// --- Write barriers ----------------------------------------------------

// readsWB reports whether instruction d reads runtime.writeBarrier.
func (w *fn) readsWB(d *dec) bool {
	if d.bad || w.c.wb.lo == 0 {
		return false
	}
	for _, a := range d.x.Args {
		if a == nil {
			break
		}
		if mem, ok := a.(x86asm.Mem); ok && mem.Base == x86asm.RIP {
			addr := uint64(int64(d.end()) + mem.Disp)
			if addr >= w.c.wb.lo && addr < w.c.wb.hi {
				return true
			}
		}
	}
	return false
}

// writeBarriers finds the flag tests and their barrier paths:
//
//	CMPL runtime.writeBarrier(SB), $0
//	JEQ  store            | JNE wb
//	wb: [MOVQ (ptr), old]; CALL runtime.gcWriteBarrierN; MOVQ val, (R11); MOVQ old, 8(R11); [JMP store]
//	store: MOVQ val, (ptr)
func (w *fn) writeBarriers() {
	ins := w.ins
	for i := range ins {
		d := &ins[i]
		if !w.readsWB(d) {
			continue
		}
		seq := []int{i}
		var j int
		switch d.x.Op {
		case x86asm.CMP, x86asm.TEST:
			j = w.nextNonNop(i + 1)
			for k := i + 1; k < j; k++ {
				seq = append(seq, k)
			}
		case x86asm.MOV, x86asm.MOVZX:
			// Flag loaded into a register, tested later.
			r, ok := d.x.Args[0].(x86asm.Reg)
			if !ok {
				continue
			}
			j = -1
			for k := i + 1; k < len(ins) && k <= i+6 && !ins[k].transfers(); k++ {
				x := ins[k].x
				if (x.Op == x86asm.TEST && isReg(x.Args[0], r) && isReg(x.Args[1], r)) ||
					(x.Op == x86asm.CMP && isReg(x.Args[0], r) && x.Args[1] == x86asm.Imm(0)) {
					if n := w.nextNonNop(k + 1); n < len(ins) && ins[n].isJcc() {
						seq = append(seq, k)
						for q := k + 1; q < n; q++ {
							seq = append(seq, q)
						}
						j = n
					}
					break
				}
			}
			if j < 0 {
				continue
			}
		default:
			continue // a store (the GC setting the flag)
		}
		if j >= len(ins) || !ins[j].isJcc() {
			w.c.m.note("%s: writeBarrier read at %#x without a branch", w.f.Name, d.addr)
			continue
		}
		seq = append(seq, j)
		w.c.m.Sites.WBTests++
		path, helper, other := w.wbPath(j)
		if other >= 0 {
			seq = append(seq, other)
		}
		for _, k := range seq {
			w.mark(k, WriteBarrier, ReasonWBTest, helper)
		}
		if path == nil {
			continue // a source-level "if writeBarrier.enabled" test
		}
		w.c.m.Sites.WBPaths++
		for _, k := range path {
			w.mark(k, WriteBarrier, ReasonWBPath, "")
		}
	}
}

// wbPath returns the barrier path guarded by the branch at j and the
// barrier function it calls. The path taken when the flag is set is the
// branch target for JNE and the fall-through for JEQ; it ends with a JMP
// to the join point or falls into it. The join point is the other
// successor or, when that successor is a short block ending in a JMP (the
// reloads and flag recomputations that register allocation duplicates on
// both sides of the diamond), that JMP's target. When the path falls
// into that target, the JMP exists only to skip the path: it is returned
// as other, else other is -1.
func (w *fn) wbPath(j int) (path []int, helper string, other int) {
	ins := w.ins
	t, ok := ins[j].target()
	if !ok {
		return nil, "", -1
	}
	ti, ok := w.at(t)
	if !ok {
		return nil, "", -1
	}
	var start, alt int
	switch ins[j].x.Op {
	case x86asm.JNE:
		start, alt = ti, j+1
	case x86asm.JE:
		start, alt = j+1, ti
	default:
		return nil, "", -1
	}
	if alt >= len(ins) {
		return nil, "", -1
	}
	joins := map[uint64]bool{ins[alt].addr: true}
	other = -1
	for k := alt; k < len(ins) && k < alt+6; k++ {
		if ins[k].isJmp() {
			if x, ok := ins[k].target(); ok {
				joins[x] = true
				other = k
			}
			break
		}
		if ins[k].transfers() || ins[k].isCall() {
			break
		}
	}
	fellInto := uint64(0)
	for k := start; k < len(ins); k++ {
		if joins[ins[k].addr] {
			fellInto = ins[k].addr
			break
		}
		path = append(path, k)
		if ins[k].isCall() {
			name := w.callee(k)
			if !isWBCallee(name) {
				return nil, "", -1
			}
			if helper == "" {
				helper = name
			}
		}
		if ins[k].transfers() {
			if !ins[k].isJmp() {
				return nil, "", -1
			}
			break
		}
	}
	if helper == "" {
		return nil, "", -1
	}
	if other >= 0 {
		if x, _ := ins[other].target(); x != fellInto {
			other = -1 // the other side's JMP is not the diamond's
		}
	}
	return path, helper, other
}

// --- Safety checks -----------------------------------------------------

func (w *fn) safety() {
	ins := w.ins
	m := w.c.m

	// Explicit nil checks: TESTB AL, (reg).
	for i := range ins {
		x := ins[i].x
		if ins[i].bad || x.Op != x86asm.TEST || x.MemBytes != 1 || !isReg(x.Args[1], x86asm.AL) {
			continue
		}
		if mem, ok := x.Args[0].(x86asm.Mem); ok && mem.Base != 0 && mem.Base != x86asm.RIP &&
			mem.Index == 0 && mem.Disp == 0 && mem.Segment == 0 {
			w.mark(i, Safety, ReasonNilCheck, "")
			m.Sites.NilChecks++
		}
	}

	// Panic blocks: set-up instructions, CALL helper, padding. A branch to
	// any instruction of the set-up leads to the panic.
	entry := map[uint64]string{} // panic-block instruction → helper
	for c := range ins {
		helper := w.callee(c)
		if !IsCheckPanic(helper) {
			continue
		}
		s := c
		for s > 0 && s > c-12 && isSetup(&ins[s-1]) {
			s--
		}
		for k := s; k <= c; k++ {
			w.mark(k, Safety, ReasonPanicBlock, helper)
			entry[ins[k].addr] = helper
		}
		for k := c + 1; k < len(ins) && ins[k].isNop(); k++ {
			w.mark(k, Safety, ReasonPanicBlock, "")
		}
		m.Sites.PanicBlocks++
	}

	// Conditional branches with a panic block as a successor, directly or
	// through padding and JMPs (the layout often inverts a check into
	// "Jcc ok; JMP panic"), and the CMP/TEST that sets their flags.
	for j := range ins {
		if !ins[j].isJcc() {
			continue
		}
		t, _ := ins[j].target()
		helper, via, ok := w.toPanic(t, entry)
		if !ok {
			helper, via, ok = w.toPanic(ins[j].end(), entry)
		}
		if !ok {
			continue
		}
		w.mark(j, Safety, ReasonCheckBranch, helper)
		for _, k := range via {
			w.mark(k, Safety, ReasonCheckBranch, "")
		}
		m.Sites.CheckBranch++
		if k := w.flagSetter(j); k >= 0 {
			w.mark(k, Safety, ReasonCheckBranch, helper)
		}
	}

	w.divFixups()
}

// toPanic reports whether control reaching addr goes straight into a panic
// block, through at most a few NOPs and JMPs (returned in via).
func (w *fn) toPanic(addr uint64, entry map[uint64]string) (helper string, via []int, ok bool) {
	k, ok := w.at(addr)
	for steps := 0; ok && steps < 4; steps++ {
		for k < len(w.ins) && w.ins[k].isNop() && entry[w.ins[k].addr] == "" {
			via = append(via, k)
			k++
		}
		if k >= len(w.ins) {
			return "", nil, false
		}
		if h, found := entry[w.ins[k].addr]; found {
			return h, via, true
		}
		if !w.ins[k].isJmp() {
			break
		}
		via = append(via, k)
		var t uint64
		if t, ok = w.ins[k].target(); ok {
			k, ok = w.at(t)
		}
	}
	return "", nil, false
}

// flagSetter returns the CMP or TEST whose flags the branch at j tests,
// looking back over NOPs, or -1.
func (w *fn) flagSetter(j int) int {
	for k := j - 1; k >= 0 && k >= j-4; k-- {
		d := &w.ins[k]
		switch {
		case d.isNop():
			continue
		case !d.bad && (d.x.Op == x86asm.CMP || d.x.Op == x86asm.TEST):
			for n := k + 1; n < j; n++ {
				w.mark(n, Safety, ReasonCheckBranch, "")
			}
			return k
		}
		return -1
	}
	return -1
}

// isSetup reports whether d can be part of a panic block's argument
// set-up: a move, an address computation, or padding.
func isSetup(d *dec) bool {
	if d.bad {
		return false
	}
	switch d.x.Op {
	case x86asm.MOV, x86asm.MOVZX, x86asm.MOVSX, x86asm.MOVSXD, x86asm.LEA, x86asm.NOP, x86asm.XCHG,
		x86asm.MOVUPS, x86asm.MOVAPS:
		return true
	case x86asm.XOR:
		return d.x.Args[0] == d.x.Args[1] // zeroing
	}
	return false
}

// divFixups finds the signed-division fix-up the compiler emits when the
// divisor may be -1:
//
//	CMPQ BX, $-1
//	JNE  div          | JEQ fix
//	fix: NEGQ AX; XORL DX, DX; JMP done
//	div: CQO; IDIVQ BX
func (w *fn) divFixups() {
	ins := w.ins
	for i := range ins {
		x := ins[i].x
		if ins[i].bad || x.Op != x86asm.CMP || x.Args[1] != x86asm.Imm(-1) {
			continue
		}
		r, ok := x.Args[0].(x86asm.Reg)
		if !ok {
			continue
		}
		j := w.nextNonNop(i + 1)
		if j >= len(ins) || (ins[j].x.Op != x86asm.JNE && ins[j].x.Op != x86asm.JE) {
			continue
		}
		t, _ := ins[j].target()
		ti, ok := w.at(t)
		if !ok {
			continue
		}
		fix, div := j+1, ti
		if ins[j].x.Op == x86asm.JE {
			fix, div = ti, j+1
		}
		if !w.isIdiv(div, r) {
			continue
		}
		var block []int
		for k := fix; k < len(ins) && k < fix+6; k++ {
			block = append(block, k)
			if ins[k].transfers() {
				break
			}
		}
		if n := len(block); n == 0 || !ins[block[n-1]].isJmp() {
			continue
		}
		for k := i; k <= j; k++ {
			w.mark(k, Safety, ReasonDivFixup, "")
		}
		for _, k := range block {
			w.mark(k, Safety, ReasonDivFixup, "")
		}
		w.c.m.Sites.DivFixups++
	}
}

// isIdiv reports whether the code at k sign-extends and divides by r.
func (w *fn) isIdiv(k int, r x86asm.Reg) bool {
	k = w.nextNonNop(k)
	if k+1 >= len(w.ins) {
		return false
	}
	switch w.ins[k].x.Op {
	case x86asm.CQO, x86asm.CDQ, x86asm.CWD:
	default:
		return false
	}
	n := w.nextNonNop(k + 1)
	if n >= len(w.ins) {
		return false
	}
	d := &w.ins[n]
	return !d.bad && d.x.Op == x86asm.IDIV && isReg(d.x.Args[0], r)
}
