package vfs

import "testing"

// A pipe declares ExactReader, so read(2) hands it a lent buffer without
// clearing it: a read must write the bytes it reports, from the buffer's
// start, and nothing past them, also when it spans two writes' pages.
func TestPipeReadWritesWhatItReports(t *testing.T) {
	var _ ExactReader = (*pipeEnd)(nil)
	r, w, err := NewPipe(0, Owner{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.DecRef()
	defer w.DecRef()
	nb := Blocking{NonBlock: true}
	for _, data := range []string{"abc", "defghij"} {
		if n, err := w.file.Write(nb, []byte(data), 0); n != len(data) || err != nil {
			t.Fatalf("write %q: %d %v", data, n, err)
		}
	}
	buf := make([]byte, 64)
	for i := range buf {
		buf[i] = 0xee
	}
	n, err := r.file.Read(nb, buf, 0)
	if err != nil || string(buf[:n]) != "abcdefghij" {
		t.Fatalf("read: %d %q %v", n, buf[:n], err)
	}
	for i, b := range buf[n:] {
		if b != 0xee {
			t.Fatalf("byte %d past the %d read written: %#x", n+i, n, b)
		}
	}
	if !r.ReadsExactly() {
		t.Error("the pipe's open file does not report ReadsExactly")
	}
}
