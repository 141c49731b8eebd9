package net

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/link/ethernet"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"

	"shortbread/kernel/drivers/pci"
	"shortbread/kernel/drivers/virtio/virtiotest"
)

// wire is a simulated virtio-net card whose transmitted frames arrive at
// its peer's receive queue (a cable between two cards). With MRG_RXBUF
// it spreads a frame over as many receive buffers as it needs, and a
// TCP segment the peer sent for the card to cut up reaches a card that
// accepted GUEST_TSO4 whole, as between two guests on one host's bridge.
type wire struct {
	mac     [6]byte
	peer    *wire
	dev     *virtiotest.Device
	mu      sync.Mutex
	pending [][]byte // each a virtio header and a frame
	// corrupt, when set, replaces the length the card reports for a
	// received frame's first buffer.
	corrupt func(n uint32) uint32
	// offers are the card's offload features (offload_test.go):
	// transmitted frames are then finished by transmit; rxHeader, when
	// set, writes the header of each received frame.
	offers   uint64
	rxHeader func(hdr, frame []byte)
	// split, when set, is the most bytes of a frame put into one
	// mergeable buffer (the header stays whole in the first); mangle,
	// when set, may change the first buffer's header and the lengths
	// reported for a frame's buffers before they are handed back.
	split  int
	mangle func(hdr []byte, lens []uint32) []uint32
	// sink, when set, drops what the driver sends without looking;
	// record keeps it in sent (each a virtio header and a frame).
	sink, record bool
	sent         [][]byte
	lens         []uint32
	// counts of what transmit saw: frames with a partial checksum, and
	// segments cut up (gso) into how many frames (segs) or passed on
	// whole (whole); of what was received, frames spread over more
	// than one buffer (spread), and times a frame waited for more
	// buffers than were posted (waited).
	csums, gso, segs, whole, spread, waited int
	errs                                    []string
}

func (w *wire) Features() uint64 { return featureMAC | featureStatus | w.offers }
func (w *wire) Queues() int      { return 2 }
func (w *wire) Config() []byte   { return append(w.mac[:], statusLinkUp, 0) }
func (w *wire) MergedQueue() int { return queueRX }

func (w *wire) Ready(q int) bool {
	if q != queueRX {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending) > 0
}

// Handle sends a frame (receiving is Merge).
func (w *wire) Handle(q int, bufs []virtiotest.Buf) uint32 {
	if w.sink {
		return 0
	}
	var frame []byte
	for _, b := range bufs {
		frame = append(frame, b.Data...)
	}
	if w.record {
		w.mu.Lock()
		w.sent = append(w.sent, frame)
		w.mu.Unlock()
		return 0
	}
	if len(frame) > hdrLen {
		frames := [][]byte{append(make([]byte, hdrLen), frame[hdrLen:]...)}
		if w.offers != 0 {
			frames = w.transmit(frame)
		}
		w.peer.arrive(frames...)
	}
	return 0
}

// arrive queues frames (each a virtio header and a frame) for the card
// to receive.
func (w *wire) arrive(frames ...[]byte) {
	w.mu.Lock()
	w.pending = append(w.pending, frames...)
	w.mu.Unlock()
	w.dev.Poke(queueRX)
}

// pop drops the first pending frame, moving the rest down so that the
// array is reused (the allocation test counts the card's allocations
// too).
func (w *wire) pop() {
	copy(w.pending, w.pending[1:])
	w.pending[len(w.pending)-1] = nil
	w.pending = w.pending[:len(w.pending)-1]
}

// Merge receives the next pending frame into the receive buffers
// available: one without MRG_RXBUF (a frame too long for it is dropped
// and recorded), else as many as it takes, waiting for more if too few
// are posted.
func (w *wire) Merge(peek func(int) []virtiotest.Buf) []uint32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	mrg := w.dev.DriverFeatures()&featureMrgRxBuf != 0
	for len(w.pending) > 0 {
		p := w.pending[0]
		w.lens = w.lens[:0]
		first := peek(0)
		if first == nil {
			return nil
		}
		if !mrg && len(p) > len(first[0].Data) {
			w.errs = append(w.errs, fmt.Sprintf("a %d-byte frame for a %d-byte buffer", len(p), len(first[0].Data)))
			w.pop()
			continue
		}
		for off, i := 0, 0; off < len(p); i++ {
			bufs := peek(i)
			if bufs == nil {
				w.waited++
				return nil // wait for more buffers
			}
			d := bufs[0].Data
			k := min(len(d), len(p)-off)
			if w.split > 0 && mrg {
				lim := w.split
				if i == 0 {
					lim = max(lim, hdrLen) // the header is never split
				}
				k = min(k, lim)
			}
			copy(d, p[off:off+k])
			off += k
			w.lens = append(w.lens, uint32(k))
		}
		h := first[0].Data[:hdrLen]
		binary.LittleEndian.PutUint16(h[offNumBuffers:], uint16(len(w.lens)))
		if !mrg {
			binary.LittleEndian.PutUint16(h[offNumBuffers:], 0) // as older hosts leave it
		}
		if len(w.lens) > 1 {
			w.spread++
		}
		w.pop()
		if w.rxHeader != nil {
			w.rxHeader(h, p[hdrLen:])
		}
		if w.corrupt != nil {
			w.lens[0] = w.corrupt(w.lens[0])
		}
		if w.mangle != nil {
			w.lens = w.mangle(h, w.lens)
		}
		return w.lens
	}
	return nil
}

type side struct {
	w   *wire
	nic *NIC
	s   *stack.Stack
}

func newSide(t *testing.T, last byte, offers uint64) side { return newSideWith(t, last, offers, nil) }

// newSideWith is newSide with setup run on the device before the driver
// finds it.
func newSideWith(t *testing.T, last byte, offers uint64, setup func(*virtiotest.Device)) side {
	w := &wire{mac: [6]byte{0x52, 0x54, 0, 0x12, 0x34, last}, offers: offers}
	w.dev = virtiotest.New(0x1041, w)
	if setup != nil {
		setup(w.dev)
	}
	devs, _ := pci.Scan(w.dev.Cfg)
	nic, err := New(devs[0], w.dev.Platform(), Config{Name: "eth0", DMA: w.dev.Mem})
	if err != nil {
		t.Fatal(err)
	}
	s := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, arp.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol},
	})
	if err := s.CreateNIC(2, ethernet.New(nic)); err != nil {
		t.Fatal(err)
	}
	addr := tcpip.AddressWithPrefix{Address: tcpip.AddrFrom4([4]byte{10, 0, 0, last}), PrefixLen: 24}
	if err := s.AddProtocolAddress(2, tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber, AddressWithPrefix: addr}, stack.AddressProperties{}); err != nil {
		t.Fatal(err)
	}
	s.SetRouteTable([]tcpip.Route{{Destination: addr.Subnet(), NIC: 2}})
	return side{w, nic, s}
}

func cable(t *testing.T) (a, b side) { return cableOffering(t, 0) }

// cableOffering joins two cards offering the offload features offers.
func cableOffering(t *testing.T, offers uint64) (a, b side) {
	a, b = newSide(t, 1, offers), newSide(t, 2, offers)
	a.w.peer, b.w.peer = b.w, a.w
	return a, b
}

func TestConfig(t *testing.T) {
	a, _ := cable(t)
	if a.nic.MAC() != tcpip.LinkAddress([]byte{0x52, 0x54, 0, 0x12, 0x34, 1}) || !a.nic.LinkUp() {
		t.Errorf("MAC %v link %v", a.nic.MAC(), a.nic.LinkUp())
	}
	if a.nic.rx.Size() != maxRX || a.nic.tx.Size() != maxTX {
		t.Errorf("queues %d %d", a.nic.rx.Size(), a.nic.tx.Size())
	}
}

// TCP across the cable: ARP, the handshake, 2 MiB each way checked by
// hash, through the receive and transmit queues many times over.
func TestTCPAcrossCable(t *testing.T) {
	a, b := cable(t)
	echo(t, a, b, 7000)
	for _, s := range []side{a, b} {
		if s.nic.Stats.RxPackets.Load() < 1000 || s.nic.Stats.TxPackets.Load() < 1000 || s.nic.Stats.RxErrors.Load() != 0 {
			t.Errorf("%v: rx %d tx %d rx errors %d", s.nic.MAC(), s.nic.Stats.RxPackets.Load(), s.nic.Stats.TxPackets.Load(), s.nic.Stats.RxErrors.Load())
		}
		// Sending asks for interrupts only while it waits for the ring:
		// far fewer than one per batch of frames sent.
		if tx, rx := s.w.dev.Raised[queueTX].Load(), s.w.dev.Raised[queueRX].Load(); tx*10 > int64(s.nic.Stats.TxPackets.Load()) || rx == 0 {
			t.Errorf("interrupts for sent frames %d (%d sent), for received ones %d", tx, s.nic.Stats.TxPackets.Load(), rx)
		}
	}
}

// echo sends 2 MiB from a to b over TCP and back, checked by hash, and
// checks that neither card dropped or rejected a frame.
func echo(t *testing.T, a, b side, port uint16) {
	t.Helper()
	l, err := gonet.ListenTCP(b.s, tcpip.FullAddress{NIC: 2, Port: port}, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	data := make([]byte, 2<<20)
	for i := range data {
		data[i] = byte(i*31 + i>>9)
	}
	want := sha256.Sum256(data)
	srv := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			srv <- err
			return
		}
		defer c.Close()
		got, err := io.ReadAll(io.LimitReader(c, int64(len(data))))
		if err == nil && sha256.Sum256(got) != want {
			err = io.ErrUnexpectedEOF
		}
		if err == nil {
			_, err = c.Write(data) // and back
		}
		srv <- err
	}()
	c, err := gonet.DialTCP(a.s, tcpip.FullAddress{NIC: 2, Addr: tcpip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: port}, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := c.Write(data); err != nil {
		t.Fatal(err)
	}
	back, err := io.ReadAll(io.LimitReader(c, int64(len(data))))
	if err != nil || !bytes.Equal(back, data) {
		for _, s := range []side{a, b} {
			st := &s.nic.Stats
			s.w.mu.Lock()
			pending := len(s.w.pending)
			s.w.mu.Unlock()
			s.nic.mu.Lock()
			free := len(s.nic.txFree)
			s.nic.mu.Unlock()
			t.Logf("%v: rx %d dropped %d errors %d, tx %d dropped %d; raised rx %d tx %d; pending %d, tx free %d, rxq %d; tcp retransmits %d, timeouts %d",
				s.nic.MAC(), st.RxPackets.Load(), st.RxDropped.Load(), st.RxErrors.Load(), st.TxPackets.Load(), st.TxDropped.Load(),
				s.w.dev.Raised[queueRX].Load(), s.w.dev.Raised[queueTX].Load(), pending, free, len(s.nic.rxq),
				s.s.Stats().TCP.Retransmits.Value(), s.s.Stats().TCP.Timeouts.Value())
		}
		t.Fatalf("echo: %v, %d bytes", err, len(back))
	}
	if err := <-srv; err != nil {
		t.Fatal(err)
	}
	for _, s := range []side{a, b} {
		if e := s.nic.Stats.RxErrors.Load() + s.nic.Stats.TxErrors.Load(); e != 0 {
			t.Errorf("%v: %d errors", s.nic.MAC(), e)
		}
		if len(s.w.dev.Errors) != 0 {
			t.Errorf("device saw %v", s.w.dev.Errors)
		}
		// A full transmit ring makes the sender wait, not drop.
		if d := s.nic.Stats.TxDropped.Load(); d != 0 {
			t.Errorf("%d frames dropped", d)
		}
		// A stack that is behind leaves received frames in the card,
		// which here holds them all: none is taken only to be dropped.
		if d := s.nic.Stats.RxDropped.Load(); d != 0 {
			t.Errorf("%d received frames dropped", d)
		}
	}
}

// Frames the card reports with impossible lengths (none, less than the
// header and an Ethernet header, more than the buffer holds) are
// dropped and counted; the card goes on.
func TestBadLengths(t *testing.T) {
	a, b := cable(t)
	var mu sync.Mutex
	bad := 0
	b.w.corrupt = func(n uint32) uint32 {
		mu.Lock()
		defer mu.Unlock()
		if bad < 3 {
			bad++
			return [...]uint32{0, hdrLen + 5, 4097}[bad-1]
		}
		return n
	}
	// The first three frames b receives (a's ARP requests) are lost to
	// bad lengths.
	l, err := gonet.ListenTCP(b.s, tcpip.FullAddress{NIC: 2, Port: 7001}, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	// ARP gives up after three unanswered requests: dial again then.
	var c *gonet.TCPConn
	for try := 0; try < 3; try++ {
		if c, err = gonet.DialTCP(a.s, tcpip.FullAddress{NIC: 2, Addr: tcpip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: 7001}, ipv4.ProtocolNumber); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(c)
	c.Close()
	if string(got) != "hi" {
		t.Errorf("read %q", got)
	}
	if e, bb := b.nic.Stats.RxErrors.Load(), b.nic.BadBuffers.Load(); e != 3 || bb != 3 {
		t.Errorf("rx errors %d, bad buffers %d, want 3", e, bb)
	}
	quiet(t, b.nic)
}

// A card whose used index runs ahead of the buffers posted broke the
// protocol beyond telling which entries are real: it is stopped
// (logged), nothing else happens.
func TestRunawayIndexStopsCard(t *testing.T) {
	a, b := cable(t)
	logged := make(chan string, 1)
	b.nic.log = func(f string, args ...any) {
		select {
		case logged <- fmt.Sprintf(f, args...):
		default:
		}
	}
	b.w.dev.Corrupt = func(id, n *uint32, idx *uint16) { *idx += 1000 }
	go gonet.DialTCP(a.s, tcpip.FullAddress{NIC: 2, Addr: tcpip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: 7002}, ipv4.ProtocolNumber)
	select {
	case l := <-logged:
		if !strings.Contains(l, "ran past") || !strings.Contains(l, "stopped") {
			t.Errorf("logged %q", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no report of the broken card")
	}
	if b.nic.Stats.RxPackets.Load() != 0 || !b.nic.rxBroken.Load() {
		t.Errorf("frames delivered from a broken card")
	}
}

// held is a stack that takes no frame until released, then counts them.
type held struct {
	release chan struct{}
	mu      sync.Mutex
	got     int
	all     chan struct{}
	want    int
}

func (h *held) DeliverNetworkPacket(_ tcpip.NetworkProtocolNumber, _ *stack.PacketBuffer) {
	<-h.release
	h.mu.Lock()
	h.got++
	if h.got == h.want {
		close(h.all)
	}
	h.mu.Unlock()
}

func (h *held) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}

// While the stack is behind, received frames wait in the card rather
// than being taken and dropped: ten times what the driver queues for
// the stack all arrive once it catches up.
func TestReceiveBackpressure(t *testing.T) {
	a, b := cable(t)
	const frames = 10 * maxRX
	h := &held{release: make(chan struct{}), all: make(chan struct{}), want: frames}
	b.nic.Attach(h)
	frame := make([]byte, hdrLen+60)
	for i := 0; i < frames; i++ {
		a.w.Handle(queueTX, []virtiotest.Buf{{Data: frame}})
	}
	// The driver stops taking frames once its queue to the stack is
	// full; only then is the stack let go.
	waitRxHeld(t, b.nic)
	close(h.release)
	select {
	case <-h.all:
	case <-time.After(30 * time.Second):
		h.mu.Lock()
		defer h.mu.Unlock()
		t.Fatalf("%d of %d frames delivered, %d dropped", h.got, frames, b.nic.Stats.RxDropped.Load())
	}
	if d := b.nic.Stats.RxDropped.Load(); d != 0 || b.nic.Stats.RxPackets.Load() != frames {
		t.Errorf("%d frames delivered, %d dropped, want %d and 0", b.nic.Stats.RxPackets.Load(), d, frames)
	}
}

// waitRxHeld waits until nic stops taking frames because its queue to the
// stack is full; 30 s without it means it never will.
func waitRxHeld(t *testing.T, nic *NIC) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !nic.rxHeld.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the driver never filled its queue: %d queued", len(nic.rxq))
		}
	}
}
