package acpi

import "fmt"

// MADT is the decoded Multiple APIC Description Table (§5.2.12).
type MADT struct {
	Header Header
	// LocalAPICAddr is the physical address of every CPU's local APIC,
	// taken from the type 5 override entry when present.
	LocalAPICAddr uint64
	// PCATCompat reports dual 8259 PICs, which must be masked before
	// the IO APICs are used.
	PCATCompat bool
	CPUs       []CPU
	IOAPICs    []IOAPIC
	Overrides  []Override
	NMIs       []LocalNMI
}

// CPU is a processor that is enabled or can be brought online
// (§5.2.12.2, §5.2.12.12). Disabled entries that are not online
// capable describe sockets that can never run code and are omitted.
type CPU struct {
	ProcessorID uint32 // ACPI processor UID
	APICID      uint32
	// Enabled is false for processors that are online capable but not
	// yet usable (ACPI 6.3 and later); they must not be sent a startup IPI.
	Enabled bool
	// X2APIC marks entries from x2APIC structures, whose IDs may not
	// fit the 8-bit xAPIC ID space.
	X2APIC bool
}

// IOAPIC is an I/O APIC (§5.2.12.3).
type IOAPIC struct {
	ID      uint8
	Addr    uint32
	GSIBase uint32 // first global system interrupt it handles
}

// Override maps a bus-relative interrupt source, in practice an ISA
// IRQ, to a global system interrupt (§5.2.12.5).
type Override struct {
	Bus    uint8 // 0 means ISA
	Source uint8
	GSI    uint32
	Flags  INTIFlags
}

// LocalNMI says which local APIC LINT pin is wired to NMI (§5.2.12.7,
// §5.2.12.13).
type LocalNMI struct {
	ProcessorID   uint32
	AllProcessors bool
	Flags         INTIFlags
	LINT          uint8
}

// INTIFlags is the MPS INTI flags field (§5.2.12.5, Table "MPS INTI
// Flags"): polarity in bits 0-1, trigger mode in bits 2-3.
type INTIFlags uint16

// ActiveLow reports an active-low input. The "conforms to bus" encoding
// means active high for ISA, the only bus overrides are used for here.
func (f INTIFlags) ActiveLow() bool { return f&3 == 3 }

// LevelTriggered reports a level-triggered input; "conforms to bus"
// means edge for ISA.
func (f INTIFlags) LevelTriggered() bool { return (f>>2)&3 == 3 }

// MADT entry types used here (§5.2.12, Table "Interrupt Controller Structure Types").
const (
	madtLocalAPIC    = 0
	madtIOAPIC       = 1
	madtOverride     = 2
	madtLocalNMI     = 4
	madtLAPICAddr    = 5
	madtLocalX2APIC  = 9
	madtLocalX2NMI   = 10
	madtEntriesStart = HeaderSize + 8
)

// minEntryLen is the smallest valid length of each decoded entry type.
var minEntryLen = map[uint8]int{
	madtLocalAPIC:   8,
	madtIOAPIC:      12,
	madtOverride:    10,
	madtLocalNMI:    6,
	madtLAPICAddr:   12,
	madtLocalX2APIC: 16,
	madtLocalX2NMI:  12,
}

// Local APIC flags (§5.2.12.2, Table "Local APIC Flags").
const (
	lapicEnabled       = 1 << 0
	lapicOnlineCapable = 1 << 1
)

// MADT reads and decodes the table with signature "APIC".
func (t *Tables) MADT() (*MADT, error) {
	b, err := t.Table("APIC")
	if err != nil {
		return nil, err
	}
	return ParseMADT(b)
}

// ParseMADT decodes a MADT. It checks the signature and structure but
// not the checksum, which ReadTable and Tables.MADT verify; keeping the
// two apart lets a fuzzer reach the entry parser. Unknown entry types
// are skipped using their length byte, as the spec's forward
// compatibility rules intend.
func ParseMADT(b []byte) (*MADT, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return nil, err
	}
	if h.Signature != "APIC" {
		return nil, fmt.Errorf("acpi: MADT: %w: %q", ErrSignature, h.Signature)
	}
	if h.Length < madtEntriesStart || uint64(h.Length) > uint64(len(b)) {
		return nil, fmt.Errorf("acpi: MADT: %w: length field %d, %d bytes available", ErrLength, h.Length, len(b))
	}
	b = b[:h.Length]
	m := &MADT{
		Header:        h,
		LocalAPICAddr: uint64(le.Uint32(b[HeaderSize:])),
		PCATCompat:    le.Uint32(b[HeaderSize+4:])&1 != 0,
	}
	for off := madtEntriesStart; off < len(b); {
		if len(b)-off < 2 {
			return nil, fmt.Errorf("acpi: MADT: %w: entry header at offset %d truncated", ErrLength, off)
		}
		typ, n := b[off], int(b[off+1])
		if n < 2 || n > len(b)-off {
			return nil, fmt.Errorf("acpi: MADT: %w: entry type %d at offset %d has length %d, %d bytes left", ErrLength, typ, off, n, len(b)-off)
		}
		if min, ok := minEntryLen[typ]; ok && n < min {
			return nil, fmt.Errorf("acpi: MADT: %w: entry type %d at offset %d has length %d, need %d", ErrLength, typ, off, n, min)
		}
		m.decodeEntry(typ, b[off:off+n])
		off += n
	}
	return m, nil
}

func (m *MADT) decodeEntry(typ uint8, e []byte) {
	switch typ {
	case madtLocalAPIC:
		m.addCPU(uint32(e[2]), uint32(e[3]), le.Uint32(e[4:]), false)
	case madtLocalX2APIC:
		m.addCPU(le.Uint32(e[12:]), le.Uint32(e[4:]), le.Uint32(e[8:]), true)
	case madtIOAPIC:
		m.IOAPICs = append(m.IOAPICs, IOAPIC{ID: e[2], Addr: le.Uint32(e[4:]), GSIBase: le.Uint32(e[8:])})
	case madtOverride:
		m.Overrides = append(m.Overrides, Override{Bus: e[2], Source: e[3], GSI: le.Uint32(e[4:]), Flags: INTIFlags(le.Uint16(e[8:]))})
	case madtLocalNMI:
		m.NMIs = append(m.NMIs, LocalNMI{ProcessorID: uint32(e[2]), AllProcessors: e[2] == 0xFF, Flags: INTIFlags(le.Uint16(e[3:])), LINT: e[5]})
	case madtLocalX2NMI:
		uid := le.Uint32(e[4:])
		m.NMIs = append(m.NMIs, LocalNMI{ProcessorID: uid, AllProcessors: uid == 0xFFFFFFFF, Flags: INTIFlags(le.Uint16(e[2:])), LINT: e[8]})
	case madtLAPICAddr:
		m.LocalAPICAddr = le.Uint64(e[4:])
	}
}

func (m *MADT) addCPU(uid, apicID, flags uint32, x2 bool) {
	if flags&(lapicEnabled|lapicOnlineCapable) == 0 {
		return
	}
	m.CPUs = append(m.CPUs, CPU{ProcessorID: uid, APICID: apicID, Enabled: flags&lapicEnabled != 0, X2APIC: x2})
}

// ISAIRQToGSI translates an ISA IRQ to the global system interrupt
// and trigger/polarity flags to program into the IO APIC. IRQs without
// an override are identity-mapped with bus-default (edge, active high)
// flags, as §5.2.12.5 specifies.
func (m *MADT) ISAIRQToGSI(irq uint8) (uint32, INTIFlags) {
	for _, o := range m.Overrides {
		if o.Bus == 0 && o.Source == irq {
			return o.GSI, o.Flags
		}
	}
	return uint32(irq), 0
}

// IOAPICFor returns the IO APIC whose input range contains gsi. Each IO
// APIC's input count is only known from its own registers, so the best
// static answer is the one with the highest GSIBase not above gsi.
func (m *MADT) IOAPICFor(gsi uint32) (IOAPIC, bool) {
	var best IOAPIC
	found := false
	for _, io := range m.IOAPICs {
		if io.GSIBase <= gsi && (!found || io.GSIBase > best.GSIBase) {
			best, found = io, true
		}
	}
	return best, found
}

// Startable returns the CPUs to send startup IPIs to: the enabled ones,
// each APIC ID once (firmware may list a CPU both as a local APIC and as
// an x2APIC structure), in table order. Without x2APIC mode the ICR's
// destination has 8 bits, 0xFF being broadcast, so CPUs with larger IDs
// are left out and counted in skipped.
func (m *MADT) Startable(x2apic bool) (cpus []CPU, skipped int) {
	seen := make(map[uint32]bool, len(m.CPUs))
	for _, c := range m.CPUs {
		if !c.Enabled || seen[c.APICID] || c.APICID == 0xFFFFFFFF {
			continue
		}
		seen[c.APICID] = true
		if !x2apic && c.APICID >= 0xFF {
			skipped++
			continue
		}
		cpus = append(cpus, c)
	}
	return cpus, skipped
}
