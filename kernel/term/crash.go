package term

// A Crash draws a fatal crash report (the runtime's panic message and
// goroutine traces, the machine layer's registers) straight onto a
// display, a byte at a time, for a machine whose only console is the
// screen. The machine layer calls Put beneath the runtime, in trap
// context with interrupts off (machine.SetCrashScreen), so Put neither
// allocates, blocks nor takes a lock, and draws at once: no render loop
// will run again.
//
// A report is longer than a screen (every goroutine's stack), and its
// start says what failed while its end holds the registers, so the
// screen keeps both: its top two thirds as the report began, a ruler,
// and below it a ring of the latest lines with the row after the newest
// one left blank. Going round the ring costs two rows of drawing a line,
// where scrolling would redraw the whole region (megabytes of
// framebuffer stores) for each. A line longer than the screen is cut at
// its right edge: what names a frame (function, file and line) comes
// first, and the serial port has all of it.
type Crash struct {
	d          Display
	c          *Console // stopped at the first byte, so it draws no more
	rows, cols int
	head       int // rows keeping the report's start
	row, col   int // where the next character goes
	ring       int // lines written below the ruler
	started    bool
}

// crashAttr is the report's colour: bright white on black (a screen
// reader, and tools/screentest, take any non-black pixel for ink).
const crashAttr = 0x0f

// crashRuler separates the report's start from its latest lines.
const crashRuler = "--- later lines, round the ring: the newest is above the blank row ---"

// NewCrash makes a crash writer for d, rows by cols cells, which c (if
// not nil) shows until a report starts.
func NewCrash(d Display, rows, cols int, c *Console) *Crash {
	head := rows - rows/3 - 1
	if rows < 8 {
		head = rows // too small to split: the report's start only
	}
	return &Crash{d: d, c: c, rows: rows, cols: cols, head: head}
}

// Put draws one byte of the report: printable ASCII, newline and tab;
// carriage returns (the serial port's line ends) and other control bytes
// are dropped.
func (w *Crash) Put(b byte) {
	if !w.started {
		w.start()
	}
	switch {
	case b == '\n':
		w.newline()
	case b == '\t':
		for next := w.col/8*8 + 8; w.col < next && w.col < w.cols && w.row >= 0; {
			w.char(' ')
		}
	case b >= 0x20 && b < 0x7f:
		w.char(b)
	}
}

// start stops the console's drawing and clears the screen.
func (w *Crash) start() {
	w.started = true
	if w.c != nil {
		w.c.stopped.Store(true)
	}
	for r := 0; r < w.rows; r++ {
		w.clearRow(r)
	}
	w.d.MoveCursor(0, 0, false)
	if w.head < w.rows {
		for i := 0; i < w.cols && i < len(crashRuler); i++ {
			w.d.Draw(w.head, i, Cell{Ch: crashRuler[i], Attr: crashAttr}, false)
		}
	}
}

func (w *Crash) clearRow(r int) {
	for i := 0; i < w.cols; i++ {
		w.d.Draw(r, i, blank(DefaultAttr), false)
	}
}

// char draws c at the position; past the right edge it is dropped.
func (w *Crash) char(c byte) {
	if w.row < 0 || w.col == w.cols {
		return // a screen too small to split is full, or the line is cut
	}
	w.d.Draw(w.row, w.col, Cell{Ch: c, Attr: crashAttr}, false)
	w.col++
}

// newline moves to the next row: down the head while it lasts, then
// round the ring below the ruler, clearing the row it moves to and the
// one after it.
func (w *Crash) newline() {
	w.col = 0
	if w.row < 0 {
		return
	}
	if w.row+1 < w.head {
		w.row++
		return
	}
	size := w.rows - w.head - 1 // the ring's rows
	if size < 2 {
		w.row = -1 // no ring: keep the start
		return
	}
	w.row = w.head + 1 + w.ring%size
	w.ring++
	w.clearRow(w.row)
	w.clearRow(w.head + 1 + w.ring%size)
}
