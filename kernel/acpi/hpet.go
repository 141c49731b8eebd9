package acpi

import (
	"encoding/binary"
	"fmt"
)

// HPET describes the event timer block from the "HPET" table (IA-PC HPET
// specification 1.0a §3.2.4).
type HPET struct {
	Header  Header
	BlockID uint32
	Address GenericAddress // must be in system memory
	Number  uint8
	MinTick uint16
}

// ParseHPET decodes an HPET table (checksum not verified here).
func ParseHPET(b []byte) (*HPET, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return nil, err
	}
	if h.Signature != "HPET" {
		return nil, fmt.Errorf("%w: %q is not HPET", ErrSignature, h.Signature)
	}
	const size = 56
	if int(h.Length) < size || len(b) < size {
		return nil, fmt.Errorf("%w: HPET table of %d bytes", ErrLength, h.Length)
	}
	t := &HPET{
		Header:  h,
		BlockID: binary.LittleEndian.Uint32(b[36:]),
		Address: GenericAddress{
			Space: b[40], BitWidth: b[41], BitOffset: b[42], AccessSize: b[43],
			Address: binary.LittleEndian.Uint64(b[44:]),
		},
		Number:  b[52],
		MinTick: binary.LittleEndian.Uint16(b[53:]),
	}
	if t.Address.Space != SpaceMemory || t.Address.Address == 0 {
		return nil, fmt.Errorf("acpi: HPET registers not in memory (space %d, address %#x)", t.Address.Space, t.Address.Address)
	}
	return t, nil
}

// HPET returns the HPET table, if the firmware has one.
func (t *Tables) HPET() (*HPET, error) {
	b, err := t.Table("HPET")
	if err != nil {
		return nil, err
	}
	return ParseHPET(b)
}
