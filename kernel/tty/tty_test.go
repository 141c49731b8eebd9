package tty

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

type sigRec struct {
	mu   sync.Mutex
	sigs [][3]int // kind (0 group, 1 process), id, signal
}

func (s *sigRec) SignalGroup(pgrp, sig int) {
	s.mu.Lock()
	s.sigs = append(s.sigs, [3]int{0, pgrp, sig})
	s.mu.Unlock()
}

func (s *sigRec) SignalProcess(pid, sig int) {
	s.mu.Lock()
	s.sigs = append(s.sigs, [3]int{1, pid, sig})
	s.mu.Unlock()
}

func (s *sigRec) get() [][3]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][3]int(nil), s.sigs...)
}

type bufOutput struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *bufOutput) Output(p []byte) {
	o.mu.Lock()
	o.b.Write(p)
	o.mu.Unlock()
}
func (o *bufOutput) WaitRoom(vfs.Blocking) error { return nil }
func (o *bufOutput) HasRoom() bool               { return true }
func (o *bufOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

func newTest() (*TTY, *bufOutput, *sigRec) {
	out := &bufOutput{}
	rec := &sigRec{}
	return New(out, rec, nil), out, rec
}

var nonblock = vfs.Blocking{NonBlock: true}

func read(t *testing.T, tt *TTY, n int) string {
	t.Helper()
	buf := make([]byte, n)
	got, err := tt.Read(nonblock, buf)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(buf[:got])
}

func TestCanonicalLineEditing(t *testing.T) {
	tt, out, _ := newTest()
	tt.Input([]byte("lx\x7fs -l"))
	if _, err := tt.Read(nonblock, make([]byte, 10)); !errors.Is(err, linux.EAGAIN) {
		t.Fatalf("an unfinished line was readable: %v", err)
	}
	tt.Input([]byte("\r"))
	if got := read(t, tt, 100); got != "ls -l\n" {
		t.Errorf("line %q", got)
	}
	if want := "lx\b \bs -l\r\n"; out.String() != want {
		t.Errorf("echo %q, want %q", out.String(), want)
	}
	// Kill and word-erase.
	tt.Input([]byte("abc def\x17xyz\x15echo hi\n"))
	if got := read(t, tt, 100); got != "echo hi\n" {
		t.Errorf("after ^W and ^U: %q", got)
	}
	// Two lines, read one at a time; a short buffer gets part of a line.
	tt.Input([]byte("one\ntwo\n"))
	if got := read(t, tt, 2); got != "on" {
		t.Errorf("short read %q", got)
	}
	if got := read(t, tt, 100); got != "e\n" {
		t.Errorf("rest of line %q", got)
	}
	if got := read(t, tt, 100); got != "two\n" {
		t.Errorf("second line %q", got)
	}
	// ^V takes the next byte literally.
	tt.Input([]byte("a\x16\x15b\n"))
	if got := read(t, tt, 100); got != "a\x15b\n" {
		t.Errorf("after ^V ^U: %q", got)
	}
}

func TestEOF(t *testing.T) {
	tt, _, _ := newTest()
	tt.Input([]byte("abc\x04"))
	if got := read(t, tt, 100); got != "abc" {
		t.Errorf("^D after text returns the text: %q", got)
	}
	tt.Input([]byte("\x04"))
	if n, err := tt.Read(nonblock, make([]byte, 10)); n != 0 || err != nil {
		t.Errorf("^D on an empty line: %d %v, want 0 (end of file)", n, err)
	}
	if _, err := tt.Read(nonblock, make([]byte, 10)); !errors.Is(err, linux.EAGAIN) {
		t.Errorf("EOF consumed once: %v", err)
	}
}

func TestSignals(t *testing.T) {
	tt, out, rec := newTest()
	tt.SetForeground(42)
	tt.Input([]byte("sleep 100\x03"))
	if s := rec.get(); len(s) != 1 || s[0] != [3]int{0, 42, SIGINT} {
		t.Fatalf("signals %v", s)
	}
	if !bytes.HasSuffix([]byte(out.String()), []byte("^C")) {
		t.Errorf("echo %q", out.String())
	}
	if _, err := tt.Read(nonblock, make([]byte, 10)); !errors.Is(err, linux.EAGAIN) {
		t.Error("^C did not discard the line")
	}
	tt.Input([]byte{0x1c, 0x1a})
	if s := rec.get(); len(s) != 3 || s[1][2] != SIGQUIT || s[2][2] != SIGTSTP {
		t.Errorf("signals %v", s)
	}
	tt.SetWindowSize(Winsize{Row: 50, Col: 132})
	if w, s := tt.WindowSize(), rec.get(); w.Row != 50 || w.Col != 132 || len(s) != 4 || s[3][2] != SIGWINCH {
		t.Errorf("window %+v, signals %v", w, s)
	}
	tt.SetWindowSize(Winsize{Row: 50, Col: 132})
	if s := rec.get(); len(s) != 4 {
		t.Errorf("an unchanged size signalled: %v", s)
	}
}

func TestRawMode(t *testing.T) {
	tt, out, rec := newTest()
	tio := tt.Termios()
	tio.Lflag &^= ICANON | ECHO | ISIG
	tt.SetTermios(tio, false)
	tt.Input([]byte("a\x03\x7f"))
	if got := read(t, tt, 10); got != "a\x03\x7f" {
		t.Errorf("raw read %q", got)
	}
	if out.String() != "" || len(rec.get()) != 0 {
		t.Errorf("raw mode echoed %q, sent %v", out.String(), rec.get())
	}
}

func TestVminVtime(t *testing.T) {
	tt, _, _ := newTest()
	tio := tt.Termios()
	tio.Lflag &^= ICANON | ECHO
	// MIN 3, TIME 0: a read waits for three bytes.
	tio.CC[VMIN], tio.CC[VTIME] = 3, 0
	tt.SetTermios(tio, false)
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 10)
		n, _ := tt.Read(vfs.Blocking{}, buf)
		got <- string(buf[:n])
	}()
	tt.Input([]byte("ab"))
	select {
	case s := <-got:
		t.Fatalf("MIN 3 read returned %q after two bytes", s)
	case <-time.After(50 * time.Millisecond):
	}
	if tt.Readable() {
		t.Error("poll says readable with fewer than MIN bytes")
	}
	tt.Input([]byte("cd"))
	if s := <-got; s != "abcd" {
		t.Errorf("MIN 3 read %q", s)
	}
	// MIN 0, TIME 0: a read returns at once, 0 when there is nothing.
	tio.CC[VMIN] = 0
	tt.SetTermios(tio, false)
	if n, err := tt.Read(vfs.Blocking{}, make([]byte, 4)); n != 0 || err != nil {
		t.Errorf("MIN 0 TIME 0 read: %d %v", n, err)
	}
	// MIN 0, TIME 1: a read times out after about 0.1 s with 0.
	tio.CC[VTIME] = 1
	tt.SetTermios(tio, false)
	start := time.Now()
	if n, err := tt.Read(vfs.Blocking{}, make([]byte, 4)); n != 0 || err != nil {
		t.Errorf("MIN 0 TIME 1 read: %d %v", n, err)
	}
	if d := time.Since(start); d < 90*time.Millisecond || d > 2*time.Second {
		t.Errorf("TIME 1 waited %v", d)
	}
	// MIN 5, TIME 1: the inter-byte timer ends a read short of MIN.
	tio.CC[VMIN] = 5
	tt.SetTermios(tio, false)
	go func() {
		buf := make([]byte, 10)
		n, _ := tt.Read(vfs.Blocking{}, buf)
		got <- string(buf[:n])
	}()
	time.Sleep(150 * time.Millisecond) // no timer before the first byte
	tt.Input([]byte("xy"))
	select {
	case s := <-got:
		if s != "xy" {
			t.Errorf("inter-byte timeout read %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("inter-byte timer never fired")
	}
}

func TestBlockingReadAndInterrupt(t *testing.T) {
	tt, _, _ := newTest()
	done := make(chan string)
	go func() {
		buf := make([]byte, 10)
		n, _ := tt.Read(vfs.Blocking{}, buf)
		done <- string(buf[:n])
	}()
	time.Sleep(10 * time.Millisecond)
	tt.Input([]byte("x\n"))
	select {
	case got := <-done:
		if got != "x\n" {
			t.Errorf("blocked reader got %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("blocked reader never woke")
	}
	intr := make(chan struct{})
	errc := make(chan error)
	go func() {
		_, err := tt.Read(vfs.Blocking{Intr: intr}, make([]byte, 10))
		errc <- err
	}()
	close(intr)
	if err := <-errc; !errors.Is(err, linux.EINTR) {
		t.Errorf("interrupted read: %v", err)
	}
}

func TestTermiosEncoding(t *testing.T) {
	d := DefaultTermios()
	b := d.Encode()
	if got := DecodeTermios(b[:]); got != d {
		t.Errorf("round trip %+v", got)
	}
	// Linux's defaults: ISIG|ICANON|ECHO... and ^C at c_cc[VINTR].
	if b[12] != 0x3b || b[13] != 0x8a || b[17+VINTR] != 3 || b[17+VMIN] != 1 {
		t.Errorf("encoding % x", b)
	}
	w := Winsize{1, 2, 3, 4}
	wb := w.Encode()
	if DecodeWinsize(wb[:]) != w || wb[0] != 1 || wb[6] != 4 {
		t.Errorf("winsize % x", wb)
	}
}

func TestOutputProcessing(t *testing.T) {
	tt, out, _ := newTest()
	tt.Write(vfs.Blocking{}, []byte("a\nb\n"))
	if out.String() != "a\r\nb\r\n" {
		t.Errorf("output %q", out.String())
	}
}

func TestHangup(t *testing.T) {
	tt, _, rec := newTest()
	if !tt.Control(7, 9, false) || tt.Control(8, 8, false) {
		t.Fatal("Control: a second session took the terminal")
	}
	tt.Input([]byte("pending\n"))
	tt.Hangup()
	if n, err := tt.Read(vfs.Blocking{}, make([]byte, 10)); n != 0 || err != nil {
		t.Errorf("read after hangup: %d %v, want end of file", n, err)
	}
	if _, err := tt.Write(vfs.Blocking{}, []byte("x")); !errors.Is(err, linux.EIO) {
		t.Errorf("write after hangup: %v, want EIO", err)
	}
	if s := rec.get(); len(s) != 2 || s[0] != [3]int{1, 7, SIGHUP} || s[1] != [3]int{1, 7, SIGCONT} {
		t.Errorf("hangup signals %v, want SIGHUP and SIGCONT to leader 7", s)
	}
	if tt.Session() != 0 || tt.Control(7, 7, false) {
		t.Error("a hung-up terminal still controls or can control a session")
	}
}
