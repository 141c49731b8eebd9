// Package tty is the terminal layer: the line discipline that turns the
// bytes arriving on a terminal into what programs read (canonical line
// editing, echo, ^C/^\/^Z as signals to the foreground process group, ^D
// as end of file, or raw bytes with VMIN/VTIME), the output processing
// of what they write (ONLCR), the termios and window-size state the
// ioctls read and set, the session and foreground process group of a
// controlling terminal, and hangup. Semantics follow termios(3) and
// Linux's n_tty and tty_io.
//
// One TTY serves both kinds of terminal the kernel has: the serial
// console (tty.go, ldisc.go; its Output writes to the UART) and the slave
// side of a pseudo-terminal (pty.go; its Output queues bytes for the
// master). The open-file side, shared by both, is in file.go.
//
// Locking: TTY.mu and Pty.mu are never held together, and Output,
// Signaller and Queue.Notify are called with neither held.
package tty

import (
	"io"
	"sync"
	"sync/atomic"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// Output is where a terminal's processed output goes: the UART of the
// console, or a pseudo-terminal's master.
type Output interface {
	// Output delivers bytes. It does not wait for room (echo must not
	// block the input path); writers call WaitRoom first.
	Output(p []byte)
	// WaitRoom waits until more output may be delivered: EAGAIN at once
	// when b.NonBlock, EINTR when interrupted, EIO when no one will ever
	// read it.
	WaitRoom(b vfs.Blocking) error
	// HasRoom reports whether a write would not wait (POLLOUT).
	HasRoom() bool
}

// WriterOutput is the Output of a device that takes every byte, like a
// UART whose writes wait for the line.
type WriterOutput struct{ W io.Writer }

// Output writes p.
func (o WriterOutput) Output(p []byte) { o.W.Write(p) }

// WaitRoom returns at once: there is always room.
func (WriterOutput) WaitRoom(vfs.Blocking) error { return nil }

// HasRoom reports true.
func (WriterOutput) HasRoom() bool { return true }

// Signaller delivers the signals a terminal raises; the process layer
// implements it.
type Signaller interface {
	// SignalGroup sends sig to every process in process group pgrp.
	SignalGroup(pgrp, sig int)
	// SignalProcess sends sig to process pid.
	SignalProcess(pid, sig int)
}

// MaxInput bounds the bytes waiting to be read (Linux's N_TTY_BUF_SIZE):
// input past it waits (a pseudo-terminal's master write blocks) or, in a
// canonical line being edited, is dropped.
const MaxInput = 4096

// TTY is one terminal.
type TTY struct {
	out Output
	sig Signaller
	q   *vfs.Queue // notified at every change of what a reader or writer waits for

	mu      sync.Mutex
	termios Termios       // protected by mu
	win     Winsize       // protected by mu
	line    []byte        // the line being edited (canonical mode); protected by mu
	input   []byte        // bytes ready for readers; protected by mu
	eofs    []int         // offsets in input where a ^D ends a read; protected by mu
	lnext   bool          // the next byte is taken literally (VLNEXT); protected by mu
	session int           // session this is the controlling terminal of (0: none); protected by mu
	fg      int           // foreground process group (0: none); protected by mu
	hungup  bool          // hung up: reads end, writes fail; protected by mu
	pty     *Pty          // the pair of a pseudo-terminal's slave; nil for the console
	dev     atomic.Uint64 // device number (linux.MakeDev), for /proc/<pid>/stat
}

// New makes a terminal whose output goes to out and whose signals sig
// delivers. q is notified when readiness changes; nil means a queue of
// its own.
func New(out Output, sig Signaller, q *vfs.Queue) *TTY {
	if q == nil {
		q = &vfs.Queue{}
	}
	return &TTY{out: out, sig: sig, q: q, termios: DefaultTermios()}
}

// Device returns the terminal's device number (linux.MakeDev; 0 if
// none was set).
func (t *TTY) Device() uint64 { return t.dev.Load() }

// SetDevice sets the device number Device reports.
func (t *TTY) SetDevice(dev uint64) { t.dev.Store(dev) }

// Open opens the terminal again, as /dev/tty does for a process's
// controlling terminal: a slave's open counts as one (EIO once its
// master has closed).
func (t *TTY) Open() (*File, error) {
	if t.pty != nil {
		return t.pty.openSlave(false)
	}
	return NewFile(t), nil
}

// Queue returns the queue notified when the terminal's readiness may
// have changed.
func (t *TTY) Queue() *vfs.Queue { return t.q }

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
	wasCanon := t.termios.Lflag&ICANON != 0
	oldFlow, newFlow := t.termios.flowControl(), n.flowControl()
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
	t.mu.Unlock()
	t.q.Notify()
	if t.pty != nil && oldFlow != newFlow {
		// A packet-mode master learns whether ^S/^Q stop output now
		// (pty_set_termios).
		if newFlow {
			t.pty.packetEvent(PktDoStop, PktNoStop)
		} else {
			t.pty.packetEvent(PktNoStop, PktDoStop)
		}
	}
}

// WindowSize returns the window size.
func (t *TTY) WindowSize() Winsize {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.win
}

// SetWindowSize changes the size and, if it changed, sends SIGWINCH to
// the foreground group.
func (t *TTY) SetWindowSize(w Winsize) {
	t.mu.Lock()
	changed := w != t.win
	t.win = w
	fg := t.fg
	t.mu.Unlock()
	if changed && fg > 0 {
		t.sig.SignalGroup(fg, SIGWINCH)
	}
}

// Foreground returns the foreground process group (0: none).
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

// Session returns the session this is the controlling terminal of (0:
// none).
func (t *TTY) Session() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.session
}

// Control makes the terminal the controlling terminal of session sid with
// pgrp in the foreground, if it is no session's yet or steal is set. It
// reports whether it did.
func (t *TTY) Control(sid, pgrp int, steal bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.hungup || (t.session != 0 && t.session != sid && !steal) {
		return false
	}
	t.session, t.fg = sid, pgrp
	return true
}

// Disassociate makes the terminal no session's controlling terminal, as
// when its session leader exits or gives it up (TIOCNOTTY). With
// signal, the foreground group gets SIGHUP and SIGCONT first.
func (t *TTY) Disassociate(sid int, signal bool) {
	t.mu.Lock()
	if t.session != sid {
		t.mu.Unlock()
		return
	}
	fg := t.fg
	t.session, t.fg = 0, 0
	t.mu.Unlock()
	if signal && fg > 0 {
		t.sig.SignalGroup(fg, SIGHUP)
		t.sig.SignalGroup(fg, SIGCONT)
	}
}

// Hangup hangs the terminal up, as when a pseudo-terminal's master
// closes: reads return end of file (EIO for those asleep in one) and
// writes fail with EIO from now on,
// the session loses its controlling terminal and its leader gets SIGHUP
// and SIGCONT (Linux's __tty_hangup).
func (t *TTY) Hangup() {
	t.mu.Lock()
	if t.hungup {
		t.mu.Unlock()
		return
	}
	t.hungup = true
	sid := t.session
	t.session, t.fg = 0, 0
	t.input, t.line, t.eofs = nil, nil, nil
	t.mu.Unlock()
	t.q.Notify()
	if sid > 0 {
		t.sig.SignalProcess(sid, SIGHUP)
		t.sig.SignalProcess(sid, SIGCONT)
	}
}

// HungUp reports whether the terminal was hung up.
func (t *TTY) HungUp() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.hungup
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

// Flush is TCFLSH: it discards pending input (in) and output not yet
// delivered (out: a pseudo-terminal's output the master has not read);
// a pseudo-terminal's master in packet mode hears of both.
func (t *TTY) Flush(in, out bool) {
	if in {
		t.mu.Lock()
		t.input, t.line, t.eofs = nil, nil, nil
		t.mu.Unlock()
		t.q.Notify()
	}
	if t.pty == nil {
		return
	}
	var ev uint8
	if in {
		ev |= PktFlushRead
	}
	if out {
		t.pty.discardOutput()
		ev |= PktFlushWrite
	}
	t.pty.packetEvent(ev, 0)
}

// errHungUp is what a write to a hung-up terminal fails with.
var errHungUp = linux.EIO
