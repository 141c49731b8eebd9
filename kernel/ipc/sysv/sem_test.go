package sysv

import (
	"errors"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

func TestSemAtomicAndUndo(t *testing.T) {
	s := NewSem(time.Now)
	id, err := s.Get(Private, 2, 0o600, vfs.Root)
	if err != nil {
		t.Fatal(err)
	}
	nowait := SemWait{HasTimeout: true, Timeout: -1}
	// Both or neither: the second cannot go, so the first is not applied.
	err = s.Op(id, []SemOp{{Num: 0, Op: 2}, {Num: 1, Op: -1}}, nowait, vfs.Root, 1, nil)
	if !errors.Is(err, linux.EAGAIN) {
		t.Fatalf("blocked pair: %v", err)
	}
	if v, _ := s.Ctl(id, 0, GetVal, 0, nil, nil, vfs.Root, 1); v != 0 {
		t.Errorf("half of a blocked pair applied: sem 0 = %d", v)
	}
	var u Undo
	if err := s.Op(id, []SemOp{{Num: 1, Op: 5, Flags: SemUndo}}, nowait, vfs.Root, 7, &u); err != nil {
		t.Fatal(err)
	}
	if err := s.Op(id, []SemOp{{Num: 1, Op: -2, Flags: SemUndo}}, nowait, vfs.Root, 7, &u); err != nil {
		t.Fatal(err)
	}
	s.Exit(&u, 7)
	if v, _ := s.Ctl(id, 1, GetVal, 0, nil, nil, vfs.Root, 1); v != 0 {
		t.Errorf("after exit with +5-2 undone: sem 1 = %d, want 0", v)
	}
	if err := s.Op(id, []SemOp{{Num: 0, Op: 32767}, {Num: 0, Op: 1}}, nowait, vfs.Root, 1, nil); !errors.Is(err, linux.ERANGE) {
		t.Errorf("past SEMVMX: %v", err)
	}
}
