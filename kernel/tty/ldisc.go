package tty

// The line discipline proper: input processing (Input), reads in
// canonical and non-canonical mode (Read), and output processing
// (Write), after Linux's drivers/tty/n_tty.c.

import (
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// Input feeds bytes that arrived from the keyboard, the serial line or a
// pseudo-terminal's master, and returns how many it took: all of them
// unless MaxInput bytes are already waiting to be read (the caller may
// wait on Queue for a reader to make room, or drop the rest).
func (t *TTY) Input(b []byte) int {
	t.mu.Lock()
	if t.hungup {
		t.mu.Unlock()
		return len(b)
	}
	var sigs []int
	fg := t.fg
	var echo []byte
	taken := 0
	for _, c := range b {
		if len(t.input) >= MaxInput {
			break
		}
		taken++
		tio := &t.termios
		if tio.Iflag&ISTRIP != 0 {
			c &= 0x7f
		}
		if t.lnext {
			t.lnext = false
			echo = t.literalLocked(c, echo)
			continue
		}
		switch {
		case c == '\r' && tio.Iflag&IGNCR != 0:
			continue
		case c == '\r' && tio.Iflag&ICRNL != 0:
			c = '\n'
		case c == '\n' && tio.Iflag&INLCR != 0:
			c = '\r'
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
			if sig != 0 && c != 0 {
				sigs = append(sigs, sig)
				if tio.Lflag&NOFLSH == 0 {
					t.input, t.line, t.eofs = t.input[:0], t.line[:0], nil
				}
				if tio.Lflag&ECHO != 0 {
					echo = appendEcho(echo, c, tio.Lflag)
				}
				continue
			}
		}
		if tio.Lflag&IEXTEN != 0 && c == tio.CC[VLNEXT] && c != 0 {
			t.lnext = true
			if tio.Lflag&ECHO != 0 && tio.Lflag&ECHOCTL != 0 {
				echo = append(echo, '^', '\b')
			}
			continue
		}
		if tio.Lflag&ICANON == 0 {
			t.input = append(t.input, c)
			if tio.Lflag&ECHO != 0 {
				echo = appendEcho(echo, c, tio.Lflag)
			}
			continue
		}
		echo = t.canonicalLocked(c, echo)
	}
	t.mu.Unlock()
	if len(echo) > 0 {
		t.out.Output(t.postProcess(echo))
	}
	t.q.Notify()
	for _, s := range sigs {
		if fg > 0 {
			t.sig.SignalGroup(fg, s)
		}
	}
	return taken
}

// literalLocked takes c into the line (or the input, outside canonical
// mode) with no special meaning.
func (t *TTY) literalLocked(c byte, echo []byte) []byte {
	if t.termios.Lflag&ICANON == 0 {
		t.input = append(t.input, c)
	} else if len(t.line) < MaxInput-1 {
		t.line = append(t.line, c)
	}
	if t.termios.Lflag&ECHO != 0 {
		if t.termios.Lflag&ECHOCTL != 0 {
			echo = append(echo, '\b', '\b') // over the "^\b" VLNEXT echoed
		}
		echo = appendEcho(echo, c, t.termios.Lflag)
	}
	return echo
}

// canonicalLocked edits the line with c (ICANON).
func (t *TTY) canonicalLocked(c byte, echo []byte) []byte {
	tio := &t.termios
	lecho := tio.Lflag&ECHO != 0
	switch {
	case c == tio.CC[VERASE] && c != 0:
		if n := len(t.line); n > 0 {
			t.line = t.line[:n-1]
			if lecho {
				if tio.Lflag&ECHOE != 0 {
					echo = append(echo, '\b', ' ', '\b')
				} else {
					echo = appendEcho(echo, c, tio.Lflag)
				}
			}
		}
	case c == tio.CC[VKILL] && c != 0:
		if lecho {
			if tio.Lflag&ECHOKE != 0 {
				for range t.line {
					echo = append(echo, '\b', ' ', '\b')
				}
			} else {
				echo = appendEcho(echo, c, tio.Lflag)
				if tio.Lflag&ECHOK != 0 {
					echo = append(echo, '\n')
				}
			}
		}
		t.line = t.line[:0]
	case c == tio.CC[VWERASE] && c != 0 && tio.Lflag&IEXTEN != 0:
		n := len(t.line)
		for n > 0 && t.line[n-1] == ' ' {
			n--
		}
		for n > 0 && t.line[n-1] != ' ' {
			n--
		}
		if lecho {
			for range t.line[n:] {
				echo = append(echo, '\b', ' ', '\b')
			}
		}
		t.line = t.line[:n]
	case c == tio.CC[VEOF] && c != 0:
		t.input = append(t.input, t.line...)
		t.line = t.line[:0]
		t.eofs = append(t.eofs, len(t.input))
	case c == '\n' || (c != 0 && (c == tio.CC[VEOL] || c == tio.CC[VEOL2])):
		t.input = append(t.input, t.line...)
		t.input = append(t.input, c)
		t.line = t.line[:0]
		if lecho || (c == '\n' && tio.Lflag&ECHONL != 0) {
			echo = appendEcho(echo, c, tio.Lflag)
		}
	default:
		if len(t.line) >= MaxInput-1 {
			break // a full line takes only its end, as n_tty
		}
		t.line = append(t.line, c)
		if lecho {
			echo = appendEcho(echo, c, tio.Lflag)
		}
	}
	return echo
}

// appendEcho echoes c: control characters other than tab and newline as
// ^X under ECHOCTL.
func appendEcho(echo []byte, c byte, lflag uint32) []byte {
	if lflag&ECHOCTL != 0 && (c < 0x20 && c != '\t' && c != '\n' || c == 0x7f) {
		return append(echo, '^', c^0x40)
	}
	return append(echo, c)
}

// readyLocked returns how many bytes one canonical read may take now
// (-1: none yet).
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
		if c == '\n' || (c != 0 && (c == t.termios.CC[VEOL] || c == t.termios.CC[VEOL2])) {
			return i + 1
		}
	}
	return end
}

// takeLocked moves n bytes of input to p.
func (t *TTY) takeLocked(p []byte, n int) int {
	n = min(n, len(p))
	copy(p, t.input[:n])
	t.input = t.input[n:]
	for i := range t.eofs {
		t.eofs[i] -= n
	}
	if len(t.eofs) > 0 && t.eofs[0] <= 0 {
		t.eofs = t.eofs[1:]
	}
	if len(t.input) == 0 {
		t.input = nil // let a large burst's buffer go
	}
	return n
}

// Read reads like read(2) on a terminal. In canonical mode it returns at
// most one line (0 at ^D on an empty line). Otherwise VMIN and VTIME
// decide, as termios(3) describes: MIN bytes, or what came before the
// inter-byte timer of TIME tenths of a second ran out, or (MIN 0) what
// there is when the first byte comes or TIME runs out. A hung-up
// terminal reads end of file, but a read asleep at the hangup fails with
// EIO (as n_tty_read, which sees the other side closed). It fails with
// EAGAIN (b.NonBlock and nothing to read) or EINTR.
func (t *TTY) Read(b vfs.Blocking, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var w waiter
	defer w.done()
	var timer *time.Timer
	var timeout <-chan time.Time
	expired, slept := false, false
	last := -1
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		w.arm(t.q)
		t.mu.Lock()
		if t.hungup {
			t.mu.Unlock()
			if slept {
				return 0, linux.EIO
			}
			return 0, nil
		}
		tio := t.termios
		var n int
		if tio.Lflag&ICANON != 0 {
			if r := t.readyLocked(); r >= 0 {
				n = t.takeLocked(p, r)
				t.mu.Unlock()
				t.q.Notify()
				return n, nil
			}
		} else {
			vmin, vtime := int(tio.CC[VMIN]), time.Duration(tio.CC[VTIME])*100*time.Millisecond
			have := len(t.input)
			want := min(vmin, len(p))
			if have > 0 && (have >= want || expired || b.NonBlock) || vmin == 0 && (vtime == 0 || expired) {
				n = t.takeLocked(p, have)
				t.mu.Unlock()
				t.q.Notify()
				return n, nil
			}
			// The timer runs from the read's start with MIN 0, and from
			// each byte's arrival otherwise.
			if vtime > 0 && have != last && (vmin == 0 && last < 0 || vmin > 0 && have > 0) {
				last = have
				if timer != nil {
					timer.Stop()
				}
				timer = time.NewTimer(vtime)
				timeout = timer.C
			}
		}
		t.mu.Unlock()
		if b.NonBlock {
			return 0, linux.EAGAIN
		}
		slept = true
		vfs.NoteWait(b.Intr)
		select {
		case <-w.ch:
		case <-b.Intr:
			return 0, linux.EINTR
		case <-timeout:
			expired = true
		}
	}
}

// Readable reports whether a read would not block, as poll sees it: with
// VMIN above 0 and no VTIME, MIN bytes must be there (n_tty's
// input_available_p).
func (t *TTY) Readable() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.hungup {
		return true
	}
	if t.termios.Lflag&ICANON != 0 {
		return t.readyLocked() >= 0
	}
	want := 1
	if vmin := int(t.termios.CC[VMIN]); t.termios.CC[VTIME] == 0 && vmin > 0 {
		want = vmin
	}
	return len(t.input) >= want
}

// Writable reports whether a write would not block.
func (t *TTY) Writable() bool {
	return t.HungUp() || t.out.HasRoom()
}

// writeChunk bounds how much output one wait for room lets through.
const writeChunk = 512

// Write writes program output, processed as OPOST says (ONLCR turns \n
// into \r\n, OCRNL \r into \n). It waits for room as the Output makes
// it; an interrupted write returns what it wrote. A hung-up terminal
// fails with EIO.
func (t *TTY) Write(b vfs.Blocking, p []byte) (int, error) {
	done := 0
	for done < len(p) {
		if t.HungUp() {
			break
		}
		if err := t.out.WaitRoom(b); err != nil {
			if done > 0 {
				return done, nil
			}
			return 0, err
		}
		n := min(len(p)-done, writeChunk)
		t.out.Output(t.postProcess(p[done : done+n]))
		done += n
	}
	if done == 0 && len(p) > 0 {
		return 0, errHungUp
	}
	return done, nil
}

// postProcess applies the output flags to p.
func (t *TTY) postProcess(p []byte) []byte {
	t.mu.Lock()
	oflag := t.termios.Oflag
	t.mu.Unlock()
	if oflag&OPOST == 0 || oflag&(ONLCR|OCRNL) == 0 {
		return append([]byte(nil), p...)
	}
	b := make([]byte, 0, len(p)+len(p)/8)
	for _, c := range p {
		switch {
		case c == '\n' && oflag&ONLCR != 0:
			b = append(b, '\r', '\n')
		case c == '\r' && oflag&OCRNL != 0:
			b = append(b, '\n')
		default:
			b = append(b, c)
		}
	}
	return b
}

// waiter is a registration on a Queue for one blocking call; arm it
// before checking the condition waited for, so a change after the check
// is not missed.
type waiter struct {
	ch     chan struct{}
	cancel func()
}

func (w *waiter) arm(q *vfs.Queue) {
	if w.ch == nil {
		w.ch = make(chan struct{}, 1)
		w.cancel = q.Watch(vfs.WakeChan(w.ch))
	}
}

func (w *waiter) done() {
	if w.cancel != nil {
		w.cancel()
	}
}
