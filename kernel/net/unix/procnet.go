package unix

import (
	"bytes"
	"fmt"
	"sort"
	"sync"
)

// Every open AF_UNIX socket, for /proc/net/unix.
var (
	allMu sync.Mutex
	all   = map[*sock]struct{}{} // protected by allMu
)

func track(s *sock) {
	allMu.Lock()
	all[s] = struct{}{}
	allMu.Unlock()
}

func untrack(s *sock) {
	allMu.Lock()
	delete(all, s)
	allMu.Unlock()
}

// SetIno records the inode number fstat reports for the socket's file,
// which /proc/net/unix shows (socket.NewFile calls it).
func (s *sock) SetIno(ino uint64) {
	s.mu.Lock()
	s.ino = ino
	s.mu.Unlock()
}

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
	allMu.Lock()
	socks := make([]*sock, 0, len(all))
	for s := range all {
		socks = append(socks, s)
	}
	allMu.Unlock()
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
		t := fmt.Sprintf("0000000000000000: %08X %08X %08X %04X %02X %5d", 2, 0, flags, s.typ, st, s.ino)
		if a := s.addr; a != nil {
			name := a.raw[2:]
			if a.abstract {
				name = bytes.ReplaceAll(name, []byte{0}, []byte{'@'})
			} else {
				name = name[:len(name)-1] // the terminating NUL
			}
			t += " " + string(name)
		}
		ino := s.ino
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
