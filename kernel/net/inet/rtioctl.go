package inet

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"gvisor.dev/gvisor/pkg/tcpip"

	"shortbread/kernel/abi/linux"
)

// The routing ioctls of busybox route and net-tools (struct rtentry,
// IPv4 only: an AF_INET6 socket's SIOCADDRT takes struct in6_rtmsg,
// which nothing we run uses).
const (
	SIOCADDRT = 0x890b
	SIOCDELRT = 0x890c

	// RtentrySize is sizeof(struct rtentry) on x86-64.
	RtentrySize = 120

	rtfUp      = 0x0001
	rtfGateway = 0x0002
	rtfHost    = 0x0004
	rtfReject  = 0x0200
)

// Rtentry is struct rtentry as the ioctl handler decoded it; Dev is the
// interface name rt_dev points to ("" when rt_dev is NULL).
type Rtentry struct {
	Dst, Gateway, Genmask [16]byte // struct sockaddr
	Flags                 uint16
	Metric                int16
	DevPtr                uint64
	Dev                   string
}

// ParseRtentry decodes the RtentrySize bytes of a struct rtentry (the
// name rt_dev points to is the caller's to fetch).
func ParseRtentry(b []byte) Rtentry {
	var e Rtentry
	copy(e.Dst[:], b[8:24])
	copy(e.Gateway[:], b[24:40])
	copy(e.Genmask[:], b[40:56])
	e.Flags = binary.LittleEndian.Uint16(b[56:])
	e.Metric = int16(binary.LittleEndian.Uint16(b[80:]))
	e.DevPtr = binary.LittleEndian.Uint64(b[88:])
	return e
}

// sockaddr4 is a struct sockaddr's family and IPv4 address.
func sockaddr4(sa [16]byte) (family uint16, a netip.Addr) {
	return binary.LittleEndian.Uint16(sa[:]), netip.AddrFrom4([4]byte(sa[4:8]))
}

// RouteIoctl adds (SIOCADDRT) or deletes (SIOCDELRT) the IPv4 route e
// describes in the main table, checking it as Linux's
// rtentry_to_fib_config does: an AF_INET destination
// (EAFNOSUPPORT), a contiguous mask in an AF_INET genmask or none at all
// and no host bits in the destination (EINVAL), a device that exists
// (ENODEV), RTF_GATEWAY only with a gateway (EINVAL). A route added
// twice is EEXIST, one not there to delete ESRCH. Linux keeps a metric
// as the route's priority; netstack's table has none, so a metric is
// refused (EOPNOTSUPP) rather than dropped, and so is RTF_REJECT (an
// unreachable route).
func RouteIoctl(cmd uint64, e Rtentry) error {
	fam, dst := sockaddr4(e.Dst)
	if fam != linux.AF_INET {
		return linux.EAFNOSUPPORT
	}
	mfam, mask := sockaddr4(e.Genmask)
	bits := 0
	switch {
	case e.Flags&rtfHost != 0:
		bits = 32
	case mfam == linux.AF_INET:
		if bits = prefixLen(toTcpip(mask)); bits < 0 {
			return linux.EINVAL
		}
	case mfam != 0 || mask != netip.IPv4Unspecified():
		return linux.EINVAL
	}
	p := netip.PrefixFrom(dst, bits)
	if p.Masked() != p {
		return linux.EINVAL
	}
	r := Route{Dst: p, Table: TableMain, Type: TypeUnicast, Proto: ProtoBoot}
	if e.DevPtr != 0 {
		// "eth0:1" names an alias of eth0 to Linux; the route is eth0's.
		name, _, _ := strings.Cut(e.Dev, ":")
		id, _, err := nicNamed(name)
		if err != nil {
			return err
		}
		r.Index = int(id)
	}
	if gfam, gw := sockaddr4(e.Gateway); gfam == linux.AF_INET && !gw.IsUnspecified() {
		r.Gateway = gw
	}
	if cmd == SIOCDELRT {
		r.Scope, r.Type, r.Proto = ScopeNowhere, 0, 0
		return DelRoute(r)
	}
	if e.Flags&rtfGateway != 0 && !r.Gateway.IsValid() {
		return linux.EINVAL
	}
	if e.Metric > 1 || e.Flags&rtfReject != 0 {
		return linux.EOPNOTSUPP
	}
	r.Scope = ScopeLink
	if r.Gateway.IsValid() {
		r.Scope = ScopeUniverse
	}
	_, err := AddRoute(r, false)
	return err
}

// ProcNetRoute is /proc/net/route: the main table's IPv4 routes in
// Linux's fib_route_seq_show layout, addresses and masks as the
// network-order word printed in hex, every line padded to 127
// characters. Metric, MTU, window and IRTT are 0: netstack's routes keep
// none of them.
func ProcNetRoute() []byte {
	var b strings.Builder
	line := func(s string) { fmt.Fprintf(&b, "%-127s\n", s) }
	line("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT")
	infos := Stack().NICInfo()
	// An address or mask as Linux prints the network-order word: in the
	// host's (little-endian) order.
	word := func(b []byte) uint32 {
		if len(b) != 4 {
			return 0
		}
		return binary.LittleEndian.Uint32(b)
	}
	// Linux walks its trie: destinations in ascending order, the longer
	// prefix first where two share one.
	var routes []Route
	for _, r := range Routes() {
		if r.Table == TableMain && r.Dst.Addr().Is4() {
			routes = append(routes, r)
		}
	}
	slices.SortStableFunc(routes, func(a, b Route) int {
		if c := a.Dst.Addr().Compare(b.Dst.Addr()); c != 0 {
			return c
		}
		return b.Dst.Bits() - a.Dst.Bits()
	})
	for _, r := range routes {
		flags := rtfUp
		if r.Gateway.IsValid() {
			flags |= rtfGateway
		}
		if r.Dst.Bits() == 32 {
			flags |= rtfHost
		}
		dev := infos[tcpip.NICID(r.Index)].Name
		if dev == "" {
			dev = "*"
		}
		sub := subnetOf(r.Dst)
		mask := sub.Mask()
		var gw []byte
		if r.Gateway.IsValid() {
			gw = r.Gateway.AsSlice()
		}
		line(fmt.Sprintf("%s\t%08X\t%08X\t%04X\t%d\t%d\t%d\t%08X\t%d\t%d\t%d",
			dev, word(r.Dst.Addr().AsSlice()), word(gw), flags, 0, 0, 0, word(mask.AsSlice()), 0, 0, 0))
	}
	return []byte(b.String())
}
