package tty

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"
)

type sigRec struct {
	mu   sync.Mutex
	sigs [][2]int
}

func (s *sigRec) send(pgrp, sig int) {
	s.mu.Lock()
	s.sigs = append(s.sigs, [2]int{pgrp, sig})
	s.mu.Unlock()
}

func newTest() (*TTY, *bytes.Buffer, *sigRec) {
	var out bytes.Buffer
	rec := &sigRec{}
	return New(&out, rec.send), &out, rec
}

func read(t *testing.T, tt *TTY, n int) string {
	t.Helper()
	buf := make([]byte, n)
	got, err := tt.Read(buf, nil, true)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(buf[:got])
}

func TestCanonicalLineEditing(t *testing.T) {
	tt, out, _ := newTest()
	tt.Input([]byte("lx\x7fs -l"))
	if _, err := tt.Read(make([]byte, 10), nil, true); !errors.Is(err, ErrWouldBlock) {
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
}

func TestEOF(t *testing.T) {
	tt, _, _ := newTest()
	tt.Input([]byte("abc\x04"))
	if got := read(t, tt, 100); got != "abc" {
		t.Errorf("^D after text returns the text: %q", got)
	}
	tt.Input([]byte("\x04"))
	if n, err := tt.Read(make([]byte, 10), nil, true); n != 0 || err != nil {
		t.Errorf("^D on an empty line: %d %v, want 0 (end of file)", n, err)
	}
	if _, err := tt.Read(make([]byte, 10), nil, true); !errors.Is(err, ErrWouldBlock) {
		t.Errorf("EOF consumed once: %v", err)
	}
}

func TestSignals(t *testing.T) {
	tt, out, rec := newTest()
	tt.SetForeground(42)
	tt.Input([]byte("sleep 100\x03"))
	if len(rec.sigs) != 1 || rec.sigs[0] != [2]int{42, SIGINT} {
		t.Fatalf("signals %v", rec.sigs)
	}
	if !bytes.HasSuffix(out.Bytes(), []byte("^C\r\n")) {
		t.Errorf("echo %q", out.String())
	}
	if _, err := tt.Read(make([]byte, 10), nil, true); !errors.Is(err, ErrWouldBlock) {
		t.Error("^C did not discard the line")
	}
	tt.Input([]byte{0x1c, 0x1a})
	if len(rec.sigs) != 3 || rec.sigs[1][1] != SIGQUIT || rec.sigs[2][1] != SIGTSTP {
		t.Errorf("signals %v", rec.sigs)
	}
	tt.SetWindowSize(50, 132)
	if r, c := tt.WindowSize(); r != 50 || c != 132 || rec.sigs[3][1] != SIGWINCH {
		t.Errorf("window %dx%d, signals %v", r, c, rec.sigs)
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
	if out.Len() != 0 || len(rec.sigs) != 0 {
		t.Errorf("raw mode echoed %q, sent %v", out.String(), rec.sigs)
	}
}

func TestBlockingReadAndInterrupt(t *testing.T) {
	tt, _, _ := newTest()
	done := make(chan string)
	go func() {
		buf := make([]byte, 10)
		n, _ := tt.Read(buf, nil, false)
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
		_, err := tt.Read(make([]byte, 10), intr, false)
		errc <- err
	}()
	close(intr)
	if err := <-errc; !errors.Is(err, ErrInterrupted) {
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
}

func TestOutputProcessing(t *testing.T) {
	tt, out, _ := newTest()
	tt.Write([]byte("a\nb\n"))
	if out.String() != "a\r\nb\r\n" {
		t.Errorf("output %q", out.String())
	}
}
