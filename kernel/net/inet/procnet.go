package inet

import (
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/net/socket"
)

// Every open AF_INET and AF_INET6 socket, for /proc/net/{tcp,udp}{,6}.
var all socket.Registry[*sock]

func track(s *sock)   { all.Add(s) }
func untrack(s *sock) { all.Remove(s) }

// Linux's TCP states (include/net/tcp_states.h) as /proc/net/tcp shows
// them; netstack's public states use the same numbers, and its internal
// ones (initial, bound, connecting, error) are mapped here.
const (
	tcpEstablished = 1
	tcpSynSent     = 2
	tcpClose       = 7
)

func linuxTCPState(st tcp.EndpointState) int {
	switch {
	case st == tcp.StateConnecting:
		return tcpSynSent
	case st >= tcp.StateEstablished && st <= tcp.StateClosing:
		return int(st)
	}
	return tcpClose // initial, bound, error
}

// hexAddr prints an address as Linux's /proc/net files do: each 32-bit
// word of the network-order address in the machine's (little-endian)
// order, so 127.0.0.1 is 0100007F.
func hexAddr(a tcpip.Address, v6 bool) string {
	n := 4
	if v6 {
		n = 16
	}
	b := make([]byte, n)
	copy(b, a.AsSlice())
	if v6 && a.Len() == 4 { // a v4 peer of a v6 socket: the mapped form
		clear(b)
		b[10], b[11] = 0xff, 0xff
		copy(b[12:], a.AsSlice())
	}
	out := make([]byte, 0, 2*n)
	for i := 0; i < n; i += 4 {
		out = fmt.Appendf(out, "%08X", binary.LittleEndian.Uint32(b[i:]))
	}
	return string(out)
}

// procNet lists the sockets of one protocol and family in Linux's
// layout: tcp4_seq_show / tcp6_seq_show / udp4_format_sock /
// udp6_sock_seq_show. Columns netstack has no counterpart for (timers,
// retransmits, the kernel pointer, which Linux hides too) are zero.
func procNet(typ int, v6 bool) []byte {
	var socks []*sock
	for _, s := range all.All() {
		if s.typ == typ && (s.family == linux.AF_INET6) == v6 {
			socks = append(socks, s)
		}
	}
	type row struct {
		ino  uint64
		text string
	}
	var rows []row
	for _, s := range socks {
		ino := s.Ino()
		var id stack.TransportEndpointID
		if ti, ok := s.ep.Info().(*stack.TransportEndpointInfo); ok {
			id = ti.ID
		}
		in, out, _ := s.Queued()
		var state int
		extra := ""
		if typ == linux.SOCK_STREAM {
			state = linuxTCPState(tcp.EndpointState(s.ep.State()))
			var info tcpip.TCPInfoOption
			rto, cwnd, ssthresh := 0, 0, -1
			if s.ep.GetSockOpt(&info) == nil {
				// clock ticks (USER_HZ 100), as Linux prints icsk_rto
				rto, cwnd = int(info.RTO/(10*time.Millisecond)), int(info.SndCwnd)
				if info.SndSsthresh < 1<<31-1 {
					ssthresh = int(info.SndSsthresh)
				}
			}
			extra = fmt.Sprintf(" 1 0000000000000000 %d 0 0 %d %d", rto, cwnd, ssthresh)
		} else {
			state = tcpClose
			if transport.DatagramEndpointState(s.ep.State()) == transport.DatagramEndpointStateConnected {
				state = tcpEstablished
			}
			extra = " 2 0000000000000000 0"
		}
		if s.isListening() {
			out = 0 // Linux: tx_queue 0, rx_queue the accept backlog
		}
		text := fmt.Sprintf("%s:%04X %s:%04X %02X %08X:%08X 00:00000000 00000000 %5d %8d %d%s",
			hexAddr(id.LocalAddress, v6), id.LocalPort, hexAddr(id.RemoteAddress, v6), id.RemotePort,
			state, out, in, s.uid, 0, ino, extra)
		rows = append(rows, row{ino, text})
	}
	slices.SortFunc(rows, func(a, b row) int { return int(a.ino) - int(b.ino) })
	if typ == linux.SOCK_STREAM {
		for _, text := range orphans(v6) {
			rows = append(rows, row{0, text})
		}
	}
	var b []byte
	switch {
	case typ == linux.SOCK_STREAM && !v6:
		b = fmt.Appendf(b, "%-149s\n", "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode")
	case typ == linux.SOCK_STREAM:
		b = append(b, "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"...)
	case !v6:
		b = fmt.Appendf(b, "%-127s\n", "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops")
	default:
		b = append(b, "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n"...)
	}
	for i, r := range rows {
		var line string
		if typ == linux.SOCK_STREAM {
			line = fmt.Sprintf("%4d: %s", i, r.text)
		} else {
			line = fmt.Sprintf("%5d: %s", i, r.text)
		}
		switch {
		case typ == linux.SOCK_STREAM && !v6:
			b = fmt.Appendf(b, "%-149s\n", line)
		case !v6:
			b = fmt.Appendf(b, "%-127s\n", line)
		default:
			b = append(append(b, line...), '\n')
		}
	}
	return b
}

// orphans are the rows of the TCP endpoints netstack still holds that
// no open socket owns: connections closed by their program but not yet
// finished (FIN_WAIT, LAST_ACK, TIME_WAIT) and connections a listener
// has not yet handed to accept. Linux lists them too, with uid and
// inode 0; a TIME_WAIT one in its short form (get_timewait4_sock).
func orphans(v6 bool) []string {
	mine := map[tcpip.Endpoint]bool{}
	for _, s := range all.All() {
		mine[s.ep] = true
	}
	proto := ipv4.ProtocolNumber
	if v6 {
		proto = ipv6.ProtocolNumber
	}
	var out []string
	for _, te := range Stack().RegisteredEndpoints() {
		ep, ok := te.(*tcp.Endpoint)
		if !ok || mine[ep] {
			continue
		}
		ti, ok := ep.Info().(*stack.TransportEndpointInfo)
		if !ok || ti.NetProto != proto {
			continue
		}
		id := ti.ID
		st := tcp.EndpointState(ep.State())
		head := fmt.Sprintf("%s:%04X %s:%04X %02X %08X:%08X",
			hexAddr(id.LocalAddress, v6), id.LocalPort, hexAddr(id.RemoteAddress, v6), id.RemotePort,
			linuxTCPState(st), 0, 0)
		if st == tcp.StateTimeWait {
			out = append(out, head+" 03:00000000 00000000     0        0 0 3 0000000000000000")
		} else {
			out = append(out, head+" 00:00000000 00000000     0        0 0 1 0000000000000000 0 0 0 0 -1")
		}
	}
	slices.Sort(out)
	return out
}

func (s *sock) isListening() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listening
}

// ProcNetTCP and the others return /proc/net/tcp, tcp6, udp and udp6.
func ProcNetTCP() []byte  { return procNet(linux.SOCK_STREAM, false) }
func ProcNetTCP6() []byte { return procNet(linux.SOCK_STREAM, true) }
func ProcNetUDP() []byte  { return procNet(linux.SOCK_DGRAM, false) }
func ProcNetUDP6() []byte { return procNet(linux.SOCK_DGRAM, true) }
