package mm

import (
	"runtime"
	"sync"
)

// Shm is memory whose pages belong to an object rather than to the
// address spaces mapping it: anonymous shared memory (mmap
// MAP_SHARED|MAP_ANONYMOUS), and a tmpfs file's data, which MAP_SHARED
// maps directly. A fork child and its parent see the same pages,
// including pages first touched after the fork; a file's readers and
// writers see what its mappings wrote. The frames go back when nothing
// refers to the object any more (its finalizer runs).
type Shm struct {
	phys   Phys
	mu     sync.Mutex
	frames map[uintptr]uintptr // page index -> frame
	// mapped is set once the object is mapped into an address space:
	// from then on frames cut off by Truncate may still be in page
	// tables, so they are kept (in detached) until the object dies.
	mapped   bool
	detached []uintptr
	// size, when set, is the object's size in bytes (a file's): mapped
	// pages wholly past it fault with ErrBus.
	size func() int64
}

// NewShm makes an empty shared memory object.
func NewShm(p Phys) *Shm {
	o := &Shm{phys: p, frames: map[uintptr]uintptr{}}
	runtime.SetFinalizer(o, (*Shm).release)
	return o
}

// SetSize gives the object a size for mappings to respect (a file's
// length); without one every page of a mapping is valid.
func (o *Shm) SetSize(size func() int64) { o.size = size }

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

// lookup returns the frame of page idx if the object has one.
func (o *Shm) lookup(idx uintptr) (uintptr, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f, ok := o.frames[idx]
	return f, ok
}

// Page returns page idx's memory; a missing page is allocated (zeroed)
// if alloc is set, else nil is returned for it (it reads as zeros).
func (o *Shm) Page(idx uintptr, alloc bool) (*[PageSize]byte, error) {
	if !alloc {
		o.mu.Lock()
		f, ok := o.frames[idx]
		o.mu.Unlock()
		if !ok {
			return nil, nil
		}
		return o.phys.Page(f), nil
	}
	f, err := o.frame(idx)
	if err != nil {
		return nil, err
	}
	return o.phys.Page(f), nil
}

// Pages reports how many pages hold memory.
func (o *Shm) Pages() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.frames)
}

// Truncate drops the pages from index idx on.
func (o *Shm) Truncate(idx uintptr) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, f := range o.frames {
		if i < idx {
			continue
		}
		delete(o.frames, i)
		if o.mapped {
			o.detached = append(o.detached, f)
		} else {
			o.phys.Free(f)
		}
	}
}

func (o *Shm) markMapped() {
	o.mu.Lock()
	o.mapped = true
	o.mu.Unlock()
}

func (o *Shm) release() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for idx, f := range o.frames {
		o.phys.Free(f)
		delete(o.frames, idx)
	}
	for _, f := range o.detached {
		o.phys.Free(f)
	}
	o.detached = nil
}

// FutexKey names the futex word at va as every process sees it: memory
// of a shared object is keyed by the object and offset (so processes
// sharing it meet), other memory by this space and the address.
func (s *Space) FutexKey(va uintptr) (obj any, off uintptr, err error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	i := s.find(va)
	if i < 0 {
		return nil, 0, ErrFault
	}
	if v := s.vmas[i]; v.Shm != nil && !v.Private {
		return v.Shm, v.Off + va - v.Start, nil
	}
	return s, va, nil
}

// HeapPhys is physical memory simulated with Go pages: for host tests,
// and for a tmpfs that no address space maps from.
type HeapPhys struct {
	mu    sync.Mutex
	pages map[uintptr]*[PageSize]byte
	next  uintptr
}

func (h *HeapPhys) Alloc() uintptr {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.pages == nil {
		h.pages = map[uintptr]*[PageSize]byte{}
		h.next = PageSize
	}
	pa := h.next
	h.next += PageSize
	h.pages[pa] = new([PageSize]byte)
	return pa
}

func (h *HeapPhys) Free(pa uintptr) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.pages, pa)
}

func (h *HeapPhys) Page(pa uintptr) *[PageSize]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pages[pa]
}
