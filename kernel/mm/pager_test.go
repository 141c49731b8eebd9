package mm

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// fakePager is a file in a cache of its own frames: pages by index,
// holds by frame, and a size that truncate moves.
type fakePager struct {
	mu      sync.Mutex
	phys    *fakePhys
	pages   map[uintptr]uintptr // idx -> frame
	holds   map[uintptr]int     // frame -> holds
	wholds  map[uintptr]int     // idx -> writable holds
	gone    map[uintptr]bool    // frames that left the file, freed with their last hold
	size    uintptr             // pages
	syncs   int
	done    int
	noSpace bool // writable holds fail (ENOSPC: SIGBUS)
}

func newFakePager(fp *fakePhys, pages uintptr) *fakePager {
	return &fakePager{phys: fp, pages: map[uintptr]uintptr{}, holds: map[uintptr]int{},
		wholds: map[uintptr]int{}, gone: map[uintptr]bool{}, size: pages}
}

func (p *fakePager) HoldPage(idx uintptr, write bool) (uintptr, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if idx >= p.size || write && p.noSpace {
		return 0, ErrBus
	}
	pa := p.pages[idx]
	if pa == 0 {
		if pa = p.phys.Alloc(); pa == 0 {
			return 0, ErrNoMem
		}
		p.phys.Page(pa)[0] = byte('A' + idx)
		p.pages[idx] = pa
	}
	p.holds[pa]++
	if write {
		p.wholds[idx]++
	}
	return pa, nil
}

func (p *fakePager) ReleasePage(idx, pa uintptr, write bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.holds[pa] <= 0 {
		panic("release of a frame not held")
	}
	p.holds[pa]--
	if write {
		p.wholds[idx]--
	}
	if p.holds[pa] == 0 {
		delete(p.holds, pa)
		if p.gone[pa] {
			delete(p.gone, pa)
			p.phys.Free(pa)
		}
	}
}

func (p *fakePager) Downgrade(idx, pa uintptr) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wholds[idx] <= 0 || p.holds[pa] <= 0 {
		panic("downgrade of a page not held writably")
	}
	p.wholds[idx]--
}

func (p *fakePager) Sync() error { p.mu.Lock(); p.syncs++; p.mu.Unlock(); return nil }
func (p *fakePager) Done()       { p.mu.Lock(); p.done++; p.mu.Unlock() }
func (p *fakePager) Attach(*Shm) {}
func (p *fakePager) Key() any    { return p }

// truncate cuts the file to n pages: a held page's frame waits for its
// last hold, as the page cache's does.
func (p *fakePager) truncate(n uintptr) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for idx, pa := range p.pages {
		if idx >= n {
			delete(p.pages, idx)
			if p.holds[pa] > 0 {
				p.gone[pa] = true
			} else {
				p.phys.Free(pa)
			}
		}
	}
	p.size = n
}

func (p *fakePager) held() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, h := range p.holds {
		n += h
	}
	return n
}

func pteAt(s *Space, va uintptr) uint64 {
	if pte := walk(s.phys, s.root, va, false); pte != nil {
		return atomic.LoadUint64(pte)
	}
	return 0
}

// mapPager maps n pages of pg at base, as mmap does: the caller's
// reference dropped once the mapping holds its own.
func mapPager(t *testing.T, s *Space, fp *fakePhys, pg *fakePager, base uintptr, n uintptr, private bool) *Shm {
	t.Helper()
	o := NewPagerShm(testPhys{fp}, pg)
	err := s.Map(VMA{Start: base, End: base + n*PageSize, Prot: ProtRead | ProtWrite, Shm: o, Private: private})
	o.DecRef()
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// A shared mapping maps the file's own frames: read-only until the
// first store, which takes a writable hold; stores land in the file's
// page, a fork child sees them, and every hold goes back with the last
// mapping.
func TestPagerSharedMapping(t *testing.T) {
	s, fp, _ := newTestSpace(t, 1000)
	pg := newFakePager(fp, 4)
	const base = 0x600000
	mapPager(t, s, fp, pg, base, 4, false)
	b := make([]byte, 1)
	if err := s.CopyIn(base+PageSize, b); err != nil || b[0] != 'B' {
		t.Fatalf("read %q, %v", b, err)
	}
	pte := pteAt(s, base+PageSize)
	if uintptr(pte&pteAddr) != pg.pages[1] || pte&PTEWrite != 0 {
		t.Fatalf("read fault mapped %#x, want the file's frame %#x read-only", pte, pg.pages[1])
	}
	if err := s.CopyOut(base+PageSize+5, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if pte := pteAt(s, base+PageSize); pte&PTEWrite == 0 || uintptr(pte&pteAddr) != pg.pages[1] {
		t.Fatalf("after a store: %#x", pte)
	}
	if fp.Page(pg.pages[1])[5] != 'x' || pg.wholds[1] != 1 || pg.held() != 1 {
		t.Fatalf("store not in the file's page, or holds %d/%d", pg.wholds[1], pg.held())
	}
	// A store to a page never read takes a writable hold at once.
	if err := s.CopyOut(base+2*PageSize, []byte("y")); err != nil || pg.wholds[2] != 1 {
		t.Fatalf("store fault: %v, writable holds %d", err, pg.wholds[2])
	}
	c, err := s.Fork(initAS(testPhys{fp}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CopyIn(base+PageSize+5, b); err != nil || b[0] != 'x' {
		t.Fatalf("child reads %q, %v", b, err)
	}
	if err := c.CopyOut(base+3*PageSize, []byte("z")); err != nil || fp.Page(pg.pages[3])[0] != 'z' {
		t.Fatalf("child's store: %v", err)
	}
	if pg.held() != 3 {
		t.Fatalf("%d holds, want one per page however many spaces map it", pg.held())
	}
	if err := s.Sync(base, 4*PageSize); err != nil || pg.syncs != 1 {
		t.Fatalf("Sync: %v, %d syncs", err, pg.syncs)
	}
	s.Destroy()
	if pg.held() != 3 || pg.done != 0 {
		t.Fatal("holds went with one of two spaces")
	}
	c.Destroy()
	if pg.held() != 0 || pg.done != 1 {
		t.Fatalf("after the last mapping: %d holds, done %d", pg.held(), pg.done)
	}
}

// uncomparablePager is a Pager whose dynamic type cannot be compared
// (it holds a func), as proc's mountHeldPager does.
type uncomparablePager struct {
	*fakePager
	release func()
}

// msync over one mapping split in two by mprotect syncs its file once,
// whatever the pager's type (an uncomparable one once panicked the
// kernel when msync compared the two pieces' pagers).
func TestPagerSyncSplitMapping(t *testing.T) {
	s, fp, _ := newTestSpace(t, 1000)
	pg := newFakePager(fp, 4)
	const base = 0x600000
	o := NewPagerShm(testPhys{fp}, uncomparablePager{pg, func() {}})
	err := s.Map(VMA{Start: base, End: base + 4*PageSize, Prot: ProtRead | ProtWrite, Shm: o})
	o.DecRef()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Protect(base+2*PageSize, 2*PageSize, ProtRead); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(base, 4*PageSize); err != nil || pg.syncs != 1 {
		t.Fatalf("Sync: %v, %d syncs, want 1", err, pg.syncs)
	}
	s.Destroy()
}

// A private mapping maps the file's frame copy-on-write: a store gets
// a copy, the file never sees it, and msync does not write the file.
func TestPagerPrivateMapping(t *testing.T) {
	s, fp, _ := newTestSpace(t, 1000)
	pg := newFakePager(fp, 2)
	const base = 0x600000
	mapPager(t, s, fp, pg, base, 2, true)
	b := make([]byte, 1)
	s.CopyIn(base, b)
	if pte := pteAt(s, base); uintptr(pte&pteAddr) != pg.pages[0] || pte&PTEWrite != 0 || b[0] != 'A' {
		t.Fatalf("read fault mapped %#x (read %q)", pte, b)
	}
	if err := s.CopyOut(base, []byte("p")); err != nil {
		t.Fatal(err)
	}
	if pte := pteAt(s, base); uintptr(pte&pteAddr) == pg.pages[0] || fp.Page(pg.pages[0])[0] != 'A' {
		t.Fatal("a private store reached the file")
	}
	s.CopyIn(base, b)
	if b[0] != 'p' {
		t.Fatalf("private copy reads %q", b)
	}
	// A store to a page never read copies it too.
	s.CopyOut(base+PageSize+1, []byte("q"))
	if s.CopyIn(base+PageSize, b); b[0] != 'B' || pg.wholds[1] != 0 {
		t.Fatal("copy of an unread page lost the file's bytes, or held it writably")
	}
	if s.Sync(base, 2*PageSize); pg.syncs != 0 {
		t.Fatal("msync wrote a file through a private mapping")
	}
	if err := s.Unmap(base, 2*PageSize); err != nil {
		t.Fatal(err)
	}
	if pg.held() != 0 || pg.done != 1 {
		t.Fatalf("after munmap: %d holds, done %d", pg.held(), pg.done)
	}
}

// Past the end is SIGBUS; a page truncated while mapped keeps its frame
// (still in the page table) until the mapping goes, and a page read in
// again after the file grows replaces it at the next store.
func TestPagerTruncate(t *testing.T) {
	s, fp, flushes := newTestSpace(t, 1000)
	pg := newFakePager(fp, 4)
	const base = 0x600000
	mapPager(t, s, fp, pg, base, 8, false)
	b := make([]byte, 1)
	if err := s.Fault(base+4*PageSize, false, false); !errors.Is(err, ErrBus) {
		t.Fatalf("fault past the end: %v", err)
	}
	s.CopyIn(base+3*PageSize, b)
	old := pg.pages[3]
	pg.truncate(2)
	if err := s.Fault(base+2*PageSize, true, false); !errors.Is(err, ErrBus) {
		t.Fatalf("store past the new end: %v", err)
	}
	if fp.Page(old) == nil || uintptr(pteAt(s, base+3*PageSize)&pteAddr) != old {
		t.Fatal("truncated frame gone while mapped")
	}
	pg.truncate(4)
	*flushes = 0
	if err := s.CopyOut(base+3*PageSize, []byte("n")); err != nil {
		t.Fatal(err)
	}
	now := pg.pages[3]
	if now == old || uintptr(pteAt(s, base+3*PageSize)&pteAddr) != now || fp.Page(now)[0] != 'n' || *flushes == 0 {
		t.Fatalf("store after regrowing: entry %#x, page %#x (old %#x), %d flushes", pteAt(s, base+3*PageSize), now, old, *flushes)
	}
	before := fp.inUse()
	s.Destroy()
	if pg.held() != 0 || len(pg.gone) != 0 {
		t.Fatalf("after the mapping: %d holds, %d frames waiting", pg.held(), len(pg.gone))
	}
	if fp.inUse() >= before {
		t.Fatal("the truncated frame was not freed with its last hold")
	}
}

// mprotect adding PROT_WRITE leaves a shared page read-only, so the
// next store still tells the file; ENOSPC there is SIGBUS.
func TestPagerProtectAndNoSpace(t *testing.T) {
	s, fp, _ := newTestSpace(t, 1000)
	pg := newFakePager(fp, 2)
	const base = 0x600000
	mapPager(t, s, fp, pg, base, 2, false)
	if err := s.Protect(base, 2*PageSize, ProtRead); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	s.CopyIn(base, b)
	s.CopyIn(base+PageSize, b)
	if err := s.Protect(base, 2*PageSize, ProtRead|ProtWrite); err != nil {
		t.Fatal(err)
	}
	if pteAt(s, base)&PTEWrite != 0 {
		t.Fatal("mprotect made a shared file page writable without a store fault")
	}
	if err := s.CopyOut(base, []byte("w")); err != nil || pg.wholds[0] != 1 {
		t.Fatalf("store: %v, writable holds %d", err, pg.wholds[0])
	}
	pg.noSpace = true
	if err := s.Fault(base+PageSize, true, false); !errors.Is(err, ErrBus) {
		t.Fatalf("store without space: %v", err)
	}
	if pteAt(s, base+PageSize)&PTEWrite != 0 {
		t.Fatal("failed store fault left the page writable")
	}
	s.Destroy()
	if pg.held() != 0 {
		t.Fatal("holds leaked")
	}
}

// Two separate mappings of one file are two objects on the same pages;
// a futex word in them is one word.
func TestPagerSeparateMappings(t *testing.T) {
	s, fp, _ := newTestSpace(t, 1000)
	pg := newFakePager(fp, 1)
	a := mapPager(t, s, fp, pg, 0x600000, 1, false)
	b := mapPager(t, s, fp, pg, 0x700000, 1, false)
	if a == b {
		t.Fatal("one object for two mmaps")
	}
	s.CopyOut(0x600010, []byte("s"))
	buf := make([]byte, 1)
	if s.CopyIn(0x700010, buf); buf[0] != 's' {
		t.Fatal("second mapping does not see the first's store")
	}
	k1, o1, _ := s.FutexKey(0x600010)
	k2, o2, _ := s.FutexKey(0x700010)
	if k1 != k2 || o1 != o2 {
		t.Fatal("futex keys differ for one file's word")
	}
	s.Destroy()
	if pg.held() != 0 || pg.done != 2 {
		t.Fatalf("%d holds, done %d", pg.held(), pg.done)
	}
}

// Threads of a process faulting the same pages of a shared and a
// private mapping at once: each page is held once per object, and
// every hold goes back.
func TestPagerConcurrentFaults(t *testing.T) {
	s, fp, _ := newTestSpace(t, 2000)
	pg := newFakePager(fp, 64)
	const shared, private = 0x600000, 0x800000
	mapPager(t, s, fp, pg, shared, 64, false)
	mapPager(t, s, fp, pg, private, 64, true)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			b := make([]byte, 1)
			for i := uintptr(0); i < 64; i++ {
				va := (i + uintptr(g)*16) % 64 * PageSize
				if (int(i)+g)%2 == 0 {
					s.CopyOut(shared+va+uintptr(g), []byte{byte(g)})
					s.CopyOut(private+va+uintptr(g), []byte{byte(g)})
				} else {
					s.CopyIn(shared+va, b)
					s.CopyIn(private+va, b)
				}
			}
		}(g)
	}
	wg.Wait()
	if n := pg.held(); n > 2*64 {
		t.Fatalf("%d holds for 64 pages in two objects", n)
	}
	s.Destroy()
	if pg.held() != 0 || pg.done != 2 {
		t.Fatalf("after Destroy: %d holds, done %d", pg.held(), pg.done)
	}
}

// A program's segment mapped from a pager (exec of a file in the page
// cache): whole pages copy-on-write from the file, the page that
// FileEnd cuts copied with zeros after it, the bss after it zeros.
func TestPagerSegment(t *testing.T) {
	s, fp, _ := newTestSpace(t, 1000)
	pg := newFakePager(fp, 4)
	for i := uintptr(0); i < 4; i++ {
		pa, _ := pg.HoldPage(i, false)
		for j := range fp.Page(pa) {
			fp.Page(pa)[j] = byte('a' + i)
		}
		pg.ReleasePage(i, pa, false)
	}
	const base = 0x600000
	o := NewPagerShm(testPhys{fp}, pg)
	err := s.Map(VMA{Start: base, End: base + 4*PageSize, Prot: ProtRead | ProtWrite, Shm: o, Private: true, FileEnd: PageSize + 100})
	o.DecRef()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 2)
	s.CopyIn(base+10, b[:1])
	if b[0] != 'a' || uintptr(pteAt(s, base)&pteAddr) != pg.pages[0] {
		t.Fatal("whole file page not mapped from the file")
	}
	s.CopyIn(base+PageSize+99, b)
	if b[0] != 'b' || b[1] != 0 || uintptr(pteAt(s, base+PageSize)&pteAddr) == pg.pages[1] {
		t.Fatalf("page cut by FileEnd reads %q, or maps the file's page", b)
	}
	s.CopyOut(base+3*PageSize, []byte("z"))
	s.CopyIn(base+3*PageSize+1, b[:1])
	if b[0] != 0 {
		t.Fatalf("bss page written reads %q, not zeros", b[:1])
	}
	s.CopyIn(base+2*PageSize, b[:1])
	if b[0] != 0 {
		t.Fatal("bss page read shows the file")
	}
	s.Destroy()
	if pg.held() != 0 || pg.done != 1 {
		t.Fatalf("%d holds, done %d", pg.held(), pg.done)
	}
}

// punch takes pages [first, last) out of the file, as a hole punch does:
// a held page's frame waits for its last hold.
func (p *fakePager) punch(first, last uintptr) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for idx, pa := range p.pages {
		if idx >= first && idx < last {
			delete(p.pages, idx)
			if p.holds[pa] > 0 {
				p.gone[pa] = true
			} else {
				p.phys.Free(pa)
			}
		}
	}
}

// UnmapPages after a truncate or a hole punch clears the entries of the
// cut pages in every space mapping the object, a fork child's private
// copy included, and gives the holds back: a touch past the new end is
// SIGBUS, and a store into the hole lands in the file's new page (it
// went to the old frame, no longer the file's, and was lost).
func TestPagerUnmapPages(t *testing.T) {
	s, fp, flushes := newTestSpace(t, 1000)
	pg := newFakePager(fp, 4)
	const base = 0x600000
	o := mapPager(t, s, fp, pg, base, 4, false)
	for i := uintptr(0); i < 4; i++ {
		if err := s.CopyOut(base+i*PageSize+1, []byte("w")); err != nil {
			t.Fatal(err)
		}
	}
	c, err := s.Fork(initAS(testPhys{fp}))
	if err != nil {
		t.Fatal(err)
	}
	// The child's own mapping of the object, private, with a copy of page 3.
	co := NewPagerShm(testPhys{fp}, pg)
	if err := c.Map(VMA{Start: 0x800000, End: 0x800000 + 4*PageSize, Prot: ProtRead | ProtWrite, Shm: co, Private: true}); err != nil {
		t.Fatal(err)
	}
	co.DecRef()
	if err := c.CopyOut(0x800000+3*PageSize, []byte("p")); err != nil {
		t.Fatal(err)
	}
	if err := c.CopyIn(base+2*PageSize, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}

	// The file loses page 1 (a hole) and pages 3 on (truncate).
	old1 := pg.pages[1]
	pg.punch(1, 2)
	pg.truncate(3)
	*flushes = 0
	o.UnmapPages(1, 2)
	o.UnmapPages(3, ^uintptr(0))
	co.UnmapPages(3, ^uintptr(0))
	for _, e := range []struct {
		sp *Space
		va uintptr
	}{{s, base + PageSize}, {s, base + 3*PageSize}, {c, 0x800000 + 3*PageSize}} {
		if pte := pteAt(e.sp, e.va); holdsFrame(pte) {
			t.Fatalf("entry of a cut page at %#x still maps %#x", e.va, pte)
		}
	}
	if pteAt(s, base+2*PageSize) == 0 || pteAt(c, base+2*PageSize) == 0 || *flushes == 0 {
		t.Fatalf("a page left in the file was unmapped, or no flush (%d)", *flushes)
	}
	if err := s.Fault(base+3*PageSize, false, false); !errors.Is(err, ErrBus) {
		t.Fatalf("touch past the new end after UnmapPages: %v", err)
	}
	if err := c.Fault(0x800000+3*PageSize, false, false); !errors.Is(err, ErrBus) {
		t.Fatalf("child's private copy past the new end: %v", err)
	}
	if pg.gone[old1] {
		t.Fatal("the punched page's frame is still held after UnmapPages")
	}
	if err := s.CopyOut(base+PageSize, []byte("h")); err != nil {
		t.Fatal(err)
	}
	if now := pg.pages[1]; now == 0 || now == old1 || fp.Page(now)[0] != 'h' {
		t.Fatalf("store into the hole: file page %#x (old %#x)", now, old1)
	}
	c.Destroy()
	s.Destroy()
	if pg.held() != 0 || len(pg.gone) != 0 || pg.done != 2 {
		t.Fatalf("after the mappings: %d holds, %d frames waiting, done %d", pg.held(), len(pg.gone), pg.done)
	}
}

// TestPagerCleanPages: a write-back's CleanPages write-protects the
// pages a shared mapping stored to, in every space that maps them
// (fork's too), turns the writable holds into read holds and flushes;
// the next store faults and takes a writable hold again. Pages held
// only for reading, or not at all, and a private mapping's copy are
// left alone.
func TestPagerCleanPages(t *testing.T) {
	s, fp, flushes := newTestSpace(t, 1000)
	pg := newFakePager(fp, 4)
	const base, priv = 0x600000, 0x700000
	o := mapPager(t, s, fp, pg, base, 4, false)
	mapPager(t, s, fp, pg, priv, 4, true)
	for _, va := range []uintptr{base + PageSize, base + 2*PageSize, priv + PageSize} {
		if err := s.CopyOut(va, []byte("w")); err != nil {
			t.Fatal(err)
		}
	}
	b := make([]byte, 1)
	if err := s.CopyIn(base, b); err != nil {
		t.Fatal(err)
	}
	c, err := s.Fork(initAS(testPhys{fp}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	if err := c.CopyOut(base+2*PageSize+1, []byte("c")); err != nil {
		t.Fatal(err)
	}
	if pg.wholds[1] != 1 || pg.wholds[2] != 1 {
		t.Fatalf("writable holds %v before", pg.wholds)
	}
	if pteAt(c, base+2*PageSize)&PTEWrite == 0 || pteAt(s, base+PageSize)&PTEWrite == 0 {
		t.Fatal("stores left read-only entries")
	}
	privPTE := pteAt(s, priv+PageSize)
	held, before := pg.held(), *flushes
	o.CleanPages([]uintptr{0, 1, 2, 3})
	if pg.wholds[1] != 0 || pg.wholds[2] != 0 || pg.held() != held {
		t.Fatalf("after CleanPages: writable holds %v, %d holds (want %d)", pg.wholds, pg.held(), held)
	}
	if *flushes == before {
		t.Error("no flush after write-protecting")
	}
	for _, sp := range []*Space{s, c} {
		for i := uintptr(0); i < 3; i++ {
			// (The child faults in only what it touched.)
			pte := pteAt(sp, base+i*PageSize)
			if pte != 0 && (pte&PTEWrite != 0 || pte&PTEPresent == 0 || uintptr(pte&pteAddr) != pg.pages[i]) {
				t.Errorf("page %d: entry %#x, want the file's frame %#x read-only", i, pte, pg.pages[i])
			}
		}
	}
	if pteAt(s, priv+PageSize) != privPTE {
		t.Errorf("private copy's entry changed: %#x -> %#x", privPTE, pteAt(s, priv+PageSize))
	}
	// A store after the write-back faults and dirties the page again.
	if err := c.CopyOut(base+PageSize+2, []byte("d")); err != nil {
		t.Fatal(err)
	}
	if pg.wholds[1] != 1 || pteAt(c, base+PageSize)&PTEWrite == 0 || fp.Page(pg.pages[1])[2] != 'd' {
		t.Fatalf("store after clean: writable holds %v, entry %#x", pg.wholds, pteAt(c, base+PageSize))
	}
	// Nothing held writably: nothing to do, no flush.
	before = *flushes
	o.CleanPages([]uintptr{0, 2, 3})
	if *flushes != before {
		t.Error("a flush with nothing write-protected")
	}
}
