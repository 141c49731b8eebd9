package ps2

import "testing"

// typeCodes feeds scan codes and collects the output.
func typeCodes(k *Keymap, codes ...byte) string {
	var out []byte
	for _, c := range codes {
		out = append(out, k.Translate(c)...)
	}
	return string(out)
}

// press and release make and break codes for a plain key.
func tap(code byte) []byte { return []byte{code, code | 0x80} }

func seq(parts ...[]byte) []byte {
	var s []byte
	for _, p := range parts {
		s = append(s, p...)
	}
	return s
}

func TestLettersDigitsAndShift(t *testing.T) {
	var k Keymap
	// "ls -l" then Enter.
	got := typeCodes(&k, seq(tap(0x26), tap(0x1f), tap(0x39), tap(0x0c), tap(0x26), tap(0x1c))...)
	if got != "ls -l\r" {
		t.Errorf("got %q", got)
	}
	// Shift held over "1/a", released before "b"; right shift for "9".
	got = typeCodes(&k, seq([]byte{0x2a}, tap(0x02), tap(0x35), tap(0x1e), []byte{0xaa}, tap(0x30),
		[]byte{0x36}, tap(0x0a), []byte{0xb6}, tap(0x0a))...)
	if got != "!?Ab(9" {
		t.Errorf("shifted: got %q", got)
	}
}

func TestCapsLockShiftsLettersOnly(t *testing.T) {
	var k Keymap
	got := typeCodes(&k, seq(tap(0x3a), tap(0x1e), tap(0x02), []byte{0x2a}, tap(0x1e), []byte{0xaa}, tap(0x3a), tap(0x1e))...)
	if got != "A1aa" {
		t.Errorf("got %q", got)
	}
}

func TestControlCharacters(t *testing.T) {
	var k Keymap
	// Ctrl-C, Ctrl-D, Ctrl-[ (ESC), and Right Ctrl (E0 1D) with Z.
	got := typeCodes(&k, seq([]byte{0x1d}, tap(0x2e), tap(0x20), tap(0x1a), []byte{0x9d},
		[]byte{0xe0, 0x1d}, tap(0x2c), []byte{0xe0, 0x9d}, tap(0x2e))...)
	if got != "\x03\x04\x1b\x1ac" {
		t.Errorf("got %q", got)
	}
}

func TestEditingKeys(t *testing.T) {
	var k Keymap
	got := typeCodes(&k, seq([]byte{0xe0, 0x48, 0xe0, 0xc8}, []byte{0xe0, 0x4b, 0xe0, 0xcb},
		[]byte{0xe0, 0x53, 0xe0, 0xd3}, tap(0x0e), tap(0x0f), tap(0x01), tap(0x3b), tap(0x58))...)
	want := "\x1b[A\x1b[D\x1b[3~\x7f\t\x1b\x1b[[A\x1b[24~"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestKeypadFollowsNumLock(t *testing.T) {
	var k Keymap
	off := typeCodes(&k, seq(tap(0x48), tap(0x4e), []byte{0xe0, 0x1c, 0xe0, 0x9c})...)
	on := typeCodes(&k, seq(tap(0x45), tap(0x48), tap(0x53), []byte{0xe0, 0x35, 0xe0, 0xb5})...)
	if off != "\x1b[A+\r" || on != "8./" {
		t.Errorf("num lock off %q, on %q", off, on)
	}
}

func TestAltSendsEscape(t *testing.T) {
	var k Keymap
	got := typeCodes(&k, seq([]byte{0x38}, tap(0x30), []byte{0xb8}, tap(0x30))...)
	if got != "\x1bbb" {
		t.Errorf("got %q", got)
	}
}

func TestNoiseIsIgnored(t *testing.T) {
	var k Keymap
	// Acknowledgements, a fake shift around an arrow, and Pause.
	got := typeCodes(&k, seq([]byte{0xfa, 0xe0, 0x2a, 0xe0, 0x48, 0xe0, 0xc8, 0xe0, 0xaa},
		[]byte{0xe1, 0x1d, 0x45, 0xe1, 0x9d, 0xc5}, tap(0x1e))...)
	if got != "\x1b[Aa" {
		t.Errorf("got %q", got)
	}
	// Every byte is safe to feed.
	for b := 0; b < 256; b++ {
		k.Translate(byte(b))
	}
}
