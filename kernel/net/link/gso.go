package link

import (
	"errors"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Segmentation in software, for a card that offers no TCP segmentation
// offload: the driver tells TCP that it takes segments of up to GSOMax
// bytes with partial checksums (netstack's host GSO), and does the
// card's work itself, as Linux's GSO does for a card without TSO. Each
// segment is cut into frames of its MSS, each with its own IP length,
// ID and checksum and TCP sequence number and checksum, FIN and PSH on
// the last frame only, and the driver queues them all and tells the
// card once. What it saves is netstack's work for each frame (the
// sender's, IP's and the link's: about 45 frames for a 64 KiB reply)
// and a notification of the card per frame (an MMIO write, which is a
// VM exit under a hypervisor). A segment no longer than its MSS just
// has its checksum finished.

// GSOMax is the largest segment a driver that segments in software
// takes: the largest IP packet.
const GSOMax = 1<<16 - 1

// maxHeaders bounds the Ethernet, IP and TCP headers of a segment (14 +
// 60 + 60 for IPv4 with options; room for IPv6 extension headers).
const maxHeaders = 14 + 128 + 60

// maxPieces bounds the slices of payload walked without allocating.
const maxPieces = 32

// ErrSegment is what Segment says of a packet whose headers are not
// what netstack builds for TCP with GSO; the driver drops it and counts
// an error.
var ErrSegment = errors.New("link: segment headers not TCP/IP as netstack builds them")

// Segmenter cuts segments up; its buffers are reused, so one lives on
// the stack of each WritePackets (it is not safe for concurrent use):
//
//	if err := sg.Start(pkt, maxFrame); err != nil { drop, count }
//	for hdr, size, ok := sg.Next(); ok; hdr, size, ok = sg.Next() {
//		write hdr; for b := sg.Piece(); b != nil; b = sg.Piece() { write b }
//	}
//
// (Nothing in it points into itself, nor does it store pointers into
// its caller's memory: either would move it to the heap.)
type Segmenter struct {
	hdr   [maxHeaders]byte
	store [maxPieces][]byte

	// the segment being cut: its headers, payload (store[:npieces],
	// or more if it has more pieces), size and MSS, the next frame's
	// first byte, the frames left, and the fields that change per frame
	eth, nh, th []byte
	more        [][]byte
	npieces     int
	size, mss   int
	off, frames int
	seq         uint32
	flags       uint8
	id          uint16
	v4          bool
	// the current frame's payload not yet handed out by Piece: from
	// byte po of piece pi, left bytes
	pi, po, left int
}

// Start begins cutting pkt, a TCP segment whose checksum netstack left
// partial (pkt.GSOOptions.NeedsCsum), into frames of at most maxFrame
// bytes (the Ethernet header included); Next gives them.
func (sg *Segmenter) Start(pkt *stack.PacketBuffer, maxFrame int) error {
	sg.frames, sg.left = 0, 0
	eth, nh, th, mss, err := SegmentHeaders(pkt, maxFrame)
	if err != nil {
		return err
	}
	size := pkt.Data().Size()
	hlen := len(eth) + len(nh) + len(th)
	v4 := pkt.GSOOptions.Type == stack.GSOTCPv4
	// The payload, as slices of the packet's views after its headers.
	sg.npieces, sg.more = 0, nil
	vl, skip := pkt.AsViewList()
	skip += hlen
	for v := vl.Front(); v != nil; v = v.Next() {
		b := v.AsSlice()
		if skip >= len(b) {
			skip -= len(b)
			continue
		}
		if sg.more == nil && sg.npieces == maxPieces {
			sg.more = append([][]byte(nil), sg.store[:]...)
		}
		if sg.more != nil {
			sg.more = append(sg.more, b[skip:])
		} else {
			sg.store[sg.npieces] = b[skip:]
			sg.npieces++
		}
		skip = 0
	}
	sg.eth, sg.nh, sg.th, sg.v4 = eth, nh, th, v4
	sg.size, sg.mss, sg.off = size, mss, 0
	sg.frames = max((size+mss-1)/mss, 1)
	tcp := header.TCP(th)
	sg.seq, sg.flags = tcp.SequenceNumber(), uint8(tcp.Flags())
	if v4 {
		sg.id = header.IPv4(nh).ID()
	}
	return nil
}

// SegmentHeaders returns the Ethernet, IP and TCP headers of pkt, a TCP
// segment whose checksum netstack left partial, and the size of the
// frames' payload (its MSS, or the whole payload when that is smaller),
// after checking that the headers are what netstack builds (Ethernet
// II, IPv4 or IPv6, TCP, with lengths that agree) and that a frame of
// them fits maxFrame; ErrSegment otherwise. Both link.Segmenter and a
// card that segments (TSO) take the headers from here.
func SegmentHeaders(pkt *stack.PacketBuffer, maxFrame int) (eth, nh, th []byte, mss int, err error) {
	eth, nh, th = pkt.LinkHeader().Slice(), pkt.NetworkHeader().Slice(), pkt.TransportHeader().Slice()
	g := pkt.GSOOptions
	hlen := len(eth) + len(nh) + len(th)
	v4 := g.Type == stack.GSOTCPv4
	if (!v4 && g.Type != stack.GSOTCPv6) || len(eth) != header.EthernetMinimumSize || hlen > maxHeaders ||
		len(th) < header.TCPMinimumSize || int(header.TCP(th).DataOffset()) != len(th) ||
		(v4 && (len(nh) < header.IPv4MinimumSize || int(header.IPv4(nh).HeaderLength()) != len(nh))) ||
		(!v4 && len(nh) < header.IPv6MinimumSize) {
		return nil, nil, nil, 0, ErrSegment
	}
	size := pkt.Data().Size()
	mss = int(g.MSS)
	if mss <= 0 || mss > size {
		mss = max(size, 1) // one frame (a bare ACK has no payload)
	}
	if hlen+min(mss, size) > maxFrame {
		return nil, nil, nil, 0, ErrSegment
	}
	return eth, nh, th, mss, nil
}

// piece is payload piece i.
func (sg *Segmenter) piece(i int) []byte {
	if sg.more != nil {
		return sg.more[i]
	}
	return sg.store[i]
}

func (sg *Segmenter) pieces() int {
	if sg.more != nil {
		return len(sg.more)
	}
	return sg.npieces
}

// Next returns the next frame's headers and its size in bytes (headers
// and payload; Piece gives the payload); ok is false after the last.
// The headers are valid until the next call.
func (sg *Segmenter) Next() (hdr []byte, size int, ok bool) {
	if sg.frames == 0 {
		return nil, 0, false
	}
	sg.frames--
	off := sg.off
	c := min(sg.mss, sg.size-off)
	sg.off += sg.mss
	eth, nh, th := sg.eth, sg.nh, sg.th
	hlen := len(eth) + len(nh) + len(th)
	fh := sg.hdr[:hlen]
	copy(fh, eth)
	copy(fh[len(eth):], nh)
	copy(fh[len(eth)+len(nh):], th)
	ip := fh[len(eth) : len(eth)+len(nh)]
	var src, dst tcpip.Address
	if sg.v4 {
		p := header.IPv4(ip)
		p.SetTotalLength(uint16(len(nh) + len(th) + c))
		p.SetID(sg.id + uint16(off/sg.mss))
		p.SetChecksum(0)
		p.SetChecksum(^p.CalculateChecksum())
		src, dst = p.SourceAddress(), p.DestinationAddress()
	} else {
		p := header.IPv6(ip)
		// (any extension headers are part of the payload)
		p.SetPayloadLength(uint16(len(nh) - header.IPv6MinimumSize + len(th) + c))
		src, dst = p.SourceAddress(), p.DestinationAddress()
	}
	ft := header.TCP(fh[len(eth)+len(nh):])
	ft.SetSequenceNumber(sg.seq + uint32(off))
	if off+c < sg.size { // FIN and PSH belong to the last frame
		ft.SetFlags(sg.flags &^ uint8(header.TCPFlagFin|header.TCPFlagPsh))
	}
	ft.SetChecksum(0)
	// Where the frame's payload starts: piece pi, byte po.
	pi, po := 0, off
	for pi < sg.pieces() && po >= len(sg.piece(pi)) {
		po -= len(sg.piece(pi))
		pi++
	}
	var sum checksum.Checksumer
	sum.Add(ft) // the TCP header first: the payload may be of odd length
	for i, o, n := pi, po, c; n > 0; i, o = i+1, 0 {
		b := sg.piece(i)[o:]
		b = b[:min(len(b), n)]
		sum.Add(b)
		n -= len(b)
	}
	xsum := checksum.Combine(header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(len(th)+c)), sum.Checksum())
	ft.SetChecksum(^xsum)
	sg.pi, sg.po, sg.left = pi, po, c
	return fh, hlen + c, true
}

// Piece returns the next slice of the current frame's payload, or nil
// after the last.
func (sg *Segmenter) Piece() []byte {
	if sg.left == 0 {
		return nil
	}
	b := sg.piece(sg.pi)[sg.po:]
	b = b[:min(len(b), sg.left)]
	sg.pi, sg.po, sg.left = sg.pi+1, 0, sg.left-len(b)
	return b
}
