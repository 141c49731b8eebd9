// Package net drives virtio network cards (virtio 1.0 §5.1) as netstack
// link endpoints: frames go out through the transmit queue and come in
// through receive buffers the driver keeps posted, one page each. A
// goroutine woken by the card's interrupt copies received frames into
// the stack's buffers, reposts the pages and reclaims sent ones; nothing
// polls while the link is idle. When the stack is behind, received
// frames stay in the card (which holds them or drops what its ring
// cannot take, as a real card does) instead of being taken and thrown
// away. The card is input like any other: every index, length and
// header field it hands back is checked (rx.go), and a frame that fails
// is dropped, logged (rate-limited) and counted; the card goes on. Only
// a used index running past what was posted stops it.
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
//   - MRG_RXBUF: the card may spread a frame over several posted pages
//     and says in the first one's header how many (num_buffers); the
//     driver gathers them and copies the frame out. Without it each page
//     holds one frame of at most 1514 bytes.
//   - GUEST_TSO4 and GUEST_TSO6, only with GUEST_CSUM (the spec's
//     requirement) and MRG_RXBUF (without mergeable buffers the card
//     would need 64 KiB receive buffers): the card may hand over a TCP
//     segment of up to 64 KiB that a sender on the host (another guest's
//     TSO, or the host's GRO) never cut up, spread over up to 17 pages.
//     It goes to the stack as one packet, its checksums vouched for
//     (NEEDS_CSUM or DATA_VALID, one of which such a frame must carry),
//     as netstack's own GRO hands over the segments it merges: TCP takes
//     a segment longer than its MSS, and the GSO fields (gso_size,
//     hdr_len) are not needed on the receive side. One such frame is one
//     pass through the stack instead of 45. A ring of fewer than 17
//     receive pages could never take a 64 KiB frame, so they are not
//     accepted then (a second negotiation leaves them out).
//
// Not negotiated: GUEST_ECN, which lets the card merge segments marked
// with CWR: netstack does not do ECN (gVisor issue 995), so no peer
// sets CWR towards it, and a host holding such a segment for a guest
// without GUEST_ECN cuts it up itself. GUEST_UFO and GUEST_USO: netstack
// has no UDP receive offload. Receive headers naming a GSO type not
// negotiated, ECN, unknown flags or a checksum position outside the
// frame are dropped, logged and counted (RxErrors, BadHeaders).
package net

import (
	"fmt"
	"strings"
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
	featureGuestTSO4 = 1 << 7
	featureGuestTSO6 = 1 << 8
	featureHostTSO4  = 1 << 11
	featureHostTSO6  = 1 << 12
	featureMrgRxBuf  = 1 << 15
	featureStatus    = 1 << 16
	featureTSO       = featureCsum | featureHostTSO4 | featureHostTSO6
	featureGuestTSO  = featureGuestTSO4 | featureGuestTSO6
)

// The header every frame carries (§5.1.6: 12 bytes once VERSION_1 is
// negotiated): flags, gso_type, then little-endian hdr_len, gso_size,
// csum_start, csum_offset and num_buffers.
const (
	hdrLen         = 12
	offGSOType     = 1
	offHdrLen      = 2
	offGSOSize     = 4
	offCsumStart   = 6
	offCsumOffset  = 8
	offNumBuffers  = 10
	flagNeedsCsum  = 1
	flagDataValid  = 2
	gsoNone        = 0
	gsoTCPv4       = 1
	gsoTCPv6       = 4
	gsoECN         = 0x80
	statusLinkUp   = 1
	queueRX        = 0
	queueTX        = 1
	ethHeaderLen   = 14
	etherTypeIPv4  = 0x0800
	etherTypeIPv6  = 0x86dd
	maxRX          = 256 // receive pages
	maxRXQueued    = 128 // received frames on their way to the stack
	maxTX          = 256
	gsoMaxSize     = 1<<16 - 1 // the largest IP packet handed to the card
	frameMax       = 1514      // a 1500-byte payload and the Ethernet header
	gsoFrameMax    = ethHeaderLen + gsoMaxSize
	gsoFramePages  = (hdrLen + gsoFrameMax + virtio.PageSize - 1) / virtio.PageSize
	rxFrameMax     = ethHeaderLen + 1<<16 // the largest frame taken from mergeable buffers
	rxFrameMaxPage = (hdrLen + rxFrameMax + virtio.PageSize - 1) / virtio.PageSize
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
	// guestCsum: it marks received frames' checksums; mergeable: it
	// spreads a frame over several receive pages; guestTSO4/6: it hands
	// over TCP segments of up to 64 KiB.
	tso, guestCsum, mergeable bool
	guestTSO4, guestTSO6      bool
	log                       func(format string, args ...any)
	link.Ether

	// BadHeaders counts received frames dropped for their virtio header
	// (a GSO type not negotiated, unknown flags, a checksum position
	// outside the frame); BadBuffers those dropped for what the card
	// said of its buffers (a length past a buffer or short of a header,
	// num_buffers 0, more than were posted or more than it handed back,
	// an entry naming no buffer in flight, a frame over 64 KiB).
	BadHeaders, BadBuffers atomic.Uint64

	mu        sync.Mutex
	txFree    []virtio.Page // transmit pages not in the card's hands
	txReqs    []*txReq      // requests not in the card's hands (one a descriptor at most)
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
	// Under rxMu: the receive queue (rxRing: n.rx, or a fuzzer's
	// script), every receive page, how many are posted, and the
	// buffers of the frame being gathered.
	rxRing   rxRing
	rxBufs   []rxBuf
	rxPosted int
	rxParts  []rxPart
	rxPost   [1]virtio.Buf
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
	feat, err := negotiate(t)
	if err != nil {
		return nil, err
	}
	n := &NIC{Name: c.Name, t: t, dma: c.DMA, log: c.Log, txWake: make(chan struct{}),
		rxq: make(chan rxFrame, maxRXQueued)}
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
	n.mergeable = feat&featureMrgRxBuf != 0
	n.guestTSO4, n.guestTSO6 = feat&featureGuestTSO4 != 0, feat&featureGuestTSO6 != 0
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
		n.txReqs = append(n.txReqs, &txReq{pgs: make([]virtio.Page, 0, gsoFramePages)})
	}
	n.rxRing = n.rx
	n.rxBufs = make([]rxBuf, n.rx.Size())
	n.rxParts = make([]rxPart, 0, n.rx.Size())
	for i := range n.rxBufs {
		if n.rxBufs[i].pg, err = c.DMA.Alloc(); err != nil {
			t.Fail()
			return nil, err
		}
		if err := n.post(&n.rxBufs[i]); err != nil {
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

// negotiate accepts the features the driver uses that the card offers,
// with their dependencies: GUEST_TSO4/6 only with GUEST_CSUM and
// MRG_RXBUF, and only if the receive ring can hold a 64 KiB frame,
// which is known only once features are accepted (else the device is
// reset and they are negotiated again without GUEST_TSO).
func negotiate(t *virtio.Transport) (uint64, error) {
	want := uint64(featureMAC | featureStatus | featureTSO | featureGuestCsum | featureMrgRxBuf)
	if t.Offered()&(featureGuestCsum|featureMrgRxBuf) == featureGuestCsum|featureMrgRxBuf {
		want |= featureGuestTSO
	}
	feat, err := t.Negotiate(want)
	if err != nil || feat&featureGuestTSO == 0 || rxRingSize(t.QueueMax(queueRX)) >= rxFrameMaxPage {
		return feat, err
	}
	return t.Negotiate(want &^ featureGuestTSO)
}

// rxRingSize is the receive ring's size for a card offering max
// entries, as SetupQueue chooses it.
func rxRingSize(max int) int {
	n := min(max, maxRX, virtio.MaxQueueSize)
	for n&(n-1) != 0 {
		n &= n - 1
	}
	return n
}

// LinkUp reports the link state (always up if the card does not say).
func (n *NIC) LinkUp() bool {
	return !n.status || n.t.Config().Read16(6)&statusLinkUp != 0
}

// Offloads names the features in use beyond MAC and STATUS, for the
// log line that announces the card ("" if none).
func (n *NIC) Offloads() string {
	var s []string
	for _, f := range []struct {
		on   bool
		name string
	}{{n.tso, "TSO"}, {n.guestCsum, "GUEST_CSUM"}, {n.mergeable, "MRG_RXBUF"}, {n.guestTSO4, "GUEST_TSO4"}, {n.guestTSO6, "GUEST_TSO6"}} {
		if f.on {
			s = append(s, f.name)
		}
	}
	return strings.Join(s, " ")
}

// GSOMaxSize and SupportedGSO (stack.GSOEndpoint, which netstack's
// link/ethernet passes through) tell TCP that it may hand the card
// segments larger than the MTU with partial checksums: the card cuts
// them up if it offers TSO, the driver does (soft.go) if not.
func (n *NIC) GSOMaxSize() uint32 { return link.GSOMax }

func (n *NIC) SupportedGSO() stack.SupportedGSO { return stack.HostGSOSupported }

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
