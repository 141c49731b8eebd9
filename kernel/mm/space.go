package mm

import (
	"errors"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Protection bits, as in mmap(2).
const (
	ProtRead  = 1
	ProtWrite = 2
	ProtExec  = 4
)

// Errors, mapped to errno by the system call layer.
var (
	ErrFault       = errors.New("bad address")             // EFAULT
	ErrNoMem       = errors.New("cannot allocate memory")  // ENOMEM
	ErrInval       = errors.New("invalid argument")        // EINVAL
	ErrExists      = errors.New("mapping exists")          // EEXIST
	ErrAccess      = errors.New("access violates mapping") // SIGSEGV, SEGV_ACCERR
	ErrNoMap       = errors.New("address not mapped")      // SIGSEGV, SEGV_MAPERR
	ErrNameTooLong = errors.New("string too long")         // ENAMETOOLONG / E2BIG
	ErrDenied      = errors.New("protection not allowed")  // EACCES
	// ErrLockNoMem is a lock whose pages could not be made present for
	// want of memory (mlock's EAGAIN).
	ErrLockNoMem = errors.New("no memory for locked pages") // EAGAIN
)

// VMA is one mapping. File-backed private mappings copy their contents
// from Data (offset Off at Start) on first touch; bytes past Data read as
// zero (an ELF segment's bss, or a file's tail).
type VMA struct {
	Start, End uintptr
	Prot       int
	// Deny holds the protection bits the mapping may never gain, because
	// the descriptor it was made from did not allow them (Linux clears
	// VM_MAYWRITE for a shared mapping of a file opened read-only). The
	// limit stays with the mapping through mprotect, mremap, splits and
	// fork: it is what keeps a user from upgrading a read-only shared
	// mapping of another user's file to a writable one.
	Deny int
	Data []byte
	Off  uintptr
	Name string // for /proc/self/maps: "[heap]", "[stack]", a path
	// File marks Data as a file's contents (not a program segment with
	// bss after it): a page wholly past its end faults with ErrBus.
	File bool
	// Shm, when set, makes the mapping shared anonymous memory: pages come
	// from (and belong to) the object, at page index (address-Start+Off)/PageSize.
	Shm *Shm
	// Private, with Shm, makes it a private mapping of the object (a
	// program's segments, exec maps from the file's pages): a page is
	// mapped read-only from the object until written, then copied; the
	// object never sees the mapping's writes. FileEnd, when not 0, is the
	// object offset where the mapping's contents end (a segment's file
	// bytes): the rest of its page, and later pages, read as zeros
	// instead of faulting past the object's end.
	Private bool
	FileEnd uintptr
	// Locked marks an mlock'ed mapping (VM_LOCKED, mlock.go): its pages
	// were made present and are counted in VmLck. A fork child's copy is
	// not locked.
	Locked bool
	// GrowsDown makes the mapping a stack that a fault (or a copy) just
	// below it extends, page by page, down to Floor (RLIMIT_STACK at
	// exec), as Linux's VM_GROWSDOWN: only what it has grown to is mapped
	// and counts toward RLIMIT_AS (stack.go).
	GrowsDown bool
	Floor     uintptr
	// MaxSize, when not 0, bounds the size a growing mapping may reach
	// (an mmap with MAP_GROWSDOWN: RLIMIT_STACK when it was made, as
	// Linux's acct_stack_growth).
	MaxSize uintptr
}

// mayWriteShared reports whether v is a shared mapping of an object that
// may write it, now or after an mprotect (Linux's VM_SHARED|VM_MAYWRITE).
func (v *VMA) mayWriteShared() bool {
	return v.Shm != nil && !v.Private && v.Deny&ProtWrite == 0
}

// zeroFill reports whether the page at va of v reads as zeros until it
// is written: anonymous memory, or a program segment's bss past its file
// bytes.
func (v *VMA) zeroFill(va uintptr) bool {
	off := v.Off + pageDown(va) - v.Start
	switch {
	case v.Shm != nil:
		return v.Private && v.FileEnd != 0 && off >= pageUp(v.FileEnd)
	case v.Data != nil:
		return !v.File && off >= pageUp(uintptr(len(v.Data)))
	}
	return true
}

// objectBacked reports whether the page at va of a mapping of an object
// shows a whole page of it (not cut by FileEnd).
func (v *VMA) objectBacked(va uintptr) bool {
	off := v.Off + pageDown(va) - v.Start
	return v.Shm != nil && (v.FileEnd == 0 || off+PageSize <= v.FileEnd)
}

// Space is a user address space.
//
// Locking: every change to the mappings holds mapMu and the write side of
// mu (lock/unlock); faults and user copies hold mu's read side. Unmap
// drops mu once the VMAs are cut out and clears the page-table entries,
// flushes and frees under mapMu alone, as Linux's munmap downgrades
// mmap_lock: the process's other threads keep faulting meanwhile (a fault
// or copy in the range finds no VMA), and no mapping can reappear there
// before the flush.
type Space struct {
	mapMu   sync.Mutex
	mu      sync.RWMutex
	phys    Phys
	direct  unsafe.Pointer // phys's DirectMap, nil if it is no DirectPhys
	root    uintptr        // PML4
	vmas    []VMA          // sorted, non-overlapping
	hint    atomic.Int32   // the index find returned last (a guess)
	reserve [][2]uintptr
	brkBase uintptr
	brk     uintptr
	// mmapTop is the top of the area the kernel places mappings in (exec
	// sets it, randomised, before the space is in use; fork copies it).
	mmapTop uintptr
	// resident counts frames mapped into this space.
	resident atomic.Int64
	tlb      TLB
	// limit caps the bytes mapped (RLIMIT_AS), dataLimit those of data
	// mappings (RLIMIT_DATA); 0 means none.
	limit, dataLimit uintptr
	// cowMu serializes copy-on-write breaks (see breakCOWLocked).
	cowMu sync.Mutex
	// zero is a zeroed frame that read faults on anonymous memory map
	// read-only and copy-on-write, as Linux maps its zero page: reading
	// memory never written takes no frame. Made at the first such fault.
	zero atomic.Uintptr
	// unmapped holds frames taken out of the page tables (and flushed)
	// under the write lock; unlock frees them after releasing it, so the
	// other threads' faults do not wait for the frame allocator.
	unmapped []uintptr
	// unmappedObjs holds the objects of mappings removed under the write
	// lock: their references go after the frames, once the entries that
	// mapped their pages are cleared and flushed.
	unmappedObjs []mapping
	// lockNew and lockOnFault are mlockall's MCL_FUTURE and MCL_ONFAULT:
	// new mappings are to be locked (mlock.go). Protected by mu.
	lockNew, lockOnFault bool
}

// mapping is the reference a mapping holds on an object, and whether it
// may write it.
type mapping struct {
	s      *Space
	o      *Shm
	writer bool
}

// lockSpins bounds the attempts to take mu without sleeping.
const lockSpins = 1000

// rlock takes mu for reading. Writers hold it for microseconds (the VMA
// list changes; page tables are cleared outside it), far less than a
// sleeping goroutine takes to be woken and rescheduled, so a fault spins
// for a while before it sleeps.
func (s *Space) rlock() { spinLock(s.mu.TryRLock, s.mu.RLock) }

// spinLock takes a lock with try, lockSpins times, before it sleeps in
// lock. With one CPU the holder cannot run while we spin.
func spinLock(try func() bool, lock func()) {
	if try() {
		return
	}
	if runtime.GOMAXPROCS(0) == 1 {
		lock()
		return
	}
	for i := 0; i < lockSpins; i++ {
		if try() {
			return
		}
	}
	lock()
}

// lock takes the space for a change of its mappings.
func (s *Space) lock() {
	spinLock(s.mapMu.TryLock, s.mapMu.Lock)
	// A writer that sleeps on mu would also block every new fault until
	// it has been woken and rescheduled.
	spinLock(s.mu.TryLock, s.mu.Lock)
}

// unlock ends a change of the mappings and then frees the frames it
// unmapped.
func (s *Space) unlock() {
	free, objs := s.unmapped, s.unmappedObjs
	s.unmapped, s.unmappedObjs = nil, nil
	s.mu.Unlock()
	s.mapMu.Unlock()
	s.freeFrames(free)
	dropMappings(objs)
}

// dropMappings drops the references of mappings that are gone.
func dropMappings(objs []mapping) {
	for _, m := range objs {
		m.o.unmapRef(m.s, m.writer)
	}
}

// SetLimit caps the total size of the mappings (RLIMIT_AS): a mapping or
// break that would pass it fails with ErrNoMem. 0 removes the cap.
func (s *Space) SetLimit(n uintptr) {
	s.lock()
	s.limit = n
	s.unlock()
}

// SetDataLimit caps the size of the data mappings (RLIMIT_DATA): a data
// mapping or break that would pass it fails with ErrNoMem. 0 removes the
// cap.
func (s *Space) SetDataLimit(n uintptr) {
	s.lock()
	s.dataLimit = n
	s.unlock()
}

// isData reports whether v counts against RLIMIT_DATA: private and
// writable, not the stack (Linux's is_data_mapping: VM_WRITE without
// VM_SHARED or VM_STACK).
func (v *VMA) isData() bool {
	return v.Prot&ProtWrite != 0 && !(v.Shm != nil && !v.Private) && v.Name != "[stack]"
}

// fitsLocked reports whether mapping [start, end) keeps the space within
// its limits (RLIMIT_AS, and RLIMIT_DATA when data says the new mapping
// is a data mapping); what the range already maps is replaced, not
// added.
func (s *Space) fitsLocked(start, end uintptr, data bool) bool {
	return s.fitsAddLocked(start, end, end-start, data)
}

// fitsAddLocked is fitsLocked for n new bytes that replace what
// [start, end) maps (an empty range: n bytes in a free gap).
func (s *Space) fitsAddLocked(start, end, n uintptr, data bool) bool {
	if s.limit == 0 && (s.dataLimit == 0 || !data) {
		return true
	}
	total, dataTotal := n, uintptr(0)
	if data {
		dataTotal = n
	}
	for i := range s.vmas {
		v := &s.vmas[i]
		size := v.End - v.Start
		if lo, hi := max(v.Start, start), min(v.End, end); lo < hi {
			size -= hi - lo
		}
		total += size
		if v.isData() {
			dataTotal += size
		}
	}
	return (s.limit == 0 || total <= s.limit) && (s.dataLimit == 0 || !data || dataTotal <= s.dataLimit)
}

// dataLocked is the total size of the data mappings.
func (s *Space) dataLocked() uintptr {
	total := uintptr(0)
	for i := range s.vmas {
		if s.vmas[i].isData() {
			total += s.vmas[i].End - s.vmas[i].Start
		}
	}
	return total
}

// mappedLocked is the total size of the mappings.
func (s *Space) mappedLocked() uintptr {
	total := uintptr(0)
	for _, v := range s.vmas {
		total += v.End - v.Start
	}
	return total
}

// NewSpace makes an empty address space. init fills the three fresh
// frames (PML4, and the PDPT and page directory of the first GiB) with the
// shared kernel entries; reserved lists the lower-half ranges the kernel
// keeps; tlb keeps the CPUs' translations coherent.
func NewSpace(p Phys, init func(pml4, pdpt, pd uintptr) error, reserved [][2]uintptr, tlb TLB) (*Space, error) {
	var f [3]uintptr
	for i := range f {
		if f[i] = p.Alloc(); f[i] == 0 {
			for _, g := range f[:i] {
				p.Free(g)
			}
			return nil, ErrNoMem
		}
	}
	if err := init(f[0], f[1], f[2]); err != nil {
		for _, g := range f {
			p.Free(g)
		}
		return nil, err
	}
	tableFrames.Add(int64(len(f)))
	s := &Space{phys: p, root: f[0], reserve: reserved, tlb: tlb}
	if d, ok := p.(DirectPhys); ok {
		s.direct = d.DirectMap()
	}
	return s, nil
}

// TLB is how a space keeps the CPUs' translation caches coherent; nil
// functions do nothing (a simulated machine in tests).
type TLB struct {
	// Flush makes every CPU that may hold translations of the space
	// with page-table root root drop them (after mappings were removed
	// or restricted) before it returns.
	Flush func(root uintptr)
	// FlushRange is Flush after a change to the mappings of [start, end)
	// only (nil: Flush), so a CPU may drop just those pages.
	FlushRange func(root, start, end uintptr)
	// FlushOthers is Flush except on the calling CPU (nil: Flush).
	FlushOthers func(root uintptr)
	// Release makes every CPU stop using root as its page-table root:
	// CPUs may keep a space loaded after leaving user mode, and its
	// tables are about to be freed.
	Release func(root uintptr)
}

func (s *Space) flushLocked() {
	if s.tlb.Flush != nil {
		s.tlb.Flush(s.root)
	}
}

func (s *Space) flushRangeLocked(start, end uintptr) {
	if s.tlb.FlushRange == nil {
		s.flushLocked()
		return
	}
	s.tlb.FlushRange(s.root, start, end)
}

func (s *Space) flushOthersLocked() {
	if s.tlb.FlushOthers == nil {
		s.flushLocked()
		return
	}
	s.tlb.FlushOthers(s.root)
}

// Root is the physical address of the PML4, for CR3.
func (s *Space) Root() uintptr { return s.root }

func pageDown(v uintptr) uintptr { return v &^ (PageSize - 1) }
func pageUp(v uintptr) uintptr   { return (v + PageSize - 1) &^ (PageSize - 1) }

// usable reports whether [start, end) is inside the user half and clear of
// the kernel's reserved ranges.
func (s *Space) usable(start, end uintptr) bool {
	if start >= end || end > UserTop {
		return false
	}
	for _, r := range s.reserve {
		if start < r[1] && r[0] < end {
			return false
		}
	}
	return true
}

func (s *Space) find(va uintptr) int {
	// The mapping found last first: a system call's copies and a run of
	// faults mostly stay in one (a stack, a buffer). The hint is only a
	// guess, checked against the list in hand, so a stale one costs a
	// search and nothing else; it is atomic because readers share mu.
	if h := int(s.hint.Load()); h < len(s.vmas) && s.vmas[h].Start <= va && va < s.vmas[h].End {
		return h
	}
	lo := s.firstEndingAfter(va)
	if lo < len(s.vmas) && s.vmas[lo].Start <= va {
		s.hint.Store(int32(lo))
		return lo
	}
	return -1
}

// firstEndingAfter returns the index of the first VMA that ends above va,
// or len(s.vmas): sort.Search's, written out, since every copy from user
// memory looks its address up and the closure's calls were most of the
// look-up.
func (s *Space) firstEndingAfter(va uintptr) int {
	lo, hi := 0, len(s.vmas)
	for lo < hi {
		if m := int(uint(lo+hi) >> 1); s.vmas[m].End > va {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

func (s *Space) overlaps(start, end uintptr) bool {
	i := s.firstEndingAfter(start)
	return i < len(s.vmas) && s.vmas[i].Start < end
}

// insertLocked adds v, which must not overlap; a mapping of an object
// takes a reference to it.
func (s *Space) insertLocked(v VMA) {
	if v.Shm != nil {
		v.Shm.mapRef(s, v.mayWriteShared())
	}
	i := sort.Search(len(s.vmas), func(i int) bool { return s.vmas[i].Start >= v.End })
	s.vmas = append(s.vmas, VMA{})
	copy(s.vmas[i+1:], s.vmas[i:])
	s.vmas[i] = v
}

// splitLocked removes [start, end) from the VMA records only, splitting
// the VMAs it cuts, and returns the pieces that were inside the range.
// Each piece of a mapping of an object holds a reference: a piece inside
// keeps the one of the VMA it was cut from, pieces left outside take new
// ones. The caller gives the inside pieces' references to dropLater (or,
// with the write lock released, to dropMappings after the flush).
func (s *Space) splitLocked(start, end uintptr) (inside []VMA) {
	// The VMAs are sorted and disjoint, so those that meet [start, end)
	// are one run, vmas[i:j], and only its first and last can be cut.
	// The run is replaced in place: an munmap copies the list's tail
	// once and allocates only the pieces it returns (rebuilding the
	// whole list cost a server that maps and unmaps a buffer per request
	// ~5k instructions and an allocation per call).
	i := s.firstEndingAfter(start)
	j := i
	for j < len(s.vmas) && s.vmas[j].Start < end {
		j++
	}
	if i == j {
		return nil
	}
	var keep [2]VMA // the parts of vmas[i] and vmas[j-1] outside the range
	n := 0
	if v := s.vmas[i]; v.Start < start {
		keep[n] = v
		keep[n].End = start
		n++
		if v.Shm != nil {
			v.Shm.mapRef(s, v.mayWriteShared())
		}
	}
	inside = make([]VMA, 0, j-i)
	for _, v := range s.vmas[i:j] {
		if v.Start < start {
			v.Off += start - v.Start
			v.Start = start
		}
		v.End = min(v.End, end)
		inside = append(inside, v)
	}
	if v := s.vmas[j-1]; v.End > end {
		keep[n] = v
		keep[n].Off += end - v.Start
		keep[n].Start = end
		n++
		if v.Shm != nil {
			v.Shm.mapRef(s, v.mayWriteShared())
		}
	}
	s.vmas = slices.Replace(s.vmas, i, j, keep[:n]...)
	return inside
}

// dropLater queues the references of the mappings vs, taken out of the
// VMA list, to be dropped by unlock after the frames are freed.
func (s *Space) dropLater(vs []VMA) {
	for _, v := range vs {
		if v.Shm != nil {
			s.unmappedObjs = append(s.unmappedObjs, mapping{s, v.Shm, v.mayWriteShared()})
		}
	}
}

// objects returns the objects the mappings vs hold references to.
func (s *Space) objects(vs []VMA) []mapping {
	var objs []mapping
	for _, v := range vs {
		if v.Shm != nil {
			objs = append(objs, mapping{s, v.Shm, v.mayWriteShared()})
		}
	}
	return objs
}

// carveLocked removes [start, end) from the VMA list and unmaps the pages.
func (s *Space) carveLocked(start, end uintptr) {
	s.dropLater(s.splitLocked(start, end))
	s.unmapLocked(start, end)
}

// unmapLocked takes the frames mapped in [start, end) out of the page
// tables and flushes; they are freed when the write lock is released.
func (s *Space) unmapLocked(start, end uintptr) {
	free, removed := s.releaseRangeLocked(start, end)
	if removed {
		s.flushRangeLocked(start, end)
	}
	s.unmapped = append(s.unmapped, free...)
}

// Map adds a mapping at exactly [start, start+n), replacing whatever was
// there (like MAP_FIXED).
func (s *Space) Map(v VMA) error {
	v.Start, v.End = pageDown(v.Start), pageUp(v.End)
	s.lock()
	defer s.unlock()
	if !s.usable(v.Start, v.End) || !s.fitsLocked(v.Start, v.End, v.isData()) {
		return ErrNoMem
	}
	s.carveLocked(v.Start, v.End)
	s.insertLocked(v)
	return nil
}

// MapAnywhere places a mapping of n bytes: at hint if that range is free
// and usable, else in the highest free gap below top (mmap's top-down
// layout). It returns the address.
func (s *Space) MapAnywhere(hint, n uintptr, v VMA, top uintptr) (uintptr, error) {
	n = pageUp(n)
	if n == 0 || n >= UserTop {
		return 0, ErrNoMem
	}
	s.lock()
	defer s.unlock()
	if !s.fitsAddLocked(0, 0, n, v.isData()) {
		return 0, ErrNoMem
	}
	if hint = pageDown(hint); hint != 0 && hint+n > hint && s.usable(hint, hint+n) && !s.overlaps(hint, hint+n) {
		v.Start, v.End = hint, hint+n
		s.insertLocked(v)
		return hint, nil
	}
	a, err := s.findFreeLocked(n, top)
	if err != nil {
		return 0, err
	}
	v.Start, v.End = a, a+n
	s.insertLocked(v)
	return a, nil
}

// Unmap removes [start, start+n).
func (s *Space) Unmap(start, n uintptr) error {
	if start&(PageSize-1) != 0 || n == 0 || start+n < start || start+n > UserTop {
		return ErrInval // munmap(2): a range past the user half is EINVAL
	}
	end := pageUp(start + n)
	s.lock()
	gone := s.splitLocked(start, end)
	s.mu.Unlock()
	free, removed := s.releaseRangeLocked(start, end)
	if removed {
		s.flushRangeLocked(start, end)
	}
	s.mapMu.Unlock()
	// A shared object's frames must outlive the entries that map them:
	// its references go only now.
	s.freeFrames(free)
	dropMappings(s.objects(gone))
	return nil
}

// Protect changes the protection of [start, start+n), which must be
// mapped. It fails with ErrDenied, changing nothing, if a mapping in the
// range may not gain a bit of prot (its Deny).
func (s *Space) Protect(start, n uintptr, prot int) error {
	if start&(PageSize-1) != 0 || start+n < start {
		return ErrInval
	}
	end := pageUp(start + n)
	s.lock()
	defer s.unlock()
	// The range must be mapped throughout: walk the VMAs, not the pages.
	newData := uintptr(0) // bytes that become data mappings (RLIMIT_DATA)
	for va := start; va < end; {
		i := s.find(va)
		if i < 0 {
			return ErrNoMem
		}
		v := s.vmas[i]
		if prot&v.Deny != 0 {
			return ErrDenied
		}
		after := v
		after.Prot = prot
		if !v.isData() && after.isData() {
			newData += min(v.End, end) - max(v.Start, start)
		}
		va = v.End
	}
	if newData > 0 && s.dataLimit != 0 && s.dataLocked()+newData > s.dataLimit {
		return ErrNoMem // Linux's mprotect_fixup asks may_expand_vm too
	}
	// Keep the pages: re-cut only the VMA records.
	parts := s.splitLocked(start, end)
	for i := range parts {
		parts[i].Prot = prot
	}
	for _, p := range parts {
		s.insertLocked(p)
	}
	s.dropLater(parts)
	restricted := false
	leafTables(s.phys, s.root, start, end, func(_ uintptr, ptes []uint64) {
		for i, old := range ptes {
			if !holdsFrame(old) {
				continue
			}
			ptes[i] = old&(pteAddr|pteCOW|pteShared|PTEAccessed) | pteFlags(prot, readOnly(old))
			if ptes[i] != old {
				restricted = true
			}
		}
	})
	if restricted {
		s.flushRangeLocked(start, end)
	}
	return nil
}

func pteFlags(prot int, cow bool) uint64 {
	if prot&(ProtRead|ProtWrite|ProtExec) == 0 {
		return pteNone
	}
	f := uint64(PTEPresent | PTEUser)
	if prot&ProtWrite != 0 && !cow {
		f |= PTEWrite
	}
	if prot&ProtExec == 0 {
		f |= PTENX
	}
	return f
}

// Destroy releases every frame and page table of the space.
func (s *Space) Destroy() {
	s.lock()
	defer s.unlock()
	var free []uintptr
	for _, v := range s.vmas {
		f, _ := s.releaseRangeLocked(v.Start, v.End)
		free = append(free, f...)
	}
	s.dropLater(s.vmas)
	s.vmas = nil
	if s.tlb.Release != nil {
		s.tlb.Release(s.root) // flushes every CPU too
	}
	s.freeFrames(free)
	freeTables(s.phys, s.root, 4)
	s.phys.Free(s.root)
	tableFrames.Add(-1)
	s.root = 0
	if z := s.zero.Swap(0); z != 0 {
		s.phys.Free(z)
	}
}

// releaseRangeLocked frees the frames mapped in [start, end), honouring
// copy-on-write sharing, and reports whether any page was unmapped.
//
// It does not free them: it returns the frames that become free, for the
// caller to free after flushing the TLBs. Another CPU running a thread of
// this process may still hold a translation to a page being unmapped; a
// frame freed before the flush could be handed out (and zeroed, or
// filled) while that CPU still writes to it.
//
// Caller holds mapMu, and mu for writing unless [start, end) is already
// out of the VMA list (then no fault or copy can use its entries).
func (s *Space) releaseRangeLocked(start, end uintptr) (free []uintptr, removed bool) {
	zero := s.zero.Load()
	leafTables(s.phys, s.root, start, end, func(_ uintptr, ptes []uint64) {
		n := 0
		for i, pte := range ptes {
			if !holdsFrame(pte) {
				continue
			}
			pa := uintptr(pte & pteAddr)
			if pa == zero && pte&pteShared != 0 {
				ptes[i] = 0
				removed = true
				continue
			}
			switch {
			case pte&pteShared != 0: // the shared object owns the frame
			case pte&pteCOW == 0 || cowRelease(pa):
				free = append(free, pa)
			}
			ptes[i] = 0
			n++
		}
		if n > 0 {
			s.resident.Add(int64(-n))
			removed = true
		}
	})
	return free, removed
}

// freeFrames frees private frames of the space's mappings.
func (s *Space) freeFrames(frames []uintptr) {
	for _, pa := range frames {
		s.phys.Free(pa)
	}
	anonFrames.Add(-int64(len(frames)))
}

// MappedBytes is the total size of the mappings (VmSize).
func (s *Space) MappedBytes() uintptr {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mappedLocked()
}

// ResidentPages reports how many frames are mapped into the space.
func (s *Space) ResidentPages() int { return int(s.resident.Load()) }

// VMAs returns a copy of the mappings (for /proc/self/maps).
func (s *Space) VMAs() []VMA {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]VMA(nil), s.vmas...)
}

// VMAAt returns a copy of the mapping that holds va, if one does.
func (s *Space) VMAAt(va uintptr) (VMA, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if i := s.find(va); i >= 0 {
		return s.vmas[i], true
	}
	return VMA{}, false
}
