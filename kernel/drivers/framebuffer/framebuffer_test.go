package framebuffer

import (
	"testing"

	"shortbread/kernel/font"
	"shortbread/kernel/term"
)

// xrgb is the GOP's usual format: 32 bits, blue in the low byte.
var xrgb = Mode{Width: 40, Height: 35, Pitch: 40*4 + 12, BPP: 32,
	RedPos: 16, RedSize: 8, GreenPos: 8, GreenSize: 8, BluePos: 0, BlueSize: 8}

// readCell decodes the cell at row, col back to a glyph, taking pixels
// equal to bg as off.
func readCell(mem []byte, m Mode, row, col int, bg uint32) [font.Height]byte {
	var g [font.Height]byte
	for y := 0; y < font.Height; y++ {
		for x := 0; x < font.Width; x++ {
			off := (row*font.Height+y)*m.Pitch + (col*font.Width+x)*m.BPP/8
			var p uint32
			for i := 0; i < m.BPP/8; i++ {
				p |= uint32(mem[off+i]) << (8 * i)
			}
			if p != bg {
				g[y] |= 0x80 >> x
			}
		}
	}
	return g
}

func TestDrawsGlyphsAndColours(t *testing.T) {
	mem := make([]byte, xrgb.Pitch*xrgb.Height)
	f, err := New(mem, xrgb)
	if err != nil {
		t.Fatal(err)
	}
	rows, cols := f.Size()
	if rows != 2 || cols != 5 {
		t.Fatalf("size %dx%d, want 2x5", rows, cols)
	}
	c := term.NewConsole(f, rows, cols, nil)
	c.Write([]byte("ab\x1b[2;1H\x1b[31mZ"))
	c.Render()
	for _, tc := range []struct {
		row, col int
		ch       byte
	}{{0, 0, 'a'}, {0, 1, 'b'}, {1, 0, 'Z'}} {
		if got, ok := font.Match(readCell(mem, xrgb, tc.row, tc.col, 0)); !ok || got != tc.ch {
			t.Errorf("cell %d,%d reads %q (%v), want %q", tc.row, tc.col, got, ok, tc.ch)
		}
	}
	// Z is red (VGA colour 4: 170,0,0), a on grey.
	var red, grey bool
	for i := 0; i+4 <= len(mem); i += 4 {
		switch uint32(mem[i]) | uint32(mem[i+1])<<8 | uint32(mem[i+2])<<16 {
		case 0xaa0000:
			red = true
		case 0xaaaaaa:
			grey = true
		}
	}
	if !red || !grey {
		t.Errorf("red pixels %v, grey pixels %v; want both", red, grey)
	}
	// The cursor (row 1, col 1) is an underline: the last two rows lit.
	g := readCell(mem, xrgb, 1, 1, 0)
	if g[font.Height-1] != 0xff || g[font.Height-2] != 0xff || g[0] != 0 {
		t.Errorf("cursor cell %x", g)
	}
	// Nothing is written past the visible width in the pitch's padding.
	for y := 0; y < xrgb.Height; y++ {
		for _, b := range mem[y*xrgb.Pitch+xrgb.Width*4 : (y+1)*xrgb.Pitch] {
			if b != 0 {
				t.Fatalf("padding of line %d written", y)
			}
		}
	}
}

func TestPixelFormats(t *testing.T) {
	rgb565 := Mode{Width: 8, Height: 16, Pitch: 16, BPP: 16, RedPos: 11, RedSize: 5, GreenPos: 5, GreenSize: 6, BluePos: 0, BlueSize: 5}
	mem := make([]byte, 16*16)
	f, err := New(mem, rgb565)
	if err != nil {
		t.Fatal(err)
	}
	f.Draw(0, 0, term.Cell{Ch: ' ', Attr: 0xf0}, false) // white background
	// attr 0xf0: background 7 (grey: the text modes' backgrounds have 8 colours).
	if p := uint16(mem[0]) | uint16(mem[1])<<8; p != 0xad55 {
		t.Errorf("pixel %#04x, want grey 0xad55", p)
	}
	if _, err := New(make([]byte, 10), rgb565); err == nil {
		t.Error("a framebuffer larger than its memory was accepted")
	}
	if _, err := New(mem, Mode{Width: 8, Height: 16, Pitch: 8, BPP: 8}); err == nil {
		t.Error("8 bits per pixel was accepted")
	}
}
