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
