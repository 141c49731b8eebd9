// Package framebuffer shows a terminal (package term) on a linear
// framebuffer, the one UEFI's Graphics Output Protocol sets up and GRUB
// describes in the multiboot2 framebuffer tag (type 1, direct RGB
// colour): characters drawn from the built-in 8x16 font (package font),
// the 16 colours of the PC text modes, and an underline as the cursor.
// Only writes reach the framebuffer, never reads, which are very slow
// over PCI on real machines.
package framebuffer

import (
	"errors"

	"shortbread/kernel/font"
	"shortbread/kernel/term"
)

// Mode is the framebuffer's geometry and pixel format (from the
// multiboot2 framebuffer tag).
type Mode struct {
	Width, Height int // pixels
	Pitch         int // bytes per scan line
	BPP           int // bits per pixel: 16, 24 or 32
	RedPos, RedSize,
	GreenPos, GreenSize,
	BluePos, BlueSize uint8
}

// palette is the PC text modes' 16 colours (VGA attribute order).
var palette = [16][3]uint8{
	{0, 0, 0}, {0, 0, 170}, {0, 170, 0}, {0, 170, 170},
	{170, 0, 0}, {170, 0, 170}, {170, 85, 0}, {170, 170, 170},
	{85, 85, 85}, {85, 85, 255}, {85, 255, 85}, {85, 255, 255},
	{255, 85, 85}, {255, 85, 255}, {255, 255, 85}, {255, 255, 255},
}

// FB draws cells on a framebuffer whose bytes are Mem.
type FB struct {
	mem    []byte
	mode   Mode
	bytes  int        // per pixel
	pixels [16]uint32 // the palette in the framebuffer's format
}

// New checks mode against mem and returns a display for it.
func New(mem []byte, mode Mode) (*FB, error) {
	if mode.BPP != 16 && mode.BPP != 24 && mode.BPP != 32 {
		return nil, errors.New("framebuffer: unsupported pixel size")
	}
	b := mode.BPP / 8
	if mode.Width < font.Width || mode.Height < font.Height || mode.Pitch < mode.Width*b ||
		len(mem) < mode.Pitch*(mode.Height-1)+mode.Width*b {
		return nil, errors.New("framebuffer: geometry does not fit its memory")
	}
	f := &FB{mem: mem, mode: mode, bytes: b}
	for i, c := range palette {
		f.pixels[i] = channel(c[0], mode.RedPos, mode.RedSize) |
			channel(c[1], mode.GreenPos, mode.GreenSize) | channel(c[2], mode.BluePos, mode.BlueSize)
	}
	return f, nil
}

// channel places an 8-bit intensity in a field of size bits at pos.
func channel(v, pos, size uint8) uint32 {
	if size == 0 || size > 8 || pos >= 32 {
		return 0
	}
	return uint32(v>>(8-size)) << pos
}

// Size returns the cells that fit: rows and columns.
func (f *FB) Size() (rows, cols int) {
	return f.mode.Height / font.Height, f.mode.Width / font.Width
}

// Draw draws c at row, col, with an underline when the cursor is there.
func (f *FB) Draw(row, col int, c term.Cell, cursor bool) {
	g := font.Glyph(c.Ch)
	fg, bg := f.pixels[c.Attr&15], f.pixels[c.Attr>>4&7]
	x0 := col * font.Width * f.bytes
	for y := 0; y < font.Height; y++ {
		bits := g[y]
		if cursor && y >= font.Height-2 {
			bits = 0xff
		}
		off := (row*font.Height+y)*f.mode.Pitch + x0
		for x := 0; x < font.Width; x++ {
			p := bg
			if bits&(0x80>>x) != 0 {
				p = fg
			}
			f.put(off+x*f.bytes, p)
		}
	}
}

func (f *FB) put(off int, p uint32) {
	switch f.bytes {
	case 4:
		m := f.mem[off : off+4]
		m[0], m[1], m[2], m[3] = byte(p), byte(p>>8), byte(p>>16), byte(p>>24)
	case 3:
		m := f.mem[off : off+3]
		m[0], m[1], m[2] = byte(p), byte(p>>8), byte(p>>16)
	case 2:
		m := f.mem[off : off+2]
		m[0], m[1] = byte(p), byte(p>>8)
	}
}

// MoveCursor does nothing: Draw draws the cursor.
func (f *FB) MoveCursor(int, int, bool) {}
