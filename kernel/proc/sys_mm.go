package proc

// The memory calls: brk, mmap, mremap, madvise, msync, munmap, mprotect.
// The handlers check the arguments in Linux's order; package mm does the
// work.

import (
	"shortbread/kernel/mm"
	"shortbread/kernel/vfs"
)

func sysBrk(t *Thread, a *[6]uint64) (int64, bool) {
	return int64(t.Proc.Space().Brk(uintptr(a[0]))), false
}

// mmap flags (include/uapi/linux/mman.h, asm-generic/mman-common.h).
const (
	mapShared         = 0x01
	mapPrivate        = 0x02
	mapSharedValidate = 0x03
	mapType           = 0x0f
	mapFixed          = 0x10
	mapAnonymous      = 0x20
	mapGrowsdown      = 0x100
	mapLocked         = 0x2000
	mapFixedNoreplace = 0x100000
	// legacyMapMask is what MAP_SHARED_VALIDATE accepts (Linux's
	// LEGACY_MAP_MASK): the flags older kernels ignored when unknown. No
	// file system here adds one (MAP_SYNC is DAX's).
	legacyMapMask = mapShared | mapPrivate | mapFixed | mapAnonymous | mapGrowsdown | mapLocked |
		0x800 | 0x1000 | 0x4000 | 0x8000 | 0x10000 | 0x20000 | 0x40000 | 0x4000000
)

// sysMmap checks in do_mmap's order: the offset's alignment (x86's
// sys_mmap, before the descriptor), the descriptor, the length, where a
// fixed mapping would go, then the type and the file.
func sysMmap(t *Thread, a *[6]uint64) (int64, bool) {
	addr, n, prot, flags, off := uintptr(a[0]), uintptr(a[1]), int(a[2]), a[3], a[5]
	if off&(mm.PageSize-1) != 0 {
		return -eINVAL, false
	}
	var f *vfs.OpenFile
	if flags&mapAnonymous == 0 {
		var err error
		if f, err = t.file(int(int32(a[4]))); err != nil {
			return errno(err), false
		}
		defer f.DecRef()
		if f.IsPath() {
			return -eBADF, false
		}
	}
	if n == 0 || prot&^7 != 0 {
		return -eINVAL, false
	}
	if size := (n + mm.PageSize - 1) &^ (mm.PageSize - 1); size == 0 || size >= mm.UserTop {
		return -eNOMEM, false
	}
	if flags&(mapFixed|mapFixedNoreplace) != 0 {
		if addr&(mm.PageSize-1) != 0 {
			return -eINVAL, false
		}
		if addr+n < addr || addr+n > mm.UserTop {
			return -eNOMEM, false
		}
	}
	s := t.Proc.Space()
	if flags&mapLocked != 0 {
		// can_do_mlock and mlock_future_check, before the file's checks.
		size := (n + mm.PageSize - 1) &^ (mm.PageSize - 1)
		if limit, privileged := t.memlockLimit(); !privileged {
			if limit == 0 {
				return -ePERM, false
			}
			if uint64(s.LockedBytes())+uint64(size) > limit {
				return -eAGAIN, false
			}
		}
	}
	v := mm.VMA{Prot: prot}
	if f != nil {
		if e := t.mapFile(&v, f, off, n, flags); e != 0 {
			return e, false
		}
	} else {
		switch flags & mapType {
		case mapShared:
			if flags&mapGrowsdown != 0 {
				return -eINVAL, false
			}
			v.Shm = mm.NewShm(Frames{})
		case mapPrivate:
			if flags&mapGrowsdown != 0 {
				// A stack that faults just below it extend, as
				// Linux's VM_GROWSDOWN, up to RLIMIT_STACK.
				v.GrowsDown = true
				v.MaxSize = uintptr(min(t.Proc.rlimits()[rlimitStack].cur, mm.UserTop)) &^ (mm.PageSize - 1)
			}
		default:
			return -eINVAL, false
		}
	}
	if v.Shm != nil {
		// The mapping takes its own reference; a failed one leaves
		// nothing behind.
		defer v.Shm.DecRef()
	}
	switch {
	case flags&mapFixedNoreplace != 0:
		if addr&(mm.PageSize-1) != 0 {
			return -eINVAL, false
		}
		got, err := s.MapAnywhere(addr, n, v, s.MmapTop())
		if err != nil {
			return errno(err), false
		}
		if got != addr {
			s.Unmap(got, n)
			return -eEXIST, false
		}
		if e := t.lockNewMapping(got, n, flags&mapLocked != 0); e != 0 {
			return e, false
		}
		return int64(got), false
	case flags&mapFixed != 0:
		if addr&(mm.PageSize-1) != 0 {
			return -eINVAL, false
		}
		v.Start, v.End = addr, addr+n
		if v.End < v.Start {
			return -eNOMEM, false
		}
		if err := s.Map(v); err != nil {
			return errno(err), false
		}
		if e := t.lockNewMapping(addr, n, flags&mapLocked != 0); e != 0 {
			return e, false
		}
		return int64(addr), false
	}
	got, err := s.MapAnywhere(addr, n, v, s.MmapTop())
	if err != nil {
		return errno(err), false
	}
	if e := t.lockNewMapping(got, n, flags&mapLocked != 0); e != 0 {
		return e, false
	}
	return int64(got), false
}

// mremap flags.
const (
	mremapMaymove   = 1
	mremapFixed     = 2
	mremapDontunmap = 4
)

func sysMremap(t *Thread, a *[6]uint64) (int64, bool) {
	old, oldSize, newSize, flags, newAddr := uintptr(a[0]), uintptr(a[1]), uintptr(a[2]), a[3], uintptr(a[4])
	if flags&^(mremapMaymove|mremapFixed) != 0 || (flags&mremapFixed != 0 && flags&mremapMaymove == 0) {
		return -eINVAL, false // MREMAP_DONTUNMAP is not supported
	}
	fixed := uintptr(0)
	if flags&mremapFixed != 0 {
		// mremap_to: a destination past user space is EINVAL.
		if newAddr == 0 || newSize > mm.UserTop || newAddr > mm.UserTop-newSize {
			return -eINVAL, false
		}
		fixed = newAddr
	}
	s := t.Proc.Space()
	// Growing a locked mapping locks the new part: RLIMIT_MEMLOCK applies
	// (vma_to_resize's mlock_future_check).
	grow := (newSize+mm.PageSize-1)&^(mm.PageSize-1) - (oldSize+mm.PageSize-1)&^(mm.PageSize-1)
	if old&(mm.PageSize-1) == 0 && int64(grow) > 0 && s.LockedIn(old, mm.PageSize) > 0 {
		if limit, privileged := t.memlockLimit(); !privileged && uint64(s.LockedBytes())+uint64(grow) > limit {
			return -eAGAIN, false
		}
	}
	got, err := s.Remap(old, oldSize, newSize, flags&mremapMaymove != 0, fixed, s.MmapTop())
	if err != nil {
		return errno(err), false
	}
	return int64(got), false
}

// madvise advice values.
const (
	madvDontneed = 4
	madvFree     = 8
)

// sysMadvise: DONTNEED and FREE give the pages back at once; the hints
// (WILLNEED, SEQUENTIAL, HUGEPAGE, DONTFORK...) are accepted and change
// nothing; REMOVE (of shared file pages) is not supported: it answers
// what Linux checks first, and then EOPNOTSUPP.
//
// The order is do_madvise's: the advice, the address's alignment, a
// length that rounds up to zero or wraps (EINVAL), an empty range
// (nothing to do), then the range's mappings.
// sysMincore reports which pages of a range are in memory (Linux's order:
// the alignment (EINVAL), a range past the user half (ENOMEM), then a
// chunk at a time, an unmapped page (ENOMEM) before the vector's copy
// (EFAULT)); a length of 0 succeeds without looking at the vector.
func sysMincore(t *Thread, a *[6]uint64) (int64, bool) {
	start, n, vec := uintptr(a[0]), uintptr(a[1]), uintptr(a[2])
	if start&(mm.PageSize-1) != 0 {
		return -eINVAL, false
	}
	if n > mm.UserTop || start+n > mm.UserTop {
		return -eNOMEM, false
	}
	pages := (n + mm.PageSize - 1) / mm.PageSize
	var chunk [mm.PageSize]byte // one page of answers at a time, as Linux's
	s := t.Proc.Space()
	for done := uintptr(0); done < pages; {
		out := chunk[:min(pages-done, uintptr(len(chunk)))]
		if err := s.Resident(start+done*mm.PageSize, out); err != nil {
			return errno(err), false
		}
		if err := s.CopyOut(vec+done, out); err != nil {
			return errno(err), false
		}
		done += uintptr(len(out))
	}
	return 0, false
}

func sysMadvise(t *Thread, a *[6]uint64) (int64, bool) {
	const madvRemove = 9
	start, n, advice := uintptr(a[0]), uintptr(a[1]), a[2]
	known := advice == madvDontneed || advice == madvFree || advice == madvRemove ||
		advice <= 3 || advice >= 10 && advice <= 17 || advice >= 20 && advice <= 25
	if !known || start&(mm.PageSize-1) != 0 {
		return -eINVAL, false
	}
	size := (n + mm.PageSize - 1) &^ (mm.PageSize - 1)
	if n != 0 && size == 0 || start+size < start {
		return -eINVAL, false
	}
	if size == 0 {
		return 0, false
	}
	s := t.Proc.Space()
	switch advice {
	case madvDontneed, madvFree:
		// A locked page stays (madvise_dontneed_free_valid_vma).
		if err := s.Advise(start, n); err == nil && s.LockedIn(start, size) > 0 {
			return -eINVAL, false
		}
		return errno(s.Discard(start, n)), false
	case madvRemove:
		// madvise_remove: of a locked, private or anonymous mapping
		// EINVAL; of a shared one that cannot be written EACCES.
		if err := s.Advise(start, n); err != nil {
			return errno(err), false
		}
		v, _ := s.VMAAt(start)
		switch {
		case v.Locked || v.Shm == nil || v.Private:
			return -eINVAL, false
		case v.Prot&mm.ProtWrite == 0:
			return -eACCES, false
		}
		return -eOPNOTSUPP, false
	}
	return errno(s.Advise(start, n)), false
}

// sysMsync: shared mappings are the file's own pages, so there is
// nothing to copy; MS_SYNC writes back the files in the page cache that
// shared mappings in the range map (their fsync), MS_ASYNC leaves them
// to the flusher. The range must be mapped.
//
// The order is Linux's: the flags, the address's alignment, MS_SYNC with
// MS_ASYNC (EINVAL); a range that wraps (ENOMEM); an empty one
// (nothing to do); a hole (ENOMEM); MS_INVALIDATE of locked pages
// (EBUSY).
func sysMsync(t *Thread, a *[6]uint64) (int64, bool) {
	const msAsync, msInvalidate, msSync = 1, 2, 4
	start, n, flags := uintptr(a[0]), uintptr(a[1]), a[2]
	if flags&^(msAsync|msInvalidate|msSync) != 0 || start&(mm.PageSize-1) != 0 ||
		flags&(msAsync|msSync) == msAsync|msSync {
		return -eINVAL, false
	}
	size := (n + mm.PageSize - 1) &^ (mm.PageSize - 1)
	if start+size < start {
		return -eNOMEM, false
	}
	if size == 0 {
		return 0, false
	}
	s := t.Proc.Space()
	if err := s.Advise(start, size); err != nil {
		return errno(err), false
	}
	if flags&msInvalidate != 0 && s.LockedIn(start, size) > 0 {
		return -eBUSY, false
	}
	if flags&msSync != 0 {
		return errno(s.Sync(start, size)), false
	}
	return 0, false
}

func sysMunmap(t *Thread, a *[6]uint64) (int64, bool) {
	return errno(t.Proc.Space().Unmap(uintptr(a[0]), uintptr(a[1]))), false
}

// sysMprotect checks in do_mprotect_pkey's order: PROT_GROWSDOWN with
// PROT_GROWSUP, then the address's alignment (EINVAL); an empty range
// (nothing to do); a range that wraps (ENOMEM); unknown bits (EINVAL);
// then the mappings. PROT_GROWSDOWN extends the range down to the start
// of a mapping that grows down (the stack, MAP_GROWSDOWN) and is EINVAL
// on any other, as is PROT_GROWSUP (no mapping grows up on x86).
func sysMprotect(t *Thread, a *[6]uint64) (int64, bool) {
	const protGrowsdown, protGrowsup = 0x01000000, 0x02000000
	start, n, prot := uintptr(a[0]), uintptr(a[1]), a[2]
	if prot&(protGrowsdown|protGrowsup) == protGrowsdown|protGrowsup || start&(mm.PageSize-1) != 0 {
		return -eINVAL, false
	}
	if n == 0 {
		return 0, false
	}
	if size := (n + mm.PageSize - 1) &^ (mm.PageSize - 1); size == 0 || start+size <= start {
		return -eNOMEM, false
	}
	s := t.Proc.Space()
	if prot&protGrowsdown != 0 {
		// The change reaches down to the start of a mapping that grows
		// down; any other mapping refuses (x86 has none growing up).
		v, ok := s.VMAAt(start)
		if !ok || !v.GrowsDown {
			return -eINVAL, false
		}
		n += start - v.Start
		start = v.Start
		prot &^= protGrowsdown
	}
	if prot&^7 != 0 {
		return -eINVAL, false
	}
	return errno(s.Protect(start, n, int(prot))), false
}

// sharedPager is a file whose pages a shared mapping can map (tmpfs).
type sharedPager interface{ SharedPages() *mm.Shm }

// cachedPager is a file whose pages a cache keeps (ext4's, in the page
// cache): mappings map them in place through its pager, which the
// mapping's object gives back (Done) when it goes.
type cachedPager interface{ Pager() (mm.Pager, bool) }

// pagesOf returns the object a mapping of f maps its pages from, with a
// reference for the caller, or nil if f's pages cannot be mapped.
func pagesOf(f *vfs.OpenFile) *mm.Shm {
	switch in := f.Inode().(type) {
	case sharedPager:
		return in.SharedPages()
	case cachedPager:
		if p, ok := in.Pager(); ok {
			return mm.NewPagerShm(Frames{}, mountHeldPager{p, f.HoldMount()})
		}
	}
	return nil
}

// mountHeldPager keeps the mount of a mapped file in use until the
// mapping's object is done with the pager (umount is EBUSY meanwhile):
// its pages are read and written back through the file system. A tmpfs
// file's pages need no file system to live, so its mappings hold none.
// (It is not a futex key: the pager's Key is.)
type mountHeldPager struct {
	mm.Pager
	release func()
}

func (p mountHeldPager) Done() {
	p.Pager.Done()
	p.release()
}

// mapFile fills in v for a mapping of f at offset uoff. A shared mapping maps
// the file's own pages, so writes go both ways; a private one maps them
// copy-on-write, so it sees the file until it writes a page, as on Linux
// (tmpfs files, and files in the page cache; a private mapping of another
// file copies the part of it it shows now).
//
// The checks are do_mmap's, in its order: the range within the largest
// file offset (EOVERFLOW); the type, with MAP_SHARED_VALIDATE refusing
// flags it does not know (EOPNOTSUPP); a writable shared mapping needs a
// descriptor open for writing, any mapping one open for reading
// (EACCES); a file that cannot be mapped (ENODEV); no MAP_GROWSDOWN.
func (t *Thread) mapFile(v *mm.VMA, f *vfs.OpenFile, uoff uint64, n uintptr, flags uint64) int64 {
	const maxOffset = 1<<63 - 1 // MAX_LFS_FILESIZE
	if size := uint64(n+mm.PageSize-1) &^ (mm.PageSize - 1); uoff > maxOffset-size {
		return -eOVERFLOW
	}
	off := int64(uoff)
	acc := f.Flags() & 3
	switch flags & mapType {
	case mapShared:
		flags &= legacyMapMask
		fallthrough
	case mapSharedValidate:
		if flags&^legacyMapMask != 0 {
			return -eOPNOTSUPP
		}
		if v.Prot&mm.ProtWrite != 0 && acc == 0 { // O_RDONLY
			return -eACCES
		}
	case mapPrivate:
	default:
		return -eINVAL
	}
	if acc == 1 { // O_WRONLY
		return -eACCES
	}
	if d := f.Dentry(); d != nil && d.Mount() != nil && d.Mount().NoExec() {
		// Nothing in a noexec mount is mapped executable, now (EPERM)
		// or by a later mprotect (EACCES: Linux clears VM_MAYEXEC).
		if v.Prot&mm.ProtExec != 0 {
			return -ePERM
		}
		v.Deny |= mm.ProtExec
	}
	a := f.Attr()
	if a.Mode&0o170000 != 0o100000 {
		return -eNODEV
	}
	if flags&mapGrowsdown != 0 {
		return -eINVAL
	}
	v.Off = uintptr(off)
	// /proc/<pid>/maps names the file, as Linux does (the dynamic
	// loader's libraries show there by path).
	v.Name = filePath(f)
	if e := sealedMapping(f, v, flags&mapShared != 0); e != 0 {
		return e
	}
	if flags&mapShared != 0 {
		if acc != 2 { // writing through it needs O_RDWR, now or later
			if v.Prot&mm.ProtWrite != 0 {
				return -eACCES
			}
			v.Deny |= mm.ProtWrite
		}
		if v.Shm = pagesOf(f); v.Shm == nil {
			return -eNODEV
		}
		return 0
	}
	if v.Shm = pagesOf(f); v.Shm != nil {
		v.Private = true
		return 0
	}
	// Only what the file holds is copied: a mapping larger than the file
	// (or a huge length) costs no more than the file.
	data := make([]byte, min(uint64(n), uint64(max(a.Size-off, 0))))
	got := 0
	for got < len(data) {
		k, err := f.Pread(data[got:], off+int64(got), nil)
		if err != nil || k == 0 {
			break
		}
		got += k
	}
	v.Data, v.File, v.Off = data[:got], true, 0
	return 0
}
