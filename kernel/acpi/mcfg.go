package acpi

import (
	"encoding/binary"
	"fmt"
)

// ECAMRegion is one "MCFG" allocation: the memory-mapped configuration
// space of PCI segment Segment, buses StartBus..EndBus, each bus 1 MiB
// (32 devices x 8 functions x 4 KiB) from Base, where Base is the
// address of bus 0 even when StartBus is not 0 (PCI Firmware
// Specification 3.2 §4.1.2).
type ECAMRegion struct {
	Base             uint64
	Segment          uint16
	StartBus, EndBus uint8
}

// Addr is the physical address of the configuration space of bus, dev,
// fn, and whether the region covers it.
func (r ECAMRegion) Addr(bus, dev, fn uint8) (uint64, bool) {
	if bus < r.StartBus || bus > r.EndBus || dev > 31 || fn > 7 {
		return 0, false
	}
	return r.Base + uint64(bus)<<20 | uint64(dev)<<15 | uint64(fn)<<12, true
}

// ParseMCFG decodes an MCFG table (checksum not verified here): a header,
// 8 reserved bytes, then 16-byte allocation entries. Entries with an
// empty or inverted bus range, or no base, are dropped with an error
// naming them if no usable entry remains.
func ParseMCFG(b []byte) ([]ECAMRegion, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return nil, err
	}
	if h.Signature != "MCFG" {
		return nil, fmt.Errorf("%w: %q is not MCFG", ErrSignature, h.Signature)
	}
	const first = 44
	if int(h.Length) < first || len(b) < int(h.Length) {
		return nil, fmt.Errorf("%w: MCFG table of %d bytes", ErrLength, h.Length)
	}
	var regs []ECAMRegion
	var bad error
	for off := first; off+16 <= int(h.Length); off += 16 {
		e := b[off : off+16]
		r := ECAMRegion{
			Base:     binary.LittleEndian.Uint64(e),
			Segment:  binary.LittleEndian.Uint16(e[8:]),
			StartBus: e[10],
			EndBus:   e[11],
		}
		if r.Base == 0 || r.Base&0xfffff != 0 || r.EndBus < r.StartBus {
			bad = fmt.Errorf("acpi: MCFG entry %+v unusable", r)
			continue
		}
		regs = append(regs, r)
	}
	if len(regs) == 0 {
		if bad == nil {
			bad = fmt.Errorf("acpi: MCFG has no entries")
		}
		return nil, bad
	}
	return regs, nil
}

// MCFG returns the ECAM regions of the "MCFG" table, if the firmware has
// one (q35 does; pc has none and uses port I/O).
func (t *Tables) MCFG() ([]ECAMRegion, error) {
	b, err := t.Table("MCFG")
	if err != nil {
		return nil, err
	}
	return ParseMCFG(b)
}
