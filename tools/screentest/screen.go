package main

// Reading the screen back, and the keys to type.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"shortbread/kernel/font"
)

// textCells turns VGA text memory (character, attribute) into lines with
// trailing blanks removed.
func textCells(b []byte, cols, rows int) []string {
	l := make([]string, rows)
	for r := range l {
		line := make([]byte, cols)
		for c := range line {
			ch := b[2*(r*cols+c)]
			if ch < 0x20 || ch > 0x7e {
				ch = '?'
			}
			line[c] = ch
		}
		l[r] = strings.TrimRight(string(line), " ")
	}
	return l
}

// ppmCols is the width in cells of the last screendump read.
var ppmCols int

// readPPM decodes a screendump (binary PPM) of the framebuffer console:
// each 8x16 cell from the top left is matched against the kernel's font,
// a pixel that is not the background's black being ink. A cell under the
// cursor (an underline in its last two rows) is matched without them; a
// cell that matches nothing reads as DEL (0x7f, shown as '#').
func readPPM(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var magic string
	var w, h, maxv int
	if _, err := fmt.Fscan(r, &magic, &w, &h, &maxv); err != nil || magic != "P6" || maxv != 255 {
		return nil, fmt.Errorf("%s: not a binary PPM (%v)", path, err)
	}
	if _, err := r.ReadByte(); err != nil { // the one whitespace before the pixels
		return nil, err
	}
	pix := make([]byte, w*h*3)
	if _, err := io.ReadFull(r, pix); err != nil {
		return nil, err
	}
	if w < font.Width || h < font.Height {
		return nil, errors.New("screendump smaller than a cell")
	}
	rows, cols := h/font.Height, w/font.Width
	ppmCols = cols
	l := make([]string, rows)
	for row := range l {
		line := make([]byte, cols)
		for col := range line {
			var g [font.Height]byte
			for y := 0; y < font.Height; y++ {
				for x := 0; x < font.Width; x++ {
					o := 3 * ((row*font.Height+y)*w + col*font.Width + x)
					if pix[o] != 0 || pix[o+1] != 0 || pix[o+2] != 0 {
						g[y] |= 0x80 >> x
					}
				}
			}
			ch, ok := font.Match(g)
			if !ok && g[font.Height-1] == 0xff && g[font.Height-2] == 0xff {
				g[font.Height-1], g[font.Height-2] = 0, 0
				ch, ok = font.Match(g)
			}
			if !ok {
				ch = 0x7f
			}
			line[col] = ch
		}
		l[row] = strings.TrimRight(string(line), " ")
	}
	return l, nil
}

// unshifted names the QMP qcodes of the characters typed without Shift;
// shifted, those typed with it, by the unshifted key's character.
var (
	unshifted = map[rune]string{
		' ': "spc", '-': "minus", '=': "equal", '[': "bracket_left", ']': "bracket_right",
		';': "semicolon", '\'': "apostrophe", '`': "grave_accent", '\\': "backslash",
		',': "comma", '.': "dot", '/': "slash",
	}
	shifted = map[rune]rune{
		'!': '1', '@': '2', '#': '3', '$': '4', '%': '5', '^': '6', '&': '7', '*': '8',
		'(': '9', ')': '0', '_': '-', '+': '=', '{': '[', '}': ']', ':': ';', '"': '\'',
		'~': '`', '|': '\\', '<': ',', '>': '.', '?': '/',
	}
)

// keyFor returns the keys that type r on a US keyboard.
func keyFor(r rune) ([]string, bool) {
	switch {
	case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		return []string{string(r)}, true
	case r >= 'A' && r <= 'Z':
		return []string{"shift", string(r - 'A' + 'a')}, true
	}
	if k, ok := unshifted[r]; ok {
		return []string{k}, true
	}
	if base, ok := shifted[r]; ok {
		k, ok := keyFor(base)
		return append([]string{"shift"}, k...), ok
	}
	return nil, false
}
