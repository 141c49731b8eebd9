package pci_test

import (
	"encoding/binary"
	"strings"
	"testing"

	"shortbread/kernel/drivers/pci"
	"shortbread/kernel/drivers/pci/pcitest"
)

// sysFile returns the contents of file name of d, failing when d has none.
func sysFile(t *testing.T, d pci.SysDevice, name string) string {
	t.Helper()
	for _, f := range d.Files {
		if f.Name == name {
			return string(f.Data)
		}
	}
	t.Fatalf("%s has no %s file", d.Name, name)
	return ""
}

// TestSysfs checks the files Linux's sysfs has for each function, in its
// formats, on the simulated q35: the uevent lines busybox lspci parses,
// the ID files, where a function behind a bridge sits, and the subsystem
// IDs of bridges (from the SSVID capability, as Linux reads them).
func TestSysfs(t *testing.T) {
	cfg := pcitest.Q35()
	rp := cfg.Funcs[at(0, 0x1c, 0)]
	ssvid := make([]byte, 6)
	binary.LittleEndian.PutUint16(ssvid[2:], 0x1af4)
	binary.LittleEndian.PutUint16(ssvid[4:], 0x1100)
	rp.AddCap(pci.CapSSVID, ssvid)
	bus, _ := pci.NewBus(cfg, &platform{bars: map[uint64]*pcitest.Mem{}, limit: 8})
	bus.Register(&pci.Driver{
		Name:  "virtio-pci",
		IDs:   []pci.ID{{Vendor: 0x1af4, Device: 0x1042}},
		Probe: func(*pci.Device, pci.Platform) error { return nil },
	})
	devs := bus.Sysfs()
	if len(devs) != 8 {
		t.Fatalf("%d functions, want 8: %+v", len(devs), devs)
	}
	byName := map[string]pci.SysDevice{}
	for _, d := range devs {
		byName[d.Name] = d
	}

	host := byName["0000:00:00.0"]
	if host.Path != "pci0000:00/0000:00:00.0" || host.Driver != "" {
		t.Errorf("host bridge at %q, driver %q", host.Path, host.Driver)
	}
	for name, want := range map[string]string{
		"vendor":           "0x8086\n",
		"device":           "0x29c0\n",
		"class":            "0x060000\n",
		"revision":         "0x01\n",
		"subsystem_vendor": "0x0000\n",
		"subsystem_device": "0x0000\n",
		"modalias":         "pci:v00008086d000029C0sv00000000sd00000000bc06sc00i00\n",
		"uevent": "PCI_CLASS=60000\nPCI_ID=8086:29C0\nPCI_SUBSYS_ID=0000:0000\nPCI_SLOT_NAME=0000:00:00.0\n" +
			"MODALIAS=pci:v00008086d000029C0sv00000000sd00000000bc06sc00i00\n",
	} {
		if got := sysFile(t, host, name); got != want {
			t.Errorf("host bridge %s = %q, want %q", name, got, want)
		}
	}

	// A bound function: DRIVER= comes first, as Linux's dev_uevent
	// adds it before the bus's lines.
	blk := byName["0000:00:02.0"]
	if blk.Driver != "virtio-pci" {
		t.Errorf("virtio-blk driver %q", blk.Driver)
	}
	want := "DRIVER=virtio-pci\nPCI_CLASS=10000\nPCI_ID=1AF4:1042\nPCI_SUBSYS_ID=1AF4:1100\n" +
		"PCI_SLOT_NAME=0000:00:02.0\nMODALIAS=pci:v00001AF4d00001042sv00001AF4sd00001100bc01sc00i00\n"
	if got := sysFile(t, blk, "uevent"); got != want {
		t.Errorf("virtio-blk uevent\n%q\nwant\n%q", got, want)
	}
	if got := sysFile(t, blk, "subsystem_vendor") + sysFile(t, blk, "subsystem_device"); got != "0x1af4\n0x1100\n" {
		t.Errorf("virtio-blk subsystem files %q", got)
	}

	// Behind the root port: nested below it, as Linux's directories are.
	nic := byName["0000:01:00.0"]
	if nic.Path != "pci0000:00/0000:00:1c.0/0000:01:00.0" {
		t.Errorf("e1000e at %q", nic.Path)
	}
	if got := sysFile(t, nic, "uevent"); !strings.HasPrefix(got, "PCI_CLASS=20000\nPCI_ID=8086:10D3\n") {
		t.Errorf("e1000e (unbound) uevent %q", got)
	}
	if got := sysFile(t, nic, "class"); got != "0x020000\n" {
		t.Errorf("e1000e class %q", got)
	}
	if got := sysFile(t, byName["0000:00:1c.0"], "uevent"); !strings.Contains(got, "\nPCI_SUBSYS_ID=1AF4:1100\n") {
		t.Errorf("root port's subsystem IDs not from its SSVID capability: %q", got)
	}
	if got := sysFile(t, byName["0000:00:1f.2"], "class"); got != "0x010601\n" {
		t.Errorf("AHCI class %q", got)
	}
}

// TestSysfsCardBus checks a CardBus bridge's subsystem IDs come from its
// own registers (0x40, 0x42), where Linux reads them.
func TestSysfsCardBus(t *testing.T) {
	cfg := pcitest.New()
	cb := cfg.Add(at(0, 3, 0), 0x104c, 0xac56, 0x060700)
	cb.Space[0x0e] = 2
	binary.LittleEndian.PutUint16(cb.Space[0x40:], 0x1028)
	binary.LittleEndian.PutUint16(cb.Space[0x42:], 0x0139)
	bus, _ := pci.NewBus(cfg, &platform{})
	devs := bus.Sysfs()
	if len(devs) != 1 {
		t.Fatalf("%d functions", len(devs))
	}
	if got := sysFile(t, devs[0], "uevent"); !strings.Contains(got, "\nPCI_SUBSYS_ID=1028:0139\n") {
		t.Errorf("CardBus uevent %q", got)
	}
}
