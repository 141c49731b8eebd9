package net

import (
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"shortbread/kernel/drivers/virtio/virtiotest"
)

// transmit is what a card offering checksum and segmentation offload
// does with a frame the driver sent (b: virtio header and frame): it
// completes a partial checksum, or cuts a TCP segment into frames of
// gso_size bytes of payload each, with their own lengths, IDs,
// sequence numbers and checksums, as a host's card would. Anything the
// driver got wrong is recorded in w.errs and the frame is not sent. A
// segment for a peer that accepted GUEST_TSO4 goes to it whole, with
// the header the driver wrote. Each frame returned has a virtio header
// before it.
func (w *wire) transmit(b []byte) [][]byte {
	whole := w.peer.dev.DriverFeatures()&featureGuestTSO4 != 0
	frames := w.cut(b, whole)
	for i, f := range frames {
		h := make([]byte, hdrLen)
		if len(frames) == 1 && whole && b[offGSOType] != gsoNone {
			copy(h, b[:hdrLen])
		}
		frames[i] = append(h, f...)
	}
	return frames
}

// cut is transmit's work on the frame without its header: the frames
// to send, or the segment itself if whole.
func (w *wire) cut(b []byte, whole bool) [][]byte {
	h, f := b[:hdrLen], append([]byte(nil), b[hdrLen:]...)
	kind := h[offGSOType]
	start := int(binary.LittleEndian.Uint16(h[offCsumStart:]))
	off := int(binary.LittleEndian.Uint16(h[offCsumOffset:]))
	w.mu.Lock()
	defer w.mu.Unlock()
	if h[0]&flagNeedsCsum == 0 {
		if kind != gsoNone {
			w.errs = append(w.errs, "GSO without NEEDS_CSUM")
			return nil
		}
		return [][]byte{f}
	}
	if h[0] != flagNeedsCsum || start+off+2 > len(f) {
		w.errs = append(w.errs, fmt.Sprintf("flags %#x, checksum at %d+%d of %d bytes", h[0], start, off, len(f)))
		return nil
	}
	w.csums++
	if kind == gsoNone {
		completeChecksum(f, start, off)
		return [][]byte{f}
	}
	ip := header.IPv4(f[ethHeaderLen:])
	ihl := int(ip.HeaderLength())
	tcp := header.TCP(f[ethHeaderLen+ihl:])
	thl := int(tcp.DataOffset())
	hlen := ethHeaderLen + ihl + thl
	mss := int(binary.LittleEndian.Uint16(h[offGSOSize:]))
	switch {
	case kind != gsoTCPv4: // the test stacks have only IPv4
		w.errs = append(w.errs, fmt.Sprintf("GSO type %d", kind))
		return nil
	case int(binary.LittleEndian.Uint16(h[offHdrLen:])) != hlen || start != ethHeaderLen+ihl || off != header.TCPChecksumOffset:
		w.errs = append(w.errs, fmt.Sprintf("hdr_len %d csum %d+%d for headers of %d", binary.LittleEndian.Uint16(h[offHdrLen:]), start, off, hlen))
		return nil
	case mss == 0 || len(f)-hlen <= mss:
		w.errs = append(w.errs, fmt.Sprintf("GSO size %d for %d bytes", mss, len(f)-hlen))
		return nil
	}
	w.gso++
	if whole {
		w.whole++
		return [][]byte{f}
	}
	seq, flags, id := tcp.SequenceNumber(), tcp.Flags(), ip.ID()
	var out [][]byte
	for i, payload := 0, f[hlen:]; len(payload) > 0; i++ {
		n := min(mss, len(payload))
		seg := append(append([]byte(nil), f[:hlen]...), payload[:n]...)
		payload = payload[n:]
		sip := header.IPv4(seg[ethHeaderLen:])
		sip.SetTotalLength(uint16(ihl + thl + n))
		sip.SetID(id + uint16(i))
		sip.SetChecksum(0)
		sip.SetChecksum(^sip.CalculateChecksum())
		st := header.TCP(seg[ethHeaderLen+ihl:])
		st.SetSequenceNumber(seq + uint32(i*mss))
		if len(payload) > 0 { // FIN and PSH belong to the last frame
			st.SetFlags(uint8(flags &^ (header.TCPFlagFin | header.TCPFlagPsh)))
		}
		st.SetChecksum(0)
		sum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, sip.SourceAddress(), sip.DestinationAddress(), uint16(thl+n))
		st.SetChecksum(^checksum.Checksum(seg[ethHeaderLen+ihl:], sum))
		out = append(out, seg)
		w.segs++
	}
	return out
}

// Which features are used depends on which are offered: segmentation
// only with partial checksums for both address families.
func TestOffloadNegotiation(t *testing.T) {
	for _, c := range []struct {
		offers         uint64
		tso, guestCsum bool
	}{
		{0, false, false},
		{featureCsum, false, false},
		{featureCsum | featureHostTSO4, false, false},
		{featureHostTSO4 | featureHostTSO6, false, false},
		{featureTSO, true, false},
		{featureGuestCsum, false, true},
		{featureTSO | featureGuestCsum, true, true},
	} {
		s := newSide(t, 1, c.offers)
		// TCP's segments are cut up by the card or by the driver.
		if s.nic.tso != c.tso || s.nic.guestCsum != c.guestCsum || s.nic.SupportedGSO() != stack.HostGSOSupported {
			t.Errorf("offered %#x: tso %v guest csum %v GSO %v", c.offers, s.nic.tso, s.nic.guestCsum, s.nic.SupportedGSO())
		}
		// What the driver accepted is what the card offered of what it
		// uses.
		if got := s.w.dev.DriverFeatures() &^ (1 << 32); got != featureMAC|featureStatus|c.offers {
			t.Errorf("offered %#x: accepted %#x", c.offers, got)
		}
	}
}

// With offload, TCP hands the card 64 KiB segments with partial
// checksums; the card (the model above) cuts them up and completes the
// checksums, and the peer's stack, verifying every checksum, gets the
// data byte for byte.
func TestTSOAcrossCable(t *testing.T) {
	a, b := cableOffering(t, featureTSO)
	echo(t, a, b, 7010)
	for _, s := range []side{a, b} {
		s.w.mu.Lock()
		csums, gso, segs, errs := s.w.csums, s.w.gso, s.w.segs, s.w.errs
		s.w.mu.Unlock()
		t.Logf("%v: %d frames sent, %d with partial checksums, %d segments cut into %d frames", s.nic.MAC(), s.nic.Stats.TxPackets.Load(), csums, gso, segs)
		if len(errs) != 0 {
			t.Errorf("%v: the card saw %q", s.nic.MAC(), errs)
		}
		// 2 MiB is at least 2 MiB/64 KiB segments; each cut into
		// several frames.
		if gso < 32 || segs < 10*gso || csums < gso {
			t.Errorf("%v: %d partial checksums, %d segments cut into %d frames", s.nic.MAC(), csums, gso, segs)
		}
		if tx, rx := s.nic.Stats.TxPackets.Load(), s.w.peer.dev.Raised[queueRX].Load(); tx > 1000 || rx == 0 {
			t.Errorf("%v: %d frames sent for 2 MiB", s.nic.MAC(), tx)
		}
	}
}

// tcpFrame is an Ethernet frame with a TCP/IPv4 segment carrying
// payload, its checksums correct.
func tcpFrame(payload []byte) []byte {
	f := make([]byte, ethHeaderLen+header.IPv4MinimumSize+header.TCPMinimumSize+len(payload))
	header.Ethernet(f).Encode(&header.EthernetFields{Type: header.IPv4ProtocolNumber})
	ip := header.IPv4(f[ethHeaderLen:])
	src, dst := tcpip.AddrFrom4([4]byte{10, 0, 0, 1}), tcpip.AddrFrom4([4]byte{10, 0, 0, 2})
	ip.Encode(&header.IPv4Fields{TotalLength: uint16(len(f) - ethHeaderLen), TTL: 64, Protocol: uint8(header.TCPProtocolNumber), SrcAddr: src, DstAddr: dst})
	ip.SetChecksum(^ip.CalculateChecksum())
	tcp := header.TCP(ip[header.IPv4MinimumSize:])
	tcp.Encode(&header.TCPFields{SrcPort: 1, DstPort: 2, SeqNum: 7, DataOffset: header.TCPMinimumSize, Flags: header.TCPFlagAck, WindowSize: 100})
	copy(tcp[header.TCPMinimumSize:], payload)
	sum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(len(tcp)))
	tcp.SetChecksum(^checksum.Checksum(tcp, sum))
	return f
}

// Received headers: a partial checksum is completed to what the sender
// would have computed, DATA_VALID spares the stack its check, and
// headers a card must not send are refused.
func TestReceiveHeaders(t *testing.T) {
	good := tcpFrame([]byte("hello, offload"))
	tcpAt := ethHeaderLen + header.IPv4MinimumSize
	ip := header.IPv4(good[ethHeaderLen:])
	partial := append([]byte(nil), good...)
	header.TCP(partial[tcpAt:]).SetChecksum(header.PseudoHeaderChecksum(header.TCPProtocolNumber, ip.SourceAddress(), ip.DestinationAddress(), uint16(len(good)-tcpAt)))
	hdr := func(flags, kind byte, start, off int) []byte {
		h := make([]byte, hdrLen)
		h[0], h[offGSOType] = flags, kind
		binary.LittleEndian.PutUint16(h[offCsumStart:], uint16(start))
		binary.LittleEndian.PutUint16(h[offCsumOffset:], uint16(off))
		return h
	}
	for _, c := range []struct {
		name      string
		guestCsum bool
		h, frame  []byte
		valid     bool
		bad       string // part of the error, "" when accepted
	}{
		{"plain", true, hdr(0, 0, 0, 0), good, false, ""},
		{"data valid", true, hdr(flagDataValid, 0, 0, 0), good, true, ""},
		{"partial", true, hdr(flagNeedsCsum, 0, tcpAt, header.TCPChecksumOffset), partial, true, ""},
		{"flags without GUEST_CSUM", false, hdr(flagDataValid, 0, 0, 0), good, false, ""},
		{"GSO", true, hdr(0, gsoTCPv4, 0, 0), good, false, "GSO type"},
		{"GSO without GUEST_CSUM", false, hdr(0, gsoTCPv4, 0, 0), good, false, "GSO type"},
		{"unknown flag", true, hdr(0x80, 0, 0, 0), good, false, "flags"},
		{"checksum in the Ethernet header", true, hdr(flagNeedsCsum, 0, 4, 0), partial, false, "checksum at"},
		{"checksum past the end", true, hdr(flagNeedsCsum, 0, tcpAt, len(good)-tcpAt-1), partial, false, "checksum at"},
		{"checksum start past the end", true, hdr(flagNeedsCsum, 0, 0xffff, 0xffff), partial, false, "checksum at"},
	} {
		n := &NIC{guestCsum: c.guestCsum}
		f := append([]byte(nil), c.frame...)
		valid, d := n.check(c.h, f, len(f))
		switch {
		case c.bad != "":
			if !strings.Contains(d.why, c.bad) {
				t.Errorf("%s: dropped for %q, want %q", c.name, d.why, c.bad)
			}
		case d.why != "":
			t.Errorf("%s: dropped: "+d.why, c.name, d.a, d.b)
		case valid != c.valid || string(f) != string(good):
			t.Errorf("%s: valid %v, frame right %v", c.name, valid, string(f) == string(good))
		}
	}
}

// recorder is a stack that keeps each frame and whether it came with
// its checksums vouched for.
type recorder struct {
	mu    sync.Mutex
	valid []bool
	got   chan struct{}
}

func (r *recorder) DeliverNetworkPacket(_ tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	r.mu.Lock()
	r.valid = append(r.valid, pkt.RXChecksumValidated)
	r.mu.Unlock()
	r.got <- struct{}{}
}

func (r *recorder) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}

// Through the card: frames with bad headers are dropped, logged and
// counted, good ones after them delivered, DATA_VALID passed on to the
// stack.
func TestBadReceiveHeadersDropped(t *testing.T) {
	a, b := cableOffering(t, featureGuestCsum)
	var logs []string
	var mu sync.Mutex
	b.nic.log = func(f string, args ...any) {
		mu.Lock()
		logs = append(logs, fmt.Sprintf(f, args...))
		mu.Unlock()
	}
	r := &recorder{got: make(chan struct{}, 16)}
	b.nic.Attach(r)
	headers := [][2]byte{{0, gsoTCPv4}, {0x40, 0}, {flagNeedsCsum, 0}, {flagDataValid, 0}, {0, 0}}
	var next int
	b.w.rxHeader = func(h, frame []byte) {
		mu.Lock()
		defer mu.Unlock()
		h[0], h[offGSOType] = headers[next][0], headers[next][1]
		if h[0] == flagNeedsCsum {
			binary.LittleEndian.PutUint16(h[offCsumStart:], uint16(len(frame)))
		}
		next++
	}
	frame := append(make([]byte, hdrLen), tcpFrame(nil)...)
	for range headers {
		a.w.Handle(queueTX, []virtiotest.Buf{{Data: frame}})
	}
	for range 2 {
		<-r.got
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.valid) != 2 || !r.valid[0] || r.valid[1] {
		t.Errorf("delivered %v, want [true false]", r.valid)
	}
	mu.Lock()
	defer mu.Unlock()
	if b.nic.BadHeaders.Load() != 3 || b.nic.Stats.RxErrors.Load() != 3 || len(logs) != 2 {
		// Logged the 1st and 2nd time, not the 3rd.
		t.Errorf("bad headers %d, rx errors %d, logged %q", b.nic.BadHeaders.Load(), b.nic.Stats.RxErrors.Load(), logs)
	}
}

// Two senders waiting for transmit pages at once both go on when the
// card hands pages back: interrupts stay on until both are done and
// both are woken. txWait is an hour here, so a sender left asleep
// shows as a test that does not finish.
func TestConcurrentSendersWoken(t *testing.T) {
	defer func(d time.Duration) { txWait = d }(txWait)
	txWait = time.Hour
	a, _ := cable(t)
	a.w.dev.Hold.Store(true) // nothing sent comes back yet
	frames := func(k int) stack.PacketBufferList {
		var l stack.PacketBufferList
		for range k {
			l.PushBack(stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(make([]byte, 1000))}))
		}
		return l
	}
	done := make(chan int, 2)
	waiters := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
			a.nic.mu.Lock()
			w := a.nic.txWaiters
			a.nic.mu.Unlock()
			if w == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d senders waiting, want %d", w, want)
			}
		}
	}
	// The first fills the ring and waits; then the second waits too.
	for i, k := range []int{a.nic.tx.Size() + 10, 10} {
		l := frames(k)
		go func() {
			n, _ := a.nic.WritePackets(l)
			l.DecRef()
			done <- n
		}()
		waiters(i + 1)
	}
	a.w.dev.Release()
	sent := 0
	for range 2 {
		select {
		case n := <-done:
			sent += n
		case <-time.After(30 * time.Second):
			t.Fatalf("a sender still waits after the card gave its pages back (%d frames sent)", sent)
		}
	}
	if want := a.nic.tx.Size() + 20; sent != want || a.nic.Stats.TxDropped.Load() != 0 {
		t.Errorf("sent %d of %d, dropped %d", sent, want, a.nic.Stats.TxDropped.Load())
	}
}
