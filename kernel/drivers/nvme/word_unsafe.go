package nvme

import (
	"sync/atomic"
	"unsafe"
)

// loadWord reads the 32-bit word at off in DMA memory the controller
// writes, as one access that later reads cannot move ahead of: a
// completion entry's status word (with the phase bit) is read before the
// rest of the entry.
func loadWord(b []byte, off int) uint32 {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[off : off+4][0])))
}
