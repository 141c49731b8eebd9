package font

import "testing"

func TestGlyphsAreDistinctAndInked(t *testing.T) {
	for c := byte(0x20); c <= 0x7e; c++ {
		g := *Glyph(c)
		got, ok := Match(g)
		if !ok || got != c {
			t.Errorf("glyph of %q matches %q", c, got)
		}
		ink := 0
		for _, row := range g {
			for ; row != 0; row &= row - 1 {
				ink++
			}
		}
		if (ink == 0) != (c == ' ') {
			t.Errorf("glyph of %q has %d pixels set", c, ink)
		}
	}
	if Glyph(0x01) != Glyph('?') || Glyph(0xff) != Glyph('?') {
		t.Error("characters outside ASCII do not show as '?'")
	}
}
