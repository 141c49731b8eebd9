package acpi

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// capture is a memory image recorded from a real QEMU guest; see
// testdata/README.md for the format and how it was produced.
type capture struct {
	mem  *fakeMem
	rsdp []byte
}

func loadCapture(name string) (*capture, error) {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		return nil, err
	}
	c := &capture{mem: &fakeMem{}}
	for len(b) > 0 {
		if len(b) < 12 {
			return nil, fmt.Errorf("%s: truncated record header", name)
		}
		addr, n := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint32(b[8:])
		if uint64(len(b)-12) < uint64(n) {
			return nil, fmt.Errorf("%s: truncated record at %#x", name, addr)
		}
		data := b[12 : 12+n]
		if c.rsdp == nil {
			c.rsdp = data
		}
		c.mem.put(addr, data)
		b = b[12+n:]
	}
	return c, nil
}

// table returns the raw bytes of the first captured table with sig.
func (c *capture) table(sig string) []byte {
	for _, r := range c.mem.regions {
		if len(r.data) >= 4 && string(r.data[:4]) == sig {
			return r.data
		}
	}
	return nil
}

func TestQEMUCaptures(t *testing.T) {
	qemuOverrides := []Override{
		{Source: 0, GSI: 2, Flags: 0},
		{Source: 5, GSI: 5, Flags: 0xd},
		{Source: 9, GSI: 9, Flags: 0xd},
		{Source: 10, GSI: 10, Flags: 0xd},
		{Source: 11, GSI: 11, Flags: 0xd},
	}
	cpus := func(n int) []CPU {
		var c []CPU
		for i := 0; i < n; i++ {
			c = append(c, CPU{ProcessorID: uint32(i), APICID: uint32(i), Enabled: true})
		}
		return c
	}
	tests := []struct {
		file    string
		rev     uint8
		root    string
		sigs    []string
		cpus    int
		fadtLen uint32
	}{
		{"qemu-pc.bin", 0, "RSDT", []string{"FACP", "APIC", "HPET", "WAET"}, 4, 116},
		// 8 possible CPUs, 4 present: the disabled entries must be dropped.
		{"qemu-q35.bin", 0, "RSDT", []string{"FACP", "APIC", "HPET", "MCFG", "WAET"}, 4, 244},
		{"qemu-ovmf.bin", 2, "XSDT", []string{"FACP", "APIC", "HPET", "MCFG", "WAET", "BGRT"}, 2, 244},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c, err := loadCapture(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			tabs, err := FindTables(c.mem, c.rsdp)
			if err != nil {
				t.Fatal(err)
			}
			if len(tabs.Warnings) != 0 {
				t.Errorf("warnings: %v", tabs.Warnings)
			}
			if tabs.RSDP.Revision != tt.rev || tabs.Root.Signature != tt.root {
				t.Errorf("RSDP revision %d root %q, want %d %q", tabs.RSDP.Revision, tabs.Root.Signature, tt.rev, tt.root)
			}
			var sigs []string
			for _, e := range tabs.Entries {
				sigs = append(sigs, e.Signature)
			}
			if !reflect.DeepEqual(sigs, tt.sigs) {
				t.Errorf("tables %v, want %v", sigs, tt.sigs)
			}

			m, err := tabs.MADT()
			if err != nil {
				t.Fatal(err)
			}
			if m.LocalAPICAddr != 0xfee00000 || !m.PCATCompat {
				t.Errorf("LAPIC %#x PCAT %v", m.LocalAPICAddr, m.PCATCompat)
			}
			if !reflect.DeepEqual(m.CPUs, cpus(tt.cpus)) {
				t.Errorf("CPUs = %+v", m.CPUs)
			}
			if !reflect.DeepEqual(m.IOAPICs, []IOAPIC{{ID: 0, Addr: 0xfec00000, GSIBase: 0}}) {
				t.Errorf("IOAPICs = %+v", m.IOAPICs)
			}
			if !reflect.DeepEqual(m.Overrides, qemuOverrides) {
				t.Errorf("Overrides = %+v", m.Overrides)
			}
			if !reflect.DeepEqual(m.NMIs, []LocalNMI{{ProcessorID: 0xff, AllProcessors: true, LINT: 1}}) {
				t.Errorf("NMIs = %+v", m.NMIs)
			}
			if gsi, flags := m.ISAIRQToGSI(0); gsi != 2 || flags != 0 {
				t.Errorf("timer IRQ routed to GSI %d flags %#x", gsi, flags)
			}

			f, err := tabs.FADT()
			if err != nil {
				t.Fatal(err)
			}
			if f.Header.Length != tt.fadtLen || f.PM1aControlBlock != 0x604 || f.PM1bControlBlock != 0 ||
				f.PM1aEventBlock != 0x600 || f.PMTimerBlock != 0x608 || f.SCIInterrupt != 9 {
				t.Errorf("FADT = %+v", f)
			}
			s5, err := tabs.S5()
			if err != nil || s5 != (SleepType{}) {
				t.Errorf("S5 = %+v, %v; QEMU uses SLP_TYP 0", s5, err)
			}
		})
	}
}

// TestQEMUCaptureScan checks ScanRSDP against SeaBIOS's real placement
// of the RSDP in the BIOS area.
func TestQEMUCaptureScan(t *testing.T) {
	c, err := loadCapture("qemu-pc.bin")
	if err != nil {
		t.Fatal(err)
	}
	c.mem.zeroFill = true
	b, addr, err := ScanRSDP(c.mem)
	if err != nil || addr != 0xf59d0 || !reflect.DeepEqual(b, c.rsdp) {
		t.Errorf("ScanRSDP = %x at %#x, %v", b, addr, err)
	}
}
