package socket

import (
	"sync"
	"sync/atomic"
)

// Registry is the set of a family's open sockets, which its /proc/net
// listing walks. The zero Registry is empty and ready.
type Registry[T comparable] struct {
	mu sync.Mutex
	m  map[T]struct{} // protected by mu
}

// Add records an open socket.
func (r *Registry[T]) Add(s T) {
	r.mu.Lock()
	if r.m == nil {
		r.m = map[T]struct{}{}
	}
	r.m[s] = struct{}{}
	r.mu.Unlock()
}

// Remove forgets a released socket.
func (r *Registry[T]) Remove(s T) {
	r.mu.Lock()
	delete(r.m, s)
	r.mu.Unlock()
}

// All returns the open sockets, in no order.
func (r *Registry[T]) All() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]T, 0, len(r.m))
	for s := range r.m {
		out = append(out, s)
	}
	return out
}

// FileIno is the inode number of a socket's file, which NewFile sets through
// SetIno and the /proc/net listings show; a socket type embeds it.
type FileIno struct{ v atomic.Uint64 }

// SetIno records the number fstat reports for the socket's file.
func (i *FileIno) SetIno(n uint64) { i.v.Store(n) }

// Ino returns the recorded inode number (0 before NewFile).
func (i *FileIno) Ino() uint64 { return i.v.Load() }
