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

// storeWord writes the 32-bit word at off in DMA memory the controller
// reads, as one access and a full barrier (XCHG on amd64): a shadow
// doorbell is stored before the event index is read.
func storeWord(b []byte, off int, v uint32) {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b[off : off+4][0])), v)
}
