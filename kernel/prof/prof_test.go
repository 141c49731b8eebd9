package prof

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"runtime"
	"strings"
	"testing"
)

var sink [][]byte

func TestGCWindowCountsForcedCollections(t *testing.T) {
	a := ReadGC()
	for i := 0; i < 3; i++ {
		for j := 0; j < 100; j++ {
			sink = append(sink, make([]byte, 64<<10))
		}
		sink = nil
		runtime.GC()
	}
	b := ReadGC()
	w := Window(a, b)
	if w.Cycles < 3 {
		t.Errorf("window saw %d GC cycles, want >= 3", w.Cycles)
	}
	if w.PauseCount < 3 || w.MaxPause <= 0 || !w.PausesExact {
		t.Errorf("pauses: count %d max %v exact %v", w.PauseCount, w.MaxPause, w.PausesExact)
	}
	if w.AllocBytes < 3*100*64<<10 {
		t.Errorf("window allocated %d bytes, want >= %d", w.AllocBytes, 3*100*64<<10)
	}
	if w.GCCPU <= 0 || w.GCCPU < w.Pause {
		t.Errorf("GC CPU %v, pause CPU %v", w.GCCPU, w.Pause)
	}
	var buf bytes.Buffer
	w.KeyValues(&buf)
	kv := ParseKeyValues(buf.String())
	for _, k := range []string{"gc_cycles", "gc_cpu_ns", "gc_max_pause_ns", "gc_share", "live_heap"} {
		if _, ok := kv[k]; !ok {
			t.Errorf("KeyValues lacks %s: %s", k, buf.String())
		}
	}
}

func TestDumpRoundTrip(t *testing.T) {
	var raw []byte
	want := []Sample{{0x1001234, 0, FlagIRQOff}, {0xdeadbeef, 3, FlagIdle}, {42, 65535, FlagUserMode}}
	for _, s := range want {
		rec := make([]byte, RecordSize)
		binary.LittleEndian.PutUint64(rec, s.PC)
		binary.LittleEndian.PutUint16(rec[8:], s.CPU)
		binary.LittleEndian.PutUint16(rec[10:], s.Flags)
		raw = append(raw, rec...)
	}
	// Enough records to need several hs: lines.
	for i := 0; i < 20; i++ {
		raw = append(raw, raw[:RecordSize]...)
	}
	var out bytes.Buffer
	if err := WriteDump(&out, map[string]string{"hz": "1000", "source": "nmi-hpet"}, raw); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if lines[0] != "hlltax-begin hz=1000 source=nmi-hpet" || lines[len(lines)-1] != "hlltax-end" {
		t.Fatalf("framing: %q ... %q", lines[0], lines[len(lines)-1])
	}
	var enc string
	for _, l := range lines[1 : len(lines)-1] {
		if !strings.HasPrefix(l, "hs:") || len(l) > 3+76 {
			t.Fatalf("bad data line %q", l)
		}
		enc += l[3:]
	}
	got, err := base64.StdEncoding.DecodeString(enc)
	if err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("payload does not round-trip: %v", err)
	}
	s := Decode(got)
	for i, w := range want {
		if s[i] != w {
			t.Errorf("sample %d = %+v, want %+v", i, s[i], w)
		}
	}
	if err := WriteDump(&out, map[string]string{"bad key": "x"}, nil); err == nil {
		t.Error("a key with a space was accepted")
	}
}
