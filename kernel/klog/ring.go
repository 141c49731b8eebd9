package klog

// The kernel log ring: what syslog(2) and dmesg read. Every message at
// RingLevel or more severe is kept, whatever the console's level (Linux
// likewise keeps every printk in its buffer and filters only what the
// console prints), up to RingSize bytes; the oldest whole lines go first
// when it is full.

import "strconv"

// RingSize is the ring's capacity in bytes (Linux's default log_buf_len
// with CONFIG_LOG_BUF_SHIFT=17).
const RingSize = 128 << 10

// RingLevel is the least severe level the ring keeps.
const RingLevel = Info

// ring holds lines in syslog form, "<N>[seconds.micros] message\n", with
// N the syslog priority (3 error, 4 warning, 6 info, 7 debug).
type ring struct {
	buf []byte // whole lines, oldest first
	// read and cleared are how much of the lines ever written the
	// destructive reader (SYSLOG_ACTION_READ) has consumed and where
	// SYSLOG_ACTION_CLEAR put the start of READ_ALL, as offsets into
	// the stream of all bytes ever written; base is the stream offset
	// of buf[0].
	base, read, cleared uint64
	wake                chan struct{} // closed and replaced when a line arrives
}

var syslogPrio = [...]byte{Error: '3', Warn: '4', Info: '6', Debug: '7'}

// record appends one line (without its newline) to the ring.
// Preconditions: l.mu is held.
func (l *Logger) record(level Level, stamp []byte, line string) {
	r := &l.ring
	p := byte('6')
	if level >= Error && level <= Debug {
		p = syslogPrio[level]
	}
	n := 3 + len(stamp) + len(line) + 1
	if n > RingSize {
		return
	}
	if over := len(r.buf) + n - RingSize; over > 0 {
		// Drop whole lines from the front, a quarter of the ring at
		// least, so that a full ring does not copy on every line.
		cut := max(over, RingSize/4)
		for cut < len(r.buf) && r.buf[cut-1] != '\n' {
			cut++
		}
		cut = min(cut, len(r.buf))
		r.buf = append(r.buf[:0], r.buf[cut:]...)
		r.base += uint64(cut)
	}
	r.buf = append(r.buf, '<', p, '>')
	r.buf = append(r.buf, stamp...)
	r.buf = append(r.buf, line...)
	r.buf = append(r.buf, '\n')
	if r.wake != nil {
		close(r.wake)
		r.wake = nil
	}
}

// ReadAll returns up to max bytes of the newest whole lines since the
// last Clear, as SYSLOG_ACTION_READ_ALL does; clear also empties the
// log for later ReadAll calls (SYSLOG_ACTION_READ_CLEAR).
func (l *Logger) ReadAll(max int, clear bool) []byte {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r := &l.ring
	b := r.buf[r.skip(r.cleared):]
	for len(b) > max {
		_, rest, ok := cutLine(b)
		if !ok {
			b = nil
			break
		}
		b = rest
	}
	out := append([]byte(nil), b...)
	if clear {
		r.cleared = r.base + uint64(len(r.buf))
	}
	return out
}

// Clear makes later ReadAll calls start after what is there now.
func (l *Logger) Clear() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.ring.cleared = l.ring.base + uint64(len(l.ring.buf))
	l.mu.Unlock()
}

// Read consumes up to max bytes of whole lines not read before, as
// SYSLOG_ACTION_READ does; it returns nil and a channel that is closed
// when a line arrives if there is nothing to read. A line longer than
// max is cut, as Linux cuts a record that does not fit.
func (l *Logger) Read(max int) ([]byte, <-chan struct{}) {
	if l == nil {
		return nil, make(chan struct{})
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r := &l.ring
	b := r.buf[r.skip(r.read):]
	if len(b) == 0 {
		if r.wake == nil {
			r.wake = make(chan struct{})
		}
		return nil, r.wake
	}
	n := 0
	for n < len(b) {
		line, _, _ := cutLine(b[n:])
		if n+len(line) > max {
			if n == 0 {
				n = max
			}
			break
		}
		n += len(line)
	}
	r.read = r.base + uint64(r.skip(r.read)+n)
	return append([]byte(nil), b[:n]...), nil
}

// Unread is how many bytes Read would still return (SIZE_UNREAD).
func (l *Logger) Unread() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ring.buf) - l.ring.skip(l.ring.read)
}

// skip is the index in buf where the stream offset off is, 0 if it
// points at lines already dropped.
func (r *ring) skip(off uint64) int {
	if off <= r.base {
		return 0
	}
	return int(min(off-r.base, uint64(len(r.buf))))
}

// cutLine splits b after its first newline (the line keeps it).
func cutLine(b []byte) (line, rest []byte, ok bool) {
	for i, c := range b {
		if c == '\n' {
			return b[:i+1], b[i+1:], true
		}
	}
	return b, nil, false
}

// stampOf formats a ring line's time stamp, "[    5.000123] ".
func stampOf(b []byte, us int64) []byte {
	sec, frac := us/1e6, us%1e6
	b = append(b, '[')
	for n := countDigits(sec); n < 5; n++ {
		b = append(b, ' ')
	}
	b = strconv.AppendInt(b, sec, 10)
	b = append(b, '.')
	for n := countDigits(frac); n < 6; n++ {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, frac, 10)
	return append(b, "] "...)
}
