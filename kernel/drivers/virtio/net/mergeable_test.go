package net

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"shortbread/kernel/drivers/virtio/virtiotest"
)

// What a card offering all the receive features is accepted with.
const featureMergedTSO = featureMrgRxBuf | featureGuestCsum | featureGuestTSO

// GUEST_TSO4/6 are accepted only with GUEST_CSUM and MRG_RXBUF and a
// receive ring that holds a 64 KiB frame; GUEST_ECN never.
func TestMergeableNegotiation(t *testing.T) {
	for _, c := range []struct {
		offers          uint64
		queueMax        uint16
		mergeable, tso4 bool
		tso6            bool
		accepted        uint64
		description     string
	}{
		{featureMrgRxBuf, 256, true, false, false, featureMrgRxBuf, "mergeable alone"},
		{featureMergedTSO, 256, true, true, true, featureMergedTSO, "all"},
		{featureMrgRxBuf | featureGuestCsum | featureGuestTSO4, 256, true, true, false, featureMrgRxBuf | featureGuestCsum | featureGuestTSO4, "IPv4 only"},
		{featureGuestCsum | featureGuestTSO, 256, false, false, false, featureGuestCsum, "no mergeable buffers"},
		{featureMrgRxBuf | featureGuestTSO, 256, true, false, false, featureMrgRxBuf, "no GUEST_CSUM"},
		{featureMergedTSO | 1<<9, 256, true, true, true, featureMergedTSO, "GUEST_ECN offered"},
		{featureMergedTSO, 32, true, true, true, featureMergedTSO, "a ring of 32"},
		{featureMergedTSO, 16, true, false, false, featureMrgRxBuf | featureGuestCsum, "a ring of 16"},
	} {
		s := newSideWith(t, 1, c.offers, func(d *virtiotest.Device) { d.SetQueueMax(c.queueMax) })
		n := s.nic
		if n.mergeable != c.mergeable || n.guestTSO4 != c.tso4 || n.guestTSO6 != c.tso6 {
			t.Errorf("%s: mergeable %v TSO4 %v TSO6 %v", c.description, n.mergeable, n.guestTSO4, n.guestTSO6)
		}
		if got := s.w.dev.DriverFeatures() &^ (1 << 32); got != featureMAC|featureStatus|c.accepted {
			t.Errorf("%s: accepted %#x, want %#x", c.description, got, featureMAC|featureStatus|c.accepted)
		}
		if n.rxPosted != n.rx.Size() || n.rx.Outstanding() != n.rx.Size() {
			t.Errorf("%s: %d of %d pages posted (%d outstanding)", c.description, n.rxPosted, n.rx.Size(), n.rx.Outstanding())
		}
	}
}

// TCP with mergeable buffers, frames in one buffer each and spread over
// up to 16 (split: at most that many bytes a buffer).
func TestMergeableAcrossCable(t *testing.T) {
	for i, split := range []int{0, 1000, 100} {
		t.Run(fmt.Sprint("split ", split), func(t *testing.T) {
			a, b := cableOffering(t, featureMrgRxBuf|featureGuestCsum)
			a.w.split, b.w.split = split, split
			echo(t, a, b, uint16(7100+i))
			for _, s := range []side{a, b} {
				s.w.mu.Lock()
				spread, errs := s.w.spread, s.w.errs
				s.w.mu.Unlock()
				if len(errs) != 0 || (split > 0) != (spread > 1000) {
					t.Errorf("%v: %d frames spread over buffers; card errors %q", s.nic.MAC(), spread, errs)
				}
				if !s.nic.mergeable || s.nic.BadBuffers.Load()+s.nic.BadHeaders.Load() != 0 {
					t.Errorf("%v: mergeable %v, bad buffers %d headers %d", s.nic.MAC(), s.nic.mergeable, s.nic.BadBuffers.Load(), s.nic.BadHeaders.Load())
				}
				quiet(t, s.nic)
			}
		})
	}
}

// quiet waits until every receive page is posted again and checks that
// the driver's count and the queue's agree: none was lost.
func quiet(t *testing.T, n *NIC) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		n.rxMu.Lock()
		posted := n.rxPosted
		n.rxMu.Unlock()
		if posted == n.rx.Size() && n.rx.Outstanding() == posted {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d receive pages posted, %d outstanding in the queue", posted, n.rx.Size(), n.rx.Outstanding())
		}
	}
}

// gsoFrame is a virtio header marking a TCP/IPv4 segment with size
// bytes of payload for GSO (NEEDS_CSUM, the pseudo-header's sum in the
// field, as a sender's TSO leaves it) and the segment.
func gsoFrame(size int) []byte {
	f := tcpFrame(make([]byte, size))
	tcpAt := ethHeaderLen + header.IPv4MinimumSize
	ip := header.IPv4(f[ethHeaderLen:])
	header.TCP(f[tcpAt:]).SetChecksum(header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(f)-tcpAt)))
	h := make([]byte, hdrLen)
	h[0], h[offGSOType] = flagNeedsCsum, gsoTCPv4
	binary.LittleEndian.PutUint16(h[offHdrLen:], uint16(tcpAt+header.TCPMinimumSize))
	binary.LittleEndian.PutUint16(h[offGSOSize:], 1448)
	binary.LittleEndian.PutUint16(h[offCsumStart:], uint16(tcpAt))
	binary.LittleEndian.PutUint16(h[offCsumOffset:], header.TCPChecksumOffset)
	return append(h, f...)
}

// plainFrame is a zeroed virtio header and a TCP/IPv4 frame.
func plainFrame(size int) []byte {
	return append(make([]byte, hdrLen), tcpFrame(make([]byte, size))...)
}

// counter is a stack that counts what it is given (the size of each
// frame) and says so on got.
type counter struct{ got chan int }

func (c *counter) DeliverNetworkPacket(_ tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	c.got <- pkt.Size()
}
func (*counter) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}

// Every way a card can hand back a bad frame: each is dropped, logged
// and counted under its kind, its buffers are posted again (none lost,
// none posted twice), and the good frame after it is delivered.
func TestMalformedMergeable(t *testing.T) {
	good := plainFrame(100)
	big := gsoFrame(40000)
	type edit = func(h []byte, lens []uint32) []uint32
	numBuffers := func(k int) edit {
		return func(h []byte, lens []uint32) []uint32 {
			binary.LittleEndian.PutUint16(h[offNumBuffers:], uint16(k))
			return lens
		}
	}
	length := func(i int, n uint32) edit {
		return func(h []byte, lens []uint32) []uint32 { lens[i] = n; return lens }
	}
	hdr := func(at int, v byte) edit {
		return func(h []byte, lens []uint32) []uint32 { h[at] = v; return lens }
	}
	// badID makes the card name a descriptor not in flight for the
	// frame's i-th buffer.
	badID := func(i int) func(*side) {
		return func(s *side) {
			k := 0
			s.w.dev.Corrupt = func(id, n *uint32, idx *uint16) {
				if k == i {
					*id = 1000
				}
				k++
			}
		}
	}
	for _, c := range []struct {
		name   string
		frame  []byte
		split  int
		edit   edit
		before func(*side)
		header bool   // a header drop, else a buffer one
		why    string // part of the log line
	}{
		{"num_buffers 0", good, 0, numBuffers(0), nil, false, "num_buffers 0"},
		{"num_buffers past those posted", good, 0, numBuffers(1000), nil, false, "num_buffers 1000 with 256"},
		{"num_buffers past those handed back", good, 0, numBuffers(3), nil, false, "1 of num_buffers 3"},
		{"a length past the buffer", good, 0, length(0, 4097), nil, false, "4097 bytes written into"},
		{"a later length past its buffer", big, 0, length(3, 5000), nil, false, "5000 bytes written into"},
		{"a first buffer short of the header", good, 0, length(0, 5), nil, false, "under the 12-byte header"},
		{"a frame over 64 KiB", gsoFrame(66000), 0, nil, nil, false, "byte frame (the most is 65550)"},
		{"a descriptor not in flight", good, 0, nil, badID(0), false, "descriptor 1000, not a buffer"},
		{"a later descriptor not in flight", big, 0, nil, badID(2), false, "descriptor 1000, not a buffer"},
		{"a frame too short", append(make([]byte, hdrLen), make([]byte, 10)...), 0, nil, nil, false, "10-byte frame"},
		{"a long frame without GSO", plainFrame(3000), 0, nil, nil, false, "without GSO"},
		{"GSO for UDP", big, 0, hdr(offGSOType, 3), nil, true, "GSO type 0x3"},
		{"GSO with ECN", big, 0, hdr(offGSOType, gsoTCPv4|gsoECN), nil, true, "GSO type 0x81"},
		{"GSO for IPv6 over IPv4", big, 0, hdr(offGSOType, gsoTCPv6), nil, true, "GSO type 0x4 for ethertype 0x0800"},
		{"GSO without checksum flags", big, 0, hdr(0, 0), nil, true, "flags 0x0 with GSO type 1"},
		{"GSO size 0", big, 0, func(h []byte, l []uint32) []uint32 { h[offGSOSize], h[offGSOSize+1] = 0, 0; return l }, nil, true, "GSO size 0"},
		{"a checksum past the frame", big, 0, hdr(offCsumStart+1, 0xff), nil, true, "checksum at"},
		{"split: num_buffers past those handed back", good, 40, numBuffers(7), nil, false, "5 of num_buffers 7"},
		{"split: a later length past its buffer", good, 40, length(2, 4097), nil, false, "4097 bytes written into"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := cableOffering(t, featureMergedTSO)
			_ = a
			var logs []string
			var mu sync.Mutex
			b.nic.log = func(f string, args ...any) {
				mu.Lock()
				logs = append(logs, fmt.Sprintf(f, args...))
				mu.Unlock()
			}
			r := &counter{got: make(chan int, 4)}
			b.nic.Attach(r)
			b.w.mu.Lock()
			b.w.split, b.w.mangle = c.split, c.edit
			b.w.mu.Unlock()
			if c.before != nil {
				c.before(&b)
			}
			b.w.arrive(c.frame)
			// Dropped before the good frame is sent: a frame claiming
			// more buffers than it was given must not take the next
			// frame's.
			for deadline := time.Now().Add(30 * time.Second); b.nic.Stats.RxErrors.Load() == 0; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the bad frame was not dropped (%d delivered)", b.nic.Stats.RxPackets.Load())
				}
			}
			b.w.mu.Lock()
			b.w.split, b.w.mangle = 0, nil
			b.w.mu.Unlock()
			b.w.dev.Corrupt = nil
			b.w.arrive(good)
			select {
			case n := <-r.got:
				if n != len(good)-hdrLen {
					t.Errorf("delivered %d bytes, want %d", n, len(good)-hdrLen)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("the good frame after the bad one was not delivered")
			}
			bufs, hdrs := b.nic.BadBuffers.Load(), b.nic.BadHeaders.Load()
			if b.nic.Stats.RxErrors.Load() != 1 || b.nic.Stats.RxPackets.Load() != 1 || (c.header && hdrs != 1) || (!c.header && bufs != 1) {
				t.Errorf("rx errors %d, delivered %d, bad buffers %d, bad headers %d", b.nic.Stats.RxErrors.Load(), b.nic.Stats.RxPackets.Load(), bufs, hdrs)
			}
			mu.Lock()
			if len(logs) != 1 || !strings.Contains(logs[0], c.why) {
				t.Errorf("logged %q, want one line about %q", logs, c.why)
			}
			mu.Unlock()
			quiet(t, b.nic)
			if b.nic.rxBroken.Load() {
				t.Error("the card was stopped")
			}
		})
	}
}

// A card whose receive ring is short of pages while the stack is behind:
// frames of one to 17 pages wait in the card for pages to come back
// rather than being dropped, and all arrive once the stack catches up,
// every page posted again.
func TestRefillUnderPressure(t *testing.T) {
	b := newSideWith(t, 2, featureMergedTSO, func(d *virtiotest.Device) { d.SetQueueMax(32) })
	if b.nic.rx.Size() != 32 || !b.nic.guestTSO4 {
		t.Fatalf("ring %d, GUEST_TSO4 %v", b.nic.rx.Size(), b.nic.guestTSO4)
	}
	const frames = 3 * maxRXQueued
	h := &held{release: make(chan struct{}), all: make(chan struct{}), want: frames}
	b.nic.Attach(h)
	sizes := []int{100, 20000, 64000, 1400, 5000}
	for i := 0; i < frames; i++ {
		if s := sizes[i%len(sizes)]; s > 1400 {
			b.w.arrive(gsoFrame(s))
		} else {
			b.w.arrive(plainFrame(s))
		}
	}
	waitRxHeld(t, b.nic)
	close(h.release)
	select {
	case <-h.all:
	case <-time.After(60 * time.Second):
		h.mu.Lock()
		defer h.mu.Unlock()
		t.Fatalf("%d of %d frames delivered, %d dropped, %d errors", h.got, frames, b.nic.Stats.RxDropped.Load(), b.nic.Stats.RxErrors.Load())
	}
	if b.nic.Stats.RxErrors.Load() != 0 || b.nic.Stats.RxDropped.Load() != 0 || b.nic.Stats.RxPackets.Load() != frames {
		t.Errorf("%d delivered, %d dropped, %d errors", b.nic.Stats.RxPackets.Load(), b.nic.Stats.RxDropped.Load(), b.nic.Stats.RxErrors.Load())
	}
	b.w.mu.Lock()
	if len(b.w.errs) != 0 || b.w.spread < frames/2 || b.w.waited == 0 {
		t.Errorf("card errors %q, %d frames spread, %d waits for pages", b.w.errs, b.w.spread, b.w.waited)
	}
	b.w.mu.Unlock()
	quiet(t, b.nic)
}

// Without MRG_RXBUF each page holds one frame and num_buffers is not
// looked at (older hosts leave it 0); a frame too long for a page never
// reaches the driver.
func TestWithoutMergeable(t *testing.T) {
	a, b := cableOffering(t, featureGuestCsum)
	_ = a
	if b.nic.mergeable {
		t.Fatal("mergeable without MRG_RXBUF")
	}
	r := &counter{got: make(chan int, 4)}
	b.nic.Attach(r)
	b.w.arrive(plainFrame(100))
	if n := <-r.got; n != len(plainFrame(100))-hdrLen {
		t.Errorf("delivered %d bytes", n)
	}
	b.w.arrive(gsoFrame(20000), plainFrame(200))
	if n := <-r.got; n != len(plainFrame(200))-hdrLen {
		t.Errorf("delivered %d bytes", n)
	}
	b.w.mu.Lock()
	if len(b.w.errs) != 1 {
		t.Errorf("card: %q", b.w.errs)
	}
	b.w.mu.Unlock()
	quiet(t, b.nic)
}

// The receive path allocates nothing per frame once warm: pages are
// reposted, the frame is copied into netstack's pooled chunks, and the
// simulated card reuses its own. Frames of one page and of 16.
func TestReceiveAllocations(t *testing.T) {
	_, b := cableOffering(t, featureMergedTSO)
	r := &counter{got: make(chan int, 1)}
	b.nic.Attach(r)
	for _, f := range [][]byte{plainFrame(1400), gsoFrame(64000)} {
		for range 20 { // warm the pools
			b.w.arrive(f)
			<-r.got
		}
		allocs := testing.AllocsPerRun(200, func() {
			b.w.arrive(f)
			<-r.got
		})
		t.Logf("%d-byte frames: %.2f allocations each", len(f)-hdrLen, allocs)
		if allocs > 0.1 && !raceEnabled {
			t.Errorf("%d-byte frames: %.2f allocations each", len(f)-hdrLen, allocs)
		}
	}
}

// Sending allocates nothing per frame once warm either: pages and their
// requests are reused. A frame of one page and one of 16.
func TestTransmitAllocations(t *testing.T) {
	a, _ := cable(t)
	a.w.sink = true
	for _, size := range []int{1000, 60000} {
		var l stack.PacketBufferList
		pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{ReserveHeaderBytes: 54, Payload: buffer.MakeWithData(make([]byte, size))})
		pkt.TransportHeader().Push(header.TCPMinimumSize)
		pkt.NetworkHeader().Push(header.IPv4MinimumSize)
		pkt.LinkHeader().Push(ethHeaderLen)
		if size > frameMax {
			// One frame only when the card is to cut it up.
			a.nic.tso = true
			pkt.GSOOptions = stack.GSO{Type: stack.GSOTCPv4, NeedsCsum: true, CsumOffset: header.TCPChecksumOffset, MSS: 1448}
		}
		l.PushBack(pkt)
		send := func() {
			if n, _ := a.nic.WritePackets(l); n != 1 {
				t.Fatalf("%d-byte frame: %d sent (tx errors %d)", size, n, a.nic.Stats.TxErrors.Load())
			}
			// Transmit interrupts are off: the driver takes its pages
			// back when it looks (or when its interrupt goroutine
			// does, woken for anything else).
			for {
				a.nic.reclaim()
				a.nic.mu.Lock()
				free := len(a.nic.txReqs)
				a.nic.mu.Unlock()
				if free == a.nic.tx.Size() {
					break
				}
				runtime.Gosched()
			}
		}
		for range 20 {
			send()
		}
		allocs := testing.AllocsPerRun(200, send)
		t.Logf("%d-byte frames: %.2f allocations each", size, allocs)
		if allocs > 0.1 && !raceEnabled {
			t.Errorf("%d-byte frames: %.2f allocations each", size, allocs)
		}
		l.DecRef()
	}
}

func TestOffloadsNamed(t *testing.T) {
	if o := newSide(t, 1, 0).nic.Offloads(); o != "" {
		t.Errorf("no offloads: %q", o)
	}
	if o := newSide(t, 1, featureTSO|featureMergedTSO).nic.Offloads(); o != "TSO GUEST_CSUM MRG_RXBUF GUEST_TSO4 GUEST_TSO6" {
		t.Errorf("all offloads: %q", o)
	}
}
