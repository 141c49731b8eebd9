package vfs

// flock(2) locks: whole-file shared or exclusive locks owned by an open
// file description, independent of the record locks in lock.go (a file
// may carry both and they never conflict), kept by the same manager so
// that every file system has them. Dup'ed and inherited descriptors share
// the lock; it goes when the description's last reference does.
//
// Converting a lock (shared to exclusive or back) is not atomic, as on
// Linux (flock_lock_inode): the old lock is dropped first, so a waiter
// may get in between, and a conversion that fails with EWOULDBLOCK
// leaves the file unlocked.

import "shortbread/kernel/abi/linux"

type flockHeld struct {
	owner *OpenFile
	write bool
}

// flockConflictLocked reports whether a lock of another description
// keeps owner from a shared (write false) or exclusive lock.
func (il *inodeLocks) flockConflictLocked(owner *OpenFile, write bool) bool {
	for _, h := range il.flocks {
		if h.owner != owner && (write || h.write) {
			return true
		}
	}
	return false
}

// flockDropLocked removes owner's flock lock and reports whether it had
// one.
func (il *inodeLocks) flockDropLocked(owner *OpenFile) bool {
	for i, h := range il.flocks {
		if h.owner == owner {
			il.flocks = append(il.flocks[:i], il.flocks[i+1:]...)
			lockCount.Add(-1)
			return true
		}
	}
	return false
}

// Flock applies flock(2) to f: typ is linux.F_RDLCK (LOCK_SH), F_WRLCK
// (LOCK_EX) or F_UNLCK (LOCK_UN). Without nonblock it waits for other
// descriptions' conflicting locks to go, failing with EINTR when intr
// fires; with nonblock a conflict is EWOULDBLOCK. Any access mode may
// lock; an O_PATH descriptor may not (EBADF).
func (f *OpenFile) Flock(typ int16, nonblock bool, intr <-chan struct{}) error {
	if f.IsPath() {
		return linux.EBADF
	}
	for {
		lockMu.Lock()
		il := locksOf(f.inode, typ != linux.F_UNLCK)
		if il == nil {
			lockMu.Unlock()
			return nil
		}
		write := typ == linux.F_WRLCK
		for _, h := range il.flocks {
			if h.owner == f && h.write == write && typ != linux.F_UNLCK {
				lockMu.Unlock()
				return nil // already held as asked
			}
		}
		if il.flockDropLocked(f) {
			il.wakeLocked()
		}
		if typ == linux.F_UNLCK {
			dropIfIdleLocked(f.inode, il)
			lockMu.Unlock()
			return nil
		}
		if !il.flockConflictLocked(f, write) {
			il.flocks = append(il.flocks, flockHeld{owner: f, write: write})
			lockCount.Add(1)
			lockMu.Unlock()
			return nil
		}
		if nonblock {
			dropIfIdleLocked(f.inode, il)
			lockMu.Unlock()
			return linux.EAGAIN
		}
		ch := il.changed
		lockMu.Unlock()
		NoteWait(intr)
		select {
		case <-ch:
		case <-intr:
			return linux.EINTR
		}
	}
}
