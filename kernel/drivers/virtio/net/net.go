// Package net drives virtio network cards (virtio 1.0 §5.1) as netstack
// link endpoints: frames go out through the transmit queue and come in
// through receive buffers the driver keeps posted, one page each. A
// goroutine woken by the card's interrupt takes received frames to the
// stack, reposts their buffers and reclaims sent ones; nothing polls
// while the link is idle. When the stack is behind, received frames
// stay in the card (which holds them or drops what its ring cannot
// take, as a real card does) instead of being taken and thrown away.
// Every length the card hands back is checked: a frame shorter than the
// virtio header plus an Ethernet header, or longer than the buffer, is
// dropped and counted as an error.
//
// The endpoint is raw Ethernet frames; wrap it with netstack's
// link/ethernet to attach it to a stack.
//
// # Features
//
// Negotiated when the card offers them:
//
//   - MAC and STATUS: the address and the link state.
//   - CSUM, HOST_TSO4 and HOST_TSO6, only all three together: TCP then
//     hands the card segments of up to 64 KiB (netstack's "host GSO",
//     stack.HostGSOSupported) with the checksum left partial (the
//     pseudo-header sum in the field, NEEDS_CSUM with csum_start and
//     csum_offset in the header), and the card cuts them into MSS-sized
//     frames and completes each checksum. A 64 KiB reply is then one
//     pass through netstack's TCP and IP and one notification instead of
//     45 of each. Both address families are needed because netstack
//     asks a link endpoint about GSO once, not per family. Without them
//     the stack computes every checksum and sends MTU-sized segments.
//     UDP and ICMP always carry checksums computed by the stack (the
//     endpoint does not claim CapabilityTXChecksumOffload, which would
//     make netstack leave them out with nothing to fill them in).
//   - GUEST_CSUM: a received frame marked DATA_VALID skips the stack's
//     checksum verification (per packet: netstack-patches/
//     stack-rx-checksum-per-packet.diff); one marked NEEDS_CSUM (from a
//     sender on the same host whose checksum was never completed) has
//     its checksum completed here, after csum_start and csum_offset are
//     checked against the frame.
//
// Not negotiated: GUEST_TSO4/6 and MRG_RXBUF. Receive buffers are one
// page, so a card sending 64 KiB segments would need mergeable
// buffers (a frame spread over several posted pages), which this driver
// does not do yet; without GUEST_TSO the card (or the host behind it)
// segments what it receives before handing it over. Receive headers
// naming a GSO type, unknown flags or a checksum position outside the
// frame are dropped, logged and counted (RxErrors, BadHeaders).
package net

import (
	"fmt"
	"sync"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"shortbread/kernel/drivers/pci"
	"shortbread/kernel/drivers/virtio"
	"shortbread/kernel/net/link"
)

// Device IDs: modern (0x1040 + type 1) and transitional.
var IDs = []pci.ID{{Vendor: virtio.Vendor, Device: 0x1041}, {Vendor: virtio.Vendor, Device: 0x1000}}

// Feature bits (§5.1.3).
const (
	featureCsum      = 1 << 0
	featureGuestCsum = 1 << 1
	featureMAC       = 1 << 5
	featureHostTSO4  = 1 << 11
	featureHostTSO6  = 1 << 12
	featureStatus    = 1 << 16
	featureTSO       = featureCsum | featureHostTSO4 | featureHostTSO6
)

// The header every frame carries (§5.1.6: 12 bytes once VERSION_1 is
// negotiated): flags, gso_type, then little-endian hdr_len, gso_size,
// csum_start, csum_offset and num_buffers.
const (
	hdrLen        = 12
	offGSOType    = 1
	offHdrLen     = 2
	offGSOSize    = 4
	offCsumStart  = 6
	offCsumOffset = 8
	flagNeedsCsum = 1
	flagDataValid = 2
	gsoNone       = 0
	gsoTCPv4      = 1
	gsoTCPv6      = 4
	statusLinkUp  = 1
	queueRX       = 0
	queueTX       = 1
	ethHeaderLen  = 14
	maxRX         = 128
	maxTX         = 256
	gsoMaxSize    = 1<<16 - 1 // the largest IP packet handed to the card
	frameMax      = 1514      // a 1500-byte payload and the Ethernet header
	gsoFrameMax   = ethHeaderLen + gsoMaxSize
	gsoFramePages = (hdrLen + gsoFrameMax + virtio.PageSize - 1) / virtio.PageSize
)

// NIC is one virtio network card.
type NIC struct {
	Name   string
	t      *virtio.Transport
	rx, tx *virtio.Queue
	dma    virtio.DMA
	irqs   []pci.IRQ
	isr    bool
	status bool // the card reports link status
	// tso: the card takes partial checksums and 64 KiB TCP segments;
	// guestCsum: it marks received frames' checksums.
	tso, guestCsum bool
	log            func(format string, args ...any)
	link.Ether

	// BadHeaders counts received frames dropped for their virtio header
	// (a GSO type, unknown flags, a checksum position outside the frame).
	BadHeaders atomic.Uint64

	mu        sync.Mutex
	txFree    []virtio.Page // transmit pages not in the card's hands
	txWaiters int           // senders in waitTx
	txWake    chan struct{} // closed (and replaced) when pages come back
	rxq       chan rxFrame  // received frames on their way to the stack

	// rxMu serialises taking frames from the card, which both the
	// interrupt goroutine and the deliveries goroutine do. rxHeld is
	// set when receiving stopped because rxq was full, with frames
	// possibly left in the card: the deliveries goroutine, having made
	// room, takes them (the card raises no interrupt for frames it has
	// already reported). rxBroken is set once the card broke the
	// protocol.
	rxMu     sync.Mutex
	rxHeld   atomic.Bool
	rxBroken atomic.Bool
}

// Config is what New needs besides the device.
type Config struct {
	Name string // eth0, ...
	DMA  virtio.DMA
	Log  func(format string, args ...any)
}

// New brings d up as a network card.
func New(d *pci.Device, p pci.Platform, c Config) (*NIC, error) {
	t, err := virtio.Open(d, p)
	if err != nil {
		return nil, err
	}
	feat, err := t.Negotiate(featureMAC | featureStatus | featureTSO | featureGuestCsum)
	if err != nil {
		return nil, err
	}
	n := &NIC{Name: c.Name, t: t, dma: c.DMA, log: c.Log, txWake: make(chan struct{}),
		rxq: make(chan rxFrame, maxRX)}
	if n.log == nil {
		n.log = func(string, ...any) {}
	}
	if feat&featureMAC == 0 {
		t.Fail()
		return nil, fmt.Errorf("virtio-net %s: no MAC address offered", c.Name)
	}
	var mac [6]byte
	for i := range mac {
		mac[i] = t.Config().Read8(uint32(i))
	}
	n.InitEther(tcpip.LinkAddress(mac[:]), frameMax)
	n.status = feat&featureStatus != 0
	n.guestCsum = feat&featureGuestCsum != 0
	kind, irqs, err := d.Interrupts(p, 1)
	if err != nil {
		t.Fail()
		return nil, err
	}
	n.irqs, n.isr = irqs, kind != pci.MSIX
	vec := uint16(virtio.NoVector)
	if kind == pci.MSIX {
		vec = 0
		if err := t.SetConfigVector(virtio.NoVector); err != nil {
			t.Fail()
			return nil, err
		}
	}
	if n.rx, err = t.SetupQueue(queueRX, maxRX, vec, c.DMA); err != nil {
		t.Fail()
		return nil, err
	}
	if n.tx, err = t.SetupQueue(queueTX, maxTX, vec, c.DMA); err != nil {
		t.Fail()
		return nil, err
	}
	// A 64 KiB segment takes a chain of pages; a ring too small for a
	// few of them makes segmentation offload pointless (the features
	// stay negotiated, but the stack is not told and never uses them).
	n.tso = feat&featureTSO == featureTSO && n.tx.Size() >= 4*gsoFramePages
	// Sent frames' pages are reclaimed when more are sent: no interrupt
	// is needed for them.
	n.tx.SuppressInterrupts(true)
	for i := 0; i < n.tx.Size(); i++ {
		pg, err := c.DMA.Alloc()
		if err != nil {
			t.Fail()
			return nil, err
		}
		n.txFree = append(n.txFree, pg)
	}
	for i := 0; i < n.rx.Size(); i++ {
		pg, err := c.DMA.Alloc()
		if err != nil {
			t.Fail()
			return nil, err
		}
		if err := n.post(pg); err != nil {
			t.Fail()
			return nil, err
		}
	}
	t.DriverOK()
	n.rx.Kick()
	go n.interrupts()
	go n.deliveries()
	return n, nil
}

// LinkUp reports the link state (always up if the card does not say).
func (n *NIC) LinkUp() bool {
	return !n.status || n.t.Config().Read16(6)&statusLinkUp != 0
}

// GSOMaxSize and SupportedGSO (stack.GSOEndpoint, which netstack's
// link/ethernet passes through) tell TCP whether it may hand the card
// segments larger than the MTU with partial checksums.
func (n *NIC) GSOMaxSize() uint32 {
	if n.tso {
		return gsoMaxSize
	}
	return 0
}

func (n *NIC) SupportedGSO() stack.SupportedGSO {
	if n.tso {
		return stack.HostGSOSupported
	}
	return stack.GSONotSupported
}

// interrupts is the card's goroutine.
func (n *NIC) interrupts() {
	for {
		if n.isr {
			n.t.ISR()
		}
		n.reclaim()
		if !n.receive() {
			return
		}
		if err := n.irqs[0].Wait(); err != nil {
			return
		}
	}
}

// broken stops taking frames from a card that broke the protocol.
func (n *NIC) broken(err error) bool {
	n.rxBroken.Store(true)
	n.log("virtio-net %s: %v; the card is stopped", n.Name, err)
	return false
}
