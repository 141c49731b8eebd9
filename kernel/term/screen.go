// Package term is the terminal emulator behind the screen consoles (VGA
// text mode, the UEFI framebuffer): a grid of character cells in memory
// and the part of the VT100/ANSI (ECMA-48) control language that a shell,
// ls, top and vi send to a terminal that calls itself vt100 or linux.
// Drawing the grid on a device is a Display's job (console.go); the
// model itself touches no hardware, so it runs under go test.
//
// What is understood: the C0 controls BS, HT, LF/VT/FF, CR, BEL (ignored),
// ESC c/D/E/M/7/8, character-set selections (consumed), OSC strings
// (consumed), and the CSI sequences for cursor movement (A B C D E F G H
// f d), erasing (J K X), inserting and deleting (@ P L M), scrolling (S T
// and the region r), saving the cursor (s u), SGR colours and reverse
// video (m), DEC private modes ?25 (cursor) and ?7 (autowrap), and the
// device status and attribute queries (5n, 6n, c), whose answers go to
// the reply function. Text is UTF-8; characters outside ASCII show as '?'
// (the VGA font is code page 437 and the built-in font has ASCII only).
package term

// Cell is one character position: an ASCII character and a VGA-style
// attribute (background colour in bits 4-6, foreground in bits 0-3, the
// 16 colours of the PC's text modes).
type Cell struct {
	Ch   byte
	Attr uint8
}

// DefaultAttr is light grey on black.
const DefaultAttr = 0x07

// blank is an empty cell with attribute a.
func blank(a uint8) Cell { return Cell{Ch: ' ', Attr: a} }

// parser states
const (
	stGround = iota
	stEsc
	stCSI
	stOSC
	stOSCEsc
	stCharset
)

// Screen is the cell grid and the cursor. It is not safe for concurrent
// use; Console serialises writers.
type Screen struct {
	rows, cols int
	cells      []Cell
	x, y       int  // cursor
	wrapNext   bool // the last column was written: the next character wraps first
	autowrap   bool
	showCursor bool
	top, bot   int // scrolling region, inclusive rows

	fg, bg  uint8
	bold    bool
	reverse bool

	saved struct {
		x, y            int
		fg, bg          uint8
		bold, reverse   bool
		wrapNext, valid bool
	}

	state   int
	params  []int
	cur     int  // the parameter being read; -1 when none was given
	private bool // CSI ? ...
	utf8    int  // continuation bytes still expected

	reply func([]byte)
}

// New makes a blank screen of rows by cols cells. reply, if not nil,
// receives the terminal's answers to status queries (they are input to
// the terminal, as a real terminal sends them back on the line).
func New(rows, cols int, reply func([]byte)) *Screen {
	s := &Screen{rows: rows, cols: cols, cells: make([]Cell, rows*cols), reply: reply}
	s.reset()
	return s
}

func (s *Screen) reset() {
	s.fg, s.bg, s.bold, s.reverse = 7, 0, false, false
	for i := range s.cells {
		s.cells[i] = blank(DefaultAttr)
	}
	s.x, s.y, s.wrapNext = 0, 0, false
	s.autowrap, s.showCursor = true, true
	s.top, s.bot = 0, s.rows-1
	s.state = stGround
	s.saved.valid = false
}

// Size returns the screen's rows and columns.
func (s *Screen) Size() (rows, cols int) { return s.rows, s.cols }

// Cell returns the cell at row, col.
func (s *Screen) Cell(row, col int) Cell { return s.cells[row*s.cols+col] }

// Cells returns the grid, row by row; the caller must not keep it across
// writes.
func (s *Screen) Cells() []Cell { return s.cells }

// Cursor returns the cursor's position and whether it is shown.
func (s *Screen) Cursor() (row, col int, visible bool) { return s.y, s.x, s.showCursor }

// Line returns row's text with trailing blanks removed.
func (s *Screen) Line(row int) string {
	b := make([]byte, s.cols)
	for i := range b {
		b[i] = s.cells[row*s.cols+i].Ch
	}
	n := len(b)
	for n > 0 && b[n-1] == ' ' {
		n--
	}
	return string(b[:n])
}

// attr is the attribute new characters get.
func (s *Screen) attr() uint8 {
	fg, bg := s.fg, s.bg
	if s.bold {
		fg |= 8
	}
	if s.reverse {
		fg, bg = bg, fg&7
	}
	return bg<<4 | fg
}

// Write interprets p. It never fails.
func (s *Screen) Write(p []byte) (int, error) {
	for _, b := range p {
		s.put(b)
	}
	return len(p), nil
}

func (s *Screen) put(b byte) {
	switch s.state {
	case stEsc:
		s.escape(b)
		return
	case stCSI:
		s.csiByte(b)
		return
	case stOSC:
		switch b {
		case 0x07:
			s.state = stGround
		case 0x1b:
			s.state = stOSCEsc
		}
		return
	case stOSCEsc: // ESC \ ends the string; anything else too
		s.state = stGround
		return
	case stCharset:
		s.state = stGround
		return
	}
	if b >= 0x80 {
		// UTF-8: one '?' per character, shown at its lead byte.
		if b >= 0xc0 {
			s.utf8 = 1
			if b >= 0xe0 {
				s.utf8 = 2
			}
			if b >= 0xf0 {
				s.utf8 = 3
			}
			s.print('?')
		} else if s.utf8 > 0 {
			s.utf8--
		} else {
			s.print('?')
		}
		return
	}
	s.utf8 = 0
	switch b {
	case 0x07: // BEL
	case 0x08: // BS
		if s.x > 0 {
			s.x--
		}
		s.wrapNext = false
	case 0x09: // HT: next multiple of 8
		s.x = min((s.x/8+1)*8, s.cols-1)
		s.wrapNext = false
	case 0x0a, 0x0b, 0x0c: // LF, VT, FF
		s.lineFeed()
	case 0x0d: // CR
		s.x, s.wrapNext = 0, false
	case 0x1b:
		s.state = stEsc
	default:
		if b >= 0x20 && b < 0x7f {
			s.print(b)
		}
	}
}

// print puts a character at the cursor and advances, wrapping at the
// right margin the way a VT100 does: the cursor stays on the last column
// until the next character arrives.
func (s *Screen) print(c byte) {
	if s.wrapNext {
		s.x, s.wrapNext = 0, false
		s.lineFeed()
	}
	s.cells[s.y*s.cols+s.x] = Cell{Ch: c, Attr: s.attr()}
	if s.x == s.cols-1 {
		s.wrapNext = s.autowrap
		return
	}
	s.x++
}

// lineFeed moves the cursor down, scrolling the region at its bottom.
func (s *Screen) lineFeed() {
	s.wrapNext = false
	if s.y == s.bot {
		s.scrollUp(s.top, s.bot, 1)
		return
	}
	if s.y < s.rows-1 {
		s.y++
	}
}

// reverseIndex moves the cursor up, scrolling the region down at its top.
func (s *Screen) reverseIndex() {
	s.wrapNext = false
	if s.y == s.top {
		s.scrollDown(s.top, s.bot, 1)
		return
	}
	if s.y > 0 {
		s.y--
	}
}

// scrollUp moves rows top+n..bot up by n and blanks the n rows at bot.
func (s *Screen) scrollUp(top, bot, n int) {
	n = min(n, bot-top+1)
	copy(s.cells[top*s.cols:(bot+1)*s.cols], s.cells[(top+n)*s.cols:(bot+1)*s.cols])
	s.fill((bot-n+1)*s.cols, (bot+1)*s.cols)
}

// scrollDown moves rows top..bot-n down by n and blanks the n rows at top.
func (s *Screen) scrollDown(top, bot, n int) {
	n = min(n, bot-top+1)
	copy(s.cells[(top+n)*s.cols:(bot+1)*s.cols], s.cells[top*s.cols:(bot+1-n)*s.cols])
	s.fill(top*s.cols, (top+n)*s.cols)
}

// fill blanks cells [from, to) with the current background.
func (s *Screen) fill(from, to int) {
	a := s.bg << 4
	if s.reverse {
		a = (s.fg & 7) << 4
	}
	a |= 7
	for i := from; i < to; i++ {
		s.cells[i] = blank(a)
	}
}

func (s *Screen) escape(b byte) {
	s.state = stGround
	switch b {
	case '[':
		s.state, s.params, s.cur, s.private = stCSI, s.params[:0], -1, false
	case ']':
		s.state = stOSC
	case '(', ')', '*', '+', '#':
		s.state = stCharset
	case 'c':
		s.reset()
	case 'D':
		s.lineFeed()
	case 'E':
		s.x = 0
		s.lineFeed()
	case 'M':
		s.reverseIndex()
	case '7':
		s.save()
	case '8':
		s.restore()
	}
}

func (s *Screen) save() {
	s.saved.x, s.saved.y, s.saved.fg, s.saved.bg = s.x, s.y, s.fg, s.bg
	s.saved.bold, s.saved.reverse, s.saved.wrapNext, s.saved.valid = s.bold, s.reverse, s.wrapNext, true
}

func (s *Screen) restore() {
	if !s.saved.valid {
		s.x, s.y, s.wrapNext = 0, 0, false
		return
	}
	s.x, s.y, s.fg, s.bg = s.saved.x, s.saved.y, s.saved.fg, s.saved.bg
	s.bold, s.reverse, s.wrapNext = s.saved.bold, s.saved.reverse, s.saved.wrapNext
}

// maxParams bounds a CSI sequence's parameters: more are ignored, so
// hostile output cannot grow the parser.
const maxParams = 16

func (s *Screen) csiByte(b byte) {
	switch {
	case b >= '0' && b <= '9':
		if s.cur < 0 {
			s.cur = 0
		}
		if s.cur < 10000 {
			s.cur = s.cur*10 + int(b-'0')
		}
	case b == ';':
		s.pushParam()
	case b == '?' || b == '>' || b == '=':
		s.private = true
	case b >= 0x40 && b <= 0x7e:
		s.pushParam()
		s.state = stGround
		s.csi(b)
	case b == 0x18 || b == 0x1a: // CAN, SUB abort the sequence
		s.state = stGround
	case b < 0x20:
		// Controls inside a sequence act at once (VT100).
		s.state = stGround
		s.put(b)
		if s.state == stGround {
			s.state = stCSI
		}
	}
}

func (s *Screen) pushParam() {
	if len(s.params) < maxParams {
		s.params = append(s.params, s.cur)
	}
	s.cur = -1
}

// param returns parameter i, or def when it is absent or zero (ECMA-48's
// default for counts).
func (s *Screen) param(i, def int) int {
	if i < len(s.params) && s.params[i] > 0 {
		return s.params[i]
	}
	return def
}

func (s *Screen) csi(final byte) {
	if s.private {
		s.decMode(final)
		return
	}
	n := s.param(0, 1)
	switch final {
	case 'A':
		s.moveTo(s.y-n, s.x)
	case 'B', 'e':
		s.moveTo(s.y+n, s.x)
	case 'C', 'a':
		s.moveTo(s.y, s.x+n)
	case 'D':
		s.moveTo(s.y, s.x-n)
	case 'E':
		s.moveTo(s.y+n, 0)
	case 'F':
		s.moveTo(s.y-n, 0)
	case 'G', '`':
		s.moveTo(s.y, n-1)
	case 'd':
		s.moveTo(n-1, s.x)
	case 'H', 'f':
		s.moveTo(s.param(0, 1)-1, s.param(1, 1)-1)
	case 'J':
		s.eraseDisplay(s.rawParam(0))
	case 'K':
		s.eraseLine(s.rawParam(0))
	case 'X':
		end := min(s.x+n, s.cols)
		s.fill(s.y*s.cols+s.x, s.y*s.cols+end)
		s.wrapNext = false
	case '@':
		s.insertChars(n)
	case 'P':
		s.deleteChars(n)
	case 'L':
		if s.y >= s.top && s.y <= s.bot {
			s.scrollDown(s.y, s.bot, n)
			s.x, s.wrapNext = 0, false
		}
	case 'M':
		if s.y >= s.top && s.y <= s.bot {
			s.scrollUp(s.y, s.bot, n)
			s.x, s.wrapNext = 0, false
		}
	case 'S':
		s.scrollUp(s.top, s.bot, n)
	case 'T':
		s.scrollDown(s.top, s.bot, n)
	case 'r':
		top, bot := s.param(0, 1)-1, s.param(1, s.rows)-1
		if bot >= s.rows {
			bot = s.rows - 1
		}
		if top < bot {
			s.top, s.bot = top, bot
			s.moveTo(0, 0)
		}
	case 's':
		s.save()
	case 'u':
		s.restore()
	case 'm':
		s.sgr()
	case 'n':
		switch s.rawParam(0) {
		case 5:
			s.answer("\x1b[0n")
		case 6:
			s.answer("\x1b[" + itoa(s.y+1) + ";" + itoa(s.x+1) + "R")
		}
	case 'c':
		s.answer("\x1b[?6c") // a VT102
	}
}

// rawParam returns parameter i as given (0 when absent).
func (s *Screen) rawParam(i int) int {
	if i < len(s.params) && s.params[i] > 0 {
		return s.params[i]
	}
	return 0
}

func (s *Screen) decMode(final byte) {
	if final != 'h' && final != 'l' {
		return
	}
	on := final == 'h'
	for _, p := range s.params {
		switch p {
		case 25:
			s.showCursor = on
		case 7:
			s.autowrap = on
			if !on {
				s.wrapNext = false
			}
		}
	}
}

func (s *Screen) answer(a string) {
	if s.reply != nil {
		s.reply([]byte(a))
	}
}

// moveTo puts the cursor at row, col, clamped to the screen.
func (s *Screen) moveTo(row, col int) {
	s.y = max(0, min(row, s.rows-1))
	s.x = max(0, min(col, s.cols-1))
	s.wrapNext = false
}

func (s *Screen) eraseDisplay(how int) {
	at := s.y*s.cols + s.x
	switch how {
	case 0:
		s.fill(at, len(s.cells))
	case 1:
		s.fill(0, at+1)
	case 2, 3:
		s.fill(0, len(s.cells))
	}
	s.wrapNext = false
}

func (s *Screen) eraseLine(how int) {
	row := s.y * s.cols
	switch how {
	case 0:
		s.fill(row+s.x, row+s.cols)
	case 1:
		s.fill(row, row+s.x+1)
	case 2:
		s.fill(row, row+s.cols)
	}
	s.wrapNext = false
}

func (s *Screen) insertChars(n int) {
	row := s.cells[s.y*s.cols : (s.y+1)*s.cols]
	n = min(n, s.cols-s.x)
	copy(row[s.x+n:], row[s.x:s.cols-n])
	s.fill(s.y*s.cols+s.x, s.y*s.cols+s.x+n)
	s.wrapNext = false
}

func (s *Screen) deleteChars(n int) {
	row := s.cells[s.y*s.cols : (s.y+1)*s.cols]
	n = min(n, s.cols-s.x)
	copy(row[s.x:], row[s.x+n:])
	s.fill((s.y+1)*s.cols-n, (s.y+1)*s.cols)
	s.wrapNext = false
}

// ansiToVGA maps ANSI colour numbers (0 black, 1 red, 2 green, 3 yellow,
// 4 blue, 5 magenta, 6 cyan, 7 white) to the PC's (blue is bit 0, red bit 2).
var ansiToVGA = [8]uint8{0, 4, 2, 6, 1, 5, 3, 7}

func (s *Screen) sgr() {
	if len(s.params) == 0 {
		s.params = append(s.params, 0)
	}
	for i := 0; i < len(s.params); i++ {
		p := s.params[i]
		switch {
		case p <= 0:
			s.fg, s.bg, s.bold, s.reverse = 7, 0, false, false
		case p == 1:
			s.bold = true
		case p == 22:
			s.bold = false
		case p == 7:
			s.reverse = true
		case p == 27:
			s.reverse = false
		case p >= 30 && p <= 37:
			s.fg = ansiToVGA[p-30]
		case p == 39:
			s.fg = 7
		case p >= 40 && p <= 47:
			s.bg = ansiToVGA[p-40]
		case p == 49:
			s.bg = 0
		case p >= 90 && p <= 97:
			s.fg = ansiToVGA[p-90] | 8
		case p >= 100 && p <= 107:
			s.bg = ansiToVGA[p-100] // the text modes' backgrounds have 8 colours
		case p == 38 || p == 48:
			// 256-colour and RGB forms: skip their arguments.
			if i+1 < len(s.params) && s.params[i+1] == 5 {
				i += 2
			} else if i+1 < len(s.params) && s.params[i+1] == 2 {
				i += 4
			}
		}
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for ; n > 0; n /= 10 {
		i--
		b[i] = byte('0' + n%10)
	}
	return string(b[i:])
}
