package term

import (
	"fmt"
	"strings"
	"testing"
)

func putAll(w *Crash, s string) {
	for i := 0; i < len(s); i++ {
		w.Put(s[i])
	}
}

func TestCrashHeadRulerAndRing(t *testing.T) {
	d := newFake(10, 40) // head 6 rows, ruler on row 6, a ring of 3
	c := NewConsole(d, 10, 40, nil)
	c.Write([]byte("before the crash"))
	c.Render()
	w := NewCrash(d, 10, 40, c)
	putAll(w, "panic: boom\r\n\tmain.crash()\r\n")
	for i := 1; i <= 20; i++ {
		putAll(w, fmt.Sprintf("line %d\r\n", i))
	}
	putAll(w, "rip=0x1234")
	want := []string{"panic: boom", "        main.crash()", "line 1", "line 2", "line 3", "line 4"}
	for r, l := range want {
		if got := d.text(r); got != l {
			t.Errorf("row %d = %q, want %q", r, got, l)
		}
	}
	if got := d.text(6); !strings.HasPrefix(crashRuler, got) || got == "" {
		t.Errorf("row 6 = %q, want the ruler", got)
	}
	// Lines 5 to 20 and rip= go round ring rows 7 to 9: line 20 (the
	// 16th) on 7, rip= on 8, the row after it blank.
	ring := []string{d.text(7), d.text(8), d.text(9)}
	if ring[0] != "line 20" || ring[1] != "rip=0x1234" || ring[2] != "" {
		t.Errorf("ring = %q, want [\"line 20\" \"rip=0x1234\" \"\"]", ring)
	}
	if d.cursorOn {
		t.Error("the hardware cursor is still on")
	}
	// The console draws no more once the report began.
	draws := d.draws
	c.Write([]byte("\x1b[2Jafter"))
	c.Render()
	if d.draws != draws {
		t.Errorf("the console drew %d cells after the crash report began", d.draws-draws)
	}
}

func TestCrashCutsLongLines(t *testing.T) {
	d := newFake(10, 8)
	w := NewCrash(d, 10, 8, nil)
	putAll(w, "0123456789\n\x01x\tab\ty\n\ta\tb")
	if d.text(0) != "01234567" || d.text(1) != "x" || d.text(2) != "        " && d.text(2) != "" {
		t.Errorf("rows %q %q %q", d.text(0), d.text(1), d.text(2))
	}
	// A tab at a width that is no multiple of 8 stops at the edge.
	d = newFake(10, 10)
	w = NewCrash(d, 10, 10, nil)
	putAll(w, "\t\t\tz\nok")
	if d.text(0) != "" || d.text(1) != "ok" {
		t.Errorf("rows %q %q", d.text(0), d.text(1))
	}
}

func TestCrashSmallScreenKeepsStart(t *testing.T) {
	d := newFake(3, 10)
	w := NewCrash(d, 3, 10, nil)
	putAll(w, "a\nb\nc\nd\ne\n")
	if d.text(0) != "a" || d.text(1) != "b" || d.text(2) != "c" {
		t.Errorf("rows %q %q %q, want a b c", d.text(0), d.text(1), d.text(2))
	}
}

// Put runs beneath the runtime, where it must not allocate.
func TestCrashPutDoesNotAllocate(t *testing.T) {
	d := newFake(25, 80)
	w := NewCrash(d, 25, 80, nil)
	line := "goroutine 1 gp=0xc000002380 m=0 mp=0x5d6a40 [running]:\n\t/x/y.go:12 +0x1d\n"
	if n := testing.AllocsPerRun(20, func() { putAll(w, line) }); n != 0 {
		t.Errorf("Put allocates %v times a line", n)
	}
}
