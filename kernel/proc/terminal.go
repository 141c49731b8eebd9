package proc

// The console terminal as the standard input and output of processes,
// until file descriptors come from the VFS: reads honour signals, and the
// terminal ioctls work on fds 0-2.

import (
	"encoding/binary"
	"errors"

	"shortbread/kernel/tty"
)

// Terminal is what a process's standard input can be for terminal
// semantics (package tty implements it).
type Terminal interface {
	Read(p []byte, intr <-chan struct{}, nonblock bool) (int, error)
	Write(p []byte) (int, error)
	Termios() tty.Termios
	SetTermios(t tty.Termios, flush bool)
	WindowSize() (rows, cols uint16)
	SetWindowSize(rows, cols uint16)
	Foreground() int
	SetForeground(pgrp int)
	Buffered() int
}

// SignalGroup sends sig to every process in process group pgrp (the
// terminal's ^C).
func SignalGroup(pgrp, sig int) {
	tableMu.Lock()
	var targets []*Process
	for _, p := range table {
		if p.pgid == pgrp {
			targets = append(targets, p)
		}
	}
	tableMu.Unlock()
	for _, p := range targets {
		p.signal(sig)
	}
}

// readTerminal reads from a terminal stdin, interruptibly.
func (t *Thread) readTerminal(term Terminal, buf []byte) int64 {
	for {
		t.sleepBegin()
		n, err := term.Read(buf, t.sigWake, false)
		t.sleepEnd()
		switch {
		case err == nil:
			return int64(n)
		case errors.Is(err, tty.ErrInterrupted):
			if t.interrupted() {
				return t.restartOrEINTR()
			}
		default:
			return -eINVAL
		}
	}
}

// Terminal ioctls (include/uapi/asm-generic/ioctls.h).
const (
	tcgets     = 0x5401
	tcsets     = 0x5402
	tcsetsw    = 0x5403
	tcsetsf    = 0x5404
	tiocgpgrp  = 0x540F
	tiocspgrp  = 0x5410
	tiocgwinsz = 0x5413
	tiocswinsz = 0x5414
	fionread   = 0x541B
	tiocsctty  = 0x540E
	tiocnotty  = 0x5422
)

func (t *Thread) terminalIoctl(term Terminal, cmd uint64, arg uintptr) int64 {
	s := t.Proc.Space()
	switch cmd {
	case tcgets:
		b := term.Termios().Encode()
		return errno(s.CopyOut(arg, b[:]))
	case tcsets, tcsetsw, tcsetsf:
		var b [tty.TermiosSize]byte
		if err := s.CopyIn(arg, b[:]); err != nil {
			return errno(err)
		}
		term.SetTermios(tty.DecodeTermios(b[:]), cmd == tcsetsf)
		return 0
	case tiocgwinsz:
		var b [8]byte
		r, c := term.WindowSize()
		binary.LittleEndian.PutUint16(b[0:], r)
		binary.LittleEndian.PutUint16(b[2:], c)
		return errno(s.CopyOut(arg, b[:]))
	case tiocswinsz:
		var b [8]byte
		if err := s.CopyIn(arg, b[:]); err != nil {
			return errno(err)
		}
		term.SetWindowSize(binary.LittleEndian.Uint16(b[0:]), binary.LittleEndian.Uint16(b[2:]))
		return 0
	case tiocgpgrp:
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(term.Foreground()))
		return errno(s.CopyOut(arg, b[:]))
	case tiocspgrp:
		var b [4]byte
		if err := s.CopyIn(arg, b[:]); err != nil {
			return errno(err)
		}
		pg := int(int32(binary.LittleEndian.Uint32(b[:])))
		if pg <= 0 {
			return -eINVAL
		}
		term.SetForeground(pg)
		return 0
	case fionread:
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(term.Buffered()))
		return errno(s.CopyOut(arg, b[:]))
	case tiocsctty, tiocnotty:
		return 0
	}
	return -eINVAL
}
