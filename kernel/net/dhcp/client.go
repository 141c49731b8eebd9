package dhcp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
	"time"
)

// Conn is the link the client speaks on: whole IPv4 datagrams.
type Conn interface {
	// Send broadcasts an IPv4 datagram on the link.
	Send(datagram []byte) error
	// Recv returns the next IPv4 datagram the link received, or
	// ErrTimeout once the deadline passes.
	Recv(deadline time.Time) ([]byte, error)
}

// ErrTimeout is Recv's error when nothing came before the deadline.
var ErrTimeout = errors.New("dhcp: timed out")

// errNotForUs marks datagrams that are not DHCP replies at all.
var errNotForUs = errors.New("dhcp: not a reply to the client port")

// Lease is what a server granted.
type Lease struct {
	Addr     netip.Prefix // the address and the subnet's length
	Router   netip.Addr   // the default gateway; invalid: none offered
	DNS      []netip.Addr
	Server   netip.Addr // the server that granted it
	Host     string     // option 12, if the server names us
	Domain   string     // option 15
	Duration time.Duration
}

// Config is what Acquire needs besides the link.
type Config struct {
	MAC   [6]byte
	Host  string        // sent as option 12 when not empty
	Tries int           // exchanges before giving up; 0: 5
	Wait  time.Duration // for a reply to the first try, doubled each try; 0: 1 s
	XID   func() uint32 // transaction IDs; must differ between tries
	Log   func(format string, args ...any)
	Now   func() time.Time // the clock; nil: time.Now
}

// Acquire runs DISCOVER, OFFER, REQUEST, ACK until a server grants a
// lease, a try per doubling wait. Replies that are malformed, for
// another transaction or client, or that offer an unusable address are
// logged and ignored; a NAK starts the next try.
func Acquire(c Conn, cfg Config) (Lease, error) {
	if cfg.Tries == 0 {
		cfg.Tries = 5
	}
	if cfg.Wait == 0 {
		cfg.Wait = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	start := cfg.Now()
	wait := cfg.Wait
	var last error = ErrTimeout
	for try := 0; try < cfg.Tries; try, wait = try+1, min(2*wait, 8*cfg.Wait) {
		l, err := exchange(c, &cfg, start, wait)
		if err == nil {
			return l, nil
		}
		cfg.Log("dhcp: try %d: %v", try+1, err)
		last = err
	}
	return Lease{}, fmt.Errorf("dhcp: no lease after %d tries: %w", cfg.Tries, last)
}

// base fills in what every request carries.
func base(cfg *Config, xid uint32, start time.Time, typ byte) *message {
	m := &message{op: opRequest, xid: xid, flags: flagBroadcast, chaddr: cfg.MAC}
	m.secs = uint16(min(cfg.Now().Sub(start)/time.Second, 0xffff))
	m.set(optMsgType, []byte{typ})
	m.set(optClientID, append([]byte{htypeEthernet}, cfg.MAC[:]...))
	m.set(optMaxSize, []byte{576 >> 8, 576 & 0xff})
	m.set(optParams, []byte{optSubnetMask, optRouter, optDNS, optHostName, optDomainName, optLeaseTime, optServerID})
	if cfg.Host != "" {
		m.set(optHostName, []byte(cfg.Host))
	}
	return m
}

// exchange is one DISCOVER/REQUEST round.
func exchange(c Conn, cfg *Config, start time.Time, wait time.Duration) (Lease, error) {
	xid := cfg.XID()
	if err := c.Send(wrap(base(cfg, xid, start, msgDiscover).marshal())); err != nil {
		return Lease{}, err
	}
	offer, err := await(c, cfg, xid, cfg.Now().Add(wait), func(m *message) bool { return m.msgType() == msgOffer })
	if err != nil {
		return Lease{}, fmt.Errorf("no offer: %w", err)
	}
	server, _ := offer.addr4(optServerID)
	req := base(cfg, xid, start, msgRequest)
	req.set(optRequested, offer.yiaddr[:])
	req.set(optServerID, server[:])
	if err := c.Send(wrap(req.marshal())); err != nil {
		return Lease{}, err
	}
	ack, err := await(c, cfg, xid, cfg.Now().Add(wait), func(m *message) bool {
		id, _ := m.addr4(optServerID)
		return (m.msgType() == msgAck || m.msgType() == msgNak) && id == server
	})
	if err != nil {
		return Lease{}, fmt.Errorf("no answer to the request for %v: %w", netip.AddrFrom4(offer.yiaddr), err)
	}
	if ack.msgType() == msgNak {
		return Lease{}, fmt.Errorf("server %v refused %v: %q", netip.AddrFrom4(server), netip.AddrFrom4(offer.yiaddr), ack.opts[optMessage])
	}
	if ack.yiaddr != offer.yiaddr {
		return Lease{}, fmt.Errorf("server %v acknowledged %v, not the %v offered", netip.AddrFrom4(server),
			netip.AddrFrom4(ack.yiaddr), netip.AddrFrom4(offer.yiaddr))
	}
	return leaseOf(ack, cfg.Log), nil
}

// await reads replies until one to this transaction and client that
// want accepts and that offers a usable address.
func await(c Conn, cfg *Config, xid uint32, deadline time.Time, want func(*message) bool) (*message, error) {
	for {
		d, err := c.Recv(deadline)
		if err != nil {
			return nil, err
		}
		p, from, err := unwrap(d)
		if errors.Is(err, errNotForUs) {
			continue
		}
		if err != nil {
			cfg.Log("dhcp: reply dropped: %v", err)
			continue
		}
		m, err := parse(p)
		if err != nil {
			cfg.Log("dhcp: reply from %v dropped: %v", netip.AddrFrom4(from), err)
			continue
		}
		if m.op != opReply || m.xid != xid || m.chaddr != cfg.MAC || !want(m) {
			continue // another client's, an old transaction's, or a stray
		}
		if _, ok := m.addr4(optServerID); !ok && m.msgType() != msgNak {
			cfg.Log("dhcp: reply from %v dropped: no server identifier", netip.AddrFrom4(from))
			continue
		}
		if m.msgType() != msgNak {
			if a := netip.AddrFrom4(m.yiaddr); !usable(a) {
				cfg.Log("dhcp: reply from %v dropped: address %v offered", netip.AddrFrom4(from), a)
				continue
			}
		}
		return m, nil
	}
}

// usable is an address a host may take.
func usable(a netip.Addr) bool {
	return a.IsValid() && !a.IsUnspecified() && !a.IsLoopback() && !a.IsMulticast() &&
		a != netip.AddrFrom4([4]byte{255, 255, 255, 255})
}

// leaseOf reads an ACK's options. A netmask that is not contiguous, or
// none, gives the address's class's, as Linux's ipconfig does; a
// router outside the subnet is dropped with a log line.
func leaseOf(m *message, log func(string, ...any)) Lease {
	addr := netip.AddrFrom4(m.yiaddr)
	bits := classfulBits(m.yiaddr)
	if v, ok := m.addr4(optSubnetMask); ok {
		if b, ok := maskBits(v); ok {
			bits = b
		} else {
			log("dhcp: netmask %v not contiguous; using /%d", netip.AddrFrom4(v), bits)
		}
	}
	l := Lease{Addr: netip.PrefixFrom(addr, bits)}
	if v := m.opts[optRouter]; len(v) >= 4 {
		r := netip.AddrFrom4([4]byte(v[:4]))
		if l.Addr.Masked().Contains(r) && r != addr {
			l.Router = r
		} else {
			log("dhcp: router %v is not on %v; no default route", r, l.Addr.Masked())
		}
	}
	for v := m.opts[optDNS]; len(v) >= 4; v = v[4:] {
		l.DNS = append(l.DNS, netip.AddrFrom4([4]byte(v[:4])))
	}
	if id, ok := m.addr4(optServerID); ok {
		l.Server = netip.AddrFrom4(id)
	}
	l.Host, l.Domain = printable(m.opts[optHostName]), printable(m.opts[optDomainName])
	if v := m.opts[optLeaseTime]; len(v) == 4 {
		l.Duration = time.Duration(binary.BigEndian.Uint32(v)) * time.Second
	}
	return l
}

// printable is a name option, or "" if it holds anything but the
// characters of a host or domain name.
func printable(v []byte) string {
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return ""
		}
	}
	return string(v)
}

func maskBits(m [4]byte) (int, bool) {
	v := binary.BigEndian.Uint32(m[:])
	ones := bits.LeadingZeros32(^v)
	return ones, ones > 0 && v<<ones == 0
}

func classfulBits(a [4]byte) int {
	switch {
	case a[0] < 128:
		return 8
	case a[0] < 192:
		return 16
	}
	return 24
}
