package klog

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
)

func TestRing(t *testing.T) {
	var console bytes.Buffer
	l := New(&console, Warn)
	l.SetClock(func() time.Duration { return 1500 * time.Millisecond })
	l.Warnf("w1")
	l.Infof("i1")
	l.Debugf("d1") // neither console nor ring
	want := "<4>[    1.500000] w1\n<6>[    1.500000] i1\n"
	if got := string(l.ReadAll(1<<20, false)); got != want {
		t.Errorf("ReadAll = %q, want %q", got, want)
	}
	if strings.Contains(console.String(), "i1") || !strings.Contains(console.String(), "w1") {
		t.Errorf("console = %q: only warnings belong there", console.String())
	}
	// the newest whole lines that fit
	if got := string(l.ReadAll(30, false)); got != "<6>[    1.500000] i1\n" {
		t.Errorf("ReadAll(30) = %q", got)
	}
	if got := l.ReadAll(5, false); len(got) != 0 {
		t.Errorf("ReadAll(5) = %q", got)
	}
	// Read consumes, in order
	if got, _ := l.Read(30); string(got) != "<4>[    1.500000] w1\n" {
		t.Errorf("Read = %q", got)
	}
	if l.Unread() != 21 {
		t.Errorf("Unread = %d", l.Unread())
	}
	l.Read(100)
	got, wake := l.Read(100)
	if got != nil || wake == nil {
		t.Fatalf("empty Read = %q, %v", got, wake)
	}
	l.Errorf("e1")
	select {
	case <-wake:
	default:
		t.Error("a new line did not wake the reader")
	}
	l.Clear()
	if got := l.ReadAll(100, false); len(got) != 0 {
		t.Errorf("after Clear: %q", got)
	}
	l.Infof("i2")
	if got := string(l.ReadAll(100, true)); got != "<6>[    1.500000] i2\n" {
		t.Errorf("after Clear and a line: %q", got)
	}
	if got := l.ReadAll(100, false); len(got) != 0 {
		t.Errorf("after READ_CLEAR: %q", got)
	}
}

func TestRingBounded(t *testing.T) {
	l := New(io.Discard, Error)
	line := strings.Repeat("x", 100)
	for i := 0; i < 10*RingSize/100; i++ {
		l.Infof("%s", line)
	}
	all := l.ReadAll(1<<30, false)
	if len(all) > RingSize || len(all) < RingSize/2 {
		t.Errorf("ring holds %d bytes, capacity %d", len(all), RingSize)
	}
	if !bytes.HasPrefix(all, []byte("<6>[")) || all[len(all)-1] != '\n' {
		t.Errorf("ring does not hold whole lines: %q ... %q", all[:10], all[len(all)-10:])
	}
}
