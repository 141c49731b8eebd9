// Package plot draws the benchmarks' small PNG charts with the standard
// image packages and x/image's fixed font: a white canvas with dots,
// lines, filled boxes and text, in pixel coordinates. Each benchmark maps
// its own data to pixels.
package plot

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"image/png"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Colours the charts share.
var (
	Ink  = color.RGBA{0x20, 0x20, 0x20, 0xff}
	Grid = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
	Blue = color.RGBA{0x1f, 0x5f, 0xbf, 0xff}
	Red  = color.RGBA{0xc0, 0x30, 0x30, 0xff}
)

// Canvas is an image being drawn.
type Canvas struct {
	Img *image.RGBA
}

// New returns a white canvas of w×h pixels.
func New(w, h int) *Canvas {
	c := &Canvas{Img: image.NewRGBA(image.Rect(0, 0, w, h))}
	draw.Draw(c.Img, c.Img.Bounds(), image.White, image.Point{}, draw.Src)
	return c
}

// Dot draws a disc (or a square) of radius r centred on x, y.
func (c *Canvas) Dot(x, y, r int, col color.Color, square bool) {
	for dy := -r; dy <= r; dy++ {
		for dx := -r; dx <= r; dx++ {
			if square || dx*dx+dy*dy <= r*r {
				c.Img.Set(x+dx, y+dy, col)
			}
		}
	}
}

// Line draws a two-pixel-thick line.
func (c *Canvas) Line(x0, y0, x1, y1 int, col color.Color) {
	n := max(abs(x1-x0), abs(y1-y0), 1)
	for i := 0; i <= n; i++ {
		x := x0 + (x1-x0)*i/n
		y := y0 + (y1-y0)*i/n
		c.Img.Set(x, y, col)
		c.Img.Set(x, y+1, col)
	}
}

// Box fills the rectangle between two corners (in either order).
func (c *Canvas) Box(x0, y0, x1, y1 int, col color.Color) {
	r := image.Rect(x0, y0, x1, y1) // canonicalised
	draw.Draw(c.Img, r, image.NewUniform(col), image.Point{}, draw.Src)
}

// Text writes s with its baseline starting at x, y (7×13 pixel glyphs).
func (c *Canvas) Text(x, y int, s string, col color.Color) {
	d := font.Drawer{Dst: c.Img, Src: image.NewUniform(col), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

// TextWidth is how many pixels Text takes for s.
func TextWidth(s string) int {
	return font.MeasureString(basicfont.Face7x13, s).Round()
}

// PNG encodes the canvas.
func (c *Canvas) PNG() ([]byte, error) {
	var buf bytes.Buffer
	if err := png.Encode(&buf, c.Img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
