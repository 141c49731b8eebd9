package net

import (
	"encoding/binary"
	"errors"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"

	"shortbread/kernel/drivers/virtio"
)

// Receiving. Every receive buffer is one page, posted at start and
// reposted as soon as the frame in it has been copied into the stack's
// buffers (pooled chunks, one copy; the page never leaves the driver),
// so the steady path allocates nothing: the page records (rxBuf) are
// made once and are the queue's tokens, the gathering list is reused,
// and netstack's chunks, views and packet buffers come from its pools.
//
// With MRG_RXBUF the card writes a frame across as many pages as it
// needs and puts their number in the first one's header (num_buffers,
// §5.1.6.4); their used entries come together, in order. What the card
// hands back is checked before the frame is believed: an entry naming
// no buffer in flight or a length past its buffer (the queue reports
// both, virtio.UsedTolerant), a first buffer shorter than the header,
// num_buffers 0 or more than are posted, fewer buffers handed back than
// it says, a frame over 64 KiB and its Ethernet header (or over 1514
// bytes without GSO), and the header's fields (check). A frame failing
// any of them is dropped, its buffers reposted, logged (the 1st, 2nd,
// 4th, 8th... time of each kind) and counted.

// rxBuf is one receive page; a pointer to it is its request's token.
type rxBuf struct{ pg virtio.Page }

// rxPart is a buffer of the frame being gathered and the bytes the card
// wrote into it.
type rxPart struct {
	b *rxBuf
	n int
}

// rxRing is what receiving needs of the receive queue: a *virtio.Queue,
// or the fuzz test's scripted card.
type rxRing interface {
	UsedTolerant() (virtio.Completion, bool, error)
	Add(bufs []virtio.Buf, token any) (uint16, error)
	Kick()
}

// rxFrame is a received frame on its way to the stack; valid when the
// card vouched for its checksums (or the driver completed them).
type rxFrame struct {
	b     buffer.Buffer
	valid bool
}

// drop says why a received frame was thrown away: why is a format
// taking a and b. Not an error value, so that a card (or a peer behind
// it) sending bad frames costs no allocation unless one is logged.
type drop struct {
	why    string
	a, b   int
	header bool // the header's fields were wrong (else the buffers)
}

func bufDrop(why string, a, b int) drop { return drop{why: why, a: a, b: b} }
func hdrDrop(why string, a, b int) drop { return drop{why: why, a: a, b: b, header: true} }

// post gives the card a receive page. Under rxMu (or before the
// goroutines start).
func (n *NIC) post(b *rxBuf) error {
	n.rxPost[0] = virtio.Buf{Phys: b.pg.Phys, Len: virtio.PageSize, Write: true}
	if _, err := n.rxRing.Add(n.rxPost[:], b); err != nil {
		return err
	}
	n.rxPosted++
	return nil
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
			n.rxRing.Kick()
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
		f, ok, d, err := n.take()
		if err != nil {
			return n.broken(err)
		}
		if !ok {
			return true
		}
		posted = true
		if d.why != "" {
			n.dropped(d)
			continue
		}
		// Never blocks: only this goroutine, holding rxMu, sends on
		// rxq, and it has room.
		n.rxq <- f
	}
}

// dropped counts, and now and then logs, a frame thrown away.
func (n *NIC) dropped(d drop) {
	n.Stats.RxErrors.Add(1)
	c := &n.BadBuffers
	if d.header {
		c = &n.BadHeaders
	}
	// Logged the 1st, 2nd, 4th, 8th... time: a card (or a peer behind
	// it) sending many is seen, not a flood.
	if k := c.Add(1); k&(k-1) == 0 {
		n.log("virtio-net %s: received frame dropped: "+d.why+" (%d such)", n.Name, d.a, d.b, k)
	}
}

// take takes the next frame from the card with every buffer it spans
// and reposts them: ok is false when the card has handed back nothing;
// d.why is set when the frame was dropped (f then holds nothing); err
// only when the queue broke or a page could not be reposted, which
// stops the card. Under rxMu.
func (n *NIC) take() (f rxFrame, ok bool, d drop, err error) {
	c, ok, err := n.rxRing.UsedTolerant()
	if !ok {
		return f, false, d, err
	}
	parts := n.rxParts[:0]
	defer func() {
		// Whatever became of the frame, its pages go back to the card.
		for i, p := range parts {
			if e := n.post(p.b); e != nil && err == nil {
				err = e
			}
			parts[i] = rxPart{}
		}
		n.rxParts = parts[:0]
	}()
	var b *rxBuf
	if b, d = n.taken(c, err); d.why != "" {
		if b != nil {
			parts = append(parts, rxPart{b, 0})
		}
		return f, true, d, nil
	}
	parts = append(parts, rxPart{b, int(c.Len)})
	if c.Len < hdrLen {
		return f, true, bufDrop("%d bytes written, under the %d-byte header", int(c.Len), hdrLen), nil
	}
	var h [hdrLen]byte
	copy(h[:], b.pg.Mem)
	count := 1
	if n.mergeable {
		// Without MRG_RXBUF num_buffers means nothing (older hosts
		// leave it 0).
		count = int(binary.LittleEndian.Uint16(h[offNumBuffers:]))
		if count == 0 || count-1 > n.rxPosted {
			return f, true, bufDrop("num_buffers %d with %d buffers posted", count, n.rxPosted+1), nil
		}
	}
	// Every one of the frame's entries is taken, even after one is
	// found bad, so that the next frame starts where the card thinks.
	total := int(c.Len) - hdrLen
	for got := 1; got < count; got++ {
		c, ok, err := n.rxRing.UsedTolerant()
		if errors.Is(err, virtio.ErrDevice) {
			return f, true, d, err
		}
		if !ok {
			if d.why == "" {
				d = bufDrop("%d of num_buffers %d handed back", got, count)
			}
			return f, true, d, nil
		}
		b, bad := n.taken(c, err)
		if b != nil {
			parts = append(parts, rxPart{b, int(min(c.Len, virtio.PageSize))})
		}
		if bad.why != "" && d.why == "" {
			d = bad
		}
		total += int(c.Len)
	}
	if d.why != "" {
		return f, true, d, nil
	}
	limit := frameMax
	if n.mergeable {
		limit = rxFrameMax // the header says whether more than 1514 is right
	}
	if total < header.EthernetMinimumSize || total > limit {
		return f, true, bufDrop("a %d-byte frame (the most is %d)", total, limit), nil
	}
	var first []byte
	f.b, first = gather(parts, total)
	valid, d := n.check(h[:], first, total)
	if d.why != "" {
		f.b.Release()
		return rxFrame{}, true, d, nil
	}
	f.valid = valid
	return f, true, d, nil
}

// taken makes sense of one completion from UsedTolerant: the page it
// returns, or why the frame is dropped (with the page if there is one:
// an entry naming a length past its buffer still returns it).
func (n *NIC) taken(c virtio.Completion, err error) (*rxBuf, drop) {
	b, _ := c.Token.(*rxBuf)
	if b != nil {
		n.rxPosted--
	}
	switch {
	case b == nil:
		return nil, bufDrop("a used entry naming descriptor %d, not a buffer in flight (%d bytes)", int(c.Head), int(c.Len))
	case err != nil:
		return b, bufDrop("%d bytes written into a %d-byte buffer", int(c.Len), virtio.PageSize)
	}
	return b, drop{}
}

// gather copies a frame (size bytes after the virtio header at the
// start of the first part) into the stack's pooled chunks: one view for
// up to 64 KiB, a second for the rest of a larger frame (chunks over
// 64 KiB are not pooled). first is the first view's bytes, which check
// reads and may complete a checksum in.
func gather(parts []rxPart, size int) (buf buffer.Buffer, first []byte) {
	v := buffer.NewView(min(size, buffer.MaxChunkSize))
	v1 := v
	left := size
	for i, p := range parts {
		data := p.b.pg.Mem[:p.n]
		if i == 0 {
			data = data[hdrLen:]
		}
		for len(data) > 0 {
			if v.AvailableSize() == 0 {
				buf.Append(v)
				v = buffer.NewView(min(left, buffer.MaxChunkSize))
			}
			k := min(len(data), v.AvailableSize())
			v.Write(data[:k])
			data, left = data[k:], left-k
		}
	}
	buf.Append(v)
	return buf, v1.AsSlice()
}

// check checks the virtio header h of a received frame of size bytes
// whose first bytes (all of it unless it is a GSO frame over 64 KiB)
// are f, and completes a partial checksum in a frame without GSO (one
// with GSO is vouched for by the card; its checksum covers the whole
// segment and the stack does not look at it). valid: the card vouched
// for the frame's checksums.
func (n *NIC) check(h, f []byte, size int) (valid bool, d drop) {
	kind := h[offGSOType]
	gso := kind != gsoNone
	if gso {
		etype := int(binary.BigEndian.Uint16(f[12:]))
		switch {
		case kind == gsoTCPv4 && n.guestTSO4 && etype == etherTypeIPv4:
		case kind == gsoTCPv6 && n.guestTSO6 && etype == etherTypeIPv6:
		default: // not negotiated, ECN, UDP, or the wrong protocol
			return false, hdrDrop("GSO type %#x for ethertype %#04x", int(kind), etype)
		}
		if s := binary.LittleEndian.Uint16(h[offGSOSize:]); s == 0 {
			return false, hdrDrop("GSO size %d for GSO type %d", int(s), int(kind))
		}
	} else if size > frameMax {
		return false, bufDrop("a %d-byte frame without GSO (the most is %d)", size, frameMax)
	}
	if !n.guestCsum {
		// The flags mean nothing without GUEST_CSUM (the card should
		// leave them 0); the stack checks every checksum.
		return false, drop{}
	}
	flags := h[0]
	if flags&^(flagNeedsCsum|flagDataValid) != 0 || gso && flags == 0 {
		// A merged segment's checksum is not the one its parts
		// carried: the card must vouch for them.
		return false, hdrDrop("flags %#x with GSO type %d", int(flags), int(kind))
	}
	if flags&flagNeedsCsum != 0 {
		start := int(binary.LittleEndian.Uint16(h[offCsumStart:]))
		off := int(binary.LittleEndian.Uint16(h[offCsumOffset:]))
		if start < header.EthernetMinimumSize || start+off+2 > size {
			return false, hdrDrop("checksum at %d in a %d-byte frame", start+off, size)
		}
		if !gso {
			completeChecksum(f, start, off)
		}
	}
	return flags != 0, drop{}
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
		n.DeliverBuffer(f.b, f.valid)
		if n.rxHeld.Swap(false) {
			n.receive()
		}
	}
}
