package pci

import (
	"bytes"
	"fmt"
)

// ProcDevices is the text of /proc/bus/pci/devices in Linux's format
// (drivers/pci/proc.c): per function, bus and devfn, vendor and device,
// IRQ, then the seven resources (BARs 0-5 and the expansion ROM) as
// start address ORed with the BAR's low flag bits, their sizes, and the
// bound driver's name. The expansion ROM is not sized here (shown as 0);
// IRQ is the firmware's interrupt line.
func (b *Bus) ProcDevices() []byte {
	var w bytes.Buffer
	for _, d := range b.Devices() {
		fmt.Fprintf(&w, "%02x%02x\t%04x%04x\t%x", d.Bus, d.Dev<<3|d.Fn, d.Vendor, d.Device, d.IntLine)
		for i := 0; i < 7; i++ {
			var v uint64
			if i < 6 && d.BARs[i].Size != 0 {
				v = d.BARs[i].Addr | d.BARs[i].flags()
			}
			fmt.Fprintf(&w, "\t%16x", v)
		}
		for i := 0; i < 7; i++ {
			var v uint64
			if i < 6 {
				v = d.BARs[i].Size
			}
			fmt.Fprintf(&w, "\t%16x", v)
		}
		w.WriteByte('\t')
		if drv := b.Driver(d); drv != nil {
			w.WriteString(drv.Name)
		}
		w.WriteByte('\n')
	}
	return w.Bytes()
}

// flags are the BAR register's low bits as Linux keeps them.
func (b BAR) flags() uint64 {
	if b.IO {
		return 1
	}
	var f uint64
	if b.Mem64 {
		f |= 4
	}
	if b.Prefetch {
		f |= 8
	}
	return f
}
