package virtio

// PageSize is the unit of DMA memory.
const PageSize = 4096

// Page is a page of memory a device can reach: Phys is its bus address,
// Mem the kernel's view of the same bytes.
type Page struct {
	Phys uint64
	Mem  []byte // PageSize bytes
}

// DMA hands out zeroed pages for rings and request buffers (physical
// frames in the kernel, outside the Go heap; simulated memory in tests).
type DMA interface {
	Alloc() (Page, error)
	Free(Page)
}
