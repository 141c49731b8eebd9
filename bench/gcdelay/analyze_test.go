package main

import (
	"bytes"
	"context"
	"runtime"
	"runtime/trace"
	"testing"
)

// TestAnalyze traces this process as the kernel marks requests: one
// request with a collection inside it, one on another connection begun
// after it, and a client's marks that must not count.
func TestAnalyze(t *testing.T) {
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Skipf("tracing: %v", err)
	}
	ctx := context.Background()
	done := make(chan struct{})
	go func() {
		trace.Log(ctx, "request start", "srv 5")
		runtime.GC()
		trace.Log(ctx, "request start", "srv 6") // another connection
		trace.Log(ctx, "request end", "srv 5")
		trace.Log(ctx, "request end", "srv 6")
		trace.Log(ctx, "request start", "client 3")
		trace.Log(ctx, "request end", "client 3")
		trace.Log(ctx, "request end", "srv 5") // no request open there: ignored
		close(done)
	}()
	<-done
	trace.Stop()

	a, err := analyze(&buf, []string{"srv"})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Requests) != 2 || a.ClientMark != 2 {
		t.Fatalf("%d requests, %d client marks; want 2 and 2", len(a.Requests), a.ClientMark)
	}
	withGC, without := a.Requests[0], a.Requests[1]
	if a.GCs < 1 || len(a.Pauses) < 2 {
		t.Errorf("%d GCs and %d pauses; runtime.GC makes one collection with two pauses", a.GCs, len(a.Pauses))
	}
	if withGC.delay <= 0 || withGC.delay > withGC.to-withGC.from {
		t.Errorf("the request around runtime.GC has GC delay %d ns in %d ns", withGC.delay, withGC.to-withGC.from)
	}
	if without.delay != 0 {
		t.Errorf("the request after the collection has GC delay %d ns", without.delay)
	}
	s := a.summary()
	if s.Requests != 2 || s.Delayed != 1 || s.WorstDelayUS != us(withGC.delay) || s.LongestPauseUS <= 0 {
		t.Errorf("summary %+v", s)
	}
}

func TestQuantileAndOverlap(t *testing.T) {
	v := []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if q := quantile(v, 0.5); q != 5 {
		t.Errorf("median %d, want 5", q)
	}
	if q := quantile(v, 0.99); q != 10 {
		t.Errorf("p99 %d, want 10", q)
	}
	if o := (span{10, 20}).overlap(span{15, 30}); o != 5 {
		t.Errorf("overlap %d, want 5", o)
	}
	if o := (span{10, 20}).overlap(span{20, 30}); o != 0 {
		t.Errorf("touching spans overlap %d", o)
	}
}
