package inet

import (
	"sync"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// loopbackMTU is Linux's lo MTU: big enough that TCP on loopback sends
// large segments and a 64 KiB UDP datagram is never fragmented.
const loopbackMTU = 65536

// loopback is the link endpoint of the lo interface: every packet the
// stack writes comes straight back in as if received. It touches no
// device and no host OS, so netstack runs on ordinary goroutines only.
type loopback struct {
	mu   sync.RWMutex
	disp stack.NetworkDispatcher // protected by mu; nil until attached
	mtu  uint32                  // protected by mu
}

func newLoopback() *loopback { return &loopback{mtu: loopbackMTU} }

func (l *loopback) Attach(d stack.NetworkDispatcher) {
	l.mu.Lock()
	l.disp = d
	l.mu.Unlock()
}

func (l *loopback) IsAttached() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.disp != nil
}

func (l *loopback) MTU() uint32 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mtu
}

func (l *loopback) SetMTU(mtu uint32) {
	l.mu.Lock()
	l.mtu = mtu
	l.mu.Unlock()
}

// Capabilities: checksums are neither computed nor checked, as on
// Linux's lo, since the bytes never leave memory.
func (*loopback) Capabilities() stack.LinkEndpointCapabilities {
	return stack.CapabilityRXChecksumOffload | stack.CapabilityTXChecksumOffload | stack.CapabilityLoopback
}

func (*loopback) MaxHeaderLength() uint16                 { return 0 }
func (*loopback) LinkAddress() tcpip.LinkAddress          { return "" }
func (*loopback) SetLinkAddress(tcpip.LinkAddress)        {}
func (*loopback) Wait()                                   {}
func (*loopback) ARPHardwareType() header.ARPHardwareType { return header.ARPHardwareLoopback }
func (*loopback) AddHeader(*stack.PacketBuffer)           {}
func (*loopback) ParseHeader(*stack.PacketBuffer) bool    { return true }
func (*loopback) Close()                                  {}
func (*loopback) SetOnCloseAction(func())                 {}

// loopCopyMax is the largest packet WriteOnePacket copies (see there).
const loopCopyMax = 512

// WritePackets delivers each packet to the inbound side (WriteOnePacket).
func (l *loopback) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	for _, pkt := range pkts.AsSlice() {
		l.WriteOnePacket(pkt)
	}
	return pkts.Len(), nil
}

// WriteOnePacket delivers pkt to the inbound side; the NIC hands each
// packet sent here without a list (stack.OnePacketWriter, a patch of
// netstack's: the list cost an allocation a packet). The outbound
// packet carries headers already parsed and offsets set by the sender;
// the receiver must parse from scratch, so it is put into a fresh
// packet holding only its bytes. A small packet (a request, an answer,
// an ACK) is copied into a buffer of its own: sharing the sender's
// chunks, as a large one does, would make the receiver's first look at
// each header copy its chunk anyway (netstack's buffers copy a shared
// chunk before handing out a view of it), after two view clones.
func (l *loopback) WriteOnePacket(pkt *stack.PacketBuffer) tcpip.Error {
	l.mu.RLock()
	d := l.disp
	l.mu.RUnlock()
	var payload buffer.Buffer
	if n := pkt.Size(); n <= loopCopyMax {
		v := buffer.NewView(n)
		views, off := pkt.AsViewList()
		for x := views.Front(); x != nil; x = x.Next() {
			s := x.AsSlice()
			if off >= len(s) {
				off -= len(s)
				continue
			}
			v.Write(s[off:])
			off = 0
		}
		payload = buffer.MakeWithView(v)
	} else {
		payload = pkt.ToBuffer()
	}
	in := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: payload})
	if d != nil {
		d.DeliverNetworkPacket(pkt.NetworkProtocolNumber, in)
	}
	in.DecRef()
	return nil
}
