package inet

// The interfaces, addresses and routes as Linux's routing netlink
// (kernel/net/rtnetlink) describes and changes them. netstack keeps one
// route table with no notion of Linux's tables, protocols or scopes;
// what a route was created as is remembered here (routeMeta), and a
// route netstack holds without it (the boot configuration, the ioctls)
// is described as Linux would have made it.

import (
	"net/netip"
	"sync"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"shortbread/kernel/abi/linux"
)

// More interface flags (linux/if.h).
const (
	iffBroadcast = 0x2
	iffMulticast = 0x1000
)

// Route tables, types, protocols and scopes (linux/rtnetlink.h).
const (
	TableMain  = 254
	TableLocal = 255

	TypeUnicast = 1
	TypeLocal   = 2

	ProtoKernel = 2
	ProtoBoot   = 3

	ScopeUniverse = 0
	ScopeLink     = 253
	ScopeHost     = 254
)

// LinkStats are an interface's counters.
type LinkStats struct {
	RxPackets, TxPackets, RxBytes, TxBytes   uint64
	RxErrors, TxErrors, RxDropped, TxDropped uint64
}

// Link is one interface.
type Link struct {
	Index  int
	Name   string
	Flags  uint32 // IFF_*
	MTU    uint32
	Type   uint16 // ARPHRD_*
	HWAddr []byte // 6 bytes (zeros for lo)
	TxQLen uint32
	Stats  LinkStats
}

// Addr is one address of an interface.
type Addr struct {
	Index  int
	Prefix netip.Prefix
	Scope  uint8
	Label  string // the interface's name (IPv4 labels)
}

// Route is one route.
type Route struct {
	Dst     netip.Prefix
	Gateway netip.Addr // invalid: directly connected
	Index   int        // the output interface
	Table   uint8
	Type    uint8
	Proto   uint8
	Scope   uint8
}

func linkOf(id tcpip.NICID, info stack.NICInfo) Link {
	l := Link{
		Index:  int(id),
		Name:   info.Name,
		Flags:  ifFlags(id, info),
		MTU:    info.MTU,
		Type:   arphrd(info.ARPHardwareType),
		HWAddr: make([]byte, 6),
	}
	copy(l.HWAddr, info.LinkAddress)
	if !info.Flags.Loopback {
		l.TxQLen = 1000
	}
	l.Stats = linkStats(id, info)
	return l
}

// linkStats is an interface's counters: the driver's own for a card, as
// Linux shows them, else netstack's (lo).
func linkStats(id tcpip.NICID, info stack.NICInfo) LinkStats {
	if c := card(id); c != nil {
		k := c.Counters()
		return LinkStats{
			RxPackets: k.RxPackets.Load(), RxBytes: k.RxBytes.Load(), RxErrors: k.RxErrors.Load(), RxDropped: k.RxDropped.Load(),
			TxPackets: k.TxPackets.Load(), TxBytes: k.TxBytes.Load(), TxErrors: k.TxErrors.Load(), TxDropped: k.TxDropped.Load(),
		}
	}
	st := info.Stats
	return LinkStats{
		RxPackets: st.Rx.Packets.Value(), RxBytes: st.Rx.Bytes.Value(),
		TxPackets: st.Tx.Packets.Value(), TxBytes: st.Tx.Bytes.Value(),
		TxDropped: st.TxPacketsDroppedNoBufferSpace.Value(),
	}
}

// Links returns every interface in index order.
func Links() []Link {
	infos, ids := nics()
	out := make([]Link, 0, len(ids))
	for _, id := range ids {
		out = append(out, linkOf(id, infos[id]))
	}
	return out
}

// LinkByIndex returns interface index, or ENODEV.
func LinkByIndex(index int) (Link, error) {
	info, ok := Stack().NICInfo()[tcpip.NICID(index)]
	if index <= 0 || !ok {
		return Link{}, linux.ENODEV
	}
	return linkOf(tcpip.NICID(index), info), nil
}

// SetLinkUp brings interface index up or down.
func SetLinkUp(index int, on bool) error {
	l, err := LinkByIndex(index)
	if err != nil {
		return err
	}
	s, id := Stack(), tcpip.NICID(index)
	var e tcpip.Error
	switch {
	case on && l.Flags&iffUp == 0:
		e = s.EnableNIC(id)
	case !on && l.Flags&iffUp != 0:
		e = s.DisableNIC(id)
	}
	if e != nil {
		return errno(e)
	}
	return nil
}

// SetLinkMTU sets interface index's MTU, within what SIOCSIFMTU allows.
func SetLinkMTU(index int, mtu uint32) error {
	if _, err := LinkByIndex(index); err != nil {
		return err
	}
	if mtu < 68 || mtu > loopbackMTU*4 {
		return linux.EINVAL
	}
	if e := Stack().SetNICMTU(tcpip.NICID(index), mtu); e != nil {
		return errno(e)
	}
	return nil
}

func toNetip(a tcpip.Address) netip.Addr {
	n, _ := netip.AddrFromSlice(a.AsSlice())
	return n
}

func toTcpip(a netip.Addr) tcpip.Address { return tcpip.AddrFromSlice(a.AsSlice()) }

func subnetOf(p netip.Prefix) tcpip.Subnet {
	return tcpip.AddressWithPrefix{Address: toTcpip(p.Masked().Addr()), PrefixLen: p.Bits()}.Subnet()
}

func prefixOf(s tcpip.Subnet) netip.Prefix {
	return netip.PrefixFrom(toNetip(s.ID()), s.Prefix())
}

// ScopeOf is the scope Linux gives address a.
func ScopeOf(a netip.Addr) uint8 {
	switch {
	case a.IsLoopback():
		return ScopeHost
	case a.IsLinkLocalUnicast():
		return ScopeLink
	}
	return ScopeUniverse
}

// Addrs returns every interface's addresses, in interface order.
func Addrs() []Addr {
	infos, ids := nics()
	var out []Addr
	for _, id := range ids {
		for _, pa := range infos[id].ProtocolAddresses {
			a := toNetip(pa.AddressWithPrefix.Address)
			out = append(out, Addr{
				Index:  int(id),
				Prefix: netip.PrefixFrom(a, pa.AddressWithPrefix.PrefixLen),
				Scope:  ScopeOf(a),
				Label:  infos[id].Name,
			})
		}
	}
	return out
}

// cfgMu serializes changes to addresses and routes, so that an address
// and its prefix route come and go together.
var cfgMu sync.Mutex

// AddAddr adds address p to interface index, and the route to its
// subnet as Linux's fib_add_ifaddr does (in the local table, as a local
// route, on a loopback interface). An address already there is EEXIST.
func AddAddr(index int, p netip.Prefix) error {
	l, err := LinkByIndex(index)
	if err != nil {
		return err
	}
	if !p.IsValid() || p.Addr().Is4In6() {
		return linux.EINVAL
	}
	cfgMu.Lock()
	defer cfgMu.Unlock()
	for _, a := range Addrs() {
		if a.Index == index && a.Prefix.Addr() == p.Addr() {
			return linux.EEXIST
		}
	}
	proto := tcpip.NetworkProtocolNumber(ipv4.ProtocolNumber)
	if p.Addr().Is6() {
		proto = ipv6.ProtocolNumber
	}
	s := Stack()
	pa := tcpip.ProtocolAddress{Protocol: proto, AddressWithPrefix: tcpip.AddressWithPrefix{Address: toTcpip(p.Addr()), PrefixLen: p.Bits()}}
	if e := s.AddProtocolAddress(tcpip.NICID(index), pa, stack.AddressProperties{}); e != nil {
		return errno(e)
	}
	if p.Bits() < p.Addr().BitLen() && !hasRoute(p.Masked(), tcpip.NICID(index)) {
		r := Route{Dst: p.Masked(), Index: index, Table: TableMain, Type: TypeUnicast, Proto: ProtoKernel, Scope: ScopeLink}
		if l.Flags&iffLoopback != 0 {
			r.Table, r.Type, r.Scope = TableLocal, TypeLocal, ScopeHost
		}
		addRouteLocked(r)
	}
	return nil
}

// DelAddr removes address p (its prefix length must match when given)
// from interface index, and the route to its subnet unless another
// address there shares it. An address not there is EADDRNOTAVAIL.
func DelAddr(index int, p netip.Prefix) error {
	if _, err := LinkByIndex(index); err != nil {
		return err
	}
	cfgMu.Lock()
	defer cfgMu.Unlock()
	var found *Addr
	addrs := Addrs()
	for i, a := range addrs {
		if a.Index == index && a.Prefix.Addr() == p.Addr() && (p.Bits() == a.Prefix.Bits() || p.Bits() == p.Addr().BitLen()) {
			found = &addrs[i]
			break
		}
	}
	if found == nil {
		return linux.EADDRNOTAVAIL
	}
	if e := Stack().RemoveAddress(tcpip.NICID(index), toTcpip(p.Addr())); e != nil {
		return errno(e)
	}
	sub := found.Prefix.Masked()
	for _, a := range Addrs() {
		if a.Index == index && a.Prefix.Masked() == sub {
			return nil // the subnet is still this interface's
		}
	}
	removeRoutesLocked(func(r Route) bool {
		return r.Index == index && r.Dst == sub && !r.Gateway.IsValid() && r.Proto == ProtoKernel
	})
	return nil
}

type routeKey struct {
	dst netip.Prefix
	gw  netip.Addr
	nic tcpip.NICID
}

// routeMeta is what the routes added through AddRoute and AddAddr were
// created as; protected by cfgMu.
var routeMeta = map[routeKey]Route{}

func keyOf(r tcpip.Route) routeKey {
	k := routeKey{dst: prefixOf(r.Destination), nic: r.NIC}
	if r.Gateway.Len() > 0 && !r.Gateway.Unspecified() {
		k.gw = toNetip(r.Gateway)
	}
	return k
}

// describe is a netstack route as Linux would list it.
func describe(r tcpip.Route, infos map[tcpip.NICID]stack.NICInfo) Route {
	k := keyOf(r)
	if m, ok := routeMeta[k]; ok {
		return m
	}
	out := Route{Dst: k.dst, Gateway: k.gw, Index: int(r.NIC), Table: TableMain, Type: TypeUnicast, Proto: ProtoBoot, Scope: ScopeLink}
	if k.gw.IsValid() {
		out.Scope = ScopeUniverse
		return out
	}
	info := infos[r.NIC]
	if info.Flags.Loopback {
		out.Table, out.Type, out.Scope, out.Proto = TableLocal, TypeLocal, ScopeHost, ProtoKernel
		return out
	}
	for _, pa := range info.ProtocolAddresses {
		if prefixOf(pa.AddressWithPrefix.Subnet()) == k.dst {
			out.Proto = ProtoKernel
		}
	}
	return out
}

// Routes returns every route, longest prefixes first (netstack's
// order).
func Routes() []Route {
	cfgMu.Lock()
	defer cfgMu.Unlock()
	infos := Stack().NICInfo()
	var out []Route
	for _, r := range Stack().GetRouteTable() {
		out = append(out, describe(r, infos))
	}
	return out
}

func hasRoute(dst netip.Prefix, nic tcpip.NICID) bool {
	for _, r := range Stack().GetRouteTable() {
		if r.NIC == nic && prefixOf(r.Destination) == dst {
			return true
		}
	}
	return false
}

func addRouteLocked(r Route) {
	tr := tcpip.Route{Destination: subnetOf(r.Dst), NIC: tcpip.NICID(r.Index)}
	if r.Gateway.IsValid() {
		tr.Gateway = toTcpip(r.Gateway)
	}
	Stack().AddRoute(tr)
	routeMeta[keyOf(tr)] = r
}

func removeRoutesLocked(match func(Route) bool) int {
	infos := Stack().NICInfo()
	return Stack().RemoveRoutes(func(tr tcpip.Route) bool {
		if !match(describe(tr, infos)) {
			return false
		}
		delete(routeMeta, keyOf(tr))
		return true
	})
}

// AddRoute adds r. Without an output interface, the gateway picks it
// (the interface with a directly connected route to it); a gateway no
// such route reaches is ENETUNREACH, as Linux's next-hop check says. A
// route to the same destination in the same table is EEXIST unless
// replace is set. It returns the route as added.
func AddRoute(r Route, replace bool) (Route, error) {
	if !r.Dst.IsValid() || r.Dst.Addr().Is4In6() || (r.Gateway.IsValid() && r.Gateway.Is4() != r.Dst.Addr().Is4()) {
		return r, linux.EINVAL
	}
	r.Dst = r.Dst.Masked()
	if r.Index != 0 {
		if _, err := LinkByIndex(r.Index); err != nil {
			return r, err
		}
	}
	cfgMu.Lock()
	defer cfgMu.Unlock()
	infos := Stack().NICInfo()
	if r.Gateway.IsValid() {
		via := 0
		for _, tr := range Stack().GetRouteTable() {
			d := describe(tr, infos)
			if !d.Gateway.IsValid() && d.Dst.Contains(r.Gateway) && (r.Index == 0 || d.Index == r.Index) {
				via = d.Index
				break
			}
		}
		if via == 0 {
			return r, linux.ENETUNREACH
		}
		r.Index = via
	} else if r.Index == 0 {
		return r, linux.ENODEV
	}
	exists := false
	for _, tr := range Stack().GetRouteTable() {
		if d := describe(tr, infos); d.Dst == r.Dst && d.Table == r.Table {
			exists = true
		}
	}
	if exists {
		if !replace {
			return r, linux.EEXIST
		}
		removeRoutesLocked(func(d Route) bool { return d.Dst == r.Dst && d.Table == r.Table })
	}
	addRouteLocked(r)
	return r, nil
}

// ScopeNowhere in a route to delete matches every scope.
const ScopeNowhere = 255

// DelRoute removes the routes matching r as Linux's fib_table_delete
// matches them: its destination and table; its scope unless
// ScopeNowhere; its type, protocol, gateway and interface when given.
// None is ESRCH.
func DelRoute(r Route) error {
	cfgMu.Lock()
	defer cfgMu.Unlock()
	n := removeRoutesLocked(func(d Route) bool {
		return d.Dst == r.Dst.Masked() && d.Table == r.Table &&
			(r.Scope == ScopeNowhere || d.Scope == r.Scope) &&
			(r.Type == 0 || d.Type == r.Type) &&
			(r.Proto == 0 || d.Proto == r.Proto) &&
			(!r.Gateway.IsValid() || d.Gateway == r.Gateway) &&
			(r.Index == 0 || d.Index == r.Index)
	})
	if n == 0 {
		return linux.ESRCH
	}
	return nil
}
