// Package gsotest builds TCP segments as netstack hands them to a card
// with GSO, and checks the frames a segmenter (the driver's software
// one, or a card model's) cut them into: for the tests of link and of
// the drivers.
package gsotest

import (
	"bytes"
	"fmt"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Seq is the first sequence number of a Segment: the frames' wrap.
const Seq = 0xfffff000

// ID is the IPv4 ID of a Segment: the frames' wrap too.
const ID = 0xfffe

// Case is a segment for a driver's test: IPv6 or IPv4, the MSS, the
// payload's views (Segment), and the frames it must be cut into.
type Case struct {
	V6     bool
	MSS    uint16
	Sizes  []int
	Frames int
}

// Cases are segments every driver is tried with: many frames over odd
// views, few frames, IPv6, and a bare ACK.
var Cases = []Case{
	{false, 1448, []int{333, 1001, 2500, 1166, 59000}, 45},
	{false, 1460, []int{1, 2, 5000, 3}, 4},
	{false, 1448, []int{700}, 1},
	{true, 1428, []int{1, 4097, 3}, 3},
	{false, 1448, nil, 1},
}

// Segment is a TCP segment as netstack hands it to a card with GSO:
// Ethernet, IP (IPv6 if v6) and TCP headers (ACK, PSH and FIN), the
// checksum left partial, the payload in views of the sizes given (odd
// ones make a frame's checksum span views at odd offsets). It returns
// the packet and its payload.
func Segment(v6 bool, mss uint16, sizes ...int) (*stack.PacketBuffer, []byte) {
	var payload buffer.Buffer
	var all []byte
	for i, n := range sizes {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(i*7 + j*13 + j>>8)
		}
		all = append(all, b...)
		payload.Append(buffer.NewViewWithData(b))
	}
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: 128, Payload: payload})
	tcp := header.TCP(pkt.TransportHeader().Push(header.TCPMinimumSize))
	tcp.Encode(&header.TCPFields{SrcPort: 80, DstPort: 4000, SeqNum: Seq, AckNum: 5, DataOffset: header.TCPMinimumSize,
		Flags: header.TCPFlagAck | header.TCPFlagPsh | header.TCPFlagFin, WindowSize: 100})
	tcp.SetChecksum(0x1234) // partial: the segmenter's to finish
	g := stack.GSO{NeedsCsum: true, CsumOffset: header.TCPChecksumOffset, MSS: mss, MaxSize: 1<<16 - 1}
	typ := header.IPv4ProtocolNumber
	if v6 {
		ip := header.IPv6(pkt.NetworkHeader().Push(header.IPv6MinimumSize))
		ip.Encode(&header.IPv6Fields{PayloadLength: uint16(header.TCPMinimumSize + len(all)), TransportProtocol: header.TCPProtocolNumber, HopLimit: 64,
			SrcAddr: tcpip.AddrFrom16([16]byte{0xfd, 15: 1}), DstAddr: tcpip.AddrFrom16([16]byte{0xfd, 15: 2})})
		g.Type, g.L3HdrLen, typ = stack.GSOTCPv6, header.IPv6MinimumSize, header.IPv6ProtocolNumber
	} else {
		ip := header.IPv4(pkt.NetworkHeader().Push(header.IPv4MinimumSize))
		ip.Encode(&header.IPv4Fields{TotalLength: uint16(header.IPv4MinimumSize + header.TCPMinimumSize + len(all)), ID: ID, Flags: header.IPv4FlagDontFragment,
			TTL: 64, Protocol: uint8(header.TCPProtocolNumber), SrcAddr: tcpip.AddrFrom4([4]byte{10, 0, 0, 1}), DstAddr: tcpip.AddrFrom4([4]byte{10, 0, 0, 2})})
		g.Type, g.L3HdrLen = stack.GSOTCPv4, header.IPv4MinimumSize
	}
	header.Ethernet(pkt.LinkHeader().Push(header.EthernetMinimumSize)).Encode(&header.EthernetFields{Type: typ})
	pkt.GSOOptions = g
	return pkt, all
}

// Check says what is wrong, if anything, with frames (Ethernet frames)
// as the cut of a Segment with this payload: each within maxFrame
// bytes, its IP length (and for IPv4 its ID and checksum) its own, its
// TCP checksum complete, its sequence number where its payload starts,
// FIN and PSH on the last frame only, every frame but the last holding
// mss bytes, and the payloads together the segment's, byte for byte.
func Check(frames [][]byte, v6 bool, mss, maxFrame int, payload []byte) error {
	var data []byte
	for i, f := range frames {
		if len(f) > maxFrame {
			return fmt.Errorf("frame %d: %d bytes", i, len(f))
		}
		var l4 []byte
		var src, dst tcpip.Address
		if v6 {
			ip := header.IPv6(f[header.EthernetMinimumSize:])
			l4 = ip[header.IPv6MinimumSize:]
			if int(ip.PayloadLength()) != len(l4) {
				return fmt.Errorf("frame %d: IPv6 payload length %d of %d", i, ip.PayloadLength(), len(l4))
			}
			src, dst = ip.SourceAddress(), ip.DestinationAddress()
		} else {
			ip := header.IPv4(f[header.EthernetMinimumSize:])
			if !ip.IsChecksumValid() || int(ip.TotalLength()) != len(ip) || ip.ID() != uint16(ID+i) || ip.Flags() != header.IPv4FlagDontFragment {
				return fmt.Errorf("frame %d: IPv4 checksum valid %v, length %d of %d, ID %#x, flags %d", i, ip.IsChecksumValid(), ip.TotalLength(), len(ip), ip.ID(), ip.Flags())
			}
			l4 = ip[header.IPv4MinimumSize:]
			src, dst = ip.SourceAddress(), ip.DestinationAddress()
		}
		tcp := header.TCP(l4)
		if sum := checksum.Checksum(tcp, header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(len(tcp)))); sum != 0xffff {
			return fmt.Errorf("frame %d: TCP checksum does not verify (%#x)", i, sum)
		}
		want := header.TCPFlagAck
		if i == len(frames)-1 {
			want |= header.TCPFlagPsh | header.TCPFlagFin
		}
		if tcp.Flags() != want || tcp.SequenceNumber() != Seq+uint32(len(data)) || tcp.AckNumber() != 5 {
			return fmt.Errorf("frame %d: flags %v seq %#x ack %d", i, tcp.Flags(), tcp.SequenceNumber(), tcp.AckNumber())
		}
		if i < len(frames)-1 && len(tcp.Payload()) != mss {
			return fmt.Errorf("frame %d: %d bytes of payload, MSS %d", i, len(tcp.Payload()), mss)
		}
		data = append(data, tcp.Payload()...)
	}
	if !bytes.Equal(data, payload) {
		return fmt.Errorf("payload differs: %d bytes, want %d", len(data), len(payload))
	}
	return nil
}
