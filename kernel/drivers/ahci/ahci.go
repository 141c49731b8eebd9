// Package ahci drives SATA disks behind an AHCI 1.x host bus adapter
// (QEMU q35's ICH9 controller at 00:1f.2, and physical servers' SATA
// controllers) as kernel/blk Devices: the HBA is reset into AHCI mode,
// each port with an ATA disk is spun up and identified, and requests go
// through the port's command list from DMA memory (64-bit addresses when
// CAP.S64A says the HBA takes them, else below 4 GiB), as NCQ commands
// (READ/WRITE FPDMA QUEUED, several in flight) when both the HBA and the
// disk support it, else one READ/WRITE DMA EXT at a time. Completions
// arrive by interrupt (MSI if the function has it, else INTx): one
// goroutine per HBA sleeps on it and wakes the requests' waiters.
//
// Everything the HBA reports is checked: completion bits for slots never
// issued, task-file errors, byte counts. A failed request is blk.ErrIO,
// logged with the disk and sector; NCQ commands caught in another's
// error are retried one at a time without queueing, so only the bad one
// fails. A request the disk never completes fails with blk.ErrTimeout
// after Timeout, and the port is stopped and restarted.
//
// Files: regs.go (the specification's registers), ahci.go (the HBA),
// port.go (port bring-up, IDENTIFY, the disk), cmd.go (issuing and
// completing commands, error recovery).
package ahci

import (
	"fmt"
	"sync"
	"time"

	"shortbread/kernel/drivers/pci"
)

// ClassAHCI is the PCI class of AHCI controllers: mass storage, SATA,
// AHCI 1.0 programming interface.
const ClassAHCI = 0x010601

// IDs are controllers known to work: QEMU's ICH9 (q35).
var IDs = []pci.ID{{Vendor: 0x8086, Device: 0x2922}}

// PageSize is the unit of DMA memory.
const PageSize = 4096

// Page is a page of memory the HBA can reach: Phys is its bus address,
// Mem the kernel's view of the same bytes.
type Page struct {
	Phys uint64
	Mem  []byte // PageSize bytes
}

// DMA hands out zeroed pages (physical frames in the kernel, simulated
// memory in tests); low asks for one below 4 GiB, for HBAs without
// 64-bit addressing.
type DMA interface {
	Alloc(low bool) (Page, error)
	Free(Page)
}

// Config is what New needs besides the device.
type Config struct {
	DMA DMA
	// Name returns the name of the next disk found: sda, sdb, ...
	Name func() string
	// Log receives errors; Info what was found.
	Log, Info func(format string, args ...any)
}

// Controller is one HBA.
type Controller struct {
	addr  string // PCI address, for logs
	regs  pci.Region
	cap   uint32
	dma   DMA
	log   func(format string, args ...any)
	info  func(format string, args ...any)
	irq   pci.IRQ
	kind  pci.IntrKind
	ports []*Disk // by port number; nil where no disk
	disks []*Disk // in port order
	// wait sleeps between polls of a register during bring-up and
	// recovery (time.Sleep; shortened by tests).
	wait func(time.Duration)
	mu   sync.Mutex // serializes register writes of GHC and IS
}

// New resets the HBA, brings up its ports and identifies their disks.
func New(d *pci.Device, p pci.Platform, cfg Config) (*Controller, error) {
	bar := d.BARs[5]
	if bar.IO || bar.Size < portBase {
		return nil, fmt.Errorf("ahci %s: BAR5 (ABAR) is not a memory BAR of at least %d bytes", d.Addr, portBase)
	}
	regs, err := p.Map(bar)
	if err != nil {
		return nil, err
	}
	c := &Controller{addr: d.Addr.String(), regs: regs, dma: cfg.DMA, log: cfg.Log, info: cfg.Info, wait: time.Sleep}
	if c.log == nil {
		c.log = func(string, ...any) {}
	}
	if c.info == nil {
		c.info = func(string, ...any) {}
	}
	d.SetCommand(pci.CmdMemory|pci.CmdBusMaster, 0)
	if err := c.reset(); err != nil {
		return nil, err
	}
	c.kind = pci.INTx
	kind, irqs, err := d.Interrupts(p, 1)
	if err != nil {
		return nil, fmt.Errorf("ahci %s: %v", c.addr, err)
	}
	c.kind, c.irq = kind, irqs[0]

	nports := int(c.cap&capNP) + 1
	pi := c.regs.Read32(regPI)
	// The ports come up together: most of the time goes in waiting
	// for links, the longest on ports with nothing attached.
	c.ports = make([]*Disk, 32)
	errs := make([]error, 32)
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		if pi&(1<<i) == 0 {
			continue
		}
		if i >= nports || uint64(portBase+(i+1)*portSize) > bar.Size {
			c.log("ahci %s: port %d implemented but outside CAP.NP (%d ports) or ABAR; ignored", c.addr, i, nports)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.ports[i], errs[i] = c.startPort(i)
		}()
	}
	wg.Wait()
	var found []*Disk
	for i, k := range c.ports {
		if errs[i] != nil {
			c.log("ahci %s: port %d: %v", c.addr, i, errs[i])
		}
		if k != nil {
			found = append(found, k)
		}
	}
	c.regs.Write32(regIS, 0xffffffff)
	c.regs.Write32(regGHC, ghcAE|ghcIE)
	go c.interrupts()
	for _, k := range found {
		if err := k.identify(cfg.Name); err != nil {
			c.log("ahci %s: port %d: %v", c.addr, k.port, err)
			k.stop()
			continue
		}
		c.disks = append(c.disks, k)
	}
	return c, nil
}

// Disks returns the disks found, in port order.
func (c *Controller) Disks() []*Disk { return c.disks }

// Interrupt is how the HBA interrupts: MSI or INTx.
func (c *Controller) Interrupt() pci.IntrKind { return c.kind }

// reset takes the HBA from the firmware (BIOS/OS handoff, §10.6), resets
// it and enables AHCI mode (§10.4.3).
func (c *Controller) reset() error {
	c.regs.Write32(regGHC, ghcAE)
	if c.regs.Read32(regCAP2)&cap2BOH != 0 {
		c.regs.Write32(regBOHC, c.regs.Read32(regBOHC)|bohcOOS)
		if !c.poll(2*time.Second, func() bool { return c.regs.Read32(regBOHC)&bohcBOS == 0 }) {
			c.log("ahci %s: firmware did not release the HBA; taking it anyway", c.addr)
		}
	}
	c.regs.Write32(regGHC, ghcAE|ghcHR)
	if !c.poll(time.Second, func() bool { return c.regs.Read32(regGHC)&ghcHR == 0 }) {
		return fmt.Errorf("ahci %s: HBA reset did not finish", c.addr)
	}
	c.regs.Write32(regGHC, ghcAE)
	if c.regs.Read32(regGHC)&ghcAE == 0 {
		return fmt.Errorf("ahci %s: AHCI mode cannot be enabled", c.addr)
	}
	c.cap = c.regs.Read32(regCAP)
	vs := c.regs.Read32(regVS)
	c.info("ahci %s: AHCI %d.%d, %d ports, %d command slots, NCQ %v, 64-bit DMA %v", c.addr,
		vs>>16, vs>>8&0xff, c.cap&capNP+1, (c.cap>>8)&0x1f+1, c.cap&capSNCQ != 0, c.cap&capS64A != 0)
	return nil
}

// poll calls ok until it reports true or limit passes.
func (c *Controller) poll(limit time.Duration, ok func() bool) bool {
	step := time.Millisecond
	for waited := time.Duration(0); ; waited += step {
		if ok() {
			return true
		}
		if waited >= limit {
			return false
		}
		c.wait(step)
	}
}

// interrupts is the HBA's interrupt goroutine: each wake-up services the
// ports IS names and every port with commands outstanding (an event
// that lands between a port's PxIS being cleared and IS being cleared
// raises no new interrupt on some HBAs), then clears IS, and goes round
// again at once if a port raised a new event meanwhile.
func (c *Controller) interrupts() {
	for {
		if err := c.irq.Wait(); err != nil {
			c.log("ahci %s: interrupt: %v", c.addr, err)
			for _, k := range c.ports {
				if k != nil {
					k.failAll(err)
				}
			}
			return
		}
		// Bounded, so a port that raises events without end cannot
		// keep this goroutine from ever sleeping.
		for round, again := 0, true; again && round < 64; round++ {
			is := c.regs.Read32(regIS)
			for i, k := range c.ports {
				if k != nil && !k.shut.Load() && (is&(1<<i) != 0 || k.busy()) {
					k.service()
				}
			}
			c.regs.Write32(regIS, is)
			again = false
			for _, k := range c.ports {
				if k != nil && !k.shut.Load() && k.pending() {
					again = true
				}
			}
		}
	}
}
