package nvme

// PageSize is the memory page size the driver programs (CC.MPS = 0) and
// the unit of DMA memory: queues and data buffers are single pages.
const PageSize = 4096

// Page is a page of memory the controller can reach: Phys is its bus
// address, Mem the kernel's view of the same bytes.
type Page struct {
	Phys uint64
	Mem  []byte // PageSize bytes
}

// DMA hands out zeroed pages for queues and request buffers (physical
// frames in the kernel, outside the Go heap; simulated memory in tests).
type DMA interface {
	Alloc() (Page, error)
	Free(Page)
}
