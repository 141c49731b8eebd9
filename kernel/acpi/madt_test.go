package acpi

import (
	"errors"
	"reflect"
	"testing"
)

func TestParseMADTEntryTypes(t *testing.T) {
	b := table("APIC", 5, madtBody(0xfee00000, 0,
		lapic(0, 0, 1),                 // enabled
		lapic(1, 2, 0),                 // absent socket: dropped
		lapic(2, 4, 2),                 // online capable, not yet enabled
		lapic(3, 6, 3),                 // both bits: enabled
		x2apic(0x100, 1, 4),            // x2APIC ID beyond 8 bits
		x2apic(0x101, 0, 5),            // dropped
		lapicAddrOverride(0x1fee00000), // must replace the 32-bit field
		[]byte{0x7f, 5, 1, 2, 3},       // unknown type: skipped by length
		lapicNMI(1, 0x000d, 0),
		x2NMI(0x0005, 0xffffffff, 1),
		ioapic(2, 0xfec00000, 0),
		ioapic(3, 0xfec01000, 24),
		iso(0, 2, 0),
	))
	m, err := ParseMADT(b)
	if err != nil {
		t.Fatal(err)
	}
	if m.LocalAPICAddr != 0x1fee00000 || m.PCATCompat {
		t.Errorf("LocalAPICAddr %#x PCATCompat %v", m.LocalAPICAddr, m.PCATCompat)
	}
	wantCPUs := []CPU{
		{ProcessorID: 0, APICID: 0, Enabled: true},
		{ProcessorID: 2, APICID: 4, Enabled: false},
		{ProcessorID: 3, APICID: 6, Enabled: true},
		{ProcessorID: 4, APICID: 0x100, Enabled: true, X2APIC: true},
	}
	if !reflect.DeepEqual(m.CPUs, wantCPUs) {
		t.Errorf("CPUs = %+v\nwant %+v", m.CPUs, wantCPUs)
	}
	wantNMIs := []LocalNMI{
		{ProcessorID: 1, Flags: 0x000d, LINT: 0},
		{ProcessorID: 0xffffffff, AllProcessors: true, Flags: 0x0005, LINT: 1},
	}
	if !reflect.DeepEqual(m.NMIs, wantNMIs) {
		t.Errorf("NMIs = %+v\nwant %+v", m.NMIs, wantNMIs)
	}
	if len(m.IOAPICs) != 2 || m.IOAPICs[1] != (IOAPIC{ID: 3, Addr: 0xfec01000, GSIBase: 24}) {
		t.Errorf("IOAPICs = %+v", m.IOAPICs)
	}
	for gsi, want := range map[uint32]uint8{0: 2, 23: 2, 24: 3, 200: 3} {
		if io, ok := m.IOAPICFor(gsi); !ok || io.ID != want {
			t.Errorf("IOAPICFor(%d) = %+v, %v; want ID %d", gsi, io, ok, want)
		}
	}
	if _, ok := (&MADT{IOAPICs: []IOAPIC{{GSIBase: 16}}}).IOAPICFor(3); ok {
		t.Error("IOAPICFor found an IO APIC for a GSI below every base")
	}
}

func TestParseMADTErrors(t *testing.T) {
	good := madtBody(0xfee00000, 1, lapic(0, 0, 1))
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"Signature", table("APIX", 1, good), ErrSignature},
		{"ShortHeader", table("APIC", 1, good)[:30], ErrLength},
		{"NoFixedFields", table("APIC", 1, good[:4]), ErrLength},
		{"LengthPastSlice", table("APIC", 1, good)[:50], ErrLength},
		{"ZeroLengthEntry", table("APIC", 1, append(append([]byte{}, good...), 0, 0)), ErrLength},
		{"OneByteEntryHeader", table("APIC", 1, append(append([]byte{}, good...), 0)), ErrLength},
		{"EntryPastEnd", table("APIC", 1, append(append([]byte{}, good...), 1, 12, 0, 0)), ErrLength},
		{"LocalAPICTooShort", table("APIC", 1, madtBody(0, 0, []byte{0, 6, 0, 0, 1, 0})), ErrLength},
		{"IOAPICTooShort", table("APIC", 1, madtBody(0, 0, ioapic(1, 2, 3)[:8])), ErrLength},
		{"X2APICTooShort", table("APIC", 1, madtBody(0, 0, []byte{9, 8, 0, 0, 0, 0, 0, 0})), ErrLength},
		{"OverrideTooShort", table("APIC", 1, madtBody(0, 0, []byte{2, 8, 0, 0, 0, 0, 0, 0})), ErrLength},
		{"AddrOverrideTooShort", table("APIC", 1, madtBody(0, 0, []byte{5, 8, 0, 0, 0, 0, 0, 0})), ErrLength},
	}
	for _, tt := range tests {
		if _, err := ParseMADT(tt.b); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestParseMADTIgnoresBytesPastLength(t *testing.T) {
	b := table("APIC", 1, madtBody(0, 0, lapic(0, 0, 1)))
	b = append(b, 0, 0, 0) // garbage after the table must not be parsed as entries
	m, err := ParseMADT(b)
	if err != nil || len(m.CPUs) != 1 {
		t.Errorf("got %+v, %v", m, err)
	}
}

func TestINTIFlags(t *testing.T) {
	tests := []struct {
		f         INTIFlags
		low, leve bool
	}{
		{0x0, false, false}, // conforms: ISA is edge, active high
		{0x1, false, false}, // active high
		{0x3, true, false},  // active low
		{0x4, false, false}, // edge
		{0xc, false, true},  // level
		{0xd, false, true},  // QEMU's PCI IRQ override
		{0xf, true, true},
	}
	for _, tt := range tests {
		if tt.f.ActiveLow() != tt.low || tt.f.LevelTriggered() != tt.leve {
			t.Errorf("%#x: ActiveLow %v LevelTriggered %v, want %v %v", tt.f, tt.f.ActiveLow(), tt.f.LevelTriggered(), tt.low, tt.leve)
		}
	}
}

func TestISAIRQToGSI(t *testing.T) {
	m := &MADT{Overrides: []Override{
		{Bus: 0, Source: 0, GSI: 2},
		{Bus: 0, Source: 9, GSI: 20, Flags: 0xf},
		{Bus: 1, Source: 4, GSI: 30}, // not ISA: must not apply to IRQ 4
	}}
	tests := []struct {
		irq   uint8
		gsi   uint32
		flags INTIFlags
	}{{0, 2, 0}, {1, 1, 0}, {4, 4, 0}, {9, 20, 0xf}}
	for _, tt := range tests {
		if gsi, f := m.ISAIRQToGSI(tt.irq); gsi != tt.gsi || f != tt.flags {
			t.Errorf("IRQ %d -> %d %#x, want %d %#x", tt.irq, gsi, f, tt.gsi, tt.flags)
		}
	}
}

// FuzzParseMADT checks that no input makes the MADT parser panic or
// loop, that failures are classified, and that successes report no
// more structures than the table has room for.
func FuzzParseMADT(f *testing.F) {
	f.Add(qemuLikeMADT())
	f.Add(table("APIC", 1, madtBody(0, 0, x2apic(1, 1, 1), x2NMI(0, 1, 1), lapicAddrOverride(1))))
	f.Add(table("APIC", 1, madtBody(0, 0, []byte{0, 0})))
	for _, name := range []string{"qemu-pc.bin", "qemu-q35.bin", "qemu-ovmf.bin"} {
		if c, err := loadCapture(name); err == nil {
			if b := c.table("APIC"); b != nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMADT(b)
		if err != nil {
			if !errors.Is(err, ErrLength) && !errors.Is(err, ErrSignature) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		room := (int(m.Header.Length) - madtEntriesStart) / 6
		if n := len(m.CPUs) + len(m.IOAPICs) + len(m.Overrides) + len(m.NMIs); n > room {
			t.Fatalf("%d structures from a %d-byte table", n, m.Header.Length)
		}
		for _, c := range m.CPUs {
			if !c.X2APIC && (c.APICID > 0xff || c.ProcessorID > 0xff) {
				t.Fatalf("xAPIC CPU with wide IDs: %+v", c)
			}
		}
	})
}

func TestStartable(t *testing.T) {
	m := &MADT{CPUs: []CPU{
		{ProcessorID: 0, APICID: 0, Enabled: true},
		{ProcessorID: 1, APICID: 2, Enabled: false}, // online capable only
		{ProcessorID: 2, APICID: 4, Enabled: true},
		{ProcessorID: 2, APICID: 4, Enabled: true, X2APIC: true}, // listed twice
		{ProcessorID: 3, APICID: 0xFF, Enabled: true, X2APIC: true},
		{ProcessorID: 4, APICID: 0x100, Enabled: true, X2APIC: true},
		{ProcessorID: 5, APICID: 0xFFFFFFFF, Enabled: true, X2APIC: true},
	}}
	ids := func(cs []CPU) (r []uint32) {
		for _, c := range cs {
			r = append(r, c.APICID)
		}
		return r
	}
	got, skipped := m.Startable(true)
	if want := []uint32{0, 4, 0xFF, 0x100}; !reflect.DeepEqual(ids(got), want) || skipped != 0 {
		t.Errorf("x2APIC: IDs %v skipped %d, want %v and 0", ids(got), skipped, want)
	}
	got, skipped = m.Startable(false)
	if want := []uint32{0, 4}; !reflect.DeepEqual(ids(got), want) || skipped != 2 {
		t.Errorf("xAPIC: IDs %v skipped %d, want %v and 2", ids(got), skipped, want)
	}
}
