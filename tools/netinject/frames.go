package main

import (
	"encoding/binary"
	"math/rand/v2"
)

// The frames the injector puts on the wire: each kind is malformed, or
// well-formed but hostile, in one way a kernel must survive. Packets are
// built byte by byte (not with netstack's encoders) so that any field can
// be wrong.

// peer is who the frames claim to come from and go to.
type peer struct {
	guestMAC, ourMAC [6]byte
	guestIP, ourIP   [4]byte
}

const (
	etherIPv4 = 0x0800
	etherARP  = 0x0806
	protoICMP = 1
	protoTCP  = 6
	protoUDP  = 17
)

func sum16(s uint32, b []byte) uint32 {
	for len(b) >= 2 {
		s += uint32(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint32(b[0]) << 8
	}
	return s
}

func finish(s uint32) uint16 {
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

func ether(dst, src [6]byte, typ uint16, payload []byte) []byte {
	f := make([]byte, 14, 14+len(payload))
	copy(f, dst[:])
	copy(f[6:], src[:])
	binary.BigEndian.PutUint16(f[12:], typ)
	return append(f, payload...)
}

// ip4pkt builds a header (no options) for payload; frag is the flags and
// offset word.
func ip4pkt(src, dst [4]byte, proto byte, id, frag uint16, payload []byte) []byte {
	h := make([]byte, 20, 20+len(payload))
	h[0] = 0x45
	binary.BigEndian.PutUint16(h[2:], uint16(20+len(payload)))
	binary.BigEndian.PutUint16(h[4:], id)
	binary.BigEndian.PutUint16(h[6:], frag)
	h[8] = 64
	h[9] = proto
	copy(h[12:], src[:])
	copy(h[16:], dst[:])
	binary.BigEndian.PutUint16(h[10:], finish(sum16(0, h)))
	return append(h, payload...)
}

// l4sum is the TCP/UDP checksum of seg over the pseudo-header.
func l4sum(src, dst [4]byte, proto byte, seg []byte) uint16 {
	s := sum16(0, src[:])
	s = sum16(s, dst[:])
	s += uint32(proto) + uint32(len(seg))
	return finish(sum16(s, seg))
}

func udpDgram(src, dst [4]byte, sport, dport uint16, data []byte) []byte {
	u := make([]byte, 8, 8+len(data))
	binary.BigEndian.PutUint16(u, sport)
	binary.BigEndian.PutUint16(u[2:], dport)
	binary.BigEndian.PutUint16(u[4:], uint16(8+len(data)))
	u = append(u, data...)
	binary.BigEndian.PutUint16(u[6:], l4sum(src, dst, protoUDP, u))
	return u
}

func tcpSeg(src, dst [4]byte, sport, dport uint16, seq uint32, flags byte, data []byte) []byte {
	t := make([]byte, 20, 20+len(data))
	binary.BigEndian.PutUint16(t, sport)
	binary.BigEndian.PutUint16(t[2:], dport)
	binary.BigEndian.PutUint32(t[4:], seq)
	t[12] = 5 << 4
	t[13] = flags
	binary.BigEndian.PutUint16(t[14:], 65535)
	t = append(t, data...)
	binary.BigEndian.PutUint16(t[16:], l4sum(src, dst, protoTCP, t))
	return t
}

func junk(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// kind is one family of bad frames.
type kind struct {
	name string
	make func(r *rand.Rand, p peer) [][]byte
}

// kinds are the families, in the order the injector cycles through them.
var kinds = []kind{
	{"runt", func(r *rand.Rand, p peer) [][]byte {
		// Shorter than an Ethernet header, but never empty: QEMU takes a
		// card that accepts 0 bytes for one that is full, and stops its
		// link for good (a real wire carries no empty frames).
		return [][]byte{junk(r, 1+r.IntN(13))}
	}},
	{"oversized", func(r *rand.Rand, p peer) [][]byte {
		n := 1515 + r.IntN(8000)
		return [][]byte{ether(p.guestMAC, p.ourMAC, etherIPv4, ip4pkt(p.ourIP, p.guestIP, protoUDP, 1, 0, junk(r, n)))}
	}},
	{"ip-bad-checksum", func(r *rand.Rand, p peer) [][]byte {
		pkt := ip4pkt(p.ourIP, p.guestIP, protoUDP, uint16(r.Uint32()), 0, udpDgram(p.ourIP, p.guestIP, 1234, 7, junk(r, 32)))
		pkt[10] ^= 0x55
		return [][]byte{ether(p.guestMAC, p.ourMAC, etherIPv4, pkt)}
	}},
	{"ip-bad-lengths", func(r *rand.Rand, p peer) [][]byte {
		mk := func(f func(h []byte)) []byte {
			pkt := ip4pkt(p.ourIP, p.guestIP, protoUDP, 7, 0, udpDgram(p.ourIP, p.guestIP, 1234, 7, junk(r, 40)))
			f(pkt)
			binary.BigEndian.PutUint16(pkt[10:], 0)
			binary.BigEndian.PutUint16(pkt[10:], finish(sum16(0, pkt[:20]))) // checksum right: only the lengths are wrong
			return ether(p.guestMAC, p.ourMAC, etherIPv4, pkt)
		}
		return [][]byte{
			mk(func(h []byte) { binary.BigEndian.PutUint16(h[2:], 60000) }), // longer than the frame
			mk(func(h []byte) { binary.BigEndian.PutUint16(h[2:], 12) }),    // shorter than the header
			mk(func(h []byte) { h[0] = 0x43 }),                              // header of 12 bytes
			mk(func(h []byte) { h[0] = 0x4f }),                              // 60-byte header, no options there
			mk(func(h []byte) { h[0] = 0x65 }),                              // version 6 in an IPv4 frame
			ether(p.guestMAC, p.ourMAC, etherIPv4, junk(r, r.IntN(20))),     // truncated header
		}
	}},
	{"udp-bad", func(r *rand.Rand, p peer) [][]byte {
		bad := udpDgram(p.ourIP, p.guestIP, 1234, 7, junk(r, 32))
		bad[6] ^= 0x0f
		long := udpDgram(p.ourIP, p.guestIP, 1234, 7, junk(r, 32))
		binary.BigEndian.PutUint16(long[4:], 400) // longer than the datagram
		short := udpDgram(p.ourIP, p.guestIP, 1234, 7, junk(r, 32))
		binary.BigEndian.PutUint16(short[4:], 3) // shorter than its header
		var out [][]byte
		for _, u := range [][]byte{bad, long, short, junk(r, r.IntN(8))} {
			out = append(out, ether(p.guestMAC, p.ourMAC, etherIPv4, ip4pkt(p.ourIP, p.guestIP, protoUDP, 9, 0, u)))
		}
		return out
	}},
	{"tcp-bad", func(r *rand.Rand, p peer) [][]byte {
		bad := tcpSeg(p.ourIP, p.guestIP, 40000, 80, r.Uint32(), 0x02, nil)
		bad[16] ^= 0x33
		off := tcpSeg(p.ourIP, p.guestIP, 40001, 80, r.Uint32(), 0x02, nil)
		off[12] = 15 << 4 // data offset past the segment
		binary.BigEndian.PutUint16(off[16:], 0)
		binary.BigEndian.PutUint16(off[16:], l4sum(p.ourIP, p.guestIP, protoTCP, off))
		var out [][]byte
		for _, t := range [][]byte{bad, off, junk(r, r.IntN(20))} {
			out = append(out, ether(p.guestMAC, p.ourMAC, etherIPv4, ip4pkt(p.ourIP, p.guestIP, protoTCP, 11, 0, t)))
		}
		return out
	}},
	{"tcp-odd-flags", func(r *rand.Rand, p peer) [][]byte {
		var out [][]byte
		for _, fl := range []byte{0x03, 0x06, 0x00, 0xff, 0x01, 0x29, 0x3f} { // SYN+FIN, SYN+RST, none, all, FIN, FIN+PSH+URG, ...
			for _, port := range []uint16{80, 81} {
				t := tcpSeg(p.ourIP, p.guestIP, uint16(1024+r.IntN(60000)), port, r.Uint32(), fl, junk(r, r.IntN(8)))
				out = append(out, ether(p.guestMAC, p.ourMAC, etherIPv4, ip4pkt(p.ourIP, p.guestIP, protoTCP, 13, 0, t)))
			}
		}
		return out
	}},
	{"fragments", func(r *rand.Rand, p peer) [][]byte {
		id := uint16(r.Uint32())
		body := udpDgram(p.ourIP, p.guestIP, 1234, 7, junk(r, 200))
		const mf = 0x2000
		return [][]byte{
			// overlapping: 0-103 and 48-151 of one datagram, then the tail
			ether(p.guestMAC, p.ourMAC, etherIPv4, ip4pkt(p.ourIP, p.guestIP, protoUDP, id, mf|0, body[:104])),
			ether(p.guestMAC, p.ourMAC, etherIPv4, ip4pkt(p.ourIP, p.guestIP, protoUDP, id, mf|6, body[48:152])),
			ether(p.guestMAC, p.ourMAC, etherIPv4, ip4pkt(p.ourIP, p.guestIP, protoUDP, id, 13, body[104:])),
			// endless: a first fragment whose rest never comes
			ether(p.guestMAC, p.ourMAC, etherIPv4, ip4pkt(p.ourIP, p.guestIP, protoUDP, id+1, mf, body[:96])),
			// beyond 64 KiB once reassembled
			ether(p.guestMAC, p.ourMAC, etherIPv4, ip4pkt(p.ourIP, p.guestIP, protoUDP, id+2, 8189, junk(r, 64))),
			// a fragment whose length is not a multiple of 8 with more to come
			ether(p.guestMAC, p.ourMAC, etherIPv4, ip4pkt(p.ourIP, p.guestIP, protoUDP, id+3, mf|1, junk(r, 13))),
		}
	}},
	{"arp-garbage", func(r *rand.Rand, p peer) [][]byte {
		a := make([]byte, 28)
		binary.BigEndian.PutUint16(a, 1)
		binary.BigEndian.PutUint16(a[2:], etherIPv4)
		a[4], a[5] = 6, 4
		binary.BigEndian.PutUint16(a[6:], 2) // a reply nobody asked for
		copy(a[8:], junk(r, 6))
		other := [4]byte{10, 0, 0, byte(3 + r.IntN(250))} // never the injector's own address
		copy(a[14:], other[:])
		copy(a[18:], p.guestMAC[:])
		copy(a[24:], p.guestIP[:])
		badLen := append([]byte(nil), a...)
		badLen[4], badLen[5] = 17, 9
		op := append([]byte(nil), a...)
		binary.BigEndian.PutUint16(op[6:], 77)
		bcast := [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		return [][]byte{
			ether(p.guestMAC, p.ourMAC, etherARP, a),
			ether(bcast, p.ourMAC, etherARP, badLen),
			ether(bcast, p.ourMAC, etherARP, op),
			ether(bcast, p.ourMAC, etherARP, a[:r.IntN(28)]),
		}
	}},
	{"icmp-garbage", func(r *rand.Rand, p peer) [][]byte {
		mk := func(typ, code byte, data []byte, fix bool) []byte {
			m := append([]byte{typ, code, 0, 0, 0, 1, 0, 1}, data...)
			if fix {
				binary.BigEndian.PutUint16(m[2:], finish(sum16(0, m)))
			}
			return ether(p.guestMAC, p.ourMAC, etherIPv4, ip4pkt(p.ourIP, p.guestIP, protoICMP, 17, 0, m))
		}
		bcast := [4]byte{10, 0, 0, 255}
		echo := append([]byte{8, 0, 0, 0, 0, 2, 0, 2}, junk(r, 56)...)
		binary.BigEndian.PutUint16(echo[2:], finish(sum16(0, echo)))
		return [][]byte{
			mk(byte(r.IntN(256)), byte(r.IntN(256)), junk(r, r.IntN(64)), true),
			mk(8, 0, junk(r, 32), false), // echo with a bad checksum
			mk(3, 3, junk(r, 4), true),   // unreachable quoting no header
			ether(p.guestMAC, p.ourMAC, etherIPv4, ip4pkt(p.ourIP, p.guestIP, protoICMP, 19, 0, junk(r, r.IntN(4)))),
			ether([6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, p.ourMAC, etherIPv4, ip4pkt(p.ourIP, bcast, protoICMP, 21, 0, echo)),
		}
	}},
	{"syn-flood", func(r *rand.Rand, p peer) [][]byte {
		var out [][]byte
		for range 8 {
			src := [4]byte{10, 0, 0, byte(3 + r.IntN(250))}
			t := tcpSeg(src, p.guestIP, uint16(1024+r.IntN(60000)), 80, r.Uint32(), 0x02, nil)
			out = append(out, ether(p.guestMAC, p.ourMAC, etherIPv4, ip4pkt(src, p.guestIP, protoTCP, uint16(r.Uint32()), 0, t)))
		}
		return out
	}},
}
