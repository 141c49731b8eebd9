package net

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// gsoSegment is a TCP segment as netstack hands it to a card with GSO:
// Ethernet, IP (IPv6 if v6) and TCP headers, the checksum left partial,
// the payload in views of the sizes given (odd ones, so that a frame's
// checksum spans views at odd offsets).
func gsoSegment(v6 bool, mss uint16, flags header.TCPFlags, sizes ...int) (*stack.PacketBuffer, []byte) {
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
	tcp.Encode(&header.TCPFields{SrcPort: 80, DstPort: 4000, SeqNum: 0xfffff000, AckNum: 5, DataOffset: header.TCPMinimumSize, Flags: flags, WindowSize: 100})
	tcp.SetChecksum(0x1234) // partial: the driver's to finish
	g := stack.GSO{NeedsCsum: true, CsumOffset: header.TCPChecksumOffset, MSS: mss, MaxSize: gsoMaxSize}
	if v6 {
		ip := header.IPv6(pkt.NetworkHeader().Push(header.IPv6MinimumSize))
		ip.Encode(&header.IPv6Fields{PayloadLength: uint16(header.TCPMinimumSize + len(all)), TransportProtocol: header.TCPProtocolNumber, HopLimit: 64,
			SrcAddr: tcpip.AddrFrom16([16]byte{0xfd, 15: 1}), DstAddr: tcpip.AddrFrom16([16]byte{0xfd, 15: 2})})
		g.Type, g.L3HdrLen = stack.GSOTCPv6, header.IPv6MinimumSize
	} else {
		ip := header.IPv4(pkt.NetworkHeader().Push(header.IPv4MinimumSize))
		ip.Encode(&header.IPv4Fields{TotalLength: uint16(header.IPv4MinimumSize + header.TCPMinimumSize + len(all)), ID: 0xfffe, Flags: header.IPv4FlagDontFragment,
			TTL: 64, Protocol: uint8(header.TCPProtocolNumber), SrcAddr: tcpip.AddrFrom4([4]byte{10, 0, 0, 1}), DstAddr: tcpip.AddrFrom4([4]byte{10, 0, 0, 2})})
		g.Type, g.L3HdrLen = stack.GSOTCPv4, header.IPv4MinimumSize
	}
	eth := header.Ethernet(pkt.LinkHeader().Push(header.EthernetMinimumSize))
	eth.Encode(&header.EthernetFields{Type: map[bool]tcpip.NetworkProtocolNumber{false: header.IPv4ProtocolNumber, true: header.IPv6ProtocolNumber}[v6]})
	pkt.GSOOptions = g
	return pkt, all
}

// A card without offload: the driver cuts TCP's segments into frames of
// the MSS with their own lengths, IDs, sequence numbers and complete
// checksums, FIN and PSH on the last only, the payload byte for byte;
// a segment within its MSS (or with no payload) gets its checksum
// finished. All the frames of a batch go with one notification.
func TestSoftGSOFrames(t *testing.T) {
	for _, c := range []struct {
		v6     bool
		mss    uint16
		sizes  []int
		frames int
	}{
		{false, 1448, []int{333, 1001, 2500, 1166, 59000}, 45},
		{true, 1428, []int{1, 4097, 3}, 3},
		{false, 1448, []int{100}, 1},
		{false, 1448, nil, 1},
		{true, 1000, []int{1000}, 1},
	} {
		t.Run(fmt.Sprintf("v6=%v-mss=%d-%v", c.v6, c.mss, c.sizes), func(t *testing.T) {
			s := newSide(t, 1, 0)
			s.w.record = true
			pkt, payload := gsoSegment(c.v6, c.mss, header.TCPFlagAck|header.TCPFlagPsh|header.TCPFlagFin, c.sizes...)
			var l stack.PacketBufferList
			l.PushBack(pkt)
			kicks := s.w.dev.Notifies.Load()
			if n, err := s.nic.WritePackets(l); n != 1 || err != nil {
				t.Fatalf("WritePackets: %d, %v", n, err)
			}
			pkt.DecRef()
			deadline := time.Now().Add(5 * time.Second)
			for {
				s.w.mu.Lock()
				got := len(s.w.sent)
				s.w.mu.Unlock()
				if got >= c.frames || time.Now().After(deadline) {
					break
				}
				time.Sleep(time.Millisecond)
			}
			if k := s.w.dev.Notifies.Load() - kicks; k != 1 {
				t.Errorf("%d notifications for one batch", k)
			}
			s.w.mu.Lock()
			sent := s.w.sent
			s.w.mu.Unlock()
			if len(sent) != c.frames {
				t.Fatalf("%d frames, want %d", len(sent), c.frames)
			}
			var data []byte
			for i, b := range sent {
				if !bytes.Equal(b[:hdrLen], make([]byte, hdrLen)) {
					t.Fatalf("frame %d: virtio header %x asks the card for offload", i, b[:hdrLen])
				}
				f := b[hdrLen:]
				if len(f) > frameMax {
					t.Fatalf("frame %d: %d bytes", i, len(f))
				}
				var l4 []byte
				var src, dst tcpip.Address
				if c.v6 {
					ip := header.IPv6(f[ethHeaderLen:])
					l4 = ip[header.IPv6MinimumSize:]
					if int(ip.PayloadLength()) != len(l4) {
						t.Fatalf("frame %d: IPv6 payload length %d of %d", i, ip.PayloadLength(), len(l4))
					}
					src, dst = ip.SourceAddress(), ip.DestinationAddress()
				} else {
					ip := header.IPv4(f[ethHeaderLen:])
					if !ip.IsChecksumValid() || int(ip.TotalLength()) != len(ip) || ip.ID() != uint16(0xfffe+i) || ip.Flags() != header.IPv4FlagDontFragment {
						t.Fatalf("frame %d: IPv4 checksum valid %v, length %d of %d, ID %#x, flags %d", i, ip.IsChecksumValid(), ip.TotalLength(), len(ip), ip.ID(), ip.Flags())
					}
					l4 = ip[header.IPv4MinimumSize:]
					src, dst = ip.SourceAddress(), ip.DestinationAddress()
				}
				tcp := header.TCP(l4)
				if sum := checksum.Checksum(tcp, header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(len(tcp)))); sum != 0xffff {
					t.Fatalf("frame %d: TCP checksum does not verify (%#x)", i, sum)
				}
				want := header.TCPFlagAck
				if i == len(sent)-1 {
					want |= header.TCPFlagPsh | header.TCPFlagFin
				}
				if tcp.Flags() != want || tcp.SequenceNumber() != 0xfffff000+uint32(len(data)) || tcp.AckNumber() != 5 {
					t.Fatalf("frame %d: flags %v seq %#x ack %d", i, tcp.Flags(), tcp.SequenceNumber(), tcp.AckNumber())
				}
				if i < len(sent)-1 && len(tcp.Payload()) != int(c.mss) {
					t.Fatalf("frame %d: %d bytes of payload, MSS %d", i, len(tcp.Payload()), c.mss)
				}
				data = append(data, tcp.Payload()...)
			}
			if !bytes.Equal(data, payload) {
				t.Fatalf("payload differs: %d bytes, want %d", len(data), len(payload))
			}
			if got := s.nic.Stats.TxPackets.Load(); got != uint64(c.frames) {
				t.Errorf("%d frames counted", got)
			}
		})
	}
}

// A segment whose headers are not what netstack builds is dropped and
// counted, and the batch goes on.
func TestSoftGSOBadHeaders(t *testing.T) {
	s := newSide(t, 1, 0)
	s.w.record = true
	bad, _ := gsoSegment(false, 1448, header.TCPFlagAck, 5000)
	header.TCP(bad.TransportHeader().Slice()).SetDataOffset(60) // longer than the header
	good, _ := gsoSegment(false, 1448, header.TCPFlagAck, 100)
	var l stack.PacketBufferList
	l.PushBack(bad)
	l.PushBack(good)
	s.nic.WritePackets(l)
	l.DecRef()
	if s.nic.Stats.TxErrors.Load() != 1 {
		t.Errorf("%d transmit errors, want 1", s.nic.Stats.TxErrors.Load())
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.nic.Stats.TxPackets.Load() != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if s.nic.Stats.TxPackets.Load() != 1 {
		t.Errorf("%d frames sent, want the good segment's 1", s.nic.Stats.TxPackets.Load())
	}
}
