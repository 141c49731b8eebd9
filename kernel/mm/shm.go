package mm

import (
	"runtime"
	"sync"
)

// Shm is anonymous shared memory (mmap MAP_SHARED|MAP_ANONYMOUS): its
// pages belong to the object, not to the address spaces mapping it, so a
// fork child and its parent see the same memory, including pages first
// touched after the fork. The frames go back when no mapping refers to the
// object any more (the object is then unreachable and its finalizer runs).
type Shm struct {
	phys   Phys
	mu     sync.Mutex
	frames map[uintptr]uintptr // page index -> frame
}

// NewShm makes an empty shared memory object.
func NewShm(p Phys) *Shm {
	o := &Shm{phys: p, frames: map[uintptr]uintptr{}}
	runtime.SetFinalizer(o, (*Shm).release)
	return o
}

// frame returns the frame of page idx, allocating a zeroed one first.
func (o *Shm) frame(idx uintptr) (uintptr, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if f, ok := o.frames[idx]; ok {
		return f, nil
	}
	f := o.phys.Alloc()
	if f == 0 {
		return 0, ErrNoMem
	}
	o.frames[idx] = f
	return f, nil
}

func (o *Shm) release() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for idx, f := range o.frames {
		o.phys.Free(f)
		delete(o.frames, idx)
	}
}

// FutexKey names the futex word at va as every process sees it: memory
// of a shared object is keyed by the object and offset (so processes
// sharing it meet), other memory by this space and the address.
func (s *Space) FutexKey(va uintptr) (obj any, off uintptr, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.find(va)
	if i < 0 {
		return nil, 0, ErrFault
	}
	if v := s.vmas[i]; v.Shm != nil {
		return v.Shm, v.Off + va - v.Start, nil
	}
	return s, va, nil
}
