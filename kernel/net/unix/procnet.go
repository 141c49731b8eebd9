package unix

import (
	"bytes"
	"fmt"
	"sort"

	"shortbread/kernel/net/socket"
)

// Every open AF_UNIX socket, for /proc/net/unix.
var all socket.Registry[*sock]

func track(s *sock)   { all.Add(s) }
func untrack(s *sock) { all.Remove(s) }

// Socket states as /proc/net/unix reports them (SS_UNCONNECTED,
// SS_CONNECTED) and the listening flag (__SO_ACCEPTCON).
const (
	ssUnconnected = 1
	ssConnected   = 3
	soAcceptCon   = 1 << 16
)

// ProcNetUnix returns /proc/net/unix: one line per socket with its
// flags, type, state, inode number and name (an abstract name starts
// with '@', NULs in it shown as '@'), as Linux's unix_seq_show prints
// them; the kernel address column is zeros, as Linux shows it to
// programs without CAP_SYSLOG's view.
func ProcNetUnix() []byte {
	socks := all.All()
	type line struct {
		ino  uint64
		text string
	}
	var lines []line
	for _, s := range socks {
		s.mu.Lock()
		flags, st := 0, ssUnconnected
		if s.state == listening {
			flags = soAcceptCon
		}
		if s.state == connected {
			st = ssConnected
		}
		t := fmt.Sprintf("0000000000000000: %08X %08X %08X %04X %02X %5d", 2, 0, flags, s.typ, st, s.Ino())
		if a := s.addr; a != nil {
			name := a.raw[2:]
			if a.abstract {
				name = bytes.ReplaceAll(name, []byte{0}, []byte{'@'})
			} else {
				name = name[:len(name)-1] // the terminating NUL
			}
			t += " " + string(name)
		}
		ino := s.Ino()
		s.mu.Unlock()
		lines = append(lines, line{ino, t})
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].ino < lines[j].ino })
	var b bytes.Buffer
	b.WriteString("Num       RefCount Protocol Flags    Type St Inode Path\n")
	for _, l := range lines {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.Bytes()
}
