// Package pcitest simulates PCI configuration space for host tests:
// functions with read-only IDs, sizable BARs, capability lists and
// bridges, laid out as QEMU's q35 and pc machines present them.
package pcitest

import (
	"encoding/binary"
	"fmt"

	"shortbread/kernel/drivers/pci"
)

// Func is one simulated function.
type Func struct {
	Space    [4096]byte
	barMask  [6]uint32 // writable bits of each BAR register
	nextCap  uint16
	lastCap  uint16
	BadSizes []string // BARs written while their decoding was on
}

// Config is a simulated configuration space.
type Config struct {
	Funcs map[pci.Addr]*Func
}

// New returns an empty configuration space.
func New() *Config { return &Config{Funcs: map[pci.Addr]*Func{}} }

// Add creates a type-0 function.
func (c *Config) Add(a pci.Addr, vendor, device uint16, class uint32) *Func {
	f := &Func{nextCap: 0x40}
	binary.LittleEndian.PutUint16(f.Space[0:], vendor)
	binary.LittleEndian.PutUint16(f.Space[2:], device)
	binary.LittleEndian.PutUint32(f.Space[8:], class<<8|1)
	c.Funcs[a] = f
	return f
}

// AddBridge creates a PCI-to-PCI bridge to bus secondary.
func (c *Config) AddBridge(a pci.Addr, vendor, device uint16, secondary uint8) *Func {
	f := c.Add(a, vendor, device, 0x060400)
	f.Space[0x0e] = 1
	f.Space[0x18] = a.Bus
	f.Space[0x19] = secondary
	f.Space[0x1a] = secondary
	return f
}

// MultiFunction sets the multi-function bit of the header type.
func (f *Func) MultiFunction() *Func { f.Space[0x0e] |= 0x80; return f }

// Interrupt sets the interrupt pin (1 = INTA) and line.
func (f *Func) Interrupt(pin, line uint8) *Func { f.Space[0x3d], f.Space[0x3c] = pin, line; return f }

// MemBAR makes BAR i a memory BAR of size bytes at addr (64-bit ones
// take BAR i+1 too).
func (f *Func) MemBAR(i int, addr, size uint64, mem64, prefetch bool) *Func {
	mask := ^(size - 1)
	low := uint32(0)
	if mem64 {
		low |= 4
	}
	if prefetch {
		low |= 8
	}
	f.barMask[i] = uint32(mask) &^ 0xf
	binary.LittleEndian.PutUint32(f.Space[0x10+4*i:], uint32(addr)&f.barMask[i]|low)
	if mem64 {
		f.barMask[i+1] = uint32(mask >> 32)
		binary.LittleEndian.PutUint32(f.Space[0x14+4*i:], uint32(addr>>32))
	}
	return f
}

// IOBAR makes BAR i an I/O BAR of size bytes at port; with decode16 the
// upper half of the register reads as zero, as some devices do.
func (f *Func) IOBAR(i int, port uint32, size uint32, decode16 bool) *Func {
	f.barMask[i] = ^(size - 1) &^ 3
	if decode16 {
		f.barMask[i] &= 0xffff
	}
	binary.LittleEndian.PutUint32(f.Space[0x10+4*i:], port&f.barMask[i]|1)
	return f
}

// AddCap appends capability id with body (the bytes after the ID and
// next pointer) and returns its offset.
func (f *Func) AddCap(id uint8, body []byte) uint16 {
	off := f.nextCap
	f.Space[off] = id
	copy(f.Space[off+2:], body)
	if f.lastCap == 0 {
		f.Space[0x34] = uint8(off)
		f.Space[6] |= 0x10
	} else {
		f.Space[f.lastCap+1] = uint8(off)
	}
	f.lastCap = off
	f.nextCap = (off + 2 + uint16(len(body)) + 3) &^ 3
	return off
}

// LoopCaps points the last capability back at the first.
func (f *Func) LoopCaps() { f.Space[f.lastCap+1] = f.Space[0x34] }

func (c *Config) Read(a pci.Addr, off uint16, size int) uint32 {
	f := c.Funcs[a]
	if f == nil || off >= 4096 {
		return 0xffffffff >> (32 - 8*size)
	}
	switch size {
	case 1:
		return uint32(f.Space[off])
	case 2:
		return uint32(binary.LittleEndian.Uint16(f.Space[off:]))
	}
	return binary.LittleEndian.Uint32(f.Space[off:])
}

func (c *Config) Write(a pci.Addr, off uint16, size int, v uint32) {
	f := c.Funcs[a]
	if f == nil || off >= 4096 {
		return
	}
	nbars := 6
	if f.Space[0x0e]&0x7f == 1 {
		nbars = 2
	}
	switch {
	case off < 4, off >= 8 && off < 0x10, off == 0x34, off == 0x3d, off >= 0x2c && off < 0x30:
		return // IDs, class, header type, capability pointer, pin: read-only
	case off == 6:
		return // status: nothing to clear here
	case off >= 0x10 && off < 0x10+4*uint16(nbars) && (f.Space[0x0e]&0x7f == 0 || off < 0x18):
		if size != 4 {
			panic(fmt.Sprintf("pcitest: %d-byte BAR write", size))
		}
		i := int(off-0x10) / 4
		cmd := f.Space[4]
		if v == 0xffffffff && cmd&3 != 0 {
			f.BadSizes = append(f.BadSizes, fmt.Sprintf("%s BAR%d", a, i))
		}
		old := binary.LittleEndian.Uint32(f.Space[off:])
		ro := old &^ f.barMask[i]
		if f.barMask[i] != 0 && i > 0 && f.barMask[i-1] != 0 && f.Space[0x10+4*(i-1)]&6 == 4 {
			ro = 0 // the high half of a 64-bit BAR
		}
		binary.LittleEndian.PutUint32(f.Space[off:], v&f.barMask[i]|ro&^f.barMask[i])
		return
	}
	switch size {
	case 1:
		f.Space[off] = uint8(v)
	case 2:
		binary.LittleEndian.PutUint16(f.Space[off:], uint16(v))
	default:
		binary.LittleEndian.PutUint32(f.Space[off:], v)
	}
}

// Virtio capability body (virtio 1.0 §4.1.4): cap_len, cfg_type, bar,
// padding, offset, length (and the notify multiplier for type 2).
func VirtioCap(cfgType, bar uint8, off, length uint32, extra ...uint32) []byte {
	b := make([]byte, 14+4*len(extra))
	b[0] = byte(16 + 4*len(extra))
	b[1] = cfgType
	b[2] = bar
	binary.LittleEndian.PutUint32(b[6:], off)
	binary.LittleEndian.PutUint32(b[10:], length)
	for i, e := range extra {
		binary.LittleEndian.PutUint32(b[14+4*i:], e)
	}
	return b
}

// MSIXCap is an MSI-X capability body: n entries, table and PBA in bar.
func MSIXCap(n int, bar uint8, table, pba uint32) []byte {
	b := make([]byte, 10)
	binary.LittleEndian.PutUint16(b[0:], uint16(n-1))
	binary.LittleEndian.PutUint32(b[2:], table|uint32(bar))
	binary.LittleEndian.PutUint32(b[6:], pba|uint32(bar))
	return b
}

// MSICap is a 64-bit MSI capability body with per-vector masking.
func MSICap() []byte {
	b := make([]byte, 18)
	binary.LittleEndian.PutUint16(b[0:], 1<<7|1<<8)
	return b
}

// Q35 is QEMU's -machine q35 with a virtio-blk disk on the root bus, a
// PCIe root port with an e1000e behind it, and the ICH9 functions.
func Q35() *Config {
	c := New()
	c.Add(at(0, 0, 0), 0x8086, 0x29c0, 0x060000)
	c.Add(at(0, 1, 0), 0x1234, 0x1111, 0x030000).
		MemBAR(0, 0xfd000000, 16<<20, false, true).MemBAR(2, 0xfebd4000, 4096, false, false)
	blk := c.Add(at(0, 2, 0), 0x1af4, 0x1042, 0x010000).Interrupt(1, 10).
		MemBAR(1, 0xfebd5000, 4096, false, false).MemBAR(4, 0xfe000000, 16384, true, true)
	binary.LittleEndian.PutUint16(blk.Space[0x2c:], 0x1af4)
	binary.LittleEndian.PutUint16(blk.Space[0x2e:], 0x1100)
	blk.AddCap(pci.CapMSIX, MSIXCap(2, 1, 0, 0x800))
	blk.AddCap(pci.CapVendor, VirtioCap(1, 4, 0, 0x1000))
	blk.AddCap(pci.CapVendor, VirtioCap(3, 4, 0x1000, 0x1000))
	blk.AddCap(pci.CapVendor, VirtioCap(4, 4, 0x2000, 0x1000))
	blk.AddCap(pci.CapVendor, VirtioCap(2, 4, 0x3000, 0x1000, 4))
	rp := c.AddBridge(at(0, 0x1c, 0), 0x1b36, 0x000c, 1).MemBAR(0, 0xfebd6000, 4096, false, false)
	rp.AddCap(pci.CapPCIe, make([]byte, 58))
	rp.AddCap(pci.CapMSIX, MSIXCap(1, 0, 0, 0x800))
	nic := c.Add(at(1, 0, 0), 0x8086, 0x10d3, 0x020000).Interrupt(1, 11).
		MemBAR(0, 0xfe800000, 128<<10, false, false).MemBAR(1, 0xfe820000, 128<<10, false, false).
		IOBAR(2, 0xc000, 32, false).MemBAR(3, 0xfe840000, 16<<10, false, false)
	nic.AddCap(pci.CapMSI, MSICap())
	nic.AddCap(pci.CapPCIe, make([]byte, 58))
	nic.AddCap(pci.CapMSIX, MSIXCap(5, 3, 0, 0x2000))
	c.Add(at(0, 0x1f, 0), 0x8086, 0x2918, 0x060100).MultiFunction()
	ahci := c.Add(at(0, 0x1f, 2), 0x8086, 0x2922, 0x010601).Interrupt(1, 10).
		IOBAR(4, 0xc040, 32, false).MemBAR(5, 0xfebd7000, 4096, false, false)
	ahci.AddCap(pci.CapMSI, MSICap())
	c.Add(at(0, 0x1f, 3), 0x8086, 0x2930, 0x0c0500).Interrupt(1, 10).IOBAR(4, 0x0700, 64, false)
	return c
}

// PC is QEMU's -machine pc: i440FX, PIIX3 (ISA bridge, IDE with a
// 16-bit I/O decoder, ACPI), the VGA and an e1000 without MSI.
func PC() *Config {
	c := New()
	c.Add(at(0, 0, 0), 0x8086, 0x1237, 0x060000)
	c.Add(at(0, 1, 0), 0x8086, 0x7000, 0x060100).MultiFunction()
	c.Add(at(0, 1, 1), 0x8086, 0x7010, 0x010180).IOBAR(4, 0xc060, 16, true)
	c.Add(at(0, 1, 3), 0x8086, 0x7113, 0x068000).Interrupt(1, 9)
	c.Add(at(0, 2, 0), 0x1234, 0x1111, 0x030000).
		MemBAR(0, 0xfd000000, 16<<20, false, true).MemBAR(2, 0xfebf0000, 4096, false, false)
	c.Add(at(0, 3, 0), 0x8086, 0x100e, 0x020000).Interrupt(1, 11).
		MemBAR(0, 0xfebc0000, 128<<10, false, false).IOBAR(1, 0xc000, 64, false)
	return c
}

// Mem is a simulated memory region (a BAR's registers as plain memory).
type Mem struct{ B []byte }

func (m *Mem) Read8(off uint32) uint8     { return m.B[off] }
func (m *Mem) Read16(off uint32) uint16   { return binary.LittleEndian.Uint16(m.B[off:]) }
func (m *Mem) Read32(off uint32) uint32   { return binary.LittleEndian.Uint32(m.B[off:]) }
func (m *Mem) Write8(off uint32, v uint8) { m.B[off] = v }
func (m *Mem) Write16(off uint32, v uint16) {
	binary.LittleEndian.PutUint16(m.B[off:], v)
}
func (m *Mem) Write32(off uint32, v uint32) {
	binary.LittleEndian.PutUint32(m.B[off:], v)
}

func at(bus, dev, fn uint8) pci.Addr { return pci.Addr{Bus: bus, Dev: dev, Fn: fn} }
