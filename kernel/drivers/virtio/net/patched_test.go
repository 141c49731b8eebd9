//go:build sbnetstack

// Tests that need netstack with Shortbread's patches (tools/netstack.sh),
// as make host-test builds it (-tags sbnetstack).

package net

import (
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"

	"shortbread/kernel/drivers/virtio/virtiotest"
)

// A segment whose TCP checksum is wrong is dropped by the stack unless
// the card marked it DATA_VALID, which the stack then trusts for that
// frame only (netstack-patches/stack-rx-checksum-per-packet.diff: fails
// without it, netstack deciding per endpoint).
func TestDataValidPerFrame(t *testing.T) {
	a, b := cableOffering(t, featureGuestCsum)
	// Segments to a listening port go through the endpoint's checks
	// (to no port, a bad one is only "malformed").
	l, err := gonet.ListenTCP(b.s, tcpip.FullAddress{NIC: 2, Port: 2}, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	frame := tcpFrame([]byte("x"))
	header.TCP(frame[ethHeaderLen+header.IPv4MinimumSize:]).SetChecksum(0x1234) // wrong
	marks := make(chan byte, 2)
	b.w.rxHeader = func(h, _ []byte) { h[0] = <-marks }
	stats := b.s.Stats().TCP
	wait := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: checksum errors %d, valid segments %d (card received %d, IP %d, IP malformed %d, TCP malformed %d)", what, stats.ChecksumErrors.Value(), stats.ValidSegmentsReceived.Value(), b.nic.Stats.RxPackets.Load(), b.s.Stats().IP.PacketsReceived.Value(), b.s.Stats().IP.MalformedPacketsReceived.Value(), stats.InvalidSegmentsReceived.Value())
			}
		}
	}
	marks <- 0
	a.w.Handle(queueTX, []virtiotest.Buf{{Data: append(make([]byte, hdrLen), frame...)}})
	wait("unmarked", func() bool { return stats.ChecksumErrors.Value() == 1 })
	if v := stats.ValidSegmentsReceived.Value(); v != 0 {
		t.Fatalf("an unmarked bad segment was taken (%d)", v)
	}
	marks <- flagDataValid
	a.w.Handle(queueTX, []virtiotest.Buf{{Data: append(make([]byte, hdrLen), frame...)}})
	wait("DATA_VALID", func() bool { return stats.ValidSegmentsReceived.Value() == 1 })
	if e := stats.ChecksumErrors.Value(); e != 1 {
		t.Errorf("checksum errors %d after a DATA_VALID frame, want 1", e)
	}
}

// With GUEST_TSO on the receiving side, the 64 KiB segments the sender
// hands its card reach the peer whole, spread over up to 17 buffers,
// and go to the stack as one packet each: 2 MiB each way by hash in a
// few dozen frames. The segments' checksums are left partial, as a
// sender's TSO leaves them, so this needs the stack to take the card's
// word per frame (stack-rx-checksum-per-packet.diff; without it every
// merged segment failed TCP's checksum check).
func TestGuestTSOAcrossCable(t *testing.T) {
	a, b := cableOffering(t, featureTSO|featureMergedTSO)
	echo(t, a, b, 7020)
	for _, s := range []side{a, b} {
		s.w.mu.Lock()
		gso, whole, segs, errs := s.w.gso, s.w.whole, s.w.segs, s.w.errs
		s.w.mu.Unlock()
		s.w.peer.mu.Lock()
		spread := s.w.peer.spread
		s.w.peer.mu.Unlock()
		t.Logf("%v: %d segments sent whole of %d, %d cut; the peer took %d receive interrupts, %d frames spread over buffers",
			s.nic.MAC(), whole, gso, segs, s.w.peer.dev.Raised[queueRX].Load(), spread)
		if len(errs) != 0 || whole < 32 || whole != gso || segs != 0 || spread < 32 {
			t.Errorf("%v: %d of %d segments whole, %d frames cut, %d spread; card errors %q", s.nic.MAC(), whole, gso, segs, spread, errs)
		}
		// 2 MiB in 64 KiB segments: the peer received far fewer frames
		// than 1514-byte ones would take (1,400).
		if p := s.w.peer; p.dev.Raised[queueRX].Load() == 0 || s.nic.Stats.TxPackets.Load() > 1000 {
			t.Errorf("%v: %d frames sent", s.nic.MAC(), s.nic.Stats.TxPackets.Load())
		}
		if s.nic.BadBuffers.Load()+s.nic.BadHeaders.Load() != 0 {
			t.Errorf("%v: bad buffers %d headers %d", s.nic.MAC(), s.nic.BadBuffers.Load(), s.nic.BadHeaders.Load())
		}
		quiet(t, s.nic)
	}
	if big := b.nic.Stats.RxBytes.Load() / max(b.nic.Stats.RxPackets.Load(), 1); big < 8000 {
		t.Errorf("the peer received %d bytes a frame on average", big)
	}
}
