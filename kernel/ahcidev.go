package main

// SATA disks behind AHCI controllers, as /dev/sda, /dev/sdb, ...

import (
	"fmt"
	"syscall"
	"unsafe"

	"shortbread/kernel/blk"
	"shortbread/kernel/drivers/ahci"
	"shortbread/kernel/drivers/pci"
	"shortbread/kernel/machine"
)

// sdMajor is Linux's SCSI disk major: 16 minors a disk, so sda..sdp.
const sdMajor = 8

// ahciDriver binds every AHCI controller (by class: vendors' device IDs
// are legion) and registers the disks on its ports, named in order
// across controllers as Linux names its sd disks.
func (k *kernel) ahciDriver() *pci.Driver {
	n := 0
	return &pci.Driver{
		Name:  "ahci", // as Linux's driver is called
		IDs:   ahci.IDs,
		Class: ahci.ClassAHCI,
		Probe: func(d *pci.Device, p pci.Platform) error {
			start := n
			c, err := ahci.New(d, p, ahci.Config{DMA: lowFrameDMA{}, Log: k.log.Errorf, Info: k.log.Infof,
				Name: func() string {
					name := fmt.Sprintf("sd%c", 'a'+n)
					n++
					return name
				}})
			if err != nil {
				return err
			}
			for _, disk := range c.Disks() {
				i := start
				start++
				if i >= 16 {
					k.log.Warnf("%s: more than 16 SCSI disks; no device number, not listed", disk.Name())
					continue
				}
				k.blocks.Add(disk, sdMajor, uint32(16*i), 16)
			}
			return nil
		},
	}
}

// lowFrameDMA is frameDMA for the AHCI driver, which may need frames
// below 4 GiB (an HBA without 64-bit addressing): frames above are set
// aside until one below turns up, then given back.
type lowFrameDMA struct{}

func (lowFrameDMA) Alloc(low bool) (ahci.Page, error) {
	var above []uintptr
	defer func() {
		for _, pa := range above {
			machine.FreeFrame(pa)
		}
	}()
	for len(above) < 1024 {
		pa := machine.AllocFrame(0) // kernel memory: the reserve is for it
		if pa == 0 {
			return ahci.Page{}, syscall.ENOMEM
		}
		if low && uint64(pa)+ahci.PageSize > 1<<32 {
			above = append(above, pa)
			continue
		}
		return ahci.Page{Phys: uint64(pa), Mem: unsafe.Slice((*byte)(machine.PhysPointer(pa)), ahci.PageSize)}, nil
	}
	return ahci.Page{}, syscall.ENOMEM
}

func (lowFrameDMA) Free(p ahci.Page) { machine.FreeFrame(uintptr(p.Phys)) }

var _ blk.Device = (*ahci.Disk)(nil)
