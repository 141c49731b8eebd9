package mm

import (
	"encoding/binary"
	"errors"
	"sync"
	"testing"
)

func TestUpdateWord(t *testing.T) {
	s, _, _ := newTestSpace(t, 1000)
	s.Map(VMA{Start: 0x400000, End: 0x401000, Prot: ProtRead | ProtWrite})
	s.Map(VMA{Start: 0x401000, End: 0x402000, Prot: ProtRead})
	s.CopyOut(0x400010, []byte{5, 0, 0, 0})
	old, err := s.UpdateWord(0x400010, func(v uint32) (uint32, bool) { return v + 2, true })
	var b [4]byte
	s.CopyIn(0x400010, b[:])
	if err != nil || old != 5 || binary.LittleEndian.Uint32(b[:]) != 7 {
		t.Errorf("add: old %d, now %d, %v", old, binary.LittleEndian.Uint32(b[:]), err)
	}
	old, _ = s.UpdateWord(0x400010, func(v uint32) (uint32, bool) { return 0, false })
	s.CopyIn(0x400010, b[:])
	if old != 7 || binary.LittleEndian.Uint32(b[:]) != 7 {
		t.Errorf("no store: old %d, now %v", old, b)
	}
	for _, va := range []uintptr{0x400011, 0x401000, 0x402000, UserTop} {
		if _, err := s.UpdateWord(va, func(v uint32) (uint32, bool) { return 1, true }); !errors.Is(err, ErrFault) {
			t.Errorf("UpdateWord(%#x) = %v, want ErrFault", va, err)
		}
	}
	// Concurrent increments all land.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				s.UpdateWord(0x400020, func(v uint32) (uint32, bool) { return v + 1, true })
			}
		}()
	}
	wg.Wait()
	s.CopyIn(0x400020, b[:])
	if n := binary.LittleEndian.Uint32(b[:]); n != 4000 {
		t.Errorf("4000 increments made %d", n)
	}
}
