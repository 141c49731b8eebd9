package igb

import (
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// The card as a stack.LinkEndpoint of raw Ethernet frames; wrap it with
// netstack's link/ethernet to attach it.

// txWait bounds a sender's wait for a transmit descriptor.
const txWait = time.Second

// WritePackets sends frames (the Ethernet header already on them). With
// the link down they are dropped, as a card without carrier would. When
// every descriptor is in flight it waits for the card to finish some,
// with the transmit interrupt unmasked meanwhile, and drops the rest
// only if the card sends nothing for txWait.
func (n *NIC) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	all := pkts.AsSlice()
	if !n.up.Load() || n.stopped.Load() {
		n.Stats.TxDropped.Add(uint64(len(all)))
		return 0, &tcpip.ErrClosedForSend{}
	}
	n.txMu.Lock()
	defer n.txMu.Unlock()
	sent, queued, tail := 0, 0, -1
	for i, pkt := range all {
		size := pkt.Size()
		if size > maxFrame || size > bufSize {
			n.Stats.TxErrors.Add(1)
			continue
		}
		n.tx.reclaim()
		if n.tx.space() == 0 {
			if queued > 0 { // what is queued goes before waiting
				n.regs.Write32(regTDT, uint32(tail))
				queued = 0
			}
			if !n.waitTxLocked() {
				n.Stats.TxDropped.Add(uint64(len(all) - i))
				break
			}
		}
		var sz int
		sz, tail = n.tx.put(pkt.AsSlices())
		n.Stats.TxPackets.Add(1)
		n.Stats.TxBytes.Add(uint64(sz))
		sent++
		queued++
	}
	if queued > 0 {
		n.regs.Write32(regTDT, uint32(tail))
	}
	return sent, nil
}

// waitTxLocked waits until the card has finished a frame. n.txMu is held:
// other senders wait behind this one, which is what a stopped queue
// means.
func (n *NIC) waitTxLocked() bool {
	n.txInterrupt(true)
	defer n.txInterrupt(false)
	t := time.NewTimer(txWait)
	defer t.Stop()
	for {
		if n.tx.reclaim(); n.tx.space() > 0 {
			return true
		}
		select {
		case <-n.txSpace:
		case <-t.C:
			n.tx.reclaim()
			return n.tx.space() > 0
		}
	}
}
