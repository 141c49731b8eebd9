package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"golang.org/x/exp/trace"
)

// span is a stretch of trace time, in the trace's nanoseconds.
type span struct{ from, to int64 }

func (s span) overlap(o span) int64 {
	return max(0, min(s.to, o.to)-max(s.from, o.from))
}

// request is one request a server thread handled: from its socket read
// to the socket write that answered it (kernel/proc/reqtrace.go).
type request struct {
	server string
	g      trace.GoID
	span
	delay int64 // GC pauses and the thread's own mark assists inside it
}

// conn is one thread's connection: its goroutine and the message of its
// request marks (thread name and descriptor).
type conn struct {
	g   trace.GoID
	msg string
}

// Analysis is what one trace says about GC delays.
type Analysis struct {
	Requests   []request
	Pauses     []span // the GC's stop-the-world pauses
	Assists    int    // mark-assist ranges
	GCs        int    // collections begun in the trace
	ClientMark int    // request marks of threads that are not servers
	Duration   int64  // first to last event
}

// analyze reads an execution trace of the kernel and finds each
// server request's GC delay: the GC's stop-the-world pauses that fell
// inside it (they stop every thread) plus the mark assists its own
// goroutine made inside it (Biscuit's measure). servers names the
// threads whose requests count (the clients mark theirs too).
func analyze(r io.Reader, servers []string) (*Analysis, error) {
	tr, err := trace.NewReader(r)
	if err != nil {
		return nil, err
	}
	a := &Analysis{}
	open := map[conn]*request{}        // a request begun, not yet answered
	stw := map[trace.GoID]int64{}      // a GC pause begun by this goroutine
	assist := map[trace.GoID]int64{}   // a mark assist begun on this goroutine
	assists := map[trace.GoID][]span{} // finished mark assists by goroutine
	var first, last int64 = -1, 0
	for {
		ev, err := tr.ReadEvent()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		now := int64(ev.Time())
		if first < 0 {
			first = now
		}
		last = now
		switch ev.Kind() {
		case trace.EventLog:
			l := ev.Log()
			g := ev.Goroutine()
			switch l.Category {
			case "request start", "request end":
			default:
				continue
			}
			// "NAME FD": a request is open per thread and descriptor.
			name, _, _ := strings.Cut(l.Message, " ")
			if !slices.Contains(servers, name) {
				a.ClientMark++
				continue
			}
			key := conn{g, l.Message}
			if l.Category == "request start" {
				open[key] = &request{server: name, g: g, span: span{now, now}}
			} else if q := open[key]; q != nil {
				q.to = now
				a.Requests = append(a.Requests, *q)
				delete(open, key)
			}
		case trace.EventRangeBegin, trace.EventRangeActive, trace.EventRangeEnd:
			rg := ev.Range()
			begin := ev.Kind() != trace.EventRangeEnd
			at := now
			if ev.Kind() == trace.EventRangeActive {
				at = first // in progress when the trace began
			}
			switch {
			case isGCPause(rg.Name):
				g := rg.Scope.Goroutine()
				if begin {
					stw[g] = at
					if strings.Contains(rg.Name, "sweep termination") {
						a.GCs++
					}
				} else if from, ok := stw[g]; ok {
					a.Pauses = append(a.Pauses, span{from, now})
					delete(stw, g)
				}
			case rg.Name == "GC mark assist":
				g := rg.Scope.Goroutine()
				if begin {
					assist[g] = at
				} else if from, ok := assist[g]; ok {
					assists[g] = append(assists[g], span{from, now})
					a.Assists++
					delete(assist, g)
				}
			}
		}
	}
	// What was still going on when the trace stopped ends there.
	for _, from := range stw {
		a.Pauses = append(a.Pauses, span{from, last})
	}
	for g, from := range assist {
		assists[g] = append(assists[g], span{from, last})
		a.Assists++
	}
	a.Duration = last - first
	for i := range a.Requests {
		q := &a.Requests[i]
		for _, p := range a.Pauses {
			q.delay += q.overlap(p)
		}
		for _, s := range assists[q.g] {
			q.delay += q.overlap(s)
		}
	}
	return a, nil
}

// isGCPause reports whether a range is one of the collector's
// stop-the-world pauses (sweep and mark termination), not another
// stop (starting the trace, reading memory statistics).
func isGCPause(name string) bool {
	return strings.HasPrefix(name, "stop-the-world (GC")
}

// Summary is one trace's figures, in microseconds.
type Summary struct {
	Requests       int     `json:"requests"`
	GCs            int     `json:"gcs"`
	Pauses         int     `json:"pauses"`
	LongestPauseUS float64 `json:"longest_pause_us"`
	WorstDelayUS   float64 `json:"worst_request_gc_delay_us"`
	Delayed        int     `json:"requests_delayed"`
	DelayP99US     float64 `json:"request_gc_delay_p99_us"`
	DelayP999US    float64 `json:"request_gc_delay_p999_us"`
	LatencyP50US   float64 `json:"request_p50_us"`
	LatencyP99US   float64 `json:"request_p99_us"`
	Assists        int     `json:"mark_assists"`
	Seconds        float64 `json:"trace_seconds"`
}

func (a *Analysis) summary() Summary {
	s := Summary{Requests: len(a.Requests), GCs: a.GCs, Pauses: len(a.Pauses), Assists: a.Assists,
		Seconds: float64(a.Duration) / 1e9}
	for _, p := range a.Pauses {
		s.LongestPauseUS = max(s.LongestPauseUS, us(p.to-p.from))
	}
	var delays, lat []int64
	for _, q := range a.Requests {
		delays = append(delays, q.delay)
		lat = append(lat, q.to-q.from)
		if q.delay > 0 {
			s.Delayed++
		}
	}
	slices.Sort(delays)
	slices.Sort(lat)
	if len(delays) > 0 {
		s.WorstDelayUS = us(delays[len(delays)-1])
		s.DelayP99US = us(quantile(delays, 0.99))
		s.DelayP999US = us(quantile(delays, 0.999))
		s.LatencyP50US = us(quantile(lat, 0.5))
		s.LatencyP99US = us(quantile(lat, 0.99))
	}
	return s
}

func us(ns int64) float64 { return float64(ns) / 1e3 }

// quantile is the nearest-rank quantile of sorted values.
func quantile(sorted []int64, q float64) int64 {
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func (s Summary) String() string {
	return fmt.Sprintf("%d requests in %.1f s, %d GCs (%d pauses, longest %.0f µs, %d mark assists); GC delay per request: worst %.0f µs, p99.9 %.0f µs, p99 %.0f µs, %d requests delayed; request p50 %.0f µs, p99 %.0f µs",
		s.Requests, s.Seconds, s.GCs, s.Pauses, s.LongestPauseUS, s.Assists, s.WorstDelayUS, s.DelayP999US, s.DelayP99US, s.Delayed, s.LatencyP50US, s.LatencyP99US)
}
