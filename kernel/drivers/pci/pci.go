// Package pci finds the devices on the PCI buses and hands them to the
// drivers that claim them. Configuration space is reached through the
// Config interface: ECAM (memory-mapped, from the ACPI MCFG table) when
// the firmware describes it, the legacy 0xCF8/0xCFC port mechanism
// otherwise; a simulated configuration space (package pcitest) stands in
// for both under go test. Enumeration walks every bus reachable through
// the bridges' secondary bus numbers, which the firmware assigns (this
// package does not renumber buses or move BARs).
package pci

import (
	"fmt"
)

// Addr is a function's bus/device/function number in segment 0.
type Addr struct{ Bus, Dev, Fn uint8 }

// String is Linux's form, 0000:00:1f.2.
func (a Addr) String() string { return fmt.Sprintf("0000:%02x:%02x.%d", a.Bus, a.Dev, a.Fn) }

// Config reads and writes configuration space. size is 1, 2 or 4 and off
// a multiple of it; a function that does not exist reads as all ones.
type Config interface {
	Read(a Addr, off uint16, size int) uint32
	Write(a Addr, off uint16, size int, v uint32)
}

// Configuration space registers (PCI Local Bus 3.0 §6.1, bridges:
// PCI-to-PCI Bridge 1.2 §3.2).
const (
	RegVendor      = 0x00
	RegDevice      = 0x02
	RegCommand     = 0x04
	RegStatus      = 0x06
	RegRevision    = 0x08
	RegHeader      = 0x0e
	RegBAR0        = 0x10
	RegSecondary   = 0x19 // bridges
	RegSubVendor   = 0x2c
	RegSubDevice   = 0x2e
	RegCapPtr      = 0x34
	RegIntLine     = 0x3c
	RegIntPin      = 0x3d
	RegCBSubVendor = 0x40 // CardBus bridges' subsystem IDs
	RegCBSubDevice = 0x42
	CmdIO          = 1 << 0
	CmdMemory      = 1 << 1
	CmdBusMaster   = 1 << 2
	CmdINTxDisable = 1 << 10
	statusCaps     = 1 << 4
)

// Capability IDs.
const (
	CapMSI    = 0x05
	CapVendor = 0x09
	CapSSVID  = 0x0d // a PCI-to-PCI bridge's subsystem vendor and device IDs, at +4 and +6
	CapPCIe   = 0x10
	CapMSIX   = 0x11
)

// BAR is a base address register after sizing.
type BAR struct {
	Addr     uint64 // bus address the firmware assigned
	Size     uint64 // 0: not implemented
	IO       bool   // I/O space (else memory)
	Mem64    bool   // a 64-bit memory BAR (takes the next register too)
	Prefetch bool
}

// Cap is one entry of a function's capability list.
type Cap struct {
	ID  uint8
	Off uint16
}

// Device is one PCI function.
type Device struct {
	Addr
	Vendor, Device       uint16
	Class                uint32 // class, subclass, programming interface
	Revision             uint8
	Header               uint8  // header type without the multi-function bit
	SubVendor, SubDevice uint16 // bridges: from CapSSVID or the CardBus registers, else 0
	IntLine, IntPin      uint8
	BARs                 [6]BAR
	Caps                 []Cap
	Secondary            uint8 // a bridge's secondary bus

	cfg Config
}

// Read reads size bytes of d's configuration space at off.
func (d *Device) Read(off uint16, size int) uint32 { return d.cfg.Read(d.Addr, off, size) }

// Write writes size bytes of d's configuration space at off.
func (d *Device) Write(off uint16, size int, v uint32) { d.cfg.Write(d.Addr, off, size, v) }

// SetCommand sets and clears bits of the command register.
func (d *Device) SetCommand(set, clear uint16) {
	c := uint16(d.Read(RegCommand, 2))
	d.Write(RegCommand, 2, uint32(c&^clear|set))
}

// Cap returns the offset of d's first capability with id.
func (d *Device) Cap(id uint8) (uint16, bool) {
	for _, c := range d.Caps {
		if c.ID == id {
			return c.Off, true
		}
	}
	return 0, false
}

func (d *Device) String() string {
	return fmt.Sprintf("%s [%04x:%04x] class %06x", d.Addr, d.Vendor, d.Device, d.Class)
}

// Scan enumerates every function reachable from bus 0 and returns them in
// bus order, with a note for everything odd it skipped (a bridge with no
// secondary bus assigned, a looping capability list).
func Scan(cfg Config) (devs []*Device, notes []string) {
	s := &scanner{cfg: cfg}
	s.bus(0)
	return s.devs, s.notes
}

type scanner struct {
	cfg   Config
	seen  [256]bool
	devs  []*Device
	notes []string
}

func (s *scanner) note(format string, args ...any) {
	s.notes = append(s.notes, fmt.Sprintf(format, args...))
}

func (s *scanner) bus(b uint8) {
	if s.seen[b] {
		s.note("pci: bus %02x reached twice", b)
		return
	}
	s.seen[b] = true
	for dev := uint8(0); dev < 32; dev++ {
		a := Addr{b, dev, 0}
		if uint16(s.cfg.Read(a, RegVendor, 2)) == 0xffff {
			continue
		}
		fns := uint8(1)
		if s.cfg.Read(a, RegHeader, 1)&0x80 != 0 {
			fns = 8
		}
		for fn := uint8(0); fn < fns; fn++ {
			a.Fn = fn
			if uint16(s.cfg.Read(a, RegVendor, 2)) == 0xffff {
				continue
			}
			d := s.probe(a)
			s.devs = append(s.devs, d)
			if d.Header == 1 {
				if d.Secondary <= b {
					s.note("pci: bridge %s has secondary bus %02x; not followed", a, d.Secondary)
					continue
				}
				s.bus(d.Secondary)
			}
		}
	}
}

func (s *scanner) probe(a Addr) *Device {
	c := s.cfg
	d := &Device{
		Addr:     a,
		Vendor:   uint16(c.Read(a, RegVendor, 2)),
		Device:   uint16(c.Read(a, RegDevice, 2)),
		Class:    c.Read(a, RegRevision, 4) >> 8,
		Revision: uint8(c.Read(a, RegRevision, 1)),
		Header:   uint8(c.Read(a, RegHeader, 1)) & 0x7f,
		IntLine:  uint8(c.Read(a, RegIntLine, 1)),
		IntPin:   uint8(c.Read(a, RegIntPin, 1)),
		cfg:      c,
	}
	nbars := 0
	switch d.Header {
	case 0:
		nbars = 6
		d.SubVendor = uint16(c.Read(a, RegSubVendor, 2))
		d.SubDevice = uint16(c.Read(a, RegSubDevice, 2))
	case 1:
		nbars = 2
		d.Secondary = uint8(c.Read(a, RegSecondary, 1))
	}
	s.sizeBARs(d, nbars)
	s.caps(d)
	// Bridges keep their subsystem IDs elsewhere; Linux reads them from
	// these places too, so sysfs and lspci show the same IDs on both.
	switch d.Header {
	case 1:
		if off, ok := d.Cap(CapSSVID); ok {
			d.SubVendor = uint16(d.Read(off+4, 2))
			d.SubDevice = uint16(d.Read(off+6, 2))
		}
	case 2:
		d.SubVendor = uint16(c.Read(a, RegCBSubVendor, 2))
		d.SubDevice = uint16(c.Read(a, RegCBSubDevice, 2))
	}
	return d
}

// sizeBARs finds each BAR's size by writing all ones and reading back
// which address bits stick, with decoding off meanwhile so the device
// never answers at the probe address.
func (s *scanner) sizeBARs(d *Device, n int) {
	if n == 0 {
		return
	}
	cmd := uint16(d.Read(RegCommand, 2))
	d.Write(RegCommand, 2, uint32(cmd&^(CmdIO|CmdMemory)))
	defer d.Write(RegCommand, 2, uint32(cmd))
	probe := func(off uint16) (orig, mask uint32) {
		orig = d.Read(off, 4)
		d.Write(off, 4, 0xffffffff)
		mask = d.Read(off, 4)
		d.Write(off, 4, orig)
		return orig, mask
	}
	for i := 0; i < n; i++ {
		off := RegBAR0 + uint16(i)*4
		orig, mask := probe(off)
		if mask == 0 || mask == 0xffffffff && orig == 0xffffffff {
			continue
		}
		b := &d.BARs[i]
		if orig&1 != 0 {
			m := mask &^ 3
			if m&0xffff0000 == 0 {
				m |= 0xffff0000 // 16-bit I/O decoders leave the top half 0
			}
			size := uint64(^m + 1)
			if mask&0xfffc == 0 || size&(size-1) != 0 {
				s.note("pci: %s BAR%d (I/O) reads back %#x; ignored", d.Addr, i, mask)
				*b = BAR{}
				continue
			}
			b.IO, b.Addr, b.Size = true, uint64(orig&^3), size
			continue
		}
		b.Prefetch = orig&8 != 0
		addr, m := uint64(orig&^0xf), uint64(mask&^0xf)|0xffffffff00000000
		if (orig>>1)&3 == 2 && i+1 < n {
			b.Mem64 = true
			hi, hmask := probe(off + 4)
			addr |= uint64(hi) << 32
			m = uint64(hmask)<<32 | m&0xffffffff
			i++
		}
		size := ^m + 1
		if m&^0xf == 0 || size&(size-1) != 0 {
			s.note("pci: %s BAR%d reads back %#x; ignored", d.Addr, i, mask)
			*b = BAR{}
			continue
		}
		b.Addr, b.Size = addr, size
	}
}

// caps walks the capability list, bounded so a looping list (a device
// is input too) ends.
func (s *scanner) caps(d *Device) {
	if d.Read(RegStatus, 2)&statusCaps == 0 {
		return
	}
	p := uint16(d.Read(RegCapPtr, 1)) &^ 3
	for n := 0; p != 0; n++ {
		if p < 0x40 || n == 48 {
			s.note("pci: %s capability list broken at %#x", d.Addr, p)
			return
		}
		d.Caps = append(d.Caps, Cap{ID: uint8(d.Read(p, 1)), Off: p})
		p = uint16(d.Read(p+1, 1)) &^ 3
	}
}
