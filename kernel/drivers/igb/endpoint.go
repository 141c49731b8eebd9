package igb

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// The card as a stack.LinkEndpoint of raw Ethernet frames; wrap it with
// netstack's link/ethernet to attach it.

// WritePackets sends frames (the Ethernet header already on them) by
// intelnic.Tx: with the link down or the card gone they are dropped;
// with the ring full the sender waits for the card, up to
// intelnic.TxWait.
func (n *NIC) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	return n.tx.WritePackets(pkts, n.up.Load() && !n.stopped.Load(), &n.Stats)
}
