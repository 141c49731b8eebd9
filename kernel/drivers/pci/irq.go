package pci

import (
	"errors"
	"fmt"
)

// IRQ is an interrupt a driver goroutine waits for.
type IRQ interface {
	// Wait blocks until the interrupt has fired since the last Wait.
	Wait() error
	Close() error
}

// Platform is what the PCI layer needs from the machine: uncached
// mappings of memory BARs and interrupt vectors.
type Platform interface {
	// Map returns the registers of memory BAR b.
	Map(b BAR) (Region, error)
	// AllocMSI returns a new message-signalled interrupt and the
	// message (address, data) a device writes to raise it on CPU cpu
	// (numbered as the kernel numbers them; 0 is the boot CPU). A
	// platform that cannot aim at that CPU aims elsewhere: the
	// interrupt still works, only the CPU it lands on differs.
	AllocMSI(cpu int) (irq IRQ, addr uint64, data uint32, err error)
	// INTx returns d's legacy interrupt pin as routed by the firmware.
	INTx(d *Device) (IRQ, error)
}

// IntrKind says how a device interrupts.
type IntrKind int

const (
	INTx IntrKind = iota
	MSI
	MSIX
)

func (k IntrKind) String() string { return [...]string{"INTx", "MSI", "MSI-X"}[k] }

// ErrNoInterrupt: the device has neither MSI-X, MSI nor an INTx pin.
var ErrNoInterrupt = errors.New("pci: device has no interrupt")

// Interrupts sets d up to interrupt: with MSI-X, up to n vectors (entry i
// of the table raises irqs[i]; fewer than n when the table or the free
// vectors run short), else one MSI, else its INTx pin. Memory decoding
// is turned on (the MSI-X table lives in a BAR). Messages go to the boot
// CPU, as the I/O APIC's pins do.
func (d *Device) Interrupts(p Platform, n int) (IntrKind, []IRQ, error) {
	return d.InterruptsOn(p, make([]int, max(n, 0)))
}

// OnePerCPU aims n vectors one at each CPU, vector i at CPU i: the
// placement for InterruptsOn of a driver with a queue per CPU whose
// requests go to queue cpu % n, so that a completion arrives at the CPU
// that submitted the request and wakes its waiter there, not across
// CPUs (with fewer queues than CPUs, at the first CPU of those sharing
// the queue).
func OnePerCPU(n int) []int {
	cpus := make([]int, n)
	for i := range cpus {
		cpus[i] = i
	}
	return cpus
}

// InterruptsOn is Interrupts for len(cpus) vectors, MSI-X entry i aimed
// at CPU cpus[i] (a driver with a queue per CPU gets each queue's
// completions on the CPU that submits to it). The single MSI, the
// fallback, goes to cpus[0]; an INTx pin goes where the platform routes
// it.
func (d *Device) InterruptsOn(p Platform, cpus []int) (IntrKind, []IRQ, error) {
	if off, ok := d.Cap(CapMSIX); ok && len(cpus) > 0 {
		irqs, err := d.msix(p, off, cpus)
		if err == nil {
			return MSIX, irqs, nil
		}
	}
	if off, ok := d.Cap(CapMSI); ok {
		cpu := 0
		if len(cpus) > 0 {
			cpu = cpus[0]
		}
		irq, err := d.msi(p, off, cpu)
		if err == nil {
			return MSI, []IRQ{irq}, nil
		}
	}
	if d.IntPin == 0 {
		return INTx, nil, ErrNoInterrupt
	}
	irq, err := p.INTx(d)
	if err != nil {
		return INTx, nil, err
	}
	d.SetCommand(0, CmdINTxDisable)
	return INTx, []IRQ{irq}, nil
}

// MSI-X capability (PCI Local Bus 3.0 §6.8.2).
const (
	msixEnable   = 1 << 15
	msixMaskAll  = 1 << 14
	msixEntry    = 16
	msixVecCtrl  = 12
	msixEntryOff = 4
)

func (d *Device) msix(p Platform, off uint16, cpus []int) ([]IRQ, error) {
	ctrl := uint16(d.Read(off+2, 2))
	size := int(ctrl&0x7ff) + 1
	n := min(len(cpus), size)
	tbl := d.Read(off+msixEntryOff, 4)
	bir, toff := int(tbl&7), uint64(tbl&^7)
	if bir > 5 || d.BARs[bir].Size == 0 || d.BARs[bir].IO || toff+uint64(size)*msixEntry > d.BARs[bir].Size {
		return nil, fmt.Errorf("pci: %s MSI-X table (BAR%d + %#x, %d entries) outside its BAR", d.Addr, bir, toff, size)
	}
	r, err := p.Map(d.BARs[bir])
	if err != nil {
		return nil, err
	}
	d.SetCommand(CmdMemory, 0)
	// Enabled but masked while the entries are written.
	d.Write(off+2, 2, uint32(ctrl|msixEnable|msixMaskAll))
	var irqs []IRQ
	for i := 0; i < n; i++ {
		irq, addr, data, err := p.AllocMSI(cpus[i])
		if err != nil {
			if i == 0 {
				d.Write(off+2, 2, uint32(ctrl&^(msixEnable|msixMaskAll)))
				return nil, err
			}
			break
		}
		e := uint32(toff) + uint32(i)*msixEntry
		r.Write32(e, uint32(addr))
		r.Write32(e+4, uint32(addr>>32))
		r.Write32(e+8, data)
		r.Write32(e+msixVecCtrl, 0)
		irqs = append(irqs, irq)
	}
	d.SetCommand(CmdINTxDisable, 0)
	d.Write(off+2, 2, uint32(ctrl&^msixMaskAll|msixEnable))
	return irqs, nil
}

// MSI capability (PCI Local Bus 3.0 §6.8.1): one vector, aimed at cpu.
func (d *Device) msi(p Platform, off uint16, cpu int) (IRQ, error) {
	irq, addr, data, err := p.AllocMSI(cpu)
	if err != nil {
		return nil, err
	}
	ctrl := uint16(d.Read(off+2, 2))
	d.Write(off+4, 4, uint32(addr))
	dataOff, maskOff := off+8, off+12
	if ctrl&(1<<7) != 0 { // 64-bit address
		d.Write(off+8, 4, uint32(addr>>32))
		dataOff, maskOff = off+12, off+16
	}
	d.Write(dataOff, 2, data)
	if ctrl&(1<<8) != 0 { // per-vector masking
		d.Write(maskOff, 4, 0)
	}
	d.SetCommand(CmdINTxDisable, 0)
	d.Write(off+2, 2, uint32(ctrl&^0x70|1)) // one vector, enabled
	return irq, nil
}
