package futex

import "testing"

func TestOp(t *testing.T) {
	for _, c := range []struct {
		op         Op
		old, new   uint32
		result, ok bool
		validOp    bool
	}{
		{Encode(OpSet, 5, CmpEq, 3), 3, 5, true, true, true},
		{Encode(OpAdd, -1, CmpGt, 0), 1, 0, true, true, true},
		{Encode(OpAdd, -1, CmpGt, 0), 0, 0xffffffff, false, true, true},
		{Encode(OpOr, 6, CmpNe, 1), 1, 7, false, true, true},
		{Encode(OpAndN, 6, CmpLt, -1), 0xfffffffe, 0xfffffff8, true, true, true}, // -2 < -1
		{Encode(OpXor, 0xfff, CmpLe, 2047), 0, 0xffffffff, true, true, true},     // oparg -1
		{Encode(OpXor, 1, CmpGe, -2048), 0x80000000, 0x80000001, false, true, true},
		{Encode(OpSet|8, 3, CmpEq, 0), 0, 8, true, true, true},           // shifted argument
		{Encode(OpSet|8, 33, CmpEq, 0), 0, 2, true, true, true},          // shift masked to 5 bits
		{Encode(OpSet|8, -1, CmpEq, 0), 0, 0x80000000, true, true, true}, // -1 & 31 = 31
		{Encode(OpSet, 1, 6, 0), 0, 1, false, false, true},               // unknown comparison
		{Encode(5, 1, CmpEq, 0), 0, 0, false, true, false},               // unknown operation
		{Encode(7|8, 1, CmpEq, 0), 0, 0, false, true, false},
	} {
		if got := c.op.ValidOp(); got != c.validOp {
			t.Errorf("%#x: ValidOp %v", uint32(c.op), got)
			continue
		}
		if !c.validOp {
			continue
		}
		if got := c.op.Apply(c.old); got != c.new {
			t.Errorf("%#x on %#x: %#x, want %#x", uint32(c.op), c.old, got, c.new)
		}
		r, ok := c.op.Compare(c.old)
		if r != c.result || ok != c.ok {
			t.Errorf("%#x compare %#x: %v %v, want %v %v", uint32(c.op), c.old, r, ok, c.result, c.ok)
		}
	}
}

func TestLockWords(t *testing.T) {
	if got := Acquired(OwnerDied, 7); got != OwnerDied|7 {
		t.Errorf("Acquired %#x", got)
	}
	if got := Acquired(0, 7); got != 7 {
		t.Errorf("Acquired %#x", got)
	}
	if got := Died(Waiters | 42); got != Waiters|OwnerDied {
		t.Errorf("Died %#x", got)
	}
	if got := Died(42); got != OwnerDied {
		t.Errorf("Died %#x", got)
	}
	if got := HandedOff(Waiters|OwnerDied, 9); got != Waiters|OwnerDied|9 {
		t.Errorf("HandedOff %#x", got)
	}
	if got := HandedOff(Waiters|5, 9); got != Waiters|9 {
		t.Errorf("HandedOff %#x", got)
	}
}
