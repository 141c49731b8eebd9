package net

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"shortbread/kernel/net/link/gsotest"
)

// A card without offload: the driver cuts TCP's segments into frames
// (link.Segmenter) that gsotest.Check finds right, asks the card for no
// offload, and tells it of all the frames of a batch with one
// notification.
func TestSoftGSOFrames(t *testing.T) {
	for _, c := range gsotest.Cases {
		t.Run(fmt.Sprintf("v6=%v-mss=%d-%v", c.V6, c.MSS, c.Sizes), func(t *testing.T) {
			s := newSide(t, 1, 0)
			s.w.record = true
			pkt, payload := gsotest.Segment(c.V6, c.MSS, c.Sizes...)
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
				if got >= c.Frames || time.Now().After(deadline) {
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
			if len(sent) != c.Frames {
				t.Fatalf("%d frames, want %d", len(sent), c.Frames)
			}
			frames := make([][]byte, len(sent))
			for i, b := range sent {
				if !bytes.Equal(b[:hdrLen], make([]byte, hdrLen)) {
					t.Fatalf("frame %d: virtio header %x asks the card for offload", i, b[:hdrLen])
				}
				frames[i] = b[hdrLen:]
			}
			if err := gsotest.Check(frames, c.V6, int(c.MSS), frameMax, payload); err != nil {
				t.Fatal(err)
			}
			if got := s.nic.Stats.TxPackets.Load(); got != uint64(c.Frames) {
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
	bad, _ := gsotest.Segment(false, 1448, 5000)
	header.TCP(bad.TransportHeader().Slice()).SetDataOffset(60) // longer than the header
	good, _ := gsotest.Segment(false, 1448, 100)
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
