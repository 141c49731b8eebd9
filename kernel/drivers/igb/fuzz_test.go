package igb

import (
	"encoding/binary"
	"testing"
)

// FuzzRxDescriptors: whatever a card writes back into the receive ring
// (descriptors and buffers), harvest takes at most the descriptors the
// card owns, delivers only frames from a header's length to maxFrame
// whose bytes came from the buffers, re-arms what it took with the
// driver's own buffer addresses, and never panics.
func FuzzRxDescriptors(f *testing.F) {
	desc := func(n uint16, status uint32) []byte {
		d := make([]byte, descSize)
		binary.LittleEndian.PutUint64(d, 0x11)
		binary.LittleEndian.PutUint16(d[rxLen:], n)
		binary.LittleEndian.PutUint32(d[rxStatus:], status)
		return d
	}
	f.Add(append(desc(60, rxdDD|rxdEOP), desc(100, rxdDD|rxdEOP)...), byte(7))
	f.Add(append(desc(1000, rxdDD), desc(1000, rxdDD|rxdEOP)...), byte(1))
	f.Add(append(desc(4000, rxdDD|rxdEOP), desc(60, rxdDD|rxdEOP|1<<31)...), byte(2))
	f.Fuzz(func(t *testing.T, ring []byte, fill byte) {
		const n = 16
		m := newMemory()
		rg, err := newRing(m, n)
		if err != nil {
			t.Fatal(err)
		}
		r := &rxRing{ring: rg}
		r.init()
		for _, b := range r.bufs {
			for i := range b.mem {
				b.mem[i] = fill
			}
		}
		// The fuzzer's bytes over the descriptors.
		copy(r.desc.Mem, ring)
		var c rxCounts
		delivered := 0
		taken, tail := r.harvest(func(f []byte) {
			delivered++
			if len(f) < 14 || len(f) > maxFrame {
				t.Fatalf("delivered a %d-byte frame", len(f))
			}
			for _, b := range f {
				if b != fill {
					t.Fatalf("frame byte %#x not from a buffer", b)
				}
			}
		}, &c)
		if taken > n-1 || tail != (r.next+n-1)%n || delivered != c.frames {
			t.Fatalf("taken %d tail %d next %d delivered %d frames %d", taken, tail, r.next, delivered, c.frames)
		}
		for i := 0; i < taken; i++ {
			d := r.d(i)
			if binary.LittleEndian.Uint64(d) != r.bufs[i].phys || load32(d, rxStatus) != 0 || load32(d, rxLen) != 0 {
				t.Fatalf("descriptor %d not re-armed", i)
			}
		}
	})
}
