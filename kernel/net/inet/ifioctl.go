package inet

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"shortbread/kernel/abi/linux"
)

// The interface ioctls (linux/sockios.h). Linux answers them on a socket
// of any family, which is how ifconfig and busybox ip configure links.
const (
	SIOCGIFNAME    = 0x8910
	SIOCGIFCONF    = 0x8912
	SIOCGIFFLAGS   = 0x8913
	SIOCSIFFLAGS   = 0x8914
	SIOCGIFADDR    = 0x8915
	SIOCSIFADDR    = 0x8916
	SIOCGIFBRDADDR = 0x8919
	SIOCGIFNETMASK = 0x891b
	SIOCSIFNETMASK = 0x891c
	SIOCGIFMETRIC  = 0x891d
	SIOCGIFMTU     = 0x8921
	SIOCSIFMTU     = 0x8922
	SIOCGIFHWADDR  = 0x8927
	SIOCGIFINDEX   = 0x8933
	SIOCGIFTXQLEN  = 0x8942
)

// IfreqSize is sizeof(struct ifreq): a 16-byte name and a 24-byte union.
const IfreqSize = 40

// Interface flags (linux/if.h).
const (
	iffUp       = 0x1
	iffLoopback = 0x8
	iffRunning  = 0x40
	iffLowerUp  = 0x10000
)

// ifCmds are the ifreq ioctls IfIoctl answers (SIOCGIFCONF, whose
// argument is not an ifreq, is IfConf's), true for those that change an
// interface and need CAP_NET_ADMIN.
var ifCmds = map[uint64]bool{
	SIOCGIFNAME: false, SIOCGIFFLAGS: false, SIOCGIFADDR: false, SIOCGIFBRDADDR: false,
	SIOCGIFNETMASK: false, SIOCGIFMETRIC: false, SIOCGIFMTU: false, SIOCGIFHWADDR: false,
	SIOCGIFINDEX: false, SIOCGIFTXQLEN: false,
	SIOCSIFFLAGS: true, SIOCSIFADDR: true, SIOCSIFNETMASK: true, SIOCSIFMTU: true,
}

// IsIfIoctl reports whether cmd is an interface ioctl IfIoctl answers.
func IsIfIoctl(cmd uint64) bool {
	_, ok := ifCmds[cmd]
	return ok
}

// IsIfSet reports whether cmd changes an interface (CAP_NET_ADMIN).
func IsIfSet(cmd uint64) bool { return ifCmds[cmd] }

// nicByName finds an interface by the NUL-terminated name in an ifreq.
func nicByName(req *[IfreqSize]byte) (tcpip.NICID, stack.NICInfo, error) {
	name := req[:16]
	if i := slices.Index(name, 0); i >= 0 {
		name = name[:i]
	} else {
		return 0, stack.NICInfo{}, linux.ENODEV // Linux: a name must fit with its NUL
	}
	return nicNamed(string(name))
}

// nicNamed finds an interface by name, or ENODEV.
func nicNamed(name string) (tcpip.NICID, stack.NICInfo, error) {
	for id, info := range Stack().NICInfo() {
		if info.Name == name {
			return id, info, nil
		}
	}
	return 0, stack.NICInfo{}, linux.ENODEV
}

// ipv4Of is an interface's first IPv4 address.
func ipv4Of(info stack.NICInfo) (tcpip.AddressWithPrefix, bool) {
	for _, a := range info.ProtocolAddresses {
		if a.Protocol == ipv4.ProtocolNumber {
			return a.AddressWithPrefix, true
		}
	}
	return tcpip.AddressWithPrefix{}, false
}

// putSockaddrIn writes a sockaddr_in for a at the union of an ifreq.
func putSockaddrIn(req *[IfreqSize]byte, a tcpip.Address) {
	clear(req[16:])
	binary.LittleEndian.PutUint16(req[16:], linux.AF_INET)
	if a.Len() == 4 {
		b := a.As4()
		copy(req[20:24], b[:])
	}
}

// sockaddrIn reads the IPv4 address of the sockaddr_in in an ifreq.
func sockaddrIn(req *[IfreqSize]byte) (tcpip.Address, error) {
	if binary.LittleEndian.Uint16(req[16:]) != linux.AF_INET {
		return tcpip.Address{}, linux.EINVAL
	}
	return tcpip.AddrFrom4([4]byte(req[20:24])), nil
}

// up is an interface's administrative state: netstack reports every NIC
// as up and an enabled one as running, so running is what ifconfig's
// up and down set.
func up(info stack.NICInfo) bool { return info.Flags.Running }

// ifFlags are interface id's flags: up as its administrative state;
// running and lower-up as well when the card has carrier (a card that
// does not say is taken to have it).
func ifFlags(id tcpip.NICID, info stack.NICInfo) uint32 {
	var f uint32
	if up(info) {
		f |= iffUp
		if c := card(id); c == nil || c.LinkUp() {
			f |= iffRunning | iffLowerUp
		}
	}
	if info.Flags.Loopback {
		f |= iffLoopback
	} else {
		f |= iffBroadcast | iffMulticast // Ethernet, as Linux sets them
	}
	return f
}

// IfIoctl answers one interface ioctl on the ifreq req, in place. The
// caller has checked the privilege the set commands need.
func IfIoctl(cmd uint64, req *[IfreqSize]byte) error {
	s := Stack()
	if cmd == SIOCGIFNAME {
		idx := int32(binary.LittleEndian.Uint32(req[16:]))
		info, ok := s.NICInfo()[tcpip.NICID(idx)]
		if idx <= 0 || !ok {
			return linux.ENODEV
		}
		clear(req[:16])
		copy(req[:15], info.Name)
		return nil
	}
	id, info, err := nicByName(req)
	if err != nil {
		return err
	}
	switch cmd {
	case SIOCGIFFLAGS:
		clear(req[16:])
		binary.LittleEndian.PutUint16(req[16:], uint16(ifFlags(id, info)))
	case SIOCSIFFLAGS:
		on := binary.LittleEndian.Uint16(req[16:])&iffUp != 0
		var e tcpip.Error
		switch {
		case on && !up(info):
			e = s.EnableNIC(id)
		case !on && up(info):
			e = s.DisableNIC(id)
		}
		if e != nil {
			return errno(e)
		}
	case SIOCGIFADDR, SIOCGIFNETMASK, SIOCGIFBRDADDR:
		a, ok := ipv4Of(info)
		if !ok {
			return linux.EADDRNOTAVAIL
		}
		sub := a.Subnet()
		switch cmd {
		case SIOCGIFADDR:
			putSockaddrIn(req, a.Address)
		case SIOCGIFNETMASK:
			m := sub.Mask()
			putSockaddrIn(req, tcpip.AddrFromSlice(m.AsSlice()))
		default:
			if info.Flags.Loopback { // lo has no broadcast address
				return linux.EADDRNOTAVAIL
			}
			putSockaddrIn(req, sub.Broadcast())
		}
	case SIOCSIFADDR, SIOCSIFNETMASK:
		return setIPv4(id, info, cmd, req)
	case SIOCGIFMETRIC:
		clear(req[16:])
	case SIOCGIFMTU:
		clear(req[16:])
		binary.LittleEndian.PutUint32(req[16:], info.MTU)
	case SIOCSIFMTU:
		mtu := int32(binary.LittleEndian.Uint32(req[16:]))
		if mtu < 68 || mtu > loopbackMTU*4 { // Linux: ETH_MIN_MTU .. the device's maximum
			return linux.EINVAL
		}
		if e := s.SetNICMTU(id, uint32(mtu)); e != nil {
			return errno(e)
		}
	case SIOCGIFHWADDR:
		clear(req[16:])
		binary.LittleEndian.PutUint16(req[16:], arphrd(info.ARPHardwareType))
		copy(req[18:24], info.LinkAddress)
	case SIOCGIFINDEX:
		clear(req[16:])
		binary.LittleEndian.PutUint32(req[16:], uint32(id))
	case SIOCGIFTXQLEN:
		clear(req[16:])
		if !info.Flags.Loopback {
			binary.LittleEndian.PutUint32(req[16:], 1000) // Linux's default for Ethernet
		}
	default:
		return linux.ENOTTY
	}
	return nil
}

// setIPv4 replaces an interface's IPv4 address or its prefix, and the
// route to its subnet, as Linux's devinet ioctls do for the primary
// address.
func setIPv4(id tcpip.NICID, info stack.NICInfo, cmd uint64, req *[IfreqSize]byte) error {
	s := Stack()
	v, err := sockaddrIn(req)
	if err != nil {
		return err
	}
	old, had := ipv4Of(info)
	nw := old
	if cmd == SIOCSIFADDR {
		nw = tcpip.AddressWithPrefix{Address: v, PrefixLen: defaultPrefix(v)}
	} else {
		if !had {
			return linux.EADDRNOTAVAIL
		}
		n := prefixLen(v)
		if n < 0 {
			return linux.EINVAL
		}
		nw.PrefixLen = n
	}
	if had {
		if e := s.RemoveAddress(id, old.Address); e != nil {
			return errno(e)
		}
	}
	pa := tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber, AddressWithPrefix: nw}
	if e := s.AddProtocolAddress(id, pa, stack.AddressProperties{}); e != nil {
		return errno(e)
	}
	var routes []tcpip.Route
	for _, r := range s.GetRouteTable() {
		if !(r.NIC == id && had && r.Destination.Equal(old.Subnet())) {
			routes = append(routes, r)
		}
	}
	routes = append(routes, tcpip.Route{Destination: nw.Subnet(), NIC: id})
	s.SetRouteTable(routes)
	return nil
}

// defaultPrefix is the classful prefix Linux gives an address set
// without a netmask.
func defaultPrefix(a tcpip.Address) int {
	switch b := a.As4(); {
	case b[0] < 128:
		return 8
	case b[0] < 192:
		return 16
	default:
		return 24
	}
}

// prefixLen is the length of a contiguous netmask, or -1.
func prefixLen(mask tcpip.Address) int {
	m := binary.BigEndian.Uint32(mask.AsSlice())
	n := 0
	for m&0x80000000 != 0 {
		n++
		m <<= 1
	}
	if m != 0 {
		return -1
	}
	return n
}

// nics returns every interface's information and their ids in order
// (lo first, as Linux lists interfaces by index).
func nics() (map[tcpip.NICID]stack.NICInfo, []tcpip.NICID) {
	infos := Stack().NICInfo()
	ids := slices.Sorted(maps.Keys(infos))
	return infos, ids
}

// IfConf returns one ifreq per interface with an IPv4 address, in
// interface order, as SIOCGIFCONF lists them.
func IfConf() [][IfreqSize]byte {
	infos, ids := nics()
	var out [][IfreqSize]byte
	for _, id := range ids {
		info := infos[id]
		a, ok := ipv4Of(info)
		if !ok || !up(info) {
			continue
		}
		var r [IfreqSize]byte
		copy(r[:15], info.Name)
		putSockaddrIn(&r, a.Address)
		out = append(out, r)
	}
	return out
}

// ProcNetDev returns /proc/net/dev: each interface's packet counters in
// Linux's layout (what ifconfig -a and busybox ip list interfaces from).
func ProcNetDev() []byte {
	b := []byte("Inter-|   Receive                                                |  Transmit\n" +
		" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n")
	infos, ids := nics()
	for _, id := range ids {
		s := linkStats(id, infos[id])
		b = fmt.Appendf(b, "%6s: %7d %7d %4d %4d %4d %5d %10d %9d %8d %7d %4d %4d %4d %5d %7d %10d\n",
			infos[id].Name, s.RxBytes, s.RxPackets, s.RxErrors, s.RxDropped, 0, 0, 0, 0,
			s.TxBytes, s.TxPackets, s.TxErrors, s.TxDropped, 0, 0, 0, 0)
	}
	return b
}

// arphrd is Linux's ARPHRD_* number for netstack's hardware type.
func arphrd(t header.ARPHardwareType) uint16 {
	switch t {
	case header.ARPHardwareEther:
		return 1 // ARPHRD_ETHER
	case header.ARPHardwareLoopback:
		return 772 // ARPHRD_LOOPBACK
	}
	return 0xfffe // ARPHRD_NONE
}
