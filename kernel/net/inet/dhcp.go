package inet

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"shortbread/kernel/net/dhcp"
)

// dhcpLink is kernel/net/dhcp's Conn on one interface: it sends IPv4
// datagrams to the Ethernet broadcast address and reads every IPv4
// datagram the interface receives, as a packet socket would, because
// the interface has no address yet for the stack's own UDP to use.
type dhcpLink struct {
	id tcpip.NICID
	rx chan []byte
}

// HandlePacket is stack.PacketEndpoint: a copy of each IPv4 datagram
// received, without its link header. Outgoing ones are ours.
func (l *dhcpLink) HandlePacket(_ tcpip.NICID, _ tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	if pkt.PktType == tcpip.PacketOutgoing {
		return
	}
	b := pkt.ToBuffer()
	b.TrimFront(int64(len(pkt.LinkHeader().Slice())))
	d := b.Flatten()
	b.Release()
	select {
	case l.rx <- d:
	default: // the client is behind; DHCP retransmits
	}
}

func (l *dhcpLink) Send(d []byte) error {
	err := Stack().WritePacketToRemote(l.id, header.EthernetBroadcastAddress, ipv4.ProtocolNumber, buffer.MakeWithData(d))
	if err != nil {
		return fmt.Errorf("inet: DHCP send: %v", err)
	}
	return nil
}

func (l *dhcpLink) Recv(deadline time.Time) ([]byte, error) {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case d := <-l.rx:
		return d, nil
	case <-t.C:
		return nil, dhcp.ErrTimeout
	}
}

// carrierWait bounds how long ip= waits for a card's link. A card may
// come out of its reset with the link still negotiating (the 82576 does,
// for about half a second); until it is up, every DHCP try and every
// packet init sends would fail at once. Linux's ipconfig waits the same
// way, up to 120 s, for static and DHCP configurations alike.
const carrierWait = 10 * time.Second

// WaitCarrier waits, bounded, for interface index's card to have a link.
// Cards report their link from an interrupt and have no waiting
// interface; this runs once, at boot, so a short sleep between looks is
// enough.
func WaitCarrier(index int, log func(string, ...any)) {
	c := card(tcpip.NICID(index))
	if c == nil || c.LinkUp() {
		return
	}
	for end := time.Now().Add(carrierWait); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if c.LinkUp() {
			return
		}
	}
	if l, err := LinkByIndex(index); err == nil {
		log("IP-Config: %s: no carrier after %v; going on without", l.Name, carrierWait)
	}
}

// pnp is /proc/net/pnp: what ip= configured, in Linux's ipconfig format.
var pnp struct {
	sync.Mutex
	text string
}

// ProcNetPnp returns /proc/net/pnp.
func ProcNetPnp() []byte {
	pnp.Lock()
	defer pnp.Unlock()
	return []byte(pnp.text)
}

// ConfigureDHCP acquires a lease for interface index, as Linux's
// ip=dhcp does at boot, and applies it: the address with its subnet
// route, a default route through the router, and /proc/net/pnp's
// nameservers. host, if not empty, is sent to the server as our name.
func ConfigureDHCP(index int, host string, log func(string, ...any)) (dhcp.Lease, error) {
	l, err := LinkByIndex(index)
	if err != nil {
		return dhcp.Lease{}, err
	}
	if len(l.HWAddr) != 6 {
		return dhcp.Lease{}, fmt.Errorf("inet: %s: no Ethernet address for DHCP", l.Name)
	}
	if l.Flags&iffUp == 0 {
		if err := SetLinkUp(index, true); err != nil {
			return dhcp.Lease{}, err
		}
	}
	WaitCarrier(index, log)
	link := &dhcpLink{id: tcpip.NICID(index), rx: make(chan []byte, 16)}
	s := Stack()
	if e := s.RegisterPacketEndpoint(link.id, ipv4.ProtocolNumber, link); e != nil {
		return dhcp.Lease{}, fmt.Errorf("inet: %s: %v", l.Name, e)
	}
	defer s.UnregisterPacketEndpoint(link.id, ipv4.ProtocolNumber, link)
	cfg := dhcp.Config{MAC: [6]byte(l.HWAddr), Host: host, Log: log, XID: func() uint32 {
		var b [4]byte
		rand.Read(b[:])
		return binary.BigEndian.Uint32(b[:])
	}}
	lease, err := dhcp.Acquire(link, cfg)
	if err != nil {
		return lease, fmt.Errorf("inet: %s: %w", l.Name, err)
	}
	if err := AddAddr(index, lease.Addr); err != nil {
		return lease, fmt.Errorf("inet: %s: address %v: %w", l.Name, lease.Addr, err)
	}
	if lease.Router.IsValid() {
		r := Route{Dst: netip.PrefixFrom(netip.IPv4Unspecified(), 0), Gateway: lease.Router, Index: index,
			Table: TableMain, Type: TypeUnicast, Proto: ProtoBoot, Scope: ScopeUniverse}
		if _, err := AddRoute(r, false); err != nil {
			return lease, fmt.Errorf("inet: %s: default route via %v: %w", l.Name, lease.Router, err)
		}
	}
	var b strings.Builder
	b.WriteString("#PROTO: DHCP\n")
	if lease.Domain != "" {
		fmt.Fprintf(&b, "domain %s\n", lease.Domain)
	}
	for _, a := range lease.DNS {
		fmt.Fprintf(&b, "nameserver %v\n", a)
	}
	if lease.Server.IsValid() {
		fmt.Fprintf(&b, "bootserver %v\n", lease.Server)
	}
	pnp.Lock()
	pnp.text = b.String()
	pnp.Unlock()
	return lease, nil
}

// SetStaticPnp records a static ip= configuration in /proc/net/pnp as
// Linux does (no name servers known).
func SetStaticPnp() {
	pnp.Lock()
	pnp.text = "#MANUAL\n"
	pnp.Unlock()
}
