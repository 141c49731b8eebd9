package rseq

import (
	"testing"

	"shortbread/kernel/abi/linux"
)

const top = 1<<47 - 4096

// TestCall: registration and unregistration, with the errors in Linux
// 6.1's order.
func TestCall(t *testing.T) {
	none := Reg{}
	reg := Reg{Addr: 0x1000, Len: Size, Sig: 0x53053053}
	for _, c := range []struct {
		name   string
		cur    Reg
		addr   uint64
		length uint32
		flags  int32
		sig    uint32
		want   Reg
		err    error
	}{
		{"register", none, 0x1000, Size, 0, 0x53053053, reg, nil},
		{"again", reg, 0x1000, Size, 0, 0x53053053, reg, linux.EBUSY},
		{"again_other_sig", reg, 0x1000, Size, 0, 1, reg, linux.EPERM},
		{"again_other_addr", reg, 0x2000, Size, 0, 0x53053053, reg, linux.EINVAL},
		{"again_other_len", reg, 0x1000, 64, 0, 1, reg, linux.EINVAL},
		{"misaligned", none, 0x1010, Size, 0, 0, none, linux.EINVAL},
		{"short", none, 0x1000, 31, 0, 0, none, linux.EINVAL},
		{"long", none, 0x1000, 64, 0, 0, none, linux.EINVAL},
		{"misaligned_before_efault", none, top + 16, Size, 0, 0, none, linux.EINVAL},
		{"kernel_half", none, 0xffff800000000000, Size, 0, 0, none, linux.EFAULT},
		{"past_top", none, top, Size, 0, 0, none, linux.EFAULT},
		{"last_fits", none, top - 32, Size, 0, 0, Reg{top - 32, Size, 0}, nil},
		{"bad_flag", none, 0x1000, Size, 2, 0, none, linux.EINVAL},
		{"unregister", reg, 0x1000, Size, FlagUnregister, 0x53053053, none, nil},
		{"unregister_none", none, 0x1000, Size, FlagUnregister, 0x53053053, none, linux.EINVAL},
		{"unregister_other_addr", reg, 0x2000, Size, FlagUnregister, 0x53053053, reg, linux.EINVAL},
		{"unregister_other_len", reg, 0x1000, 64, FlagUnregister, 1, reg, linux.EINVAL},
		{"unregister_other_sig", reg, 0x1000, Size, FlagUnregister, 1, reg, linux.EPERM},
		{"unregister_extra_flag", reg, 0x1000, Size, FlagUnregister | 2, 0x53053053, reg, linux.EINVAL},
	} {
		got, err := Call(c.cur, c.addr, c.length, c.flags, c.sig, top)
		if got != c.want || err != c.err {
			t.Errorf("%s: got %+v, %v; want %+v, %v", c.name, got, err, c.want, c.err)
		}
	}
}

// TestCS: descriptor checks and the range test.
func TestCS(t *testing.T) {
	ok := CS{Start: 0x1000, PostCommitOffset: 0x10, Abort: 0x1020}
	if err := ok.Check(top); err != nil {
		t.Errorf("good descriptor: %v", err)
	}
	for name, cs := range map[string]CS{
		"version":        {Version: 1, Start: 0x1000, PostCommitOffset: 0x10, Abort: 0x1020},
		"start_kernel":   {Start: top, PostCommitOffset: 0, Abort: 0x1020},
		"end_kernel":     {Start: 0x1000, PostCommitOffset: top, Abort: 0x1020},
		"abort_kernel":   {Start: 0x1000, PostCommitOffset: 0x10, Abort: top},
		"abort_inside":   {Start: 0x1000, PostCommitOffset: 0x10, Abort: 0x100f},
		"abort_at_start": {Start: 0x1000, PostCommitOffset: 0x10, Abort: 0x1000},
	} {
		if err := cs.Check(top); err != linux.EINVAL {
			t.Errorf("%s: %v, want EINVAL", name, err)
		}
	}
	abortBelow := CS{Start: 0x1000, PostCommitOffset: 0x10, Abort: 0x800}
	if err := abortBelow.Check(top); err != nil {
		t.Errorf("abort below the range: %v", err)
	}
	for ip, in := range map[uint64]bool{0xfff: false, 0x1000: true, 0x100f: true, 0x1010: false} {
		if ok.Contains(ip) != in {
			t.Errorf("Contains(%#x) = %v", ip, !in)
		}
	}
	if ok.SigAddr() != 0x101c {
		t.Errorf("SigAddr %#x", ok.SigAddr())
	}
}
