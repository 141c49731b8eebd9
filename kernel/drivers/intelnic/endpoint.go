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
	return &Tx{TxRing: &TxRing{Ring: r}, Space: make(chan struct{}, 1), SetTail: setTail, Interrupt: interrupt}
}

// WritePackets sends frames (the Ethernet header already on them),
// counting them in s. With the link down (up false) they are dropped,
// as a card without carrier would. When every descriptor is in flight
// it waits for the card to finish some, with the transmit interrupt
// on meanwhile, and drops the rest only if the card sends nothing for
// TxWait.
func (t *Tx) WritePackets(pkts stack.PacketBufferList, up bool, s *link.Stats) (int, tcpip.Error) {
	all := pkts.AsSlice()
	if !up {
		s.TxDropped.Add(uint64(len(all)))
		return 0, &tcpip.ErrClosedForSend{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	sent, queued, tail := 0, 0, -1
	for i, pkt := range all {
		size := pkt.Size()
		if size > MaxFrame || size > BufSize {
			s.TxErrors.Add(1)
			continue
		}
		t.reclaim()
		if t.space() == 0 {
			if queued > 0 { // what is queued goes before waiting
				t.SetTail(tail)
				queued = 0
			}
			if !t.waitLocked() {
				s.TxDropped.Add(uint64(len(all) - i))
				break
			}
		}
		var sz int
		sz, tail = t.put(pkt.AsSlices())
		s.TxPackets.Add(1)
		s.TxBytes.Add(uint64(sz))
		sent++
		queued++
	}
	if queued > 0 {
		t.SetTail(tail)
	}
	return sent, nil
}

// waitLocked waits until the card has finished a frame. t.mu is held:
// other senders wait behind this one, which is what a stopped queue
// means.
func (t *Tx) waitLocked() bool {
	t.Interrupt(true)
	defer t.Interrupt(false)
	tm := time.NewTimer(TxWait)
	defer tm.Stop()
	for {
		if t.reclaim(); t.space() > 0 {
			return true
		}
		select {
		case <-t.Space:
		case <-tm.C:
			t.reclaim()
			return t.space() > 0
		}
	}
}
