package prof

import (
	"bytes"
	"testing"
	"time"
)

func TestTracer(t *testing.T) {
	var tr Tracer
	if err := tr.Stop(); err == nil {
		t.Fatal("stop without a trace succeeded")
	}
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(); err == nil {
		t.Fatal("a second start succeeded")
	}
	done := make(chan bool)
	go func() { time.Sleep(time.Millisecond); done <- true }()
	<-done
	if b, _ := tr.Bytes(); b != nil {
		t.Error("a running trace was read")
	}
	if err := tr.Stop(); err != nil {
		t.Fatal(err)
	}
	b, truncated := tr.Bytes()
	// Every execution trace begins with its format's header.
	if !bytes.HasPrefix(b, []byte("go 1.")) || truncated {
		t.Errorf("trace: %d bytes starting %q, truncated %v", len(b), b[:min(len(b), 16)], truncated)
	}
}
