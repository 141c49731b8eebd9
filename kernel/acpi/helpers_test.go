package acpi

import (
	"encoding/binary"
	"fmt"
)

// fakeMem is sparse physical memory. Reads touching an unmapped byte
// fail, like a kernel read from an unmapped page would, unless
// zeroFill is set to mimic a fully populated low megabyte.
type fakeMem struct {
	regions  []fakeRegion
	zeroFill bool
}

type fakeRegion struct {
	addr uint64
	data []byte
}

// put maps data at addr, replacing any region previously put there.
func (m *fakeMem) put(addr uint64, data []byte) {
	for i, r := range m.regions {
		if r.addr == addr {
			m.regions = append(m.regions[:i], m.regions[i+1:]...)
			break
		}
	}
	m.regions = append(m.regions, fakeRegion{addr, append([]byte(nil), data...)})
}

func (m *fakeMem) ReadAt(p []byte, addr uint64) error {
	if addr+uint64(len(p)) < addr {
		return fmt.Errorf("fake: read wraps the address space")
	}
	covered := 0
	clear(p)
	for _, r := range m.regions {
		lo, hi := max(addr, r.addr), min(addr+uint64(len(p)), r.addr+uint64(len(r.data)))
		if lo < hi {
			copy(p[lo-addr:hi-addr], r.data[lo-r.addr:hi-r.addr])
			covered += int(hi - lo)
		}
	}
	if covered < len(p) && !m.zeroFill {
		return fmt.Errorf("fake: %d of %d bytes at %#x unmapped", len(p)-covered, len(p), addr)
	}
	return nil
}

var le32 = binary.LittleEndian.AppendUint32
var le64 = binary.LittleEndian.AppendUint64
var le16 = binary.LittleEndian.AppendUint16

// table builds a System Description Table the way QEMU's firmware
// does: BOCHS/BXPC identifiers and a checksum that makes the bytes sum
// to zero.
func table(sig string, rev uint8, body []byte) []byte {
	b := []byte(sig)
	b = le32(b, uint32(HeaderSize+len(body)))
	b = append(b, rev, 0)
	b = append(b, "BOCHS "...)
	b = append(b, "BXPC"+sig...)
	b = le32(b, 1)
	b = append(b, "BXPC"...)
	b = le32(b, 1)
	b = append(b, body...)
	fixChecksum(b, 9)
	return b
}

// fixChecksum recomputes the checksum byte at index at over all of b.
func fixChecksum(b []byte, at int) {
	b[at] = 0
	b[at] = -sum(b)
}

func rsdpV1(rsdt uint32) []byte {
	b := []byte("RSD PTR ")
	b = append(b, 0)
	b = append(b, "BOCHS "...)
	b = append(b, 0)
	b = le32(b, rsdt)
	fixChecksum(b, 8)
	return b
}

func rsdpV2(rsdt uint32, xsdt uint64) []byte {
	b := rsdpV1(rsdt)
	b[15] = 2
	b = le32(b, 36)
	b = le64(b, xsdt)
	b = append(b, 0, 0, 0, 0)
	fixChecksum(b[:20], 8)
	fixChecksum(b, 32)
	return b
}

func lapic(uid, id uint8, flags uint32) []byte { return le32([]byte{0, 8, uid, id}, flags) }
func ioapic(id uint8, addr, gsiBase uint32) []byte {
	return le32(le32([]byte{1, 12, id, 0}, addr), gsiBase)
}
func iso(src uint8, gsi uint32, flags uint16) []byte {
	return le16(le32([]byte{2, 10, 0, src}, gsi), flags)
}
func lapicNMI(uid uint8, flags uint16, lint uint8) []byte {
	return append(le16([]byte{4, 6, uid}, flags), lint)
}
func lapicAddrOverride(addr uint64) []byte { return le64([]byte{5, 12, 0, 0}, addr) }
func x2apic(id, flags, uid uint32) []byte {
	return le32(le32(le32([]byte{9, 16, 0, 0}, id), flags), uid)
}
func x2NMI(flags uint16, uid uint32, lint uint8) []byte {
	return append(le32(le16([]byte{10, 12}, flags), uid), lint, 0, 0, 0)
}

func madtBody(lapicAddr, flags uint32, entries ...[]byte) []byte {
	b := le32(le32(nil, lapicAddr), flags)
	for _, e := range entries {
		b = append(b, e...)
	}
	return b
}

// fadtV1 is a 116-byte ACPI 1.0 FADT with the fields QEMU's PIIX4
// machine sets.
func fadtV1(dsdt uint32) []byte {
	body := make([]byte, fadtMinLen-HeaderSize)
	put32 := func(off int, v uint32) { binary.LittleEndian.PutUint32(body[off-HeaderSize:], v) }
	put32(fadtFirmwareCtrl, 0x7fe0000)
	put32(fadtDSDT, dsdt)
	binary.LittleEndian.PutUint16(body[fadtSCIInt-HeaderSize:], 9)
	put32(fadtSMICmd, 0xb2)
	body[fadtACPIEnable-HeaderSize] = 0xf1
	body[fadtACPIDisable-HeaderSize] = 0xf0
	put32(fadtPM1aEvt, 0x600)
	put32(fadtPM1aCnt, 0x604)
	put32(fadtPMTimer, 0x608)
	body[fadtPM1CntLen-HeaderSize] = 2
	body[fadtCentury-HeaderSize] = 0x32
	put32(fadtFlags, 0x80a5)
	return table("FACP", 1, body)
}

// s5AML is the AML QEMU's DSDT uses for \_S5_ with the given values,
// surrounded by unrelated bytes.
func s5AML(a, b byte) []byte {
	aml := []byte{0x10, 0x20, '\\', '_', 'S', 'B', '_'} // Scope(\_SB) start, irrelevant here
	aml = append(aml, amlName, '_', 'S', '5', '_', amlPackage, 0x08, 0x04, amlBytePrefix, a, amlBytePrefix, b)
	return append(aml, amlZero, amlZero, 0x14, 0x0b) // trailing Method opcode
}

// Physical addresses mirroring SeaBIOS's layout for a 128 MiB guest.
const (
	qRSDP = 0xf59d0
	qDSDT = 0x7fe0040
	qFACP = 0x7fe1a8b
	qAPIC = 0x7fe1aff
	qRSDT = 0x7fe1bef
	qXSDT = 0x7fe1c40
)

func qemuLikeMADT() []byte {
	return table("APIC", 1, madtBody(0xfee00000, 1,
		lapic(0, 0, 1), lapic(1, 1, 1), lapic(2, 2, 1), lapic(3, 3, 1),
		ioapic(0, 0xfec00000, 0),
		iso(0, 2, 0),
		iso(9, 9, 0x0d),
		lapicNMI(0xff, 0, 1),
	))
}

// qemuLike builds RSDP -> RSDT -> {FACP -> DSDT, APIC}.
func qemuLike() (*fakeMem, []byte) {
	m := &fakeMem{}
	rsdp := rsdpV1(qRSDT)
	m.put(qRSDP, rsdp)
	m.put(qDSDT, table("DSDT", 1, s5AML(5, 7)))
	m.put(qFACP, fadtV1(qDSDT))
	m.put(qAPIC, qemuLikeMADT())
	m.put(qRSDT, table("RSDT", 1, le32(le32(nil, qFACP), qAPIC)))
	return m, rsdp
}
