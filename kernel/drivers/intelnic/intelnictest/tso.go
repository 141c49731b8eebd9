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
	for _, c := range []struct {
		v6     bool
		mss    uint16
		sizes  []int
		frames int
	}{
		{false, 1448, []int{333, 1001, 2500, 1166, 59000}, 45},
		{false, 1460, []int{1, 2, 5000, 3}, 4},
		{false, 1448, []int{700}, 1},
		{true, 1428, []int{1, 4097, 3}, 3},
	} {
		before, segs := len(sent()), segments()
		pkt, payload := gsotest.Segment(c.v6, c.mss, c.sizes...)
		var l stack.PacketBufferList
		l.PushBack(pkt)
		if n, err := ep.WritePackets(l); n != 1 || err != nil {
			t.Fatalf("WritePackets: %d, %v", n, err)
		}
		pkt.DecRef()
		var frames [][]byte
		Eventually(t, "the segment's frames sent", func() bool {
			frames = sent()[before:]
			return len(frames) >= c.frames
		})
		if len(frames) != c.frames {
			t.Fatalf("v6 %v %v: %d frames, want %d", c.v6, c.sizes, len(frames), c.frames)
		}
		if err := gsotest.Check(frames, c.v6, int(c.mss), intelnic.FrameMTU, payload); err != nil {
			t.Errorf("v6 %v %v: %v", c.v6, c.sizes, err)
		}
		want := 0
		descs := 1 + (54+len(payload)+intelnic.BufSize-1)/intelnic.BufSize
		if !c.v6 && c.frames > 1 && descs <= ringDescs-1 {
			want = 1
		}
		if got := segments() - segs; got != want {
			t.Errorf("v6 %v %v: the card cut %d segments, want %d", c.v6, c.sizes, got, want)
		}
	}
}
