package timer

// timerfd(2): an interval timer read through a file. A read returns (as
// 8 bytes) how many periods expired since the last read or setting, and
// blocks while none has; poll and epoll see it readable then.

import (
	"encoding/binary"
	"sync"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// FD is the File behind a timerfd.
type FD struct {
	setMu sync.Mutex // serializes settings
	clock int32      // the clock absolute settings are on
	tm    *Timer
	mu    sync.Mutex
	n     uint64 // expirations not yet read; protected by mu
	// cancel: armed with TFD_TIMER_CANCEL_ON_SET; canceled: the wall
	// clock was set since, and the next read fails with ECANCELED.
	cancel, canceled bool // protected by mu
	q                vfs.Queue
}

// NewFD returns an open timerfd on clock (a Linux clock id, recorded for
// the caller), disarmed, with O_NONBLOCK if asked.
func NewFD(nonblock bool, clock int32) *vfs.OpenFile {
	fd := &FD{clock: clock}
	fd.tm = New(func(n uint64) {
		fd.mu.Lock()
		fd.n += n
		fd.mu.Unlock()
		fd.q.Notify()
	})
	fd.tm.SetClockSetHook(func() {
		fd.mu.Lock()
		if fd.cancel {
			fd.canceled = true
		}
		fd.mu.Unlock()
		fd.q.Notify()
	})
	flags := uint32(linux.O_RDWR)
	if nonblock {
		flags |= linux.O_NONBLOCK
	}
	return vfs.NewFile(vfs.NewAnonInode(0o600, vfs.Owner{}), fd, flags)
}

// FDOf returns the timerfd behind f, or false (EINVAL for the timerfd
// calls) when f is something else.
func FDOf(f *vfs.OpenFile) (*FD, bool) {
	fd, ok := f.Impl().(*FD)
	return fd, ok
}

// Set arms the timer (value 0: disarms it) and forgets the expirations
// not read yet, as timerfd_settime does; it returns the old setting.
func (fd *FD) Set(value, interval time.Duration) (oldLeft, oldInterval time.Duration) {
	return fd.set(func() { fd.tm.Set(value, interval) }, false)
}

// SetWall arms the timer for a time of day (TFD_TIMER_ABSTIME on the
// wall clock), following changes of the clock; with cancelOnSet
// (TFD_TIMER_CANCEL_ON_SET) such a change makes the next read fail with
// ECANCELED. It returns the old setting.
func (fd *FD) SetWall(at time.Time, interval time.Duration, cancelOnSet bool) (oldLeft, oldInterval time.Duration) {
	return fd.set(func() { fd.tm.SetWall(at, interval) }, cancelOnSet)
}

func (fd *FD) set(arm func(), cancelOnSet bool) (oldLeft, oldInterval time.Duration) {
	fd.setMu.Lock()
	defer fd.setMu.Unlock()
	// Disarming first means no expiry of the old setting is counted
	// after this (the timer reports under its lock), so the count can be
	// cleared before the new setting can add to it.
	oldLeft, oldInterval = fd.tm.Set(0, 0)
	fd.mu.Lock()
	fd.n, fd.cancel, fd.canceled = 0, cancelOnSet, false
	fd.mu.Unlock()
	arm()
	return
}

// Clock returns the clock id the timerfd was made on.
func (fd *FD) Clock() int32 { return fd.clock }

// Get returns the time to the next expiry (0: disarmed) and the interval.
func (fd *FD) Get() (left, interval time.Duration) {
	fd.tm.Sync()
	return fd.tm.Get()
}

// Read returns the expiration count as a native 64-bit integer and
// resets it; a buffer under 8 bytes is EINVAL.
func (fd *FD) Read(b vfs.Blocking, p []byte, _ int64) (int, error) {
	if len(p) < 8 {
		return 0, linux.EINVAL
	}
	var n uint64
	canceled := false
	err := vfs.WaitFor(&fd.q, b, func() bool {
		fd.tm.Sync()
		fd.mu.Lock()
		defer fd.mu.Unlock()
		if fd.canceled {
			fd.canceled, fd.n, canceled = false, 0, true
			return true
		}
		n, fd.n = fd.n, 0
		return n > 0
	})
	if err != nil {
		return 0, err
	}
	if canceled {
		return 0, linux.ECANCELED
	}
	binary.LittleEndian.PutUint64(p, n)
	return 8, nil
}

// Write is not supported (EINVAL, as Linux without TFD_IOC_SET_TICKS).
func (fd *FD) Write(vfs.Blocking, []byte, int64) (int, error) { return 0, linux.EINVAL }

// Release stops the timer: nothing of it outlives the file.
func (fd *FD) Release() { fd.tm.Stop() }

// Readiness is POLLIN while expirations wait to be read.
func (fd *FD) Readiness() uint32 {
	fd.tm.Sync()
	fd.mu.Lock()
	defer fd.mu.Unlock()
	if fd.n > 0 || fd.canceled {
		return linux.POLLIN | linux.POLLRDNORM
	}
	return 0
}

// Watch is notified at every expiry.
func (fd *FD) Watch(wake vfs.Wake) func() { return fd.q.Watch(wake) }
