// Package net drives virtio network cards (virtio 1.0 §5.1) as netstack
// link endpoints: frames go out through the transmit queue and come in
// through receive buffers the driver keeps posted, one page each. A
// goroutine woken by the card's interrupt takes received frames to the
// stack, reposts their buffers and reclaims sent ones; nothing polls
// while the link is idle. When the stack is behind, received frames
// stay in the card (which holds them or drops what its ring cannot
// take, as a real card does) instead of being taken and thrown away. Every length the card hands back is checked:
// a frame shorter than the virtio header plus an Ethernet header, or
// longer than the buffer, is dropped and counted as an error.
//
// The endpoint is raw Ethernet frames; wrap it with netstack's
// link/ethernet to attach it to a stack. Only the basic features are
// used (MAC, link status): no checksum offload, TSO or mergeable
// buffers yet.
package net

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"shortbread/kernel/drivers/pci"
	"shortbread/kernel/drivers/virtio"
	"shortbread/kernel/net/link"
)

// Device IDs: modern (0x1040 + type 1) and transitional.
var IDs = []pci.ID{{Vendor: virtio.Vendor, Device: 0x1041}, {Vendor: virtio.Vendor, Device: 0x1000}}

// Feature bits (§5.1.3) and the header every frame carries (§5.1.6: 12
// bytes once VERSION_1 is negotiated).
const (
	featureMAC    = 1 << 5
	featureStatus = 1 << 16
	hdrLen        = 12
	statusLinkUp  = 1
	queueRX       = 0
	queueTX       = 1
	// frameMax is the largest Ethernet frame sent: a 1500-byte payload
	// and the 14-byte header.
	frameMax = 1514
	maxRX    = 128
	maxTX    = 64
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
	log    func(format string, args ...any)
	link.Ether

	mu      sync.Mutex
	txFree  []virtio.Page // transmit pages not in the card's hands
	txSpace chan struct{} // signalled when pages come back
	rxq     chan []byte   // received frames on their way to the stack

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
	feat, err := t.Negotiate(featureMAC | featureStatus)
	if err != nil {
		return nil, err
	}
	n := &NIC{Name: c.Name, t: t, dma: c.DMA, log: c.Log, txSpace: make(chan struct{}, 1),
		rxq: make(chan []byte, maxRX)}
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

// MAC is the card's address.

// LinkUp reports the link state (always up if the card does not say).
func (n *NIC) LinkUp() bool {
	return !n.status || n.t.Config().Read16(6)&statusLinkUp != 0
}

// post gives the card a receive buffer.
func (n *NIC) post(pg virtio.Page) error {
	_, err := n.rx.Add([]virtio.Buf{{Phys: pg.Phys, Len: virtio.PageSize, Write: true}}, pg)
	return err
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

// receive hands the frames the card has received to the deliveries
// goroutine and reposts their buffers, as many as rxq has room for; the
// rest wait in the card until the deliveries goroutine makes room and
// calls receive again. Taking frames only to drop them when the stack
// is behind threw away whole windows of a TCP transfer at once (1,200
// frames in the host test under load), and netstack then recovered at
// two segments per retransmission timeout. It reports false once the
// card has broken the protocol (logged; the card is stopped).
func (n *NIC) receive() bool {
	n.rxMu.Lock()
	defer n.rxMu.Unlock()
	if n.rxBroken.Load() {
		return false
	}
	posted := false
	defer func() {
		if posted {
			n.rx.Kick()
		}
	}()
	for {
		if len(n.rxq) == cap(n.rxq) {
			// Say so before looking again, so that the deliveries
			// goroutine, which only receives from rxq, either sees
			// the flag after taking a frame or has already made room.
			n.rxHeld.Store(true)
			if len(n.rxq) == cap(n.rxq) {
				return true
			}
		}
		c, ok, err := n.rx.Used()
		if err != nil {
			return n.broken(err)
		}
		if !ok {
			return true
		}
		pg, length := c.Token.(virtio.Page), c.Len
		if length < hdrLen+header.EthernetMinimumSize || length > virtio.PageSize {
			n.Stats.RxErrors.Add(1)
		} else {
			// Never blocks: only this goroutine, holding rxMu, sends
			// on rxq, and it has room.
			n.rxq <- append([]byte(nil), pg.Mem[hdrLen:length]...)
		}
		if err := n.post(pg); err != nil {
			return n.broken(err)
		}
		posted = true
	}
}

// broken stops taking frames from a card that broke the protocol.
func (n *NIC) broken(err error) bool {
	n.rxBroken.Store(true)
	n.log("virtio-net %s: %v; the card is stopped", n.Name, err)
	return false
}

// deliveries hands received frames to the stack. The interrupt
// goroutine never calls into the stack itself: the stack may send from
// inside a delivery and wait for transmit buffers, which that
// goroutine's reclaiming frees. Having made room in rxq, it takes what
// receive left in the card.
func (n *NIC) deliveries() {
	for frame := range n.rxq {
		n.Deliver(frame)
		if n.rxHeld.Swap(false) {
			n.receive()
		}
	}
}

// reclaim takes back the pages of frames the card has sent.
func (n *NIC) reclaim() int {
	got := 0
	for {
		c, ok, err := n.tx.Used()
		if err != nil || !ok {
			break
		}
		n.mu.Lock()
		n.txFree = append(n.txFree, c.Token.(virtio.Page))
		n.mu.Unlock()
		got++
	}
	if got > 0 {
		select { // a sender waiting for space
		case n.txSpace <- struct{}{}:
		default:
		}
	}
	return got
}

// Link endpoint (stack.LinkEndpoint) of raw Ethernet frames.

// WritePackets sends frames (the Ethernet header already on them). When
// every transmit buffer is in flight it waits for the card to finish
// some (taking an interrupt for it), as a driver stops its queue, and
// drops the rest only if the card sends nothing for txWait.
func (n *NIC) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	n.reclaim()
	sent := 0
	for i, pkt := range pkts.AsSlice() {
		size := pkt.Size()
		if size > frameMax || size+hdrLen > virtio.PageSize {
			n.Stats.TxErrors.Add(1)
			continue
		}
		pg, ok := n.txPage()
		if !ok && sent > 0 {
			n.tx.Kick() // what is queued must go before waiting for space
		}
		if !ok && !n.waitTx() {
			n.Stats.TxDropped.Add(uint64(pkts.Len() - i))
			break
		}
		if !ok {
			if pg, ok = n.txPage(); !ok {
				n.Stats.TxDropped.Add(uint64(pkts.Len() - i))
				break
			}
		}
		clear(pg.Mem[:hdrLen])
		off := hdrLen
		for _, s := range pkt.AsSlices() {
			off += copy(pg.Mem[off:], s)
		}
		if _, err := n.tx.Add([]virtio.Buf{{Phys: pg.Phys, Len: uint32(off)}}, pg); err != nil {
			n.mu.Lock()
			n.txFree = append(n.txFree, pg)
			n.mu.Unlock()
			n.Stats.TxErrors.Add(1)
			continue
		}
		n.Stats.TxPackets.Add(1)
		n.Stats.TxBytes.Add(uint64(size))
		sent++
	}
	if sent > 0 {
		n.tx.Kick()
	}
	return sent, nil
}

// txWait bounds the wait for a transmit buffer.
const txWait = time.Second

func (n *NIC) txPage() (virtio.Page, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.txFree) == 0 {
		return virtio.Page{}, false
	}
	pg := n.txFree[len(n.txFree)-1]
	n.txFree = n.txFree[:len(n.txFree)-1]
	return pg, true
}

// waitTx waits until the card has finished a frame, with transmit
// interrupts on meanwhile.
func (n *NIC) waitTx() bool {
	n.tx.SuppressInterrupts(false)
	defer n.tx.SuppressInterrupts(true)
	t := time.NewTimer(txWait)
	defer t.Stop()
	for {
		n.reclaim() // pages may also come back through the interrupt goroutine
		n.mu.Lock()
		free := len(n.txFree)
		n.mu.Unlock()
		if free > 0 {
			return true
		}
		select {
		case <-n.txSpace:
		case <-t.C:
			n.reclaim()
			n.mu.Lock()
			defer n.mu.Unlock()
			return len(n.txFree) > 0
		}
	}
}
