// Package dmatest is simulated guest memory for the device models that
// drivers are tested against under go test (virtiotest, nvmetest): DMA
// pages handed to the driver at bus addresses from 1 MiB, and the
// device's view of them, checked to lie in memory the driver allocated.
package dmatest

import (
	"errors"
	"fmt"
	"sync"
)

// Mem is the simulated memory.
type Mem struct {
	mu       sync.Mutex
	pages    map[uint64][]byte // protected by mu
	next     uint64            // protected by mu
	pageSize uint64
	Limit    int // pages that may be allocated (0: no limit)
	InUse    int // pages allocated now; protected by mu
}

// New returns empty memory of pages of pageSize bytes (a power of two).
func New(pageSize uint64) *Mem {
	return &Mem{pages: map[uint64][]byte{}, next: 1 << 20, pageSize: pageSize}
}

// AllocPage gives a zeroed page and its bus address, or an error past
// Limit.
func (m *Mem) AllocPage() (phys uint64, b []byte, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Limit > 0 && m.InUse >= m.Limit {
		return 0, nil, errors.New("dmatest: out of DMA memory")
	}
	b = make([]byte, m.pageSize)
	phys = m.next
	m.pages[phys] = b
	m.next += m.pageSize
	m.InUse++
	return phys, b, nil
}

// FreePage gives a page back; freeing one never allocated panics (a
// driver bug the tests must see).
func (m *Mem) FreePage(phys uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pages[phys] == nil {
		panic(fmt.Sprintf("dmatest: free of unknown page %#x", phys))
	}
	delete(m.pages, phys)
	m.InUse--
}

// Slice is the memory at [pa, pa+n), which must lie in one allocated
// page: the device's DMA anywhere else is an error.
func (m *Mem) Slice(pa uint64, n int) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	base := pa &^ (m.pageSize - 1)
	b := m.pages[base]
	if b == nil || n < 0 || pa-base+uint64(n) > m.pageSize {
		return nil, fmt.Errorf("dmatest: DMA to %#x+%d outside allocated memory", pa, n)
	}
	return b[pa-base : pa-base+uint64(n)], nil
}
