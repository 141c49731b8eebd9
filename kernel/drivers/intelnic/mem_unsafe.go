package intelnic

import (
	"sync/atomic"
	"unsafe"
)

// Descriptor words the card writes behind the compiler's back are read
// with atomic loads: Go has no volatile, and a plain load in a loop may
// be kept in a register. On amd64 an atomic load is an ordinary MOV
// that the compiler must not move or merge, and later loads are not
// hoisted above it, so the fields read after the status are at least as
// new as the status. off must be 4-byte aligned (descriptors are 16).

// Load32 reads the 32-bit descriptor word at b[off:] as the card left it.
func Load32(b []byte, off int) uint32 {
	return atomic.LoadUint32(word(b, off))
}

// Store32 writes the 32-bit descriptor word at b[off:] for the card.
func Store32(b []byte, off int, v uint32) {
	atomic.StoreUint32(word(b, off), v)
}

// word points at b[off:off+4], bounds-checked by the slicing.
func word(b []byte, off int) *uint32 {
	return (*uint32)(unsafe.Pointer(&b[off : off+4 : off+4][0]))
}
