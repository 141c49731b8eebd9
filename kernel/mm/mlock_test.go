package mm

import (
	"errors"
	"testing"
)

// Lock marks and populates; on-fault locking only marks; Unlock of a part
// splits; a fork child's mappings are not locked; holes are ErrNoMem;
// mlockall's future flag is reported for new mappings.
func TestLock(t *testing.T) {
	s, fp, _ := newTestSpace(t, 1000)
	if err := s.Map(VMA{Start: 0x500000, End: 0x510000, Prot: ProtRead | ProtWrite}); err != nil {
		t.Fatal(err)
	}
	r0 := s.ResidentPages()
	if err := s.Lock(0x500000, 0x4000, false); err != nil {
		t.Fatal(err)
	}
	if got := s.ResidentPages() - r0; got != 4 {
		t.Errorf("locking 4 pages made %d present", got)
	}
	if err := s.Lock(0x508000, 0x4000, true); err != nil {
		t.Fatal(err)
	}
	if got := s.ResidentPages() - r0; got != 4 {
		t.Errorf("on-fault locking made pages present: %d", got)
	}
	if got := s.LockedBytes(); got != 0x8000 {
		t.Errorf("LockedBytes %#x, want 0x8000", got)
	}
	if got := s.LockedIn(0x502000, 0x8000); got != 0x4000 {
		t.Errorf("LockedIn %#x, want 0x4000", got)
	}
	if err := s.Unlock(0x501000, 0x1000); err != nil {
		t.Fatal(err)
	}
	if got := s.LockedBytes(); got != 0x7000 {
		t.Errorf("after unlocking a page: %#x", got)
	}
	c, err := s.Fork(initAS(testPhys{fp}))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.LockedBytes(); got != 0 {
		t.Errorf("fork child has %#x locked", got)
	}
	c.Destroy() // the copy-on-write table is shared by every test
	defer s.Destroy()
	if err := s.Lock(0x50f000, 0x2000, false); !errors.Is(err, ErrNoMem) {
		t.Errorf("locking across the end of the mappings: %v, want ErrNoMem", err)
	}
	if err := s.LockAll(false, true, false); err != nil {
		t.Fatal(err)
	}
	if future, onFault := s.LocksNew(); !future || onFault {
		t.Errorf("LocksNew after MCL_FUTURE: %v %v", future, onFault)
	}
	s.UnlockAll()
	if future, _ := s.LocksNew(); future || s.LockedBytes() != 0 {
		t.Error("UnlockAll left locks")
	}
}
