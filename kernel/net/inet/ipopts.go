package inet

import (
	"encoding/binary"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/net/socket"
)

// The IP-level options (netinet/in.h, linux/in6.h) and TCP's keepalive
// and retry knobs, with the ranges and defaults Linux 6.1's
// do_ip_setsockopt, do_ipv6_setsockopt and do_tcp_setsockopt apply. The
// values themselves live in netstack's endpoint.
const (
	ipTOS       = 1
	ipTTL       = 2
	ipPktinfo   = 8
	ipRecvTTL   = 12
	ipRecvTOS   = 13
	ipMcastTTL  = 33
	ipMcastLoop = 34

	ipv6PktinfoRFC2292  = 2
	ipv6HopLimitRFC2292 = 8
	ipv6UnicastHops     = 16
	ipv6RecvPktinfo     = 49
	ipv6Pktinfo         = 50 // the control message's type
	ipv6RecvHopLimit    = 51
	ipv6HopLimit        = 52 // the control message's type
	ipv6RecvTClass      = 66
	ipv6TClass          = 67

	tcpMaxSeg      = 2
	tcpKeepIdle    = 4
	tcpKeepIntvl   = 5
	tcpKeepCnt     = 6
	tcpSynCnt      = 7
	tcpUserTimeout = 18

	soTimestamp   = 29 // SO_TIMESTAMP_OLD: struct timeval, also the message's type
	soTimestampNS = 35 // SO_TIMESTAMPNS_OLD: struct timespec

	// defaultHops is net.ipv4.ip_default_ttl and the IPv6 hop_limit,
	// what a socket that set none reports.
	defaultHops = 64
)

// ipIntValue reads an SOL_IP option's value as do_ip_setsockopt does: an
// int when there are four bytes, else the one unsigned byte given, else 0.
func ipIntValue(val []byte) int {
	switch {
	case len(val) >= 4:
		return int(int32(binary.LittleEndian.Uint32(val)))
	case len(val) >= 1:
		return int(val[0])
	}
	return 0
}

// getIPOption answers SOL_IP and the SOL_IPV6 and SOL_TCP options beyond
// GetOption's, and SOL_SOCKET's SO_TIMESTAMP and SO_TIMESTAMPNS (which
// this package keeps, not netstack); ok is false for any other option.
func (s *sock) getIPOption(level, name int) (v []byte, ok bool, err error) {
	so := s.ep.SocketOptions()
	switch {
	case level == linux.SOL_SOCKET && (name == soTimestamp || name == soTimestampNS):
		ts := s.tstamp.Load()
		return putInt(b2i(name == soTimestamp && ts == tstampMicro || name == soTimestampNS && ts == tstampNano)), true, nil
	case level == ipprotoIP:
		switch name {
		case ipTOS:
			return s.intOpt(tcpip.IPv4TOSOption)
		case ipTTL:
			return s.intOpt(tcpip.IPv4TTLOption)
		case ipPktinfo:
			return putInt(b2i(so.GetReceivePacketInfo())), true, nil
		case ipRecvTTL:
			return putInt(b2i(so.GetReceiveTTL())), true, nil
		case ipRecvTOS:
			return putInt(b2i(so.GetReceiveTOS())), true, nil
		case ipMcastTTL:
			return s.intOpt(tcpip.MulticastTTLOption)
		case ipMcastLoop:
			return putInt(b2i(so.GetMulticastLoop())), true, nil
		}
	case level == ipprotoIPv6 && s.family == linux.AF_INET6:
		switch name {
		case ipv6UnicastHops:
			return s.intOpt(tcpip.IPv6HopLimitOption)
		case ipv6TClass:
			return s.intOpt(tcpip.IPv6TrafficClassOption)
		case ipv6RecvPktinfo, ipv6RecvHopLimit, ipv6PktinfoRFC2292, ipv6HopLimitRFC2292:
			return putInt(b2i(s.rx6.Load()&rx6Bit(name) != 0)), true, nil
		case ipv6RecvTClass:
			return putInt(b2i(so.GetReceiveTClass())), true, nil
		}
	case level == ipprotoTCP && s.typ == linux.SOCK_STREAM:
		switch name {
		case tcpKeepIdle:
			var d tcpip.KeepaliveIdleOption
			return s.durationOpt(&d, (*time.Duration)(&d), time.Second)
		case tcpKeepIntvl:
			var d tcpip.KeepaliveIntervalOption
			return s.durationOpt(&d, (*time.Duration)(&d), time.Second)
		case tcpUserTimeout:
			var d tcpip.TCPUserTimeoutOption
			return s.durationOpt(&d, (*time.Duration)(&d), time.Millisecond)
		case tcpKeepCnt:
			return s.intOpt(tcpip.KeepaliveCountOption)
		case tcpSynCnt:
			return s.intOpt(tcpip.TCPSynCountOption)
		case tcpMaxSeg:
			// The MSS the user set while the socket is unconnected or
			// listening, else the connection's MSS once there is one
			// (netstack-patches/tcp-maxseg-connected.diff), else
			// TCP_MSS_DEFAULT, as Linux answers.
			return s.intOpt(tcpip.MaxSegOption)
		}
	}
	return nil, false, nil
}

// intOpt reads an integer option, reporting defaultHops where netstack
// holds its "use the default" value (0 for the IPv4 TTL, -1 for the IPv6
// hop limit).
func (s *sock) intOpt(o tcpip.SockOptInt) ([]byte, bool, error) {
	v, err := s.ep.GetSockOptInt(o)
	if err != nil {
		return nil, true, errno(err)
	}
	if (o == tcpip.IPv4TTLOption && v == 0) || (o == tcpip.IPv6HopLimitOption && v == -1) {
		v = defaultHops
	}
	return putInt(v), true, nil
}

// durationOpt reads a duration option in unit.
func (s *sock) durationOpt(o tcpip.GettableSocketOption, d *time.Duration, unit time.Duration) ([]byte, bool, error) {
	if err := s.ep.GetSockOpt(o); err != nil {
		return nil, true, errno(err)
	}
	return putInt(int(*d / unit)), true, nil
}

// setIPOption sets the options getIPOption reads; ok is false for any
// other option.
func (s *sock) setIPOption(level, name int, val []byte) (ok bool, err error) {
	so := s.ep.SocketOptions()
	switch {
	case level == linux.SOL_SOCKET && (name == soTimestamp || name == soTimestampNS):
		// Either option turned off turns both off (sock_set_timestamp).
		v, err := getInt(val)
		if err != nil {
			return true, err
		}
		switch {
		case v == 0:
			s.tstamp.Store(tstampOff)
		case name == soTimestamp:
			s.tstamp.Store(tstampMicro)
		default:
			s.tstamp.Store(tstampNano)
		}
		return true, nil
	case level == ipprotoIP:
		v := ipIntValue(val)
		switch name {
		case ipTOS:
			if s.typ == linux.SOCK_STREAM {
				// TCP keeps the ECN bits its own (__ip_sock_set_tos).
				old, _ := s.ep.GetSockOptInt(tcpip.IPv4TOSOption)
				v = v&^3 | old&3
			}
			return true, errno(s.ep.SetSockOptInt(tcpip.IPv4TOSOption, v&0xff))
		case ipTTL:
			if len(val) < 1 || v != -1 && (v < 1 || v > 255) {
				return true, linux.EINVAL
			}
			if v == -1 {
				v = 0 // netstack's "the default"
			}
			return true, errno(s.ep.SetSockOptInt(tcpip.IPv4TTLOption, v))
		case ipMcastTTL:
			if s.typ == linux.SOCK_STREAM || len(val) < 1 {
				return true, linux.EINVAL
			}
			if v == -1 {
				v = 1
			}
			if v < 0 || v > 255 {
				return true, linux.EINVAL
			}
			return true, errno(s.ep.SetSockOptInt(tcpip.MulticastTTLOption, v))
		case ipMcastLoop:
			if len(val) < 1 {
				return true, linux.EINVAL
			}
			so.SetMulticastLoop(v != 0)
			return true, nil
		case ipPktinfo:
			so.SetReceivePacketInfo(v != 0)
			return true, nil
		case ipRecvTTL:
			so.SetReceiveTTL(v != 0)
			return true, nil
		case ipRecvTOS:
			so.SetReceiveTOS(v != 0)
			return true, nil
		}
	case level == ipprotoIPv6 && s.family == linux.AF_INET6:
		switch name {
		case ipv6RecvPktinfo, ipv6RecvHopLimit, ipv6PktinfoRFC2292, ipv6HopLimitRFC2292,
			ipv6RecvTClass, ipv6UnicastHops, ipv6TClass:
		default:
			return false, nil
		}
		if len(val) < 4 {
			return true, linux.EINVAL
		}
		v := int(int32(binary.LittleEndian.Uint32(val)))
		switch name {
		case ipv6UnicastHops:
			if v < -1 || v > 255 {
				return true, linux.EINVAL
			}
			return true, errno(s.ep.SetSockOptInt(tcpip.IPv6HopLimitOption, v))
		case ipv6TClass:
			if v < -1 || v > 0xff {
				return true, linux.EINVAL
			}
			if v == -1 {
				v = 0 // RFC 3542's default traffic class
			}
			if s.typ == linux.SOCK_STREAM {
				old, _ := s.ep.GetSockOptInt(tcpip.IPv6TrafficClassOption)
				v = v&^3 | old&3
			}
			return true, errno(s.ep.SetSockOptInt(tcpip.IPv6TrafficClassOption, v))
		case ipv6RecvTClass:
			so.SetReceiveTClass(v != 0)
			return true, nil
		}
		bit := rx6Bit(name)
		for {
			old := s.rx6.Load()
			nw := old &^ bit
			if v != 0 {
				nw |= bit
			}
			if s.rx6.CompareAndSwap(old, nw) {
				so.SetIPv6ReceivePacketInfo(nw&(rx6Info|rx6InfoRFC2292) != 0)
				so.SetReceiveHopLimit(nw&(rx6Hlim|rx6HlimRFC2292) != 0)
				return true, nil
			}
		}
	case level == ipprotoTCP && s.typ == linux.SOCK_STREAM:
		var lo, hi int
		switch name {
		case tcpMaxSeg:
			lo, hi = 0, 32767 // 0 or TCP_MIN_MSS to MAX_TCP_WINDOW
		case tcpKeepIdle, tcpKeepIntvl:
			lo, hi = 1, 32767
		case tcpKeepCnt, tcpSynCnt:
			lo, hi = 1, 127
		case tcpUserTimeout:
			lo, hi = 0, 1<<31-1
		default:
			return false, nil
		}
		if len(val) < 4 {
			return true, linux.EINVAL
		}
		v := int(int32(binary.LittleEndian.Uint32(val)))
		if v < lo || v > hi {
			return true, linux.EINVAL
		}
		switch name {
		case tcpMaxSeg:
			if v == 0 {
				// Linux forgets the user's MSS; netstack cannot, so
				// one set earlier stays (a deviation).
				return true, nil
			}
			if v < 88 {
				return true, linux.EINVAL
			}
			return true, errno(s.ep.SetSockOptInt(tcpip.MaxSegOption, v))
		case tcpKeepIdle:
			o := tcpip.KeepaliveIdleOption(time.Duration(v) * time.Second)
			return true, errno(s.ep.SetSockOpt(&o))
		case tcpKeepIntvl:
			o := tcpip.KeepaliveIntervalOption(time.Duration(v) * time.Second)
			return true, errno(s.ep.SetSockOpt(&o))
		case tcpUserTimeout:
			o := tcpip.TCPUserTimeoutOption(time.Duration(v) * time.Millisecond)
			return true, errno(s.ep.SetSockOpt(&o))
		case tcpKeepCnt:
			return true, errno(s.ep.SetSockOptInt(tcpip.KeepaliveCountOption, v))
		case tcpSynCnt:
			return true, errno(s.ep.SetSockOptInt(tcpip.TCPSynCountOption, v))
		}
	}
	return false, nil
}

// The values of sock.tstamp: which receive time a datagram carries.
const (
	tstampOff = iota
	tstampMicro
	tstampNano
)

// The bits of sock.rx6.
const (
	rx6Info = 1 << iota
	rx6Hlim
	rx6InfoRFC2292
	rx6HlimRFC2292
)

func rx6Bit(name int) uint32 {
	switch name {
	case ipv6RecvPktinfo:
		return rx6Info
	case ipv6RecvHopLimit:
		return rx6Hlim
	case ipv6PktinfoRFC2292:
		return rx6InfoRFC2292
	case ipv6HopLimitRFC2292:
		return rx6HlimRFC2292
	}
	return 0
}

// recvControl turns what netstack says about a received datagram into
// the control messages the socket asked for, in the order Linux writes
// them (ip_cmsg_recv_offset: PKTINFO, TTL, TOS; for IPv6
// ip6_datagram_recv_specific_ctl: PKTINFO, HOPLIMIT, TCLASS, then RFC
// 2292's PKTINFO and HOPLIMIT). netstack sets a Has flag only when the
// matching option is on; rx6 says which of the IPv6 pairs were asked for.
func recvControl(cm *tcpip.ReceivableControlMessages, rx6, tstamp uint32) []socket.Cmsg {
	var out []socket.Cmsg
	if cm.HasTimestamp && tstamp != tstampOff {
		// The receive time comes first (sock_recv_ts_and_drops), as
		// struct timeval or timespec.
		t := cm.Timestamp
		d := make([]byte, 16)
		binary.LittleEndian.PutUint64(d, uint64(t.Unix()))
		typ, frac := soTimestamp, int64(t.Nanosecond()/1000)
		if tstamp == tstampNano {
			typ, frac = soTimestampNS, int64(t.Nanosecond())
		}
		binary.LittleEndian.PutUint64(d[8:], uint64(frac))
		out = append(out, socket.Cmsg{Level: linux.SOL_SOCKET, Type: typ, Data: d})
	}
	if cm.HasIPPacketInfo {
		// struct in_pktinfo: the interface, the local address the
		// packet reached (ipi_spec_dst) and its header's destination.
		d := make([]byte, 12)
		binary.LittleEndian.PutUint32(d, uint32(cm.PacketInfo.NIC))
		copy(d[4:8], cm.PacketInfo.LocalAddr.AsSlice())
		copy(d[8:12], cm.PacketInfo.DestinationAddr.AsSlice())
		out = append(out, socket.Cmsg{Level: ipprotoIP, Type: ipPktinfo, Data: d})
	}
	if cm.HasTTL {
		out = append(out, socket.Cmsg{Level: ipprotoIP, Type: ipTTL, Data: putInt(int(cm.TTL))})
	}
	if cm.HasTOS {
		// One byte, as Linux puts the header's field.
		out = append(out, socket.Cmsg{Level: ipprotoIP, Type: ipTOS, Data: []byte{cm.TOS}})
	}
	var info6 []byte
	if cm.HasIPv6PacketInfo {
		// struct in6_pktinfo: the destination address, then the
		// interface.
		info6 = make([]byte, 20)
		copy(info6[:16], cm.IPv6PacketInfo.Addr.AsSlice())
		binary.LittleEndian.PutUint32(info6[16:], uint32(cm.IPv6PacketInfo.NIC))
	}
	if info6 != nil && rx6&rx6Info != 0 {
		out = append(out, socket.Cmsg{Level: ipprotoIPv6, Type: ipv6Pktinfo, Data: info6})
	}
	if cm.HasHopLimit && rx6&rx6Hlim != 0 {
		out = append(out, socket.Cmsg{Level: ipprotoIPv6, Type: ipv6HopLimit, Data: putInt(int(cm.HopLimit))})
	}
	if cm.HasTClass {
		out = append(out, socket.Cmsg{Level: ipprotoIPv6, Type: ipv6TClass, Data: putInt(int(cm.TClass))})
	}
	if info6 != nil && rx6&rx6InfoRFC2292 != 0 {
		out = append(out, socket.Cmsg{Level: ipprotoIPv6, Type: ipv6PktinfoRFC2292, Data: info6})
	}
	if cm.HasHopLimit && rx6&rx6HlimRFC2292 != 0 {
		out = append(out, socket.Cmsg{Level: ipprotoIPv6, Type: ipv6HopLimitRFC2292, Data: putInt(int(cm.HopLimit))})
	}
	return out
}
