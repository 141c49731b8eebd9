package intelnictest

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/link/ethernet"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

// TestMAC is the tests' address for card number last.
func TestMAC(last byte) [6]byte { return [6]byte{0x52, 0x54, 0, 0x12, 0x34, last} }

// LinkAddr is m as the stack spells a link address.
func LinkAddr(m [6]byte) tcpip.LinkAddress { return tcpip.LinkAddress(m[:]) }

// Recorder is a dispatcher that keeps what it is given.
type Recorder struct {
	mu     sync.Mutex
	frames [][]byte
	valid  []bool // each frame's RXChecksumValidated
	got    chan struct{}
}

// NewRecorder is a dispatcher that has been given nothing.
func NewRecorder() *Recorder { return &Recorder{got: make(chan struct{}, 1024)} }

// DeliverNetworkPacket keeps the frame.
func (r *Recorder) DeliverNetworkPacket(_ tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	r.mu.Lock()
	r.frames = append(r.frames, pkt.ToView().AsSlice())
	r.valid = append(r.valid, pkt.RXChecksumValidated)
	r.mu.Unlock()
	r.got <- struct{}{}
}

// DeliverLinkPacket ignores the packet.
func (r *Recorder) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}

// All are the frames delivered so far.
func (r *Recorder) All() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]byte(nil), r.frames...)
}

// Vouched says of each frame delivered so far whether the driver
// vouched for its checksums.
func (r *Recorder) Vouched() []bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]bool(nil), r.valid...)
}

// Wait waits for n more frames.
func (r *Recorder) Wait(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		select {
		case <-r.got:
		case <-time.After(5 * time.Second):
			t.Fatalf("frame %d of %d never delivered", i+1, n)
		}
	}
}

// Eventually polls cond (a test's own wait, not the driver's).
func Eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("never: %s", what)
}

// Frame is an n-byte IPv4 frame from card 2 to card 1 whose payload
// follows from seed.
func Frame(n int, seed byte) []byte {
	f := make([]byte, n)
	copy(f, []byte{0x52, 0x54, 0, 0x12, 0x34, 0x01, 0x52, 0x54, 0, 0x12, 0x34, 0x02, 0x08, 0x00})
	for i := 14; i < n; i++ {
		f[i] = seed + byte(i*7)
	}
	return f
}

// Packets are frames as a link endpoint is given them.
func Packets(frames ...[]byte) stack.PacketBufferList {
	var l stack.PacketBufferList
	for _, f := range frames {
		l.PushBack(stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(f)}))
	}
	return l
}

// Stack is a netstack with IPv4, ARP and TCP on ep (a card's raw
// frames, behind netstack's Ethernet layer) as NIC 2 at 10.0.0.last/24.
func Stack(t *testing.T, ep stack.LinkEndpoint, last byte) *stack.Stack {
	st := stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, arp.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol},
	})
	if err := st.CreateNIC(2, ethernet.New(ep)); err != nil {
		t.Fatal(err)
	}
	addr := tcpip.AddressWithPrefix{Address: tcpip.AddrFrom4([4]byte{10, 0, 0, last}), PrefixLen: 24}
	if err := st.AddProtocolAddress(2, tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber, AddressWithPrefix: addr}, stack.AddressProperties{}); err != nil {
		t.Fatal(err)
	}
	st.SetRouteTable([]tcpip.Route{{Destination: addr.Subnet(), NIC: 2}})
	return st
}

// TCPExchange connects a to b (Stack's 10.0.0.2) by TCP and sends 2 MiB
// each way, checked by hash on arrival.
func TCPExchange(t *testing.T, a, b *stack.Stack) {
	l, err := gonet.ListenTCP(b, tcpip.FullAddress{NIC: 2, Port: 7000}, ipv4.ProtocolNumber)
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
		h := sha256.New()
		if _, err := io.CopyN(h, c, int64(len(data))); err != nil {
			srv <- err
			return
		}
		if !bytes.Equal(h.Sum(nil), want[:]) {
			srv <- fmt.Errorf("server: hash differs")
			return
		}
		_, err = c.Write(data)
		srv <- err
	}()
	c, err := gonet.DialTCP(a, tcpip.FullAddress{NIC: 2, Addr: tcpip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: 7000}, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go c.Write(data)
	h := sha256.New()
	if _, err := io.CopyN(h, c, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(h.Sum(nil), want[:]) {
		t.Error("client: hash differs")
	}
	if err := <-srv; err != nil {
		t.Fatal(err)
	}
	// A frame the receiver refused (a driver's or card's bad checksum)
	// would be sent again and the hashes would still agree: count them.
	for _, st := range []*stack.Stack{a, b} {
		s := st.Stats()
		if n, m := s.TCP.ChecksumErrors.Value(), s.IP.MalformedPacketsReceived.Value(); n != 0 || m != 0 {
			t.Errorf("%d TCP checksum errors, %d malformed IP packets received", n, m)
		}
	}
}
