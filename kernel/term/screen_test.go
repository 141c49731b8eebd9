package term

import (
	"fmt"
	"strings"
	"testing"
)

func lines(s *Screen) []string {
	rows, _ := s.Size()
	l := make([]string, rows)
	for i := range l {
		l[i] = s.Line(i)
	}
	return l
}

func expect(t *testing.T, s *Screen, want ...string) {
	t.Helper()
	got := lines(s)
	for i := range got {
		w := ""
		if i < len(want) {
			w = want[i]
		}
		if got[i] != w {
			t.Errorf("row %d = %q, want %q\nscreen:\n%s", i, got[i], w, strings.Join(got, "\n"))
			return
		}
	}
}

func cursorAt(t *testing.T, s *Screen, row, col int) {
	t.Helper()
	if r, c, _ := s.Cursor(); r != row || c != col {
		t.Errorf("cursor at %d,%d, want %d,%d", r, c, row, col)
	}
}

func TestControls(t *testing.T) {
	s := New(4, 10, nil)
	s.Write([]byte("ab\tc\r\nxyz\bW\n"))
	expect(t, s, "ab      c", "xyW")
	// LF alone keeps the column (the tty's ONLCR adds the CR).
	cursorAt(t, s, 2, 3)
	s.Write([]byte("\x07q"))
	expect(t, s, "ab      c", "xyW", "   q")
}

func TestWrapIsDeferred(t *testing.T) {
	s := New(3, 4, nil)
	s.Write([]byte("abcd"))
	// The cursor waits on the last column; CR there must not wrap.
	cursorAt(t, s, 0, 3)
	s.Write([]byte("\rX"))
	expect(t, s, "Xbcd")
	s.Write([]byte("\x1b[1;4Hde"))
	expect(t, s, "Xbcd", "e")
	cursorAt(t, s, 1, 1)
}

func TestScrolling(t *testing.T) {
	s := New(3, 8, nil)
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(s, "line %d\r\n", i)
	}
	expect(t, s, "line 4", "line 5", "")
	cursorAt(t, s, 2, 0)
	// Wrapping off the bottom scrolls too.
	s.Write([]byte("12345678x"))
	expect(t, s, "line 5", "12345678", "x")
}

func TestScrollRegionAndReverseIndex(t *testing.T) {
	s := New(5, 6, nil)
	s.Write([]byte("top\r\na\r\nb\r\nc\r\nbottom"))
	s.Write([]byte("\x1b[2;4r")) // rows 2-4 scroll; the cursor goes home
	cursorAt(t, s, 0, 0)
	s.Write([]byte("\x1b[4;1H\nnew"))
	expect(t, s, "top", "b", "c", "new", "bottom")
	s.Write([]byte("\x1b[2;1H\x1bMins"))
	expect(t, s, "top", "ins", "b", "c", "bottom")
	s.Write([]byte("\x1b[r\x1b[5;1H\n"))
	expect(t, s, "ins", "b", "c", "bottom", "")
}

func TestCursorMovesAndErase(t *testing.T) {
	s := New(4, 10, nil)
	s.Write([]byte("0123456789\x1b[2;3Habc\x1b[2Dz\x1b[A!\x1b[3B\x1b[5G#"))
	expect(t, s, "0123!56789", "  azc", "", "    #")
	s.Write([]byte("\x1b[1;4H\x1b[K"))
	expect(t, s, "012", "  azc", "", "    #")
	s.Write([]byte("\x1b[2;4H\x1b[1K"))
	expect(t, s, "012", "    c", "", "    #")
	s.Write([]byte("\x1b[3;1H\x1b[J"))
	expect(t, s, "012", "    c")
	s.Write([]byte("\x1b[H\x1b[2J"))
	expect(t, s)
	cursorAt(t, s, 0, 0)
	// Moves are clamped to the screen.
	s.Write([]byte("\x1b[99;99H"))
	cursorAt(t, s, 3, 9)
	s.Write([]byte("\x1b[99A\x1b[99D"))
	cursorAt(t, s, 0, 0)
}

func TestInsertDeleteChars(t *testing.T) {
	s := New(2, 8, nil)
	s.Write([]byte("abcdef\x1b[1;3H\x1b[2@XY"))
	expect(t, s, "abXYcdef")
	s.Write([]byte("\x1b[1;2H\x1b[3P"))
	expect(t, s, "acdef")
	s.Write([]byte("\x1b[1;1H\x1b[2X"))
	expect(t, s, "  def")
}

func TestInsertDeleteLines(t *testing.T) {
	s := New(4, 4, nil)
	s.Write([]byte("a\r\nb\r\nc\r\nd\x1b[2;2H\x1b[L"))
	expect(t, s, "a", "", "b", "c")
	cursorAt(t, s, 1, 0)
	s.Write([]byte("\x1b[2M"))
	expect(t, s, "a", "c")
}

func TestSaveRestoreAndReset(t *testing.T) {
	s := New(3, 6, nil)
	s.Write([]byte("ab\x1b7\x1b[3;5Hz\x1b8c"))
	expect(t, s, "abc", "", "    z")
	s.Write([]byte("\x1b[1;1H\x1b[s\x1b[2;2Hq\x1b[uW"))
	expect(t, s, "Wbc", " q", "    z")
	s.Write([]byte("\x1bc"))
	expect(t, s)
	cursorAt(t, s, 0, 0)
}

func TestColours(t *testing.T) {
	s := New(1, 8, nil)
	s.Write([]byte("\x1b[31ma\x1b[1;44mb\x1b[7mc\x1b[0md\x1b[92me\x1b[38;5;200mf\x1b[mg"))
	want := []uint8{0x04, 0x1c, 0x41, 0x07, 0x0a, 0x0a, 0x07}
	for i, w := range want {
		if a := s.Cell(0, i).Attr; a != w {
			t.Errorf("cell %d (%c) attr %#02x, want %#02x", i, s.Cell(0, i).Ch, a, w)
		}
	}
	expect(t, s, "abcdefg")
}

func TestQueriesAnswer(t *testing.T) {
	var got []string
	s := New(5, 20, func(b []byte) { got = append(got, string(b)) })
	s.Write([]byte("\x1b[3;7H\x1b[6n\x1b[5n\x1b[c"))
	want := []string{"\x1b[3;7R", "\x1b[0n", "\x1b[?6c"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("answers %q, want %q", got, want)
	}
}

func TestPrivateModesAndStrings(t *testing.T) {
	s := New(2, 10, nil)
	s.Write([]byte("\x1b[?25l\x1b]0;title\x07\x1b(Bok\x1b]2;x\x1b\\!"))
	expect(t, s, "ok!")
	if _, _, on := s.Cursor(); on {
		t.Error("cursor shown after ESC[?25l")
	}
	s.Write([]byte("\x1b[?25h\x1b[?7l0123456789abc"))
	if _, _, on := s.Cursor(); !on {
		t.Error("cursor hidden after ESC[?25h")
	}
	// Without autowrap the last column is overwritten.
	expect(t, s, "ok!012345c")
}

func TestUTF8ShowsOneMark(t *testing.T) {
	s := New(1, 10, nil)
	s.Write([]byte("a\u00e9b\u20acc\U0001F600d\xffe"))
	expect(t, s, "a?b?c?d?e")
}

func TestHostileInputStaysInBounds(t *testing.T) {
	s := New(3, 5, nil)
	var b strings.Builder
	for i := 0; i < 100; i++ {
		b.WriteString("\x1b[" + strings.Repeat("9", 30) + ";" + strings.Repeat("1;", 40) + "H")
		b.WriteString("\x1b[99999L\x1b[99999M\x1b[99999@\x1b[99999P\x1b[0;0r\x1b[5;1r\x1b[99999S\x1b[99999T")
		b.WriteString("\x1b[99999X\x1b[J\x1b[1J\x1b[2K x")
	}
	s.Write([]byte(b.String()))
	if len(s.params) > maxParams {
		t.Errorf("%d parameters kept", len(s.params))
	}
	r, c, _ := s.Cursor()
	if r < 0 || r >= 3 || c < 0 || c >= 5 {
		t.Errorf("cursor at %d,%d", r, c)
	}
}

func TestControlInsideSequence(t *testing.T) {
	s := New(2, 6, nil)
	s.Write([]byte("abc\x1b[\r2Cx"))
	expect(t, s, "abx")
}
