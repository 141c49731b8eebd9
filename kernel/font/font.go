// Package font is the framebuffer console's built-in bitmap font: 8 by 16
// pixel cells for the printable ASCII characters (glyphs.go, generated
// by tools/fontgen from X11's public-domain misc-fixed 8x13 font).
package font

// Cell size in pixels.
const (
	Width  = 8
	Height = 16
)

// Glyph returns the bitmap of c, one byte a row with the leftmost pixel
// in bit 7; characters outside printable ASCII get '?'.
func Glyph(c byte) *[Height]byte {
	if c < 0x20 || c > 0x7e {
		c = '?'
	}
	return &ascii[c-0x20]
}

// Match returns the character whose glyph is g, and false when none is
// (a reader of the screen: the in-guest console test decodes
// screenshots with it).
func Match(g [Height]byte) (byte, bool) {
	for i := range ascii {
		if ascii[i] == g {
			return byte(0x20 + i), true
		}
	}
	return 0, false
}
