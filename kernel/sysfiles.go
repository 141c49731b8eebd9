package main

// The sysfs instance: what Linux has under /sys that programs read, in a
// read-only procfs tree. The NUMA nodes are in nodes.go; the PCI
// functions are here.

import (
	"strings"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/drivers/pci"
	"shortbread/kernel/fs/procfs"
)

// newSys makes a sysfs instance: the one at /sys, and any mount(2) makes.
func (k *kernel) newSys() *procfs.FS {
	fs := procfs.New(linux.MakeDev(0, 7))
	k.addNodes(fs)
	if k.pci != nil {
		addPCI(fs, k.pci.Sysfs())
	}
	return fs
}

// addPCI lays the functions out as Linux does: each one's directory
// under /sys/devices/pci0000:00 (below the bridges leading to it), a
// link to it in /sys/bus/pci/devices, and, when a driver is bound, a
// driver link to /sys/bus/pci/drivers/NAME, which links back to each of
// its functions. busybox lspci needs the links in /sys/bus/pci/devices
// to be links: it treats a directory there as one to walk into, not as
// a device. The links are relative, as Linux's are, so they resolve
// wherever sysfs is mounted.
func addPCI(fs *procfs.FS, devs []pci.SysDevice) {
	for _, d := range devs {
		dir := "devices/" + d.Path
		for _, f := range d.Files {
			data := f.Data
			fs.AddFile(dir+"/"+f.Name, func() []byte { return data }, nil)
		}
		fs.AddSymlink(dir+"/subsystem", toRoot(dir)+"bus/pci")
		fs.AddSymlink("bus/pci/devices/"+d.Name, toRoot("bus/pci/devices")+dir)
		if d.Driver != "" {
			drv := "bus/pci/drivers/" + d.Driver
			fs.AddSymlink(dir+"/driver", toRoot(dir)+drv)
			fs.AddSymlink(drv+"/"+d.Name, toRoot(drv)+dir)
		}
	}
}

// toRoot is the relative path from directory dir (under /sys) back to
// /sys: a "../" per component.
func toRoot(dir string) string {
	return strings.Repeat("../", strings.Count(dir, "/")+1)
}
