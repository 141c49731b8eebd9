package samples

import (
	"bytes"
	"encoding/base64"
	"math/rand"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func randomSamples(n int, seed int64) []Sample {
	r := rand.New(rand.NewSource(seed))
	s := make([]Sample, n)
	for i := range s {
		s[i] = Sample{PC: 0x1001000 + uint64(r.Intn(1<<20)), CPU: uint16(r.Intn(8)), Flags: uint16(r.Intn(8))}
	}
	return s
}

func dump(t *testing.T, meta map[string]string, s []Sample) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, meta, s); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 57, 1000} {
		want := randomSamples(n, int64(n))
		meta := map[string]string{"hz": "1000", "source": "nmi-hpet", "cpus": "4", "ns": "2500000000",
			"samples": strconv.Itoa(n), "gc_cycles": "7", "bench_ops": "123"}
		log := dump(t, meta, want)
		for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
			if strings.HasPrefix(l, "hs:") && len(l) > 3+76 {
				t.Fatalf("line longer than 76 characters: %q", l)
			}
		}
		secs, err := Parse(strings.NewReader(log))
		if err != nil {
			t.Fatal(err)
		}
		if len(secs) != 1 {
			t.Fatalf("%d sections", len(secs))
		}
		s := secs[0]
		if len(s.Samples) != n || (n > 0 && !reflect.DeepEqual(s.Samples, want)) {
			t.Errorf("n=%d: samples differ", n)
		}
		if !reflect.DeepEqual(s.Meta, meta) {
			t.Errorf("meta %v, want %v", s.Meta, meta)
		}
		if s.Hz() != 1000 || s.CPUs() != 4 || s.NS() != 2500000000 || s.Source() != "nmi-hpet" || s.Line != 1 {
			t.Errorf("hz %d cpus %d ns %d source %q line %d", s.Hz(), s.CPUs(), s.NS(), s.Source(), s.Line)
		}
		if err := s.Check(); err != nil {
			t.Error(err)
		}
	}
}

// A real serial log: boot noise, CRLF line ends, two sections, a console
// prefix on the markers, other output between the data lines.
func TestParseLog(t *testing.T) {
	a := randomSamples(100, 1)
	b := randomSamples(30, 2)
	la := dump(t, map[string]string{"hz": "997", "source": "lapic-timer", "cpus": "2", "ns": "100"}, a)
	lb := dump(t, map[string]string{"hz": "1000", "source": "nmi-hpet", "cpus": "4", "ns": "200", "gc_share": "0.0312"}, b)
	// Interleave a kernel message inside section a.
	linesA := strings.Split(la, "\n")
	linesA = append(linesA[:3], append([]string{"[cpu1] vfs: 100000 files", "paths: /a /b"}, linesA[3:]...)...)
	log := "SeaBIOS (version 1.16)\r\nBooting from ROM...\r\n" +
		strings.ReplaceAll(strings.Join(linesA, "\n"), "\n", "\r\n") +
		"klog: done\n" +
		"[  12.5] " + strings.Replace(lb, "\nhlltax-end", "\n[  12.6] hlltax-end", 1) +
		"poweroff\n"
	secs, err := Parse(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if len(secs) != 2 {
		t.Fatalf("%d sections", len(secs))
	}
	if !reflect.DeepEqual(secs[0].Samples, a) || !reflect.DeepEqual(secs[1].Samples, b) {
		t.Error("samples differ")
	}
	if secs[0].Source() != "lapic-timer" || secs[1].Meta["gc_share"] != "0.0312" || secs[0].Line != 3 {
		t.Errorf("meta %v %v line %d", secs[0].Meta, secs[1].Meta, secs[0].Line)
	}
	for _, s := range secs {
		if err := s.Check(); err != nil {
			t.Error(err)
		}
	}
}

// A garbled data line loses exactly the records that overlap its 57 bytes;
// the others keep their places.
func TestGarbledLine(t *testing.T) {
	want := randomSamples(200, 3) // 3200 bytes: 57 hs: lines
	// Line 17's bytes start at 16×57, a record boundary.
	for _, bad := range []int{1, 5, 17, 56} {
		log := dump(t, map[string]string{"hz": "1000", "samples": "200"}, want)
		lines := strings.Split(log, "\n")
		// lines[0] is the begin line, lines[bad] the bad-th hs: line.
		lines[bad] = "hs:" + lines[bad][3:40] + "[cpu2] timer!" + lines[bad][40:]
		secs, err := Parse(strings.NewReader(strings.Join(lines, "\n")))
		if err != nil {
			t.Fatal(err)
		}
		s := secs[0]
		lo, hi := (bad-1)*57, bad*57 // bytes of the garbled line
		var kept []Sample
		lost := 0
		for i, x := range want {
			if i*16 < hi && i*16+16 > lo {
				lost++
				continue
			}
			kept = append(kept, x)
		}
		if s.BadLines != 1 || s.LostRecords != lost || !reflect.DeepEqual(s.Samples, kept) {
			t.Errorf("line %d: bad lines %d, lost %d (want %d), %d samples (want %d)",
				bad, s.BadLines, s.LostRecords, lost, len(s.Samples), len(kept))
		}
		if err := s.Check(); err == nil || !strings.Contains(err.Error(), "garbled") {
			t.Errorf("line %d: Check() = %v", bad, err)
		}
	}
}

func TestTruncated(t *testing.T) {
	want := randomSamples(50, 4)
	log := dump(t, map[string]string{"hz": "1000"}, want)
	log = log[:strings.Index(log, "hlltax-end")]
	// A second begin without an end in between also ends the section.
	log2 := log + dump(t, map[string]string{"hz": "5"}, want[:2])
	for i, l := range []string{log, log2} {
		secs, err := Parse(strings.NewReader(l))
		if err != nil {
			t.Fatal(err)
		}
		if len(secs) != i+1 || secs[0].Ended || !reflect.DeepEqual(secs[0].Samples, want) {
			t.Fatalf("case %d: %d sections, ended %v", i, len(secs), secs[0].Ended)
		}
		if err := secs[0].Check(); err == nil {
			t.Errorf("case %d: Check of an unterminated section passed", i)
		}
		if i == 1 && (!secs[1].Ended || len(secs[1].Samples) != 2 || secs[1].Hz() != 5) {
			t.Errorf("second section: %+v", secs[1])
		}
	}
}

func TestCountMismatch(t *testing.T) {
	log := dump(t, map[string]string{"samples": "11"}, randomSamples(10, 5))
	secs, _ := Parse(strings.NewReader(log))
	if err := secs[0].Check(); err == nil {
		t.Error("samples=11 with 10 records passed Check")
	}
}

func TestPartialRecord(t *testing.T) {
	blob := append(Encode(randomSamples(3, 6)), 1, 2, 3)
	log := "hlltax-begin hz=1\nhs:" + base64.StdEncoding.EncodeToString(blob) + "\nhlltax-end\n"
	secs, _ := Parse(strings.NewReader(log))
	if len(secs[0].Samples) != 3 || secs[0].LostRecords != 1 {
		t.Errorf("%d samples, %d lost", len(secs[0].Samples), secs[0].LostRecords)
	}
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		flags                      uint16
		idle, irqoff, user, kernel bool
	}{
		{0, false, false, false, true},
		{FlagIdle, true, false, false, false},
		{FlagIRQOff, false, true, false, true},
		{FlagUser, false, false, true, false},
		{FlagIdle | FlagIRQOff, true, true, false, false},
	} {
		s := Sample{Flags: tc.flags}
		if s.Idle() != tc.idle || s.IRQOff() != tc.irqoff || s.User() != tc.user || s.Kernel() != tc.kernel {
			t.Errorf("flags %#x: idle %v irqoff %v user %v kernel %v", tc.flags, s.Idle(), s.IRQOff(), s.User(), s.Kernel())
		}
	}
	// The record layout: PC, CPU, flags, little-endian, 4 reserved bytes.
	b := Encode([]Sample{{PC: 0x0102030405060708, CPU: 0x090a, Flags: 0x0b0c}})
	want := []byte{8, 7, 6, 5, 4, 3, 2, 1, 0x0a, 9, 0x0c, 0x0b, 0, 0, 0, 0}
	if !bytes.Equal(b, want) {
		t.Errorf("record % x, want % x", b, want)
	}
}

func TestWriteRejectsBadMeta(t *testing.T) {
	for _, m := range []map[string]string{{"a b": "1"}, {"a": "1 2"}, {"a=b": "1"}, {"": "1"}} {
		if err := Write(&bytes.Buffer{}, m, nil); err == nil {
			t.Errorf("Write accepted %v", m)
		}
	}
}
