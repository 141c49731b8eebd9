package main

import (
	"fmt"
	"image/color"
	"math"

	"shortbread/bench/internal/plot"
)

// The plot: one group of horizontal bars per workload, a bar per kernel
// and CPU count above one, its length the median speed-up of one worker
// per CPU over one worker, a whisker across the range; a line at 1× (no
// gain) and one at each CPU count (perfect scaling).

const (
	plotW       = 820
	labelW      = 130 // workload names
	plotRight   = 40
	plotTop     = 70
	plotBottom  = 50
	barH        = 12
	groupGap    = 8
	legendStart = plotTop - 34
)

var kernelColour = map[string]color.RGBA{"shortbread": plot.Blue, "linux": plot.Red}

// shade lightens a colour for the second and later CPU counts.
func shade(c color.RGBA, i int) color.RGBA {
	f := 1 - 0.45*float64(min(i, 2))/2
	l := func(v uint8) uint8 { return uint8(255 - f*float64(255-int(v))) }
	return color.RGBA{l(c.R), l(c.G), l(c.B), 0xff}
}

// barX is the pixel column of speed-up v on an axis ending at xmax.
func barX(v, xmax float64) int {
	return labelW + int(math.Min(v, xmax)/xmax*float64(plotW-plotRight-40-labelW))
}

// Plot draws the speed-ups of a report.
func Plot(rep *Report) ([]byte, error) {
	m := NewMatrix(rep.Samples)
	var multi []int
	for _, c := range rep.CPUs {
		if c > 1 {
			multi = append(multi, c)
		}
	}
	type bar struct {
		kernel string
		cpus   int
		i      int // index of cpus in multi
	}
	var bars []bar
	for i, c := range multi {
		for _, k := range rep.Kernels {
			bars = append(bars, bar{k, c, i})
		}
	}
	groupH := max(len(bars), 1)*barH + groupGap
	plotH := plotTop + len(rep.Workloads)*groupH + plotBottom
	c := plot.New(plotW, plotH)
	xmax := 2.0
	for _, c := range multi {
		xmax = math.Max(xmax, float64(c))
	}
	for _, w := range rep.Workloads {
		for _, br := range bars {
			xmax = math.Max(xmax, m.Speedup(br.kernel, w, br.cpus).Max)
		}
	}
	// Noise on a loaded host can make one ratio huge; the axis stops at
	// twice the largest CPU count plus one and longer bars are cut there
	// (their value is written beside them).
	top := 2.0
	for _, c := range multi {
		top = math.Max(top, float64(c))
	}
	xmax = math.Min(math.Ceil(xmax*1.05*2)/2, 2*top+1)
	step := 0.5
	if xmax > 4 {
		step = 1
	}
	x0, x1 := labelW, plotW-plotRight-40
	px := func(v float64) int { return barX(v, xmax) }
	yTop, yBot := plotTop, plotTop+len(rep.Workloads)*groupH

	c.Text(10, 20, fmt.Sprintf("Speed-up, one worker per CPU over one worker (median, range over %d boots)", rep.Reps), plot.Ink)
	for v := 0.0; v <= xmax+1e-9; v += step {
		x := px(v)
		c.Line(x, yTop, x, yBot, plot.Grid)
		c.Text(x-10, yBot+16, fmt.Sprintf("%.1fx", v), plot.Ink)
	}
	c.Text(x0+(x1-x0)/2-60, yBot+36, "speed-up (N workers / 1)", plot.Ink)
	for i, w := range rep.Workloads {
		y := yTop + i*groupH
		c.Text(x0-plot.TextWidth(w)-8, y+len(bars)*barH/2+5, w, plot.Ink)
		for j, br := range bars {
			s := m.Speedup(br.kernel, w, br.cpus)
			if s.N == 0 {
				continue
			}
			by := y + j*barH
			col := shade(kernelColour[br.kernel], br.i)
			c.Box(px(0), by+1, px(s.Median), by+barH-1, col)
			c.Text(px(math.Max(s.Median, s.Max))+4, by+barH, fmt.Sprintf("%.2f", s.Median), plot.Ink)
			if s.N > 1 {
				c.Box(px(s.Min), by+barH/2, px(s.Max)+1, by+barH/2+1, plot.Ink)
				c.Box(px(s.Min), by+2, px(s.Min)+1, by+barH-2, plot.Ink)
				c.Box(px(s.Max), by+2, px(s.Max)+1, by+barH-2, plot.Ink)
			}
		}
	}
	// References drawn over the bars: 1× and perfect scaling.
	dashed := func(v float64, col color.Color) {
		x := px(v)
		for y := yTop; y < yBot; y += 6 {
			c.Box(x, y, x+1, y+3, col)
		}
	}
	dashed(1, plot.Ink)
	for _, n := range multi {
		dashed(float64(n), color.RGBA{0x30, 0x90, 0x30, 0xff})
	}
	c.Line(x0, yTop, x0, yBot, plot.Ink)
	// Legend.
	lx := x0
	for _, br := range bars {
		label := fmt.Sprintf("%s, %d CPUs", br.kernel, br.cpus)
		c.Box(lx, legendStart-9, lx+14, legendStart, shade(kernelColour[br.kernel], br.i))
		c.Text(lx+18, legendStart, label, plot.Ink)
		lx += 18 + plot.TextWidth(label) + 20
	}
	c.Text(lx, legendStart, "dashed: 1x and N x", plot.Ink)
	return c.PNG()
}
