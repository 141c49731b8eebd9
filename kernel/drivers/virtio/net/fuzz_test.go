package net

import (
	"encoding/binary"
	"testing"

	"shortbread/kernel/drivers/virtio"
)

// scripted is a receive queue played by the fuzzer, the card as input
// (kernel/drivers/virtio's FuzzUsedTolerant covers the queue's own
// checks; this covers what the driver makes of what the queue lets
// through): it holds the pages posted and hands them back in the order,
// with the lengths and header bytes, the script says.
type scripted struct {
	t      *testing.T
	posted []*rxBuf
	script []byte
}

func (s *scripted) Kick() {}

func (s *scripted) Add(bufs []virtio.Buf, token any) (uint16, error) {
	b := token.(*rxBuf)
	if len(bufs) != 1 || bufs[0].Len != virtio.PageSize || !bufs[0].Write || bufs[0].Phys != b.pg.Phys {
		s.t.Fatalf("posted %+v for page %#x", bufs, b.pg.Phys)
	}
	for _, p := range s.posted {
		if p == b {
			s.t.Fatalf("page %#x posted twice", b.pg.Phys)
		}
	}
	s.posted = append(s.posted, b)
	return 0, nil
}

// UsedTolerant takes 4 bytes of script: what to do, which page, a
// length; what 3 does also takes the next 12 bytes as the header it
// writes into the page.
func (s *scripted) UsedTolerant() (virtio.Completion, bool, error) {
	if len(s.script) < 4 || len(s.posted) == 0 {
		return virtio.Completion{}, false, nil
	}
	op, sel, n := s.script[0], int(s.script[1]), uint32(binary.LittleEndian.Uint16(s.script[2:]))
	s.script = s.script[4:]
	switch op % 4 {
	case 0:
		return virtio.Completion{}, false, nil
	case 1: // an entry naming no buffer in flight
		return virtio.Completion{Head: uint16(sel), Len: n}, true, virtio.ErrBadEntry
	case 3:
		if len(s.script) >= hdrLen {
			copy(s.posted[sel%len(s.posted)].pg.Mem, s.script[:hdrLen])
			s.script = s.script[hdrLen:]
		}
	}
	i := sel % len(s.posted)
	b := s.posted[i]
	s.posted = append(s.posted[:i], s.posted[i+1:]...)
	var err error
	if n > virtio.PageSize {
		err = virtio.ErrBadEntry
	}
	return virtio.Completion{Head: uint16(i), Len: n, Token: b}, true, err
}

// FuzzMergeable: whatever the card hands back, the driver never panics,
// reposts every page it got back before it looks at the next frame (no
// page lost, none posted twice), and hands the stack only frames within
// the limits (at least an Ethernet header; at most 64 KiB and the
// header, and 1514 bytes without GSO), dropping and counting the rest.
func FuzzMergeable(f *testing.F) {
	hdr := func(flags, kind byte, numBuffers uint16) []byte {
		h := make([]byte, hdrLen)
		h[0], h[offGSOType] = flags, kind
		binary.LittleEndian.PutUint16(h[offGSOSize:], 1448)
		binary.LittleEndian.PutUint16(h[offCsumStart:], 34)
		binary.LittleEndian.PutUint16(h[offCsumOffset:], 16)
		binary.LittleEndian.PutUint16(h[offNumBuffers:], numBuffers)
		return h
	}
	op := func(o, sel byte, n uint16) []byte { return []byte{o, sel, byte(n), byte(n >> 8)} }
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	f.Add(cat(op(3, 0, 100), hdr(0, 0, 1)), byte(7))
	f.Add(cat(op(3, 0, 4096), hdr(flagNeedsCsum, gsoTCPv4, 3), op(2, 5, 4096), op(2, 9, 200)), byte(7))
	f.Add(cat(op(3, 0, 4096), hdr(flagNeedsCsum, gsoTCPv4, 3), op(1, 5, 4096), op(2, 9, 5000)), byte(7))
	f.Add(cat(op(3, 1, 60), hdr(flagDataValid, 0, 0), op(3, 2, 60), hdr(0, 0, 40)), byte(3))
	f.Add(cat(op(3, 0, 4096), hdr(flagNeedsCsum, gsoTCPv6, 17), op(2, 0, 4096)), byte(15))
	f.Fuzz(func(t *testing.T, script []byte, features byte) {
		s := &scripted{t: t, script: script}
		n := &NIC{log: func(string, ...any) {}, rxq: make(chan rxFrame, 1)}
		n.mergeable, n.guestCsum = features&1 != 0, features&2 != 0
		n.guestTSO4, n.guestTSO6 = features&4 != 0 && n.guestCsum, features&8 != 0 && n.guestCsum
		const pages = 32
		n.rxRing, n.rxBufs, n.rxParts = s, make([]rxBuf, pages), make([]rxPart, 0, pages)
		for i := range n.rxBufs {
			n.rxBufs[i].pg = virtio.Page{Phys: uint64(i+1) * virtio.PageSize, Mem: make([]byte, virtio.PageSize)}
			if err := n.post(&n.rxBufs[i]); err != nil {
				t.Fatal(err)
			}
		}
		for len(s.script) >= 4 {
			fr, ok, d, err := n.take()
			if err != nil {
				t.Fatalf("the card was stopped: %v", err)
			}
			if len(s.posted) != pages || n.rxPosted != pages {
				t.Fatalf("%d of %d pages posted (the driver counts %d)", len(s.posted), pages, n.rxPosted)
			}
			if !ok || d.why != "" {
				continue
			}
			size := int(fr.b.Size())
			limit := frameMax
			if n.guestTSO4 || n.guestTSO6 {
				limit = rxFrameMax
			}
			if size < ethHeaderLen || size > limit {
				t.Fatalf("a %d-byte frame delivered (mergeable %v, TSO %v %v)", size, n.mergeable, n.guestTSO4, n.guestTSO6)
			}
			if fr.valid && !n.guestCsum {
				t.Fatalf("checksums vouched for without GUEST_CSUM")
			}
			fr.b.Release()
		}
	})
}
