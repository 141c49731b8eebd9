package acpi

import (
	"encoding/binary"
	"errors"
	"testing"
)

// fadtV3 builds a 244-byte ACPI 2.0+ FADT; x holds X_ register blocks
// by offset.
func fadtV3(dsdt uint32, xdsdt uint64, x map[int]GenericAddress) []byte {
	b := fadtV1(dsdt)[HeaderSize:]
	b = append(b, make([]byte, 244-fadtMinLen)...)
	at := func(off int) []byte { return b[off-HeaderSize:] }
	binary.LittleEndian.PutUint32(at(fadtFlags), FlagResetRegSupported)
	putGAS(at(fadtResetReg), GenericAddress{Space: SpaceIO, BitWidth: 8, Address: 0xcf9})
	b[fadtResetValue-HeaderSize] = 0x0f
	binary.LittleEndian.PutUint64(at(fadtXDSDT), xdsdt)
	for off, g := range x {
		putGAS(at(off), g)
	}
	return table("FACP", 3, b)
}

func putGAS(b []byte, g GenericAddress) {
	b[0], b[1], b[2], b[3] = g.Space, g.BitWidth, g.BitOffset, g.AccessSize
	binary.LittleEndian.PutUint64(b[4:], g.Address)
}

func TestParseFADTv1(t *testing.T) {
	f, err := ParseFADT(fadtV1(0x1234))
	if err != nil {
		t.Fatal(err)
	}
	want := FADT{
		Header: f.Header, FirmwareCtrl: 0x7fe0000, DSDT: 0x1234, SCIInterrupt: 9, SMICommand: 0xb2,
		ACPIEnable: 0xf1, ACPIDisable: 0xf0, PM1aEventBlock: 0x600, PM1aControlBlock: 0x604,
		PMTimerBlock: 0x608, PM1ControlLength: 2, Century: 0x32, Flags: 0x80a5,
	}
	if *f != want {
		t.Errorf("FADT = %+v\nwant %+v", *f, want)
	}
}

func TestParseFADTExtendedFields(t *testing.T) {
	f, err := ParseFADT(fadtV3(0x1234, 0x1_0000_5678, map[int]GenericAddress{
		fadtXPM1aCnt: {Space: SpaceIO, BitWidth: 16, Address: 0x1804},
		fadtXPM1bCnt: {Space: SpaceIO, BitWidth: 16, Address: 0x1808},
		// Memory-mapped and out-of-range blocks cannot be ports; keep the legacy values.
		fadtXPM1aEvt: {Space: SpaceMemory, BitWidth: 32, Address: 0xfed00000},
		fadtXPMTimer: {Space: SpaceIO, BitWidth: 32, Address: 0x10000},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if f.DSDT != 0x1_0000_5678 {
		t.Errorf("DSDT = %#x, want the X_DSDT value", f.DSDT)
	}
	if f.PM1aControlBlock != 0x1804 || f.PM1bControlBlock != 0x1808 {
		t.Errorf("PM1 control = %#x/%#x, want X_ values", f.PM1aControlBlock, f.PM1bControlBlock)
	}
	if f.PM1aEventBlock != 0x600 || f.PMTimerBlock != 0x608 {
		t.Errorf("unusable X_ blocks replaced legacy ports: evt %#x tmr %#x", f.PM1aEventBlock, f.PMTimerBlock)
	}
	if f.ResetReg != (GenericAddress{Space: SpaceIO, BitWidth: 8, Address: 0xcf9}) || f.ResetValue != 0x0f {
		t.Errorf("reset = %+v / %#x", f.ResetReg, f.ResetValue)
	}
	// A zero X_DSDT means "use the 32-bit field".
	if f, _ := ParseFADT(fadtV3(0x1234, 0, nil)); f.DSDT != 0x1234 {
		t.Errorf("zero X_DSDT overrode DSDT: %#x", f.DSDT)
	}
}

func TestParseFADTErrors(t *testing.T) {
	short := table("FACP", 1, make([]byte, fadtMinLen-HeaderSize-4))
	if _, err := ParseFADT(short); !errors.Is(err, ErrLength) {
		t.Errorf("short FADT: %v", err)
	}
	if _, err := ParseFADT(table("FACQ", 1, make([]byte, 100))); !errors.Is(err, ErrSignature) {
		t.Errorf("wrong signature: %v", err)
	}
	if _, err := ParseFADT(fadtV1(1)[:100]); !errors.Is(err, ErrLength) {
		t.Errorf("length past slice: %v", err)
	}
}

func TestDSDTErrors(t *testing.T) {
	mem, rsdp := qemuLike()
	mem.put(qFACP, fadtV1(0))
	tabs, err := FindTables(mem, rsdp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tabs.S5(); !errors.Is(err, ErrNotFound) {
		t.Errorf("FADT without DSDT: %v", err)
	}
	mem.put(qFACP, fadtV1(qAPIC)) // points at a table that is not a DSDT
	if _, err := tabs.DSDT(); !errors.Is(err, ErrSignature) {
		t.Errorf("DSDT pointer to APIC: %v", err)
	}
}

func TestFindS5(t *testing.T) {
	s5 := []byte("_S5_")
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	name := func(pkg ...byte) []byte { return cat([]byte{amlName}, s5, []byte{amlPackage}, pkg) }
	tests := []struct {
		name string
		aml  []byte
		want SleepType
		ok   bool
	}{
		{"QEMU", s5AML(0, 0), SleepType{0, 0}, true},
		{"ByteValues", s5AML(5, 7), SleepType{5, 7}, true},
		{"RootPrefix", cat([]byte{amlName, '\\'}, s5, []byte{amlPackage, 6, 4, amlOne, amlZero, amlZero, amlZero}), SleepType{1, 0}, true},
		{"WordAndDWord", name(10, 2, amlWordPrefix, 7, 0, amlDWordPrefix, 3, 0, 0, 0), SleepType{7, 3}, true},
		{"QWord", name(12, 2, amlQWordPrefix, 6, 0, 0, 0, 0, 0, 0, 0, amlZero), SleepType{6, 0}, true},
		{"TwoBytePkgLength", name(0x40|0x08, 0x00, 2, amlBytePrefix, 7, amlBytePrefix, 7, 0, 0, 0), SleepType{7, 7}, true},
		{
			// A reference such as "Store(\_S5_, x)" comes first in some
			// DSDTs; it must be skipped, not misread.
			"ReferenceBeforeDefinition",
			cat([]byte{0x70, '\\'}, s5, []byte{0x60}, name(8, 4, amlBytePrefix, 5, amlBytePrefix, 5, 0, 0)),
			SleepType{5, 5}, true,
		},
		{"NotNamed", cat([]byte{0x70}, s5, []byte{amlPackage, 6, 4, 1, 1, 0, 0}), SleepType{}, false},
		{"NotPackage", cat([]byte{amlName}, s5, []byte{amlBytePrefix, 5}), SleepType{}, false},
		{"Method", cat([]byte{0x14, 0x08}, s5, []byte{0x00}), SleepType{}, false},
		{"OneElement", name(3, 1, amlOne), SleepType{}, false},
		{"ValueTooLarge", name(5, 2, amlBytePrefix, 8, amlZero), SleepType{}, false},
		{"NonInteger", name(5, 2, 0x0D, 'a', 0), SleepType{}, false},
		{"PkgLengthBeyondData", name(0x3f, 2, amlOne, amlOne), SleepType{}, false},
		{"ElementsBeyondPkgLength", name(3, 2, amlOne, amlOne), SleepType{}, false},
		{"PkgLengthTooSmall", name(0x40, 0, 2, amlOne, amlOne), SleepType{}, false},
		{"Empty", nil, SleepType{}, false},
		{"NameAtEnd", cat([]byte{amlName}, s5), SleepType{}, false},
	}
	for _, tt := range tests {
		got, err := FindS5(tt.aml)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("%s: FindS5 = %+v, %v; want %+v ok=%v", tt.name, got, err, tt.want, tt.ok)
		}
	}
	// Every prefix of a valid definition must fail cleanly.
	full := name(10, 2, amlWordPrefix, 7, 0, amlDWordPrefix, 3, 0, 0, 0)
	for n := 0; n < len(full); n++ {
		if _, err := FindS5(full[:n]); err == nil {
			t.Errorf("truncated to %d bytes: accepted", n)
		}
	}
}

func TestPM1Value(t *testing.T) {
	s := SleepType{A: 5, B: 2}
	// SCI_EN (bit 0) and an unrelated bit 9 must survive; a stale
	// SLP_TYP of 7 must be replaced, not ORed into.
	if got, want := s.PM1aValue(0x1c01), uint16(0x0001|5<<10|1<<13); got != want {
		t.Errorf("PM1aValue = %#x, want %#x", got, want)
	}
	if got, want := s.PM1bValue(0x0201), uint16(0x0201|2<<10|1<<13); got != want {
		t.Errorf("PM1bValue = %#x, want %#x", got, want)
	}
	if got := (SleepType{}).PM1aValue(0x0001); got != 0x2001 {
		t.Errorf("QEMU S5 value = %#x, want 0x2001", got)
	}
}

func FuzzFindS5(f *testing.F) {
	f.Add(s5AML(5, 7))
	f.Add([]byte{amlName, '_', 'S', '5', '_', amlPackage, 0x48, 0, 2, amlQWordPrefix, 1, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, aml []byte) {
		s, err := FindS5(aml)
		if err == nil && (s.A > 7 || s.B > 7) {
			t.Fatalf("out-of-range sleep type %+v", s)
		}
	})
}
