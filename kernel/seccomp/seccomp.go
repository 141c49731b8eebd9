// Package seccomp holds seccomp's filter mode without the process layer:
// classic BPF programs checked as Linux 6.1 checks a seccomp filter
// (net/core/filter.c's rules for classic BPF, then seccomp's narrower
// set of instructions), run over a system call's seccomp_data, and the
// stack of filters a thread has, whose answers combine by precedence.
package seccomp

import (
	"encoding/binary"
	"errors"
)

// Insn is one classic BPF instruction (struct sock_filter).
type Insn struct {
	Code   uint16
	Jt, Jf uint8
	K      uint32
}

// InsnSize is the size of struct sock_filter; MaxInsns is BPF_MAXINSNS,
// the longest program; MaxPathInsns bounds a thread's filters together
// (MAX_INSNS_PER_PATH), each counting 4 more.
const (
	InsnSize     = 8
	MaxInsns     = 4096
	MaxPathInsns = 1 << 15
	PathPenalty  = 4
)

// Classic BPF's instruction classes, sizes, modes, operations and
// sources (include/uapi/linux/bpf_common.h, filter.h).
const (
	clsLD   = 0x00
	clsLDX  = 0x01
	clsST   = 0x02
	clsSTX  = 0x03
	clsALU  = 0x04
	clsJMP  = 0x05
	clsRET  = 0x06
	clsMISC = 0x07

	szW = 0x00
	szH = 0x08
	szB = 0x10

	mdIMM = 0x00
	mdABS = 0x20
	mdIND = 0x40
	mdMEM = 0x60
	mdLEN = 0x80
	mdMSH = 0xa0

	opADD = 0x00
	opSUB = 0x10
	opMUL = 0x20
	opDIV = 0x30
	opOR  = 0x40
	opAND = 0x50
	opLSH = 0x60
	opRSH = 0x70
	opNEG = 0x80
	opMOD = 0x90
	opXOR = 0xa0

	jmpJA   = 0x00
	jmpJEQ  = 0x10
	jmpJGT  = 0x20
	jmpJGE  = 0x30
	jmpJSET = 0x40

	srcK = 0x00
	srcX = 0x08
	srcA = 0x10 // BPF_RET's A

	miscTAX = 0x00
	miscTXA = 0x80

	memWords = 16 // BPF_MEMWORDS
	// skfAdOff is SKF_AD_OFF: absolute loads at and above it name
	// socket "ancillary" data, which no seccomp program may use.
	skfAdOff = 0xfffff000
)

// DataSize is sizeof(struct seccomp_data): nr, arch, the instruction
// pointer and six arguments.
const DataSize = 64

// Data is struct seccomp_data, what a filter reads.
type Data struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

// word is the 32-bit word at byte offset off (a multiple of 4 below
// DataSize, as Check ensured), in the machine's (little-endian) order.
func (d *Data) word(off uint32) uint32 {
	switch {
	case off == 0:
		return uint32(d.Nr)
	case off == 4:
		return d.Arch
	case off < 16:
		return uint32(d.IP >> (8 * (off - 8)))
	}
	a := d.Args[(off-16)/8]
	return uint32(a >> (8 * ((off - 16) % 8)))
}

// ErrInvalid is a program Linux refuses (EINVAL).
var ErrInvalid = errors.New("seccomp: invalid filter")

// Decode reads n instructions from b.
func Decode(b []byte) []Insn {
	prog := make([]Insn, len(b)/InsnSize)
	for i := range prog {
		e := b[i*InsnSize:]
		prog[i] = Insn{binary.LittleEndian.Uint16(e), e[2], e[3], binary.LittleEndian.Uint32(e[4:])}
	}
	return prog
}

// classicAllowed is the set of codes classic BPF knows (Linux's
// chk_code_allowed).
var classicAllowed = func() map[uint16]bool {
	m := map[uint16]bool{}
	for _, op := range []uint16{opADD, opSUB, opMUL, opDIV, opMOD, opAND, opOR, opXOR, opLSH, opRSH} {
		m[clsALU|op|srcK] = true
		m[clsALU|op|srcX] = true
	}
	m[clsALU|opNEG] = true
	for _, sz := range []uint16{szW, szH, szB} {
		m[clsLD|sz|mdABS] = true
		m[clsLD|sz|mdIND] = true
	}
	for _, c := range []uint16{clsLD | szW | mdLEN, clsLD | mdIMM, clsLD | mdMEM, clsLDX | szW | mdLEN,
		clsLDX | szB | mdMSH, clsLDX | mdIMM, clsLDX | mdMEM, clsST, clsSTX, clsMISC | miscTAX,
		clsMISC | miscTXA, clsRET | srcK, clsRET | srcA, clsJMP | jmpJA} {
		m[c] = true
	}
	for _, j := range []uint16{jmpJEQ, jmpJGT, jmpJGE, jmpJSET} {
		m[clsJMP|j|srcK] = true
		m[clsJMP|j|srcX] = true
	}
	return m
}()

func isCondJump(code uint16) bool {
	return code&7 == clsJMP && code != clsJMP|jmpJA && classicAllowed[code]
}

// Check validates prog as Linux does a seccomp filter: its length, then
// classic BPF's rules (known codes, no constant division by zero or
// shift past 31, scratch cells in range, jumps inside the program and
// forward, no ancillary loads, a return last, no scratch cell read
// before it is written on every path), then seccomp's (only 32-bit
// aligned loads inside seccomp_data, no packet loads, no modulo). It
// returns the program as it runs: loads of the length become the
// constant DataSize.
func Check(prog []Insn) ([]Insn, error) {
	n := len(prog)
	if n == 0 || n > MaxInsns {
		return nil, ErrInvalid
	}
	for pc, in := range prog {
		if !classicAllowed[in.Code] {
			return nil, ErrInvalid
		}
		switch in.Code {
		case clsALU | opDIV | srcK, clsALU | opMOD | srcK:
			if in.K == 0 {
				return nil, ErrInvalid
			}
		case clsALU | opLSH | srcK, clsALU | opRSH | srcK:
			if in.K >= 32 {
				return nil, ErrInvalid
			}
		case clsLD | mdMEM, clsLDX | mdMEM, clsST, clsSTX:
			if in.K >= memWords {
				return nil, ErrInvalid
			}
		case clsJMP | jmpJA:
			if in.K >= uint32(n-pc-1) {
				return nil, ErrInvalid
			}
		case clsLD | szW | mdABS, clsLD | szH | mdABS, clsLD | szB | mdABS:
			// No ancillary data exists for seccomp; the offsets Linux
			// would take for it are refused below anyway.
			if in.K >= skfAdOff {
				return nil, ErrInvalid
			}
		}
		if isCondJump(in.Code) && (pc+int(in.Jt)+1 >= n || pc+int(in.Jf)+1 >= n) {
			return nil, ErrInvalid
		}
	}
	if last := prog[n-1].Code; last != clsRET|srcK && last != clsRET|srcA {
		return nil, ErrInvalid
	}
	if !storesBeforeLoads(prog) {
		return nil, ErrInvalid
	}
	out := make([]Insn, n)
	for pc, in := range prog {
		switch c := in.Code; {
		case c == clsLD|szW|mdABS:
			if in.K >= DataSize || in.K&3 != 0 {
				return nil, ErrInvalid
			}
		case c == clsLD|szW|mdLEN:
			in = Insn{Code: clsLD | mdIMM, K: DataSize}
		case c == clsLDX|szW|mdLEN:
			in = Insn{Code: clsLDX | mdIMM, K: DataSize}
		case c&7 == clsALU && c&0xf0 == opMOD:
			return nil, ErrInvalid
		case c&7 == clsLD && c != clsLD|mdIMM && c != clsLD|mdMEM:
			return nil, ErrInvalid // the packet loads: H/B ABS, IND
		case c == clsLDX|szB|mdMSH:
			return nil, ErrInvalid
		}
		out[pc] = in
	}
	return out, nil
}

// storesBeforeLoads is Linux's check_load_and_stores: along every path a
// scratch cell must be stored before it is loaded. Jumps only go
// forward, so one pass carries the cells known written to each target.
func storesBeforeLoads(prog []Insn) bool {
	masks := make([]uint16, len(prog))
	for i := range masks {
		masks[i] = 0xffff
	}
	valid := uint16(0)
	for pc, in := range prog {
		valid &= masks[pc]
		switch {
		case in.Code == clsST || in.Code == clsSTX:
			valid |= 1 << in.K
		case in.Code == clsLD|mdMEM || in.Code == clsLDX|mdMEM:
			if valid&(1<<in.K) == 0 {
				return false
			}
		case in.Code == clsJMP|jmpJA:
			masks[pc+1+int(in.K)] &= valid
			valid = 0xffff
		case isCondJump(in.Code):
			masks[pc+1+int(in.Jt)] &= valid
			masks[pc+1+int(in.Jf)] &= valid
			valid = 0xffff
		}
	}
	return true
}

// Run runs a program Check accepted over d and returns its answer. A
// division by a zero X register ends it with 0, as classic BPF does.
func Run(prog []Insn, d *Data) uint32 {
	var a, x uint32
	var mem [memWords]uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case clsLD | szW | mdABS:
			a = d.word(in.K)
		case clsLD | mdIMM:
			a = in.K
		case clsLDX | mdIMM:
			x = in.K
		case clsLD | mdMEM:
			a = mem[in.K]
		case clsLDX | mdMEM:
			x = mem[in.K]
		case clsST:
			mem[in.K] = a
		case clsSTX:
			mem[in.K] = x
		case clsMISC | miscTAX:
			x = a
		case clsMISC | miscTXA:
			a = x
		case clsRET | srcK:
			return in.K
		case clsRET | srcA:
			return a
		case clsJMP | jmpJA:
			pc += int(in.K)
		case clsALU | opNEG:
			a = -a
		default:
			v := in.K
			if in.Code&srcX != 0 {
				v = x
			}
			switch in.Code &^ srcX {
			case clsALU | opADD:
				a += v
			case clsALU | opSUB:
				a -= v
			case clsALU | opMUL:
				a *= v
			case clsALU | opDIV:
				if v == 0 {
					return 0
				}
				a /= v
			case clsALU | opAND:
				a &= v
			case clsALU | opOR:
				a |= v
			case clsALU | opXOR:
				a ^= v
			case clsALU | opLSH:
				a <<= v & 31 // a shift by X is masked, as the CPU does
			case clsALU | opRSH:
				a >>= v & 31
			case clsJMP | jmpJEQ:
				pc += jump(a == v, in)
			case clsJMP | jmpJGT:
				pc += jump(a > v, in)
			case clsJMP | jmpJGE:
				pc += jump(a >= v, in)
			case clsJMP | jmpJSET:
				pc += jump(a&v != 0, in)
			}
		}
	}
	return 0 // not reached: Check requires a return last
}

func jump(cond bool, in Insn) int {
	if cond {
		return int(in.Jt)
	}
	return int(in.Jf)
}

// The return actions (SECCOMP_RET_*), the action part of an answer and
// its data part.
const (
	RetKillProcess = 0x80000000
	RetKillThread  = 0x00000000
	RetTrap        = 0x00030000
	RetErrno       = 0x00050000
	RetUserNotif   = 0x7fc00000
	RetTrace       = 0x7ff00000
	RetLog         = 0x7ffc0000
	RetAllow       = 0x7fff0000
	RetActionFull  = 0xffff0000
	RetData        = 0x0000ffff
)

// Filter is one attached program, with the filters attached before it.
type Filter struct {
	Prog []Insn
	Prev *Filter
	Log  bool // SECCOMP_FILTER_FLAG_LOG
}

// Len is the number of instructions the thread's filters count toward
// MaxPathInsns.
func (f *Filter) Len() int {
	n := 0
	for ; f != nil; f = f.Prev {
		n += len(f.Prog) + PathPenalty
	}
	return n
}

// Count is the number of filters (Seccomp_filters in /proc).
func (f *Filter) Count() int {
	n := 0
	for ; f != nil; f = f.Prev {
		n++
	}
	return n
}

// HasAncestor reports whether a is f or one attached before it (nil is
// everyone's ancestor).
func (f *Filter) HasAncestor(a *Filter) bool {
	if a == nil {
		return true
	}
	for ; f != nil; f = f.Prev {
		if f == a {
			return true
		}
	}
	return false
}

// Eval runs every filter, newest first, and returns the answer with the
// most urgent action (the lowest, as a signed number: kill-process
// first, allow last), the first of equals, and the filter that gave it.
func (f *Filter) Eval(d *Data) (uint32, *Filter) {
	ret := uint32(RetAllow)
	var match *Filter
	for ; f != nil; f = f.Prev {
		cur := Run(f.Prog, d)
		if int32(cur&RetActionFull) < int32(ret&RetActionFull) {
			ret, match = cur, f
		}
	}
	return ret, match
}

// KnownAction reports whether SECCOMP_GET_ACTION_AVAIL knows action.
func KnownAction(action uint32) bool {
	switch action {
	case RetKillProcess, RetKillThread, RetTrap, RetErrno, RetUserNotif, RetTrace, RetLog, RetAllow:
		return true
	}
	return false
}
