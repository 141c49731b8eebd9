package acpi

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestFindTablesQEMULike(t *testing.T) {
	mem, rsdp := qemuLike()
	tabs, err := FindTables(mem, rsdp)
	if err != nil {
		t.Fatal(err)
	}
	if len(tabs.Warnings) != 0 {
		t.Errorf("unexpected warnings: %v", tabs.Warnings)
	}
	if tabs.RSDP.Revision != 0 || tabs.RSDP.OEMID != "BOCHS " || tabs.RSDP.RSDTAddr != qRSDT || tabs.RSDP.XSDTAddr != 0 {
		t.Errorf("RSDP = %+v", tabs.RSDP)
	}
	if tabs.Root.Signature != "RSDT" || tabs.RootAddr != qRSDT {
		t.Errorf("root = %q at %#x", tabs.Root.Signature, tabs.RootAddr)
	}
	want := []Entry{{"FACP", qFACP, 116}, {"APIC", qAPIC, 44 + 4*8 + 12 + 2*10 + 6}}
	if !reflect.DeepEqual(tabs.Entries, want) {
		t.Errorf("entries = %+v, want %+v", tabs.Entries, want)
	}
	if a, ok := tabs.Addr("APIC"); !ok || a != qAPIC {
		t.Errorf("Addr(APIC) = %#x, %v", a, ok)
	}
	if _, ok := tabs.Addr("HPET"); ok {
		t.Error("Addr found a table that is not there")
	}

	m, err := tabs.MADT()
	if err != nil {
		t.Fatal(err)
	}
	wantMADT := &MADT{
		Header:        m.Header,
		LocalAPICAddr: 0xfee00000,
		PCATCompat:    true,
		CPUs:          []CPU{{0, 0, true, false}, {1, 1, true, false}, {2, 2, true, false}, {3, 3, true, false}},
		IOAPICs:       []IOAPIC{{ID: 0, Addr: 0xfec00000, GSIBase: 0}},
		Overrides:     []Override{{Bus: 0, Source: 0, GSI: 2, Flags: 0}, {Bus: 0, Source: 9, GSI: 9, Flags: 0x0d}},
		NMIs:          []LocalNMI{{ProcessorID: 0xff, AllProcessors: true, Flags: 0, LINT: 1}},
	}
	if !reflect.DeepEqual(m, wantMADT) {
		t.Errorf("MADT = %+v\nwant %+v", m, wantMADT)
	}
	if m.Header.OEMID != "BOCHS " || m.Header.OEMTableID != "BXPCAPIC" || m.Header.CreatorID != "BXPC" {
		t.Errorf("MADT header = %+v", m.Header)
	}

	f, err := tabs.FADT()
	if err != nil {
		t.Fatal(err)
	}
	if f.PM1aControlBlock != 0x604 || f.PM1bControlBlock != 0 || f.DSDT != qDSDT || f.SCIInterrupt != 9 ||
		f.SMICommand != 0xb2 || f.ACPIEnable != 0xf1 || f.PMTimerBlock != 0x608 || f.Century != 0x32 {
		t.Errorf("FADT = %+v", f)
	}
	s5, err := tabs.S5()
	if err != nil || s5 != (SleepType{A: 5, B: 7}) {
		t.Errorf("S5 = %+v, %v", s5, err)
	}
}

func TestFindTablesXSDTPreferred(t *testing.T) {
	mem, _ := qemuLike()
	mem.put(qXSDT, table("XSDT", 1, le64(nil, qAPIC))) // lists only the MADT, unlike the RSDT
	tabs, err := FindTables(mem, rsdpV2(qRSDT, qXSDT))
	if err != nil {
		t.Fatal(err)
	}
	if tabs.Root.Signature != "XSDT" || len(tabs.Entries) != 1 || tabs.Entries[0].Signature != "APIC" {
		t.Errorf("XSDT not used: root %q, entries %+v", tabs.Root.Signature, tabs.Entries)
	}
}

func TestFindTablesXSDTFallback(t *testing.T) {
	mem, _ := qemuLike()
	bad := table("XSDT", 1, le64(nil, qAPIC))
	bad[20]++ // break the checksum
	mem.put(qXSDT, bad)
	tabs, err := FindTables(mem, rsdpV2(qRSDT, qXSDT))
	if err != nil {
		t.Fatal(err)
	}
	if tabs.Root.Signature != "RSDT" || len(tabs.Entries) != 2 {
		t.Errorf("did not fall back to RSDT: %q %+v", tabs.Root.Signature, tabs.Entries)
	}
	if len(tabs.Warnings) != 1 || !errors.Is(tabs.Warnings[0], ErrChecksum) {
		t.Errorf("warnings = %v, want one checksum warning", tabs.Warnings)
	}

	// With no RSDT to fall back on, the XSDT error is fatal.
	if _, err := FindTables(mem, rsdpV2(0, qXSDT)); !errors.Is(err, ErrChecksum) {
		t.Errorf("err = %v, want checksum error", err)
	}
}

func TestFindTablesRootErrors(t *testing.T) {
	tests := []struct {
		name  string
		rsdt  func() []byte
		want  error
		wantS string
	}{
		{"BadChecksum", func() []byte {
			b := table("RSDT", 1, le32(nil, qAPIC))
			b[9] ^= 0x55
			return b
		}, ErrChecksum, ""},
		{"WrongSignature", func() []byte { return table("XSDT", 1, le32(nil, qAPIC)) }, ErrSignature, ""},
		{"LengthBelowHeader", func() []byte {
			b := table("RSDT", 1, le32(nil, qAPIC))
			b[4] = 35
			fixChecksum(b, 9)
			return b
		}, ErrLength, ""},
		{"LengthPastEnd", func() []byte {
			b := table("RSDT", 1, le32(nil, qAPIC))
			b[4] += 8 // claims 8 bytes more than are mapped
			fixChecksum(b, 9)
			return b
		}, nil, "unmapped"},
		{"LengthHuge", func() []byte {
			b := table("RSDT", 1, le32(nil, qAPIC))
			b[7] = 0x40 // 1 GiB
			return b
		}, ErrLength, ""},
		{"Truncated", func() []byte { return table("RSDT", 1, nil)[:20] }, nil, "unmapped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem, _ := qemuLike()
			mem.put(qRSDT, tt.rsdt())
			_, err := FindTables(mem, rsdpV1(qRSDT))
			if err == nil {
				t.Fatal("FindTables succeeded")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
			if tt.wantS != "" && !strings.Contains(err.Error(), tt.wantS) {
				t.Errorf("err = %v, want it to mention %q", err, tt.wantS)
			}
		})
	}
}

func TestBrokenEntriesAreSkippedWithReason(t *testing.T) {
	t.Run("BadChecksum", func(t *testing.T) {
		mem, rsdp := qemuLike()
		m := qemuLikeMADT()
		m[50] ^= 1
		mem.put(qAPIC, m)
		tabs, err := FindTables(mem, rsdp)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := tabs.Addr("APIC"); ok {
			t.Error("table with bad checksum listed")
		}
		if len(tabs.Warnings) != 1 {
			t.Errorf("warnings = %v", tabs.Warnings)
		}
		if _, err := tabs.MADT(); !errors.Is(err, ErrChecksum) {
			t.Errorf("MADT() err = %v, want checksum error", err)
		}
		if _, err := tabs.FADT(); err != nil {
			t.Errorf("a bad MADT broke the FADT: %v", err)
		}
	})
	t.Run("LengthPastEnd", func(t *testing.T) {
		mem, rsdp := qemuLike()
		m := qemuLikeMADT()
		m[4] += 16
		fixChecksum(m, 9)
		mem.put(qAPIC, m)
		tabs, err := FindTables(mem, rsdp)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tabs.MADT(); err == nil || !strings.Contains(err.Error(), "unmapped") {
			t.Errorf("MADT() err = %v, want read failure", err)
		}
	})
	t.Run("TruncatedMADT", func(t *testing.T) {
		mem, rsdp := qemuLike()
		m := table("APIC", 1, []byte{0, 0, 0xe0, 0xfe}) // header plus half the fixed fields
		mem.put(qAPIC, m)
		tabs, err := FindTables(mem, rsdp)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tabs.MADT(); !errors.Is(err, ErrLength) {
			t.Errorf("MADT() err = %v, want length error", err)
		}
	})
	t.Run("NullAndUnreadableEntries", func(t *testing.T) {
		mem, _ := qemuLike()
		mem.put(qRSDT, table("RSDT", 1, le32(le32(le32(nil, 0), 0x1000), qAPIC)))
		tabs, err := FindTables(mem, rsdpV1(qRSDT))
		if err != nil {
			t.Fatal(err)
		}
		if len(tabs.Warnings) != 2 || len(tabs.Entries) != 1 {
			t.Errorf("entries %+v, warnings %v", tabs.Entries, tabs.Warnings)
		}
		if _, err := tabs.FADT(); !errors.Is(err, ErrNotFound) {
			t.Errorf("FADT() err = %v, want not found", err)
		}
	})
	t.Run("AddressWraps", func(t *testing.T) {
		mem, _ := qemuLike()
		mem.put(qRSDT, table("RSDT", 2, nil))
		mem.put(qXSDT, table("XSDT", 1, le64(nil, ^uint64(0)-10)))
		tabs, err := FindTables(mem, rsdpV2(qRSDT, qXSDT))
		if err != nil {
			t.Fatal(err)
		}
		if len(tabs.Entries) != 0 || len(tabs.Warnings) != 1 {
			t.Errorf("entries %+v, warnings %v", tabs.Entries, tabs.Warnings)
		}
	})
}

func TestTableRereadsAndVerifies(t *testing.T) {
	mem, rsdp := qemuLike()
	tabs, err := FindTables(mem, rsdp)
	if err != nil {
		t.Fatal(err)
	}
	m := qemuLikeMADT()
	m[40] ^= 1 // corrupted after discovery
	mem.put(qAPIC, m)
	if _, err := tabs.Table("APIC"); !errors.Is(err, ErrChecksum) {
		t.Errorf("Table err = %v, want checksum error", err)
	}
}

func TestParseRSDP(t *testing.T) {
	v2 := rsdpV2(0x1000, 0x2000)
	r, err := ParseRSDP(v2)
	if err != nil || r.Revision != 2 || r.RSDTAddr != 0x1000 || r.XSDTAddr != 0x2000 {
		t.Errorf("v2: %+v, %v", r, err)
	}
	// GRUB's "old RSDP" tag holds only the first 20 bytes.
	r, err = ParseRSDP(v2[:20])
	if err != nil || r.XSDTAddr != 0 || r.RSDTAddr != 0x1000 {
		t.Errorf("v2 truncated to v1: %+v, %v", r, err)
	}

	mod := func(b []byte, f func([]byte)) []byte {
		b = append([]byte(nil), b...)
		f(b)
		return b
	}
	bad := []struct {
		name string
		b    []byte
		want error
	}{
		{"Short", rsdpV1(1)[:19], ErrLength},
		{"Signature", mod(rsdpV1(1), func(b []byte) { b[0] = 'X'; fixChecksum(b, 8) }), ErrSignature},
		{"Checksum", mod(rsdpV1(1), func(b []byte) { b[8]++ }), ErrChecksum},
		{"ExtChecksum", mod(v2, func(b []byte) { b[32]++ }), ErrChecksum},
		{"ExtLengthSmall", mod(v2, func(b []byte) { b[20] = 20; fixChecksum(b, 32) }), ErrLength},
		{"ExtLengthLarge", mod(v2, func(b []byte) { b[20] = 40; fixChecksum(b, 32) }), ErrLength},
	}
	for _, tt := range bad {
		if _, err := ParseRSDP(tt.b); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
		if _, err := FindTables(&fakeMem{}, tt.b); !errors.Is(err, tt.want) {
			t.Errorf("%s: FindTables err = %v, want %v", tt.name, err, tt.want)
		}
	}
	if _, err := FindTables(&fakeMem{}, rsdpV1(0)); !errors.Is(err, ErrNotFound) {
		t.Errorf("RSDP without root: err = %v", err)
	}
}

func TestVerifyTable(t *testing.T) {
	b := table("SSDT", 2, []byte{1, 2, 3})
	h, err := VerifyTable(append(b, 0xff), "SSDT") // trailing bytes beyond Length are ignored
	if err != nil || h.Length != 39 || h.Revision != 2 {
		t.Errorf("VerifyTable = %+v, %v", h, err)
	}
	if _, err := VerifyTable(b, "DSDT"); !errors.Is(err, ErrSignature) {
		t.Errorf("wrong signature: %v", err)
	}
	if _, err := VerifyTable(b[:38], ""); !errors.Is(err, ErrLength) {
		t.Errorf("short: %v", err)
	}
	if _, err := ParseHeader(b[:35]); !errors.Is(err, ErrLength) {
		t.Errorf("short header: %v", err)
	}
}

func TestScanRSDP(t *testing.T) {
	bda := func(seg uint16) []byte { return le16(nil, seg) }

	t.Run("BIOSArea", func(t *testing.T) {
		m := &fakeMem{zeroFill: true}
		m.put(0x40e, bda(0x9fc0))
		bad := rsdpV1(0x1234)
		bad[8]++
		m.put(0xe0100, bad)            // checksum failure: keep looking
		m.put(0xe0108, rsdpV1(0x5678)) // not 16-byte aligned: never examined
		m.put(0xf59d0, rsdpV1(0x7fe1bef))
		b, addr, err := ScanRSDP(m)
		if err != nil || addr != 0xf59d0 || len(b) != 20 {
			t.Fatalf("ScanRSDP = %x, %#x, %v", b, addr, err)
		}
		if r, _ := ParseRSDP(b); r.RSDTAddr != 0x7fe1bef {
			t.Errorf("wrong RSDP returned: %+v", r)
		}
	})
	t.Run("EBDAFirst", func(t *testing.T) {
		m := &fakeMem{zeroFill: true}
		m.put(0x40e, bda(0x9fc0))
		m.put(0x9fc00+0x30, rsdpV2(1, 0x2000))
		m.put(0xf0000, rsdpV1(3))
		b, addr, err := ScanRSDP(m)
		if err != nil || addr != 0x9fc30 || len(b) != 36 {
			t.Fatalf("ScanRSDP = %x, %#x, %v", b, addr, err)
		}
	})
	t.Run("BogusEBDAPointer", func(t *testing.T) {
		m := &fakeMem{zeroFill: true}
		m.put(0x40e, bda(0xf000)) // 0xf0000 is not conventional memory
		m.put(0xfff80, rsdpV1(3))
		if _, addr, err := ScanRSDP(m); err != nil || addr != 0xfff80 {
			t.Fatalf("addr %#x, err %v", addr, err)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		if _, _, err := ScanRSDP(&fakeMem{zeroFill: true}); !errors.Is(err, ErrNotFound) {
			t.Errorf("err = %v", err)
		}
		if _, _, err := ScanRSDP(&fakeMem{}); !errors.Is(err, ErrNotFound) {
			t.Errorf("unreadable memory: err = %v", err)
		}
	})
}
