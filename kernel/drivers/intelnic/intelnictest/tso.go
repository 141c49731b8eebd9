package intelnictest

import (
	"fmt"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"shortbread/kernel/drivers/intelnic"
	"shortbread/kernel/net/link/gsotest"
)

// Segment is what a card that does TCP segmentation makes of seg, a
// TCP-over-IPv4 segment handed to it whole: frames with hdrLen bytes of
// headers (the IPv4 header at ipOff, TCP at tcpOff) and at most mss
// bytes of payload. As the hardware does, it takes the driver's headers
// as they are and only adds to them: each frame's IP total length, ID
// (plus the frame's index) and header checksum computed over the header
// as the driver left it (so a checksum field the driver did not zero
// spoils it), its TCP sequence number, FIN and PSH on the last frame
// only, and the TCP checksum from the pseudo-header sum the driver left
// in the field plus the frame's TCP length. A receiver that checks
// checksums thus catches a driver that prepared the headers wrongly.
func Segment(seg []byte, ipOff, tcpOff, hdrLen, mss int) ([][]byte, error) {
	if ipOff+header.IPv4MinimumSize > tcpOff || tcpOff+header.TCPMinimumSize > hdrLen || hdrLen >= len(seg) || mss <= 0 {
		return nil, fmt.Errorf("segment of %d bytes: headers at %d, %d, %d, MSS %d", len(seg), ipOff, tcpOff, hdrLen, mss)
	}
	var frames [][]byte
	hdr := seg[:hdrLen]
	id := header.IPv4(hdr[ipOff:tcpOff]).ID()
	seq := header.TCP(hdr[tcpOff:]).SequenceNumber()
	flags := header.TCP(hdr[tcpOff:]).Flags()
	for k, off := 0, hdrLen; off < len(seg); k, off = k+1, off+mss {
		c := min(mss, len(seg)-off)
		f := append(append([]byte(nil), hdr...), seg[off:off+c]...)
		ip := header.IPv4(f[ipOff:tcpOff])
		ip.SetTotalLength(uint16(len(f) - ipOff))
		ip.SetID(id + uint16(k))
		ip.SetChecksum(^checksum.Checksum(f[ipOff:tcpOff], 0))
		tcp := header.TCP(f[tcpOff:])
		tcp.SetSequenceNumber(seq + uint32(off-hdrLen))
		if off+c < len(seg) {
			tcp.SetFlags(uint8(flags &^ (header.TCPFlagFin | header.TCPFlagPsh)))
		}
		tcp.SetChecksum(checksum.Combine(tcp.Checksum(), uint16(len(f)-tcpOff)))
		tcp.SetChecksum(^checksum.Checksum(f[tcpOff:], 0))
		frames = append(frames, f)
	}
	return frames, nil
}

// CheckTSO hands ep (a card's endpoint on a simulated card that cuts
// segments up with Segment and counts them in segments; sent is every
// frame the card has sent) TCP segments as netstack does with GSO, and
// checks the frames that come out (gsotest.Check): an IPv4 segment of
// many frames goes to the card whole, unless the transmit ring (of
// ringDescs descriptors) cannot hold it; IPv6 and one-frame segments
// are cut by the driver.
func CheckTSO(t *testing.T, ep stack.LinkEndpoint, sent func() [][]byte, segments func() int, ringDescs int) {
	for _, c := range gsotest.Cases {
		before, segs := len(sent()), segments()
		pkt, payload := gsotest.Segment(c.V6, c.MSS, c.Sizes...)
		var l stack.PacketBufferList
		l.PushBack(pkt)
		if n, err := ep.WritePackets(l); n != 1 || err != nil {
			t.Fatalf("WritePackets: %d, %v", n, err)
		}
		pkt.DecRef()
		var frames [][]byte
		Eventually(t, "the segment's frames sent", func() bool {
			frames = sent()[before:]
			return len(frames) >= c.Frames
		})
		if len(frames) != c.Frames {
			t.Fatalf("v6 %v %v: %d frames, want %d", c.V6, c.Sizes, len(frames), c.Frames)
		}
		if err := gsotest.Check(frames, c.V6, int(c.MSS), intelnic.FrameMTU, payload); err != nil {
			t.Errorf("v6 %v %v: %v", c.V6, c.Sizes, err)
		}
		want := 0
		descs := 1 + (54+len(payload)+intelnic.BufSize-1)/intelnic.BufSize
		if !c.V6 && c.Frames > 1 && descs <= ringDescs-1 {
			want = 1
		}
		if got := segments() - segs; got != want {
			t.Errorf("v6 %v %v: the card cut %d segments, want %d", c.V6, c.Sizes, got, want)
		}
	}
}

// RxChecksums is what a card with receive checksum offload finds in a
// frame: whether it is TCP or UDP in an unfragmented IPv4 packet whose
// checksums it checks (checked), and whether the IP header's (ipOK)
// and the TCP or UDP checksum (l4OK) are right.
func RxChecksums(frame []byte) (checked, ipOK, l4OK bool) {
	if len(frame) < header.EthernetMinimumSize+header.IPv4MinimumSize ||
		header.Ethernet(frame).Type() != header.IPv4ProtocolNumber {
		return false, false, false
	}
	ip := header.IPv4(frame[header.EthernetMinimumSize:])
	if !ip.IsValid(len(ip)) || ip.More() || ip.FragmentOffset() != 0 {
		return false, false, false
	}
	p := ip.TransportProtocol()
	if p != header.TCPProtocolNumber && p != header.UDPProtocolNumber {
		return false, false, false
	}
	l4 := ip[ip.HeaderLength():ip.TotalLength()]
	sum := checksum.Checksum(l4, header.PseudoHeaderChecksum(p, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(l4))))
	return true, ip.IsChecksumValid(), sum == 0xffff
}

// CheckRxChecksums has a card (receive: a frame from the wire) take a
// TCP/IPv4 frame with right checksums, the same with a wrong TCP
// checksum, with a wrong IP header checksum, and a frame that is no
// IPv4 packet, and checks that the driver (r: its dispatcher) vouched
// for the first only, and for none if the card checks nothing
// (offload false).
func CheckRxChecksums(t *testing.T, receive func([]byte), r *Recorder, offload bool) {
	pkt, _ := gsotest.Segment(false, 1000, 700)
	frames, err := Segment(pkt.ToView().AsSlice(), header.EthernetMinimumSize, header.EthernetMinimumSize+header.IPv4MinimumSize,
		header.EthernetMinimumSize+header.IPv4MinimumSize+header.TCPMinimumSize, 1000)
	pkt.DecRef()
	if err != nil || len(frames) != 1 {
		t.Fatalf("Segment: %d frames, %v", len(frames), err)
	}
	good := frames[0]
	// gsotest.Segment leaves a partial TCP checksum and a full IP one:
	// make both right.
	tcp := header.TCP(good[header.EthernetMinimumSize+header.IPv4MinimumSize:])
	ip := header.IPv4(good[header.EthernetMinimumSize:])
	tcp.SetChecksum(0)
	tcp.SetChecksum(^checksum.Checksum(tcp, header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(tcp)))))
	ip.SetChecksum(0)
	ip.SetChecksum(^ip.CalculateChecksum())
	if c, ipOK, l4OK := RxChecksums(good); !c || !ipOK || !l4OK {
		t.Fatalf("the test frame's checksums: checked %v, IP %v, TCP %v", c, ipOK, l4OK)
	}
	badTCP := append([]byte(nil), good...)
	badTCP[len(badTCP)-1]++
	badIP := append([]byte(nil), good...)
	badIP[header.EthernetMinimumSize+8]-- // the TTL
	before := len(r.All())
	for _, f := range [][]byte{good, badTCP, badIP, Frame(100, 1)} {
		receive(f)
	}
	r.Wait(t, 4)
	got := r.Vouched()[before:]
	want := []bool{offload, false, false, false}
	if len(got) != len(want) {
		t.Fatalf("%d frames delivered, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("frame %d: vouched %v, want %v", i, got[i], want[i])
		}
	}
}
