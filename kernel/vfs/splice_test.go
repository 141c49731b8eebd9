package vfs

import (
	"errors"
	"testing"

	"shortbread/kernel/abi/linux"
)

// tee copies without consuming; splice between pipes moves; a move
// never takes more than the output pipe has room for; an empty pipe
// with a writer is EAGAIN without blocking, and end of file without.
func TestTeeAndSplicePipes(t *testing.T) {
	r1, w1, _ := NewPipe(0, Owner{})
	r2, w2, _ := NewPipe(0, Owner{})
	defer r1.DecRef()
	defer r2.DecRef()
	defer w2.DecRef()
	w1.Write([]byte("abcdef"), nil)
	if n, err := Tee(r1, w2, 4, false, nil); n != 4 || err != nil {
		t.Fatalf("tee: %d, %v", n, err)
	}
	buf := make([]byte, 16)
	if n, _ := r1.Read(buf, nil); string(buf[:n]) != "abcdef" {
		t.Errorf("tee consumed its input: %q left", buf[:n])
	}
	if n, _ := r2.Read(buf, nil); string(buf[:n]) != "abcd" {
		t.Errorf("tee's copy: %q", buf[:n])
	}
	if _, err := SplicePipes(r1, w2, 4, true, nil); !errors.Is(err, linux.EAGAIN) {
		t.Errorf("splice from an empty pipe, nonblocking: %v, want EAGAIN", err)
	}
	big := make([]byte, 100000)
	n, _ := w1.Write(big[:60000], nil)
	w2.Write(big[:40960], nil) // 10 of 16 pages used
	if got, err := SplicePipes(r1, w2, 100000, false, nil); err != nil || got != 6*linux.PIPE_BUF {
		t.Errorf("splice into a pipe with 6 free pages: %d, %v", got, err)
	}
	if left, _ := PipeBuffered(r1); left != n-6*linux.PIPE_BUF {
		t.Errorf("%d bytes left in the source, want %d", left, n-6*linux.PIPE_BUF)
	}
	w1.DecRef()
	for {
		if k, _ := r1.Read(big, nil); k == 0 {
			break
		}
	}
	if got, err := SplicePipes(r1, w2, 4, false, nil); got != 0 || err != nil {
		t.Errorf("splice at end of file: %d, %v", got, err)
	}
}
