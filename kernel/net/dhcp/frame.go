package dhcp

import (
	"encoding/binary"
	"fmt"
)

// The client speaks before it has an address: its requests go from
// 0.0.0.0:68 to 255.255.255.255:67 in datagrams it builds itself, and it
// reads replies from whatever IPv4 datagrams the link receives.

const (
	ipv4Len  = 20
	udpLen   = 8
	protoUDP = 17
)

// checksum is the Internet checksum (RFC 1071) of b, starting from sum.
func checksum(sum uint32, b []byte) uint32 {
	for len(b) >= 2 {
		sum += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	return sum
}

func fold(sum uint32) uint16 {
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return uint16(sum)
}

// udpSum is the UDP checksum of udp (header and payload) between src
// and dst, over the pseudo-header.
func udpSum(src, dst []byte, udp []byte) uint16 {
	s := checksum(0, src)
	s = checksum(s, dst)
	s += protoUDP + uint32(len(udp))
	return ^fold(checksum(s, udp))
}

// wrap puts payload in a broadcast UDP datagram from port 68 of the
// unspecified address to port 67.
func wrap(payload []byte) []byte {
	total := ipv4Len + udpLen + len(payload)
	b := make([]byte, total)
	src, dst := []byte{0, 0, 0, 0}, []byte{255, 255, 255, 255}
	b[0] = 0x45 // version 4, 5 words
	binary.BigEndian.PutUint16(b[2:], uint16(total))
	b[8] = 64 // TTL
	b[9] = protoUDP
	copy(b[12:], src)
	copy(b[16:], dst)
	binary.BigEndian.PutUint16(b[10:], ^fold(checksum(0, b[:ipv4Len])))
	u := b[ipv4Len:]
	binary.BigEndian.PutUint16(u[0:], ClientPort)
	binary.BigEndian.PutUint16(u[2:], ServerPort)
	binary.BigEndian.PutUint16(u[4:], uint16(udpLen+len(payload)))
	copy(u[udpLen:], payload)
	sum := udpSum(src, dst, u)
	if sum == 0 {
		sum = 0xffff // 0 means no checksum
	}
	binary.BigEndian.PutUint16(u[6:], sum)
	return b
}

// unwrap returns the UDP payload of an IPv4 datagram sent to port 68,
// with the sender's address, or an error saying why the datagram is not
// one: every length and both checksums are checked, and fragments are
// not reassembled (no server fragments a reply this small).
func unwrap(b []byte) (payload []byte, from [4]byte, err error) {
	if len(b) < ipv4Len || b[0]>>4 != 4 {
		return nil, from, fmt.Errorf("%w: not IPv4", errMalformed)
	}
	hl := int(b[0]&0xf) * 4
	total := int(binary.BigEndian.Uint16(b[2:]))
	if hl < ipv4Len || total < hl || total > len(b) {
		return nil, from, fmt.Errorf("%w: IPv4 header length %d, total %d of %d bytes", errMalformed, hl, total, len(b))
	}
	if fold(checksum(0, b[:hl])) != 0xffff {
		return nil, from, fmt.Errorf("%w: IPv4 header checksum", errMalformed)
	}
	if b[9] != protoUDP {
		return nil, from, errNotForUs
	}
	if frag := binary.BigEndian.Uint16(b[6:]); frag&0x3fff != 0 { // MF or an offset
		return nil, from, fmt.Errorf("%w: fragment", errMalformed)
	}
	copy(from[:], b[12:16])
	u := b[hl:total]
	if len(u) < udpLen {
		return nil, from, fmt.Errorf("%w: short UDP header", errMalformed)
	}
	if binary.BigEndian.Uint16(u[2:]) != ClientPort {
		return nil, from, errNotForUs
	}
	ul := int(binary.BigEndian.Uint16(u[4:]))
	if ul < udpLen || ul > len(u) {
		return nil, from, fmt.Errorf("%w: UDP length %d of %d bytes", errMalformed, ul, len(u))
	}
	u = u[:ul]
	if binary.BigEndian.Uint16(u[6:]) != 0 && fold(checksum(checksum(checksum(protoUDP+uint32(ul), b[12:16]), b[16:20]), u)) != 0xffff {
		return nil, from, fmt.Errorf("%w: UDP checksum", errMalformed)
	}
	return u[udpLen:], from, nil
}
