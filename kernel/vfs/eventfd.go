package vfs

import (
	"encoding/binary"
	"math"
	"sync"

	"shortbread/kernel/abi/linux"
)

// eventFD is the File of an eventfd (fs/eventfd.c): a 64-bit counter
// that writes add to and reads take, all of it or (EFD_SEMAPHORE) one at
// a time. It saturates at 2^64-2: a write that would pass that waits.
type eventFD struct {
	mu        sync.Mutex
	count     uint64 // protected by mu
	semaphore bool
	q         Queue
}

// eventMax is the largest value the counter holds (ULLONG_MAX - 1).
const eventMax = math.MaxUint64 - 1

// NewEventFD returns an eventfd with the counter at initval, as
// eventfd2(2) makes it. flags may hold EFD_SEMAPHORE, EFD_NONBLOCK and
// EFD_CLOEXEC (for the caller to apply to the descriptor).
func NewEventFD(initval uint64, flags int, owner Owner) (*OpenFile, error) {
	if flags&^(linux.EFD_SEMAPHORE|linux.EFD_NONBLOCK|linux.EFD_CLOEXEC) != 0 {
		return nil, linux.EINVAL
	}
	e := &eventFD{count: initval, semaphore: flags&linux.EFD_SEMAPHORE != 0}
	return NewFile(NewAnonInode(0o600, owner), e, linux.O_RDWR|uint32(flags)&linux.O_NONBLOCK), nil
}

func (e *eventFD) Read(b Blocking, p []byte, _ int64) (int, error) {
	if len(p) < 8 {
		return 0, linux.EINVAL
	}
	var v uint64
	err := WaitFor(&e.q, b, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.count == 0 {
			return false
		}
		v = e.count
		if e.semaphore {
			v = 1
		}
		e.count -= v
		return true
	})
	if err != nil {
		return 0, err
	}
	e.q.Notify()
	binary.LittleEndian.PutUint64(p, v)
	return 8, nil
}

func (e *eventFD) Write(b Blocking, p []byte, _ int64) (int, error) {
	if len(p) < 8 {
		return 0, linux.EINVAL
	}
	v := binary.LittleEndian.Uint64(p)
	if v == math.MaxUint64 {
		return 0, linux.EINVAL
	}
	err := WaitFor(&e.q, b, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		if eventMax-e.count < v {
			return false
		}
		e.count += v
		return true
	})
	if err != nil {
		return 0, err
	}
	e.q.Notify()
	return 8, nil
}

func (e *eventFD) Release() {}

// Readiness follows eventfd_poll.
func (e *eventFD) Readiness() uint32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	var m uint32
	if e.count > 0 {
		m |= linux.POLLIN | linux.POLLRDNORM
	}
	if e.count == math.MaxUint64 {
		m |= linux.POLLERR
	}
	if e.count < eventMax {
		m |= linux.POLLOUT | linux.POLLWRNORM
	}
	return m
}

func (e *eventFD) Watch(wake Wake) func() { return e.q.Watch(wake) }

// WatchQueues names the queue Watch registers on (QueueWatcher).
func (e *eventFD) WatchQueues() (*Queue, *Queue) { return &e.q, nil }
