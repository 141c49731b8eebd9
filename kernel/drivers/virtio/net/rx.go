package net

import (
	"encoding/binary"
	"fmt"

	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"shortbread/kernel/drivers/virtio"
)

// rxFrame is a received frame on its way to the stack; valid when the
// card vouched for its checksums (or the driver completed them).
type rxFrame struct {
	b     []byte
	valid bool
}

// post gives the card a receive buffer.
func (n *NIC) post(pg virtio.Page) error {
	_, err := n.rx.Add([]virtio.Buf{{Phys: pg.Phys, Len: virtio.PageSize, Write: true}}, pg)
	return err
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
		} else if f, err := n.frame(pg.Mem[:length]); err != nil {
			n.Stats.RxErrors.Add(1)
			// Logged the 1st, 2nd, 4th, 8th... time: a card (or a
			// peer behind it) sending many is seen, not a flood.
			if b := n.BadHeaders.Add(1); b&(b-1) == 0 {
				n.log("virtio-net %s: received frame dropped: %v (%d such)", n.Name, err, b)
			}
		} else {
			// Never blocks: only this goroutine, holding rxMu, sends
			// on rxq, and it has room.
			n.rxq <- f
		}
		if err := n.post(pg); err != nil {
			return n.broken(err)
		}
		posted = true
	}
}

// frame copies a received frame (b: the buffer up to the length the
// card reported, header included) out of its buffer after checking the
// header's fields, completing a partial checksum.
func (n *NIC) frame(b []byte) (rxFrame, error) {
	h := b[:hdrLen]
	if t := h[offGSOType]; t != gsoNone {
		// GUEST_TSO* are not negotiated: the card must not merge.
		return rxFrame{}, fmt.Errorf("GSO type %d", t)
	}
	f := rxFrame{b: append([]byte(nil), b[hdrLen:]...)}
	if !n.guestCsum {
		// The flags mean nothing without GUEST_CSUM (the card should
		// leave them 0); the stack checks every checksum.
		return f, nil
	}
	flags := h[0]
	if flags&^(flagNeedsCsum|flagDataValid) != 0 {
		return rxFrame{}, fmt.Errorf("flags %#x", flags)
	}
	if flags&flagNeedsCsum != 0 {
		start := int(binary.LittleEndian.Uint16(h[offCsumStart:]))
		off := int(binary.LittleEndian.Uint16(h[offCsumOffset:]))
		if start < header.EthernetMinimumSize || start+off+2 > len(f.b) {
			return rxFrame{}, fmt.Errorf("checksum at %d+%d in a %d-byte frame", start, off, len(f.b))
		}
		completeChecksum(f.b, start, off)
	}
	f.valid = flags != 0
	return f, nil
}

// completeChecksum fills in a partial checksum: the field at start+off
// holds the pseudo-header's sum, and the sum of everything from start
// on, complemented, is the checksum. A zero result is written as
// 0xffff, its other form, which UDP needs (0 there means "none").
func completeChecksum(b []byte, start, off int) {
	sum := ^checksum.Checksum(b[start:], 0)
	if sum == 0 {
		sum = 0xffff
	}
	binary.BigEndian.PutUint16(b[start+off:], sum)
}

// deliveries hands received frames to the stack. The interrupt
// goroutine never calls into the stack itself: the stack may send from
// inside a delivery and wait for transmit buffers, which that
// goroutine's reclaiming frees. Having made room in rxq, it takes what
// receive left in the card.
func (n *NIC) deliveries() {
	for f := range n.rxq {
		n.DeliverChecked(f.b, f.valid)
		if n.rxHeld.Swap(false) {
			n.receive()
		}
	}
}
