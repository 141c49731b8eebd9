// Package nvmetest simulates an NVMe controller on PCI for host tests:
// configuration space (pcitest) with an MSI-X (or MSI) capability, BAR0
// with the controller registers, doorbells and MSI-X table and their
// side effects, guest memory for DMA, and a worker that executes
// submitted commands — admin (identify, number of queues, queue
// creation) and NVM (read, write, flush and Dataset Management over
// in-memory namespaces) —
// and posts completions with phase tags, as QEMU's nvme device does.
// Knobs make it misbehave: a controller that never becomes ready, one
// that holds completions, and a hook that alters each completion entry.
package nvmetest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"shortbread/kernel/drivers/nvme"
	"shortbread/kernel/drivers/pci"
	"shortbread/kernel/drivers/pci/pcitest"
)

// BAR0 layout: registers and doorbells, then the MSI-X table and PBA
// (where QEMU puts them).
const (
	bar0      = 0xfe000000
	bar0Size  = 0x4000
	msixTable = 0x2000
	msixPBA   = 0x3000
)

// MaxCPUs is the number of CPUs the simulated platform can aim at.
const MaxCPUs = 64

// Addr is where the controller sits.
var Addr = pci.Addr{Bus: 0, Dev: 4, Fn: 0}

// Namespace is a simulated namespace: its blocks in memory.
type Namespace struct {
	Data  []byte
	Shift uint // log2 of the block size
	Meta  uint16
	Bad   map[uint64]bool // blocks that fail with a media error
}

// CQE is a completion entry before it is posted; Corrupt may change it.
type CQE struct {
	DW0    uint32
	SQHead uint16
	SQID   uint16
	CID    uint16
	Status uint16 // the 15-bit status field
	// WrongPhase posts the entry with the phase bit of old entries.
	WrongPhase bool
	Drop       bool // not posted at all
	Twice      bool // posted twice
}

// Options shape the controller before the driver sees it.
type Options struct {
	Vectors    int    // MSI-X table size; 0: MSI only
	MaxQueues  int    // I/O queue pairs granted (default 64)
	MQES       uint16 // CAP.MQES (0-based; default 0x7ff)
	TO         uint8  // CAP.TO in 500 ms units (default 1)
	CAP        uint64 // replaces CAP entirely when set
	VWC        bool   // a volatile write cache
	MDTS       uint8  // default 7
	NN         uint32 // namespaces (default len(Namespaces))
	Version    uint32 // default 1.4
	NeverReady bool   // CSTS.RDY never becomes 1
	Fatal      bool   // CSTS.CFS set on enable
	Enabled    bool   // left enabled by firmware (CC.EN and CSTS.RDY set)
	// DBBuf offers shadow doorbells (OACS bit 8): once configured, I/O
	// queue tails and heads are read from the shadow page, and each
	// submission queue's event index is its tail after each pass, as
	// QEMU does; completion queues' event indices stay 0.
	DBBuf bool
	// DSM offers Dataset Management (ONCS bit 2): a deallocated range
	// reads back as zeros, as QEMU's on a raw file with discard=unmap.
	// DMRL, DMRSL and DMSL are the limits the NVM command set's
	// Identify Controller (CNS 06h) reports; NoCNS6 refuses that
	// identify (a controller before NVMe 2.0).
	DSM    bool
	DMRL   uint8
	DMRSL  uint32
	DMSL   uint64
	NoCNS6 bool
}

// DSMCommand is one Dataset Management command as the controller
// received it: its attributes and ranges (context attributes, blocks,
// starting LBA).
type DSMCommand struct {
	Attr   uint32
	Ranges [][3]uint64
}

// Controller is a simulated NVMe controller.
type Controller struct {
	Cfg        *pcitest.Config
	Mem        *Mem
	opts       Options
	Namespaces []*Namespace
	table      []byte // MSI-X table and PBA

	mu       sync.Mutex
	cc, csts uint32
	aqa      uint32
	asq, acq uint64
	intms    uint32
	sqs      map[uint16]*subQueue
	cqs      map[uint16]*compQueue
	irqs     map[uint32]*IRQ
	nextData uint32
	kick     chan struct{}
	// Hold, when set, leaves submitted commands unexecuted (a controller
	// that stopped answering) until Release.
	Hold atomic.Bool
	// Corrupt, when set, is shown each completion before it is posted
	// (q is the completion queue).
	Corrupt func(q uint16, e *CQE)
	// IdentifyHook may alter identify data before the driver sees it.
	IdentifyHook func(cns uint8, nsid uint32, data []byte)
	Errors       []string // protocol violations by the driver
	dbs, eis     uint64   // shadow doorbell and event index pages (0: none)
	// Doorbells counts doorbell register writes: submission, completion.
	Doorbells [2]atomic.Int64
	Flushes   atomic.Int64
	// Executed counts the I/O commands executed on each submission queue.
	Executed [65]atomic.Int64
	// Raised counts the interrupts raised on each vector, and RaisedAt
	// those delivered to each CPU: the destination of the message
	// address the vector was programmed with (the simulated platform
	// gives CPU n the local APIC ID n).
	Raised   [65]atomic.Int64
	RaisedAt [MaxCPUs]atomic.Int64
	dsms     []DSMCommand // Dataset Management commands received
}

// DSMs are the Dataset Management commands received so far.
func (c *Controller) DSMs() []DSMCommand {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]DSMCommand(nil), c.dsms...)
}

type subQueue struct {
	id, cqid   uint16
	size       uint16
	base       uint64
	head, tail uint16
}

type compQueue struct {
	id         uint16
	size       uint16
	base       uint64
	head, tail uint16
	phase      uint32
	vector     uint16
	ien        bool
}

// New makes a controller serving namespaces.
func New(o Options, namespaces ...*Namespace) *Controller {
	if o.MaxQueues == 0 {
		o.MaxQueues = 64
	}
	if o.MQES == 0 {
		o.MQES = 0x7ff
	}
	if o.TO == 0 {
		o.TO = 1
	}
	if o.MDTS == 0 {
		o.MDTS = 7
	}
	if o.NN == 0 {
		o.NN = uint32(len(namespaces))
	}
	if o.Version == 0 {
		o.Version = 0x10400
	}
	c := &Controller{Cfg: pcitest.New(), Mem: NewMem(), opts: o, Namespaces: namespaces,
		table: make([]byte, bar0Size-msixTable), sqs: map[uint16]*subQueue{}, cqs: map[uint16]*compQueue{},
		irqs: map[uint32]*IRQ{}, kick: make(chan struct{}, 1)}
	if o.Enabled {
		c.cc, c.csts = 1, 1
	}
	f := c.Cfg.Add(Addr, 0x1b36, 0x0010, nvme.ClassNVMe).Interrupt(1, 11).MemBAR(0, bar0, bar0Size, true, false)
	if o.Vectors > 0 {
		f.AddCap(pci.CapMSIX, pcitest.MSIXCap(o.Vectors, 0, msixTable, msixPBA))
	} else {
		f.AddCap(pci.CapMSI, pcitest.MSICap())
	}
	go c.worker()
	return c
}

// Pending is the number of entries submission queue q holds that the
// controller has not fetched.
func (c *Controller) Pending(q uint16) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	sq := c.sqs[q]
	if sq == nil {
		return 0
	}
	return int((sq.tail - sq.head + sq.size) % sq.size)
}

// Enabled says whether CC.EN is set.
func (c *Controller) Enabled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cc&1 != 0
}

// Function is the controller's configuration-space function.
func (c *Controller) Function() *pcitest.Func { return c.Cfg.Funcs[Addr] }

// Release executes the commands held while Hold was set.
func (c *Controller) Release() {
	c.Hold.Store(false)
	c.wake()
}

func (c *Controller) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// errorf records a protocol violation. Precondition: c.mu held.
func (c *Controller) errorf(format string, args ...any) {
	c.Errors = append(c.Errors, fmt.Sprintf(format, args...))
}

// Problems returns the protocol violations the controller saw.
func (c *Controller) Problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.Errors...)
}

// IRQ is a simulated interrupt.
type IRQ struct {
	c      chan struct{}
	closed atomic.Bool
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
	if i.closed.Load() {
		return
	}
	select {
	case i.c <- struct{}{}:
	default:
	}
}

// Platform is the pci.Platform the driver under test gets.
func (c *Controller) Platform() pci.Platform { return platform{c} }

type platform struct{ c *Controller }

func (p platform) Map(b pci.BAR) (pci.Region, error) {
	if b.Addr != bar0 {
		return nil, fmt.Errorf("nvmetest: no BAR at %#x", b.Addr)
	}
	return regs{p.c}, nil
}

// AllocMSI aims the message at local APIC ID cpu, as the kernel's
// platform does for CPU cpu on a machine numbered that way.
func (p platform) AllocMSI(cpu int) (pci.IRQ, uint64, uint32, error) {
	if cpu < 0 || cpu >= MaxCPUs {
		return nil, 0, 0, fmt.Errorf("nvmetest: no CPU %d", cpu)
	}
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	p.c.nextData++
	irq := &IRQ{c: make(chan struct{}, 1)}
	p.c.irqs[0x40+p.c.nextData] = irq
	return irq, 0xfee00000 | uint64(cpu)<<12, 0x40 + p.c.nextData, nil
}

func (p platform) INTx(*pci.Device) (pci.IRQ, error) { return nil, errors.New("nvmetest: no INTx") }

// interrupt raises vector v through the MSI-X table (or MSI, vector 0).
// Precondition: c.mu held.
func (c *Controller) interrupt(v uint16) {
	if c.opts.Vectors == 0 && (v != 0 || c.intms&1 != 0) {
		return
	}
	addr, data, masked, ok := c.message(int(v))
	if !ok {
		c.errorf("interrupt vector %d beyond the table of %d", v, c.opts.Vectors)
		return
	}
	if masked {
		return
	}
	if int(v) < len(c.Raised) {
		c.Raised[v].Add(1)
	}
	if cpu := addr >> 12 & 0xff; addr&^0xff00f == 0xfee00000 && cpu < MaxCPUs {
		c.RaisedAt[cpu].Add(1)
	} else {
		c.errorf("vector %d: message address %#x is not a local APIC's", v, addr)
	}
	if irq := c.irqs[data]; irq != nil {
		irq.raise()
	}
}

// message is vector v's MSI-X table entry (or, without MSI-X, the MSI
// capability's message for vector 0). Precondition: c.mu held.
func (c *Controller) message(v int) (addr uint64, data uint32, masked, ok bool) {
	if c.opts.Vectors > 0 {
		if v < 0 || v >= c.opts.Vectors {
			return 0, 0, false, false
		}
		e := c.table[16*v:]
		return binary.LittleEndian.Uint64(e), binary.LittleEndian.Uint32(e[8:]), binary.LittleEndian.Uint32(e[12:])&1 != 0, true
	}
	if v != 0 {
		return 0, 0, false, false
	}
	off, _ := pciCap(c.Function(), pci.CapMSI)
	sp := c.Function().Space
	return binary.LittleEndian.Uint64(sp[off+4:]), uint32(binary.LittleEndian.Uint16(sp[off+12:])), false, true
}

// QueueCPU is the CPU that completion queue q's interrupts are delivered
// to: the destination of its vector's message address; false if there
// is no such queue or the queue interrupts no vector the controller has.
func (c *Controller) QueueCPU(q uint16) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cq := c.cqs[q]
	if cq == nil || !cq.ien {
		return 0, false
	}
	addr, _, _, ok := c.message(int(cq.vector))
	if !ok || addr&^0xff00f != 0xfee00000 {
		return 0, false
	}
	return int(addr >> 12 & 0xff), true
}

func pciCap(f *pcitest.Func, id uint8) (uint16, bool) {
	for p := uint16(f.Space[0x34]); p != 0; p = uint16(f.Space[p+1]) {
		if f.Space[p] == id {
			return p, true
		}
	}
	return 0, false
}

// worker executes submitted commands when a doorbell rings.
func (c *Controller) worker() {
	for range c.kick {
		c.mu.Lock()
		if !c.Hold.Load() && c.csts&1 != 0 {
			c.process()
		}
		c.mu.Unlock()
	}
}

// process executes every submission queue's new entries, in queue id
// order, leaving those whose completion queue is full.
func (c *Controller) process() {
	raise := map[uint16]bool{}
	for more := true; more; {
		more = false
		ids := make([]int, 0, len(c.sqs))
		for id := range c.sqs {
			ids = append(ids, int(id))
		}
		sort.Ints(ids)
		for _, id := range ids {
			sq := c.sqs[uint16(id)]
			if sq == nil {
				continue
			}
			c.shadowTail(sq)
			if sq.head == sq.tail {
				continue
			}
			cq := c.cqs[sq.cqid]
			if cq == nil {
				continue
			}
			if c.shadowHead(cq); (cq.tail+1)%cq.size == cq.head {
				continue
			}
			e, err := c.Mem.Slice(sq.base+uint64(sq.head)*64, 64)
			if err != nil {
				c.errorf("queue %d: submission entry: %v", sq.id, err)
				return
			}
			sqe := append([]byte(nil), e...)
			sq.head = (sq.head + 1) % sq.size
			var dw0 uint32
			var status uint16
			if sq.id == 0 {
				dw0, status = c.admin(sqe)
			} else {
				status = c.io(sq.id, sqe)
			}
			if cq = c.cqs[sq.cqid]; cq == nil {
				continue // deleted by this command
			}
			c.post(cq, CQE{DW0: dw0, SQHead: sq.head, SQID: sq.id, CID: uint16(binary.LittleEndian.Uint32(sqe) >> 16), Status: status})
			if cq.ien {
				raise[cq.vector] = true
			}
			more = true
		}
	}
	if c.dbs != 0 {
		for id, sq := range c.sqs {
			if id != 0 {
				c.shadowWord(c.eis, id, false, uint32(sq.tail), true)
			}
		}
	}
	for v := range raise {
		c.interrupt(v)
	}
}

// shadowWord reads (or with write, stores v into) queue id's entry in
// the shadow doorbell or event index page at base.
func (c *Controller) shadowWord(base uint64, id uint16, cq bool, v uint32, write bool) uint32 {
	off := uint64(id) * 8
	if cq {
		off += 4
	}
	b, err := c.Mem.Slice(base+off, 4)
	if err != nil {
		c.errorf("shadow doorbells: %v", err)
		return 0
	}
	p := (*uint32)(unsafe.Pointer(&b[0]))
	if write {
		atomic.StoreUint32(p, v)
		return v
	}
	return atomic.LoadUint32(p)
}

// shadowTail takes an I/O submission queue's tail from its shadow
// doorbell.
func (c *Controller) shadowTail(sq *subQueue) {
	if c.dbs == 0 || sq.id == 0 {
		return
	}
	if t := c.shadowWord(c.dbs, sq.id, false, 0, false); t < uint32(sq.size) {
		sq.tail = uint16(t)
	} else {
		c.errorf("shadow submission tail %d = %d", sq.id, t)
	}
}

// shadowHead takes an I/O completion queue's head from its shadow
// doorbell.
func (c *Controller) shadowHead(cq *compQueue) {
	if c.dbs == 0 || cq.id == 0 {
		return
	}
	h := c.shadowWord(c.dbs, cq.id, true, 0, false)
	if h >= uint32(cq.size) || (h-uint32(cq.head)+uint32(cq.size))%uint32(cq.size) > (uint32(cq.tail)-uint32(cq.head)+uint32(cq.size))%uint32(cq.size) {
		c.errorf("shadow completion head %d = %d (head %d, tail %d)", cq.id, h, cq.head, cq.tail)
		return
	}
	cq.head = uint16(h)
}

// post writes a completion entry at cq's tail: the status word (with
// the phase bit) last, as one store.
func (c *Controller) post(cq *compQueue, e CQE) {
	if c.Corrupt != nil {
		c.Corrupt(cq.id, &e)
	}
	if e.Drop {
		return
	}
	for n := 0; n < 1 || e.Twice && n < 2; n++ {
		if (cq.tail+1)%cq.size == cq.head {
			return
		}
		b, err := c.Mem.Slice(cq.base+uint64(cq.tail)*16, 16)
		if err != nil {
			c.errorf("completion queue %d: %v", cq.id, err)
			return
		}
		binary.LittleEndian.PutUint32(b[0:], e.DW0)
		binary.LittleEndian.PutUint32(b[8:], uint32(e.SQHead)|uint32(e.SQID)<<16)
		phase := cq.phase
		if e.WrongPhase {
			phase ^= 1
		}
		atomic.StoreUint32((*uint32)(unsafe.Pointer(&b[12])), uint32(e.CID)|phase<<16|uint32(e.Status)<<17)
		if cq.tail = (cq.tail + 1) % cq.size; cq.tail == 0 {
			cq.phase ^= 1
		}
	}
}

// Status values (generic and media error types).
const (
	scInvalidOpcode = 0x01
	scInvalidField  = 0x02
	scInvalidNS     = 0x0b
	scLBARange      = 0x80
	sctCommandSpec  = 1 << 8
	sctMedia        = 2 << 8
	scInvalidQID    = 0x01 | sctCommandSpec
	scInvalidQSize  = 0x02 | sctCommandSpec
	scInvalidVector = 0x08 | sctCommandSpec
	scWriteFault    = 0x80 | sctMedia
	scReadError     = 0x81 | sctMedia
	dnr             = 1 << 14
)

func cdw(e []byte, n int) uint32 { return binary.LittleEndian.Uint32(e[4*n:]) }

func (c *Controller) admin(e []byte) (uint32, uint16) {
	op := e[0]
	switch op {
	case 0x06:
		return 0, c.identify(uint8(cdw(e, 10)), cdw(e, 1), binary.LittleEndian.Uint64(e[24:]))
	case 0x09:
		if cdw(e, 10)&0xff != 7 {
			return 0, scInvalidField | dnr
		}
		n := uint32(c.opts.MaxQueues - 1)
		return n<<16 | n, 0
	case 0x05:
		qid, size := uint16(cdw(e, 10)), uint16(cdw(e, 10)>>16)+1
		flags, vec := cdw(e, 11), uint16(cdw(e, 11)>>16)
		base := binary.LittleEndian.Uint64(e[24:])
		switch {
		case qid == 0 || int(qid) > c.opts.MaxQueues || c.cqs[qid] != nil:
			return 0, scInvalidQID | dnr
		case size < 2 || size > c.opts.MQES+1:
			return 0, scInvalidQSize | dnr
		case flags&1 == 0:
			return 0, scInvalidField | dnr // QEMU wants contiguous queues
		case c.opts.Vectors > 0 && int(vec) >= c.opts.Vectors || c.opts.Vectors == 0 && vec != 0:
			return 0, scInvalidVector | dnr
		}
		if _, err := c.Mem.Slice(base, int(size)*16); err != nil {
			c.errorf("completion queue %d: %v", qid, err)
			return 0, scInvalidField | dnr
		}
		c.cqs[qid] = &compQueue{id: qid, size: size, base: base, phase: 1, vector: vec, ien: flags&2 != 0}
		return 0, 0
	case 0x01:
		qid, size := uint16(cdw(e, 10)), uint16(cdw(e, 10)>>16)+1
		cqid := uint16(cdw(e, 11) >> 16)
		base := binary.LittleEndian.Uint64(e[24:])
		switch {
		case qid == 0 || int(qid) > c.opts.MaxQueues || c.sqs[qid] != nil:
			return 0, scInvalidQID | dnr
		case c.cqs[cqid] == nil || cqid == 0:
			return 0, 0x00 | sctCommandSpec | dnr // completion queue invalid
		case size < 2 || size > c.opts.MQES+1:
			return 0, scInvalidQSize | dnr
		}
		if _, err := c.Mem.Slice(base, int(size)*64); err != nil {
			c.errorf("submission queue %d: %v", qid, err)
			return 0, scInvalidField | dnr
		}
		c.sqs[qid] = &subQueue{id: qid, cqid: cqid, size: size, base: base}
		return 0, 0
	case 0x7c:
		dbs, eis := binary.LittleEndian.Uint64(e[24:]), binary.LittleEndian.Uint64(e[32:])
		if !c.opts.DBBuf {
			return 0, scInvalidOpcode | dnr
		}
		_, err1 := c.Mem.Slice(dbs, nvme.PageSize)
		_, err2 := c.Mem.Slice(eis, nvme.PageSize)
		if err1 != nil || err2 != nil {
			c.errorf("doorbell buffer config %#x %#x: pages not allocated", dbs, eis)
			return 0, scInvalidField | dnr
		}
		c.dbs, c.eis = dbs, eis
		return 0, 0
	}
	return 0, scInvalidOpcode | dnr
}

func (c *Controller) identify(cns uint8, nsid uint32, prp uint64) uint16 {
	buf, err := c.Mem.Slice(prp, nvme.PageSize)
	if err != nil {
		c.errorf("identify: %v", err)
		return scInvalidField | dnr
	}
	d := make([]byte, nvme.PageSize)
	switch cns {
	case 1:
		binary.LittleEndian.PutUint16(d[0:], 0x1b36)
		copy(d[4:24], fmt.Sprintf("%-20s", "SIM0001"))
		copy(d[24:64], fmt.Sprintf("%-40s", "nvmetest controller"))
		copy(d[64:72], fmt.Sprintf("%-8s", "1.0"))
		d[77] = c.opts.MDTS
		binary.LittleEndian.PutUint32(d[80:], c.opts.Version)
		d[512], d[513] = 0x66, 0x44
		binary.LittleEndian.PutUint32(d[516:], c.opts.NN)
		if c.opts.VWC {
			d[525] = 1
		}
		if c.opts.DBBuf {
			d[257] = 1 // OACS bit 8
		}
		if c.opts.DSM {
			d[520] = 1 << 2 // ONCS: Dataset Management
		}
	case 6:
		if c.opts.NoCNS6 {
			return scInvalidField | dnr
		}
		d[3] = c.opts.DMRL
		binary.LittleEndian.PutUint32(d[4:], c.opts.DMRSL)
		binary.LittleEndian.PutUint64(d[8:], c.opts.DMSL)
	case 0:
		ns := c.ns(nsid)
		if ns == nil {
			return scInvalidNS | dnr
		}
		binary.LittleEndian.PutUint64(d[0:], uint64(len(ns.Data))>>ns.Shift)
		binary.LittleEndian.PutUint64(d[8:], uint64(len(ns.Data))>>ns.Shift)
		d[25] = 1 // two formats: 512 bytes and the one in use
		d[26] = 1
		binary.LittleEndian.PutUint32(d[128:], 9<<16)
		binary.LittleEndian.PutUint32(d[132:], uint32(ns.Shift)<<16|uint32(ns.Meta))
	case 2:
		for i := range c.Namespaces {
			if uint32(i+1) > nsid {
				binary.LittleEndian.PutUint32(d[4*i:], uint32(i+1))
			}
		}
	default:
		return scInvalidField | dnr
	}
	if c.IdentifyHook != nil {
		c.IdentifyHook(cns, nsid, d)
	}
	copy(buf, d)
	return 0
}

func (c *Controller) ns(nsid uint32) *Namespace {
	if nsid == 0 || int(nsid) > len(c.Namespaces) {
		return nil
	}
	return c.Namespaces[nsid-1]
}

func (c *Controller) io(qid uint16, e []byte) uint16 {
	c.Executed[min(int(qid), len(c.Executed)-1)].Add(1)
	ns := c.ns(cdw(e, 1))
	if ns == nil {
		return scInvalidNS | dnr
	}
	switch e[0] {
	case 0x00:
		c.Flushes.Add(1)
		return 0
	case 0x01, 0x02:
	case 0x09:
		if !c.opts.DSM {
			return scInvalidOpcode | dnr
		}
		return c.dsm(qid, ns, e)
	default:
		return scInvalidOpcode | dnr
	}
	write := e[0] == 0x01
	slba := uint64(cdw(e, 10)) | uint64(cdw(e, 11))<<32
	nlb := uint64(cdw(e, 12)&0xffff) + 1
	if slba+nlb > uint64(len(ns.Data))>>ns.Shift {
		return scLBARange | dnr
	}
	pages, err := c.prps(binary.LittleEndian.Uint64(e[24:]), binary.LittleEndian.Uint64(e[32:]), int(nlb<<ns.Shift))
	if err != nil {
		c.errorf("queue %d: %v", qid, err)
		return 0x04 // data transfer error
	}
	off := slba << ns.Shift
	for b := slba; b < slba+nlb; b++ {
		if ns.Bad[b] {
			if write {
				return scWriteFault
			}
			return scReadError
		}
	}
	for _, p := range pages {
		if write {
			copy(ns.Data[off:], p)
		} else {
			copy(p, ns.Data[off:])
		}
		off += uint64(len(p))
	}
	return 0
}

// dsm executes Dataset Management: the ranges are read from the PRPs
// and recorded; with the Deallocate attribute each range is checked
// against the namespace and the limits (a range beyond them fails the
// command, where QEMU skips it) and zeroed.
func (c *Controller) dsm(qid uint16, ns *Namespace, e []byte) uint16 {
	nr := int(cdw(e, 10)&0xff) + 1
	attr := cdw(e, 11)
	if cdw(e, 10)>>8 != 0 {
		c.errorf("queue %d: DSM: reserved bits of CDW10 set (%#x)", qid, cdw(e, 10))
	}
	pages, err := c.prps(binary.LittleEndian.Uint64(e[24:]), binary.LittleEndian.Uint64(e[32:]), nr*16)
	if err != nil {
		c.errorf("queue %d: DSM: %v", qid, err)
		return 0x04
	}
	var b []byte
	for _, p := range pages {
		b = append(b, p...)
	}
	cmd := DSMCommand{Attr: attr}
	total := uint64(0)
	for i := 0; i < nr; i++ {
		r := b[16*i:]
		ca, n, slba := binary.LittleEndian.Uint32(r), binary.LittleEndian.Uint32(r[4:]), binary.LittleEndian.Uint64(r[8:])
		cmd.Ranges = append(cmd.Ranges, [3]uint64{uint64(ca), uint64(n), slba})
		total += uint64(n)
	}
	c.dsms = append(c.dsms, cmd)
	if attr&(1<<2) == 0 {
		return 0
	}
	if c.opts.DMRL != 0 && nr > int(c.opts.DMRL) || c.opts.DMSL != 0 && total > c.opts.DMSL {
		c.errorf("queue %d: DSM of %d ranges, %d blocks: beyond DMRL %d, DMSL %d", qid, nr, total, c.opts.DMRL, c.opts.DMSL)
		return scInvalidField | dnr
	}
	for _, r := range cmd.Ranges {
		if c.opts.DMRSL != 0 && r[1] > uint64(c.opts.DMRSL) {
			c.errorf("queue %d: DSM range of %d blocks beyond DMRSL %d", qid, r[1], c.opts.DMRSL)
			return scInvalidField | dnr
		}
		if r[2]+r[1] > uint64(len(ns.Data))>>ns.Shift || r[2]+r[1] < r[2] {
			return scLBARange | dnr
		}
	}
	for _, r := range cmd.Ranges {
		clear(ns.Data[r[2]<<ns.Shift : (r[2]+r[1])<<ns.Shift])
	}
	return 0
}

// prps walks a command's PRP entries (§4.3) for n bytes.
func (c *Controller) prps(prp1, prp2 uint64, n int) ([][]byte, error) {
	var out [][]byte
	first := min(n, nvme.PageSize-int(prp1%nvme.PageSize))
	b, err := c.Mem.Slice(prp1, first)
	if err != nil {
		return nil, fmt.Errorf("PRP1: %v", err)
	}
	out, n = append(out, b), n-first
	if n == 0 {
		return out, nil
	}
	if prp2%nvme.PageSize != 0 {
		return nil, fmt.Errorf("PRP2 %#x not page aligned", prp2)
	}
	if n <= nvme.PageSize {
		b, err := c.Mem.Slice(prp2, n)
		if err != nil {
			return nil, fmt.Errorf("PRP2: %v", err)
		}
		return append(out, b), nil
	}
	list, err := c.Mem.Slice(prp2, nvme.PageSize)
	if err != nil {
		return nil, fmt.Errorf("PRP list: %v", err)
	}
	for i := 0; n > 0; i++ {
		if i == nvme.PageSize/8-1 {
			return nil, errors.New("PRP list longer than a page")
		}
		pa := binary.LittleEndian.Uint64(list[8*i:])
		if pa%nvme.PageSize != 0 {
			return nil, fmt.Errorf("PRP list entry %d (%#x) not page aligned", i, pa)
		}
		b, err := c.Mem.Slice(pa, min(n, nvme.PageSize))
		if err != nil {
			return nil, fmt.Errorf("PRP list entry %d: %v", i, err)
		}
		out, n = append(out, b), n-len(b)
	}
	return out, nil
}
