package inet

import (
	"fmt"
	"sync"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/icmp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/raw"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
)

// loNIC is the loopback interface's NIC id (lo is interface 1 on Linux
// too).
const loNIC tcpip.NICID = 1

var (
	stackOnce sync.Once
	theStack  *stack.Stack
)

// Stack returns the kernel's one network stack, made on first use: IPv4
// and IPv6, TCP and UDP, and the loopback NIC with 127.0.0.1/8 and ::1
// and routes to them.
func Stack() *stack.Stack {
	stackOnce.Do(func() {
		s, err := newStack(clock{})
		if err != nil {
			panic(err)
		}
		theStack = s
	})
	return theStack
}

// newStack makes a stack as Stack describes, reading time from clk (the
// kernel's clock; a test may count the reads).
func newStack(clk tcpip.Clock) (*stack.Stack, error) {
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, ipv6.NewProtocol, arp.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol, icmp.NewProtocol4, icmp.NewProtocol6},
		// Raw sockets: ping's ICMP (raw.go).
		RawFactory: raw.EndpointFactory{},
		Clock:      clk,
		// Loopback traffic needs no ICMP unreachable rate limits or
		// duplicate address detection; nothing else is set.
	})
	// Linux answers a SYN to a closed port with RST at once and keeps
	// SACK on; netstack's default is the same for RST, SACK is opt-in.
	sack := tcpip.TCPSACKEnabled(true)
	if err := s.SetTransportProtocolOption(tcp.ProtocolNumber, &sack); err != nil {
		return nil, fmt.Errorf("inet: SACK: %v", err)
	}
	// Nagle's algorithm is on for a new TCP socket, as on Linux
	// (TCP_NODELAY reads 0 until a program sets it); netstack's default
	// is off. Programs that need each small write sent at once (redis,
	// nginx with keep-alive, hiredis clients) set TCP_NODELAY themselves.
	delay := tcpip.TCPDelayEnabled(true)
	if err := s.SetTransportProtocolOption(tcp.ProtocolNumber, &delay); err != nil {
		return nil, fmt.Errorf("inet: Nagle: %v", err)
	}
	// Linux's ephemeral ports (net.ipv4.ip_local_port_range), so that
	// programs see the same ports on both kernels.
	if err := s.SetPortRange(32768, 60999); err != nil {
		return nil, fmt.Errorf("inet: port range: %v", err)
	}
	if err := s.CreateNICWithOptions(loNIC, newLoopback(), stack.NICOptions{Name: "lo"}); err != nil {
		return nil, fmt.Errorf("inet: loopback NIC: %v", err)
	}
	v4 := tcpip.ProtocolAddress{
		Protocol:          ipv4.ProtocolNumber,
		AddressWithPrefix: tcpip.AddressWithPrefix{Address: tcpip.AddrFrom4([4]byte{127, 0, 0, 1}), PrefixLen: 8},
	}
	v6 := tcpip.ProtocolAddress{
		Protocol:          ipv6.ProtocolNumber,
		AddressWithPrefix: tcpip.AddressWithPrefix{Address: tcpip.AddrFrom16([16]byte{15: 1}), PrefixLen: 128},
	}
	for _, a := range []tcpip.ProtocolAddress{v4, v6} {
		if err := s.AddProtocolAddress(loNIC, a, stack.AddressProperties{}); err != nil {
			return nil, fmt.Errorf("inet: address %v: %v", a.AddressWithPrefix, err)
		}
	}
	s.SetRouteTable([]tcpip.Route{
		{Destination: v4.AddressWithPrefix.Subnet(), NIC: loNIC},
		{Destination: v6.AddressWithPrefix.Subnet(), NIC: loNIC},
	})
	return s, nil
}

// ProcPortRange returns /proc/sys/net/ipv4/ip_local_port_range: the
// first and last ephemeral port, tab-separated as Linux prints them.
func ProcPortRange() []byte {
	lo, hi := Stack().PortRange()
	return fmt.Appendf(nil, "%d\t%d\n", lo, hi)
}
