package main

import (
	"fmt"
	"image/color"

	"shortbread/bench/internal/plot"
)

var green = color.RGBA{0x2f, 0x8f, 0x3f, 0xff}

// chart draws MemFree (as sampled and after drop_caches) and the Go heap
// in MiB against minutes.
func chart(r Report) ([]byte, error) {
	const w, h, left, right, top, bottom = 760, 420, 70, 20, 40, 50
	c := plot.New(w, h)
	s := r.Samples
	maxT, maxY := 1.0, 1.0
	for _, p := range s {
		maxT = max(maxT, p.Minutes)
		maxY = max(maxY, float64(p.MemFree)/1024, float64(p.MemFreeGC)/1024, float64(p.HeapInuse)/1024)
	}
	maxY *= 1.1
	px := func(t, y float64) (int, int) {
		return left + int(t/maxT*float64(w-left-right)), h - bottom - int(y/maxY*float64(h-top-bottom))
	}
	for i := 0; i <= 5; i++ {
		y := maxY * float64(i) / 5
		_, yy := px(0, y)
		c.Line(left, yy, w-right, yy, plot.Grid)
		c.Text(8, yy+4, fmt.Sprintf("%.0f MiB", y), plot.Ink)
	}
	for i := 0; i <= 5; i++ {
		t := maxT * float64(i) / 5
		xx, _ := px(t, 0)
		c.Text(xx-10, h-bottom+18, fmt.Sprintf("%.0f", t), plot.Ink)
	}
	c.Text(w/2-30, h-10, "minutes", plot.Ink)
	c.Text(left, 20, fmt.Sprintf("Leak soak %s (%s): MemFree (blue), after drop_caches (green), Go heap in use (red)", r.Date, r.Commit), plot.Ink)
	series := []struct {
		y   func(Sample) float64
		col color.Color
	}{
		{func(p Sample) float64 { return float64(p.MemFree) / 1024 }, plot.Blue},
		{func(p Sample) float64 { return float64(p.MemFreeGC) / 1024 }, green},
		{func(p Sample) float64 { return float64(p.HeapInuse) / 1024 }, plot.Red},
	}
	for _, sr := range series {
		for i, p := range s {
			x, y := px(p.Minutes, sr.y(p))
			c.Dot(x, y, 2, sr.col, false)
			if i > 0 {
				x0, y0 := px(s[i-1].Minutes, sr.y(s[i-1]))
				c.Line(x0, y0, x, y, sr.col)
			}
		}
	}
	return c.PNG()
}
