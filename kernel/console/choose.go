package console

// Which devices are the console: console= on the command line, as Linux
// reads it, or every console found.

import (
	"fmt"
	"io"
	"strings"
)

// Devices says which console devices there are, or are chosen: the first
// serial port (ttyS0) and the screen with the keyboard (tty0).
type Devices struct {
	Serial bool
	Screen bool
}

// Choose picks the consoles from the values of console= options (Linux's
// names, each optionally followed by ",options", which are ignored: the
// serial port runs at 115200 8N1). Several may be given; output goes to
// all of them and input comes from all. With none given, or none that
// exists, every console found is used; with none found, the serial port
// (the machine layer's messages go there in any case).
func Choose(args []string, found Devices) (Devices, []string) {
	var chosen Devices
	var warns []string
	for _, a := range args {
		name, _, _ := strings.Cut(a, ",")
		var want, have *bool
		switch name {
		case "ttyS0":
			want, have = &chosen.Serial, &found.Serial
		case "tty0", "tty1", "tty":
			want, have = &chosen.Screen, &found.Screen
		default:
			warns = append(warns, fmt.Sprintf("console=%s: unknown console (ttyS0 and tty0 are known)", a))
			continue
		}
		if !*have {
			warns = append(warns, fmt.Sprintf("console=%s: no such device", a))
			continue
		}
		*want = true
	}
	if !chosen.Serial && !chosen.Screen {
		chosen = found
	}
	if !chosen.Serial && !chosen.Screen {
		chosen.Serial = true
	}
	return chosen, warns
}

// NewlineWriter writes to W with each "\n" turned into "\r\n", as the
// machine layer does for the serial port: kernel messages end lines with
// a bare newline, which a terminal takes as a move down only.
type NewlineWriter struct{ W io.Writer }

func (n NewlineWriter) Write(p []byte) (int, error) {
	start := 0
	for i, c := range p {
		if c == '\n' && (i == 0 || p[i-1] != '\r') {
			n.W.Write(p[start:i])
			n.W.Write([]byte("\r\n"))
			start = i + 1
		}
	}
	if start < len(p) {
		n.W.Write(p[start:])
	}
	return len(p), nil
}
