package e1000

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"shortbread/kernel/net/link"
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

// GSOMaxSize and SupportedGSO (stack.GSOEndpoint, which netstack's
// link/ethernet passes through) tell TCP that it may hand the driver
// segments of up to 64 KiB with partial checksums: intelnic.Tx has the
// card cut those over IPv4 into frames (TSO), and cuts the others
// itself (link.Segmenter); one tail write for a batch.
func (n *NIC) GSOMaxSize() uint32 { return link.GSOMax }

func (n *NIC) SupportedGSO() stack.SupportedGSO { return stack.HostGSOSupported }
