package proc

// mlock(2), mlock2(2), munlock(2), mlockall(2), munlockall(2): the
// checks and RLIMIT_MEMLOCK are here, the marks and the populating in mm
// (mlock.go). Root (CAP_IPC_LOCK) is not held to the limit.

import (
	"errors"

	"shortbread/kernel/mm"
)

// mlock2 and mlockall flags (include/uapi/asm-generic/mman-common.h,
// mman.h).
const (
	mlockOnfault = 1
	mclCurrent   = 1
	mclFuture    = 2
	mclOnfault   = 4
)

// memlockLimit returns RLIMIT_MEMLOCK's soft limit, and whether the
// caller may ignore it (CAP_IPC_LOCK, held by root).
func (t *Thread) memlockLimit() (limit uint64, privileged bool) {
	p := t.Proc
	p.mu.Lock()
	limit = p.rlimits()[rlimitMemlock].cur
	p.mu.Unlock()
	return limit, t.cred().Superuser()
}

// lockErrno turns a failure to lock into Linux's answer: pages that
// could not be made present for want of memory are EAGAIN
// (__mlock_posix_error_return), the rest as usual (a hole is ENOMEM).
func lockErrno(err error) int64 {
	if errors.Is(err, mm.ErrLockNoMem) {
		return -eAGAIN
	}
	return errno(err)
}

func sysMlock(t *Thread, a *[6]uint64) (int64, bool) {
	return t.mlock(uintptr(a[0]), uintptr(a[1]), false), false
}

func sysMlock2(t *Thread, a *[6]uint64) (int64, bool) {
	if a[2]&^mlockOnfault != 0 {
		return -eINVAL, false
	}
	return t.mlock(uintptr(a[0]), uintptr(a[1]), a[2]&mlockOnfault != 0), false
}

// mlock locks [start, start+n) with do_mlock's checks in its order: a
// limit of zero without privilege is EPERM, a total locked past the
// limit ENOMEM (what the range has locked already is not counted twice),
// a range with holes ENOMEM.
func (t *Thread) mlock(start, n uintptr, onFault bool) int64 {
	end := (start + n + mm.PageSize - 1) &^ (mm.PageSize - 1)
	start &^= mm.PageSize - 1
	if end < start {
		return -eINVAL
	}
	limit, privileged := t.memlockLimit()
	if limit == 0 && !privileged {
		return -ePERM
	}
	s := t.Proc.Space()
	if !privileged {
		locked := uint64(s.LockedBytes()) + uint64(end-start) - uint64(s.LockedIn(start, end-start))
		if locked > limit {
			return -eNOMEM
		}
	}
	return lockErrno(s.Lock(start, end-start, onFault))
}

func sysMunlock(t *Thread, a *[6]uint64) (int64, bool) {
	start, n := uintptr(a[0]), uintptr(a[1])
	end := (start + n + mm.PageSize - 1) &^ (mm.PageSize - 1)
	start &^= mm.PageSize - 1
	if end < start {
		return -eINVAL, false
	}
	return errno(t.Proc.Space().Unlock(start, end-start)), false
}

// sysMlockall: flags must name MCL_CURRENT or MCL_FUTURE (MCL_ONFAULT
// alone is EINVAL); without privilege a zero limit is EPERM and, with
// MCL_CURRENT, a space larger than the limit ENOMEM.
func sysMlockall(t *Thread, a *[6]uint64) (int64, bool) {
	flags := a[0]
	if flags == 0 || flags&^(mclCurrent|mclFuture|mclOnfault) != 0 || flags == mclOnfault {
		return -eINVAL, false
	}
	limit, privileged := t.memlockLimit()
	if limit == 0 && !privileged {
		return -ePERM, false
	}
	s := t.Proc.Space()
	if flags&mclCurrent != 0 && !privileged && uint64(s.MappedBytes()) > limit {
		return -eNOMEM, false
	}
	return lockErrno(s.LockAll(flags&mclCurrent != 0, flags&mclFuture != 0, flags&mclOnfault != 0)), false
}

func sysMunlockall(t *Thread, a *[6]uint64) (int64, bool) {
	t.Proc.Space().UnlockAll()
	return 0, false
}

// lockNewMapping locks a mapping just made when mlockall(MCL_FUTURE) is
// in force; past the limit the mapping fails with EAGAIN, as Linux's
// mlock_future_ok.
//
// A mapping made with MAP_LOCKED (mapLocked) is locked the same way;
// past RLIMIT_MEMLOCK it is EAGAIN (do_mmap's mlock_future_check).
func (t *Thread) lockNewMapping(addr, n uintptr, mapLocked bool) int64 {
	s := t.Proc.Space()
	future, onFault := s.LocksNew()
	if mapLocked {
		future, onFault = true, false
	}
	if !future {
		return 0
	}
	limit, privileged := t.memlockLimit()
	if !privileged && uint64(s.LockedBytes())+uint64(n) > limit {
		s.Unmap(addr, n)
		return -eAGAIN
	}
	if err := s.Lock(addr, n, onFault); err != nil {
		s.Unmap(addr, n)
		return lockErrno(err)
	}
	return 0
}
