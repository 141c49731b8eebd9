package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// A small line plot drawn with the standard image packages: GC share
// against headroom, ours as a line with dots, the paper's as squares.

const (
	plotW, plotH           = 720, 460
	left, right, top, bott = 70, 30, 40, 60
)

var (
	ink     = color.RGBA{0x20, 0x20, 0x20, 0xff}
	grid    = color.RGBA{0xdd, 0xdd, 0xdd, 0xff}
	oursCol = color.RGBA{0x1f, 0x5f, 0xbf, 0xff}
	paperCl = color.RGBA{0xc0, 0x30, 0x30, 0xff}
)

type canvas struct {
	img        *image.RGBA
	xmax, ymax float64
}

func (c *canvas) px(x, y float64) (int, int) {
	w, h := float64(plotW-left-right), float64(plotH-top-bott)
	return left + int(x/c.xmax*w), plotH - bott - int(y/c.ymax*h)
}

func (c *canvas) dot(x, y, r int, col color.Color, square bool) {
	for dy := -r; dy <= r; dy++ {
		for dx := -r; dx <= r; dx++ {
			if square || dx*dx+dy*dy <= r*r {
				c.img.Set(x+dx, y+dy, col)
			}
		}
	}
}

func (c *canvas) line(x0, y0, x1, y1 int, col color.Color) {
	n := max(abs(x1-x0), abs(y1-y0), 1)
	for i := 0; i <= n; i++ {
		x := x0 + (x1-x0)*i/n
		y := y0 + (y1-y0)*i/n
		c.img.Set(x, y, col)
		c.img.Set(x, y+1, col)
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func (c *canvas) text(x, y int, s string, col color.Color) {
	d := font.Drawer{Dst: c.img, Src: image.NewUniform(col), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

// Plot draws our rows and the reference rows.
func Plot(r *Run, ref []Row) ([]byte, error) {
	c := &canvas{img: image.NewRGBA(image.Rect(0, 0, plotW, plotH)), xmax: 3.5, ymax: 0.4}
	for _, row := range append(append([]Row(nil), r.Rows...), ref...) {
		c.xmax = math.Max(c.xmax, row.Headroom*1.1)
		c.ymax = math.Max(c.ymax, row.GCShare*1.15)
	}
	draw.Draw(c.img, c.img.Bounds(), image.White, image.Point{}, draw.Src)
	// Grid and ticks every 10% and every 0.5×.
	for y := 0.0; y <= c.ymax+1e-9; y += 0.1 {
		x0, py := c.px(0, y)
		x1, _ := c.px(c.xmax, y)
		c.line(x0, py, x1, py, grid)
		c.text(left-38, py+4, fmt.Sprintf("%3.0f%%", y*100), ink)
	}
	for x := 0.0; x <= c.xmax+1e-9; x += 0.5 {
		px, y0 := c.px(x, 0)
		_, y1 := c.px(x, c.ymax)
		c.line(px, y0, px, y1, grid)
		c.text(px-10, plotH-bott+18, fmt.Sprintf("%.1fx", x), ink)
	}
	ox, oy := c.px(0, 0)
	ex, _ := c.px(c.xmax, 0)
	_, ty := c.px(0, c.ymax)
	c.line(ox, oy, ex, oy, ink)
	c.line(ox, oy, ox, ty, ink)
	c.text(left, 22, fmt.Sprintf("GC CPU share vs heap headroom (%d vnodes, %.0f MB live)", r.Files, float64(r.LiveBytes)/1e6), ink)
	c.text(plotW/2-90, plotH-15, "headroom (free heap / live heap)", ink)

	var px0, py0 int
	for i, row := range r.Rows {
		x, y := c.px(row.Headroom, row.GCShare)
		if i > 0 {
			c.line(px0, py0, x, y, oursCol)
		}
		c.dot(x, y, 4, oursCol, false)
		c.text(x+6, y-6, fmt.Sprintf("%.1f%%", row.GCShare*100), oursCol)
		px0, py0 = x, y
	}
	for _, row := range ref {
		x, y := c.px(row.Headroom, row.GCShare)
		c.dot(x, y, 4, paperCl, true)
		c.text(x+6, y+14, fmt.Sprintf("%.0f%%", row.GCShare*100), paperCl)
	}
	lx := plotW - right - 250
	c.dot(lx, 52, 4, oursCol, false)
	c.text(lx+10, 56, "Shortbread (Go 1.26)", oursCol)
	c.dot(lx, 70, 4, paperCl, true)
	c.text(lx+10, 74, "Biscuit, OSDI'18 (Go 1.10)", paperCl)

	var buf bytes.Buffer
	if err := png.Encode(&buf, c.img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
