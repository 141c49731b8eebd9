package nvmetest

import (
	"errors"
	"fmt"
	"sync"

	"shortbread/kernel/drivers/nvme"
)

// Mem is simulated guest memory: DMA pages at bus addresses from 1 MiB.
type Mem struct {
	mu    sync.Mutex
	pages map[uint64][]byte
	next  uint64
	Limit int // pages that may be allocated (0: no limit)
	InUse int
}

func NewMem() *Mem { return &Mem{pages: map[uint64][]byte{}, next: 1 << 20} }

func (m *Mem) Alloc() (nvme.Page, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Limit > 0 && m.InUse >= m.Limit {
		return nvme.Page{}, errors.New("nvmetest: out of DMA memory")
	}
	b := make([]byte, nvme.PageSize)
	p := nvme.Page{Phys: m.next, Mem: b}
	m.pages[m.next] = b
	m.next += nvme.PageSize
	m.InUse++
	return p, nil
}

func (m *Mem) Free(p nvme.Page) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pages[p.Phys] == nil {
		panic(fmt.Sprintf("nvmetest: free of unknown page %#x", p.Phys))
	}
	delete(m.pages, p.Phys)
	m.InUse--
}

// Slice is the guest memory at [pa, pa+n), which must lie in one page.
func (m *Mem) Slice(pa uint64, n int) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	base := pa &^ (nvme.PageSize - 1)
	b := m.pages[base]
	if b == nil || pa-base+uint64(n) > nvme.PageSize {
		return nil, fmt.Errorf("DMA to %#x+%d outside allocated memory", pa, n)
	}
	return b[pa-base : pa-base+uint64(n)], nil
}
