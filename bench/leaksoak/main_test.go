package main

import (
	"math"
	"strings"
	"testing"
)

func TestParseAndGrowth(t *testing.T) {
	out := "noise\nleaksoak-sample 0 100.0 400000 410000 20000 40\r\n" +
		"leaksoak-sample 1 160.0 390000 409000 21000 41\n" +
		"leaksoak-field 1 MemFree 409000\nleaksoak-field 1 frames_other 100\nleaksoak-field 1 threads 7\n" +
		"leaksoak-sample x 1 2 3 4 5\n" +
		"leaksoak-sample 2 220.0 389000 408000 21000 41\n" +
		"leaksoak-sample 3 280.0 389000 407000 21000 41 5000 3000\n" +
		"leaksoak-field 3 MemFree 407000\nleaksoak-field 3 frames_other 160\nleaksoak-field 3 threads 7\nleaksoak-field 3 bad x\n"
	s := parse([]byte(out))
	if len(s) != 4 {
		t.Fatalf("%d samples, want 4 (the malformed line skipped)", len(s))
	}
	if s[3].AnonPages != 5000 || s[3].Runtime != 3000 || s[2].Runtime != 0 {
		t.Errorf("optional fields: %+v", s[3])
	}
	if s[0].Minutes != 0 || s[2].Minutes != 2 || s[1].MemFreeGC != 409000 || s[2].Goroutines != 41 {
		t.Errorf("samples %+v", s)
	}
	g := growth(s[:3], func(p Sample) float64 { return float64(p.MemFreeGC) })
	if math.Abs(g-(-1000)) > 1e-6 {
		t.Errorf("slope %v KiB/min, want -1000", g)
	}
	md := render(Report{Date: "2026-11-25", Commit: "abc", Minutes: 2, CPUs: 2, Mem: "512M", Samples: s[:3]})
	if !strings.Contains(md, "| MemFree after drop_caches | 409000 KiB | 408000 KiB | -1000 KiB | -1000.0 KiB/min |") {
		t.Errorf("report:\n%s", md)
	}
	md = render(Report{Date: "2026-11-25", Commit: "abc", Minutes: 3, CPUs: 2, Mem: "512M", Samples: s})
	if !strings.Contains(md, "| GoMetadata + GoOther (runtime records) | 0 KiB | 3000 KiB |") {
		t.Errorf("report:\n%s", md)
	}
	if s[3].Fields["frames_other"] != 160 || s[1].Fields["threads"] != 7 || s[2].Fields != nil || len(s[3].Fields) != 3 {
		t.Errorf("fields: %v %v %v", s[1].Fields, s[2].Fields, s[3].Fields)
	}
	if !strings.Contains(md, "| frames_other | 100 | 160 | +60 | +30.0/min |") || strings.Contains(md, "| threads |") {
		t.Errorf("field table:\n%s", md)
	}
	if _, err := chart(Report{Date: "d", Commit: "c", Samples: s}); err != nil {
		t.Error(err)
	}
}
