// Package acpi locates and decodes the static ACPI tables Shortbread
// needs to bring up interrupts and CPUs and to power the machine off,
// following the ACPI 6.x specification §5.2 "ACPI System Description
// Tables": the RSDP (§5.2.5), the RSDT and XSDT (§5.2.7, §5.2.8), the
// FADT (§5.2.9), the DSDT (§5.2.11.1) and the MADT (§5.2.12).
//
// It does not interpret AML beyond the fixed byte pattern of a simple
// \_S5_ package, which is all a poweroff path needs.
//
// Firmware tables are read through the Memory interface so that the
// same code runs against physical memory in the kernel and against
// byte-accurate fixtures (including tables captured from QEMU) in host
// tests. Every length and pointer in the tables is treated as
// untrusted: a corrupt table yields an error, never a fault or a huge
// allocation.
package acpi

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Memory reads physical memory. Implementations return an error if any
// part of the range is unreadable.
type Memory interface {
	ReadAt(p []byte, physAddr uint64) error
}

// HeaderSize is the size of the common System Description Table header (§5.2.6).
const HeaderSize = 36

// maxTableLen bounds allocations driven by a table's Length field.
// Large server DSDTs are a few hundred KiB, so this leaves ample room
// while keeping a corrupt length from exhausting memory.
const maxTableLen = 8 << 20

// Sentinel errors; the returned errors wrap them with context.
var (
	ErrChecksum  = errors.New("checksum mismatch")
	ErrSignature = errors.New("unexpected signature")
	ErrLength    = errors.New("invalid length")
	ErrNotFound  = errors.New("table not found")
)

var le = binary.LittleEndian

// Header is the common System Description Table header (§5.2.6).
type Header struct {
	Signature       string
	Length          uint32
	Revision        uint8
	Checksum        uint8
	OEMID           string
	OEMTableID      string
	OEMRevision     uint32
	CreatorID       string
	CreatorRevision uint32
}

// ParseHeader decodes the first HeaderSize bytes of b without
// validating the rest of the table.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("acpi: table header: %w: %d bytes", ErrLength, len(b))
	}
	return Header{
		Signature:       string(b[0:4]),
		Length:          le.Uint32(b[4:]),
		Revision:        b[8],
		Checksum:        b[9],
		OEMID:           string(b[10:16]),
		OEMTableID:      string(b[16:24]),
		OEMRevision:     le.Uint32(b[24:]),
		CreatorID:       string(b[28:32]),
		CreatorRevision: le.Uint32(b[32:]),
	}, nil
}

// VerifyTable checks that b holds a complete table with the given
// signature (any signature if sig is empty) whose bytes sum to zero, as
// every table except the FACS must (§5.2.6). It returns the header.
func VerifyTable(b []byte, sig string) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if sig != "" && h.Signature != sig {
		return h, fmt.Errorf("acpi: %w: got %q, want %q", ErrSignature, h.Signature, sig)
	}
	if h.Length < HeaderSize || uint64(h.Length) > uint64(len(b)) {
		return h, fmt.Errorf("acpi: %s: %w: length field %d, %d bytes available", h.Signature, ErrLength, h.Length, len(b))
	}
	if s := sum(b[:h.Length]); s != 0 {
		return h, fmt.Errorf("acpi: %s: %w (sum %#02x)", h.Signature, ErrChecksum, s)
	}
	return h, nil
}

func sum(b []byte) uint8 {
	var s uint8
	for _, c := range b {
		s += c
	}
	return s
}

// ReadTable reads the table at physical address addr, checking its
// signature (unless sig is empty), length and checksum.
func ReadTable(mem Memory, addr uint64, sig string) ([]byte, error) {
	hdr := make([]byte, HeaderSize)
	if err := mem.ReadAt(hdr, addr); err != nil {
		return nil, fmt.Errorf("acpi: reading table header at %#x: %w", addr, err)
	}
	h, _ := ParseHeader(hdr) // cannot fail: hdr is HeaderSize bytes
	if sig != "" && h.Signature != sig {
		return nil, fmt.Errorf("acpi: table at %#x: %w: got %q, want %q", addr, ErrSignature, h.Signature, sig)
	}
	if h.Length < HeaderSize || h.Length > maxTableLen || addr+uint64(h.Length) < addr {
		return nil, fmt.Errorf("acpi: %q at %#x: %w: %d", h.Signature, addr, ErrLength, h.Length)
	}
	b := make([]byte, h.Length)
	if err := mem.ReadAt(b, addr); err != nil {
		return nil, fmt.Errorf("acpi: reading %q (%d bytes) at %#x: %w", h.Signature, h.Length, addr, err)
	}
	if _, err := VerifyTable(b, sig); err != nil {
		return nil, fmt.Errorf("%w at %#x", err, addr)
	}
	return b, nil
}

// RSDP is the decoded Root System Description Pointer (§5.2.5.3).
type RSDP struct {
	Revision uint8
	OEMID    string
	RSDTAddr uint32
	// XSDTAddr is zero for ACPI 1.0 (revision 0) pointers.
	XSDTAddr uint64
}

// ParseRSDP validates and decodes an RSDP, such as the copy in a
// Multiboot2 ACPI tag. For revision 2 and later the extended checksum is
// verified too; if only the 20-byte ACPI 1.0 part is supplied (GRUB's
// "old RSDP" tag may carry a revision-2 pointer truncated that way) it
// is treated as a 1.0 pointer and only the RSDT is used.
func ParseRSDP(b []byte) (RSDP, error) {
	if len(b) < 20 {
		return RSDP{}, fmt.Errorf("acpi: RSDP: %w: %d bytes", ErrLength, len(b))
	}
	if string(b[:8]) != "RSD PTR " {
		return RSDP{}, fmt.Errorf("acpi: RSDP: %w: %q", ErrSignature, b[:8])
	}
	if s := sum(b[:20]); s != 0 {
		return RSDP{}, fmt.Errorf("acpi: RSDP: %w (sum %#02x)", ErrChecksum, s)
	}
	r := RSDP{Revision: b[15], OEMID: string(b[9:15]), RSDTAddr: le.Uint32(b[16:])}
	if r.Revision < 2 || len(b) < 36 {
		return r, nil
	}
	n := le.Uint32(b[20:])
	if n < 36 || uint64(n) > uint64(len(b)) {
		return RSDP{}, fmt.Errorf("acpi: RSDP: %w: length field %d, %d bytes available", ErrLength, n, len(b))
	}
	if s := sum(b[:n]); s != 0 {
		return RSDP{}, fmt.Errorf("acpi: RSDP: extended %w (sum %#02x)", ErrChecksum, s)
	}
	r.XSDTAddr = le.Uint64(b[24:])
	return r, nil
}

// Entry is one verified table listed by the RSDT or XSDT.
type Entry struct {
	Signature string
	Addr      uint64
	Length    uint32
}

// Tables is the set of tables reachable from the RSDP.
type Tables struct {
	RSDP RSDP
	// Root is the header of the RSDT or XSDT the entries came from.
	Root     Header
	RootAddr uint64
	// Entries lists the tables whose length and checksum verified, in
	// root table order. Signatures may repeat (e.g. several SSDTs).
	Entries []Entry
	// Warnings records non-fatal problems: entries that failed
	// verification and were left out, or an XSDT abandoned for the RSDT.
	Warnings []error

	mem      Memory
	rejected map[string]error // why a table with this signature was left out
}

// FindTables validates the RSDP and the root table it points to, then
// verifies every table the root lists. Firmware with one broken table
// is common enough that a bad entry only produces a warning; a broken
// root table is an error. The XSDT is preferred when present, as the
// spec requires, with the RSDT as a fallback if the XSDT is unusable.
func FindTables(mem Memory, rsdp []byte) (*Tables, error) {
	r, err := ParseRSDP(rsdp)
	if err != nil {
		return nil, err
	}
	t := &Tables{RSDP: r, mem: mem, rejected: map[string]error{}}
	if r.XSDTAddr != 0 {
		err := t.loadRoot(r.XSDTAddr, "XSDT", 8)
		if err == nil {
			return t, nil
		}
		if r.RSDTAddr == 0 {
			return nil, err
		}
		t.Warnings = append(t.Warnings, fmt.Errorf("acpi: using RSDT instead: %w", err))
	}
	if r.RSDTAddr == 0 {
		return nil, fmt.Errorf("acpi: RSDP has no RSDT or XSDT address: %w", ErrNotFound)
	}
	if err := t.loadRoot(uint64(r.RSDTAddr), "RSDT", 4); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Tables) loadRoot(addr uint64, sig string, width int) error {
	b, err := ReadTable(t.mem, addr, sig)
	if err != nil {
		return err
	}
	t.Root, _ = ParseHeader(b)
	t.RootAddr = addr
	for p := b[HeaderSize:]; len(p) >= width; p = p[width:] {
		var a uint64
		if width == 8 {
			a = le.Uint64(p)
		} else {
			a = uint64(le.Uint32(p))
		}
		if a == 0 {
			t.Warnings = append(t.Warnings, fmt.Errorf("acpi: %s lists a null table pointer", sig))
			continue
		}
		tb, err := ReadTable(t.mem, a, "")
		if err != nil {
			t.Warnings = append(t.Warnings, err)
			if h, herr := t.peekHeader(a); herr == nil {
				t.rejected[h.Signature] = err
			}
			continue
		}
		h, _ := ParseHeader(tb)
		t.Entries = append(t.Entries, Entry{Signature: h.Signature, Addr: a, Length: h.Length})
	}
	return nil
}

func (t *Tables) peekHeader(addr uint64) (Header, error) {
	b := make([]byte, HeaderSize)
	if err := t.mem.ReadAt(b, addr); err != nil {
		return Header{}, err
	}
	return ParseHeader(b)
}

// Addr returns the physical address of the first verified table with
// the given signature.
func (t *Tables) Addr(sig string) (uint64, bool) {
	for _, e := range t.Entries {
		if e.Signature == sig {
			return e.Addr, true
		}
	}
	return 0, false
}

// Table reads the first verified table with the given signature. If
// the only such table failed verification, that failure is returned so
// the caller can report why, rather than a bare "not found".
func (t *Tables) Table(sig string) ([]byte, error) {
	addr, ok := t.Addr(sig)
	if !ok {
		if err := t.rejected[sig]; err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("acpi: %q: %w", sig, ErrNotFound)
	}
	// Re-verified on every read: it is cheap, and the kernel may have
	// reused memory it should not have by the time a table is wanted.
	return ReadTable(t.mem, addr, sig)
}

// ScanRSDP finds the RSDP on legacy BIOS systems by searching the first
// KiB of the Extended BIOS Data Area and then 0xE0000–0xFFFFF on
// 16-byte boundaries (§5.2.5.1). UEFI systems have no such area; there
// the RSDP comes from the boot loader. It returns the RSDP bytes (20 for
// revision 0, otherwise the full structure) and their address.
func ScanRSDP(mem Memory) ([]byte, uint64, error) {
	var areas [][2]uint64
	var seg [2]byte
	// The BDA holds the EBDA's real-mode segment at 0x40E. A value
	// outside conventional memory means there is no usable EBDA.
	if mem.ReadAt(seg[:], 0x40E) == nil {
		if ebda := uint64(le.Uint16(seg[:])) << 4; ebda >= 0x400 && ebda < 0xA0000 {
			areas = append(areas, [2]uint64{ebda, 1024})
		}
	}
	areas = append(areas, [2]uint64{0xE0000, 0x20000})
	for _, a := range areas {
		buf := make([]byte, a[1])
		if err := mem.ReadAt(buf, a[0]); err != nil {
			continue
		}
		for off := 0; off+20 <= len(buf); off += 16 {
			if string(buf[off:off+8]) != "RSD PTR " {
				continue
			}
			cand := buf[off:]
			r, err := ParseRSDP(cand)
			if err != nil {
				continue
			}
			n := 20
			if r.Revision >= 2 && len(cand) >= 36 {
				n = int(le.Uint32(cand[20:])) // validated by ParseRSDP
			}
			return append([]byte(nil), cand[:n]...), a[0] + uint64(off), nil
		}
	}
	return nil, 0, fmt.Errorf("acpi: RSDP: %w in EBDA or BIOS area", ErrNotFound)
}
