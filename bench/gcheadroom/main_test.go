package main

import (
	"bytes"
	"image/png"
	"strings"
	"testing"
	"time"
)

const sampleLog = "junk\r\n" +
	"gcheadroom-begin files=1000 ops=5000 cpus=2 live_bytes=320000\r\n" +
	"gcheadroom headroom=0.5 ops=5000 ns=100 ops_per_s=5000 gc_share=0.3000 gc_cycles=12 gc_max_pause_ns=150000 gc_p99_pause_ns=140000 live_heap=1 heap_goal=2\n" +
	"gcheadroom headroom=2 ops=5000 ns=100 ops_per_s=7000 gc_share=0.0800 gc_cycles=3 gc_max_pause_ns=90000 gc_p99_pause_ns=90000\n" +
	"gcheadroom-end\n"

func TestParse(t *testing.T) {
	r, err := Parse([]byte(sampleLog))
	if err != nil {
		t.Fatal(err)
	}
	if r.Files != 1000 || r.CPUs != 2 || r.LiveBytes != 320000 || len(r.Rows) != 2 {
		t.Fatalf("run %+v", r)
	}
	if r.Rows[0].Headroom != 0.5 || r.Rows[0].GCShare != 0.3 || r.Rows[0].GCCycles != 12 || r.Rows[0].MaxPause != 150*time.Microsecond {
		t.Errorf("row 0 %+v", r.Rows[0])
	}
	if _, err := Parse([]byte("gcheadroom-begin files=1\n")); err == nil {
		t.Error("an unterminated section parsed")
	}
	if _, err := Parse([]byte("gcheadroom-begin files=1\ngcheadroom-end\n")); err == nil {
		t.Error("a section without results parsed")
	}
}

func TestReportAndPlot(t *testing.T) {
	r, err := Parse([]byte(sampleLog))
	if err != nil {
		t.Fatal(err)
	}
	md := Markdown(r, nil)
	for _, want := range []string{"| 0.5× | 30.0% | 12 | 150µs", "| 2.0× | 8.0% |", "34%", "9%"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	b, err := Plot(r, biscuit)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() != plotW || img.Bounds().Dy() != plotH {
		t.Errorf("plot is %v", img.Bounds())
	}
	// Our point at 0.5× must be drawn in our colour.
	c := &canvas{xmax: 3.5, ymax: 0.4}
	x, y := c.px(0.5, 0.3)
	if got := img.At(x, y); got != oursCol {
		r, g, b, _ := got.RGBA()
		t.Errorf("pixel at our 0.5x point is %x/%x/%x", r>>8, g>>8, b>>8)
	}
}
