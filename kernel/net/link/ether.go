package link

import (
	"sync"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Ether is the part of a card's stack.LinkEndpoint that does not depend
// on the card: the stack it delivers to, its MTU and address, its
// counters, and the methods netstack asks of every raw-Ethernet
// endpoint. A driver embeds it and adds WritePackets and LinkUp; the
// endpoint is wrapped with netstack's link/ethernet, which adds and
// parses the Ethernet header, so the frames here carry theirs already.
type Ether struct {
	Stats Stats // as /proc/net/dev shows them

	addr   tcpip.LinkAddress
	maxMTU uint32

	mu   sync.RWMutex
	disp stack.NetworkDispatcher
	mtu  uint32
}

// InitEther sets the card's address and the largest MTU its buffers
// take, which is also the MTU it starts with. Drivers call it before the
// card is attached.
func (e *Ether) InitEther(addr tcpip.LinkAddress, maxMTU uint32) {
	e.addr, e.maxMTU, e.mtu = addr, maxMTU, maxMTU
}

// Deliver counts frame and hands it to the stack, or counts it dropped
// when nothing is attached yet. The stack keeps the slice: the caller
// passes a frame of its own, not a DMA buffer it re-arms.
func (e *Ether) Deliver(frame []byte) { e.DeliverChecked(frame, false) }

// DeliverChecked is Deliver for a frame whose checksums the card has
// verified (valid), which the stack then does not verify again (with
// netstack-patches/stack-rx-checksum-per-packet.diff; unpatched,
// netstack verifies every frame of an endpoint that does not claim
// CapabilityRXChecksumOffload, which is only slower).
func (e *Ether) DeliverChecked(frame []byte, valid bool) {
	e.mu.RLock()
	d := e.disp
	e.mu.RUnlock()
	if d == nil {
		e.Stats.RxDropped.Add(1)
		return
	}
	e.Stats.RxPackets.Add(1)
	e.Stats.RxBytes.Add(uint64(len(frame)))
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(frame)})
	pkt.RXChecksumValidated = valid
	d.DeliverNetworkPacket(0, pkt) // the Ethernet layer above reads the type
	pkt.DecRef()
}

// DeliverBuffer is DeliverChecked for a frame already in netstack's
// buffers, which the stack takes over (a driver copies a frame out of
// its DMA buffers into pooled chunks once, instead of into a slice of
// its own that the stack then copies again). It is released if nothing
// is attached.
func (e *Ether) DeliverBuffer(frame buffer.Buffer, valid bool) {
	e.mu.RLock()
	d := e.disp
	e.mu.RUnlock()
	if d == nil {
		e.Stats.RxDropped.Add(1)
		frame.Release()
		return
	}
	e.Stats.RxPackets.Add(1)
	e.Stats.RxBytes.Add(uint64(frame.Size()))
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: frame})
	pkt.RXChecksumValidated = valid
	d.DeliverNetworkPacket(0, pkt)
	pkt.DecRef()
}

// Counters are the card's counters.
func (e *Ether) Counters() *Stats { return &e.Stats }

// MAC is the card's address.
func (e *Ether) MAC() tcpip.LinkAddress { return e.addr }

func (e *Ether) Attach(d stack.NetworkDispatcher) {
	e.mu.Lock()
	e.disp = d
	e.mu.Unlock()
}

func (e *Ether) IsAttached() bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.disp != nil
}

func (e *Ether) MTU() uint32 {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.mtu
}

// SetMTU keeps the MTU within what the card's buffers take.
func (e *Ether) SetMTU(mtu uint32) {
	e.mu.Lock()
	e.mtu = min(mtu, e.maxMTU)
	e.mu.Unlock()
}

func (e *Ether) LinkAddress() tcpip.LinkAddress             { return e.addr }
func (*Ether) Capabilities() stack.LinkEndpointCapabilities { return 0 }
func (*Ether) MaxHeaderLength() uint16                      { return 0 }
func (*Ether) SetLinkAddress(tcpip.LinkAddress)             {}
func (*Ether) Wait()                                        {}
func (*Ether) ARPHardwareType() header.ARPHardwareType      { return header.ARPHardwareEther }
func (*Ether) AddHeader(*stack.PacketBuffer)                {}
func (*Ether) ParseHeader(*stack.PacketBuffer) bool         { return true }
func (*Ether) Close()                                       {}
func (*Ether) SetOnCloseAction(func())                      {}
