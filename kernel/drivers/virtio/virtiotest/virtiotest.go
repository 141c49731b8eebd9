// Package virtiotest simulates a virtio 1.0 PCI device for host tests:
// configuration space with the vendor capabilities (pcitest), an MSI-X
// table, the common/notify/ISR/device structures with their side
// effects, guest memory for DMA, and a worker that consumes split
// virtqueues like a device would, handing each request to a Model.
package virtiotest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"shortbread/kernel/drivers/dmatest"
	"shortbread/kernel/drivers/pci"
	"shortbread/kernel/drivers/pci/pcitest"
	"shortbread/kernel/drivers/virtio"
)

// Mem is simulated guest memory (dmatest) handing out virtio.Pages.
type Mem struct{ *dmatest.Mem }

func NewMem() *Mem { return &Mem{dmatest.New(virtio.PageSize)} }

func (m *Mem) Alloc() (virtio.Page, error) {
	phys, b, err := m.AllocPage()
	if err != nil {
		return virtio.Page{}, err
	}
	return virtio.Page{Phys: phys, Mem: b}, nil
}

func (m *Mem) Free(p virtio.Page) { m.FreePage(p.Phys) }

// Slice is the guest memory at [pa, pa+n), which must lie in one page.
func (m *Mem) Slice(pa uint64, n uint32) ([]byte, error) { return m.Mem.Slice(pa, int(n)) }

// Buf is one descriptor of a request as the device sees it.
type Buf struct {
	Data  []byte
	Write bool // device-writable
}

// Model is the device-type behaviour.
type Model interface {
	Features() uint64 // device features besides VERSION_1
	Queues() int
	Config() []byte // device configuration structure
	// Handle serves one request and returns the bytes it wrote.
	Handle(queue int, bufs []Buf) uint32
}

// Holder is a Model that consumes a queue's buffers only when it has
// something to put in them (a network card's receive queue): Ready says
// whether Handle may take the next one; Poke retries later.
type Holder interface {
	Ready(queue int) bool
}

// Merger is a Holder that serves the requests of one queue (MergedQueue)
// several at a time, as one unit: a network card spreading a frame over
// mergeable receive buffers (virtio 1.0 §5.1.6.4). Merge sees the
// requests available through peek (nil past the last; the slices are
// the device's and reused), writes into the first k of them and returns
// the bytes written into each (k lengths, in order), or none to wait
// until more are available. The k used entries are published together,
// with one used index update.
type Merger interface {
	Holder
	MergedQueue() int
	Merge(peek func(i int) []Buf) []uint32
}

// Poke makes the device look at queue q again (a Holder became ready).
func (d *Device) Poke(q int) { d.wake() }

// wake makes the worker look at every queue; a wake-up already pending
// covers this one.
func (d *Device) wake() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// Device is a simulated virtio PCI device at 00:02.0.
type Device struct {
	Cfg   *pcitest.Config
	Mem   *Mem
	model Model
	table *pcitest.Mem // MSI-X table (BAR1)
	regs  *regs        // BAR4

	mu       sync.Mutex
	irqs     map[uint32]*IRQ
	nextData uint32
	kick     chan struct{}
	// Hold, when set, keeps completed requests from being reported (a
	// device that never answers); HoldQueues does for the queues whose
	// bits it has set (bit i: queue i), the others going on.
	Hold       atomic.Bool
	HoldQueues atomic.Uint32
	// MSILimit, when set, makes the platform give no more than that
	// many interrupt vectors (a platform short of vectors).
	MSILimit int
	// MSICPUs is the CPU each vector the platform gave is aimed at, in
	// the order given.
	MSICPUs []int
	// Corrupt, when set, may alter each used entry before it is
	// published (a device handing back bad values).
	Corrupt func(id, n *uint32, idx *uint16)
	Errors  []string // protocol violations by the driver, seen by the device
	// Raised counts the interrupts the device raised for each queue.
	Raised   [8]atomic.Int64
	Notifies atomic.Int64

	// scratch holds the descriptors of the requests being served (the
	// worker's alone), reused so that serving allocates nothing once
	// warm: tests count a driver's allocations with the device running.
	scratch [][]Buf
	one     [1]uint32
	pk      peekState
	peekFn  func(int) []Buf // d.peek, made once
}

// corrupt lets Corrupt change a used entry (its own variables, so that
// serve's stay on the stack).
func (d *Device) corrupt(id, n uint32, idx uint16) (uint32, uint32, uint16) {
	d.Corrupt(&id, &n, &idx)
	return id, n, idx
}

// peekState is what peek needs of the queue a Merger is serving.
type peekState struct {
	q     queue
	avail []byte
	n     int // requests available
	err   error
}

// peek is the i-th request available to a Merger (nil past the last,
// or once a chain was found broken, kept in pk.err).
func (d *Device) peek(i int) []Buf {
	p := &d.pk
	if i >= p.n || p.err != nil {
		return nil
	}
	head := binary.LittleEndian.Uint16(p.avail[4+2*int((p.q.lastAvail+uint16(i))%p.q.size):])
	bufs, err := d.chain(p.q, head, i)
	if err != nil {
		p.err = err
		return nil
	}
	return bufs
}

// BARs: 1 holds the MSI-X table, 4 (64-bit) the virtio structures.
const (
	bar1 = 0xfebd5000
	bar4 = 0xfe000000
)

// New makes a device with deviceID (0x1040 + type) served by model.
func New(deviceID uint16, model Model) *Device {
	d := &Device{Cfg: pcitest.New(), Mem: NewMem(), model: model, irqs: map[uint32]*IRQ{}, kick: make(chan struct{}, 1)}
	f := d.Cfg.Add(pci.Addr{Bus: 0, Dev: 2, Fn: 0}, virtio.Vendor, deviceID, 0x010000).Interrupt(1, 10).
		MemBAR(1, bar1, 4096, false, false).MemBAR(4, bar4, 16384, true, true)
	f.AddCap(pci.CapMSIX, pcitest.MSIXCap(model.Queues()+1, 1, 0, 0x800))
	f.AddCap(pci.CapVendor, pcitest.VirtioCap(1, 4, 0, 0x1000))
	f.AddCap(pci.CapVendor, pcitest.VirtioCap(3, 4, 0x1000, 0x1000))
	f.AddCap(pci.CapVendor, pcitest.VirtioCap(4, 4, 0x2000, 0x1000))
	f.AddCap(pci.CapVendor, pcitest.VirtioCap(2, 4, 0x3000, 0x1000, 4))
	d.table = &pcitest.Mem{B: make([]byte, 4096)}
	d.regs = newRegs(d)
	d.peekFn = d.peek
	go d.worker()
	return d
}

// Function is the device's configuration-space function.
func (d *Device) Function() *pcitest.Func { return d.Cfg.Funcs[pci.Addr{Bus: 0, Dev: 2, Fn: 0}] }

// IRQ is a simulated interrupt.
type IRQ struct {
	c      chan struct{}
	closed atomic.Bool
	Count  atomic.Int64
}

func (i *IRQ) Wait() error {
	if i.closed.Load() {
		return errors.New("closed")
	}
	<-i.c
	if i.closed.Load() {
		return errors.New("closed")
	}
	return nil
}

func (i *IRQ) Close() error {
	if !i.closed.Swap(true) {
		close(i.c)
	}
	return nil
}

func (i *IRQ) raise() {
	i.Count.Add(1)
	if i.closed.Load() {
		return
	}
	select {
	case i.c <- struct{}{}:
	default:
	}
}

// Platform is the pci.Platform the driver under test gets.
func (d *Device) Platform() pci.Platform { return platform{d} }

type platform struct{ d *Device }

func (p platform) Map(b pci.BAR) (pci.Region, error) {
	switch b.Addr {
	case bar1:
		return p.d.table, nil
	case bar4:
		return p.d.regs, nil
	}
	return nil, fmt.Errorf("virtiotest: no BAR at %#x", b.Addr)
}

func (p platform) AllocMSI(cpu int) (pci.IRQ, uint64, uint32, error) {
	p.d.mu.Lock()
	defer p.d.mu.Unlock()
	if p.d.MSILimit > 0 && len(p.d.MSICPUs) >= p.d.MSILimit {
		return nil, 0, 0, errors.New("virtiotest: out of vectors")
	}
	p.d.MSICPUs = append(p.d.MSICPUs, cpu)
	p.d.nextData++
	irq := &IRQ{c: make(chan struct{}, 1)}
	p.d.irqs[0x40+p.d.nextData] = irq
	return irq, 0xfee00000 | uint64(cpu)<<12, 0x40 + p.d.nextData, nil
}

func (p platform) INTx(*pci.Device) (pci.IRQ, error) { return nil, errors.New("virtiotest: no INTx") }

// interrupt raises MSI-X vector vec as the table says.
func (d *Device) interrupt(vec uint16) {
	if vec == virtio.NoVector || int(vec) > d.model.Queues() {
		return
	}
	e := d.table.B[16*int(vec):]
	if binary.LittleEndian.Uint32(e[12:])&1 != 0 {
		return // masked
	}
	data := binary.LittleEndian.Uint32(e[8:])
	d.mu.Lock()
	irq := d.irqs[data]
	d.mu.Unlock()
	if irq != nil {
		irq.raise()
	}
}

func (d *Device) errorf(format string, args ...any) {
	d.mu.Lock()
	d.Errors = append(d.Errors, fmt.Sprintf(format, args...))
	d.mu.Unlock()
}

// worker consumes the queues when the driver notifies (or a Holder
// became ready).
func (d *Device) worker() {
	for range d.kick {
		for q := 0; q < d.model.Queues(); q++ {
			d.serve(q)
		}
	}
}

// Release reports the requests completed while Hold was set.
func (d *Device) Release() {
	d.Hold.Store(false)
	d.wake()
}

// ReleaseQueues reports the requests completed while HoldQueues was set.
func (d *Device) ReleaseQueues() {
	d.HoldQueues.Store(0)
	d.wake()
}

func (d *Device) serve(qi int) {
	r := d.regs
	r.mu.Lock()
	q := r.queues[qi]
	r.mu.Unlock()
	if !q.enable || d.Hold.Load() || d.HoldQueues.Load()&(1<<qi) != 0 {
		return
	}
	avail, err := d.Mem.Slice(q.driver, 4+2*uint32(q.size))
	if err != nil {
		d.errorf("avail ring: %v", err)
		return
	}
	used, err := d.Mem.Slice(q.device, 4+8*uint32(q.size))
	if err != nil {
		d.errorf("used ring: %v", err)
		return
	}
	aw := (*uint32)(unsafe.Pointer(&avail[0]))
	uw := (*uint32)(unsafe.Pointer(&used[0]))
	m, merges := d.model.(Merger)
	merges = merges && m.MergedQueue() == qi
	served := false
	for {
		idx := uint16(atomic.LoadUint32(aw) >> 16)
		if idx == q.lastAvail {
			break
		}
		if h, ok := d.model.(Holder); ok && !h.Ready(qi) {
			break
		}
		var lens []uint32
		var failed error
		if merges {
			d.pk = peekState{q: q, avail: avail, n: int(idx - q.lastAvail)}
			lens, failed = m.Merge(d.peekFn), d.pk.err
		} else {
			head := binary.LittleEndian.Uint16(avail[4+2*int(q.lastAvail%q.size):])
			var bufs []Buf
			if bufs, failed = d.chain(q, head, 0); failed == nil {
				d.one[0] = d.model.Handle(qi, bufs)
				lens = d.one[:]
			}
		}
		if failed != nil {
			d.errorf("queue %d: %v", qi, failed)
			return
		}
		if len(lens) == 0 {
			break
		}
		for _, n := range lens {
			id := uint32(binary.LittleEndian.Uint16(avail[4+2*int(q.lastAvail%q.size):]))
			uidx := q.usedIdx
			if d.Corrupt != nil {
				id, n, uidx = d.corrupt(id, n, uidx)
			}
			e := used[4+8*int(uidx%q.size):]
			binary.LittleEndian.PutUint32(e, id)
			binary.LittleEndian.PutUint32(e[4:], n)
			q.lastAvail++
			q.usedIdx = uidx + 1
		}
		atomic.StoreUint32(uw, uint32(q.usedIdx)<<16)
		served = true
	}
	r.mu.Lock()
	r.queues[qi].lastAvail, r.queues[qi].usedIdx = q.lastAvail, q.usedIdx
	r.mu.Unlock()
	if served && atomic.LoadUint32(aw)&1 == 0 {
		if qi < len(d.Raised) {
			d.Raised[qi].Add(1)
		}
		r.isr.Store(1)
		d.interrupt(q.msix)
	}
}

// chain follows a descriptor chain, checking what a device must, into
// the i-th scratch slice.
func (d *Device) chain(q queue, head uint16, slot int) ([]Buf, error) {
	descs, err := d.Mem.Slice(q.desc, 16*uint32(q.size))
	if err != nil {
		return nil, err
	}
	for len(d.scratch) <= slot {
		d.scratch = append(d.scratch, nil)
	}
	bufs := d.scratch[slot][:0]
	seenWrite := false
	for i, n := head, 0; ; n++ {
		if i >= q.size || n >= int(q.size) {
			return nil, fmt.Errorf("descriptor %d out of range or loop", i)
		}
		e := descs[16*int(i):]
		flags := binary.LittleEndian.Uint16(e[12:])
		data, err := d.Mem.Slice(binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint32(e[8:]))
		if err != nil {
			return nil, err
		}
		w := flags&2 != 0
		if seenWrite && !w {
			return nil, fmt.Errorf("readable descriptor after a writable one")
		}
		seenWrite = seenWrite || w
		bufs = append(bufs, Buf{Data: data, Write: w})
		if flags&1 == 0 {
			d.scratch[slot] = bufs
			return bufs, nil
		}
		i = binary.LittleEndian.Uint16(e[14:])
	}
}
