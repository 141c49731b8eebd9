package prof

import (
	"bytes"
	"errors"
	"runtime/trace"
	"sync"
)

// TraceLimit bounds the bytes one execution trace keeps: a trace that
// outgrows it stops recording (Truncated says so), so tracing cannot
// take the kernel's memory.
const TraceLimit = 64 << 20

// Tracer records the Go runtime's execution trace of the kernel
// (runtime/trace: goroutine wake-ups and blocking, processors, system
// calls, GC phases, each with its time) into memory, for `go tool
// trace`. It answers where a latency goes: a wake-up that waits for a
// processor, a timer, the collector.
type Tracer struct {
	mu        sync.Mutex
	buf       limitBuffer
	running   bool
	truncated bool
}

type limitBuffer struct {
	bytes.Buffer
	full bool
}

func (b *limitBuffer) Write(p []byte) (int, error) {
	if b.full || b.Len()+len(p) > TraceLimit {
		b.full = true
		return len(p), nil // dropped; the reader learns of it from Truncated
	}
	return b.Buffer.Write(p)
}

// ErrTracing is returned when a trace is started twice or stopped when
// none runs.
var ErrTracing = errors.New("prof: trace already running, or not running")

// Start begins a new trace, dropping the last one.
func (t *Tracer) Start() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running {
		return ErrTracing
	}
	t.buf = limitBuffer{}
	if err := trace.Start(&t.buf); err != nil {
		return err
	}
	t.running = true
	return nil
}

// Stop ends the trace; Bytes then returns it.
func (t *Tracer) Stop() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.running {
		return ErrTracing
	}
	trace.Stop()
	t.running = false
	t.truncated = t.buf.full
	return nil
}

// Bytes returns the last finished trace (nil while one runs) and whether
// it outgrew TraceLimit.
func (t *Tracer) Bytes() ([]byte, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running {
		return nil, false
	}
	return bytes.Clone(t.buf.Bytes()), t.truncated
}
