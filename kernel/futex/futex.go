// Package futex holds the arithmetic of futex(2) words that does not
// depend on where a word lives or who waits on it: FUTEX_WAKE_OP's
// encoded operation, and the bits of a priority-inheritance or robust
// lock word (include/uapi/linux/futex.h).
package futex

// The bits of a lock word: the owner's thread ID in the low 30 bits, and
// two flags the kernel and the C library share.
const (
	Waiters   = 0x80000000 // someone waits in the kernel: unlock through it
	OwnerDied = 0x40000000 // the owner died holding the lock
	TIDMask   = 0x3fffffff
)

// Op is FUTEX_WAKE_OP's operation, encoded as Linux does it:
// bit 31 shifts the argument (1<<oparg), bits 28-30 the operation, bits
// 24-27 the comparison, bits 12-23 the operation's argument and bits 0-11
// the comparison's, both signed.
type Op uint32

// The operations and comparisons Linux knows.
const (
	OpSet  = 0
	OpAdd  = 1
	OpOr   = 2
	OpAndN = 3
	OpXor  = 4

	CmpEq = 0
	CmpNe = 1
	CmpLt = 2
	CmpLe = 3
	CmpGt = 4
	CmpGe = 5
)

// Encode builds an Op (FUTEX_OP in the header).
func Encode(op, oparg, cmp, cmparg int) Op {
	return Op(uint32(op&15)<<28 | uint32(cmp&15)<<24 | uint32(oparg&0xfff)<<12 | uint32(cmparg&0xfff))
}

// ValidOp reports whether the operation is one Linux knows. An unknown
// one fails (ENOSYS) before the word is touched; an unknown comparison
// fails only after the word was updated, as on Linux.
func (o Op) ValidOp() bool { return (o>>28)&7 <= OpXor }

// arg is the operation's argument: 12 bits, signed; with the shift bit,
// one bit shifted by it (Linux masks a shift outside 0-31 to 5 bits and
// logs a warning).
func (o Op) arg() uint32 {
	a := int32(uint32(o)<<8) >> 20
	if o&0x80000000 != 0 {
		return 1 << (uint32(a) & 31)
	}
	return uint32(a)
}

// Apply returns the word's new value from its old one.
func (o Op) Apply(old uint32) uint32 {
	a := o.arg()
	switch (o >> 28) & 7 {
	case OpSet:
		return a
	case OpAdd:
		return old + a
	case OpOr:
		return old | a
	case OpAndN:
		return old &^ a
	case OpXor:
		return old ^ a
	}
	return old
}

// Compare compares the word's old value, signed, with the comparison's
// argument; ok is false for an unknown comparison.
func (o Op) Compare(old uint32) (result, ok bool) {
	v, a := int32(old), int32(uint32(o)<<20)>>20
	switch (o >> 24) & 15 {
	case CmpEq:
		return v == a, true
	case CmpNe:
		return v != a, true
	case CmpLt:
		return v < a, true
	case CmpLe:
		return v <= a, true
	case CmpGt:
		return v > a, true
	case CmpGe:
		return v >= a, true
	}
	return false, false
}

// Acquired is the word a locker writes when it takes a lock word that
// names no owner: its TID, keeping OwnerDied so the C library reports the
// previous owner's death (EOWNERDEAD).
func Acquired(old, tid uint32) uint32 { return old&OwnerDied | tid }

// HandedOff is the word when the kernel gives a contended lock to a
// waiter whose owner died: the waiter's TID, Waiters, and OwnerDied if
// the robust list set it.
func HandedOff(old, tid uint32) uint32 { return old&OwnerDied | tid | Waiters }

// Died is the word after its owner died holding it (the robust list's
// handling): no owner, OwnerDied, and Waiters kept.
func Died(old uint32) uint32 { return old&Waiters | OwnerDied }
