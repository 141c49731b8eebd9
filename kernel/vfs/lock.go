package vfs

// Record locks: fcntl's F_SETLK, F_SETLKW and F_GETLK (POSIX locks, owned
// by a descriptor table, so every thread of a process shares them and a
// fork's child has none) and F_OFD_* (owned by an open file description,
// shared by its dup'ed and inherited descriptors). One manager serves
// every file system: locks hang off the inode, whatever holds its data.
//
// Ranges are inclusive byte offsets; a lock "to the end of the file and
// beyond" ends at MaxOffset. An owner's locks never overlap one another:
// a new lock replaces what the owner held in its range, and neighbours of
// the same type merge, as Linux's posix_lock_file does, so an unlock of
// part of a range splits it.

import (
	"sync"
	"sync/atomic"

	"shortbread/kernel/abi/linux"
)

// MaxOffset is the last byte offset a lock can name (OFFSET_MAX).
const MaxOffset = int64(^uint64(0) >> 1)

// Lock is a record lock as fcntl reports it: its type (linux.F_RDLCK,
// F_WRLCK or F_UNLCK), its inclusive range and the holder's pid (-1 for
// an open file description's lock).
type Lock struct {
	Type       int16
	Start, End int64
	PID        int32
}

type heldLock struct {
	start, end int64
	write      bool
	owner      any // *FDTable (POSIX) or *OpenFile (OFD)
	pid        int32
}

type inodeLocks struct {
	held   []heldLock
	flocks []flockHeld // flock(2) locks (flock.go)
	leases []lease     // fcntl leases (lease.go)
	// changed is closed, and replaced, whenever locks are released or
	// downgraded: the waiters of F_SETLKW look again.
	changed chan struct{}
}

var (
	lockMu    sync.Mutex
	lockTable = map[Inode]*inodeLocks{}
	// waitsFor maps a POSIX owner blocked in F_SETLKW to the owner it
	// waits for, for deadlock detection.
	waitsFor = map[any]any{}
	// lockCount is the number of held locks, so closing a descriptor
	// costs nothing while nobody locks anything.
	lockCount atomic.Int64
)

// maxDeadlockSteps bounds the walk along the waits-for chain, as Linux's
// MAX_DEADLK_ITERATIONS does.
const maxDeadlockSteps = 10

func overlaps(a, b *heldLock) bool { return a.start <= b.end && b.start <= a.end }

// touches reports whether a and b overlap or are adjacent (mergeable).
func touches(a, b *heldLock) bool {
	return overlaps(a, b) || a.end != MaxOffset && a.end+1 == b.start || b.end != MaxOffset && b.end+1 == a.start
}

// conflictLocked returns a lock of another owner that keeps owner from
// locking [start, end) for writing (write) or reading, or nil.
func (il *inodeLocks) conflictLocked(owner any, start, end int64, write bool) *heldLock {
	want := heldLock{start: start, end: end}
	for i := range il.held {
		h := &il.held[i]
		if h.owner != owner && overlaps(h, &want) && (write || h.write) {
			return h
		}
	}
	return nil
}

// setLocked makes owner hold [start, end] with typ (F_UNLCK: hold nothing
// there) and reports whether another owner could now get more than
// before (something was released or downgraded).
func (il *inodeLocks) setLocked(owner any, pid int32, start, end int64, typ int16) (freed bool) {
	out := il.held[:0:0]
	for _, h := range il.held {
		if h.owner != owner || h.end < start || h.start > end {
			out = append(out, h)
			continue
		}
		if h.write && typ != linux.F_WRLCK || typ == linux.F_UNLCK {
			freed = true
		}
		if h.start < start {
			left := h
			left.end = start - 1
			out = append(out, left)
		}
		if h.end > end {
			right := h
			right.start = end + 1
			out = append(out, right)
		}
	}
	if typ != linux.F_UNLCK {
		n := heldLock{start: start, end: end, write: typ == linux.F_WRLCK, owner: owner, pid: pid}
		// Merge with the owner's touching locks of the same type.
		merged := out[:0]
		for _, h := range out {
			if h.owner == owner && h.write == n.write && touches(&h, &n) {
				n.start, n.end = min(n.start, h.start), max(n.end, h.end)
				continue
			}
			merged = append(merged, h)
		}
		out = append(merged, n)
	}
	lockCount.Add(int64(len(out) - len(il.held)))
	il.held = out
	return freed
}

// wakeLocked tells the waiters that locks went away.
func (il *inodeLocks) wakeLocked() {
	close(il.changed)
	il.changed = make(chan struct{})
}

func locksOf(ino Inode, create bool) *inodeLocks {
	il := lockTable[ino]
	if il == nil && create {
		il = &inodeLocks{changed: make(chan struct{})}
		lockTable[ino] = il
	}
	return il
}

// dropIfIdleLocked forgets an inode's entry once it holds no lock.
func dropIfIdleLocked(ino Inode, il *inodeLocks) {
	if len(il.held) == 0 && len(il.flocks) == 0 && len(il.leases) == 0 {
		delete(lockTable, ino)
	}
}

// deadlockLocked reports whether owner waiting for holder would close a
// cycle of POSIX owners waiting for one another.
func deadlockLocked(owner, holder any) bool {
	for i := 0; i < maxDeadlockSteps; i++ {
		if holder == owner {
			return true
		}
		next, ok := waitsFor[holder]
		if !ok {
			return false
		}
		holder = next
	}
	return false
}

// LockRange turns fcntl's l_whence, l_start and l_len into an inclusive
// byte range of f: l_len 0 means to the end of the file and beyond, a
// negative l_len the bytes before l_start.
func (f *OpenFile) LockRange(whence int16, start, length int64) (int64, int64, error) {
	switch whence {
	case linux.SEEK_SET:
	case linux.SEEK_CUR:
		f.posMu.Lock()
		pos := f.pos
		f.posMu.Unlock()
		if start > 0 && pos > MaxOffset-start {
			return 0, 0, linux.EOVERFLOW
		}
		start += pos
	case linux.SEEK_END:
		size := f.inode.Attr().Size
		if start > 0 && size > MaxOffset-start {
			return 0, 0, linux.EOVERFLOW
		}
		start += size
	default:
		return 0, 0, linux.EINVAL
	}
	if start < 0 {
		return 0, 0, linux.EINVAL
	}
	switch {
	case length == 0:
		return start, MaxOffset, nil
	case length > 0:
		if length-1 > MaxOffset-start {
			return 0, 0, linux.EOVERFLOW
		}
		return start, start + length - 1, nil
	}
	if start+length < 0 {
		return 0, 0, linux.EINVAL
	}
	return start + length, start - 1, nil
}

// lockable checks that f may take a lock of type typ: reading for a read
// lock, writing for a write lock.
func (f *OpenFile) lockable(typ int16) error {
	switch {
	case f.IsPath():
		return linux.EBADF
	case typ == linux.F_RDLCK && !f.readable(), typ == linux.F_WRLCK && !f.writable():
		return linux.EBADF
	case typ != linux.F_RDLCK && typ != linux.F_WRLCK && typ != linux.F_UNLCK:
		return linux.EINVAL
	}
	return nil
}

// SetLock applies a POSIX lock (owner: the caller's descriptor table,
// pid: its process) or, with owner nil, an OFD lock of f on [start, end].
// With wait it blocks until no other owner's lock conflicts (F_SETLKW),
// failing with EDEADLK if POSIX owners would wait for one another in a
// cycle and with EINTR when intr fires; without, a conflict is EAGAIN.
func (f *OpenFile) SetLock(owner *FDTable, pid int32, typ int16, start, end int64, wait bool, intr <-chan struct{}) error {
	if err := f.lockable(typ); err != nil {
		return err
	}
	var who any = owner
	if owner == nil {
		who, pid = f, -1
	}
	for {
		lockMu.Lock()
		il := locksOf(f.inode, typ != linux.F_UNLCK)
		if il == nil {
			lockMu.Unlock()
			return nil // unlocking where nothing is held
		}
		c := il.conflictLocked(who, start, end, typ == linux.F_WRLCK)
		if typ == linux.F_UNLCK || c == nil {
			if il.setLocked(who, pid, start, end, typ) {
				il.wakeLocked()
			}
			dropIfIdleLocked(f.inode, il)
			lockMu.Unlock()
			return nil
		}
		if !wait {
			lockMu.Unlock()
			return linux.EAGAIN
		}
		posix := owner != nil
		if _, holderPOSIX := c.owner.(*FDTable); posix && holderPOSIX {
			if deadlockLocked(who, c.owner) {
				lockMu.Unlock()
				return linux.EDEADLK
			}
			waitsFor[who] = c.owner
		}
		ch := il.changed
		lockMu.Unlock()
		NoteWait(intr)
		var err error
		select {
		case <-ch:
		case <-intr:
			err = linux.EINTR
		}
		if posix {
			lockMu.Lock()
			delete(waitsFor, who)
			lockMu.Unlock()
		}
		if err != nil {
			return err
		}
	}
}

// GetLock reports the first lock of another owner that would keep the
// caller from taking typ on [start, end] (F_GETLK; owner nil: F_OFD_GETLK),
// or a Lock of type F_UNLCK when there is none.
func (f *OpenFile) GetLock(owner *FDTable, typ int16, start, end int64) (Lock, error) {
	if f.IsPath() {
		return Lock{}, linux.EBADF
	}
	if typ != linux.F_RDLCK && typ != linux.F_WRLCK {
		return Lock{}, linux.EINVAL
	}
	var who any = owner
	if owner == nil {
		who = f
	}
	lockMu.Lock()
	defer lockMu.Unlock()
	il := locksOf(f.inode, false)
	if il == nil {
		return Lock{Type: linux.F_UNLCK}, nil
	}
	c := il.conflictLocked(who, start, end, typ == linux.F_WRLCK)
	if c == nil {
		return Lock{Type: linux.F_UNLCK}, nil
	}
	l := Lock{Type: linux.F_RDLCK, Start: c.start, End: c.end, PID: c.pid}
	if c.write {
		l.Type = linux.F_WRLCK
	}
	return l, nil
}

// releaseLocks drops every lock owner holds on ino: a process's POSIX
// locks when it closes any descriptor of the file, an open file
// description's (OFD and flock locks) when its last reference goes.
func releaseLocks(ino Inode, owner any) {
	if lockCount.Load() == 0 {
		return
	}
	lockMu.Lock()
	defer lockMu.Unlock()
	il := locksOf(ino, false)
	if il == nil {
		return
	}
	freed := il.setLocked(owner, 0, 0, MaxOffset, linux.F_UNLCK)
	if f, ok := owner.(*OpenFile); ok {
		if il.flockDropLocked(f) {
			freed = true
		}
		if il.dropLeaseLocked(f) {
			freed = true
		}
	}
	if freed {
		il.wakeLocked()
	}
	dropIfIdleLocked(ino, il)
}
