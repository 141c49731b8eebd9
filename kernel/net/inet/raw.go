package inet

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/transport/icmp"
	"gvisor.dev/gvisor/pkg/waiter"

	"shortbread/kernel/abi/linux"
)

// icmpProto is the ICMP protocol number of a family: what ping's raw
// socket asks for.
func icmpProto(family int) int {
	if family == linux.AF_INET6 {
		return ipprotoICMPv6
	}
	return ipprotoICMP
}

// newRawSocket makes a raw socket, which only ICMP has here: busybox's
// and iputils' ping open one as root. As on Linux, reading gives whole
// IPv4 packets (the IPv6 header stays off, as Linux's IPv6 raw sockets
// leave it) and writing takes the ICMP message, to which the stack adds
// the IP header. Without CAP_NET_RAW the answer is EPERM (what makes
// busybox's ping fall back to a ping socket), for a protocol other than
// ICMP EPROTONOSUPPORT: netstack's raw endpoints exist for any protocol
// it delivers, but nothing here has needed one.
func newRawSocket(family, protocol int, privileged bool) (*sock, error) {
	if !privileged {
		return nil, linux.EPERM
	}
	if protocol != icmpProto(family) {
		return nil, linux.EPROTONOSUPPORT
	}
	tp := icmp.ProtocolNumber4
	if family == linux.AF_INET6 {
		tp = icmp.ProtocolNumber6
	}
	wq := new(waiter.Queue)
	ep, err := Stack().NewRawEndpoint(tp, netProto(family), wq, true)
	if err != nil {
		return nil, errno(err)
	}
	return wrap(family, linux.SOCK_RAW, protocol, ep, wq), nil
}

// countICMPOut counts an ICMPv4 message a raw socket sent by its type, as
// Linux's raw_sendmsg does (OutMsgs, OutEchos, ... in /proc/net/snmp):
// netstack counts only the messages it makes itself.
func countICMPOut(family int, typ byte) {
	if family != linux.AF_INET {
		return
	}
	out := Stack().Stats().ICMP.V4.PacketsSent
	var c *tcpip.StatCounter
	switch typ {
	case 0:
		c = out.EchoReply
	case 3:
		c = out.DstUnreachable
	case 4:
		c = out.SrcQuench
	case 5:
		c = out.Redirect
	case 8:
		c = out.EchoRequest
	case 11:
		c = out.TimeExceeded
	case 12:
		c = out.ParamProblem
	case 13:
		c = out.Timestamp
	case 14:
		c = out.TimestampReply
	case 15:
		c = out.InfoRequest
	case 16:
		c = out.InfoReply
	default:
		return
	}
	c.Increment()
}
