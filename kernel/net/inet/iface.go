package inet

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/ethernet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"shortbread/kernel/net/link"
)

// IfConfig is an interface's IPv4 configuration as Linux's ip= kernel
// parameter gives it: static, or by DHCP.
type IfConfig struct {
	DHCP    bool         // ask a DHCP server; Addr and Gateway are unset
	Addr    netip.Prefix // address and netmask
	Gateway netip.Addr   // default route; invalid: none
	Host    string
	Device  string // which interface; empty: the first
}

// ParseIPParam parses Linux's ip= parameter
// (Documentation/admin-guide/nfs/nfsroot.rst):
// <client-ip>:<server-ip>:<gw-ip>:<netmask>:<hostname>:<device>:<autoconf>,
// autoconf off or none (static), or dhcp, on or any (DHCP, the only
// protocol Shortbread's client speaks; bootp and rarp are refused), and
// the short forms ip=dhcp, ip=on and ip=any; ip=off and ip=none give
// a configuration with neither DHCP nor an address.
func ParseIPParam(s string) (IfConfig, error) {
	f := strings.Split(s, ":")
	if s == "off" || s == "none" {
		return IfConfig{}, nil // no configuration at all
	}
	if len(f) == 1 {
		f = []string{"", "", "", "", "", "", s}
	}
	for len(f) < 7 {
		f = append(f, "")
	}
	var c IfConfig
	switch f[6] {
	case "", "off", "none":
	case "dhcp", "on", "any":
		// Linux takes a client address given with DHCP as a hint it
		// does not send; Shortbread ignores it likewise.
		c.DHCP, c.Host, c.Device = true, f[4], f[5]
		return c, nil
	default:
		return c, fmt.Errorf("ip=%s: autoconfiguration %q not supported (static or dhcp)", s, f[6])
	}
	addr, err := netip.ParseAddr(f[0])
	if err != nil || !addr.Is4() {
		return c, fmt.Errorf("ip=%s: client address %q is not IPv4", s, f[0])
	}
	mask, err := netip.ParseAddr(f[3])
	if err != nil || !mask.Is4() {
		return c, fmt.Errorf("ip=%s: netmask %q is not IPv4", s, f[3])
	}
	m := mask.As4()
	bits := uint32(m[0])<<24 | uint32(m[1])<<16 | uint32(m[2])<<8 | uint32(m[3])
	ones := 0
	for bits&(1<<31) != 0 {
		ones++
		bits <<= 1
	}
	if bits != 0 {
		return c, fmt.Errorf("ip=%s: netmask %s is not contiguous", s, f[3])
	}
	c.Addr = netip.PrefixFrom(addr, ones)
	if f[2] != "" {
		gw, err := netip.ParseAddr(f[2])
		if err != nil || !gw.Is4() || !c.Addr.Masked().Contains(gw) {
			return c, fmt.Errorf("ip=%s: gateway %q is not an IPv4 address on the subnet", s, f[2])
		}
		c.Gateway = gw
	}
	c.Host, c.Device = f[4], f[5]
	return c, nil
}

var nicMu sync.Mutex
var nextNIC = loNIC + 1

// cards are the interfaces whose driver reports carrier and counters,
// by NIC id; nicMu guards it.
var cards = map[tcpip.NICID]link.Device{}

// card returns interface id's driver, if it reports its own state.
func card(id tcpip.NICID) link.Device {
	nicMu.Lock()
	defer nicMu.Unlock()
	return cards[id]
}

// RemoveEthernet detaches interface id, which AddEthernet attached, from
// the stack with its addresses and routes (netstack drops those with the
// NIC) and forgets its driver, so that the name is free again. The
// kernel's cards stay for good; the package's tests, which share the
// kernel's one stack, remove theirs.
func RemoveEthernet(id tcpip.NICID) error {
	s := Stack()
	if id == loNIC {
		return errors.New("inet: the loopback interface cannot be removed")
	}
	if err := s.RemoveNIC(id); err != nil {
		return fmt.Errorf("inet: interface %d: %v", id, err)
	}
	nicMu.Lock()
	delete(cards, id)
	nicMu.Unlock()
	return nil
}

// AddEthernet attaches a network card's link endpoint (raw Ethernet
// frames) to the stack as interface name, with c's address and routes
// if c is not nil.
func AddEthernet(name string, ep stack.LinkEndpoint, c *IfConfig) (tcpip.NICID, error) {
	s := Stack()
	nicMu.Lock()
	id := nextNIC
	nextNIC++
	if d, ok := ep.(link.Device); ok {
		cards[id] = d
	}
	nicMu.Unlock()
	// Link packets go to packet endpoints too: the DHCP client reads
	// its replies there before the interface has an address.
	if err := s.CreateNICWithOptions(id, ethernet.New(ep), stack.NICOptions{Name: name, DeliverLinkPackets: true}); err != nil {
		nicMu.Lock()
		delete(cards, id)
		nicMu.Unlock()
		return 0, fmt.Errorf("inet: %s: %v", name, err)
	}
	// The IPv6 link-local address Linux gives an Ethernet interface that
	// comes up (fe80::/64 and the EUI-64 of its MAC, addr_gen_mode 0)
	// and the route to its subnet, so that neighbour discovery answers
	// and a peer on the wire reaches it without configuration.
	ll := tcpip.ProtocolAddress{Protocol: ipv6.ProtocolNumber,
		AddressWithPrefix: tcpip.AddressWithPrefix{Address: header.LinkLocalAddr(ep.LinkAddress()), PrefixLen: 64}}
	if err := s.AddProtocolAddress(id, ll, stack.AddressProperties{}); err != nil {
		return id, fmt.Errorf("inet: %s: link-local address: %v", name, err)
	}
	s.AddRoute(tcpip.Route{Destination: header.IPv6LinkLocalPrefix.Subnet(), NIC: id})
	if c == nil {
		return id, nil
	}
	if !c.Addr.Addr().Is4() {
		return id, errors.New("inet: only IPv4 configuration")
	}
	a := tcpip.ProtocolAddress{
		Protocol:          ipv4.ProtocolNumber,
		AddressWithPrefix: tcpip.AddressWithPrefix{Address: tcpip.AddrFrom4(c.Addr.Addr().As4()), PrefixLen: c.Addr.Bits()},
	}
	if err := s.AddProtocolAddress(id, a, stack.AddressProperties{}); err != nil {
		return id, fmt.Errorf("inet: %s: address %v: %v", name, a.AddressWithPrefix, err)
	}
	s.AddRoute(tcpip.Route{Destination: a.AddressWithPrefix.Subnet(), NIC: id})
	if c.Gateway.IsValid() {
		s.AddRoute(tcpip.Route{Destination: header.IPv4EmptySubnet, Gateway: tcpip.AddrFrom4(c.Gateway.As4()), NIC: id})
	}
	return id, nil
}
