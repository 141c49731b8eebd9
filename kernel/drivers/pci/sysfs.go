package pci

import (
	"fmt"
	"strings"
)

// SysDevice is one function as Linux's sysfs shows it: a directory under
// /sys/devices, nested below the bridges that lead to it, and a symbolic
// link to that directory in /sys/bus/pci/devices. busybox lspci walks
// the links and reads only each one's uevent file.
type SysDevice struct {
	Name   string    // 0000:01:00.0: the link's name in /sys/bus/pci/devices
	Path   string    // pci0000:00/0000:00:1c.0/0000:01:00.0: the directory under /sys/devices
	Driver string    // the bound driver's name, "" if none
	Files  []SysFile // the attribute files in the directory
}

// SysFile is one attribute file and its contents.
type SysFile struct {
	Name string
	Data []byte
}

// Sysfs describes every function found, in bus order, with the driver
// bound now: the kernel binds drivers at boot, before /sys is mounted,
// and never unbinds them. The files are Linux's (drivers/pci/pci-sysfs.c
// for the IDs, pci_uevent in drivers/pci/pci-driver.c and dev_uevent in
// drivers/base/core.c for uevent) in its formats: the IDs in lowercase
// hex with 0x, uevent's in uppercase without and its class padded to
// four digits only, so a leading 0 goes (PCI_CLASS=20000 for a network
// card).
func (b *Bus) Sysfs() []SysDevice {
	devs := b.Devices()
	// A bridge's secondary bus names the functions below it.
	below := map[uint8]string{}
	out := make([]SysDevice, 0, len(devs))
	for _, d := range devs {
		parent, ok := below[d.Bus]
		if !ok {
			// Bus 0, or a bus the scan reached some other way (it
			// reaches buses only through bridges, seen before what is
			// behind them): under the host bridge's root.
			parent = "pci0000:00"
		}
		sd := SysDevice{Name: d.Addr.String(), Path: parent + "/" + d.Addr.String()}
		if d.Header == 1 {
			below[d.Secondary] = sd.Path
		}
		if drv := b.Driver(d); drv != nil {
			sd.Driver = drv.Name
		}
		sd.Files = d.sysFiles(sd.Driver)
		out = append(out, sd)
	}
	return out
}

func (d *Device) sysFiles(driver string) []SysFile {
	hex := func(width int, v uint32) []byte { return fmt.Appendf(nil, "0x%0*x\n", width, v) }
	modalias := fmt.Sprintf("pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X",
		d.Vendor, d.Device, d.SubVendor, d.SubDevice, uint8(d.Class>>16), uint8(d.Class>>8), uint8(d.Class))
	var ev strings.Builder
	if driver != "" {
		fmt.Fprintf(&ev, "DRIVER=%s\n", driver)
	}
	fmt.Fprintf(&ev, "PCI_CLASS=%04X\nPCI_ID=%04X:%04X\nPCI_SUBSYS_ID=%04X:%04X\nPCI_SLOT_NAME=%s\nMODALIAS=%s\n",
		d.Class, d.Vendor, d.Device, d.SubVendor, d.SubDevice, d.Addr, modalias)
	return []SysFile{
		{"class", hex(6, d.Class)},
		{"device", hex(4, uint32(d.Device))},
		{"modalias", []byte(modalias + "\n")},
		{"revision", hex(2, uint32(d.Revision))},
		{"subsystem_device", hex(4, uint32(d.SubDevice))},
		{"subsystem_vendor", hex(4, uint32(d.SubVendor))},
		{"uevent", []byte(ev.String())},
		{"vendor", hex(4, uint32(d.Vendor))},
	}
}
