package mm

import (
	"bytes"
	"errors"
	"slices"
	"sync"
	"testing"
)

// fakePhys is physical memory made of Go pages; address 0 means none.
// It is locked: tests fault and copy from several goroutines.
type fakePhys struct {
	mu    sync.Mutex
	pages map[uintptr]*[PageSize]byte
	next  uintptr
	limit int
	freed int
	// onAlloc, if set, runs (once) at the next Alloc: a test's way to
	// interleave another address space's work at that point.
	onAlloc func()
}

func newFakePhys(limit int) *fakePhys {
	return &fakePhys{pages: make(map[uintptr]*[PageSize]byte), next: 1 << 20, limit: limit}
}

func (p *fakePhys) Alloc() uintptr {
	p.mu.Lock()
	f := p.onAlloc
	p.onAlloc = nil
	p.mu.Unlock()
	if f != nil {
		f()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pages) >= p.limit {
		return 0
	}
	pa := p.next
	p.next += PageSize
	p.pages[pa] = new([PageSize]byte)
	return pa
}

// inUse is the number of frames allocated and not freed.
func (p *fakePhys) inUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pages)
}

func (p *fakePhys) Free(pa uintptr) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.pages[pa]; !ok {
		panic("free of a frame not allocated")
	}
	delete(p.pages, pa)
	p.freed++
}

func (p *fakePhys) Page(pa uintptr) *[PageSize]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	pg, ok := p.pages[pa]
	if !ok {
		panic("access to a frame not allocated")
	}
	return pg
}

// kernelPT stands for a shared kernel page table (never freed by mm).
var kernelPT = &[PageSize]byte{}

const kernelPTAddr = 0x1000

type testPhys struct{ *fakePhys }

func (p testPhys) Page(pa uintptr) *[PageSize]byte {
	if pa == kernelPTAddr {
		return kernelPT
	}
	return p.fakePhys.Page(pa)
}

var reserved = [][2]uintptr{{0, 2 << 20}, {16 << 20, 20 << 20}}

// initAS mimics the machine layer: kernel half in the PML4 without the
// user bit, and the reserved 2 MiB ranges pointing at a kernel table.
func initAS(p Phys) func(pml4, pdpt, pd uintptr) error {
	return func(pml4, pdpt, pd uintptr) error {
		entries(p, pml4)[0] = uint64(pdpt) | PTEPresent | PTEWrite | PTEUser
		entries(p, pml4)[300] = kernelPTAddr | PTEPresent | PTEWrite
		entries(p, pdpt)[0] = uint64(pd) | PTEPresent | PTEWrite | PTEUser
		for _, r := range reserved {
			for va := r[0]; va < r[1]; va += 2 << 20 {
				entries(p, pd)[va>>21] = kernelPTAddr | PTEPresent | PTEWrite
			}
		}
		return nil
	}
}

func newTestSpace(t *testing.T, limit int) (*Space, *fakePhys, *int) {
	t.Helper()
	fp := newFakePhys(limit)
	p := testPhys{fp}
	flushes := new(int)
	s, err := NewSpace(p, initAS(p), reserved, TLB{Flush: func(uintptr) { *flushes++ }})
	if err != nil {
		t.Fatal(err)
	}
	return s, fp, flushes
}

func TestDemandPagingAndFileContents(t *testing.T) {
	s, fp, _ := newTestSpace(t, 1000)
	data := bytes.Repeat([]byte("abcdefgh"), 1000) // 8000 bytes, spans 2 pages
	if err := s.Map(VMA{Start: 0x400000, End: 0x404000, Prot: ProtRead | ProtWrite, Data: data}); err != nil {
		t.Fatal(err)
	}
	before := fp.inUse()
	buf := make([]byte, 16)
	if err := s.CopyIn(0x400000+4090, buf); err != nil { // crosses a page boundary
		t.Fatal(err)
	}
	if string(buf) != string(data[4090:4106]) {
		t.Errorf("read %q", buf)
	}
	if got := fp.inUse() - before; got < 2 {
		t.Errorf("2 pages touched, %d frames allocated", got)
	}
	// Past the data: zeros (bss).
	if err := s.CopyIn(0x402000, buf); err != nil || !bytes.Equal(buf, make([]byte, 16)) {
		t.Errorf("bss read %q, %v", buf, err)
	}
	if err := s.CopyOut(0x403ff8, []byte("12345678")); err != nil {
		t.Fatal(err)
	}
	if err := s.CopyIn(0x403ff8, buf[:8]); err != nil || string(buf[:8]) != "12345678" {
		t.Errorf("write then read: %q %v", buf[:8], err)
	}
	// The bss page that was only read maps the zero page: not resident.
	if s.ResidentPages() != 3 {
		t.Errorf("resident %d, want 3", s.ResidentPages())
	}
}

func TestBadPointersFault(t *testing.T) {
	s, _, _ := newTestSpace(t, 1000)
	if err := s.Map(VMA{Start: 0x400000, End: 0x401000, Prot: ProtRead}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	for _, va := range []uintptr{0, 0x1000, 0x3ff000, 0x401000, 16 << 20, UserTop - 4, 0xffff800000000000, ^uintptr(0) - 3} {
		if err := s.CopyIn(va, buf); !errors.Is(err, ErrFault) {
			t.Errorf("CopyIn(%#x) = %v, want ErrFault", va, err)
		}
	}
	if err := s.CopyOut(0x400000, buf); !errors.Is(err, ErrFault) {
		t.Errorf("write to read-only mapping: %v", err)
	}
	if err := s.CopyIn(0x400ffc, buf); !errors.Is(err, ErrFault) {
		t.Errorf("read running off the end of a mapping: %v", err)
	}
	if err := s.Map(VMA{Start: 16 << 20, End: 17 << 20, Prot: ProtRead}); !errors.Is(err, ErrNoMem) {
		t.Errorf("mapping over the kernel image: %v", err)
	}
	if err := s.Fault(0x500000, false, false); !errors.Is(err, ErrNoMap) {
		t.Errorf("fault outside mappings: %v", err)
	}
	if err := s.Fault(0x400000, true, false); !errors.Is(err, ErrAccess) {
		t.Errorf("write fault on read-only: %v", err)
	}
	if err := s.Fault(0x400000, false, true); !errors.Is(err, ErrAccess) {
		t.Errorf("exec fault on non-exec: %v", err)
	}
}

func TestCopyInString(t *testing.T) {
	s, _, _ := newTestSpace(t, 1000)
	s.Map(VMA{Start: 0x400000, End: 0x402000, Prot: ProtRead | ProtWrite})
	s.CopyOut(0x400ffd, []byte("hello\x00"))
	if got, err := s.CopyInString(0x400ffd, 100); err != nil || got != "hello" {
		t.Errorf("got %q, %v", got, err)
	}
	if _, err := s.CopyInString(0x400ffd, 3); !errors.Is(err, ErrNameTooLong) {
		t.Errorf("too long: %v", err)
	}
	s.CopyOut(0x402000-1, []byte("x"))
	if _, err := s.CopyInString(0x402000-1, 100); !errors.Is(err, ErrFault) {
		t.Error("unterminated string at the end of the mapping accepted")
	}
}

func TestMapAnywhereAvoidsReservedAndTaken(t *testing.T) {
	s, _, _ := newTestSpace(t, 1000)
	top := uintptr(20<<20) + 3*PageSize // just above the kernel's reserved range
	a, err := s.MapAnywhere(0, 2*PageSize, VMA{Prot: ProtRead}, top)
	if err != nil || a != top-2*PageSize {
		t.Fatalf("first: %#x %v", a, err)
	}
	b, err := s.MapAnywhere(0, 2*PageSize, VMA{Prot: ProtRead}, top)
	if err != nil || b != 16<<20-2*PageSize {
		t.Fatalf("second must skip the reserved range: %#x %v", b, err)
	}
	c, err := s.MapAnywhere(0x700000, PageSize, VMA{Prot: ProtRead}, top)
	if err != nil || c != 0x700000 {
		t.Fatalf("free hint not used: %#x %v", c, err)
	}
	d, err := s.MapAnywhere(0x700000, PageSize, VMA{Prot: ProtRead}, top)
	if err != nil || d == 0x700000 {
		t.Fatalf("taken hint reused: %#x %v", d, err)
	}
}

func TestUnmapProtectAndFree(t *testing.T) {
	s, fp, flushes := newTestSpace(t, 1000)
	s.Map(VMA{Start: 0x400000, End: 0x408000, Prot: ProtRead | ProtWrite})
	for va := uintptr(0x400000); va < 0x408000; va += PageSize {
		if err := s.CopyOut(va, []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	frames := fp.inUse()
	if err := s.Unmap(0x402000, 2*PageSize); err != nil {
		t.Fatal(err)
	}
	if fp.inUse() != frames-2 || *flushes == 0 {
		t.Errorf("unmap freed %d frames, %d flushes", frames-fp.inUse(), *flushes)
	}
	if err := s.CopyIn(0x402000, make([]byte, 1)); !errors.Is(err, ErrFault) {
		t.Errorf("unmapped page still readable: %v", err)
	}
	if len(s.VMAs()) != 2 {
		t.Errorf("VMAs after a hole: %+v", s.VMAs())
	}
	if err := s.Protect(0x404000, PageSize, ProtRead); err != nil {
		t.Fatal(err)
	}
	if err := s.CopyOut(0x404000, []byte{2}); !errors.Is(err, ErrFault) {
		t.Errorf("write after mprotect(PROT_READ): %v", err)
	}
	b := make([]byte, 1)
	if err := s.CopyIn(0x404000, b); err != nil || b[0] != 1 {
		t.Errorf("contents lost by mprotect: %v %v", b, err)
	}
	if err := s.Protect(0x402000, PageSize, ProtRead); !errors.Is(err, ErrNoMem) {
		t.Errorf("mprotect of a hole: %v", err)
	}
	s.Destroy()
	if fp.inUse() != 0 {
		t.Errorf("%d frames leaked after Destroy", fp.inUse())
	}
}

func TestBrk(t *testing.T) {
	s, _, _ := newTestSpace(t, 1000)
	s.SetBrk(0x600123)
	if got := s.Brk(0); got != 0x600123 {
		t.Errorf("brk(0) = %#x", got)
	}
	if got := s.Brk(0x605000); got != 0x605000 {
		t.Fatalf("grow: %#x", got)
	}
	if err := s.CopyOut(0x604ff0, []byte("x")); err != nil {
		t.Errorf("heap not writable: %v", err)
	}
	if got := s.Brk(0x700000); got != 0x700000 {
		t.Fatalf("grow again: %#x", got)
	}
	if n := len(s.VMAs()); n != 1 {
		t.Errorf("heap grew into %d VMAs, want one", n)
	}
	if got := s.Brk(0x601000); got != 0x601000 {
		t.Fatalf("shrink: %#x", got)
	}
	if err := s.CopyIn(0x604ff0, make([]byte, 1)); !errors.Is(err, ErrFault) {
		t.Errorf("memory above a shrunk break still mapped: %v", err)
	}
	if got := s.Brk(0x500000); got != 0x601000 {
		t.Errorf("brk below the start: %#x", got)
	}
	if got := s.Brk(16<<20 + 5); got != 0x601000 {
		t.Errorf("brk into the kernel image: %#x", got)
	}
}

func TestForkCopyOnWrite(t *testing.T) {
	s, fp, _ := newTestSpace(t, 1000)
	s.Map(VMA{Start: 0x400000, End: 0x402000, Prot: ProtRead | ProtWrite})
	s.CopyOut(0x400000, []byte("parent"))
	s.CopyOut(0x401000, []byte("second"))
	frames := fp.inUse()
	c, err := s.Fork(initAS(testPhys{fp}))
	if err != nil {
		t.Fatal(err)
	}
	// The child shares the data frames: only its page tables are new.
	if extra := fp.inUse() - frames; extra > 5 {
		t.Errorf("fork copied data: %d new frames", extra)
	}
	if err := c.CopyOut(0x400000, []byte("child!")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	s.CopyIn(0x400000, b)
	if string(b) != "parent" {
		t.Errorf("parent sees %q after the child wrote", b)
	}
	c.CopyIn(0x400000, b)
	if string(b) != "child!" {
		t.Errorf("child sees %q", b)
	}
	// The parent writing the other page leaves the child's copy alone,
	// and the last sharer keeps the frame without copying.
	s.CopyOut(0x401000, []byte("SECOND"))
	c.CopyIn(0x401000, b)
	if string(b) != "second" {
		t.Errorf("child sees %q after the parent wrote", b)
	}
	before := fp.inUse()
	c.CopyOut(0x401000, []byte("mine.."))
	if fp.inUse() != before {
		t.Errorf("sole owner's write copied the page")
	}
	c.Destroy()
	s.Destroy()
	if fp.inUse() != 0 {
		t.Errorf("%d frames leaked", fp.inUse())
	}
	if n := cowEntries(); n != 0 {
		t.Errorf("COW table not empty: %d entries", n)
	}
}

// The two sharers of a page break COW at the same time: while the parent
// is between deciding to copy and copying, the child writes its own copy
// and exits. The parent must still see its own data, and no frame may be
// freed twice or leak.
func TestForkCopyOnWriteRace(t *testing.T) {
	s, fp, _ := newTestSpace(t, 1000)
	s.Map(VMA{Start: 0x400000, End: 0x401000, Prot: ProtRead | ProtWrite})
	s.CopyOut(0x400000, []byte("parent"))
	c, err := s.Fork(initAS(testPhys{fp}))
	if err != nil {
		t.Fatal(err)
	}
	fp.onAlloc = func() {
		if err := c.CopyOut(0x400000, []byte("child!")); err != nil {
			t.Error(err)
		}
		c.Destroy()
		// The freed frame is reused and overwritten.
		junk := s.phys.Alloc()
		for i := range s.phys.Page(junk) {
			s.phys.Page(junk)[i] = 'x'
		}
		s.phys.Free(junk)
	}
	if err := s.CopyOut(0x400004, []byte("!")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	s.CopyIn(0x400000, b)
	if string(b) != "pare!t" {
		t.Errorf("parent sees %q, want %q", b, "pare!t")
	}
	s.Destroy()
	if fp.inUse() != 0 {
		t.Errorf("%d frames leaked", fp.inUse())
	}
	if n := cowEntries(); n != 0 {
		t.Errorf("COW table not empty: %d entries", n)
	}
}

func TestOutOfMemory(t *testing.T) {
	s, _, _ := newTestSpace(t, 8)
	s.Map(VMA{Start: 0x400000, End: 0x500000, Prot: ProtRead | ProtWrite})
	var err error
	for va := uintptr(0x400000); va < 0x500000 && err == nil; va += PageSize {
		err = s.Fault(va, true, false)
	}
	if !errors.Is(err, ErrNoMem) {
		t.Errorf("exhausting memory gave %v", err)
	}
}

func TestSharedAnonymousMemoryAcrossFork(t *testing.T) {
	s, fp, _ := newTestSpace(t, 1000)
	shm := NewShm(testPhys{fp})
	if err := s.Map(VMA{Start: 0x500000, End: 0x502000, Prot: ProtRead | ProtWrite, Shm: shm}); err != nil {
		t.Fatal(err)
	}
	shm.DecRef() // the mapping holds it now, as mmap leaves it
	s.CopyOut(0x500000, []byte("before"))
	c, err := s.Fork(initAS(testPhys{fp}))
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	c.CopyIn(0x500000, b)
	if string(b) != "before" {
		t.Errorf("child sees %q", b)
	}
	// Writes after the fork, both ways, and a page first touched by the
	// child after the fork, are seen by both.
	c.CopyOut(0x500000, []byte("child!"))
	s.CopyIn(0x500000, b)
	if string(b) != "child!" {
		t.Errorf("parent sees %q after the child wrote", b)
	}
	c.CopyOut(0x501000, []byte("second"))
	s.CopyIn(0x501000, b)
	if string(b) != "second" {
		t.Errorf("parent sees %q in a page the child touched first", b)
	}
	// Unmapping in one space keeps the memory for the other.
	c.Unmap(0x500000, 0x2000)
	s.CopyIn(0x501000, b)
	if string(b) != "second" {
		t.Errorf("after the child's munmap the parent sees %q", b)
	}
	c.Destroy()
	if fp.inUse() == 0 {
		t.Fatal("the child's exit freed the parent's shared memory")
	}
	s.Destroy()
	// No collection needed: the last mapping's reference frees the pages.
	if fp.inUse() != 0 {
		t.Errorf("%d frames left after both spaces are gone", fp.inUse())
	}
}

func TestRemapMovesPagesAndGrows(t *testing.T) {
	s, fp, _ := newTestSpace(t, 1000)
	s.Map(VMA{Start: 0x400000, End: 0x402000, Prot: ProtRead | ProtWrite})
	s.Map(VMA{Start: 0x402000, End: 0x403000, Prot: ProtRead}) // blocks growth
	s.CopyOut(0x400000, []byte("first"))
	s.CopyOut(0x401000, []byte("second"))
	frame := *walk(s.phys, s.root, 0x401000, false) & pteAddr
	if _, err := s.Remap(0x400000, 0x2000, 0x4000, false, 0, 0x10000000); !errors.Is(err, ErrNoMem) {
		t.Errorf("growing into a neighbour without MAYMOVE: %v", err)
	}
	to, err := s.Remap(0x400000, 0x2000, 0x4000, true, 0, 0x10000000)
	if err != nil || to == 0x400000 {
		t.Fatalf("move: %#x, %v", to, err)
	}
	if pte := walk(s.phys, s.root, to+0x1000, false); pte == nil || *pte&pteAddr != frame {
		t.Errorf("the page was copied, not moved")
	}
	b := make([]byte, 6)
	s.CopyIn(to+0x1000, b)
	if string(b) != "second" {
		t.Errorf("moved page holds %q", b)
	}
	if err := s.Fault(0x400000, false, false); !errors.Is(err, ErrNoMap) {
		t.Errorf("old range still mapped: %v", err)
	}
	s.CopyIn(to+0x3000, b)
	if !bytes.Equal(b, make([]byte, 6)) {
		t.Errorf("grown tail not zero: %q", b)
	}
	// Shrinking in place drops the tail's frames.
	before := fp.inUse()
	if got, err := s.Remap(to, 0x4000, 0x1000, false, 0, 0); got != to || err != nil {
		t.Fatalf("shrink: %#x %v", got, err)
	}
	if fp.inUse() >= before {
		t.Errorf("shrink kept the tail's frames")
	}
	if _, err := s.Remap(0x402000, 0x2000, 0x1000, true, 0, 0x10000000); !errors.Is(err, ErrFault) {
		t.Errorf("range past its mapping: %v", err)
	}
}

func TestProtNoneKeepsContentsAndDiscard(t *testing.T) {
	s, fp, _ := newTestSpace(t, 1000)
	s.Map(VMA{Start: 0x400000, End: 0x403000, Prot: ProtRead | ProtWrite})
	s.CopyOut(0x401000, []byte("keep"))
	if err := s.Protect(0x401000, 0x1000, 0); err != nil {
		t.Fatal(err)
	}
	if pte := walk(s.phys, s.root, 0x401000, false); pte == nil || *pte&PTEPresent != 0 {
		t.Errorf("PROT_NONE page still present")
	}
	if err := s.Fault(0x401000, false, false); !errors.Is(err, ErrAccess) {
		t.Errorf("read of PROT_NONE: %v", err)
	}
	s.Protect(0x401000, 0x1000, ProtRead|ProtWrite)
	b := make([]byte, 4)
	s.CopyIn(0x401000, b)
	if string(b) != "keep" {
		t.Errorf("after PROT_NONE and back: %q", b)
	}
	n := fp.inUse()
	if err := s.Discard(0x401000, 0x1000); err != nil {
		t.Fatal(err)
	}
	if fp.inUse() != n-1 {
		t.Errorf("discard freed %d frames", n-fp.inUse())
	}
	s.CopyIn(0x401000, b)
	if !bytes.Equal(b, make([]byte, 4)) {
		t.Errorf("discarded page reads %q", b)
	}
	if err := s.Discard(0x500000, 0x1000); !errors.Is(err, ErrNoMem) {
		t.Errorf("discard of unmapped: %v", err)
	}
}

func TestFileMappingPastEndIsBus(t *testing.T) {
	s, _, _ := newTestSpace(t, 1000)
	s.Map(VMA{Start: 0x400000, End: 0x403000, Prot: ProtRead, Data: make([]byte, 0x1100), File: true})
	if err := s.Fault(0x401fff, false, false); err != nil {
		t.Errorf("page holding the file's tail: %v", err)
	}
	if err := s.Fault(0x402000, false, false); !errors.Is(err, ErrBus) {
		t.Errorf("page past the end: %v", err)
	}
}

// lockedPhys is testPhys safe for concurrent faults.
func TestConcurrentFaults(t *testing.T) {
	fp := newFakePhys(100000)
	lp := testPhys{fp}
	s, err := NewSpace(lp, initAS(lp), reserved, TLB{})
	if err != nil {
		t.Fatal(err)
	}
	const pages, workers = 64, 8
	base := uintptr(0x40000000) // a fresh page directory: tables made concurrently too
	s.Map(VMA{Start: base, End: base + pages*PageSize, Prot: ProtRead | ProtWrite})
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < pages; i++ {
				va := base + uintptr(i)*PageSize
				if err := s.Fault(va, true, false); err != nil {
					t.Error(err)
					return
				}
				if err := s.CopyOut(va+uintptr(w), []byte{byte(w + 1)}); err != nil {
					t.Error(err)
				}
			}
		}(w)
	}
	wg.Wait()
	if n := s.ResidentPages(); n != pages {
		t.Errorf("%d pages resident, want %d", n, pages)
	}
	b := make([]byte, workers)
	for i := 0; i < pages; i++ {
		s.CopyIn(base+uintptr(i)*PageSize, b)
		for w := range b {
			if b[w] != byte(w+1) {
				t.Fatalf("page %d byte %d = %d: a write went to a lost frame", i, w, b[w])
			}
		}
	}
	c, err := s.Fork(initAS(lp))
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range []*Space{s, c, s, c} {
		wg.Add(1)
		go func(sp *Space) {
			defer wg.Done()
			for i := 0; i < pages; i++ {
				if err := sp.Fault(base+uintptr(i)*PageSize, true, false); err != nil {
					t.Error(err)
				}
			}
		}(sp)
	}
	wg.Wait()
	c.CopyOut(base, []byte{99})
	s.CopyIn(base, b[:1])
	if b[0] != 1 {
		t.Errorf("parent sees the child's write after concurrent COW breaks: %d", b[0])
	}
	c.Destroy()
	s.Destroy()
	if left := fp.inUse(); left != 0 {
		t.Errorf("%d frames leaked", left)
	}
}

// Unmap clears page-table entries outside the lock that faults and copies
// take: a copy into the range meanwhile must fail (EFAULT), never use a
// frame that is being freed (the fake memory panics on that), and the
// other threads' memory must stay intact.
func TestUnmapWhileFaulting(t *testing.T) {
	fp := newFakePhys(100000)
	p := testPhys{fp}
	s, err := NewSpace(p, initAS(p), reserved, TLB{Flush: func(uintptr) {}})
	if err != nil {
		t.Fatal(err)
	}
	const pages = 32
	churn, keep := uintptr(0x40000000), uintptr(0x40200000)
	s.Map(VMA{Start: keep, End: keep + pages*PageSize, Prot: ProtRead | ProtWrite})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // one thread maps, touches and unmaps
		defer wg.Done()
		for i := 0; i < 300; i++ {
			s.Map(VMA{Start: churn, End: churn + pages*PageSize, Prot: ProtRead | ProtWrite})
			for pg := uintptr(0); pg < pages; pg++ {
				s.Fault(churn+pg*PageSize, true, false)
			}
			s.Unmap(churn, pages*PageSize)
		}
		close(stop)
	}()
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) { // the others write to both ranges
			defer wg.Done()
			b := []byte{byte(w + 1)}
			for n := 0; ; n++ {
				// At least one pass over every page, however late this
				// goroutine ran: the check below wants each worker's
				// byte on every kept page (on a loaded host a worker
				// scheduled only after the churn ended wrote one page,
				// and the check failed).
				if n >= pages {
					select {
					case <-stop:
						return
					default:
					}
				}
				pg := uintptr(n % pages)
				if err := s.CopyOut(churn+pg*PageSize+uintptr(w), b); err != nil && !errors.Is(err, ErrFault) {
					t.Errorf("copy into the churned range: %v", err)
					return
				}
				if err := s.CopyOut(keep+pg*PageSize+uintptr(w), b); err != nil {
					t.Errorf("copy into the kept range: %v", err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	got := make([]byte, 3)
	for pg := uintptr(0); pg < pages; pg++ {
		if err := s.CopyIn(keep+pg*PageSize, got); err != nil {
			t.Fatal(err)
		}
		if got[0] != 1 || got[1] != 2 || got[2] != 3 {
			t.Fatalf("kept page %d holds %v", pg, got)
		}
	}
	s.Destroy()
	if left := fp.inUse(); left != 0 {
		t.Errorf("%d frames leaked", left)
	}
}

// A private mapping of an object (exec's segments of a tmpfs file) maps
// the object's pages until they are written, then copies them; bytes past
// FileEnd read as zeros; the object never sees the mapping's writes, and
// a fork child sees the parent's copies, not the object.
func TestPrivateObjectMapping(t *testing.T) {
	s, fp, _ := newTestSpace(t, 1000)
	obj := NewShm(testPhys{fp})
	// Four pages of object: the mapping shows two and a bit, and its
	// bss must not show the fourth.
	for i := uintptr(0); i < 4; i++ {
		pg, _ := obj.Page(i, true)
		for j := range pg {
			pg[j] = byte('a' + i)
		}
	}
	const base = 0x600000
	// Three pages of file bytes, the last one only 100 bytes of it, then
	// a page of bss.
	v := VMA{Start: base, End: base + 4*PageSize, Prot: ProtRead | ProtWrite, Shm: obj, Private: true, FileEnd: 2*PageSize + 100}
	if err := s.Map(v); err != nil {
		t.Fatal(err)
	}
	before := fp.inUse()
	b := make([]byte, 1)
	s.CopyIn(base, b)
	// Fault-around mapped the next whole object page, not the one that
	// holds FileEnd (its tail must read as zeros: it gets its own copy).
	if pte := walk(s.phys, s.root, base+PageSize, false); pte == nil || *pte&PTEPresent == 0 {
		t.Errorf("the page after a read fault was not mapped around it")
	}
	if pte := walk(s.phys, s.root, base+2*PageSize, false); pte != nil && *pte != 0 {
		t.Errorf("fault-around mapped the object's page that FileEnd cuts")
	}
	s.CopyIn(base+PageSize, b)
	if b[0] != 'b' {
		t.Errorf("second page reads %q, want the object's 'b'", b)
	}
	// Page tables aside (one leaf table), reading whole pages of the
	// object took no frames.
	if got := fp.inUse() - before; got > 1 {
		t.Errorf("reading two object pages took %d frames", got)
	}
	edge := make([]byte, 2)
	s.CopyIn(base+2*PageSize+99, edge)
	if edge[0] != 'c' || edge[1] != 0 {
		t.Errorf("the page holding FileEnd reads %q, want \"c\\x00\"", edge)
	}
	s.CopyIn(base+3*PageSize, b)
	if b[0] != 0 {
		t.Errorf("the page past FileEnd reads %q, want zero", b)
	}
	// A write (through a read-only object page) copies.
	if err := s.Fault(base, false, false); err != nil {
		t.Fatal(err)
	}
	if err := s.Fault(base, true, false); err != nil {
		t.Fatal(err)
	}
	s.CopyOut(base, []byte("X"))
	s.CopyIn(base+1, b)
	if pg, _ := obj.Page(0, false); pg[0] != 'a' {
		t.Errorf("the object saw the private write: %q", pg[0])
	}
	if b[0] != 'a' {
		t.Errorf("the copied page lost the object's bytes: %q", b)
	}
	c, err := s.Fork(initAS(testPhys{fp}))
	if err != nil {
		t.Fatal(err)
	}
	c.CopyIn(base, b)
	if b[0] != 'X' {
		t.Errorf("child reads %q, want the parent's private copy", b)
	}
	c.CopyOut(base+PageSize, []byte("Y"))
	s.CopyIn(base+PageSize, b)
	if b[0] != 'b' {
		t.Errorf("the child's write reached the parent: %q", b)
	}
	// madvise(DONTNEED) drops the copy: the object's page is back.
	if err := s.Discard(base, PageSize); err != nil {
		t.Fatal(err)
	}
	s.CopyIn(base, b)
	if b[0] != 'a' {
		t.Errorf("after DONTNEED the page reads %q, want the object's 'a'", b)
	}
	if key, _, _ := s.FutexKey(base); key != s {
		t.Errorf("a private mapping's futex key is %T, want the space", key)
	}
	c.Destroy()
	s.Destroy()
	if pg, _ := obj.Page(1, false); pg == nil || pg[0] != 'b' {
		t.Errorf("the object lost its page")
	}
	obj.DecRef() // the file's reference: now nothing holds the object
	if left := fp.inUse(); left != 0 {
		t.Errorf("%d frames left after the spaces and the object are gone", left)
	}
}

// Reading anonymous memory never written maps the space's zero page: no
// frame per page. A write then gives the page its own (zeroed) frame.
func TestZeroPage(t *testing.T) {
	s, fp, _ := newTestSpace(t, 1000)
	const base, pages = 0x700000, 8
	if err := s.Map(VMA{Start: base, End: base + pages*PageSize, Prot: ProtRead | ProtWrite}); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	s.CopyIn(base, b) // page tables and the zero page
	before := fp.inUse()
	for i := uintptr(1); i < pages; i++ {
		if err := s.Fault(base+i*PageSize, false, false); err != nil {
			t.Fatal(err)
		}
	}
	if got := fp.inUse() - before; got != 0 {
		t.Errorf("reading %d fresh pages took %d frames", pages-1, got)
	}
	if n := s.ResidentPages(); n != 0 {
		t.Errorf("%d pages resident after reads only (the zero page counts for none)", n)
	}
	if err := s.Fault(base+PageSize, true, false); err != nil {
		t.Fatal(err)
	}
	s.CopyOut(base+PageSize, []byte{7})
	s.CopyIn(base+2*PageSize, b)
	if b[0] != 0 {
		t.Errorf("the zero page took another page's write: %d", b[0])
	}
	s.CopyIn(base+PageSize, b)
	if b[0] != 7 {
		t.Errorf("the written page reads %d", b[0])
	}
	if n := s.ResidentPages(); n != 1 {
		t.Errorf("%d pages resident after one write, want 1", n)
	}
	s.Unmap(base, pages*PageSize)
	if n := s.ResidentPages(); n != 0 {
		t.Errorf("%d pages resident after the unmap", n)
	}
	s.Destroy()
	if left := fp.inUse(); left != 0 {
		t.Errorf("%d frames leaked", left)
	}
}

func (o *Shm) counts() (refs, maps int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.refs, o.maps
}

// Every mapping of an object holds one reference, however the mapping is
// cut (munmap of a middle part, mprotect of one, mremap moving one) or
// copied (fork); the object's frames go when its last holder does, and
// not before. Truncation frees cut-off pages at once when nothing maps
// them, and when the last mapping goes otherwise.
func TestObjectReferences(t *testing.T) {
	s, fp, _ := newTestSpace(t, 1000)
	obj := NewShm(testPhys{fp})
	for i := uintptr(0); i < 8; i++ {
		pg, _ := obj.Page(i, true)
		pg[0] = byte('a' + i)
	}
	const base = 0x600000
	want := func(what string, refs, maps int) {
		t.Helper()
		if r, m := obj.counts(); r != refs || m != maps {
			t.Errorf("%s: %d references (%d mappings), want %d (%d)", what, r, m, refs, maps)
		}
	}
	if err := s.Map(VMA{Start: base, End: base + 8*PageSize, Prot: ProtRead | ProtWrite, Shm: obj}); err != nil {
		t.Fatal(err)
	}
	want("mapped", 2, 1)
	if err := s.Map(VMA{Start: base + 0x100000, End: base + 0x100000 + 8*PageSize, Prot: ProtRead, Shm: obj, Private: true}); err != nil {
		t.Fatal(err)
	}
	want("mapped twice", 3, 2)
	b := make([]byte, 1)
	for i := uintptr(0); i < 8; i++ {
		s.CopyIn(base+i*PageSize, b)
		s.CopyIn(base+0x100000+i*PageSize, b)
	}
	s.Protect(base+2*PageSize, PageSize, ProtRead) // three pieces
	want("after mprotect of a middle page", 5, 4)
	s.Unmap(base+5*PageSize, PageSize) // the last piece splits in two
	want("after munmap of a middle page", 6, 5)
	moved, err := s.Remap(base+6*PageSize, 2*PageSize, 4*PageSize, true, 0x2000000, 0x40000000)
	if err != nil {
		t.Fatal(err)
	}
	want("after mremap moved a piece", 6, 5)
	c, err := s.Fork(initAS(testPhys{fp}))
	if err != nil {
		t.Fatal(err)
	}
	want("after fork", 11, 10)
	c.CopyIn(base, b)
	if b[0] != 'a' {
		t.Errorf("the child reads %q", b)
	}
	// Truncation while mapped keeps the cut pages until the mappings go.
	obj.Truncate(4)
	if obj.Pages() != 4 {
		t.Errorf("%d pages after truncation to 4", obj.Pages())
	}
	c.Destroy()
	want("after the child's exit", 6, 5)
	obj.DecRef() // the creator's (a file's) reference
	want("after the creator's release", 5, 5)
	s.CopyIn(base+PageSize, b)
	if b[0] != 'b' {
		t.Errorf("a mapped page reads %q after the object lost its file", b)
	}
	s.Unmap(base, 0x200000)
	want("after munmap of all but the moved piece", 1, 1)
	s.CopyIn(moved+PageSize, b)
	if b[0] != 'h' {
		t.Errorf("the moved piece reads %q, want the object's last page", b)
	}
	before := fp.inUse()
	s.Unmap(moved, 4*PageSize)
	want("after the last munmap", 0, 0)
	// The four pages left, the four cut off and held for the mappings.
	if freed := before - fp.inUse(); freed < 8 {
		t.Errorf("the last munmap freed %d frames, want at least the object's 8", freed)
	}
	s.Destroy()
	if left := fp.inUse(); left != 0 {
		t.Errorf("%d frames leaked", left)
	}

	// Unmapped, a truncation frees at once.
	obj2 := NewShm(testPhys{fp})
	for i := uintptr(0); i < 4; i++ {
		obj2.Page(i, true)
	}
	obj2.Truncate(1)
	if n := fp.inUse(); n != 1 {
		t.Errorf("%d frames in use after truncating an unmapped object to a page", n)
	}
	obj2.DecRef()
	if n := fp.inUse(); n != 0 {
		t.Errorf("%d frames in use after the last reference", n)
	}
}

// The meminfo counts follow the frames: anonymous pages and their
// copy-on-write copies, page tables, object pages and whether they are
// mapped; all come back to where they were when everything is gone.
func TestStats(t *testing.T) {
	base := ReadStats()
	delta := func() Stats {
		s := ReadStats()
		return Stats{Shm: s.Shm - base.Shm, Mapped: s.Mapped - base.Mapped, Anon: s.Anon - base.Anon, Tables: s.Tables - base.Tables}
	}
	s, fp, _ := newTestSpace(t, 1000)
	if d := delta(); d.Tables != 3 || d.Anon != 0 {
		t.Errorf("a new space: %+v, want 3 tables", d)
	}
	s.Map(VMA{Start: 0x400000, End: 0x404000, Prot: ProtRead | ProtWrite})
	for va := uintptr(0x400000); va < 0x404000; va += PageSize {
		s.CopyOut(va, []byte{1})
	}
	if d := delta(); d.Anon != 4 || d.Tables != 4 {
		t.Errorf("4 anonymous pages written: %+v, want 4 anonymous, 4 tables", d)
	}
	obj := NewShm(testPhys{fp})
	obj.Page(0, true)
	if d := delta(); d.Shm != 1 || d.Mapped != 0 {
		t.Errorf("an object page: %+v, want 1 shared, 0 mapped", d)
	}
	s.Map(VMA{Start: 0x500000, End: 0x503000, Prot: ProtRead | ProtWrite, Shm: obj})
	s.CopyOut(0x501000, []byte{1})
	if d := delta(); d.Shm != 2 || d.Mapped != 2 {
		t.Errorf("a mapped object with 2 pages: %+v, want 2 shared, 2 mapped", d)
	}
	c, err := s.Fork(initAS(testPhys{fp}))
	if err != nil {
		t.Fatal(err)
	}
	c.CopyOut(0x400000, []byte{2})
	c.CopyOut(0x401000, []byte{2})
	if d := delta(); d.Anon != 6 {
		t.Errorf("a fork child wrote 2 shared pages: %d anonymous, want 6", d.Anon)
	}
	c.Destroy()
	s.Unmap(0x500000, 0x3000)
	if d := delta(); d.Anon != 4 || d.Mapped != 0 || d.Shm != 2 {
		t.Errorf("the child gone and the object unmapped: %+v, want 4 anonymous, 2 shared, 0 mapped", d)
	}
	obj.DecRef()
	s.Destroy()
	if d := delta(); d != (Stats{}) {
		t.Errorf("everything gone: %+v left", d)
	}
	if left := fp.inUse(); left != 0 {
		t.Errorf("%d frames leaked", left)
	}
}

// A shared mapping made from a read-only descriptor can never become
// writable: not by mprotect, not after a move, not in a fork's copy.
func TestProtectDenied(t *testing.T) {
	s, fp, _ := newTestSpace(t, 1000)
	shm := NewShm(testPhys{fp})
	if err := s.Map(VMA{Start: 0x400000, End: 0x404000, Prot: ProtRead, Deny: ProtWrite, Shm: shm}); err != nil {
		t.Fatal(err)
	}
	if err := s.Protect(0x401000, PageSize, ProtRead|ProtWrite); !errors.Is(err, ErrDenied) {
		t.Fatalf("mprotect(PROT_WRITE) of a write-denied mapping: %v", err)
	}
	if err := s.CopyOut(0x401000, []byte{1}); !errors.Is(err, ErrFault) {
		t.Errorf("kernel write through a denied mapping: %v", err)
	}
	if err := s.Protect(0x400000, 4*PageSize, ProtRead|ProtExec); err != nil {
		t.Errorf("mprotect(PROT_READ|PROT_EXEC): %v", err)
	}
	to, err := s.Remap(0x400000, 0x4000, 0x4000, true, 0x500000, 0x10000000)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Protect(to, PageSize, ProtWrite); !errors.Is(err, ErrDenied) {
		t.Errorf("mprotect after mremap: %v", err)
	}
	c, err := s.Fork(initAS(testPhys{fp}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Protect(to+PageSize, PageSize, ProtRead|ProtWrite); !errors.Is(err, ErrDenied) {
		t.Errorf("mprotect in a fork's copy: %v", err)
	}
	c.Destroy()
	s.Destroy()
}

// Passes over huge, sparsely populated ranges skip missing page tables:
// mprotect, fork and munmap of all of the user half take as long as the
// pages it maps (page by page, this test would run for hours). munmap
// past the user half is EINVAL.
func TestHugeSparseRange(t *testing.T) {
	s, fp, _ := newTestSpace(t, 1000)
	const lo = 32 << 20
	if err := s.Map(VMA{Start: lo, End: UserTop, Prot: ProtRead | ProtWrite}); err != nil {
		t.Fatal(err)
	}
	for _, va := range []uintptr{lo, 1 << 40, UserTop - PageSize} {
		if err := s.CopyOut(va, []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Protect(lo, UserTop-lo, ProtRead); err != nil {
		t.Fatal(err)
	}
	if err := s.CopyOut(1<<40, []byte{2}); !errors.Is(err, ErrFault) {
		t.Errorf("write after mprotect(PROT_READ) of the whole range: %v", err)
	}
	c, err := s.Fork(initAS(testPhys{fp}))
	if err != nil {
		t.Fatal(err)
	}
	if c.ResidentPages() != 3 {
		t.Errorf("fork copied %d pages, want 3", c.ResidentPages())
	}
	c.Destroy()
	if err := s.Unmap(0, 0x5533f2464e2ce000); !errors.Is(err, ErrInval) {
		t.Errorf("munmap past the user half: %v", err)
	}
	frames := fp.inUse()
	if err := s.Unmap(lo, UserTop-lo); err != nil {
		t.Fatal(err)
	}
	if got := frames - fp.inUse(); got != 3 {
		t.Errorf("munmap of the whole range freed %d frames, want 3", got)
	}
	s.Destroy()
	if fp.inUse() != 0 {
		t.Errorf("%d frames leaked", fp.inUse())
	}
}

// WriteMapped counts the shared mappings that may write an object, through
// mprotect, splits, fork and unmapping; private and write-denied ones do
// not count.
func TestWriteMapped(t *testing.T) {
	s, fp, _ := newTestSpace(t, 1000)
	obj := NewShm(testPhys{fp})
	defer obj.DecRef()
	if err := s.Map(VMA{Start: 0x500000, End: 0x503000, Prot: ProtRead, Deny: ProtWrite, Shm: obj}); err != nil {
		t.Fatal(err)
	}
	if err := s.Map(VMA{Start: 0x600000, End: 0x602000, Prot: ProtRead | ProtWrite, Shm: obj, Private: true}); err != nil {
		t.Fatal(err)
	}
	if obj.WriteMapped() {
		t.Fatal("a write-denied shared mapping and a private one count as writers")
	}
	if err := s.Map(VMA{Start: 0x700000, End: 0x703000, Prot: ProtRead, Shm: obj}); err != nil {
		t.Fatal(err)
	}
	if !obj.WriteMapped() {
		t.Fatal("a read-only shared mapping that mprotect may make writable does not count")
	}
	if err := s.Protect(0x701000, PageSize, ProtRead|ProtWrite); err != nil { // splits it in three
		t.Fatal(err)
	}
	c, err := s.Fork(initAS(testPhys{fp}))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Unmap(0x700000, 3*PageSize); err != nil {
		t.Fatal(err)
	}
	if !obj.WriteMapped() {
		t.Error("the child's copy of the mapping does not count")
	}
	if err := c.Unmap(0x700000, 2*PageSize); err != nil {
		t.Fatal(err)
	}
	if !obj.WriteMapped() {
		t.Error("the child's last page of the mapping does not count")
	}
	if err := c.Unmap(0x702000, PageSize); err != nil {
		t.Fatal(err)
	}
	if obj.WriteMapped() {
		t.Error("writers left after every writable mapping is gone")
	}
}

// TestCOWTableShrinks: after many frames were shared and released, each
// shard's map is rebuilt at its live size (a Go map keeps its peak), and
// counts stay right through it.
func TestCOWTableShrinks(t *testing.T) {
	const n = 64 * shrinkMin
	for i := uintptr(1); i <= n; i++ {
		cowShare(i * PageSize)
	}
	cowShare(PageSize) // a third mapping of the first frame
	for i := uintptr(2); i <= n; i++ {
		if cowRelease(i * PageSize) {
			t.Fatalf("frame %d: released as last before its entry went", i)
		}
	}
	if got := cowShared(PageSize); got != 3 {
		t.Errorf("frame 1 shared by %d after the others went, want 3", got)
	}
	for i := range cow {
		if s := &cow[i]; s.peak > shrinkMin {
			t.Errorf("shard %d keeps a peak of %d with %d entries", i, s.peak, len(s.shares))
		}
	}
	cowRelease(PageSize)
	cowRelease(PageSize)
	if !cowRelease(PageSize) || cowEntries() != 0 {
		t.Errorf("table not empty: %d entries", cowEntries())
	}
}

// PinUser gives the pages of user buffers, across page and buffer
// boundaries, up to a limit, and stops at the first bad page; what is
// written through them is what the program reads.
func TestPinUser(t *testing.T) {
	s, _, _ := newTestSpace(t, 1000)
	s.Map(VMA{Start: 0x400000, End: 0x403000, Prot: ProtRead | ProtWrite})
	s.Map(VMA{Start: 0x500000, End: 0x501000, Prot: ProtRead})
	iov := [][2]uint64{{0x400ff0, 20}, {0x401000, 0}, {0x402ffe, 5000}}
	segs, got := s.PinUser(iov, 1000, true, nil)
	s.UnpinUser()
	// 20 bytes in two pieces, then 2 bytes before the end of the mapping.
	if got != 22 || len(segs) != 3 || len(segs[0]) != 16 || len(segs[1]) != 4 || len(segs[2]) != 2 {
		t.Fatalf("got %d bytes in %d segments", got, len(segs))
	}
	i := byte(0)
	for _, sg := range segs {
		for j := range sg {
			sg[j] = 'a' + i
			i++
		}
	}
	b := make([]byte, 20)
	if err := s.CopyIn(0x400ff0, b); err != nil || string(b) != "abcdefghijklmnopqrst" {
		t.Fatalf("read back %q, %v", b, err)
	}
	// The limit cuts it; a read-only page cannot be pinned for writing.
	if _, got := s.PinUser(iov, 10, true, nil); got != 10 {
		t.Fatalf("limit 10: %d bytes", got)
	}
	s.UnpinUser()
	if _, got := s.PinUser([][2]uint64{{0x500000, 10}}, 10, true, nil); got != 0 {
		t.Fatalf("read-only page pinned for writing: %d bytes", got)
	}
	s.UnpinUser()
	if _, got := s.PinUser([][2]uint64{{0x500000, 10}}, 10, false, nil); got != 10 {
		t.Fatalf("read-only page for reading: %d bytes", got)
	}
	s.UnpinUser()
}

// TestLeafTablesWhole checks that leafTables hands each leaf table to fn
// once, with every entry of the range in it: a pass over a mapped range
// costs one call per 2 MiB, not one per page (exit, fork and mprotect of
// a large bss went page by page, 175 instructions a page).
func TestLeafTablesWhole(t *testing.T) {
	s, _, _ := newTestSpace(t, 2000)
	const lo, n = 33<<20 - 16*PageSize, 1100 // crosses two table edges
	if err := s.Map(VMA{Start: lo, End: lo + n*PageSize, Prot: ProtRead | ProtWrite}); err != nil {
		t.Fatal(err)
	}
	for i := uintptr(0); i < n; i++ {
		if err := s.CopyOut(lo+i*PageSize, []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	start, end := uintptr(lo+3*PageSize), uintptr(lo+(n-5)*PageSize)
	calls, entries, next := 0, 0, start
	leafTables(s.phys, s.root, start, end, func(va uintptr, ptes []uint64) {
		calls++
		if va != next {
			t.Errorf("call %d starts at %#x, want %#x", calls, va, next)
		}
		for _, pte := range ptes {
			if holdsFrame(pte) {
				entries++
			}
		}
		next = va + uintptr(len(ptes))*PageSize
	})
	if want := int((end - start) / PageSize); entries != want || next != end {
		t.Errorf("visited %d mapped entries up to %#x, want %d up to %#x", entries, next, want, end)
	}
	if calls != 3 {
		t.Errorf("fn called %d times for a range over 3 leaf tables", calls)
	}
	s.Destroy()
}

// A read fault in zero-fill memory maps the zero page over the aligned
// 16-page window around it (within the mapping, and only where nothing is
// mapped and nothing is backed by data), costs no frame, and leaves
// mincore's answer at the one page read. A store to a page of the window
// gets a frame of its own and needs no flush on the faulting CPU.
func TestZeroFaultAround(t *testing.T) {
	fp := newFakePhys(1000)
	p := testPhys{fp}
	var flushes, others int
	s, err := NewSpace(p, initAS(p), reserved, TLB{
		Flush:       func(uintptr) { flushes++ },
		FlushOthers: func(uintptr) { others++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	// A data mapping whose first two pages hold data and the rest is
	// bss, then an anonymous mapping right after it.
	const dbase, dpages = 0x800000, 8
	data := bytes.Repeat([]byte{0xAB}, 2*PageSize)
	if err := s.Map(VMA{Start: dbase, End: dbase + dpages*PageSize, Prot: ProtRead | ProtWrite, Data: data}); err != nil {
		t.Fatal(err)
	}
	const abase, apages = dbase + dpages*PageSize, 40
	if err := s.Map(VMA{Start: abase, End: abase + apages*PageSize, Prot: ProtRead | ProtWrite}); err != nil {
		t.Fatal(err)
	}
	mapped := func(va uintptr) bool {
		pte := walk(s.phys, s.root, va, false)
		return pte != nil && holdsFrame(*pte)
	}
	before := fp.inUse()
	if err := s.Fault(dbase+5*PageSize, false, false); err != nil { // bss of the data mapping
		t.Fatal(err)
	}
	for i := uintptr(0); i < dpages; i++ {
		if want := i >= 2; mapped(dbase+i*PageSize) != want {
			t.Errorf("data mapping page %d: mapped %v, want %v (only its bss is zero-fill)", i, !want, want)
		}
	}
	if mapped(abase) {
		t.Error("the window crossed into the next mapping")
	}
	if err := s.Fault(abase+20*PageSize, false, false); err != nil { // window [16, 32) of the anonymous mapping
		t.Fatal(err)
	}
	for i := uintptr(0); i < apages; i++ {
		va := abase + i*PageSize
		if want := va >= (abase+20*PageSize)&^(16*PageSize-1) && va < ((abase+20*PageSize)&^(16*PageSize-1))+16*PageSize; mapped(va) != want {
			t.Errorf("anonymous page %d: mapped %v, want %v", i, !want, want)
		}
	}
	// The zero page and page tables only.
	if got := fp.inUse() - before; got > 4 {
		t.Errorf("two read faults took %d frames", got)
	}
	if n := s.ResidentPages(); n != 0 {
		t.Errorf("%d pages resident after reads only", n)
	}
	v := make([]byte, apages)
	if err := s.Resident(abase, v); err != nil {
		t.Fatal(err)
	}
	for i, r := range v {
		if want := byte(0); i == 20 {
			want = 1
			if r != want {
				t.Errorf("mincore: the page read reports %d", r)
			}
		} else if r != want {
			t.Errorf("mincore: page %d, never touched, reports %d", i, r)
		}
	}
	// A store into the window: a frame of its own, and no flush (no
	// CPU used the entry: it has no accessed bit); a store to the page
	// read flushes the other CPUs only.
	flushes, others = 0, 0
	if err := s.Fault(abase+17*PageSize, true, false); err != nil {
		t.Fatal(err)
	}
	if flushes != 0 || others != 0 {
		t.Errorf("store to an unused zero-page entry: %d full flushes and %d of other CPUs, want none", flushes, others)
	}
	if err := s.Fault(abase+20*PageSize, true, false); err != nil {
		t.Fatal(err)
	}
	if flushes != 0 || others != 1 {
		t.Errorf("store to the zero page read: %d full flushes and %d of other CPUs, want 0 and 1", flushes, others)
	}
	if err := s.CopyOut(abase+17*PageSize, []byte{9}); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	for _, c := range []struct {
		va   uintptr
		want byte
	}{{abase + 17*PageSize, 9}, {abase + 18*PageSize, 0}, {dbase, 0xAB}, {dbase + 6*PageSize, 0}} {
		if err := s.CopyIn(c.va, b); err != nil || b[0] != c.want {
			t.Errorf("read %#x = %d, %v, want %d", c.va, b[0], err, c.want)
		}
	}
	if n := s.ResidentPages(); n != 3 { // the stores' pages and the data page read
		t.Errorf("%d pages resident, want 3", n)
	}
	s.Destroy()
	if left := fp.inUse(); left != 0 {
		t.Errorf("%d frames leaked", left)
	}
}

// munmap, a MAP_FIXED mapping over touched pages and mprotect name the
// range they changed, so a CPU may drop only those translations; a change
// of nothing mapped flushes nothing, and without FlushRange Flush serves.
func TestFlushRange(t *testing.T) {
	fp := newFakePhys(1000)
	p := testPhys{fp}
	type call struct{ start, end uintptr }
	var ranges []call
	flushes := 0
	s, err := NewSpace(p, initAS(p), reserved, TLB{
		Flush:      func(uintptr) { flushes++ },
		FlushRange: func(_, start, end uintptr) { ranges = append(ranges, call{start, end}) },
	})
	if err != nil {
		t.Fatal(err)
	}
	const base = 0x400000
	if err := s.Map(VMA{Start: base, End: base + 16*PageSize, Prot: ProtRead | ProtWrite}); err != nil {
		t.Fatal(err)
	}
	touch := func(from, to uintptr) {
		for va := from; va < to; va += PageSize {
			if err := s.CopyOut(va, []byte{1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	touch(base, base+16*PageSize)
	want := []call{
		{base + 2*PageSize, base + 4*PageSize},  // munmap of 2 pages, the length rounded up
		{base + 4*PageSize, base + 6*PageSize},  // mprotect to read-only
		{base + 8*PageSize, base + 10*PageSize}, // MAP_FIXED over touched pages
	}
	if err := s.Unmap(base+2*PageSize, PageSize+1); err != nil {
		t.Fatal(err)
	}
	if err := s.Protect(base+4*PageSize, 2*PageSize, ProtRead); err != nil {
		t.Fatal(err)
	}
	if err := s.Map(VMA{Start: base + 8*PageSize, End: base + 10*PageSize, Prot: ProtRead}); err != nil {
		t.Fatal(err)
	}
	// Nothing mapped there any more: nothing to flush.
	if err := s.Unmap(base+2*PageSize, 2*PageSize); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ranges, want) || flushes != 0 {
		t.Errorf("ranges %x, %d whole flushes; want %x and none", ranges, flushes, want)
	}
	s.tlb.FlushRange = nil
	if err := s.Unmap(base+12*PageSize, PageSize); err != nil {
		t.Fatal(err)
	}
	if flushes != 1 {
		t.Errorf("without FlushRange: %d whole flushes, want 1", flushes)
	}
}
