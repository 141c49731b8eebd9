package net

import (
	"encoding/binary"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"shortbread/kernel/drivers/virtio"
	"shortbread/kernel/net/link"
)

// Link endpoint (stack.LinkEndpoint) of raw Ethernet frames.

// WritePackets sends frames (the Ethernet header already on them), each
// in as many transmit pages as it needs (one, or up to gsoFramePages
// for a TCP segment the card is to cut up), and tells the card once.
func (n *NIC) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	n.reclaim()
	t := txBatch{n: n}
	for i, pkt := range pkts.AsSlice() {
		if pkt.GSOOptions.NeedsCsum && !n.tso {
			// A card without offload: TCP's segment, and its
			// checksum, are the driver's to finish (soft.go).
			if !n.writeSoft(&t, pkt) {
				n.Stats.TxDropped.Add(uint64(pkts.Len() - i))
				break
			}
			t.packets++
			continue
		}
		var h [hdrLen]byte
		size := pkt.Size()
		if !n.offload(pkt, h[:]) {
			n.Stats.TxErrors.Add(1)
			continue
		}
		limit := frameMax
		if h[offGSOType] != gsoNone {
			limit = gsoFrameMax
		}
		if size > limit {
			n.Stats.TxErrors.Add(1)
			continue
		}
		w, r, ok := t.reserve(h[:], size)
		if !ok {
			n.Stats.TxDropped.Add(uint64(pkts.Len() - i))
			break
		}
		// The packet's views from its headers on (AsSlices would
		// allocate a slice of them for each frame).
		vl, skip := pkt.AsViewList()
		for v := vl.Front(); v != nil; v = v.Next() {
			b := v.AsSlice()
			if skip >= len(b) {
				skip -= len(b)
				continue
			}
			w.write(b[skip:])
			skip = 0
		}
		if t.commit(&w, r, size) {
			t.packets++
		}
	}
	if t.frames > 0 {
		n.tx.Kick()
	}
	return t.packets, nil
}

// txBatch is one WritePackets call's frames: the card is told of them
// once, at the end (or before the driver waits for room).
type txBatch struct {
	n       *NIC
	frames  int // queued and not yet told of
	packets int // netstack's packets sent
	seg     link.Segmenter
}

// reserve takes transmit pages for a frame of size bytes and writes the
// virtio header h into them; the caller writes the frame after it and
// commits. When the pages are all in flight it waits for the card to
// finish some (taking an interrupt for it), as a driver stops its
// queue; ok is false only if the card sent nothing for txWait (the
// frame is dropped, and so should the rest be).
func (t *txBatch) reserve(h []byte, size int) (w pageWriter, r *txReq, ok bool) {
	n := t.n
	need := (hdrLen + size + virtio.PageSize - 1) / virtio.PageSize
	r, ok = n.txPages(need)
	if !ok {
		if t.frames > 0 {
			n.tx.Kick() // what is queued must go before waiting for space
			t.frames = 0
		}
		if !n.waitTx(need) {
			return w, nil, false
		}
		if r, ok = n.txPages(need); !ok {
			return w, nil, false
		}
	}
	w = pageWriter{pgs: r.pgs}
	w.write(h)
	return w, r, true
}

// commit queues the frame written in w, the pages of r. It reports
// false for a frame the queue refused (counted as an error, its pages
// given back).
func (t *txBatch) commit(w *pageWriter, r *txReq, size int) bool {
	n := t.n
	var bufs [gsoFramePages]virtio.Buf
	for j, pg := range r.pgs {
		bufs[j] = virtio.Buf{Phys: pg.Phys, Len: uint32(min(virtio.PageSize, w.off-j*virtio.PageSize))}
	}
	if _, err := n.tx.Add(bufs[:len(r.pgs)], r); err != nil {
		n.mu.Lock()
		n.putTx(r)
		n.mu.Unlock()
		n.Stats.TxErrors.Add(1)
		return false
	}
	n.Stats.TxPackets.Add(1)
	n.Stats.TxBytes.Add(uint64(size))
	t.frames++
	return true
}

// offload fills in the virtio header h of a packet TCP left for the card
// to finish: the checksum's position (the stack has put the
// pseudo-header's sum in the field) and, for a segment longer than its
// MSS, how the card is to cut it up. It reports false for a packet
// whose headers cannot be what the stack says.
func (n *NIC) offload(pkt *stack.PacketBuffer, h []byte) bool {
	g := pkt.GSOOptions
	if !n.tso || !g.NeedsCsum {
		return true
	}
	var kind byte
	switch g.Type {
	case stack.GSOTCPv4:
		kind = gsoTCPv4
	case stack.GSOTCPv6:
		kind = gsoTCPv6
	default:
		return false // only TCP is offloaded
	}
	start := len(pkt.LinkHeader().Slice()) + len(pkt.NetworkHeader().Slice())
	l4 := len(pkt.TransportHeader().Slice())
	if l4 < header.TCPMinimumSize || start+int(g.CsumOffset)+2 > start+l4 {
		return false
	}
	h[0] = flagNeedsCsum
	binary.LittleEndian.PutUint16(h[offCsumStart:], uint16(start))
	binary.LittleEndian.PutUint16(h[offCsumOffset:], g.CsumOffset)
	if g.MSS > 0 && pkt.Data().Size() > int(g.MSS) {
		h[offGSOType] = kind
		binary.LittleEndian.PutUint16(h[offHdrLen:], uint16(start+l4))
		binary.LittleEndian.PutUint16(h[offGSOSize:], g.MSS)
	}
	return true
}

// pageWriter copies a frame across consecutive transmit pages.
type pageWriter struct {
	pgs []virtio.Page
	off int
}

func (w *pageWriter) write(b []byte) {
	for len(b) > 0 {
		c := copy(w.pgs[w.off/virtio.PageSize].Mem[w.off%virtio.PageSize:], b)
		b = b[c:]
		w.off += c
	}
}

// reclaim takes back the pages of frames the card has sent, and wakes
// every sender waiting for them.
func (n *NIC) reclaim() int {
	got := 0
	for {
		c, ok, err := n.tx.Used()
		if err != nil || !ok {
			break
		}
		n.mu.Lock()
		n.putTx(c.Token.(*txReq))
		n.mu.Unlock()
		got++
	}
	if got > 0 {
		n.mu.Lock()
		if n.txWaiters > 0 {
			close(n.txWake)
			n.txWake = make(chan struct{})
		}
		n.mu.Unlock()
	}
	return got
}

// txWait bounds the wait for transmit pages (a variable for tests).
var txWait = time.Second

// txReq is a frame being sent: its pages. A pointer to it is its
// request's token, and it is reused, so that sending allocates nothing.
type txReq struct{ pgs []virtio.Page }

// txPages takes a request of k free transmit pages, or none if fewer
// are free.
func (n *NIC) txPages(k int) (*txReq, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.txFree) < k || len(n.txReqs) == 0 {
		return nil, false
	}
	r := n.txReqs[len(n.txReqs)-1]
	n.txReqs = n.txReqs[:len(n.txReqs)-1]
	r.pgs = append(r.pgs[:0], n.txFree[len(n.txFree)-k:]...)
	n.txFree = n.txFree[:len(n.txFree)-k]
	return r, true
}

// putTx gives a request's pages and the request back. Under mu.
func (n *NIC) putTx(r *txReq) {
	n.txFree = append(n.txFree, r.pgs...)
	r.pgs = r.pgs[:0]
	n.txReqs = append(n.txReqs, r)
}

// waitTx waits until the card has finished enough frames to free k
// pages, with transmit interrupts on while anyone waits. Senders on
// several CPUs may wait at once: interrupts stay on until the last one
// is done, and reclaiming wakes them all (with one wake-up and
// interrupts turned off by the first to leave, the others slept until
// txWait and dropped their frames).
func (n *NIC) waitTx(k int) bool {
	n.mu.Lock()
	if n.txWaiters++; n.txWaiters == 1 {
		n.tx.SuppressInterrupts(false)
	}
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		if n.txWaiters--; n.txWaiters == 0 {
			n.tx.SuppressInterrupts(true)
		}
		n.mu.Unlock()
	}()
	t := time.NewTimer(txWait)
	defer t.Stop()
	for {
		n.reclaim() // pages may also come back through the interrupt goroutine
		n.mu.Lock()
		free, wake := len(n.txFree), n.txWake
		n.mu.Unlock()
		if free >= k {
			return true
		}
		select {
		case <-wake:
		case <-t.C:
			n.reclaim()
			n.mu.Lock()
			defer n.mu.Unlock()
			return len(n.txFree) >= k
		}
	}
}
