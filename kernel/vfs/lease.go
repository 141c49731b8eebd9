package vfs

// Leases (fcntl F_SETLEASE, F_GETLEASE): an open file description of a
// regular file asks to be told before anyone else opens the file in a
// way that conflicts: a read lease conflicts with an open for writing, a
// write lease with any open. The opener (or truncate) "breaks" the lease:
// the holder's owner is signalled (SIGIO, or the F_SETSIG signal with
// si_code POLL_MSG and si_fd the descriptor the lease was taken through),
// and the opener waits until the holder removes or downgrades the lease,
// or until the lease-break time (/proc/sys/fs/lease-break-time, 45 s)
// has passed, when the kernel does it for the holder. An opener with
// O_NONBLOCK fails with EWOULDBLOCK instead, after the signal went.
//
// Leases live beside the record and flock locks of the inode, under the
// same mutex, and go with the open file description's last reference.
// A lease's end (F_UNLCK, or the break time running out) also clears the
// file's owner and F_SETSIG signal, as on Linux.

import (
	"sync/atomic"
	"time"

	"shortbread/kernel/abi/linux"
)

type lease struct {
	owner    *OpenFile
	write    bool
	fd       int32     // si_fd of the break notice
	breaking bool      // a break is pending: the holder must downgrade or unlock
	unlock   bool      // the pending break asks for F_UNLCK (else F_RDLCK)
	deadline time.Time // when the kernel breaks the lease itself
}

// target returns what F_GETLEASE reports: the type the lease is being
// broken to while a break is pending.
func (l *lease) target() int16 {
	switch {
	case l.breaking && l.unlock:
		return linux.F_UNLCK
	case l.breaking || !l.write:
		return linux.F_RDLCK
	}
	return linux.F_WRLCK
}

// leaseBreakSeconds is /proc/sys/fs/lease-break-time.
var leaseBreakSeconds atomic.Int64

func init() { leaseBreakSeconds.Store(45) }

// LeaseBreakTime returns /proc/sys/fs/lease-break-time, in seconds.
func LeaseBreakTime() int64 { return leaseBreakSeconds.Load() }

// SetLeaseBreakTime sets /proc/sys/fs/lease-break-time (negative: 0).
func SetLeaseBreakTime(s int64) { leaseBreakSeconds.Store(max(s, 0)) }

// leaseFor returns f's lease on il, or nil.
func (il *inodeLocks) leaseFor(f *OpenFile) *lease {
	for i := range il.leases {
		if il.leases[i].owner == f {
			return &il.leases[i]
		}
	}
	return nil
}

func (il *inodeLocks) dropLeaseLocked(f *OpenFile) bool {
	for i := range il.leases {
		if il.leases[i].owner == f {
			il.leases = append(il.leases[:i], il.leases[i+1:]...)
			lockCount.Add(-1)
			return true
		}
	}
	return false
}

// expireLeasesLocked carries out the breaks whose time is up, as the
// holder should have, and reports whether any was.
func (il *inodeLocks) expireLeasesLocked(now time.Time) bool {
	changed := false
	out := il.leases[:0]
	for _, l := range il.leases {
		if l.breaking && !now.Before(l.deadline) {
			changed = true
			if l.unlock {
				lockCount.Add(-1)
				l.owner.clearOwner()
				continue
			}
			l.write, l.breaking = false, false
		}
		out = append(out, l)
	}
	clear(il.leases[len(out):])
	il.leases = out
	return changed
}

// SetLease applies F_SETLEASE to f, taken through descriptor fd by
// caller c (process pid): typ linux.F_RDLCK, F_WRLCK or F_UNLCK. Only
// the file's owner (or root) may, only on a regular file; a read lease
// needs the file open for writing nowhere, a write lease needs no other
// open of it at all and no other lease (EAGAIN).
func (f *OpenFile) SetLease(c *Cred, pid int32, fd int, typ int16) error {
	a := f.inode.Attr()
	if c.EUID != a.UID && !c.Superuser() {
		return linux.EACCES
	}
	if f.dentry == nil || f.dentry.mode != linux.S_IFREG {
		return linux.EINVAL
	}
	if typ != linux.F_RDLCK && typ != linux.F_WRLCK && typ != linux.F_UNLCK {
		return linux.EINVAL
	}
	lockMu.Lock()
	defer lockMu.Unlock()
	il := locksOf(f.inode, typ != linux.F_UNLCK)
	if typ == linux.F_UNLCK {
		if il == nil || !il.dropLeaseLocked(f) {
			return linux.EAGAIN
		}
		f.clearOwner() // as Linux does: the next lease starts afresh
		il.wakeLocked()
		dropIfIdleLocked(f.inode, il)
		return nil
	}
	defer dropIfIdleLocked(f.inode, il)
	if err := f.leaseOpensCheck(typ); err != nil {
		return err
	}
	for _, l := range il.leases {
		if l.owner == f {
			continue
		}
		if typ == linux.F_WRLCK || l.breaking && l.unlock {
			return linux.EAGAIN
		}
	}
	if l := il.leaseFor(f); l != nil {
		// A change of one's own lease; it ends a pending break when it
		// gives what the break asked for.
		l.write, l.fd = typ == linux.F_WRLCK, int32(fd)
		if !l.unlock {
			l.breaking = false
		}
		il.wakeLocked()
		return nil
	}
	il.leases = append(il.leases, lease{owner: f, write: typ == linux.F_WRLCK, fd: int32(fd)})
	lockCount.Add(1)
	f.setOwnerIfNone(SigOwner{Kind: linux.F_OWNER_PID, ID: pid, UID: c.UID, EUID: c.EUID})
	return nil
}

// leaseOpensCheck checks the other opens of the file against a new
// lease (check_conflicting_open): none for writing for a read lease,
// none but f itself for a write lease.
func (f *OpenFile) leaseOpensCheck(typ int16) error {
	r, w := openCounts(f.inode)
	if typ == linux.F_RDLCK {
		if w > 0 {
			return linux.EAGAIN
		}
		return nil
	}
	selfR, selfW := 0, 0
	if f.writer {
		selfW = 1
	} else if f.reader {
		selfR = 1
	}
	if r != selfR || w != selfW {
		return linux.EAGAIN
	}
	return nil
}

// Lease returns F_GETLEASE's answer for f: the type of its lease (what a
// pending break will leave), or F_UNLCK.
func (f *OpenFile) Lease() int16 {
	lockMu.Lock()
	defer lockMu.Unlock()
	il := locksOf(f.inode, false)
	if il == nil {
		return linux.F_UNLCK
	}
	if il.expireLeasesLocked(time.Now()) {
		il.wakeLocked()
	}
	defer dropIfIdleLocked(f.inode, il)
	if l := il.leaseFor(f); l != nil {
		return l.target()
	}
	return linux.F_UNLCK
}

// conflicts reports whether l stands in the way of an opener that will
// write (write) or only read: any lease keeps a writer out, a write lease
// a reader, until the holder or the break time removes or downgrades it.
func (l *lease) conflicts(write bool) bool { return write || l.write }

// breakLease breaks the leases on ino that conflict with an open for
// writing (write) or reading, and waits for them to go (see the top of
// this file); c's Intr interrupts the wait (EINTR).
func breakLease(ino Inode, write, nonblock bool, c *Ctx) error {
	if lockCount.Load() == 0 {
		return nil
	}
	lockMu.Lock()
	il := locksOf(ino, false)
	if il == nil || len(il.leases) == 0 {
		lockMu.Unlock()
		return nil
	}
	deadline := time.Now().Add(time.Duration(LeaseBreakTime()) * time.Second)
	type notice struct {
		f  *OpenFile
		fd int32
	}
	var notices []notice
	for i := range il.leases {
		l := &il.leases[i]
		switch {
		case write && !(l.breaking && l.unlock):
			l.breaking, l.unlock, l.deadline = true, true, deadline
		case !write && l.write && !l.breaking:
			l.breaking, l.deadline = true, deadline
		default:
			continue
		}
		notices = append(notices, notice{l.owner, l.fd})
	}
	lockMu.Unlock()
	for _, n := range notices {
		n.f.signalOwner(linux.POLL_MSG, n.fd)
	}
	slept := false
	defer func() {
		if slept {
			c.Sleeper.SleepEnd()
		}
	}()
	for {
		lockMu.Lock()
		il := locksOf(ino, false)
		if il == nil {
			lockMu.Unlock()
			return nil
		}
		now := time.Now()
		if il.expireLeasesLocked(now) {
			il.wakeLocked()
		}
		var first time.Time
		for i := range il.leases {
			l := &il.leases[i]
			if l.conflicts(write) && (first.IsZero() || l.deadline.Before(first)) {
				first = l.deadline
			}
		}
		if first.IsZero() {
			dropIfIdleLocked(ino, il)
			lockMu.Unlock()
			return nil
		}
		if nonblock {
			lockMu.Unlock()
			return linux.EAGAIN
		}
		ch := il.changed
		lockMu.Unlock()
		if !slept && c != nil && c.Sleeper != nil {
			c.Sleeper.SleepBegin()
			slept = true
		}
		var intr <-chan struct{}
		if c != nil {
			intr = c.Intr
		}
		timer := time.NewTimer(first.Sub(now))
		NoteWait(intr)
		select {
		case <-ch:
		case <-timer.C:
		case <-intr:
			timer.Stop()
			return linux.EINTR
		}
		timer.Stop()
	}
}
