package main

// NVMe controllers: each active namespace becomes a disk, nvme0n1,
// nvme0n2, ..., nvme1n1, with Linux's device numbers (block major 259,
// minors in probe order).

import (
	"fmt"

	"shortbread/kernel/blk"
	"shortbread/kernel/drivers/nvme"
	"shortbread/kernel/drivers/pci"
	"shortbread/kernel/machine"
)

// nvmeDriver claims every NVMe controller on the bus. NVMe is matched
// by class, as Linux does, so the ID table is made from the functions
// of that class the scan found.
func (k *kernel) nvmeDriver() *pci.Driver {
	var ids []pci.ID
	if k.pci != nil {
		for _, d := range k.pci.Devices() {
			if d.Class == nvme.ClassNVMe {
				ids = append(ids, pci.ID{Vendor: d.Vendor, Device: d.Device})
			}
		}
	}
	n := 0
	return &pci.Driver{
		Name: "nvme", // as Linux's driver is called
		IDs:  ids,
		Probe: func(d *pci.Device, p pci.Platform) error {
			if d.Class != nvme.ClassNVMe {
				return fmt.Errorf("not an NVMe controller (class %06x)", d.Class)
			}
			name := fmt.Sprintf("nvme%d", n)
			// Shadow doorbells stay off: under QEMU 10 a t_blk run
			// with four writers at once had I/O commands that never
			// completed (30 s timeouts, once on a fresh clone, not
			// reproduced) with them on, and the cause is not found yet.
			c, err := nvme.New(d, p, nvme.Config{Name: name, DMA: nvmeDMA{}, Log: k.log.Errorf,
				Queues: machine.NumCPU(), CPU: machine.CurrentCPU, NoShadowDoorbells: true,
				BootCPUIRQs: k.opts["nvme_irqs"] == "boot"})
			if err != nil {
				return err
			}
			n++
			kind, vecs := c.Interrupts()
			k.log.Infof("%s: %s (serial %s, firmware %s, NVMe %s), %d I/O queues on %d %v vectors, write cache %v, shadow doorbells %v",
				name, c.Model(), c.Serial(), c.Firmware(), c.Version(), c.Queues(), vecs, kind, c.VolatileCache(), c.ShadowDoorbells())
			if ok, ranges, per, most := c.Deallocate(); ok {
				k.log.Infof("%s: deallocate (discard): %d ranges of up to %d blocks a command, at most %d blocks (0: no limit)", name, ranges, per, most)
			}
			for _, ns := range c.Namespaces() {
				k.blocks.AddExt(ns) // 259:n, as Linux numbers NVMe namespaces
				k.log.Infof("%s: %d sectors of %d bytes (%d MiB)", ns.Name(), ns.Sectors(), ns.SectorSize(), blk.Size(ns)>>20)
			}
			return nil
		},
	}
}

// nvmeDMA is frameDMA for the NVMe driver.
type nvmeDMA struct{}

func (nvmeDMA) Alloc() (nvme.Page, error) {
	p, err := frameDMA{}.Alloc()
	return nvme.Page(p), err
}

func (nvmeDMA) Free(p nvme.Page) { machine.FreeFrame(uintptr(p.Phys)) }
