package intelnic

import (
	"encoding/binary"

	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"shortbread/kernel/net/link"
)

// TCP segmentation offload. The drivers tell netstack's TCP that they
// take segments of up to 64 KiB with partial checksums; a card that
// segments is handed each segment whole, and cuts it into frames of
// the MSS itself: it writes each frame's IP total length, ID (the
// segment's plus the frame's index) and header checksum, TCP sequence
// number, FIN and PSH (on the last frame only) and TCP checksum. The
// guest's work per segment is then one copy of its bytes, with no
// checksum over them; under an emulator the cutting and checksumming
// run as host code. As Linux's drivers do, the driver leaves the IP
// total length and checksum zero and puts in the TCP checksum field
// the pseudo-header's sum without the length, which the card adds per
// frame. Only IPv4 is offloaded (QEMU's 82540EM model writes a wrong
// payload length for IPv6, and Linux offers the 82540EM no IPv6 TSO);
// IPv6 segments, and segments of one frame, go through link.Segmenter.

// TSOFormat is a descriptor family's way of asking for TSO: a context
// descriptor describing the segment, then data descriptors holding its
// bytes, headers first.
type TSOFormat struct {
	// Context fills the 16 bytes of a context descriptor (no status
	// report asked).
	Context func(d []byte, s TSOSegment)
	// Data is words 8 and 12 of a data descriptor with size bytes of
	// segment s; first and last say where it is (EOP and the status
	// report go on the last).
	Data func(size int, first, last bool, s TSOSegment) (w8, w12 uint32)
}

// TSOSegment is a segment's layout: its headers' lengths, its payload
// (the bytes after the headers) and the frames' payload.
type TSOSegment struct {
	EthLen, IPLen, TCPLen int
	PayLen, MSS           int
}

// HdrLen is the bytes of headers each frame carries.
func (s TSOSegment) HdrLen() int { return s.EthLen + s.IPLen + s.TCPLen }

// Frames is how many frames the card sends for the segment.
func (s TSOSegment) Frames() int { return (s.PayLen + s.MSS - 1) / s.MSS }

// Descs is how many descriptors the segment takes: the context and a
// data descriptor per buffer.
func (s TSOSegment) Descs() int { return 1 + (s.HdrLen()+s.PayLen+BufSize-1)/BufSize }

// tsoSegment says whether pkt (a segment with a partial checksum) goes
// to the card whole, and its layout if so: the card must segment, the
// segment must be TCP over IPv4 with more than one frame, and it must
// fit the ring. err is link.SegmentHeaders' refusal of headers netstack
// would not build.
func (t *TxRing) tsoSegment(pkt *stack.PacketBuffer) (s TSOSegment, ok bool, err error) {
	eth, nh, th, mss, err := link.SegmentHeaders(pkt, MaxFrame)
	if err != nil {
		return s, false, err
	}
	s = TSOSegment{EthLen: len(eth), IPLen: len(nh), TCPLen: len(th), PayLen: pkt.Data().Size(), MSS: mss}
	ok = t.f.TSO != nil && pkt.GSOOptions.Type == stack.GSOTCPv4 && s.PayLen > mss && s.Descs() <= t.N-1
	return s, ok, nil
}

// putTSO copies segment s (the packet's bytes in parts) into the
// buffers after a context descriptor and describes it to the card. The
// caller has checked space() >= s.Descs(). It returns the bytes the
// card will put on the wire and the new tail.
func (t *TxRing) putTSO(parts [][]byte, s TSOSegment) (wire, tail int) {
	first := t.tail
	ctx := t.D(first)
	clear(ctx)
	t.f.TSO.Context(ctx, s)
	i := (first + 1) % t.N
	// The bytes, buffer by buffer; parts[k][o:] is what is left.
	k, o := 0, 0
	left := s.HdrLen() + s.PayLen
	for n := 0; left > 0; n++ {
		b := t.Bufs[i].Mem
		size := min(left, BufSize)
		for c := 0; c < size; {
			m := copy(b[c:size], parts[k][o:])
			c, o = c+m, o+m
			if o == len(parts[k]) {
				k, o = k+1, 0
			}
		}
		if n == 0 {
			patchTSOHeaders(b, s)
		}
		left -= size
		d := t.D(i)
		binary.LittleEndian.PutUint64(d[0:], t.Bufs[i].Phys)
		w8, w12 := t.f.TSO.Data(size, n == 0, left == 0, s)
		Store32(d, 8, w8)
		Store32(d, 12, w12)
		if left > 0 {
			i = (i + 1) % t.N
		}
	}
	t.last[first] = i
	t.tail = (i + 1) % t.N
	return s.Frames()*s.HdrLen() + s.PayLen, t.tail
}

// patchTSOHeaders makes the headers at the front of b (a copy of the
// segment's) what the card expects: the IPv4 total length and header
// checksum zero, and the pseudo-header's sum without a length in the
// TCP checksum field.
func patchTSOHeaders(b []byte, s TSOSegment) {
	ip := header.IPv4(b[s.EthLen : s.EthLen+s.IPLen])
	ip.SetTotalLength(0)
	ip.SetChecksum(0)
	tcp := header.TCP(b[s.EthLen+s.IPLen : s.HdrLen()])
	tcp.SetChecksum(header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), 0))
}
