// Package vga shows a terminal (package term) on the VGA text screen the
// BIOS and GRUB leave in mode 3: 80 by 25 character cells at physical
// 0xB8000, each a code page 437 character in its low byte and an
// attribute (background in bits 4-6, foreground in bits 0-3) in its high
// byte, and a hardware cursor set through the CRT controller's cursor
// location registers (IBM VGA technical reference, CRTC registers
// 0Ah, 0Eh and 0Fh at ports 3D4h/3D5h).
package vga

import "shortbread/kernel/term"

// CRT controller ports (colour modes) and registers.
const (
	crtcIndex       = 0x3d4
	crtcData        = 0x3d5
	regCursorStart  = 0x0a
	regCursorHigh   = 0x0e
	regCursorLow    = 0x0f
	cursorDisabled  = 0x20 // bit 5 of the cursor start register
	cursorStartLine = 14   // an underline in a 16-line cell
)

// Ports is port I/O (arch.Inb/Outb in the kernel, a recorder in tests).
type Ports interface {
	Inb(port uint16) uint8
	Outb(port uint16, v uint8)
}

// Text is a text-mode screen of Cols by Rows cells in Mem (video memory,
// two bytes a cell).
type Text struct {
	Mem        []uint16
	Rows, Cols int
	Ports      Ports
}

// Draw stores c at row, col; the hardware draws the cursor.
func (t *Text) Draw(row, col int, c term.Cell, _ bool) {
	t.Mem[row*t.Cols+col] = uint16(c.Attr)<<8 | uint16(c.Ch)
}

// MoveCursor moves the hardware cursor, or hides it.
func (t *Text) MoveCursor(row, col int, visible bool) {
	start := uint8(cursorStartLine)
	if !visible {
		start |= cursorDisabled
	}
	t.Ports.Outb(crtcIndex, regCursorStart)
	t.Ports.Outb(crtcData, start)
	at := uint16(row*t.Cols + col)
	t.Ports.Outb(crtcIndex, regCursorHigh)
	t.Ports.Outb(crtcData, uint8(at>>8))
	t.Ports.Outb(crtcIndex, regCursorLow)
	t.Ports.Outb(crtcData, uint8(at))
}
