package acpi

import (
	"errors"
	"reflect"
	"testing"
)

func sratLAPIC(dom uint32, id uint8, flags uint32) []byte {
	b := le32([]byte{0, 16, byte(dom), id}, flags)
	b = append(b, 0, byte(dom>>8), byte(dom>>16), byte(dom>>24))
	return le32(b, 0)
}

func sratX2APIC(dom, id, flags uint32) []byte {
	b := le32([]byte{2, 24, 0, 0}, dom)
	b = le32(le32(b, id), flags)
	return le32(le32(b, 0), 0)
}

func sratMem(dom uint32, base, length uint64, flags uint32) []byte {
	b := le32([]byte{1, 40}, dom)
	b = append(b, 0, 0)
	b = le64(le64(b, base), length)
	b = le32(le32(b, 0), flags)
	return le64(b, 0)
}

func sratTable(entries ...[]byte) []byte {
	body := le32(nil, 1)
	body = le64(body, 0)
	for _, e := range entries {
		body = append(body, e...)
	}
	return table("SRAT", 1, body)
}

// qemuSRAT is the shape of the table QEMU builds for
// -numa node,nodeid=0,cpus=0-1 -numa node,nodeid=1,cpus=2-3 with 1 GiB in
// each: an entry per CPU, the low 640 KiB and the rest of node 0's RAM,
// node 1's RAM above it, and a hot-pluggable range past the end.
func qemuSRAT() []byte {
	return sratTable(
		sratLAPIC(0, 0, 1), sratLAPIC(0, 1, 1), sratLAPIC(1, 2, 1), sratLAPIC(1, 3, 1),
		sratMem(0, 0, 0xa0000, 1),
		sratMem(0, 0x100000, 0x3ff00000, 1),
		sratMem(1, 0x40000000, 0x40000000, 1),
		sratMem(0, 0, 0, 0),
		sratMem(1, 0x100000000, 0x40000000, 3),
	)
}

func TestParseSRAT(t *testing.T) {
	s, err := ParseSRAT(qemuSRAT())
	if err != nil {
		t.Fatal(err)
	}
	wantCPUs := []CPUAffinity{{0, 0}, {1, 0}, {2, 1}, {3, 1}}
	if !reflect.DeepEqual(s.CPUs, wantCPUs) {
		t.Errorf("CPUs = %+v, want %+v", s.CPUs, wantCPUs)
	}
	wantMem := []MemAffinity{
		{Base: 0, Length: 0xa0000},
		{Base: 0x100000, Length: 0x3ff00000},
		{Base: 0x40000000, Length: 0x40000000, Domain: 1},
		{Base: 0x100000000, Length: 0x40000000, Domain: 1, HotPlug: true},
	}
	if !reflect.DeepEqual(s.Memory, wantMem) {
		t.Errorf("Memory = %+v, want %+v", s.Memory, wantMem)
	}
	if d := s.Domains(); !reflect.DeepEqual(d, []uint32{0, 1}) {
		t.Errorf("Domains = %v", d)
	}
}

func TestParseSRATx2APICAndWideDomains(t *testing.T) {
	s, err := ParseSRAT(sratTable(
		sratX2APIC(0x10203, 300, 1),
		sratX2APIC(7, 301, 0), // disabled
		sratLAPIC(0x01000005, 9, 1),
		[]byte{5, 32, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, // generic initiator: skipped
		sratMem(0x10203, 1<<40, 1<<30, 1|4),
	))
	if err != nil {
		t.Fatal(err)
	}
	want := []CPUAffinity{{300, 0x10203}, {9, 0x01000005}}
	if !reflect.DeepEqual(s.CPUs, want) {
		t.Errorf("CPUs = %+v, want %+v", s.CPUs, want)
	}
	if len(s.Memory) != 1 || !s.Memory[0].NonVolatile || s.Memory[0].Base != 1<<40 {
		t.Errorf("Memory = %+v", s.Memory)
	}
	if d := s.Domains(); !reflect.DeepEqual(d, []uint32{0x10203, 0x01000005}) {
		t.Errorf("Domains = %#x", d)
	}
}

func TestParseSRATBad(t *testing.T) {
	good := qemuSRAT()
	short := append([]byte(nil), good...)
	short[sratFirst+1] = 8 // a local APIC structure claiming 8 bytes
	fixChecksum(short, 9)
	zero := append([]byte(nil), good...)
	zero[sratFirst+1] = 0
	past := append([]byte(nil), good...)
	past[len(past)-39] = 200 // the last structure runs past the end
	wrap := sratTable(sratMem(0, ^uint64(0)-10, 100, 1))
	for name, b := range map[string][]byte{
		"short entry": short, "zero length": zero, "past end": past,
		"no header": good[:20], "cut body": good[:sratFirst-1],
	} {
		if _, err := ParseSRAT(b); !errors.Is(err, ErrLength) {
			t.Errorf("%s: err = %v, want ErrLength", name, err)
		}
	}
	if _, err := ParseSRAT(table("APIC", 1, make([]byte, 20))); !errors.Is(err, ErrSignature) {
		t.Errorf("wrong signature: %v", err)
	}
	if s, err := ParseSRAT(wrap); err != nil || len(s.Memory) != 0 {
		t.Errorf("a range that wraps: %+v, %v; want it dropped", s, err)
	}
}

func slitTable(n int, d ...byte) []byte {
	return table("SLIT", 1, append(le64(nil, uint64(n)), d...))
}

func TestParseSLIT(t *testing.T) {
	s, err := ParseSLIT(slitTable(2, 10, 21, 21, 10))
	if err != nil {
		t.Fatal(err)
	}
	if s.N != 2 || s.Distance(0, 0) != 10 || s.Distance(0, 1) != 21 || s.Distance(1, 0) != 21 {
		t.Errorf("SLIT = %+v", s)
	}
	if s.Distance(2, 0) != 255 || s.Distance(-1, 0) != 255 {
		t.Error("out-of-range localities should be unreachable")
	}
	for name, b := range map[string][]byte{
		"matrix cut": slitTable(3, 10, 20, 20, 10),
		"zero":       slitTable(0),
		"huge":       slitTable(1<<32+1, 10),
		"no count":   table("SLIT", 1, []byte{1, 0}),
	} {
		if _, err := ParseSLIT(b); !errors.Is(err, ErrLength) {
			t.Errorf("%s: err = %v, want ErrLength", name, err)
		}
	}
}

// TestSRATThroughTables finds both tables through an XSDT, as the kernel
// does.
func TestSRATThroughTables(t *testing.T) {
	const base = 0x100000
	srat, slit := qemuSRAT(), slitTable(2, 10, 20, 20, 10)
	rootLen := HeaderSize + 16
	root := table("XSDT", 1, le64(le64(nil, base+uint64(rootLen)), base+uint64(rootLen+len(srat))))
	mem := &fakeMem{}
	mem.put(base, append(append(root, srat...), slit...))
	tabs, err := FindTables(mem, rsdpV2(0, base))
	if err != nil {
		t.Fatal(err)
	}
	s, err := tabs.SRAT()
	if err != nil || len(s.CPUs) != 4 {
		t.Fatalf("SRAT = %+v, %v", s, err)
	}
	l, err := tabs.SLIT()
	if err != nil || l.Distance(1, 0) != 20 {
		t.Fatalf("SLIT = %+v, %v", l, err)
	}
	if _, err := (&Tables{mem: mem, rejected: map[string]error{}}).SRAT(); !errors.Is(err, ErrNotFound) {
		t.Errorf("no SRAT: %v, want ErrNotFound", err)
	}
}

// FuzzParseSRAT: whatever an SRAT or SLIT holds, the parsers return
// errors, never panic, and what they return is within the table.
func FuzzParseSRAT(f *testing.F) {
	f.Add(qemuSRAT(), false)
	f.Add(slitTable(2, 10, 21, 21, 10), true)
	f.Fuzz(func(t *testing.T, b []byte, slit bool) {
		if slit {
			if s, err := ParseSLIT(b); err == nil {
				if s.N*s.N > len(b) {
					t.Fatalf("%d localities from %d bytes", s.N, len(b))
				}
				s.Distance(s.N-1, s.N-1)
			}
			return
		}
		s, err := ParseSRAT(b)
		if err != nil {
			return
		}
		if (len(s.CPUs)*16 + len(s.Memory)*40) > len(b) {
			t.Fatalf("%d CPUs and %d ranges from %d bytes", len(s.CPUs), len(s.Memory), len(b))
		}
		for _, m := range s.Memory {
			if m.Length == 0 || m.Base+m.Length < m.Base {
				t.Fatalf("range %+v kept", m)
			}
		}
		s.Domains()
	})
}
