// Package intelnictest holds what the e1000-family drivers' host tests
// share: dmatest's simulated memory as the rings' DMA, and the checks a
// receive ring must pass whatever the card writes back.
package intelnictest

import (
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"shortbread/kernel/drivers/dmatest"
	"shortbread/kernel/drivers/intelnic"
)

// Memory is dmatest's simulated DMA memory as the drivers' DMA.
type Memory struct{ *dmatest.Mem }

// NewMemory is empty simulated memory of intelnic pages.
func NewMemory() Memory { return Memory{dmatest.New(intelnic.PageSize)} }

// Alloc gives a zeroed page.
func (m Memory) Alloc() (intelnic.Page, error) {
	phys, b, err := m.AllocPage()
	return intelnic.Page{Phys: phys, Mem: b}, err
}

// Free gives a page back.
func (m Memory) Free(p intelnic.Page) { m.FreePage(p.Phys) }

// Harvest lays ring (a card's write-back, any bytes) over a 16-entry
// receive ring of format f whose buffers hold only fill, harvests it
// and checks that harvest took at most the descriptors the card owns,
// delivered only frames from a header's length to MaxFrame whose bytes
// came from the buffers, counted every frame it delivered, and re-armed
// what it took with the driver's own buffer addresses and cleared
// status and length words.
func Harvest(t *testing.T, f *intelnic.Format, ring []byte, fill byte) {
	const n = 16
	m := NewMemory()
	rg, err := intelnic.NewRing(m, f, n)
	if err != nil {
		t.Fatal(err)
	}
	r := &intelnic.RxRing{Ring: rg}
	r.Init()
	for _, b := range r.Bufs {
		for i := range b.Mem {
			b.Mem[i] = fill
		}
	}
	copy(r.Desc.Mem, ring)
	var c intelnic.RxCounts
	delivered := 0
	taken, tail := r.Harvest(func(fr []byte, _ bool) {
		delivered++
		if len(fr) < 14 || len(fr) > intelnic.MaxFrame {
			t.Fatalf("delivered a %d-byte frame", len(fr))
		}
		for _, b := range fr {
			if b != fill {
				t.Fatalf("frame byte %#x not from a buffer", b)
			}
		}
	}, &c)
	if taken > n-1 || tail != (r.Next+n-1)%n || delivered != c.Frames {
		t.Fatalf("taken %d tail %d next %d delivered %d frames %d", taken, tail, r.Next, delivered, c.Frames)
	}
	for i := 0; i < taken; i++ {
		d := r.D(i)
		if binary.LittleEndian.Uint64(d) != r.Bufs[i].Phys ||
			intelnic.Load32(d, f.RxStatus) != 0 || intelnic.Load32(d, f.RxLen) != 0 {
			t.Fatalf("descriptor %d not re-armed", i)
		}
	}
	r.Free(m)
	if m.InUse != 0 {
		t.Fatalf("%d pages left allocated", m.InUse)
	}
}

// IRQ is a simulated card's interrupt vector or pin, as pci.IRQ.
type IRQ struct {
	c      chan struct{}
	mu     sync.Mutex
	closed bool
	count  atomic.Int64
}

// NewIRQ is an interrupt nothing has raised.
func NewIRQ() *IRQ { return &IRQ{c: make(chan struct{}, 1)} }

// Wait returns when the interrupt has been raised since the last Wait,
// or with an error once it is closed.
func (i *IRQ) Wait() error {
	if _, ok := <-i.c; !ok {
		return errors.New("closed")
	}
	return nil
}

// Close ends the interrupt; Wait fails from then on.
func (i *IRQ) Close() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if !i.closed {
		i.closed = true
		close(i.c)
	}
	return nil
}

// Raise interrupts (once, however often it is raised before a Wait)
// and counts the interrupt.
func (i *IRQ) Raise() {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.count.Add(1)
	if i.closed {
		return
	}
	select {
	case i.c <- struct{}{}:
	default:
	}
}

// Count is how many times the interrupt was raised.
func (i *IRQ) Count() int64 { return i.count.Load() }
