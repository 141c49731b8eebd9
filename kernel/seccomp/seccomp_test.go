package seccomp

import (
	"encoding/binary"
	"testing"
)

func stmt(code uint16, k uint32) Insn { return Insn{Code: code, K: k} }
func jmp(code uint16, k uint32, jt, jf uint8) Insn {
	return Insn{Code: code, Jt: jt, Jf: jf, K: k}
}

// allowOnly returns a filter that allows nr and answers other for the rest.
func allowOnly(nr, other uint32) []Insn {
	return []Insn{
		stmt(clsLD|szW|mdABS, 0),
		jmp(clsJMP|jmpJEQ|srcK, nr, 0, 1),
		stmt(clsRET|srcK, RetAllow),
		stmt(clsRET|srcK, other),
	}
}

func TestCheck(t *testing.T) {
	ok := allowOnly(39, RetErrno|1)
	if _, err := Check(ok); err != nil {
		t.Fatalf("a good filter: %v", err)
	}
	bad := map[string][]Insn{
		"empty":             nil,
		"no return last":    {stmt(clsLD|mdIMM, 1)},
		"unknown code":      {stmt(0xffff, 0), stmt(clsRET|srcK, 0)},
		"div by zero":       {stmt(clsALU|opDIV|srcK, 0), stmt(clsRET|srcA, 0)},
		"shift 32":          {stmt(clsALU|opLSH|srcK, 32), stmt(clsRET|srcA, 0)},
		"mem 16":            {stmt(clsST, 16), stmt(clsRET|srcA, 0)},
		"ja out":            {stmt(clsJMP|jmpJA, 1), stmt(clsRET|srcA, 0)},
		"jeq out":           {jmp(clsJMP|jmpJEQ|srcK, 0, 1, 0), stmt(clsRET|srcA, 0)},
		"load before store": {stmt(clsLD|mdMEM, 3), stmt(clsRET|srcA, 0)},
		"store on one path": {jmp(clsJMP|jmpJEQ|srcK, 0, 0, 1), stmt(clsST, 2), stmt(clsLD|mdMEM, 2), stmt(clsRET|srcA, 0)},
		"unaligned load":    {stmt(clsLD|szW|mdABS, 2), stmt(clsRET|srcA, 0)},
		"load past data":    {stmt(clsLD|szW|mdABS, 64), stmt(clsRET|srcA, 0)},
		"half-word load":    {stmt(clsLD|szH|mdABS, 0), stmt(clsRET|srcA, 0)},
		"indirect load":     {stmt(clsLD|szW|mdIND, 0), stmt(clsRET|srcA, 0)},
		"modulo":            {stmt(clsALU|opMOD|srcK, 3), stmt(clsRET|srcA, 0)},
		"ancillary":         {stmt(clsLD|szW|mdABS, skfAdOff), stmt(clsRET|srcA, 0)},
		"msh":               {stmt(clsLDX|szB|mdMSH, 0), stmt(clsRET|srcA, 0)},
	}
	for name, p := range bad {
		if _, err := Check(p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	good := []Insn{jmp(clsJMP|jmpJEQ|srcK, 0, 0, 1), stmt(clsST, 2), stmt(clsST, 2), stmt(clsLD|mdMEM, 2), stmt(clsLD|szW|mdLEN, 0), stmt(clsRET|srcA, 0)}
	out, err := Check(good)
	if err != nil {
		t.Fatalf("stores on both paths: %v", err)
	}
	if got := Run(out, &Data{}); got != DataSize {
		t.Errorf("the length load: %d, want %d", got, DataSize)
	}
}

func TestRunAndEval(t *testing.T) {
	d := &Data{Nr: 39, Arch: 0xc000003e, IP: 0x1122334455667788, Args: [6]uint64{0xaabbccdd00000001}}
	word := func(off uint32) uint32 {
		p, err := Check([]Insn{stmt(clsLD|szW|mdABS, off), stmt(clsRET|srcA, 0)})
		if err != nil {
			t.Fatal(err)
		}
		return Run(p, d)
	}
	for off, want := range map[uint32]uint32{0: 39, 4: 0xc000003e, 8: 0x55667788, 12: 0x11223344, 16: 1, 20: 0xaabbccdd} {
		if got := word(off); got != want {
			t.Errorf("word %d: %#x, want %#x", off, got, want)
		}
	}
	arith, err := Check([]Insn{stmt(clsLDX|mdIMM, 0), stmt(clsLD|mdIMM, 7), stmt(clsALU|opDIV|srcX, 0), stmt(clsRET|srcK, 5)})
	if err != nil {
		t.Fatal(err)
	}
	if got := Run(arith, d); got != 0 {
		t.Errorf("division by a zero X: %d, want 0", got)
	}
	a, _ := Check(allowOnly(39, RetErrno|1))
	b, _ := Check(allowOnly(39, RetTrap))
	c, _ := Check([]Insn{stmt(clsRET|srcK, RetErrno|7)})
	chain := &Filter{Prog: c, Prev: &Filter{Prog: b, Prev: &Filter{Prog: a}}}
	if got, _ := chain.Eval(d); got != RetErrno|7 {
		t.Errorf("errno over allow: %#x", got)
	}
	d.Nr = 1
	if got, m := chain.Eval(d); got != RetTrap || m != chain.Prev {
		t.Errorf("trap over errno: %#x", got)
	}
	kill, _ := Check([]Insn{stmt(clsRET|srcK, RetKillProcess)})
	if got, _ := (&Filter{Prog: kill, Prev: chain}).Eval(d); got != RetKillProcess {
		t.Errorf("kill-process first: %#x", got)
	}
	if chain.Count() != 3 || chain.Len() != len(a)+len(b)+len(c)+3*PathPenalty {
		t.Errorf("count %d len %d", chain.Count(), chain.Len())
	}
	if !chain.HasAncestor(chain.Prev) || chain.Prev.HasAncestor(chain) || !chain.HasAncestor(nil) {
		t.Error("ancestors")
	}
	var raw [16]byte
	binary.LittleEndian.PutUint16(raw[0:], clsRET|srcK)
	binary.LittleEndian.PutUint32(raw[4:], 9)
	if p := Decode(raw[:]); len(p) != 2 || p[0] != stmt(clsRET|srcK, 9) {
		t.Errorf("decode: %+v", p)
	}
}
