// Package nvme drives NVM Express controllers (NVMe 1.4 base
// specification; QEMU's -device nvme and physical SSDs) over PCI: the
// controller is reset and enabled with CAP/CC/CSTS checked and bounded by
// CAP.TO, an admin queue identifies the controller and its namespaces,
// and I/O queue pairs — one per CPU where the controller and the MSI-X
// table offer enough, each on its own vector aimed at the CPU that
// submits to it — carry reads, writes and flushes, several at once, and
// deallocations (Dataset Management) where ONCS offers them. Each active
// namespace is a kernel/blk Device (nvme0n1, nvme0n2, ...).
//
// Completions arrive by interrupt: one goroutine per vector sleeps until
// it fires, so nothing polls while the disk is idle. Every value the
// controller hands back (completion phase and command identifier,
// submission queue id and head, status, identify data) is checked
// before it is used; failures reach callers as blk.ErrIO with a log line
// naming the device and sector, and a command the controller never
// completes is reported as blk.ErrTimeout after Timeout.
//
// Files: regs.go (registers and field layouts), queue.go (queue pairs,
// submission, completion checking), identify.go (identify data),
// namespace.go (the block devices).
package nvme

import (
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"shortbread/kernel/drivers/pci"
)

// ClassNVMe is the PCI class of NVMe controllers (mass storage,
// non-volatile memory, NVMe interface); drivers match on it rather than
// on IDs, as Linux does.
const ClassNVMe = 0x010802

// DefaultTimeout bounds each command, as Linux's nvme_core.io_timeout.
const DefaultTimeout = 30 * time.Second

// Sizes the driver asks for.
const (
	adminEntries  = 32
	adminSlots    = 4
	ioEntries     = maxQueueEntries
	ioSlots       = 16
	maxDataPages  = 16 // per command: 64 KiB
	maxNamespaces = 16
)

// Controller is one NVMe controller.
type Controller struct {
	name    string
	regs    pci.Region
	dma     DMA
	log     func(format string, args ...any)
	cpu     func() int
	Timeout time.Duration // per command

	cap       capability
	version   uint32
	admin     *queue
	io        []*queue
	irqs      []pci.IRQ
	kind      pci.IntrKind
	vmu       sync.Mutex
	vectors   [][]*queue // queues each vector's goroutine serves (under vmu)
	dataPages int        // per I/O command
	// shadow and eventIdx are the shadow doorbell and event index pages
	// (Mem nil when the controller has no Doorbell Buffer Config).
	shadow, eventIdx Page
	noShadow         bool // Config.NoShadowDoorbells
	id               identity
	dsm              dsmLimits // when id.dsm
	ns               []*Namespace
}

// Config is what New needs besides the device.
type Config struct {
	Name    string // nvme0, nvme1, ...
	DMA     DMA
	Log     func(format string, args ...any)
	Queues  int        // I/O queue pairs wanted: the number of CPUs
	CPU     func() int // the caller's CPU, to pick its queue
	Timeout time.Duration
	// ReadyTimeout, if set, bounds waits for CSTS.RDY below CAP.TO
	// (tests).
	ReadyTimeout time.Duration
	// NoShadowDoorbells rings the doorbell registers even when the
	// controller offers shadow doorbells.
	NoShadowDoorbells bool
	// BootCPUIRQs aims every vector at CPU 0 instead of at the CPU each
	// queue serves (pci.OnePerCPU).
	BootCPUIRQs bool
}

// New resets and enables the controller of d, identifies it and its
// namespaces, and creates the I/O queues.
func New(d *pci.Device, p pci.Platform, cfg Config) (*Controller, error) {
	c := &Controller{name: cfg.Name, dma: cfg.DMA, log: cfg.Log, cpu: cfg.CPU, Timeout: cfg.Timeout, noShadow: cfg.NoShadowDoorbells}
	if c.log == nil {
		c.log = func(string, ...any) {}
	}
	if c.cpu == nil {
		c.cpu = func() int { return 0 }
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	bar := d.BARs[0]
	if bar.IO || bar.Size < regDB+8 {
		return nil, fmt.Errorf("nvme %s: BAR0 (%d bytes, I/O %v) cannot hold the registers", c.name, bar.Size, bar.IO)
	}
	regs, err := p.Map(bar)
	if err != nil {
		return nil, err
	}
	c.regs = regs
	d.SetCommand(pci.CmdMemory|pci.CmdBusMaster, 0)
	c.cap = capability(uint64(regs.Read32(regCAP)) | uint64(regs.Read32(regCAP+4))<<32)
	c.version = regs.Read32(regVS)
	if err := c.checkCap(bar.Size); err != nil {
		return nil, err
	}
	readyWait := time.Duration(max(c.cap.timeoutMs(), 500)) * time.Millisecond
	if cfg.ReadyTimeout > 0 {
		readyWait = min(readyWait, cfg.ReadyTimeout)
	}
	if err := c.disable(readyWait); err != nil {
		return nil, err
	}
	wanted := max(cfg.Queues, 1)
	// With MSI-X, I/O queue v+1 completes on vector v, aimed at CPU v,
	// and CPUs v, v+Q, v+2Q, ... submit to it (Q queues in all;
	// Namespace picks queue cpu % Q). This holds however many queues the
	// controller grants and vectors the platform gives (queues never
	// outnumber vectors). The admin queue shares vector 0 (CPU 0).
	// Without MSI-X there is one queue, and its interrupt goes to CPU 0.
	cpus := pci.OnePerCPU(wanted)
	if cfg.BootCPUIRQs {
		clear(cpus)
	}
	kind, irqs, err := d.InterruptsOn(p, cpus)
	if err != nil {
		return nil, fmt.Errorf("nvme %s: %v", c.name, err)
	}
	c.kind, c.irqs = kind, irqs
	c.vectors = make([][]*queue, len(irqs))
	if err := c.enable(readyWait); err != nil {
		c.shutdown()
		return nil, err
	}
	for v := range c.irqs {
		go c.serve(v)
	}
	if err := c.setup(wanted); err != nil {
		c.shutdown()
		return nil, err
	}
	return c, nil
}

// checkCap refuses controllers this driver cannot drive.
func (c *Controller) checkCap(barSize uint64) error {
	switch {
	case c.cap == 0 || c.cap == 1<<64-1:
		return fmt.Errorf("nvme %s: CAP reads %#x: no controller answering", c.name, uint64(c.cap))
	case !c.cap.nvmSet():
		return fmt.Errorf("nvme %s: NVM command set not supported (CAP %#x)", c.name, uint64(c.cap))
	case c.cap.pageMinLog() > 12 || c.cap.pageMaxLog() < 12:
		return fmt.Errorf("nvme %s: 4 KiB pages not supported (CAP %#x)", c.name, uint64(c.cap))
	case c.cap.maxQueueEntries() < 2:
		return fmt.Errorf("nvme %s: queues of %d entries", c.name, c.cap.maxQueueEntries())
	case uint64(regDB+2*c.cap.stride()) > barSize:
		return fmt.Errorf("nvme %s: doorbell stride %d outside BAR0 of %d bytes", c.name, c.cap.stride(), barSize)
	}
	return nil
}

// waitReady waits until CSTS.RDY is want, or the controller reports a
// fatal status, or limit passes. Only while the controller is brought
// up or down: the sleeps back off to 10 ms.
func (c *Controller) waitReady(want bool, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for pause := 10 * time.Microsecond; ; pause = min(2*pause, 10*time.Millisecond) {
		csts := c.regs.Read32(regCSTS)
		if csts == 0xffffffff {
			return fmt.Errorf("nvme %s: CSTS reads all ones: controller gone", c.name)
		}
		if csts&cstsFatal != 0 && want {
			return fmt.Errorf("nvme %s: controller fatal status (CSTS %#x)", c.name, csts)
		}
		if csts&cstsReady != 0 == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nvme %s: CSTS.RDY not %v after %v (CSTS %#x)", c.name, want, limit, csts)
		}
		time.Sleep(pause)
	}
}

// disable resets the controller (CC.EN = 0) and waits until it says it
// stopped (§7.6.1: RDY must be 0 before EN is set again).
func (c *Controller) disable(limit time.Duration) error {
	if cc := c.regs.Read32(regCC); cc&ccEnable != 0 {
		c.regs.Write32(regCC, cc&^ccEnable)
	}
	return c.waitReady(false, limit)
}

// enable gives the controller the admin queue and turns it on.
func (c *Controller) enable(limit time.Duration) error {
	entries := min(adminEntries, c.cap.maxQueueEntries())
	q, err := c.newQueue(0, entries, min(adminSlots, entries-1), 0)
	if err != nil {
		return err
	}
	c.admin = q
	c.vectors[0] = append(c.vectors[0], q)
	c.regs.Write32(regAQA, uint32(entries-1)<<16|uint32(entries-1))
	c.regs.Write32(regASQ, uint32(q.sq.Phys))
	c.regs.Write32(regASQ+4, uint32(q.sq.Phys>>32))
	c.regs.Write32(regACQ, uint32(q.cq.Phys))
	c.regs.Write32(regACQ+4, uint32(q.cq.Phys>>32))
	if c.kind != pci.MSIX {
		c.regs.Write32(regINTMC, 1) // vector 0 unmasked
	}
	c.regs.Write32(regCC, ccIOCQES16|ccIOSQES64|ccAMSRR|ccMPS4K|ccCSSNVM|ccEnable)
	return c.waitReady(true, limit)
}

// shutdown stops the controller after a failed bring-up, so it no
// longer touches the driver's memory, and gives back the interrupt
// vectors (their goroutines end, failing whatever was outstanding).
// Memory is not freed: a controller that ignores the reset may still
// write it.
func (c *Controller) shutdown() {
	c.regs.Write32(regCC, 0)
	for _, irq := range c.irqs {
		irq.Close()
	}
}

// setup identifies the controller, creates the I/O queues and finds the
// namespaces.
func (c *Controller) setup(wanted int) error {
	buf, err := c.alloc()
	if err != nil {
		return err
	}
	defer c.dma.Free(buf)
	if err := c.identify(cnsController, 0, buf); err != nil {
		return err
	}
	if c.id, err = parseController(buf.Mem); err != nil {
		return fmt.Errorf("nvme %s: %v", c.name, err)
	}
	c.dataPages = maxDataPages
	if c.id.mdts > 0 && c.id.mdts < 5 { // 2^MDTS minimum pages per command
		c.dataPages = 1 << c.id.mdts
	}
	if c.id.dsm {
		// The NVM command set's limits on deallocation; a controller
		// without this identify (before NVMe 2.0) keeps the defaults.
		c.dsm = defaultDSMLimits()
		if c.identify(cnsNVMCtrl, 0, buf) == nil {
			c.dsm = parseNVMController(buf.Mem)
		}
	}
	if c.id.dbbuf && !c.noShadow {
		c.shadowDoorbells(wanted)
	}
	if err := c.createQueues(wanted); err != nil {
		return err
	}
	return c.findNamespaces(buf)
}

// shadowDoorbells gives the controller shadow doorbell and event index
// pages, so that most doorbell updates are memory writes rather than
// register writes (each of which an emulated controller traps). Without
// them the driver rings the registers as before.
func (c *Controller) shadowDoorbells(queues int) {
	if uint32(2*queues+2)*c.cap.stride() > PageSize {
		return // the doorbells would not fit one page each
	}
	shadow, err := c.alloc()
	if err != nil {
		c.log("nvme %s: shadow doorbells: %v", c.name, err)
		return
	}
	event, err := c.alloc()
	if err != nil {
		c.dma.Free(shadow)
		c.log("nvme %s: shadow doorbells: %v", c.name, err)
		return
	}
	if _, err := c.adminCmd(&sqe{opcode: adminDoorbellBuf, prp1: shadow.Phys, prp2: event.Phys}, Page{}); err != nil {
		// The pages stay allocated: a controller that failed the command
		// may still have taken their addresses.
		c.log("nvme %s: shadow doorbells refused: %v", c.name, err)
		return
	}
	q := c.admin
	q.mu.Lock() // ring reads c.shadow under a queue's lock
	c.shadow, c.eventIdx = shadow, event
	storeWord(shadow.Mem, int(q.sqDB-regDB), uint32(q.sqTail))
	storeWord(shadow.Mem, int(q.cqDB-regDB), uint32(q.cqHead))
	q.mu.Unlock()
}

// createQueues asks for wanted I/O queue pairs and creates as many as
// the controller grants and the interrupt vectors can serve one each
// (all on one vector without MSI-X).
func (c *Controller) createQueues(wanted int) error {
	r, err := c.adminCmd(&sqe{opcode: adminSetFeatures, cdw: [6]uint32{featureQueues, uint32(wanted-1)<<16 | uint32(wanted-1)}}, Page{})
	if err != nil {
		return fmt.Errorf("nvme %s: set number of queues: %v", c.name, err)
	}
	sqs, cqs := int(r.dw0&0xffff)+1, int(r.dw0>>16)+1
	n := min(wanted, sqs, cqs)
	if c.kind == pci.MSIX {
		n = min(n, len(c.irqs))
	} else {
		n = 1
	}
	// Doorbells must fit BAR0 (checked in CAP terms at New for queue 0).
	entries := min(ioEntries, c.cap.maxQueueEntries())
	slots := min(ioSlots, entries-1)
	for i := 1; i <= n; i++ {
		vec := (i - 1) % len(c.irqs)
		q, err := c.newQueue(uint16(i), entries, slots, c.dataPages)
		if err == nil {
			err = c.createPair(q, vec)
		}
		if err != nil {
			if i == 1 {
				return err
			}
			c.log("nvme %s: %d I/O queues of %d wanted: %v", c.name, i-1, wanted, err)
			break
		}
		c.io = append(c.io, q)
	}
	return nil
}

// createPair creates q's completion queue on vector vec, then its
// submission queue (§5.3, §5.4), and hands q to that vector's goroutine.
func (c *Controller) createPair(q *queue, vec int) error {
	contiguous := uint32(1) // each ring is one page
	_, err := c.adminCmd(&sqe{opcode: adminCreateCQ, prp1: q.cq.Phys,
		cdw: [6]uint32{uint32(q.size-1)<<16 | uint32(q.id), uint32(vec)<<16 | 1<<1 | contiguous}}, Page{})
	if err != nil {
		return fmt.Errorf("create I/O completion queue %d: %v", q.id, err)
	}
	c.vmu.Lock()
	c.vectors[vec] = append(c.vectors[vec], q)
	c.vmu.Unlock()
	_, err = c.adminCmd(&sqe{opcode: adminCreateSQ, prp1: q.sq.Phys,
		cdw: [6]uint32{uint32(q.size-1)<<16 | uint32(q.id), uint32(q.id)<<16 | contiguous}}, Page{})
	if err != nil {
		return fmt.Errorf("create I/O submission queue %d: %v", q.id, err)
	}
	return nil
}

// adminCmd runs e on the admin queue, with buf (if any) as its one data
// page. (Admin commands transfer through buffers of their own, so their
// slots carry no data pages.)
func (c *Controller) adminCmd(e *sqe, buf Page) (result, error) {
	cmd, err := c.admin.get()
	if err != nil {
		return result{}, err
	}
	if buf.Mem != nil {
		e.prp1 = buf.Phys
	}
	return c.admin.run(cmd, e, nil)
}

func (c *Controller) identify(cns uint8, nsid uint32, buf Page) error {
	clear(buf.Mem)
	if _, err := c.adminCmd(&sqe{opcode: adminIdentify, nsid: nsid, cdw: [6]uint32{uint32(cns)}}, buf); err != nil {
		return fmt.Errorf("nvme %s: identify (CNS %d, namespace %d): %v", c.name, cns, nsid, err)
	}
	return nil
}

// findNamespaces lists the active namespaces (identify CNS 2, from NVMe
// 1.1; a 1.0 controller is asked for 1 to NN) and identifies each.
func (c *Controller) findNamespaces(buf Page) error {
	var ids []uint32
	if c.version >= 0x10100 {
		if err := c.identify(cnsActiveNS, 0, buf); err != nil {
			return err
		}
		prev := uint32(0)
		for off := 0; off < PageSize && len(ids) < maxNamespaces; off += 4 {
			id := binary.LittleEndian.Uint32(buf.Mem[off:])
			if id == 0 {
				break
			}
			if id <= prev || id > c.id.namespaces {
				return fmt.Errorf("nvme %s: active namespace list has %d after %d (controller has %d)", c.name, id, prev, c.id.namespaces)
			}
			ids, prev = append(ids, id), id
		}
	} else {
		for id := uint32(1); id <= min(c.id.namespaces, maxNamespaces); id++ {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		if err := c.identify(cnsNamespace, id, buf); err != nil {
			return err
		}
		g, err := parseNamespace(buf.Mem)
		if err != nil {
			c.log("nvme %s: namespace %d: %v; not used", c.name, id, err)
			continue
		}
		if g.sectors == 0 {
			continue // inactive (NVMe 1.0 has no list to leave it out)
		}
		c.ns = append(c.ns, &Namespace{c: c, name: fmt.Sprintf("%sn%d", c.name, id), nsid: id,
			shift: g.shift, sectors: g.sectors})
	}
	return nil
}

// serve is vector v's goroutine: woken by the interrupt, it reaps every
// queue on the vector. If the interrupt goes away, their commands fail.
func (c *Controller) serve(v int) {
	for {
		c.vmu.Lock()
		qs := c.vectors[v]
		c.vmu.Unlock()
		for _, q := range qs {
			q.reap()
		}
		if err := c.irqs[v].Wait(); err != nil {
			c.log("nvme %s: vector %d: %v", c.name, v, err)
			for _, q := range qs {
				q.failAll(err)
			}
			return
		}
	}
}

// statusNote adds what CSTS says of a controller that stopped answering.
func (c *Controller) statusNote() string {
	csts := c.regs.Read32(regCSTS)
	switch {
	case csts == 0xffffffff:
		return " (controller gone: CSTS reads all ones)"
	case csts&cstsFatal != 0:
		return fmt.Sprintf(" (controller fatal status, CSTS %#x)", csts)
	}
	return ""
}

func (c *Controller) alloc() (Page, error) {
	p, err := c.dma.Alloc()
	if err != nil {
		return Page{}, fmt.Errorf("nvme %s: %v", c.name, err)
	}
	if len(p.Mem) != PageSize || p.Phys%PageSize != 0 {
		return Page{}, fmt.Errorf("nvme %s: DMA page %#x of %d bytes", c.name, p.Phys, len(p.Mem))
	}
	return p, nil
}

// Namespaces are the controller's block devices, in namespace order.
func (c *Controller) Namespaces() []*Namespace { return c.ns }

// Queues is the number of I/O queue pairs in use.
func (c *Controller) Queues() int { return len(c.io) }

// Interrupts says how the controller interrupts and on how many vectors.
func (c *Controller) Interrupts() (pci.IntrKind, int) { return c.kind, len(c.irqs) }

// Model, Serial and Firmware are what identify says, trimmed.
func (c *Controller) Model() string    { return c.id.model }
func (c *Controller) Serial() string   { return c.id.serial }
func (c *Controller) Firmware() string { return c.id.firmware }

// Version is the NVMe version the controller implements, as "1.4".
func (c *Controller) Version() string {
	return fmt.Sprintf("%d.%d", c.version>>16, c.version>>8&0xff)
}

// ShadowDoorbells says whether the I/O queues' doorbells live in memory
// (Doorbell Buffer Config).
func (c *Controller) ShadowDoorbells() bool { return c.shadow.Mem != nil }

// Deallocate describes the controller's Dataset Management: whether it
// has it, and the ranges per command, blocks per range and blocks per
// command (0: no limit) the driver keeps to.
func (c *Controller) Deallocate() (ok bool, ranges int, rangeBlocks, commandBlocks uint64) {
	return c.id.dsm, c.dsm.ranges, c.dsm.rangeBlocks, c.dsm.commandBlocks
}

// VolatileCache says whether the controller has a write cache that
// Flush empties.
func (c *Controller) VolatileCache() bool { return c.id.vwc }
