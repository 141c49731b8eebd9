package vga

import (
	"testing"

	"shortbread/kernel/term"
)

type portLog struct{ out [][2]uint16 }

func (p *portLog) Inb(uint16) uint8          { return 0 }
func (p *portLog) Outb(port uint16, v uint8) { p.out = append(p.out, [2]uint16{port, uint16(v)}) }

func TestTextScreen(t *testing.T) {
	mem := make([]uint16, 80*25)
	ports := &portLog{}
	d := &Text{Mem: mem, Rows: 25, Cols: 80, Ports: ports}
	c := term.NewConsole(d, 25, 80, nil)
	c.Write([]byte("\x1b[2;3H\x1b[31mA"))
	c.Render()
	if got := mem[1*80+2]; got != 0x0441 {
		t.Errorf("cell 1,2 = %#04x, want 0x0441 (red A)", got)
	}
	if got := mem[0]; got != 0x0720 {
		t.Errorf("cell 0,0 = %#04x, want a grey blank", got)
	}
	// The cursor after the A: row 1, col 3 = 83 = 0x53.
	want := [][2]uint16{{0x3d4, 0x0a}, {0x3d5, 14}, {0x3d4, 0x0e}, {0x3d5, 0}, {0x3d4, 0x0f}, {0x3d5, 83}}
	got := ports.out[len(ports.out)-6:]
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("cursor port writes %v, want %v", got, want)
		}
	}
	c.Write([]byte("\x1b[?25l"))
	c.Render()
	if last := ports.out[len(ports.out)-5]; last != [2]uint16{0x3d5, 14 | 0x20} {
		t.Errorf("hidden cursor wrote %v to the start register", last)
	}
}
