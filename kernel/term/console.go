package term

// A Console puts a Screen on a Display. Writers change the cell grid
// under a lock and return; drawing happens in Render, which draws only
// the cells that differ from what the display shows. The render loop
// (Start) coalesces: output that scrolls the screen a hundred times
// between two renders costs one redraw, which matters for a framebuffer
// (a full redraw is a few megabytes of uncached stores) and not at all
// for the correctness of what ends on the screen.

import (
	"sync"
	"sync/atomic"
	"time"
)

// Display is a device that shows cells: VGA text memory or a framebuffer.
type Display interface {
	// Draw shows c at row, col; cursor says whether the cursor is on it
	// (for displays that draw their own cursor).
	Draw(row, col int, c Cell, cursor bool)
	// MoveCursor puts a hardware cursor at row, col (displays that draw
	// their own cursor ignore it).
	MoveCursor(row, col int, visible bool)
}

// Console is a Screen shown on a Display. Its methods are safe for
// concurrent use.
type Console struct {
	d Display

	mu sync.Mutex
	s  *Screen // protected by mu

	renderMu sync.Mutex // serialises Render
	shown    []Cell     // what the display shows; protected by renderMu
	snap     []Cell     // the grid copied out of s; protected by renderMu
	curRow   int        // the cursor the display shows; protected by renderMu
	curCol   int
	curOn    bool
	first    bool // nothing drawn yet: draw every cell

	kick chan struct{}

	stopped atomic.Bool // a crash report owns the display (Crash)
}

// NewConsole makes a console of rows by cols cells on d; reply receives
// the answers to status queries (see New).
func NewConsole(d Display, rows, cols int, reply func([]byte)) *Console {
	return &Console{
		d:     d,
		s:     New(rows, cols, reply),
		shown: make([]Cell, rows*cols),
		snap:  make([]Cell, rows*cols),
		first: true,
		kick:  make(chan struct{}, 1),
	}
}

// Size returns the console's rows and columns.
func (c *Console) Size() (rows, cols int) { return c.s.Size() }

// Write interprets p and asks the render loop to show the result.
func (c *Console) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.s.Write(p)
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
	return len(p), nil
}

// Lines returns the text of every row (trailing blanks removed).
func (c *Console) Lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	rows, _ := c.s.Size()
	l := make([]string, rows)
	for i := range l {
		l[i] = c.s.Line(i)
	}
	return l
}

// Render draws what changed since the last Render.
func (c *Console) Render() {
	if c.stopped.Load() {
		return
	}
	c.renderMu.Lock()
	defer c.renderMu.Unlock()
	c.mu.Lock()
	copy(c.snap, c.s.Cells())
	row, col, on := c.s.Cursor()
	_, cols := c.s.Size()
	c.mu.Unlock()
	oldAt := c.curRow*cols + c.curCol
	newAt := row*cols + col
	for i, cell := range c.snap {
		cursorHere := on && i == newAt
		cursorWas := c.curOn && i == oldAt
		if c.first || cell != c.shown[i] || cursorHere != cursorWas {
			c.d.Draw(i/cols, i%cols, cell, cursorHere)
			c.shown[i] = cell
		}
	}
	if c.first || row != c.curRow || col != c.curCol || on != c.curOn {
		c.d.MoveCursor(row, col, on)
	}
	c.curRow, c.curCol, c.curOn, c.first = row, col, on, false
}

// Start runs the render loop: a Render after every Write, at most one per
// minGap (and never more often than twice a render's own duration, so a
// slow display takes at most a third of a CPU while output streams).
func (c *Console) Start(minGap time.Duration) {
	go func() {
		for range c.kick {
			t := time.Now()
			c.Render()
			time.Sleep(max(minGap, 2*time.Since(t)))
		}
	}()
}
