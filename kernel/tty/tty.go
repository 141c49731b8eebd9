// Package tty is the terminal line discipline: it turns the bytes typed
// on the console into what programs read (canonical line editing, echo,
// ^C/^\/^Z as signals to the foreground process group, ^D as end of
// file, or raw bytes), and implements the termios and window-size state
// that ioctl(2) reads and sets. Semantics follow termios(3) and Linux's
// n_tty; the hardware below is any io.Writer for output and Input() for
// bytes that arrive.
package tty

import (
	"encoding/binary"
	"errors"
	"io"
	"sync"
)

// Termios flag bits and control-character indices (Linux asm-generic
// termbits.h).
const (
	ICRNL   = 0o000400
	IXON    = 0o002000
	OPOST   = 0o000001
	ONLCR   = 0o000004
	ISIG    = 0o000001
	ICANON  = 0o000002
	ECHO    = 0o000010
	ECHOE   = 0o000020
	ECHOK   = 0o000040
	ECHONL  = 0o000100
	ECHOCTL = 0o001000
	IEXTEN  = 0o100000

	VINTR   = 0
	VQUIT   = 1
	VERASE  = 2
	VKILL   = 3
	VEOF    = 4
	VTIME   = 5
	VMIN    = 6
	VSUSP   = 10
	VWERASE = 14
	NCCS    = 19

	// Signals the line discipline sends.
	SIGINT   = 2
	SIGQUIT  = 3
	SIGTSTP  = 20
	SIGWINCH = 28
)

// Termios is struct termios as the TCGETS/TCSETS ioctls pass it.
type Termios struct {
	Iflag, Oflag, Cflag, Lflag uint32
	Line                       uint8
	CC                         [NCCS]uint8
}

// TermiosSize is the size of the encoded struct.
const TermiosSize = 36

// Encode returns the kernel's struct termios layout.
func (t Termios) Encode() [TermiosSize]byte {
	var b [TermiosSize]byte
	le := binary.LittleEndian
	le.PutUint32(b[0:], t.Iflag)
	le.PutUint32(b[4:], t.Oflag)
	le.PutUint32(b[8:], t.Cflag)
	le.PutUint32(b[12:], t.Lflag)
	b[16] = t.Line
	copy(b[17:], t.CC[:])
	return b
}

// DecodeTermios is the inverse of Encode.
func DecodeTermios(b []byte) Termios {
	le := binary.LittleEndian
	t := Termios{Iflag: le.Uint32(b[0:]), Oflag: le.Uint32(b[4:]), Cflag: le.Uint32(b[8:]), Lflag: le.Uint32(b[12:]), Line: b[16]}
	copy(t.CC[:], b[17:17+NCCS])
	return t
}

// DefaultTermios is what Linux gives a new terminal.
func DefaultTermios() Termios {
	t := Termios{
		Iflag: ICRNL | IXON,
		Oflag: OPOST | ONLCR,
		Cflag: 0o277,                                                            // B38400 | CS8 | CREAD | HUPCL
		Lflag: ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHOCTL | IEXTEN | 0o4000, // and ECHOKE
	}
	t.CC = [NCCS]uint8{3, 0x1c, 0x7f, 0x15, 4, 0, 1, 0, 0x11, 0x13, 0x1a, 0, 0x12, 0xf, 0x17, 0x16, 0}
	return t
}

// ErrInterrupted is returned by a read a signal interrupted.
var ErrInterrupted = errors.New("interrupted")

// ErrWouldBlock is returned by a non-blocking read with nothing to read.
var ErrWouldBlock = errors.New("would block")

// TTY is one terminal.
type TTY struct {
	mu      sync.Mutex
	out     io.Writer
	termios Termios
	rows    uint16
	cols    uint16
	line    []byte // the line being edited (canonical mode)
	input   []byte // bytes ready for readers
	eofs    []int  // offsets in input where a ^D ends a read
	fg      int    // foreground process group
	signal  func(pgrp, sig int)
	changed chan struct{} // closed and replaced when input arrives
}

// New makes a terminal writing to out; signal delivers ^C and friends to
// a process group.
func New(out io.Writer, signal func(pgrp, sig int)) *TTY {
	return &TTY{out: out, termios: DefaultTermios(), rows: 24, cols: 80, signal: signal, changed: make(chan struct{})}
}

func (t *TTY) notifyLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// Input feeds bytes that arrived from the keyboard or serial line.
func (t *TTY) Input(b []byte) {
	t.mu.Lock()
	var sigs []int
	fg := t.fg
	var echo []byte
	for _, c := range b {
		tio := &t.termios
		if tio.Iflag&ICRNL != 0 && c == '\r' {
			c = '\n'
		}
		if tio.Lflag&ISIG != 0 {
			sig := 0
			switch c {
			case tio.CC[VINTR]:
				sig = SIGINT
			case tio.CC[VQUIT]:
				sig = SIGQUIT
			case tio.CC[VSUSP]:
				sig = SIGTSTP
			}
			if sig != 0 {
				sigs = append(sigs, sig)
				t.line = t.line[:0]
				if tio.Lflag&ECHO != 0 {
					echo = append(echo, ctl(c)...)
					echo = append(echo, '\n')
				}
				continue
			}
		}
		if tio.Lflag&ICANON == 0 {
			t.input = append(t.input, c)
			if tio.Lflag&ECHO != 0 {
				echo = append(echo, c)
			}
			continue
		}
		switch {
		case c == tio.CC[VERASE] || c == 0x08:
			if n := len(t.line); n > 0 {
				t.line = t.line[:n-1]
				if tio.Lflag&ECHO != 0 {
					echo = append(echo, '\b', ' ', '\b')
				}
			}
		case c == tio.CC[VKILL]:
			if tio.Lflag&ECHO != 0 {
				for range t.line {
					echo = append(echo, '\b', ' ', '\b')
				}
			}
			t.line = t.line[:0]
		case c == tio.CC[VWERASE]:
			n := len(t.line)
			for n > 0 && t.line[n-1] == ' ' {
				n--
			}
			for n > 0 && t.line[n-1] != ' ' {
				n--
			}
			if tio.Lflag&ECHO != 0 {
				for range t.line[n:] {
					echo = append(echo, '\b', ' ', '\b')
				}
			}
			t.line = t.line[:n]
		case c == tio.CC[VEOF]:
			t.input = append(t.input, t.line...)
			t.line = t.line[:0]
			t.eofs = append(t.eofs, len(t.input))
		case c == '\n':
			t.input = append(t.input, t.line...)
			t.input = append(t.input, '\n')
			t.line = t.line[:0]
			if tio.Lflag&(ECHO|ECHONL) != 0 {
				echo = append(echo, '\n')
			}
		default:
			t.line = append(t.line, c)
			if tio.Lflag&ECHO != 0 {
				if c < 0x20 && tio.Lflag&ECHOCTL != 0 {
					echo = append(echo, ctl(c)...)
				} else {
					echo = append(echo, c)
				}
			}
		}
	}
	t.notifyLocked()
	t.mu.Unlock()
	if len(echo) > 0 {
		t.Write(echo)
	}
	for _, s := range sigs {
		if fg > 0 && t.signal != nil {
			t.signal(fg, s)
		}
	}
}

func ctl(c byte) []byte { return []byte{'^', c ^ 0x40} }

// readyLocked returns how many bytes one read may take now (-1: none).
func (t *TTY) readyLocked() int {
	if t.termios.Lflag&ICANON == 0 {
		if len(t.input) == 0 {
			return -1
		}
		return len(t.input)
	}
	end := -1
	if len(t.eofs) > 0 {
		end = t.eofs[0]
	}
	for i, c := range t.input {
		if end >= 0 && i >= end {
			break
		}
		if c == '\n' {
			return i + 1
		}
	}
	return end
}

// Read reads like read(2) on a terminal: in canonical mode at most one
// line (0 at ^D on an empty line), else whatever arrived. It blocks until
// there is something, intr is closed or signalled (ErrInterrupted), or,
// with nonblock, returns ErrWouldBlock.
func (t *TTY) Read(p []byte, intr <-chan struct{}, nonblock bool) (int, error) {
	for {
		t.mu.Lock()
		n := t.readyLocked()
		if n >= 0 {
			n = min(n, len(p))
			copy(p, t.input[:n])
			t.input = t.input[n:]
			for i := range t.eofs {
				t.eofs[i] -= n
			}
			if len(t.eofs) > 0 && t.eofs[0] <= 0 {
				t.eofs = t.eofs[1:]
			}
			t.mu.Unlock()
			return n, nil
		}
		ch := t.changed
		t.mu.Unlock()
		if nonblock {
			return 0, ErrWouldBlock
		}
		select {
		case <-ch:
		case <-intr:
			return 0, ErrInterrupted
		}
	}
}

// Readable reports whether a read would not block, and returns a channel
// closed at the next input.
func (t *TTY) Readable() (bool, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.readyLocked() >= 0, t.changed
}

// Write writes program output, turning \n into \r\n (OPOST|ONLCR).
func (t *TTY) Write(p []byte) (int, error) {
	t.mu.Lock()
	post := t.termios.Oflag&(OPOST|ONLCR) == OPOST|ONLCR
	t.mu.Unlock()
	if !post {
		return t.out.Write(p)
	}
	var b []byte
	for _, c := range p {
		if c == '\n' {
			b = append(b, '\r')
		}
		b = append(b, c)
	}
	if _, err := t.out.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Termios returns the current settings.
func (t *TTY) Termios() Termios {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.termios
}

// SetTermios changes the settings; flush discards pending input
// (TCSETSF).
func (t *TTY) SetTermios(n Termios, flush bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	wasCanon := t.termios.Lflag&ICANON != 0
	t.termios = n
	if flush {
		t.input, t.line, t.eofs = nil, nil, nil
	}
	if wasCanon && n.Lflag&ICANON == 0 {
		// Leaving canonical mode makes the edited line readable.
		t.input = append(t.input, t.line...)
		t.line = t.line[:0]
		t.eofs = nil
	}
	t.notifyLocked()
}

// WindowSize returns rows and columns.
func (t *TTY) WindowSize() (rows, cols uint16) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rows, t.cols
}

// SetWindowSize changes the size and tells the foreground group.
func (t *TTY) SetWindowSize(rows, cols uint16) {
	t.mu.Lock()
	changed := rows != t.rows || cols != t.cols
	t.rows, t.cols = rows, cols
	fg := t.fg
	t.mu.Unlock()
	if changed && fg > 0 && t.signal != nil {
		t.signal(fg, SIGWINCH)
	}
}

// Foreground returns the foreground process group.
func (t *TTY) Foreground() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.fg
}

// SetForeground sets the foreground process group.
func (t *TTY) SetForeground(pgrp int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fg = pgrp
}

// Buffered returns how many bytes are ready to read (FIONREAD).
func (t *TTY) Buffered() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := t.readyLocked(); n > 0 {
		return len(t.input)
	}
	return 0
}
