package main

import (
	"math"
	"strings"
	"testing"
)

func TestParseAndGrowth(t *testing.T) {
	out := "noise\nleaksoak-sample 0 100.0 400000 410000 20000 40\r\n" +
		"leaksoak-sample 1 160.0 390000 409000 21000 41\n" +
		"leaksoak-sample x 1 2 3 4 5\n" +
		"leaksoak-sample 2 220.0 389000 408000 21000 41\n"
	s := parse([]byte(out))
	if len(s) != 3 {
		t.Fatalf("%d samples, want 3 (the malformed line skipped)", len(s))
	}
	if s[0].Minutes != 0 || s[2].Minutes != 2 || s[1].MemFreeGC != 409000 || s[2].Goroutines != 41 {
		t.Errorf("samples %+v", s)
	}
	g := growth(s, func(p Sample) float64 { return float64(p.MemFreeGC) })
	if math.Abs(g-(-1000)) > 1e-6 {
		t.Errorf("slope %v KiB/min, want -1000", g)
	}
	md := render(Report{Date: "2026-11-25", Commit: "abc", Minutes: 2, CPUs: 2, Mem: "512M", Samples: s})
	if !strings.Contains(md, "| MemFree after drop_caches | 409000 KiB | 408000 KiB | -1000 KiB | -1000.0 KiB/min |") {
		t.Errorf("report:\n%s", md)
	}
	if _, err := chart(Report{Date: "d", Commit: "c", Samples: s}); err != nil {
		t.Error(err)
	}
}
