package net

import (
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Segmentation in software, for a card that offers no offload (QEMU's
// socket and user back ends, for one): the driver still tells TCP that
// it takes 64 KiB segments with partial checksums (netstack's host GSO),
// and does the card's work itself, as Linux's GSO does for a card
// without TSO: each segment is cut into frames of the MSS, each with its
// own IP length, ID and checksum and TCP sequence number and checksum,
// FIN and PSH on the last frame only, and all the frames go to the card
// with one notification. What this saves is netstack's work per frame
// (the sender's, IP's and the link's: about 45 frames for a 64 KiB
// reply) and a notification per frame (an MMIO write, a VM exit under a
// hypervisor; 9% of the kernel's time in nginx's 64 KiB replies over
// the wire: bench/results/wire-nginx64k-2026-11-30.md). A segment no
// longer than its MSS just has its checksum finished.

// maxHeaders bounds the Ethernet, IP and TCP headers copied per frame
// (14 + 60 + 60 for IPv4 with options; IPv6's fixed header is 40, and
// room is left for extension headers).
const maxHeaders = 14 + 128 + 60

// maxPieces bounds the slices of payload walked without allocating.
const maxPieces = 32

// writeSoft queues pkt, a TCP segment with a partial checksum, as the
// frames a card with TSO would send, through t. It reports false when
// the card had no room (what was not queued is dropped, and so should
// the rest of the batch be). A segment whose headers are not what
// netstack builds is counted as an error and dropped.
func (n *NIC) writeSoft(t *txBatch, pkt *stack.PacketBuffer) bool {
	eth, nh, th := pkt.LinkHeader().Slice(), pkt.NetworkHeader().Slice(), pkt.TransportHeader().Slice()
	g := pkt.GSOOptions
	hlen := len(eth) + len(nh) + len(th)
	v4 := g.Type == stack.GSOTCPv4
	if (!v4 && g.Type != stack.GSOTCPv6) || len(eth) != ethHeaderLen || hlen > maxHeaders ||
		len(th) < header.TCPMinimumSize || int(header.TCP(th).DataOffset()) != len(th) ||
		(v4 && (len(nh) < header.IPv4MinimumSize || int(header.IPv4(nh).HeaderLength()) != len(nh))) ||
		(!v4 && len(nh) < header.IPv6MinimumSize) {
		n.Stats.TxErrors.Add(1)
		return true
	}
	// The payload, as slices of the packet's views after its headers.
	var store [maxPieces][]byte
	pieces := store[:0]
	vl, skip := pkt.AsViewList()
	skip += hlen
	for v := vl.Front(); v != nil; v = v.Next() {
		b := v.AsSlice()
		if skip >= len(b) {
			skip -= len(b)
			continue
		}
		pieces = append(pieces, b[skip:])
		skip = 0
	}
	size := pkt.Data().Size()
	mss := int(g.MSS)
	if mss <= 0 || mss > size {
		mss = max(size, 1) // one frame (a bare ACK has no payload)
	}
	if hlen+min(mss, size) > frameMax {
		n.Stats.TxErrors.Add(1)
		return true
	}
	tcp := header.TCP(th)
	seq, flags := tcp.SequenceNumber(), tcp.Flags()
	var id uint16
	if v4 {
		id = header.IPv4(nh).ID()
	}
	var h [hdrLen]byte // no offload asked of the card
	var hdr [maxHeaders]byte
	for off := 0; off < size || off == 0; off += mss { // once for no payload
		c := min(mss, size-off)
		copy(hdr[:], eth)
		copy(hdr[len(eth):], nh)
		copy(hdr[len(eth)+len(nh):], th)
		fh := hdr[:hlen]
		ip := fh[len(eth) : len(eth)+len(nh)]
		var src, dst tcpip.Address
		if v4 {
			p := header.IPv4(ip)
			p.SetTotalLength(uint16(len(nh) + len(th) + c))
			p.SetID(id + uint16(off/mss))
			p.SetChecksum(0)
			p.SetChecksum(^p.CalculateChecksum())
			src, dst = p.SourceAddress(), p.DestinationAddress()
		} else {
			p := header.IPv6(ip)
			// (any extension headers are part of the payload)
			p.SetPayloadLength(uint16(len(nh) - header.IPv6MinimumSize + len(th) + c))
			src, dst = p.SourceAddress(), p.DestinationAddress()
		}
		ft := header.TCP(fh[len(eth)+len(nh):])
		ft.SetSequenceNumber(seq + uint32(off))
		if off+c < size { // FIN and PSH belong to the last frame
			ft.SetFlags(uint8(flags &^ (header.TCPFlagFin | header.TCPFlagPsh)))
		}
		ft.SetChecksum(0)
		var sum checksum.Checksumer
		sum.Add(ft)
		eachPiece(pieces, off, c, sum.Add)
		xsum := checksum.Combine(header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(len(th)+c)), sum.Checksum())
		ft.SetChecksum(^xsum)
		w, r, ok := t.reserve(h[:], hlen+c)
		if !ok {
			return false
		}
		w.write(fh)
		eachPiece(pieces, off, c, w.write)
		t.commit(&w, r, hlen+c)
	}
	return true
}

// eachPiece calls f on the bytes [off, off+n) of the payload that
// pieces hold in order.
func eachPiece(pieces [][]byte, off, n int, f func([]byte)) {
	for _, b := range pieces {
		if n == 0 {
			return
		}
		if off >= len(b) {
			off -= len(b)
			continue
		}
		c := min(len(b)-off, n)
		f(b[off : off+c])
		off, n = 0, n-c
	}
}
