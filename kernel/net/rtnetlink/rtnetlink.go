// Package rtnetlink is NETLINK_ROUTE: interfaces (links), their
// addresses and the routes, listed and changed through netlink messages
// as busybox ip, iproute2, musl's getifaddrs and if_nameindex, and Go's
// net.Interfaces ask for them. The data is kernel/net/inet's; this
// package decodes requests and encodes answers in Linux's layout
// (linux/rtnetlink.h, linux/if_link.h, linux/if_addr.h).
//
// Supported: RTM_GETLINK (dump, or one link by index or name),
// RTM_NEWLINK/RTM_SETLINK on an existing link (up/down, MTU),
// RTM_GETADDR, RTM_NEWADDR, RTM_DELADDR, RTM_GETROUTE (dump, and the
// look-up ip route get does), RTM_NEWROUTE and RTM_DELROUTE for unicast
// routes in the main and local tables; notifications of address and
// route changes to the RTNLGRP_IPV4/IPV6 groups. Creating or deleting
// links, neighbours, rules, other route types and tables are EOPNOTSUPP.
package rtnetlink

import (
	"encoding/binary"
	"net/netip"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/net/inet"
	"shortbread/kernel/net/netlink"
	"shortbread/kernel/vfs"
)

// Message types.
const (
	newLink   = 16
	delLink   = 17
	getLink   = 18
	setLink   = 19
	newAddr   = 20
	delAddr   = 21
	getAddr   = 22
	newRoute  = 24
	delRoute  = 25
	getRoute  = 26
	typeMaxRT = 127 // above every RTM_* Linux defines
)

// Attribute types.
const (
	iflaAddress   = 1
	iflaBroadcast = 2
	iflaIfname    = 3
	iflaMTU       = 4
	iflaStats     = 7
	iflaTxQLen    = 13
	iflaOperstate = 16
	iflaLinkmode  = 17
	iflaStats64   = 23
	iflaCarrier   = 33

	ifaAddress   = 1
	ifaLocal     = 2
	ifaLabel     = 3
	ifaBroadcast = 4
	ifaCacheinfo = 6
	ifaFlags     = 8

	rtaDst     = 1
	rtaOif     = 4
	rtaGateway = 5
	rtaPrefsrc = 7
	rtaTable   = 15
)

// Multicast groups (RTNLGRP_*).
const (
	grpIPv4Addr  = 5
	grpIPv4Route = 7
	grpIPv6Addr  = 9
	grpIPv6Route = 11
)

const (
	iffUp        = 0x1
	iffRunning   = 0x40
	iffLowerUp   = 0x10000
	ifaPermanent = 0x80
	operUp       = 6
	operDown     = 2
	operUnknown  = 0
)

// Register makes socket(AF_NETLINK, _, NETLINK_ROUTE) available.
func Register() {
	netlink.RegisterProtocol(netlink.Route, handle)
}

func handle(c *vfs.Ctx, req netlink.Request, w *netlink.Writer) error {
	switch req.Type {
	case newLink, delLink, setLink, newAddr, delAddr, newRoute, delRoute:
		if c == nil || !c.Cred.Superuser() {
			return linux.EPERM // CAP_NET_ADMIN
		}
	}
	switch req.Type {
	case getLink:
		return getLinks(req, w)
	case newLink, setLink:
		return changeLink(req)
	case getAddr:
		return getAddrs(req, w)
	case newAddr, delAddr:
		return changeAddr(req)
	case getRoute:
		return getRoutes(req, w)
	case newRoute, delRoute:
		return changeRoute(req)
	}
	return linux.EOPNOTSUPP
}

// family reads the address family that starts every rtnetlink payload
// (a dump request may carry only that byte, struct rtgenmsg).
func family(p []byte) int {
	if len(p) == 0 {
		return linux.AF_UNSPEC
	}
	return int(p[0])
}

func afOf(a netip.Addr) uint8 {
	if a.Is4() {
		return linux.AF_INET
	}
	return linux.AF_INET6
}

// --- links ---

const ifinfoLen = 16

func getLinks(req netlink.Request, w *netlink.Writer) error {
	if w.Dump() {
		for _, l := range inet.Links() {
			w.Message(newLink, func(m *netlink.Builder) { putLink(m, l) })
		}
		return nil
	}
	l, err := findLink(req.Payload)
	if err != nil {
		return err
	}
	w.Message(newLink, func(m *netlink.Builder) { putLink(m, l) })
	return nil
}

// findLink is the link a request names: by ifi_index, else by
// IFLA_IFNAME.
func findLink(p []byte) (inet.Link, error) {
	if len(p) < ifinfoLen {
		return inet.Link{}, linux.EINVAL
	}
	if idx := int32(binary.LittleEndian.Uint32(p[4:])); idx != 0 {
		return inet.LinkByIndex(int(idx))
	}
	attrs, err := netlink.Attrs(p[ifinfoLen:])
	if err != nil {
		return inet.Link{}, err
	}
	for _, a := range attrs {
		if a.Type == iflaIfname {
			name := cstring(a.Value)
			for _, l := range inet.Links() {
				if l.Name == name {
					return l, nil
				}
			}
			return inet.Link{}, linux.ENODEV
		}
	}
	return inet.Link{}, linux.EINVAL
}

func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

func putLink(m *netlink.Builder, l inet.Link) {
	var h [ifinfoLen]byte
	binary.LittleEndian.PutUint16(h[2:], l.Type)
	binary.LittleEndian.PutUint32(h[4:], uint32(l.Index))
	binary.LittleEndian.PutUint32(h[8:], l.Flags)
	m.Bytes(h[:])
	m.String(iflaIfname, l.Name)
	m.U32(iflaTxQLen, l.TxQLen)
	oper, carrier := uint8(operDown), uint8(0)
	if l.Flags&iffLowerUp != 0 {
		carrier = 1
	}
	if l.Flags&iffUp != 0 && l.Flags&iffRunning != 0 {
		oper = operUp
		if l.Type == 772 { // lo: Linux reports its state as unknown
			oper = operUnknown
		}
	}
	m.U8(iflaOperstate, oper)
	m.U8(iflaLinkmode, 0)
	m.U32(iflaMTU, l.MTU)
	m.U8(iflaCarrier, carrier)
	m.Attr(iflaAddress, l.HWAddr)
	bcast := make([]byte, len(l.HWAddr))
	if l.Type == 1 { // Ethernet broadcast
		for i := range bcast {
			bcast[i] = 0xff
		}
	}
	m.Attr(iflaBroadcast, bcast)
	st := []uint64{l.Stats.RxPackets, l.Stats.TxPackets, l.Stats.RxBytes, l.Stats.TxBytes,
		l.Stats.RxErrors, l.Stats.TxErrors, l.Stats.RxDropped, l.Stats.TxDropped}
	// struct rtnl_link_stats64 (25 counters in Linux 6.1), then the
	// 32-bit struct rtnl_link_stats (24).
	s64 := make([]byte, 25*8)
	s32 := make([]byte, 24*4)
	for i, v := range st {
		binary.LittleEndian.PutUint64(s64[i*8:], v)
		binary.LittleEndian.PutUint32(s32[i*4:], uint32(v))
	}
	m.Attr(iflaStats64, s64)
	m.Attr(iflaStats, s32)
}

// changeLink sets an existing link's flags (only IFF_UP changes
// anything here) and MTU, as ip link set does over netlink.
func changeLink(req netlink.Request) error {
	l, err := findLink(req.Payload)
	if err != nil {
		if err == linux.ENODEV && req.Type == newLink && req.Flags&netlink.FlagCreate != 0 {
			return linux.EOPNOTSUPP // creating virtual links
		}
		return err
	}
	if req.Type == newLink && req.Flags&netlink.FlagExcl != 0 {
		return linux.EEXIST
	}
	flags := binary.LittleEndian.Uint32(req.Payload[8:])
	change := binary.LittleEndian.Uint32(req.Payload[12:])
	if change == 0 {
		change = ^uint32(0)
	}
	attrs, err := netlink.Attrs(req.Payload[ifinfoLen:])
	if err != nil {
		return err
	}
	for _, a := range attrs {
		if a.Type == iflaMTU {
			if len(a.Value) < 4 {
				return linux.EINVAL
			}
			if err := inet.SetLinkMTU(l.Index, binary.LittleEndian.Uint32(a.Value)); err != nil {
				return err
			}
		}
	}
	if change&iffUp != 0 {
		return inet.SetLinkUp(l.Index, flags&iffUp != 0)
	}
	return nil
}

// --- addresses ---

const ifaddrLen = 8

func getAddrs(req netlink.Request, w *netlink.Writer) error {
	if !w.Dump() {
		return linux.EOPNOTSUPP // Linux answers only dumps
	}
	fam := family(req.Payload)
	for _, a := range inet.Addrs() {
		if fam != linux.AF_UNSPEC && fam != int(afOf(a.Prefix.Addr())) {
			continue
		}
		w.Message(newAddr, func(m *netlink.Builder) { putAddr(m, a) })
	}
	return nil
}

func putAddr(m *netlink.Builder, a inet.Addr) {
	ip := a.Prefix.Addr()
	m.Bytes([]byte{afOf(ip), uint8(a.Prefix.Bits()), ifaPermanent, a.Scope,
		byte(a.Index), byte(a.Index >> 8), byte(a.Index >> 16), byte(a.Index >> 24)})
	m.Attr(ifaAddress, ip.AsSlice())
	if ip.Is4() {
		m.Attr(ifaLocal, ip.AsSlice())
		if a.Prefix.Bits() < 31 && !ip.IsLoopback() {
			b := ip.As4()
			mask := ^uint32(0) >> a.Prefix.Bits()
			v := binary.BigEndian.Uint32(b[:]) | mask
			binary.BigEndian.PutUint32(b[:], v)
			m.Attr(ifaBroadcast, b[:])
		}
		m.String(ifaLabel, a.Label)
	}
	m.U32(ifaFlags, ifaPermanent)
	ci := make([]byte, 16) // preferred and valid lifetimes forever
	binary.LittleEndian.PutUint32(ci, ^uint32(0))
	binary.LittleEndian.PutUint32(ci[4:], ^uint32(0))
	m.Attr(ifaCacheinfo, ci)
}

func changeAddr(req netlink.Request) error {
	p := req.Payload
	if len(p) < ifaddrLen {
		return linux.EINVAL
	}
	fam, plen := int(p[0]), int(p[1])
	index := int(binary.LittleEndian.Uint32(p[4:]))
	attrs, err := netlink.Attrs(p[ifaddrLen:])
	if err != nil {
		return err
	}
	var local, addr []byte
	for _, a := range attrs {
		switch a.Type {
		case ifaLocal:
			local = a.Value
		case ifaAddress:
			addr = a.Value
		}
	}
	if local == nil || fam == linux.AF_INET6 {
		local = addr
	}
	ip, ok := netip.AddrFromSlice(local)
	switch {
	case fam != linux.AF_INET && fam != linux.AF_INET6:
		return linux.EAFNOSUPPORT
	case !ok || (fam == linux.AF_INET) != ip.Is4():
		return linux.EINVAL
	case plen > ip.BitLen():
		return linux.EINVAL
	}
	pfx := netip.PrefixFrom(ip, plen)
	grp, typ := uint(grpIPv4Addr), uint16(req.Type)
	if ip.Is6() {
		grp = grpIPv6Addr
	}
	if req.Type == newAddr {
		err := inet.AddAddr(index, pfx)
		if err == linux.EEXIST && req.Flags&netlink.FlagExcl == 0 && req.Flags&netlink.FlagReplace != 0 {
			return nil
		}
		if err != nil {
			return err
		}
	} else if err := inet.DelAddr(index, pfx); err != nil {
		return err
	}
	label := ""
	if l, err := inet.LinkByIndex(index); err == nil {
		label = l.Name
	}
	netlink.Notify(netlink.Route, grp, typ, func(m *netlink.Builder) {
		putAddr(m, inet.Addr{Index: index, Prefix: pfx, Scope: inet.ScopeOf(ip), Label: label})
	})
	return nil
}

// --- routes ---

const rtmsgLen = 12

func getRoutes(req netlink.Request, w *netlink.Writer) error {
	fam := family(req.Payload)
	if !w.Dump() {
		return lookupRoute(req, w)
	}
	for _, r := range inet.Routes() {
		if fam != linux.AF_UNSPEC && fam != int(afOf(r.Dst.Addr())) {
			continue
		}
		w.Message(newRoute, func(m *netlink.Builder) { putRoute(m, r, r.Dst) })
	}
	return nil
}

// prefsrc is the address a kernel prefix route was made for.
func prefsrc(r inet.Route) (netip.Addr, bool) {
	if r.Proto != inet.ProtoKernel || r.Gateway.IsValid() {
		return netip.Addr{}, false
	}
	for _, a := range inet.Addrs() {
		if a.Index == r.Index && a.Prefix.Masked() == r.Dst {
			return a.Prefix.Addr(), true
		}
	}
	return netip.Addr{}, false
}

func putRoute(m *netlink.Builder, r inet.Route, dst netip.Prefix) {
	m.Bytes([]byte{afOf(dst.Addr()), uint8(dst.Bits()), 0, 0, r.Table, r.Proto, r.Scope, r.Type, 0, 0, 0, 0})
	m.U32(rtaTable, uint32(r.Table))
	if dst.Bits() > 0 {
		m.Attr(rtaDst, dst.Addr().AsSlice())
	}
	if src, ok := prefsrc(r); ok {
		m.Attr(rtaPrefsrc, src.AsSlice())
	}
	if r.Gateway.IsValid() {
		m.Attr(rtaGateway, r.Gateway.AsSlice())
	}
	m.U32(rtaOif, uint32(r.Index))
}

// lookupRoute answers ip route get: the route the longest matching
// prefix gives for RTA_DST, as a host route; none is ENETUNREACH.
func lookupRoute(req netlink.Request, w *netlink.Writer) error {
	p := req.Payload
	if len(p) < rtmsgLen {
		return linux.EINVAL
	}
	attrs, err := netlink.Attrs(p[rtmsgLen:])
	if err != nil {
		return err
	}
	var dst netip.Addr
	for _, a := range attrs {
		if a.Type == rtaDst {
			var ok bool
			if dst, ok = netip.AddrFromSlice(a.Value); !ok {
				return linux.EINVAL
			}
		}
	}
	if !dst.IsValid() {
		dst = netip.IPv4Unspecified()
		if family(p) == linux.AF_INET6 {
			dst = netip.IPv6Unspecified()
		}
	}
	best, found := inet.Route{}, false
	for _, r := range inet.Routes() {
		if r.Dst.Contains(dst) && (!found || r.Dst.Bits() > best.Dst.Bits()) {
			best, found = r, true
		}
	}
	if !found {
		return linux.ENETUNREACH
	}
	w.Message(newRoute, func(m *netlink.Builder) {
		putRoute(m, best, netip.PrefixFrom(dst, dst.BitLen()))
	})
	return nil
}

func changeRoute(req netlink.Request) error {
	p := req.Payload
	if len(p) < rtmsgLen {
		return linux.EINVAL
	}
	fam := int(p[0])
	if fam != linux.AF_INET && fam != linux.AF_INET6 {
		return linux.EAFNOSUPPORT
	}
	r := inet.Route{Table: p[4], Proto: p[5], Scope: p[6], Type: p[7]}
	attrs, err := netlink.Attrs(p[rtmsgLen:])
	if err != nil {
		return err
	}
	var dst netip.Addr
	table := uint32(r.Table)
	for _, a := range attrs {
		switch a.Type {
		case rtaDst:
			var ok bool
			if dst, ok = netip.AddrFromSlice(a.Value); !ok {
				return linux.EINVAL
			}
		case rtaGateway:
			var ok bool
			if r.Gateway, ok = netip.AddrFromSlice(a.Value); !ok {
				return linux.EINVAL
			}
		case rtaOif:
			if len(a.Value) < 4 {
				return linux.EINVAL
			}
			r.Index = int(binary.LittleEndian.Uint32(a.Value))
		case rtaTable:
			if len(a.Value) < 4 {
				return linux.EINVAL
			}
			table = binary.LittleEndian.Uint32(a.Value)
		}
	}
	if !dst.IsValid() {
		dst = netip.IPv4Unspecified()
		if fam == linux.AF_INET6 {
			dst = netip.IPv6Unspecified()
		}
	}
	if (fam == linux.AF_INET) != dst.Is4() || int(p[1]) > dst.BitLen() {
		return linux.EINVAL
	}
	r.Dst = netip.PrefixFrom(dst, int(p[1]))
	switch table {
	case 0:
		table = inet.TableMain
	case inet.TableMain, inet.TableLocal:
	default:
		return linux.EOPNOTSUPP // policy routing's other tables
	}
	r.Table = uint8(table)
	grp := uint(grpIPv4Route)
	if fam == linux.AF_INET6 {
		grp = grpIPv6Route
	}
	if req.Type == delRoute {
		if err := inet.DelRoute(r); err != nil {
			return err
		}
	} else {
		if r.Type != inet.TypeUnicast {
			return linux.EOPNOTSUPP // local, blackhole, unreachable, ... routes
		}
		if !routeExists(r) && req.Flags&netlink.FlagCreate == 0 {
			return linux.ENOENT
		}
		if req.Flags&netlink.FlagExcl != 0 && routeExists(r) {
			return linux.EEXIST
		}
		added, err := inet.AddRoute(r, req.Flags&netlink.FlagReplace != 0)
		if err != nil {
			return err
		}
		r = added
	}
	netlink.Notify(netlink.Route, grp, uint16(req.Type), func(m *netlink.Builder) { putRoute(m, r, r.Dst.Masked()) })
	return nil
}

func routeExists(r inet.Route) bool {
	for _, x := range inet.Routes() {
		if x.Dst == r.Dst.Masked() && x.Table == r.Table {
			return true
		}
	}
	return false
}
