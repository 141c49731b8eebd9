package klog

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func fixedClock(d time.Duration) func() time.Duration {
	return func() time.Duration { return d }
}

func newTest(level Level) (*Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	l := New(&buf, level)
	l.SetClock(fixedClock(1234567 * time.Microsecond))
	return l, &buf
}

func TestFormat(t *testing.T) {
	l, buf := newTest(Debug)
	l.Errorf("disk %d failed", 3)
	l.Warnf("low memory")
	l.Infof("booting %s", "shortbread")
	l.Debugf("x=%#x", 255)
	want := "" +
		"[    1.234567] error: disk 3 failed\n" +
		"[    1.234567] warn: low memory\n" +
		"[    1.234567] info: booting shortbread\n" +
		"[    1.234567] debug: x=0xff\n"
	if got := buf.String(); got != want {
		t.Errorf("output mismatch\ngot:\n%s\nwant:\n%s", got, want)
	}
}

func TestTimestamp(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "[    0.000000] "},
		{time.Microsecond, "[    0.000001] "},
		{999 * time.Nanosecond, "[    0.000000] "}, // truncated, never rounded up
		{time.Second + 50*time.Microsecond, "[    1.000050] "},
		{12345*time.Second + 678901*time.Microsecond, "[12345.678901] "},
		{123456 * time.Second, "[123456.000000] "}, // widens rather than truncating
		{-time.Second, "[    0.000000] "},          // a misbehaving clock must not produce "-1"
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		l := New(&buf, Info)
		l.SetClock(fixedClock(tt.d))
		l.Infof("m")
		if got, want := buf.String(), tt.want+"info: m\n"; got != want {
			t.Errorf("clock %v: got %q, want %q", tt.d, got, want)
		}
	}
}

func TestNilClockStampsZero(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf, Info)
	l.SetClock(nil)
	l.Infof("m")
	if got := buf.String(); got != "[    0.000000] info: m\n" {
		t.Errorf("got %q", got)
	}
}

func TestDefaultClockIsMonotonicFromNew(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf, Info)
	l.Infof("m")
	// Immediately after New the stamp must be well under a second.
	if !strings.HasPrefix(buf.String(), "[    0.") {
		t.Errorf("default clock not relative to New: %q", buf.String())
	}
}

func TestLevelFiltering(t *testing.T) {
	for lvl := Error; lvl <= Debug; lvl++ {
		l, buf := newTest(lvl)
		l.Errorf("e")
		l.Warnf("w")
		l.Infof("i")
		l.Debugf("d")
		if got, want := strings.Count(buf.String(), "\n"), int(lvl)+1; got != want {
			t.Errorf("level %v: %d lines, want %d:\n%s", lvl, got, want, buf.String())
		}
		for m := Error; m <= Debug; m++ {
			if got, want := l.Enabled(m), m <= lvl; got != want {
				t.Errorf("level %v: Enabled(%v) = %v, want %v", lvl, m, got, want)
			}
		}
	}
}

func TestSetLevel(t *testing.T) {
	l, buf := newTest(Error)
	l.Infof("hidden")
	l.SetLevel(Info)
	if l.Level() != Info {
		t.Fatalf("Level() = %v after SetLevel(Info)", l.Level())
	}
	l.Infof("shown")
	if got := buf.String(); got != "[    1.234567] info: shown\n" {
		t.Errorf("got %q", got)
	}
}

func TestMultiLineAndTrailingNewline(t *testing.T) {
	l, buf := newTest(Info)
	l.Infof("a\nb\n")
	l.Infof("c\n")
	l.Infof("")
	want := "" +
		"[    1.234567] info: a\n" +
		"[    1.234567] info: b\n" +
		"[    1.234567] info: c\n" +
		"[    1.234567] info: \n"
	if got := buf.String(); got != want {
		t.Errorf("got:\n%q\nwant:\n%q", got, want)
	}
}

func TestParseLevel(t *testing.T) {
	good := map[string]Level{
		"error": Error, "0": Error, "ERROR": Error,
		"warn": Warn, "warning": Warn, "1": Warn,
		"info": Info, "2": Info, " Info ": Info,
		"debug": Debug, "3": Debug,
	}
	for in, want := range good {
		got, err := ParseLevel(in)
		if err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "4", "-1", "verbose", "02", "abc"} {
		if _, err := ParseLevel(in); err == nil {
			t.Errorf("ParseLevel(%q) succeeded, want error", in)
		}
	}
}

func TestLevelStringRoundTrip(t *testing.T) {
	for lvl := Error; lvl <= Debug; lvl++ {
		got, err := ParseLevel(lvl.String())
		if err != nil || got != lvl {
			t.Errorf("ParseLevel(%q) = %v, %v", lvl.String(), got, err)
		}
	}
	if s := Level(7).String(); s != "level(7)" {
		t.Errorf("Level(7).String() = %q", s)
	}
}

func TestOutOfRangeLevelTag(t *testing.T) {
	l, buf := newTest(Level(9))
	l.Logf(Level(5), "x")
	if got := buf.String(); got != "[    1.234567] level(5): x\n" {
		t.Errorf("got %q", got)
	}
}

func TestWarnOnce(t *testing.T) {
	l, buf := newTest(Info)
	for i := 0; i < 3; i++ {
		l.WarnOnce("syscall 99", "unknown syscall %d", 99)
		l.WarnOnce("syscall 98", "unknown syscall %d", 98)
	}
	want := "" +
		"[    1.234567] warn: unknown syscall 99\n" +
		"[    1.234567] warn: unknown syscall 98\n"
	if got := buf.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestLogOnceNotConsumedWhileSuppressed(t *testing.T) {
	l, buf := newTest(Error)
	if l.LogOnce(Warn, "k", "first") {
		t.Error("LogOnce reported writing while Warn was disabled")
	}
	l.SetLevel(Warn)
	if !l.LogOnce(Warn, "k", "second") {
		t.Error("LogOnce did not write after level was raised")
	}
	if l.LogOnce(Warn, "k", "third") {
		t.Error("LogOnce wrote the same key twice")
	}
	if got := buf.String(); got != "[    1.234567] warn: second\n" {
		t.Errorf("got %q", got)
	}
}

func TestLogOnceTableBounded(t *testing.T) {
	l, buf := newTest(Warn)
	for i := 0; i < maxOnceKeys+10; i++ {
		l.WarnOnce(fmt.Sprint(i), "k%d", i)
	}
	out := buf.String()
	if got := strings.Count(out, "\n"); got != maxOnceKeys+1 {
		t.Errorf("%d lines, want %d keys plus one notice", got, maxOnceKeys+1)
	}
	if !strings.Contains(out, "once-only table full") {
		t.Error("missing table-full notice")
	}
	if strings.Contains(out, fmt.Sprintf("k%d\n", maxOnceKeys)) {
		t.Error("key beyond the limit was logged")
	}
	if len(l.once) != maxOnceKeys {
		t.Errorf("once table has %d keys, want %d", len(l.once), maxOnceKeys)
	}
}

func TestNilLoggerIsNoop(t *testing.T) {
	var l *Logger
	l.Errorf("x")
	l.WarnOnce("k", "x")
	l.SetLevel(Debug)
	l.SetClock(nil)
	if l.Enabled(Error) {
		t.Error("nil logger claims to be enabled")
	}
	if l.LogOnce(Error, "k", "x") {
		t.Error("nil logger claims to have written")
	}
	if l.Level() != Error {
		t.Errorf("nil logger Level() = %v", l.Level())
	}
}

// countingWriter records each Write call separately so the test can
// check that every message arrives in exactly one call.
type countingWriter struct {
	mu     sync.Mutex
	writes []string
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

func TestConcurrentUse(t *testing.T) {
	w := &countingWriter{}
	l := New(w, Debug)
	l.SetClock(fixedClock(0))
	const goroutines, perG = 8, 200
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perG; i++ {
				l.Infof("g%d line %d\nsecond half", g, i)
				l.WarnOnce("shared", "once")
				if i == perG/2 {
					l.SetLevel(Debug)
				}
			}
		}()
	}
	wg.Wait()
	if got, want := len(w.writes), goroutines*perG+1; got != want {
		t.Fatalf("%d writes, want %d", got, want)
	}
	once := 0
	for _, s := range w.writes {
		if s == "[    0.000000] warn: once\n" {
			once++
			continue
		}
		// Both lines of a message must arrive together, untorn.
		lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "[    0.000000] info: g") ||
			lines[1] != "[    0.000000] info: second half" {
			t.Fatalf("torn or malformed write: %q", s)
		}
	}
	if once != 1 {
		t.Errorf("WarnOnce emitted %d times under concurrency", once)
	}
}

func BenchmarkInfof(b *testing.B) {
	l := New(discard{}, Info)
	b.ReportAllocs()
	for b.Loop() {
		l.Infof("value %d", 42)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
