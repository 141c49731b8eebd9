package acpi

import "testing"

// FuzzFindTables maps arbitrary bytes at a fixed address, points a
// valid RSDP at them, and walks every accessor: whatever the firmware
// tables contain, the kernel must get errors, not panics.
func FuzzFindTables(f *testing.F) {
	const base = 0x100000
	root := func(sig string, width int, offs ...uint64) []byte {
		var body []byte
		for _, o := range offs {
			if width == 8 {
				body = le64(body, base+o)
			} else {
				body = le32(body, uint32(base+o))
			}
		}
		return table(sig, 1, body)
	}
	// A self-contained image: root at 0, then DSDT, FACP, APIC.
	img := func(sig string, width int) []byte {
		dsdt := table("DSDT", 1, s5AML(5, 7))
		madt := qemuLikeMADT()
		rootLen := HeaderSize + 2*width
		facpAt := uint64(rootLen + len(dsdt))
		facp := fadtV1(uint32(base + rootLen))
		b := root(sig, width, facpAt, facpAt+uint64(len(facp)))
		b = append(b, dsdt...)
		b = append(b, facp...)
		return append(b, madt...)
	}
	f.Add(img("RSDT", 4), false)
	f.Add(img("XSDT", 8), true)
	f.Add([]byte("RSDT"), false)
	f.Fuzz(func(t *testing.T, b []byte, xsdt bool) {
		mem := &fakeMem{}
		mem.put(base, b)
		rsdp := rsdpV1(base)
		if xsdt {
			rsdp = rsdpV2(0, base)
		}
		tabs, err := FindTables(mem, rsdp)
		if err != nil {
			return
		}
		for _, e := range tabs.Entries {
			if e.Addr < base || e.Addr+uint64(e.Length) > base+uint64(len(b)) {
				t.Fatalf("entry %+v outside mapped memory", e)
			}
			if _, err := tabs.Table(e.Signature); err != nil {
				t.Fatalf("verified table %q unreadable: %v", e.Signature, err)
			}
		}
		tabs.MADT()
		tabs.FADT()
		tabs.S5()
		tabs.MCFG()
		tabs.SRAT()
		tabs.SLIT()
	})
}
