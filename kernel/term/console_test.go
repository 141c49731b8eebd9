package term

import (
	"testing"
	"time"
)

// fakeDisplay records what was drawn.
type fakeDisplay struct {
	rows, cols int
	cells      []Cell
	draws      int
	cursor     [2]int
	cursorOn   bool
	drawnAt    int // cell index drawn with the cursor flag, -1 if none
}

func newFake(rows, cols int) *fakeDisplay {
	return &fakeDisplay{rows: rows, cols: cols, cells: make([]Cell, rows*cols), drawnAt: -1}
}

func (f *fakeDisplay) Draw(row, col int, c Cell, cursor bool) {
	f.cells[row*f.cols+col] = c
	f.draws++
	if cursor {
		f.drawnAt = row*f.cols + col
	}
}

func (f *fakeDisplay) MoveCursor(row, col int, on bool) { f.cursor, f.cursorOn = [2]int{row, col}, on }

func (f *fakeDisplay) text(row int) string {
	b := make([]byte, 0, f.cols)
	for c := 0; c < f.cols; c++ {
		b = append(b, f.cells[row*f.cols+c].Ch)
	}
	for len(b) > 0 && b[len(b)-1] == ' ' {
		b = b[:len(b)-1]
	}
	return string(b)
}

func TestRenderDrawsOnlyChanges(t *testing.T) {
	d := newFake(3, 10)
	c := NewConsole(d, 3, 10, nil)
	c.Render()
	if d.draws != 30 {
		t.Fatalf("first render drew %d cells, want all 30", d.draws)
	}
	d.draws = 0
	c.Write([]byte("hi"))
	c.Render()
	// h, i, and the cell the cursor moved off and onto.
	if d.draws != 3 || d.text(0) != "hi" {
		t.Errorf("drew %d cells (%q), want 3 (\"hi\")", d.draws, d.text(0))
	}
	if d.cursor != [2]int{0, 2} || !d.cursorOn || d.drawnAt != 2 {
		t.Errorf("cursor %v on=%v drawn at %d, want 0,2 on, drawn at 2", d.cursor, d.cursorOn, d.drawnAt)
	}
	d.draws = 0
	c.Render()
	if d.draws != 0 {
		t.Errorf("an idle render drew %d cells", d.draws)
	}
}

func TestRenderAfterManyScrolls(t *testing.T) {
	d := newFake(3, 10)
	c := NewConsole(d, 3, 10, nil)
	for i := 0; i < 100; i++ {
		c.Write([]byte{'a' + byte(i%26), '\r', '\n'})
	}
	c.Render()
	want := []string{"u", "v", ""}
	for i, w := range want {
		if got := d.text(i); got != w {
			t.Errorf("row %d shows %q, want %q", i, got, w)
		}
	}
	if l := c.Lines(); l[1] != "v" {
		t.Errorf("Lines()[1] = %q", l[1])
	}
}

func TestRenderLoopShowsWrites(t *testing.T) {
	d := newFake(2, 10)
	c := NewConsole(d, 2, 10, nil)
	done := make(chan struct{})
	// The loop renders on its own goroutine: wait for it through Render's
	// lock rather than a time window.
	c.Start(time.Millisecond)
	c.Write([]byte("ok"))
	go func() {
		for {
			c.renderMu.Lock()
			s := d.text(0)
			c.renderMu.Unlock()
			if s == "ok" {
				close(done)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the render loop never showed the write")
	}
}
