package dhcp

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// server is a simulated DHCP server on a simulated link: what the client
// sends is answered at once, into a queue the client's Recv reads.
type server struct {
	t       *testing.T
	id      [4]byte
	pool    [4]byte
	replies [][]byte
	seen    []byte // message types received, in order
	// hooks: change an outgoing reply, or answer a request with a NAK
	mangle  func(typ byte, m *message)
	nakNext int
	extra   [][]byte // datagrams put on the link before each reply
}

func newServer(t *testing.T) *server {
	return &server{t: t, id: [4]byte{10, 0, 2, 2}, pool: [4]byte{10, 0, 2, 15}}
}

func (s *server) Send(d []byte) error {
	// the client's datagram must be a well-formed broadcast from 0.0.0.0:68 to :67
	if len(d) < ipv4Len+udpLen || d[0] != 0x45 || fold(checksum(0, d[:ipv4Len])) != 0xffff {
		s.t.Fatalf("client sent a bad IPv4 header % x", d[:min(len(d), 20)])
	}
	if string(d[12:16]) != "\x00\x00\x00\x00" || string(d[16:20]) != "\xff\xff\xff\xff" {
		s.t.Fatalf("client sent %v -> %v", d[12:16], d[16:20])
	}
	u := d[ipv4Len:]
	if binary.BigEndian.Uint16(u) != ClientPort || binary.BigEndian.Uint16(u[2:]) != ServerPort {
		s.t.Fatalf("client sent ports %d -> %d", binary.BigEndian.Uint16(u), binary.BigEndian.Uint16(u[2:]))
	}
	if fold(checksum(checksum(checksum(protoUDP+uint32(len(u)), d[12:16]), d[16:20]), u)) != 0xffff {
		s.t.Fatal("client sent a bad UDP checksum")
	}
	m, err := parse(u[udpLen:])
	if err != nil {
		s.t.Fatalf("client sent a message the server cannot parse: %v", err)
	}
	if m.op != opRequest || m.flags&flagBroadcast == 0 {
		s.t.Fatalf("client sent op %d flags %#x", m.op, m.flags)
	}
	s.seen = append(s.seen, m.msgType())
	r := &message{op: opReply, xid: m.xid, chaddr: m.chaddr}
	switch m.msgType() {
	case msgDiscover:
		r.yiaddr = s.pool
		r.set(optMsgType, []byte{msgOffer})
	case msgRequest:
		want, _ := m.addr4(optRequested)
		sid, _ := m.addr4(optServerID)
		if sid != s.id {
			s.t.Fatalf("request names server %v", sid)
		}
		if s.nakNext > 0 || want != s.pool {
			s.nakNext--
			r.set(optMsgType, []byte{msgNak})
			r.set(optServerID, s.id[:])
			r.set(optMessage, []byte("no"))
			s.queue(msgNak, r)
			return nil
		}
		r.yiaddr = want
		r.set(optMsgType, []byte{msgAck})
	default:
		s.t.Fatalf("client sent message type %d", m.msgType())
	}
	r.set(optServerID, s.id[:])
	r.set(optSubnetMask, []byte{255, 255, 255, 0})
	r.set(optRouter, []byte{10, 0, 2, 2})
	r.set(optDNS, []byte{10, 0, 2, 3, 8, 8, 8, 8})
	r.set(optDomainName, []byte("example.org"))
	r.set(optLeaseTime, []byte{0, 1, 0x51, 0x80}) // 86400 s
	s.queue(r.msgType(), r)
	return nil
}

func (s *server) queue(typ byte, r *message) {
	if s.mangle != nil {
		s.mangle(typ, r)
	}
	s.replies = append(s.replies, s.extra...)
	s.replies = append(s.replies, reply(s.id, r.marshal()))
}

// reply wraps a server's payload from id:67 to the broadcast address.
func reply(from [4]byte, payload []byte) []byte {
	d := wrap(payload)
	copy(d[12:], from[:])
	binary.BigEndian.PutUint16(d[10:], 0)
	binary.BigEndian.PutUint16(d[10:], ^fold(checksum(0, d[:ipv4Len])))
	u := d[ipv4Len:]
	binary.BigEndian.PutUint16(u[0:], ServerPort)
	binary.BigEndian.PutUint16(u[2:], ClientPort)
	binary.BigEndian.PutUint16(u[6:], 0)
	binary.BigEndian.PutUint16(u[6:], udpSum(d[12:16], d[16:20], u))
	return d
}

func (s *server) Recv(deadline time.Time) ([]byte, error) {
	if len(s.replies) == 0 {
		return nil, ErrTimeout
	}
	d := s.replies[0]
	s.replies = s.replies[1:]
	return d, nil
}

func testConfig(logs *[]string) Config {
	xid := uint32(0x1000)
	return Config{
		MAC:  [6]byte{0x52, 0x54, 0, 0x12, 0x34, 0x56},
		Wait: time.Millisecond,
		XID:  func() uint32 { xid++; return xid },
		Log: func(f string, a ...any) {
			if logs != nil {
				*logs = append(*logs, f)
			}
		},
	}
}

func TestAcquire(t *testing.T) {
	s := newServer(t)
	l, err := Acquire(s, testConfig(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Lease{Addr: netip.MustParsePrefix("10.0.2.15/24"), Router: netip.MustParseAddr("10.0.2.2"),
		DNS:    []netip.Addr{netip.MustParseAddr("10.0.2.3"), netip.MustParseAddr("8.8.8.8")},
		Server: netip.MustParseAddr("10.0.2.2"), Domain: "example.org", Duration: 24 * time.Hour}
	if l.Addr != want.Addr || l.Router != want.Router || len(l.DNS) != 2 || l.DNS[1] != want.DNS[1] ||
		l.Server != want.Server || l.Domain != want.Domain || l.Duration != want.Duration || l.Host != "" {
		t.Errorf("lease %+v\nwant  %+v", l, want)
	}
	if string(s.seen) != string([]byte{msgDiscover, msgRequest}) {
		t.Errorf("server saw %v", s.seen)
	}
}

func TestNakStartsOver(t *testing.T) {
	s := newServer(t)
	s.nakNext = 1
	var logs []string
	l, err := Acquire(s, testConfig(&logs))
	if err != nil || l.Addr.Addr() != netip.AddrFrom4(s.pool) {
		t.Fatalf("lease %+v, %v", l, err)
	}
	if string(s.seen) != string([]byte{msgDiscover, msgRequest, msgDiscover, msgRequest}) {
		t.Errorf("server saw %v", s.seen)
	}
	if len(logs) == 0 || !strings.Contains(strings.Join(logs, "\n"), "try") {
		t.Errorf("the NAK was not logged: %q", logs)
	}
}

func TestNoServer(t *testing.T) {
	s := &silent{}
	cfg := testConfig(nil)
	cfg.Tries = 3
	_, err := Acquire(s, cfg)
	if !errors.Is(err, ErrTimeout) || s.sent != 3 {
		t.Errorf("err %v after %d discovers, want a timeout after 3", err, s.sent)
	}
	// the waits doubled: 1, 2, 4 ms
	if len(s.waits) != 3 || s.waits[1] < 2*s.waits[0]-time.Millisecond/2 {
		t.Errorf("waits %v", s.waits)
	}
}

type silent struct {
	sent  int
	waits []time.Duration
}

func (s *silent) Send([]byte) error { s.sent++; return nil }
func (s *silent) Recv(deadline time.Time) ([]byte, error) {
	s.waits = append(s.waits, time.Until(deadline))
	return nil, ErrTimeout
}

// Replies that are not for this client or transaction, malformed, or
// offering an unusable address are dropped, and the good one after them
// is taken.
func TestBadRepliesIgnored(t *testing.T) {
	s := newServer(t)
	other := &message{op: opReply, xid: 0x1001, chaddr: [6]byte{1, 2, 3, 4, 5, 6}, yiaddr: [4]byte{10, 0, 2, 99}}
	other.set(optMsgType, []byte{msgOffer})
	other.set(optServerID, s.id[:])
	stale := &message{op: opReply, xid: 0x0bad, chaddr: testConfig(nil).MAC, yiaddr: [4]byte{10, 0, 2, 98}}
	stale.set(optMsgType, []byte{msgOffer})
	stale.set(optServerID, s.id[:])
	bcast := &message{op: opReply, xid: 0x1001, chaddr: testConfig(nil).MAC, yiaddr: [4]byte{255, 255, 255, 255}}
	bcast.set(optMsgType, []byte{msgOffer})
	bcast.set(optServerID, s.id[:])
	good := reply(s.id, other.marshal())
	badUDP := append([]byte(nil), good...)
	badUDP[len(badUDP)-1] ^= 1 // a padding byte: only the checksum catches it
	truncated := reply(s.id, other.marshal()[:100])
	overrun := other.marshal()
	overrun[minLen+1] = 250 // the first option's length runs past the end
	s.extra = [][]byte{good, badUDP, truncated, reply(s.id, overrun), reply(s.id, stale.marshal()),
		reply(s.id, bcast.marshal()), {0x45}, make([]byte, 20), []byte("\x60not ipv4")}
	var logs []string
	l, err := Acquire(s, testConfig(&logs))
	if err != nil || l.Addr.Addr() != netip.AddrFrom4(s.pool) {
		t.Fatalf("lease %+v, %v (log %q)", l, err, logs)
	}
	all := strings.Join(logs, "\n")
	if !strings.Contains(all, "dropped") {
		t.Errorf("malformed replies not logged: %q", logs)
	}
}

func TestLeaseOptions(t *testing.T) {
	s := newServer(t)
	s.mangle = func(typ byte, m *message) {
		if typ != msgAck {
			return
		}
		m.set(optSubnetMask, []byte{255, 0, 255, 0}) // not contiguous: class A's /8
		m.set(optRouter, []byte{192, 168, 1, 1})     // not on the subnet: dropped
		m.set(optHostName, []byte("node-7"))
		m.set(optDomainName, []byte("bad name;rm"))
	}
	var logs []string
	l, err := Acquire(s, testConfig(&logs))
	if err != nil {
		t.Fatal(err)
	}
	if l.Addr != netip.MustParsePrefix("10.0.2.15/8") || l.Router.IsValid() || l.Host != "node-7" || l.Domain != "" {
		t.Errorf("lease %+v", l)
	}
	if len(logs) < 2 {
		t.Errorf("netmask and router not logged: %q", logs)
	}
}

func TestMarshalParse(t *testing.T) {
	m := &message{op: opRequest, xid: 42, secs: 3, flags: flagBroadcast, chaddr: [6]byte{1, 2, 3, 4, 5, 6}}
	long := []byte(strings.Repeat("x", 300)) // split in two options, joined again
	m.set(optHostName, long)
	m.set(optMsgType, []byte{msgDiscover})
	b := m.marshal()
	if len(b) < 300 {
		t.Errorf("message of %d bytes, want BOOTP's 300 at least", len(b))
	}
	p, err := parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if p.xid != 42 || p.secs != 3 || p.chaddr != m.chaddr || string(p.opts[optHostName]) != string(long) || p.msgType() != msgDiscover {
		t.Errorf("parsed %+v", p)
	}
	// options overloaded into the file field
	b[fixedLen+4] = optOverload
	copy(b[fixedLen+5:], []byte{1, 1, optEnd})
	copy(b[108:], []byte{optRouter, 4, 1, 2, 3, 4, optEnd})
	if p, err := parse(b); err != nil || len(p.opts[optRouter]) != 4 {
		t.Errorf("overload: %v %v", p.opts, err)
	}
	for _, bad := range [][]byte{b[:minLen-1], append(append([]byte(nil), b[:fixedLen]...), 1, 2, 3, 4)} {
		if _, err := parse(bad); !errors.Is(err, errMalformed) {
			t.Errorf("parse of %d bytes: %v", len(bad), err)
		}
	}
}

func FuzzParse(f *testing.F) {
	m := &message{op: opReply, xid: 1}
	m.set(optMsgType, []byte{msgAck})
	m.set(optRouter, []byte{1, 2, 3, 4})
	f.Add(m.marshal())
	f.Add(reply([4]byte{1, 2, 3, 4}, m.marshal()))
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := parse(b); err == nil {
			leaseOf(m, func(string, ...any) {})
		}
		unwrap(b)
	})
}

func TestUnwrapChecks(t *testing.T) {
	m := &message{op: opReply, xid: 7}
	m.set(optMsgType, []byte{msgOffer})
	good := reply([4]byte{10, 0, 2, 2}, m.marshal())
	if p, from, err := unwrap(good); err != nil || from != [4]byte{10, 0, 2, 2} || len(p) != len(m.marshal()) {
		t.Fatalf("good datagram: %d bytes from %v, %v", len(p), from, err)
	}
	mut := func(f func(d []byte)) []byte {
		d := append([]byte(nil), good...)
		f(d)
		return d
	}
	cases := map[string][]byte{
		"udp checksum":  mut(func(d []byte) { d[len(d)-1] ^= 1 }),
		"ip checksum":   mut(func(d []byte) { d[8]-- }),
		"total length":  mut(func(d []byte) { binary.BigEndian.PutUint16(d[2:], uint16(len(d)+1)) }),
		"header length": mut(func(d []byte) { d[0] = 0x44 }),
		"fragment": mut(func(d []byte) {
			d[6] |= 0x20
			d[10], d[11] = 0, 0
			binary.BigEndian.PutUint16(d[10:], ^fold(checksum(0, d[:20])))
		}),
		"udp length": mut(func(d []byte) { binary.BigEndian.PutUint16(d[24:], 4) }),
		"not ipv4":   mut(func(d []byte) { d[0] = 0x65 }),
		"short":      good[:27],
	}
	for name, d := range cases {
		if _, _, err := unwrap(d); !errors.Is(err, errMalformed) {
			t.Errorf("%s: %v, want malformed", name, err)
		}
	}
	other := mut(func(d []byte) { binary.BigEndian.PutUint16(d[22:], 53) })
	if _, _, err := unwrap(other); !errors.Is(err, errNotForUs) {
		t.Errorf("datagram to port 53: %v", err)
	}
}
