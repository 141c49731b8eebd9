package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"shortbread/kernel/drivers/framebuffer"
	"shortbread/kernel/term"
)

// TestReadPPM draws text with the kernel's framebuffer console into a
// buffer laid out as a PPM's pixels and reads it back.
func TestReadPPM(t *testing.T) {
	const w, h = 8 * 12, 16 * 3
	mode := framebuffer.Mode{Width: w, Height: h, Pitch: w * 3, BPP: 24,
		RedPos: 0, RedSize: 8, GreenPos: 8, GreenSize: 8, BluePos: 16, BlueSize: 8}
	pix := make([]byte, w*h*3)
	fb, err := framebuffer.New(pix, mode)
	if err != nil {
		t.Fatal(err)
	}
	c := term.NewConsole(fb, 3, 12, nil)
	c.Write([]byte("/ # echo $?\r\n\x1b[32m0\x1b[m\r\n/ #"))
	c.Render()
	path := filepath.Join(t.TempDir(), "s.ppm")
	if err := os.WriteFile(path, append([]byte(fmt.Sprintf("P6\n%d %d\n255\n", w, h)), pix...), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := readPPM(path)
	if err != nil {
		t.Fatal(err)
	}
	// The cursor's underline after the last prompt does not hide the
	// cell (a blank: trimmed).
	want := []string{"/ # echo $?", "0", "/ #"}
	if fmt.Sprint(l) != fmt.Sprint(want) {
		t.Errorf("read %q, want %q", l, want)
	}
	if promptAt(l) != 2 {
		t.Errorf("prompt found at row %d, want 2", promptAt(l))
	}
}

func TestKeyFor(t *testing.T) {
	for r, want := range map[rune]string{'a': "[a]", 'Z': "[shift z]", '$': "[shift 4]", '|': "[shift backslash]", ' ': "[spc]", '\'': "[apostrophe]"} {
		k, ok := keyFor(r)
		if !ok || fmt.Sprint(k) != want {
			t.Errorf("keyFor(%q) = %v, %v; want %s", r, k, ok, want)
		}
	}
	if _, ok := keyFor('\u00e9'); ok {
		t.Error("a key for é")
	}
}
