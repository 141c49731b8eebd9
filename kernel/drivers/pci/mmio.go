package pci

import "shortbread/kernel/arch"

// MMIO is a Region at a kernel virtual address (an uncached mapping of
// device memory). Accesses outside it read as all ones and write nothing,
// so a bad offset from a device never reaches other memory.
type MMIO struct {
	Base, Size uintptr
}

func (m MMIO) ok(off uint32, n uintptr) bool { return uintptr(off)+n <= m.Size }

func (m MMIO) Read8(off uint32) uint8 {
	if !m.ok(off, 1) {
		return 0xff
	}
	return arch.Read8(m.Base + uintptr(off))
}

func (m MMIO) Read16(off uint32) uint16 {
	if !m.ok(off, 2) {
		return 0xffff
	}
	return arch.Read16(m.Base + uintptr(off))
}

func (m MMIO) Read32(off uint32) uint32 {
	if !m.ok(off, 4) {
		return 0xffffffff
	}
	return arch.Read32(m.Base + uintptr(off))
}

func (m MMIO) Write8(off uint32, v uint8) {
	if m.ok(off, 1) {
		arch.Write8(m.Base+uintptr(off), v)
	}
}

func (m MMIO) Write16(off uint32, v uint16) {
	if m.ok(off, 2) {
		arch.Write16(m.Base+uintptr(off), v)
	}
}

func (m MMIO) Write32(off uint32, v uint32) {
	if m.ok(off, 4) {
		arch.Write32(m.Base+uintptr(off), v)
	}
}

// ArchPorts is Ports through kernel/arch's port instructions.
type ArchPorts struct{}

func (ArchPorts) In8(p uint16) uint8       { return arch.Inb(p) }
func (ArchPorts) In16(p uint16) uint16     { return arch.Inw(p) }
func (ArchPorts) In32(p uint16) uint32     { return arch.Inl(p) }
func (ArchPorts) Out8(p uint16, v uint8)   { arch.Outb(p, v) }
func (ArchPorts) Out16(p uint16, v uint16) { arch.Outw(p, v) }
func (ArchPorts) Out32(p uint16, v uint32) { arch.Outl(p, v) }
