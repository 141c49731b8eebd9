package mm

import (
	"bytes"
	"errors"
	"testing"
	"unsafe"
)

// arenaPhys is physical memory in one Go array, so that it has a direct
// map: frame pa is arena[pa:pa+PageSize]. Frame 0 stays unused (0 means
// none) and kernelPTAddr's frame stands for the shared kernel table.
type arenaPhys struct {
	arena []byte
	next  uintptr
}

func newArenaPhys(frames int) *arenaPhys {
	return &arenaPhys{arena: make([]byte, frames*PageSize), next: kernelPTAddr + PageSize}
}

func (p *arenaPhys) Alloc() uintptr {
	if int(p.next) >= len(p.arena) {
		return 0
	}
	pa := p.next
	p.next += PageSize
	clear(p.arena[pa : pa+PageSize])
	return pa
}

func (p *arenaPhys) Free(uintptr) {}

func (p *arenaPhys) Page(pa uintptr) *[PageSize]byte {
	return (*[PageSize]byte)(p.arena[pa : pa+PageSize])
}

func (p *arenaPhys) DirectMap() unsafe.Pointer { return unsafe.Pointer(&p.arena[0]) }

// pageOnly hides an arenaPhys's direct map: the same memory reached
// through Page alone.
type pageOnly struct{ *arenaPhys }

func (p pageOnly) DirectMap() {}

// TestDirectMapCopies: copies through a space whose Phys has a direct
// map (page tables walked and frames reached without calling Page) see
// the same memory as through Page, and fault the same way.
func TestDirectMapCopies(t *testing.T) {
	ap := newArenaPhys(256)
	s, err := NewSpace(ap, initAS(ap), reserved, TLB{})
	if err != nil {
		t.Fatal(err)
	}
	if s.direct == nil {
		t.Fatal("a DirectPhys gave the space no direct map")
	}
	// readSlow reads user memory the ordinary way: walk and Page.
	readSlow := func(va uintptr, b []byte) {
		t.Helper()
		for i := range b {
			pte := walk(pageOnly{ap}, s.root, va+uintptr(i), false)
			if pte == nil || *pte&PTEPresent == 0 {
				t.Fatalf("no page at %#x", va+uintptr(i))
			}
			b[i] = ap.Page(uintptr(*pte & pteAddr))[(va+uintptr(i))&(PageSize-1)]
		}
	}

	data := bytes.Repeat([]byte("0123456789abcdef"), 512) // two pages
	if err := s.Map(VMA{Start: 0x400000, End: 0x403000, Prot: ProtRead | ProtWrite, Data: data}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 40)
	if err := s.CopyIn(0x400000+4080, buf); err != nil { // across a page boundary
		t.Fatal(err)
	}
	if !bytes.Equal(buf, data[4080:4120]) {
		t.Errorf("read %q, want %q", buf, data[4080:4120])
	}
	msg := []byte("written through the direct map\x00")
	if err := s.CopyOut(0x400000+4090, msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if readSlow(0x400000+4090, got); !bytes.Equal(got, msg) {
		t.Errorf("read back without the direct map: %q", got)
	}
	if str, err := s.CopyInString(0x400000+4090, 100); err != nil || str != string(msg[:len(msg)-1]) {
		t.Errorf("CopyInString: %q %v", str, err)
	}
	for _, va := range []uintptr{0x403000, 0x1000, 16<<20 + 8, UserTop - 4} {
		if err := s.CopyIn(va, buf[:4]); !errors.Is(err, ErrFault) {
			t.Errorf("CopyIn at %#x: %v, want ErrFault", va, err)
		}
	}
	if err := s.Protect(0x400000, PageSize, ProtRead); err != nil {
		t.Fatal(err)
	}
	if err := s.CopyOut(0x400010, msg); !errors.Is(err, ErrFault) {
		t.Errorf("CopyOut to a read-only page: %v, want ErrFault", err)
	}
	if err := s.CopyIn(0x400010, buf); err != nil || !bytes.Equal(buf, data[16:56]) {
		t.Errorf("CopyIn from a read-only page: %q %v", buf, err)
	}
}
