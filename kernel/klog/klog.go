// Package klog is Shortbread's levelled kernel logger.
//
// Its line format follows the Linux printk convention (a
// "[seconds.micros]" stamp measured from boot) so that serial console
// captures from Shortbread and Linux guests can be read with the same
// tools. The level numbering (0 error .. 3 debug) matches the
// loglevel= kernel command line option handled by package cmdline,
// which is why ParseLevel accepts both names and digits.
//
// The kernel cannot assume a wall clock exists this early, so the time
// source is injectable (SetClock). A nil *Logger is valid and discards
// everything, which lets code log unconditionally before the console
// is configured.
package klog

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Level is a message severity. Lower values are more severe, so a
// logger set to level L emits every message whose level is <= L.
type Level int

// The levels, in the order used by the loglevel= command line option.
const (
	Error Level = iota
	Warn
	Info
	Debug
)

var levelNames = [...]string{Error: "error", Warn: "warn", Info: "info", Debug: "debug"}

// String returns the lower-case name used by ParseLevel and the
// command line, or "level(N)" for out-of-range values.
func (l Level) String() string {
	if l >= Error && l <= Debug {
		return levelNames[l]
	}
	return "level(" + strconv.Itoa(int(l)) + ")"
}

// ParseLevel accepts a level name (case-insensitive; "warning" is an
// alias for "warn" because both spellings are common in boot scripts)
// or a single digit 0-3.
func ParseLevel(s string) (Level, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "warning" {
		return Warn, nil
	}
	for i, n := range levelNames {
		if t == n || t == strconv.Itoa(i) {
			return Level(i), nil
		}
	}
	return 0, fmt.Errorf("klog: unknown log level %q (want error, warn, info, debug or 0-3)", s)
}

// maxOnceKeys bounds the memory used by the once-only table. Keys can
// be derived from user-controlled values (e.g. syscall numbers), so an
// unbounded set would let a process grow kernel memory at will.
const maxOnceKeys = 1024

// Logger writes levelled, timestamped lines to an io.Writer. All
// methods are safe for concurrent use; each message is written with a
// single Write call so lines from different goroutines never interleave.
type Logger struct {
	mu       sync.Mutex
	w        io.Writer
	level    Level
	clock    func() time.Duration
	once     map[string]struct{}
	onceFull bool
	buf      []byte // reused under mu so steady-state logging does not allocate a line buffer
	ring     ring   // what syslog(2) reads (ring.go)
	stamp    []byte // reused under mu for the ring's time stamps
}

// New returns a logger writing to w that emits messages at level or
// more severe. Until SetClock is called, timestamps measure the time
// since New was called.
func New(w io.Writer, level Level) *Logger {
	start := time.Now()
	return &Logger{
		w:     w,
		level: level,
		clock: func() time.Duration { return time.Since(start) },
	}
}

// SetClock replaces the time source used for line stamps. The kernel
// points this at its boot-relative monotonic counter once timers are
// calibrated; tests use it to get deterministic output. A nil clock
// stamps every line with zero.
func (l *Logger) SetClock(clock func() time.Duration) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.clock = clock
	l.mu.Unlock()
}

// SetLevel changes the most verbose level that is emitted.
func (l *Logger) SetLevel(level Level) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.level = level
	l.mu.Unlock()
}

// Level reports the current threshold. A nil logger reports Error,
// the least verbose setting, though it emits nothing at all.
func (l *Logger) Level() Level {
	if l == nil {
		return Error
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.level
}

// Enabled reports whether a message at level would be written, so
// callers can skip expensive argument construction.
func (l *Logger) Enabled(level Level) bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return level <= l.level
}

// Logf writes a message at the given level.
func (l *Logger) Logf(level Level, format string, args ...any) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if level > l.level && level > RingLevel {
		return
	}
	l.write(level, format, args)
}

// Errorf logs at Error level.
func (l *Logger) Errorf(format string, args ...any) { l.Logf(Error, format, args...) }

// Warnf logs at Warn level.
func (l *Logger) Warnf(format string, args ...any) { l.Logf(Warn, format, args...) }

// Infof logs at Info level.
func (l *Logger) Infof(format string, args ...any) { l.Logf(Info, format, args...) }

// Debugf logs at Debug level.
func (l *Logger) Debugf(format string, args ...any) { l.Logf(Debug, format, args...) }

// LogOnce logs a message at level the first time it is called with a
// given key and reports whether it wrote anything. A key is only
// consumed when the message is actually emitted, so raising the level
// later still lets the first occurrence through. Once maxOnceKeys keys
// have been seen, messages with new keys are dropped (after a single
// notice) rather than growing the table.
func (l *Logger) LogOnce(level Level, key, format string, args ...any) bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if level > l.level {
		return false
	}
	if _, seen := l.once[key]; seen {
		return false
	}
	if len(l.once) >= maxOnceKeys {
		if !l.onceFull {
			l.onceFull = true
			l.write(Warn, "klog: once-only table full (%d keys); suppressing further once-only messages", []any{maxOnceKeys})
		}
		return false
	}
	if l.once == nil {
		l.once = make(map[string]struct{})
	}
	l.once[key] = struct{}{}
	l.write(level, format, args)
	return true
}

// WarnOnce logs at Warn level only the first time key is seen; it is
// meant for conditions that user programs can trigger repeatedly, such
// as an unknown system call number, where one line is informative and
// a thousand would flood the console.
func (l *Logger) WarnOnce(key, format string, args ...any) {
	l.LogOnce(Warn, key, format, args...)
}

var levelTags = [...]string{Error: "error: ", Warn: "warn: ", Info: "info: ", Debug: "debug: "}

// write formats and emits one message: into the ring if its level is
// kept there, on the console if its level is shown there. Each line of a multi-line
// message gets its own prefix so that every console line can be
// attributed and grepped by level. l.mu must be held.
func (l *Logger) write(level Level, format string, args []any) {
	var d time.Duration
	if l.clock != nil {
		d = l.clock()
	}
	msg := fmt.Sprintf(format, args...)
	msg = strings.TrimSuffix(msg, "\n")
	if level <= RingLevel {
		l.stamp = stampOf(l.stamp[:0], int64(max(d, 0)/time.Microsecond))
		for m := msg; ; {
			line, rest, more := strings.Cut(m, "\n")
			l.record(level, l.stamp, line)
			if !more {
				break
			}
			m = rest
		}
	}
	if level > l.level {
		return // kept in the ring only
	}

	b := l.buf[:0]
	for {
		line, rest, more := strings.Cut(msg, "\n")
		b = appendPrefix(b, d, level)
		b = append(b, line...)
		b = append(b, '\n')
		if !more {
			break
		}
		msg = rest
	}
	l.buf = b
	// A failed console write cannot itself be reported anywhere useful,
	// so the error is deliberately dropped.
	_, _ = l.w.Write(b)
}

func appendPrefix(b []byte, d time.Duration, level Level) []byte {
	if d < 0 {
		d = 0
	}
	us := int64(d / time.Microsecond)
	sec, frac := us/1e6, us%1e6
	b = append(b, '[')
	// Pad to 5 columns like printk so stamps line up until ~27 hours of uptime.
	for n := countDigits(sec); n < 5; n++ {
		b = append(b, ' ')
	}
	b = strconv.AppendInt(b, sec, 10)
	b = append(b, '.')
	for n := countDigits(frac); n < 6; n++ {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, frac, 10)
	b = append(b, "] "...)
	if level >= Error && level <= Debug {
		return append(b, levelTags[level]...)
	}
	return append(b, level.String()+": "...)
}

func countDigits(n int64) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}
