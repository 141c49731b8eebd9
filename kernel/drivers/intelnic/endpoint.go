package intelnic

import (
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"shortbread/kernel/net/link"
)

// TxWait bounds a sender's wait for a transmit descriptor.
const TxWait = time.Second

// Tx is a card's transmit side as its stack.LinkEndpoint's WritePackets
// uses it: the ring behind a lock, and the two things only the driver
// knows how to do to its card.
type Tx struct {
	*TxRing
	// Space is signalled (without blocking) after each interrupt, for
	// a sender waiting for the card to finish a frame.
	Space chan struct{}
	// SetTail writes the transmit tail register.
	SetTail func(tail int)
	// Interrupt lets the transmit completions interrupt (on) or stops
	// them: an idle card costs nothing.
	Interrupt func(on bool)

	mu sync.Mutex
}

// NewTx is a transmit side on ring r.
func NewTx(r *Ring, setTail func(int), interrupt func(bool)) *Tx {
	return &Tx{TxRing: &TxRing{Ring: r, last: make([]int, r.N)}, Space: make(chan struct{}, 1), SetTail: setTail, Interrupt: interrupt}
}

// WritePackets sends frames (the Ethernet header already on them),
// counting them in s. With the link down (up false) they are dropped,
// as a card without carrier would. When every descriptor is in flight
// it waits for the card to finish some, with the transmit interrupt
// on meanwhile, and drops the rest only if the card sends nothing for
// TxWait. A TCP segment with a partial checksum (the drivers take 64
// KiB segments: SupportedGSO) goes to the card whole if it segments
// (tso.go), else is cut into frames here (link.Segmenter), as Linux's
// GSO does for a card without TSO.
func (t *Tx) WritePackets(pkts stack.PacketBufferList, up bool, s *link.Stats) (int, tcpip.Error) {
	all := pkts.AsSlice()
	if !up {
		s.TxDropped.Add(uint64(len(all)))
		return 0, &tcpip.ErrClosedForSend{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	b := txBatch{t: t, tail: -1}
	var sg link.Segmenter
	var parts [16][]byte
	sent := 0
	for i, pkt := range all {
		if pkt.GSOOptions.NeedsCsum {
			seg, tso, err := t.tsoSegment(pkt)
			if err != nil {
				s.TxErrors.Add(1)
				continue
			}
			if tso {
				if !b.putTSO(pkt.AsSlices(), seg, s) {
					s.TxDropped.Add(uint64(len(all) - i))
					break
				}
				sent++
				continue
			}
			if err := sg.Start(pkt, MaxFrame); err != nil {
				s.TxErrors.Add(1)
				continue
			}
			ok := true
			for fh, _, more := sg.Next(); more && ok; fh, _, more = sg.Next() {
				// (Assigned, not appended: an appended slice's
				// elements escape, and fh points into sg.)
				parts[0] = fh
				n := 1
				for p := sg.Piece(); p != nil; p = sg.Piece() {
					if n == len(parts)-1 {
						// Many small views: the rest in one part.
						var rest []byte
						for ; p != nil; p = sg.Piece() {
							rest = append(rest, p...)
						}
						parts[n], n = rest, n+1
						break
					}
					parts[n], n = p, n+1
				}
				ok = b.put(parts[:n], s)
			}
			if !ok {
				s.TxDropped.Add(uint64(len(all) - i))
				break
			}
			sent++
			continue
		}
		size := pkt.Size()
		if size > MaxFrame || size > BufSize {
			s.TxErrors.Add(1)
			continue
		}
		if !b.put(pkt.AsSlices(), s) {
			s.TxDropped.Add(uint64(len(all) - i))
			break
		}
		sent++
	}
	if b.queued > 0 {
		t.SetTail(b.tail)
	}
	return sent, nil
}

// txBatch is one WritePackets call's frames: the card's tail register
// is written once, at the end (or before the sender waits for room).
type txBatch struct {
	t            *Tx
	queued, tail int
}

// put queues the frame made of parts, waiting for a descriptor if need
// be; false if the card had none for TxWait.
func (b *txBatch) put(parts [][]byte, s *link.Stats) bool {
	if !b.reserve(1) {
		return false
	}
	var sz int
	sz, b.tail = b.t.put(parts)
	s.TxPackets.Add(1)
	s.TxBytes.Add(uint64(sz))
	b.queued++
	return true
}

// putTSO queues a segment for the card to cut up (its bytes in parts),
// counting the frames it will send; false if the card did not free
// enough descriptors for TxWait.
func (b *txBatch) putTSO(parts [][]byte, seg TSOSegment, s *link.Stats) bool {
	if !b.reserve(seg.Descs()) {
		return false
	}
	var wire int
	wire, b.tail = b.t.putTSO(parts, seg)
	s.TxPackets.Add(uint64(seg.Frames()))
	s.TxBytes.Add(uint64(wire))
	b.queued++
	return true
}

// reserve makes sure n descriptors are free, waiting for the card if
// need be.
func (b *txBatch) reserve(n int) bool {
	t := b.t
	if t.reclaim(); t.space() >= n {
		return true
	}
	if b.queued > 0 { // what is queued goes before waiting
		t.SetTail(b.tail)
		b.queued = 0
	}
	return t.waitLocked(n)
}

// waitLocked waits until the card has finished enough packets to free
// n descriptors. t.mu is held: other senders wait behind this one,
// which is what a stopped queue means.
func (t *Tx) waitLocked(n int) bool {
	t.Interrupt(true)
	defer t.Interrupt(false)
	tm := time.NewTimer(TxWait)
	defer tm.Stop()
	for {
		if t.reclaim(); t.space() >= n {
			return true
		}
		select {
		case <-t.Space:
		case <-tm.C:
			t.reclaim()
			return t.space() >= n
		}
	}
}
