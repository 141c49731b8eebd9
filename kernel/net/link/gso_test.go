package link

import (
	"errors"
	"fmt"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip/header"

	"shortbread/kernel/net/link/gsotest"
)

// The segmenter cuts segments into frames of the MSS with their own
// lengths, IDs, sequence numbers and complete checksums, whatever the
// payload's views: odd sizes, more views than it keeps without
// allocating, none (a bare ACK), one shorter than the MSS.
func TestSegmenter(t *testing.T) {
	many := make([]int, 100)
	for i := range many {
		many[i] = 1 + i%7 // 100 views of 1-7 bytes: more than maxPieces
	}
	for _, c := range []struct {
		v6     bool
		mss    int
		sizes  []int
		frames int
	}{
		{false, 1448, []int{333, 1001, 2500, 1166, 59000}, 45},
		{true, 1428, []int{1, 4097, 3}, 3},
		{false, 100, many, 4},
		{false, 1448, []int{100}, 1},
		{false, 1448, nil, 1},
		{true, 1000, []int{1000}, 1},
	} {
		t.Run(fmt.Sprintf("v6=%v-mss=%d-%d-views", c.v6, c.mss, len(c.sizes)), func(t *testing.T) {
			pkt, payload := gsotest.Segment(c.v6, uint16(c.mss), c.sizes...)
			defer pkt.DecRef()
			var sg Segmenter
			if err := sg.Start(pkt, 1514); err != nil {
				t.Fatal(err)
			}
			var frames [][]byte
			for hdr, size, ok := sg.Next(); ok; hdr, size, ok = sg.Next() {
				f := append([]byte(nil), hdr...)
				for b := sg.Piece(); b != nil; b = sg.Piece() {
					f = append(f, b...)
				}
				if len(f) != size {
					t.Fatalf("frame %d: %d bytes, said %d", len(frames), len(f), size)
				}
				frames = append(frames, f)
			}
			if len(frames) != c.frames {
				t.Fatalf("%d frames, want %d", len(frames), c.frames)
			}
			if err := gsotest.Check(frames, c.v6, c.mss, 1514, payload); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Headers that are not what netstack builds, and an MSS the card's
// frames cannot hold, are refused.
func TestSegmenterRefuses(t *testing.T) {
	for name, spoil := range map[string]func(h []byte){
		"TCP data offset past its header": func(h []byte) { header.TCP(h[14+20:]).SetDataOffset(60) },
		"IPv4 header length":              func(h []byte) { h[14] = 0x46 },
	} {
		pkt, _ := gsotest.Segment(false, 1448, 5000)
		h := pkt.LinkHeader().Slice()
		spoil(h[:cap(h)][:14+20+20])
		var sg Segmenter
		if err := sg.Start(pkt, 1514); !errors.Is(err, ErrSegment) {
			t.Errorf("%s: %v", name, err)
		}
		pkt.DecRef()
	}
	pkt, _ := gsotest.Segment(false, 1600, 5000)
	defer pkt.DecRef()
	var sg Segmenter
	if err := sg.Start(pkt, 1514); !errors.Is(err, ErrSegment) {
		t.Errorf("an MSS past the frame size: %v", err)
	}
}
