package inet

import (
	"encoding/binary"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// syncOptions hands the SOL_SOCKET options the socket layer keeps
// (package socket stores the boolean ones and SO_LINGER itself) to the
// endpoint before the calls they affect: bind (SO_REUSEADDR,
// SO_REUSEPORT), listen and connect (SO_KEEPALIVE), close (SO_LINGER).
func (s *sock) syncOptions() {
	s.SetBuffers()
	so := s.ep.SocketOptions()
	so.SetReuseAddress(s.opts.Flag(linux.SO_REUSEADDR))
	so.SetReusePort(s.opts.Flag(linux.SO_REUSEPORT))
	so.SetKeepAlive(s.opts.Flag(linux.SO_KEEPALIVE))
	if l, ok := s.opts.Linger(); ok {
		so.SetLinger(tcpip.LingerOption{Enabled: l.OnOff != 0, Timeout: time.Duration(l.Secs) * time.Second})
	}
}

// TCP's default buffer sizes as Linux reports them before a program
// sets any (the middle values of net.ipv4.tcp_wmem and tcp_rmem); the
// buffers themselves are netstack's, auto-tuned until set.
const (
	tcpDefaultSndBuf = 16384
	tcpDefaultRcvBuf = 131072
)

// SetBuffers gives netstack the SO_SNDBUF and SO_RCVBUF a program set,
// which also ends receive-buffer auto-tuning, as setting SO_RCVBUF does
// on Linux; unset sizes are left to netstack.
func (s *sock) SetBuffers() {
	snd, rcv, sndSet, rcvSet := s.opts.Buffers()
	so := s.ep.SocketOptions()
	if sndSet {
		so.SetSendBufferSize(int64(snd), true)
	}
	if rcvSet {
		so.SetReceiveBufferSize(int64(rcv), true)
	}
}

func putInt(v int) []byte {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(int32(v)))
	return b[:]
}

func getInt(val []byte) (int, error) {
	if len(val) < 4 {
		return 0, linux.EINVAL
	}
	return int(int32(binary.LittleEndian.Uint32(val))), nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// GetOption answers the options of this family's levels and SO_ERROR
// and SO_ACCEPTCONN, the SOL_SOCKET options only the endpoint knows.
func (s *sock) GetOption(c *vfs.Ctx, level, name int) ([]byte, error) {
	so := s.ep.SocketOptions()
	switch {
	case level == linux.SOL_SOCKET && name == linux.SO_ERROR:
		return putInt(errnoInt(so.GetLastError())), nil
	case level == linux.SOL_SOCKET && name == linux.SO_ACCEPTCONN:
		s.mu.Lock()
		defer s.mu.Unlock()
		return putInt(b2i(s.listening)), nil
	case level == ipprotoTCP && s.typ == linux.SOCK_STREAM:
		switch name {
		case tcpNodelay:
			return putInt(b2i(!so.GetDelayOption())), nil
		case tcpCork:
			return putInt(b2i(so.GetCorkOption())), nil
		case tcpInfo:
			var info tcpip.TCPInfoOption
			if err := s.ep.GetSockOpt(&info); err != nil {
				return nil, errno(err)
			}
			return tcpInfoBytes(&info), nil
		}
	case level == ipprotoIPv6 && s.family == linux.AF_INET6 && name == ipv6V6only:
		return putInt(b2i(so.GetV6Only())), nil
	case level == ipprotoICMPv6 && name == icmp6FilterOpt && s.typ == linux.SOCK_RAW:
		f, err := s.icmp6Filter()
		if err != nil {
			return nil, err
		}
		b := make([]byte, 32)
		for i, w := range f.DenyType {
			binary.LittleEndian.PutUint32(b[4*i:], w)
		}
		return b, nil
	}
	if v, ok, err := s.getIPOption(level, name); ok {
		return v, err
	}
	return nil, s.unknownOption(level, false)
}

// unknownOption is the error for an option no handler knows, as Debian's
// Linux 6.1 gives it: ENOPROTOOPT at SOL_SOCKET and the socket's own
// transport level;
// at SOL_IP, and SOL_IPV6 of an IPv6 socket, netfilter's look-up answers
// EOPNOTSUPP; a level the protocol does not have is EOPNOTSUPP to
// getsockopt (ip_getsockopt) and ENOPROTOOPT to setsockopt.
func (s *sock) unknownOption(level int, set bool) error {
	switch {
	case level == linux.SOL_SOCKET,
		level == ipprotoTCP && s.typ == linux.SOCK_STREAM,
		level == ipprotoUDP && s.typ == linux.SOCK_DGRAM:
		return linux.ENOPROTOOPT
	case level == ipprotoIP, level == ipprotoIPv6 && s.family == linux.AF_INET6:
		return linux.EOPNOTSUPP
	case set:
		return linux.ENOPROTOOPT
	}
	return linux.EOPNOTSUPP
}

func (s *sock) SetOption(c *vfs.Ctx, level, name int, val []byte) error {
	so := s.ep.SocketOptions()
	switch {
	case level == ipprotoTCP && s.typ == linux.SOCK_STREAM && (name == tcpNodelay || name == tcpCork):
		v, err := getInt(val)
		if err != nil {
			return err
		}
		if name == tcpNodelay {
			so.SetDelayOption(v == 0)
		} else {
			so.SetCorkOption(v != 0)
		}
		return nil
	case level == ipprotoIPv6 && s.family == linux.AF_INET6 && name == ipv6V6only:
		v, err := getInt(val)
		if err != nil {
			return err
		}
		// Linux refuses to change it once the socket is bound.
		if a, _ := s.ep.GetLocalAddress(); a.Port != 0 {
			return linux.EINVAL
		}
		so.SetV6Only(v != 0)
		return nil
	case level == ipprotoICMPv6 && name == icmp6FilterOpt && s.typ == linux.SOCK_RAW:
		// ping6 blocks every type but echo replies. Like Linux, a short
		// value replaces only the words it has, a long one is cut at
		// the filter's 32 bytes.
		f, err := s.icmp6Filter()
		if err != nil {
			return err
		}
		for i := range f.DenyType {
			if len(val) < 4*(i+1) {
				break
			}
			f.DenyType[i] = binary.LittleEndian.Uint32(val[4*i:])
		}
		return errno(s.ep.SetSockOpt(&f))
	}
	if ok, err := s.setIPOption(level, name, val); ok {
		return err
	}
	return s.unknownOption(level, true)
}

// errnoInt is the number SO_ERROR reports for a pending error.
func errnoInt(e tcpip.Error) int {
	if e == nil {
		return 0
	}
	if n, ok := errno(e).(linux.Errno); ok {
		return int(n)
	}
	return int(linux.EINVAL)
}

// tcpInfoBytes is struct tcp_info (linux/tcp.h, 232 bytes in 6.1) with
// the fields netstack tracks: state, congestion state, RTO, RTT and its
// variance (microseconds), the congestion window and slow-start
// threshold; the rest stay zero.
func tcpInfoBytes(i *tcpip.TCPInfoOption) []byte {
	b := make([]byte, 232)
	b[0] = byte(i.State)
	b[1] = byte(i.CcState)
	binary.LittleEndian.PutUint32(b[8:], uint32(i.RTO/time.Microsecond))
	binary.LittleEndian.PutUint32(b[68:], uint32(i.RTT/time.Microsecond))
	binary.LittleEndian.PutUint32(b[72:], uint32(i.RTTVar/time.Microsecond))
	binary.LittleEndian.PutUint32(b[76:], i.SndSsthresh)
	binary.LittleEndian.PutUint32(b[80:], i.SndCwnd)
	return b
}

// icmp6FilterOpt is ICMP6_FILTER (netinet/icmp6.h), the ICMPv6 types a raw
// ICMPv6 socket does not receive.
const icmp6FilterOpt = 1

// icmp6Filter reads the filter of a raw ICMPv6 socket; other raw
// sockets have none (EOPNOTSUPP, as Linux says).
func (s *sock) icmp6Filter() (tcpip.ICMPv6Filter, error) {
	var f tcpip.ICMPv6Filter
	if s.family != linux.AF_INET6 || s.proto != ipprotoICMPv6 {
		return f, linux.EOPNOTSUPP
	}
	if err := s.ep.GetSockOpt(&f); err != nil {
		return f, errno(err)
	}
	return f, nil
}
