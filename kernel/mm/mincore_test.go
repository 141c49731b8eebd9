package mm

import (
	"errors"
	"testing"
)

func TestResident(t *testing.T) {
	s, fp, _ := newTestSpace(t, 1000)
	if err := s.Map(VMA{Start: 0x500000, End: 0x504000, Prot: ProtRead | ProtWrite}); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if err := s.Resident(0x500000, got); err != nil || string(got) != "\x00\x00\x00\x00" {
		t.Errorf("untouched: %v %v", got, err)
	}
	for _, va := range []uintptr{0x500000, 0x502010} {
		if err := s.Fault(va, true, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Fault(0x503000, false, false); err != nil { // a read: the zero page
		t.Fatal(err)
	}
	if err := s.Resident(0x500000, got); err != nil || string(got) != "\x01\x00\x01\x01" {
		t.Errorf("after faults: %v %v, want 1 0 1 1", got, err)
	}
	if err := s.Discard(0x502000, 0x1000); err != nil {
		t.Fatal(err)
	}
	if err := s.Resident(0x500000, got); err != nil || got[2] != 0 {
		t.Errorf("after discarding page 2: %v %v", got, err)
	}
	if err := s.Resident(0x500001, got); !errors.Is(err, ErrInval) {
		t.Errorf("unaligned: %v, want ErrInval", err)
	}
	if err := s.Resident(0x502000, make([]byte, 3)); !errors.Is(err, ErrNoMem) {
		t.Errorf("past the mapping: %v, want ErrNoMem", err)
	}
	// A shared object's page counts when the object holds it, mapped
	// here or not (Linux answers from the page cache).
	o := NewShm(fp)
	defer o.DecRef()
	if _, err := o.Page(1, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Map(VMA{Start: 0x600000, End: 0x603000, Prot: ProtRead, Shm: o}); err != nil {
		t.Fatal(err)
	}
	got = got[:3]
	if err := s.Resident(0x600000, got); err != nil || string(got) != "\x00\x01\x00" {
		t.Errorf("object pages: %v %v, want 0 1 0", got, err)
	}
}
