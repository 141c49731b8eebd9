package main

// The PCI bus: configuration space through ECAM when the ACPI MCFG table
// describes it (q35), else the legacy port mechanism (pc); memory BARs
// through the direct map's uncached PCI hole; interrupts as the machine
// layer's vectors.

import (
	"fmt"
	"syscall"
	"unsafe"

	"shortbread/kernel/blk"
	"shortbread/kernel/drivers/virtio"
	virtioblk "shortbread/kernel/drivers/virtio/blk"

	"shortbread/kernel/drivers/pci"
	"shortbread/kernel/machine"
)

// Device memory is reached through the direct map, which is uncached
// from the end of the RAM below 4 GiB to 4 GiB (the PCI hole, with q35's
// ECAM window). A 64-bit BAR the firmware put above the direct map (OVMF
// puts QEMU's there) gets uncached pages added to the direct map at boot
// (machine.MapDevice); BARs are never moved.
func inDeviceWindow(addr, size uint64) bool {
	return addr >= uint64(machine.DeviceMemStart()) && addr+size <= 4<<30 && addr+size > addr
}

type pciPlatform struct{ k *kernel }

func (p pciPlatform) Map(b pci.BAR) (pci.Region, error) {
	if b.IO || b.Size == 0 {
		return nil, fmt.Errorf("pci: not a memory BAR")
	}
	if !inDeviceWindow(b.Addr, b.Size) {
		if err := machine.MapDevice(b.Addr, b.Size); err != nil {
			return nil, fmt.Errorf("pci: BAR at %#x size %#x: outside the uncached window %#x-4G and cannot be mapped: %v",
				b.Addr, b.Size, machine.DeviceMemStart(), err)
		}
	}
	return pci.MMIO{Base: machine.PhysAddr(uintptr(b.Addr)), Size: uintptr(b.Size)}, nil
}

// AllocMSI aims the message at cpu's local APIC, or at the boot CPU's
// when cpu is not one the kernel started or its APIC ID does not fit a
// message's 8-bit destination (x2APIC IDs above 255 need interrupt
// remapping, which Shortbread does not set up).
func (p pciPlatform) AllocMSI(cpu int) (pci.IRQ, uint64, uint32, error) {
	apic := machine.BootAPICID()
	if cpu >= 0 && cpu < len(p.k.cpuAPIC) && p.k.cpuAPIC[cpu] <= 0xff {
		apic = p.k.cpuAPIC[cpu]
	}
	irq, addr, data, err := machine.AllocMSI(apic)
	if err != nil {
		return nil, 0, 0, err // not a nil *machine.Interrupt in the interface
	}
	return irq, addr, data, nil
}

// INTx opens the pin the firmware routed the device's INTx to (the
// interrupt line register, an ISA IRQ number; ACPI _PRT is not read),
// level-triggered, with the polarity of the MADT's override for that IRQ
// (QEMU's pc and q35 both declare active high).
func (p pciPlatform) INTx(d *pci.Device) (pci.IRQ, error) {
	line := d.IntLine
	if line == 0 || line >= 16 {
		return nil, fmt.Errorf("pci: %s: no usable interrupt line (%d)", d.Addr, line)
	}
	gsi, flags := uint32(line), uint16(0)
	if p.k.madt != nil {
		g, f := p.k.madt.ISAIRQToGSI(line)
		gsi, flags = g, uint16(f)
	}
	mode := machine.IRQLevel
	if flags&3 == 3 {
		mode |= machine.IRQActiveLow
	}
	irq, err := machine.OpenInterrupt(int(gsi), mode)
	if err != nil {
		return nil, err
	}
	return irq, nil
}

// startPCI finds the PCI devices and binds the drivers.
func (k *kernel) startPCI() {
	var cfg pci.Config
	how := "port I/O"
	if k.tables != nil {
		if regs, err := k.tables.MCFG(); err == nil {
			for _, r := range regs {
				size := (uint64(r.EndBus) + 1) << 20
				if r.Segment != 0 || !inDeviceWindow(r.Base, size) {
					k.log.Warnf("pci: ECAM region %+v outside the uncached window (from %#x); not used", r, machine.DeviceMemStart())
					continue
				}
				cfg = &pci.ECAM{Mem: pci.MMIO{Base: machine.PhysAddr(uintptr(r.Base)), Size: uintptr(size)},
					Start: r.StartBus, End: r.EndBus}
				how = fmt.Sprintf("ECAM at %#x", r.Base)
				break
			}
		}
	}
	if cfg == nil {
		cfg = &pci.PortConfig{P: pci.ArchPorts{}}
	}
	k.blocks = blk.NewDisks(k.log.Infof, k.log.Warnf)
	bus, notes := pci.NewBus(cfg, pciPlatform{k})
	for _, n := range notes {
		k.log.Warnf("%s", n)
	}
	k.pci = bus
	k.log.Infof("pci: %d functions through %s", len(bus.Devices()), how)
	for _, d := range bus.Devices() {
		k.log.Debugf("pci: %s", d)
	}
	for _, drv := range pciDrivers(k) {
		for _, line := range bus.Register(drv) {
			k.log.Infof("%s", line)
		}
	}
}

// pciDrivers are the drivers offered the devices found.
func pciDrivers(k *kernel) []*pci.Driver {
	return append([]*pci.Driver{k.virtioBlkDriver(), k.ahciDriver(), k.nvmeDriver()}, k.netDrivers()...)
}

// virtioMajor is the block major Linux's virtio-blk gets (dynamic there,
// 254 on a Debian guest); each disk has 16 minors.
const virtioMajor = 254

func (k *kernel) virtioBlkDriver() *pci.Driver {
	n := 0
	return &pci.Driver{
		Name: "virtio-pci", // the PCI driver Linux binds virtio devices to
		IDs:  virtioblk.IDs,
		Probe: func(d *pci.Device, p pci.Platform) error {
			if n >= 26 {
				return fmt.Errorf("too many disks")
			}
			name := "vd" + string(rune('a'+n))
			disk, err := virtioblk.New(d, p, virtioblk.Config{Name: name, DMA: frameDMA{}, Log: k.log.Errorf,
				Queues: machine.NumCPU(), CPU: machine.CurrentCPU, BootCPUIRQs: k.opts["virtio_irqs"] != "percpu"})
			if err != nil {
				return err
			}
			k.blocks.Add(disk, virtioMajor, uint32(16*n), 16)
			n++
			kind, vecs := disk.Interrupts()
			k.log.Infof("%s: %d sectors of %d bytes (%d MiB), %d request queues on %d %v vectors",
				name, disk.Sectors(), disk.SectorSize(), blk.Size(disk)>>20, disk.Queues(), vecs, kind)
			return nil
		},
	}
}

// frameDMA gives drivers physical frames (outside the Go heap, so the
// collector never scans or moves them) reached through the direct map.
type frameDMA struct{}

func (frameDMA) Alloc() (virtio.Page, error) {
	pa := machine.AllocFrame(0) // kernel memory: the reserve is for it
	if pa == 0 {
		return virtio.Page{}, syscall.ENOMEM
	}
	return virtio.Page{Phys: uint64(pa), Mem: unsafe.Slice((*byte)(machine.PhysPointer(pa)), virtio.PageSize)}, nil
}

func (frameDMA) Free(p virtio.Page) { machine.FreeFrame(uintptr(p.Phys)) }
