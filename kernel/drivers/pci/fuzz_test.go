package pci_test

import (
	"encoding/binary"
	"testing"

	"shortbread/kernel/drivers/pci"
)

// rawConfig is configuration space made of arbitrary bytes: every
// function on bus 0 (and buses bridges name) reads from the input,
// wrapping around, and writes are ignored.
type rawConfig struct{ b []byte }

func (r rawConfig) Read(a pci.Addr, off uint16, size int) uint32 {
	if len(r.b) == 0 {
		return 0xffffffff
	}
	base := (int(a.Bus)<<16 | int(a.Dev)<<11 | int(a.Fn)<<8) % len(r.b)
	var v [4]byte
	for i := 0; i < size; i++ {
		v[i] = r.b[(base+int(off)+i)%len(r.b)]
	}
	return binary.LittleEndian.Uint32(v[:])
}

func (rawConfig) Write(pci.Addr, uint16, int, uint32) {}

// FuzzScan: whatever configuration space says, enumeration ends, never
// panics, and every capability it reports lies inside the header space.
func FuzzScan(f *testing.F) {
	f.Add([]byte{0x86, 0x80, 0x00, 0x29, 0, 0, 0x10, 0, 0, 0, 0, 6, 0, 0, 0x81})
	f.Add(make([]byte, 256))
	f.Fuzz(func(t *testing.T, b []byte) {
		devs, _ := pci.Scan(rawConfig{b})
		for _, d := range devs {
			if len(d.Caps) > 48 {
				t.Fatalf("%s: %d capabilities", d.Addr, len(d.Caps))
			}
			for _, c := range d.Caps {
				if c.Off < 0x40 || c.Off > 0xfc {
					t.Fatalf("%s: capability at %#x", d.Addr, c.Off)
				}
			}
			for _, bar := range d.BARs {
				if bar.Size != 0 && bar.Size&(bar.Size-1) != 0 {
					t.Fatalf("%s: BAR size %#x", d.Addr, bar.Size)
				}
			}
		}
	})
}
