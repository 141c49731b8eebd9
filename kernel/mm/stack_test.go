package mm

import (
	"errors"
	"testing"
)

// A growing stack is extended by faults and copies below it, down to its
// floor, clear of the mapping below by the guard gap, and only while the
// space stays within RLIMIT_AS.
func TestStackGrows(t *testing.T) {
	s, _, _ := newTestSpace(t, 1000)
	const top = 0x7f0000000000
	floor := uintptr(top - 64*PageSize)
	if err := s.Map(VMA{Start: top - PageSize, End: top, Prot: ProtRead | ProtWrite, Name: "[stack]", GrowsDown: true, Floor: floor}); err != nil {
		t.Fatal(err)
	}
	if got := s.StackBytes(); got != PageSize {
		t.Fatalf("StackBytes = %d, want one page", got)
	}
	if err := s.Fault(top-3*PageSize+8, true, false); err != nil {
		t.Fatalf("fault two pages below the stack: %v", err)
	}
	if got := s.StackBytes(); got != 3*PageSize {
		t.Errorf("after the fault StackBytes = %d, want 3 pages", got)
	}
	if err := s.CopyOut(top-5*PageSize, make([]byte, 2*PageSize)); err != nil {
		t.Errorf("copy below the stack: %v", err)
	}
	if got := s.StackBytes(); got != 5*PageSize {
		t.Errorf("after the copy StackBytes = %d, want 5 pages", got)
	}
	if err := s.Fault(floor-1, true, false); !errors.Is(err, ErrNoMap) {
		t.Errorf("fault below the floor: %v, want ErrNoMap", err)
	}
	s.SetLimit(s.MappedBytes() + 2*PageSize)
	if err := s.Fault(top-7*PageSize, true, false); err != nil {
		t.Errorf("growth to the RLIMIT_AS limit: %v", err)
	}
	if err := s.Fault(top-8*PageSize, true, false); !errors.Is(err, ErrNoMap) {
		t.Errorf("growth past RLIMIT_AS: %v, want ErrNoMap", err)
	}
	s.SetLimit(0)
	// A mapping below keeps the stack StackGuardGap away.
	below := uintptr(top - 7*PageSize - StackGuardGap)
	if err := s.Map(VMA{Start: below - PageSize, End: below, Prot: ProtRead}); err != nil {
		t.Fatal(err)
	}
	if err := s.GrowStack(below + StackGuardGap - PageSize); !errors.Is(err, ErrNoMem) {
		t.Errorf("growth into the guard gap: %v, want ErrNoMem", err)
	}
	if got := s.StackBytes(); got != 7*PageSize {
		t.Errorf("StackBytes = %d, want 7 pages", got)
	}
}
