// Package iobuf lends the buffers read(2) and write(2) move data through,
// between user memory and a file, from pools by size (powers of two from
// 512 bytes to Max) instead of allocating one per call: that allocation
// was most of what pipe, socket and file I/O allocated (t_allocs), and
// every allocation is garbage-collection work later. A buffer comes back
// with Put once the call is done with it; a File never keeps the buffer
// it is given (every Write copies what it queues).
package iobuf

import (
	"math/bits"
	"sync"
)

const (
	minShift = 9  // 512 bytes
	maxShift = 20 // Max

	// Max is the largest buffer: the most one read or write moves.
	Max = 1 << maxShift
)

var pools [maxShift - minShift + 1]sync.Pool

// class returns the pool for buffers of n bytes (n <= Max).
func class(n int) int {
	if n <= 1<<minShift {
		return 0
	}
	return bits.Len(uint(n-1)) - minShift
}

// Get returns a buffer of n bytes (0 <= n <= Max) whose contents are
// not zeroed: it may hold another call's data, so a caller that hands
// out what a File put there clears it first.
func Get(n int) *[]byte {
	c := class(n)
	if b, ok := pools[c].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<(c+minShift))
	return &b
}

// Put gives a buffer from Get back.
func Put(b *[]byte) {
	pools[class(cap(*b))].Put(b)
}
