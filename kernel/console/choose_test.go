package console

import (
	"bytes"
	"testing"
)

func TestChoose(t *testing.T) {
	both := Devices{Serial: true, Screen: true}
	tests := []struct {
		args  []string
		found Devices
		want  Devices
		warns int
	}{
		{nil, both, both, 0},
		{nil, Devices{Screen: true}, Devices{Screen: true}, 0},
		{[]string{"ttyS0,115200n8"}, both, Devices{Serial: true}, 0},
		{[]string{"tty0"}, both, Devices{Screen: true}, 0},
		{[]string{"tty0", "ttyS0"}, both, both, 0},
		// A console that is not there, or not known, is skipped with a
		// warning; with nothing left, every console found is used.
		{[]string{"ttyS0"}, Devices{Screen: true}, Devices{Screen: true}, 1},
		{[]string{"ttyUSB0", "tty0"}, both, Devices{Screen: true}, 1},
		{[]string{"lp0"}, both, both, 1},
		// Nothing found: the serial port all the same.
		{nil, Devices{}, Devices{Serial: true}, 0},
	}
	for _, tt := range tests {
		got, warns := Choose(tt.args, tt.found)
		if got != tt.want || len(warns) != tt.warns {
			t.Errorf("Choose(%q, %+v) = %+v, %q; want %+v with %d warnings", tt.args, tt.found, got, warns, tt.want, tt.warns)
		}
	}
}

func TestNewlineWriter(t *testing.T) {
	var b bytes.Buffer
	w := NewlineWriter{W: &b}
	w.Write([]byte("a\nb\r\n\n"))
	w.Write([]byte("\nc"))
	if got := b.String(); got != "a\r\nb\r\n\r\n\r\nc" {
		t.Errorf("got %q", got)
	}
}
