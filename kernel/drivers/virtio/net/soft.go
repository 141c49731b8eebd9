package net

import (
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// writeSoft queues pkt, a TCP segment with a partial checksum, as the
// frames a card with TSO would send (link.Segmenter), through t: for a
// card that offers no offload (QEMU's socket and user back ends, for
// one). In nginx's 64 KiB replies over the wire, a notification per
// frame was 9% of the kernel's time
// (bench/results/wire-nginx64k-2026-11-30.md). It reports false when the
// card had no room (what was not queued is dropped, and so should the
// rest of the batch be). A segment whose headers are not what netstack
// builds is counted as an error and dropped.
func (n *NIC) writeSoft(t *txBatch, pkt *stack.PacketBuffer) bool {
	if err := t.seg.Start(pkt, frameMax); err != nil {
		n.Stats.TxErrors.Add(1)
		return true
	}
	var h [hdrLen]byte // no offload asked of the card
	for fh, size, ok := t.seg.Next(); ok; fh, size, ok = t.seg.Next() {
		w, r, got := t.reserve(h[:], size)
		if !got {
			return false
		}
		w.write(fh)
		for b := t.seg.Piece(); b != nil; b = t.seg.Piece() {
			w.write(b)
		}
		t.commit(&w, r, size)
	}
	return true
}
