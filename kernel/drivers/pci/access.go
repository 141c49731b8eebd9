package pci

import "sync"

// Region is a range of device registers in memory: a memory BAR or the
// ECAM window. Offsets are from its start; each access is one load or
// store of that width.
type Region interface {
	Read8(off uint32) uint8
	Read16(off uint32) uint16
	Read32(off uint32) uint32
	Write8(off uint32, v uint8)
	Write16(off uint32, v uint16)
	Write32(off uint32, v uint32)
}

// ECAM is configuration space mapped in memory (PCI Express Base 3.0
// §7.2.2): 4 KiB per function, Mem starting at bus 0's address (the MCFG
// base), buses Start..End.
type ECAM struct {
	Mem        Region
	Start, End uint8
}

func (e *ECAM) off(a Addr, off uint16) (uint32, bool) {
	if a.Bus < e.Start || a.Bus > e.End || a.Dev > 31 || a.Fn > 7 || off >= 4096 {
		return 0, false
	}
	return uint32(a.Bus)<<20 | uint32(a.Dev)<<15 | uint32(a.Fn)<<12 | uint32(off), true
}

func (e *ECAM) Read(a Addr, off uint16, size int) uint32 {
	o, ok := e.off(a, off)
	if !ok {
		return 0xffffffff >> (32 - 8*size)
	}
	switch size {
	case 1:
		return uint32(e.Mem.Read8(o))
	case 2:
		return uint32(e.Mem.Read16(o))
	}
	return e.Mem.Read32(o)
}

func (e *ECAM) Write(a Addr, off uint16, size int, v uint32) {
	o, ok := e.off(a, off)
	if !ok {
		return
	}
	switch size {
	case 1:
		e.Mem.Write8(o, uint8(v))
	case 2:
		e.Mem.Write16(o, uint16(v))
	default:
		e.Mem.Write32(o, v)
	}
}

// Ports is x86 port I/O (kernel/arch in the kernel).
type Ports interface {
	In8(port uint16) uint8
	In16(port uint16) uint16
	In32(port uint16) uint32
	Out8(port uint16, v uint8)
	Out16(port uint16, v uint16)
	Out32(port uint16, v uint32)
}

// PortConfig is configuration mechanism #1 (PCI Local Bus 3.0 §3.2.2.3.2):
// the address goes to 0xCF8, the data moves through 0xCFC..0xCFF. It
// reaches the first 256 bytes of each function only. The address
// register is shared, so accesses are serialized.
type PortConfig struct {
	P  Ports
	mu sync.Mutex
}

const (
	portAddr = 0xcf8
	portData = 0xcfc
)

func (c *PortConfig) select_(a Addr, off uint16) bool {
	if off >= 256 || a.Dev > 31 || a.Fn > 7 {
		return false
	}
	c.P.Out32(portAddr, 1<<31|uint32(a.Bus)<<16|uint32(a.Dev)<<11|uint32(a.Fn)<<8|uint32(off)&0xfc)
	return true
}

func (c *PortConfig) Read(a Addr, off uint16, size int) uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.select_(a, off) {
		return 0xffffffff >> (32 - 8*size)
	}
	port := portData + off&3
	switch size {
	case 1:
		return uint32(c.P.In8(port))
	case 2:
		return uint32(c.P.In16(port))
	}
	return c.P.In32(port)
}

func (c *PortConfig) Write(a Addr, off uint16, size int, v uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.select_(a, off) {
		return
	}
	port := portData + off&3
	switch size {
	case 1:
		c.P.Out8(port, uint8(v))
	case 2:
		c.P.Out16(port, uint16(v))
	default:
		c.P.Out32(port, v)
	}
}
