package main

import (
	"fmt"
	"math"

	"shortbread/bench/internal/plot"
)

// A small line plot: GC share against headroom, ours as a line with dots,
// the paper's as squares.

const (
	plotW, plotH           = 720, 460
	left, right, top, bott = 70, 30, 40, 60
)

var (
	ink     = plot.Ink
	grid    = plot.Grid
	oursCol = plot.Blue
	paperCl = plot.Red
)

// canvas maps headroom (x) and GC share (y) to pixels.
type canvas struct {
	*plot.Canvas
	xmax, ymax float64
}

func (c *canvas) px(x, y float64) (int, int) {
	w, h := float64(plotW-left-right), float64(plotH-top-bott)
	return left + int(x/c.xmax*w), plotH - bott - int(y/c.ymax*h)
}

// Plot draws our rows and the reference rows.
func Plot(r *Run, ref []Row) ([]byte, error) {
	c := &canvas{Canvas: plot.New(plotW, plotH), xmax: 3.5, ymax: 0.4}
	for _, row := range append(append([]Row(nil), r.Rows...), ref...) {
		c.xmax = math.Max(c.xmax, row.Headroom*1.1)
		c.ymax = math.Max(c.ymax, row.GCShare*1.15)
	}
	// Grid and ticks every 10% and every 0.5×.
	for y := 0.0; y <= c.ymax+1e-9; y += 0.1 {
		x0, py := c.px(0, y)
		x1, _ := c.px(c.xmax, y)
		c.Line(x0, py, x1, py, grid)
		c.Text(left-38, py+4, fmt.Sprintf("%3.0f%%", y*100), ink)
	}
	for x := 0.0; x <= c.xmax+1e-9; x += 0.5 {
		px, y0 := c.px(x, 0)
		_, y1 := c.px(x, c.ymax)
		c.Line(px, y0, px, y1, grid)
		c.Text(px-10, plotH-bott+18, fmt.Sprintf("%.1fx", x), ink)
	}
	ox, oy := c.px(0, 0)
	ex, _ := c.px(c.xmax, 0)
	_, ty := c.px(0, c.ymax)
	c.Line(ox, oy, ex, oy, ink)
	c.Line(ox, oy, ox, ty, ink)
	c.Text(left, 22, fmt.Sprintf("GC CPU share vs heap headroom (%d vnodes, %.0f MB live)", r.Files, float64(r.LiveBytes)/1e6), ink)
	c.Text(plotW/2-90, plotH-15, "headroom (free heap / live heap)", ink)

	var px0, py0 int
	for i, row := range r.Rows {
		x, y := c.px(row.Headroom, row.GCShare)
		if i > 0 {
			c.Line(px0, py0, x, y, oursCol)
		}
		c.Dot(x, y, 4, oursCol, false)
		c.Text(x+6, y-6, fmt.Sprintf("%.1f%%", row.GCShare*100), oursCol)
		px0, py0 = x, y
	}
	for _, row := range ref {
		x, y := c.px(row.Headroom, row.GCShare)
		c.Dot(x, y, 4, paperCl, true)
		c.Text(x+6, y+14, fmt.Sprintf("%.0f%%", row.GCShare*100), paperCl)
	}
	lx := plotW - right - 250
	c.Dot(lx, 52, 4, oursCol, false)
	c.Text(lx+10, 56, "Shortbread (Go 1.26)", oursCol)
	c.Dot(lx, 70, 4, paperCl, true)
	c.Text(lx+10, 74, "Biscuit, OSDI'18 (Go 1.10)", paperCl)
	return c.PNG()
}
