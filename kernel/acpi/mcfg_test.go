package acpi

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

func TestMCFGCaptures(t *testing.T) {
	for _, tt := range []struct {
		file string
		want []ECAMRegion
		err  error
	}{
		// QEMU q35's firmware (SeaBIOS and OVMF alike) puts ECAM at
		// 0xb0000000 for buses 0-255; pc has no ECAM.
		{"qemu-q35.bin", []ECAMRegion{{Base: 0xb0000000, Segment: 0, StartBus: 0, EndBus: 255}}, nil},
		{"qemu-ovmf.bin", []ECAMRegion{{Base: 0xb0000000, Segment: 0, StartBus: 0, EndBus: 255}}, nil},
		{"qemu-pc.bin", nil, ErrNotFound},
	} {
		t.Run(tt.file, func(t *testing.T) {
			c, err := loadCapture(tt.file)
			if err != nil {
				t.Fatal(err)
			}
			tabs, err := FindTables(c.mem, c.rsdp)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tabs.MCFG()
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("MCFG: %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("MCFG = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func mcfg(entries ...[]byte) []byte {
	b := make([]byte, 44)
	copy(b, "MCFG")
	for _, e := range entries {
		b = append(b, e...)
	}
	binary.LittleEndian.PutUint32(b[4:], uint32(len(b)))
	return b
}

func mcfgEntry(base uint64, seg uint16, start, end uint8) []byte {
	e := make([]byte, 16)
	binary.LittleEndian.PutUint64(e, base)
	binary.LittleEndian.PutUint16(e[8:], seg)
	e[10], e[11] = start, end
	return e
}

func TestParseMCFG(t *testing.T) {
	regs, err := ParseMCFG(mcfg(mcfgEntry(0, 0, 0, 255), mcfgEntry(0xe0000000, 0, 8, 4), mcfgEntry(0xc0000000, 1, 16, 31)))
	if err != nil || !reflect.DeepEqual(regs, []ECAMRegion{{Base: 0xc0000000, Segment: 1, StartBus: 16, EndBus: 31}}) {
		t.Fatalf("regions %+v, %v", regs, err)
	}
	if a, ok := regs[0].Addr(17, 3, 2); !ok || a != 0xc0000000+17<<20+3<<15+2<<12 {
		t.Errorf("Addr(17,3,2) = %#x %v", a, ok)
	}
	for _, bdf := range [][3]uint8{{15, 0, 0}, {32, 0, 0}, {16, 32, 0}, {16, 0, 8}} {
		if _, ok := regs[0].Addr(bdf[0], bdf[1], bdf[2]); ok {
			t.Errorf("Addr%v accepted", bdf)
		}
	}
	if _, err := ParseMCFG(mcfg()); err == nil {
		t.Error("empty MCFG accepted")
	}
	if _, err := ParseMCFG(mcfg(mcfgEntry(0x12345, 0, 0, 1))); err == nil {
		t.Error("unaligned base accepted")
	}
	short := mcfg(mcfgEntry(0xe0000000, 0, 0, 255))
	if _, err := ParseMCFG(short[:50]); !errors.Is(err, ErrLength) {
		t.Errorf("truncated table: %v", err)
	}
}
