package mm

import (
	"errors"
	"testing"
)

// RLIMIT_DATA counts private writable mappings other than the stack, the
// break included, through every way a mapping is made or made writable.
func TestDataLimit(t *testing.T) {
	s, _, _ := newTestSpace(t, 1000)
	const top = 0x7f0000000000
	s.SetDataLimit(16 * PageSize)
	rw := VMA{Prot: ProtRead | ProtWrite}
	if _, err := s.MapAnywhere(0, 10*PageSize, rw, top); err != nil {
		t.Fatalf("10 of 16 pages: %v", err)
	}
	if _, err := s.MapAnywhere(0, 8*PageSize, rw, top); !errors.Is(err, ErrNoMem) {
		t.Errorf("18 of 16 pages by MapAnywhere: %v, want ErrNoMem", err)
	}
	if err := s.Map(VMA{Start: 0x10000000, End: 0x10000000 + 8*PageSize, Prot: ProtRead | ProtWrite}); !errors.Is(err, ErrNoMem) {
		t.Errorf("18 of 16 pages by Map: %v, want ErrNoMem", err)
	}
	ro, err := s.MapAnywhere(0, 64*PageSize, VMA{Prot: ProtRead}, top)
	if err != nil {
		t.Fatalf("read-only is not data: %v", err)
	}
	if _, err := s.MapAnywhere(0, 64*PageSize, VMA{Prot: ProtRead | ProtWrite, Name: "[stack]"}, top); err != nil {
		t.Errorf("the stack is not data: %v", err)
	}
	if _, err := s.MapAnywhere(0, 64*PageSize, VMA{Prot: ProtRead | ProtWrite, Shm: NewShm(s.phys)}, top); err != nil {
		t.Errorf("shared memory is not data: %v", err)
	}
	if err := s.Protect(ro, 64*PageSize, ProtRead|ProtWrite); !errors.Is(err, ErrNoMem) {
		t.Errorf("mprotect of 64 read-only pages to writable: %v, want ErrNoMem", err)
	}
	if err := s.Protect(ro, 6*PageSize, ProtRead|ProtWrite); err != nil {
		t.Errorf("mprotect of 6 pages, to exactly the limit: %v", err)
	}
	s.SetBrk(0x20000000)
	if got := s.Brk(0x20000000 + PageSize); got != 0x20000000 {
		t.Errorf("break past the limit moved to %#x", got)
	}
	s.SetDataLimit(0)
	if got := s.Brk(0x20000000 + PageSize); got != 0x20000000+PageSize {
		t.Errorf("break without a limit: %#x", got)
	}
}
