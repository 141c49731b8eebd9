package vfs

import (
	"sync"
	"sync/atomic"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/wallclock"
)

// anonIno numbers the inodes of files with no path.
var anonIno atomic.Uint64

// anonDev is the device fstat reports for files with no path, 0:15
// (Linux's pipefs and anon_inodefs are unnamed devices with major 0).
const anonDev = 15

// AnonInode is the inode behind a file with no path (a pipe, an eventfd,
// an epoll instance): it answers fstat and keeps what fchmod, fchown and
// futimens set, in memory.
type AnonInode struct {
	mu   sync.Mutex
	attr Attr // protected by mu
}

// NewAnonInode returns an inode of the given mode (type and permission
// bits; Linux gives pipes S_IFIFO|0600 and eventfds and epoll instances a
// bare 0600) owned by owner, with a fresh inode number.
func NewAnonInode(mode uint32, owner Owner) *AnonInode {
	now := timespec(wallclock.Now())
	return &AnonInode{attr: Attr{
		Dev: anonDev, Ino: anonIno.Add(1), Mode: mode, Nlink: 1, UID: owner.UID, GID: owner.GID,
		Blksize: 4096, Atime: now, Mtime: now, Ctime: now,
	}}
}

func timespec(t time.Time) linux.Timespec {
	return linux.Timespec{Sec: t.Unix(), Nsec: int64(t.Nanosecond())}
}

// Attr returns the attributes.
func (a *AnonInode) Attr() Attr {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.attr
}

// SetAttr changes the mode, owner and times; a size change fails with EINVAL.
func (a *AnonInode) SetAttr(s *SetAttr) error {
	if s.Mask&SetSize != 0 {
		return linux.EINVAL
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := timespec(wallclock.Now())
	if s.Mask&SetMode != 0 {
		a.attr.Mode = a.attr.Mode&linux.S_IFMT | s.Mode&0o7777
	}
	if s.Mask&SetUID != 0 {
		a.attr.UID = s.UID
	}
	if s.Mask&SetGID != 0 {
		a.attr.GID = s.GID
	}
	if s.Mask&SetAtime != 0 {
		a.attr.Atime = resolveNow(s.Atime, now)
	}
	if s.Mask&SetMtime != 0 {
		a.attr.Mtime = resolveNow(s.Mtime, now)
	}
	a.attr.Ctime = now
	return nil
}

// resolveNow returns now for a time of UTIME_NOW, else t.
func resolveNow(t, now linux.Timespec) linux.Timespec {
	if t.Nsec == linux.UTIME_NOW {
		return now
	}
	return t
}
