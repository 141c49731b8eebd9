package acpi

import (
	"fmt"
	"sort"
)

// SRAT is the decoded System Resource Affinity Table (§5.2.16): which
// proximity domain (NUMA node) each CPU and each range of memory belongs
// to. Domains are the firmware's 32-bit numbers; Nodes numbers them
// densely, as Linux's node IDs are.
type SRAT struct {
	CPUs   []CPUAffinity
	Memory []MemAffinity
}

// CPUAffinity places an enabled processor, by local (x2)APIC ID, in a
// proximity domain (§5.2.16.1, §5.2.16.3).
type CPUAffinity struct {
	APICID uint32
	Domain uint32
}

// MemAffinity places an enabled memory range in a proximity domain
// (§5.2.16.2). HotPlug ranges may hold no memory yet; NonVolatile ones are
// persistent memory.
type MemAffinity struct {
	Base, Length uint64
	Domain       uint32
	HotPlug      bool
	NonVolatile  bool
}

// SRAT structure types (§5.2.16, Table "Static Resource Allocation
// Structure Types"); the GICC, GIC ITS and generic initiator ones are
// skipped.
const (
	sratLocalAPIC   = 0
	sratMemory      = 1
	sratLocalX2APIC = 2
	sratFirst       = HeaderSize + 12 // table revision (4 bytes), 8 reserved
)

// ParseSRAT decodes an SRAT (checksum not verified here). Disabled
// entries are left out; a structure whose length is too short for its
// type, or runs past the table, ends the table with an error.
func ParseSRAT(b []byte) (*SRAT, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return nil, err
	}
	if h.Signature != "SRAT" {
		return nil, fmt.Errorf("%w: %q is not SRAT", ErrSignature, h.Signature)
	}
	if int(h.Length) < sratFirst || len(b) < int(h.Length) {
		return nil, fmt.Errorf("acpi: SRAT: %w: %d bytes", ErrLength, h.Length)
	}
	s := &SRAT{}
	for off := sratFirst; off < int(h.Length); {
		if off+2 > int(h.Length) {
			return nil, fmt.Errorf("acpi: SRAT: %w: structure header cut at %d", ErrLength, off)
		}
		typ, n := b[off], int(b[off+1])
		if n < 2 || off+n > int(h.Length) {
			return nil, fmt.Errorf("acpi: SRAT: %w: structure of type %d, %d bytes at %d", ErrLength, typ, n, off)
		}
		e := b[off : off+n]
		if want := sratLen(typ); n < want {
			return nil, fmt.Errorf("acpi: SRAT: %w: type %d needs %d bytes, has %d", ErrLength, typ, sratLen(typ), n)
		}
		switch typ {
		case sratLocalAPIC:
			if le.Uint32(e[4:])&1 != 0 {
				dom := uint32(e[2]) | uint32(e[9])<<8 | uint32(e[10])<<16 | uint32(e[11])<<24
				s.CPUs = append(s.CPUs, CPUAffinity{APICID: uint32(e[3]), Domain: dom})
			}
		case sratLocalX2APIC:
			if le.Uint32(e[12:])&1 != 0 {
				s.CPUs = append(s.CPUs, CPUAffinity{APICID: le.Uint32(e[8:]), Domain: le.Uint32(e[4:])})
			}
		case sratMemory:
			fl := le.Uint32(e[28:])
			m := MemAffinity{Base: le.Uint64(e[8:]), Length: le.Uint64(e[16:]), Domain: le.Uint32(e[2:]),
				HotPlug: fl&2 != 0, NonVolatile: fl&4 != 0}
			if fl&1 != 0 && m.Length != 0 && m.Base+m.Length > m.Base {
				s.Memory = append(s.Memory, m)
			}
		}
		off += n
	}
	return s, nil
}

// sratLen is the least length of a structure of type typ this package
// reads (0: skipped types).
func sratLen(typ uint8) int {
	switch typ {
	case sratLocalAPIC:
		return 16
	case sratMemory:
		return 40
	case sratLocalX2APIC:
		return 24
	}
	return 0
}

// Domains lists the proximity domains that have a CPU or memory, in
// ascending order: node i is Domains()[i].
func (s *SRAT) Domains() []uint32 {
	seen := map[uint32]bool{}
	var d []uint32
	add := func(x uint32) {
		if !seen[x] {
			seen[x] = true
			d = append(d, x)
		}
	}
	for _, c := range s.CPUs {
		add(c.Domain)
	}
	for _, m := range s.Memory {
		add(m.Domain)
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d
}

// SRAT returns the firmware's SRAT, if it has one (QEMU makes one only
// with -numa).
func (t *Tables) SRAT() (*SRAT, error) {
	b, err := t.Table("SRAT")
	if err != nil {
		return nil, err
	}
	return ParseSRAT(b)
}

// SLIT is the System Locality Information Table (§5.2.17): the relative
// distance from each proximity domain (locality) to each other, 10 meaning
// local and 255 unreachable.
type SLIT struct {
	N    int
	dist []byte
}

// Distance is the distance from locality i to j (255 when either is out of
// range).
func (s *SLIT) Distance(i, j int) uint8 {
	if i < 0 || j < 0 || i >= s.N || j >= s.N {
		return 255
	}
	return s.dist[i*s.N+j]
}

// maxLocalities bounds the matrix a SLIT may claim (4096 x 4096 bytes).
const maxLocalities = 4096

// ParseSLIT decodes a SLIT (checksum not verified here).
func ParseSLIT(b []byte) (*SLIT, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return nil, err
	}
	if h.Signature != "SLIT" {
		return nil, fmt.Errorf("%w: %q is not SLIT", ErrSignature, h.Signature)
	}
	if int(h.Length) < HeaderSize+8 || len(b) < int(h.Length) {
		return nil, fmt.Errorf("acpi: SLIT: %w: %d bytes", ErrLength, h.Length)
	}
	n := le.Uint64(b[HeaderSize:])
	if n == 0 || n > maxLocalities || uint64(HeaderSize+8)+n*n > uint64(h.Length) {
		return nil, fmt.Errorf("acpi: SLIT: %w: %d localities in %d bytes", ErrLength, n, h.Length)
	}
	body := b[HeaderSize+8 : HeaderSize+8+int(n*n)]
	return &SLIT{N: int(n), dist: append([]byte(nil), body...)}, nil
}

// SLIT returns the firmware's SLIT, if it has one.
func (t *Tables) SLIT() (*SLIT, error) {
	b, err := t.Table("SLIT")
	if err != nil {
		return nil, err
	}
	return ParseSLIT(b)
}
