package virtio

import (
	"errors"
	"testing"

	"shortbread/kernel/drivers/pci"
)

type nullRegion struct{}

func (nullRegion) Read8(uint32) uint8     { return 0 }
func (nullRegion) Read16(uint32) uint16   { return 0 }
func (nullRegion) Read32(uint32) uint32   { return 0 }
func (nullRegion) Write8(uint32, uint8)   {}
func (nullRegion) Write16(uint32, uint16) {}
func (nullRegion) Write32(uint32, uint32) {}

// fuzzQueue is a queue of size descriptors in plain memory, with no
// device behind it: the fuzzer writes its used ring.
func fuzzQueue(size uint16) *Queue {
	mk := func() Page { return Page{Mem: make([]byte, PageSize)} }
	q := &Queue{t: &Transport{Dev: &pci.Device{}, notify: nullRegion{}}, size: size, desc: mk(), avail: mk(), used: mk(),
		inflight: make([]chain, size), next: make([]uint16, size), free: make([]uint16, 0, size)}
	for d := int(size) - 1; d >= 0; d-- {
		q.free = append(q.free, uint16(d))
	}
	return q
}

// FuzzUsed: whatever a device writes into the used ring, Used returns
// only requests in flight, each once, with lengths they can hold, or
// ErrDevice; it never panics.
func FuzzUsed(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 0, 0, 0, 0, 8, 0, 0, 0})
	f.Add([]byte{0, 0, 3, 0, 2, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, ring []byte) {
		q := fuzzQueue(8)
		heads := map[uint16]uint32{}
		for i := 0; i < 3; i++ {
			h, err := q.Add([]Buf{{Phys: 0x1000, Len: 16}, {Phys: 0x2000, Len: 100, Write: true}}, i)
			if err != nil {
				t.Fatal(err)
			}
			heads[h] = 100
		}
		copy(q.used.Mem, ring)
		for i := 0; i < 10; i++ {
			c, ok, err := q.Used()
			if err != nil || !ok {
				return
			}
			h, n := c.Head, c.Len
			w, live := heads[h]
			if !live || n > w {
				t.Fatalf("used %d (%d bytes): not in flight or too long", h, n)
			}
			delete(heads, h)
		}
	})
}

// FuzzUsedTolerant: whatever a device writes into the used ring over
// several rounds, UsedTolerant hands back only requests in flight, each
// once and with its own token, steps over entries naming none, and
// keeps every descriptor either free or in exactly one request in
// flight: none is lost or handed out twice, and what was taken back can
// be made available again. Only ErrDevice stops it; it never panics.
// Each round the driver refills the queue with one- to three-descriptor
// requests, then the fuzzer's next 4 + 8k bytes are the used index and
// k entries.
func FuzzUsedTolerant(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, uint8(1))
	f.Add([]byte{2, 0, 0, 0, 7, 0, 0, 0, 0, 16, 0, 0, 99, 0, 0, 0, 1, 0, 0, 0}, uint8(2))
	f.Add([]byte{3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 9, 0, 0, 0, 5, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0}, uint8(3))
	f.Fuzz(func(t *testing.T, script []byte, shape uint8) {
		const size = 8
		q := fuzzQueue(size)
		type req struct {
			token, descs int
			writable     uint32
		}
		inFlight := map[uint16]req{} // by head
		tokens := 0
		idx := uint16(0)
		for round := 0; round < 4 && len(script) >= 4; round++ {
			for {
				k := 1 + int(shape+uint8(tokens))%3
				bufs := make([]Buf, k)
				var w uint32
				for j := range bufs {
					bufs[j] = Buf{Phys: 0x1000 * uint64(j+1), Len: uint32(16 * (j + 1)), Write: j > 0}
					if j > 0 {
						w += bufs[j].Len
					}
				}
				h, err := q.Add(bufs, tokens)
				if errors.Is(err, ErrFull) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if _, dup := inFlight[h]; dup {
					t.Fatalf("head %d handed out twice", h)
				}
				inFlight[h] = req{tokens, k, w}
				tokens++
			}
			n := int(script[0]) % (size + 2)
			script = script[4:]
			for j := 0; j < n && len(script) >= 8; j++ {
				copy(q.used.Mem[4+8*int(idx%size):], script[:8])
				script = script[8:]
				idx++
			}
			q.used.Mem[2], q.used.Mem[3] = byte(idx), byte(idx>>8)
			for {
				c, ok, err := q.UsedTolerant()
				if errors.Is(err, ErrDevice) {
					return
				}
				if !ok {
					break
				}
				if c.Token == nil {
					if !errors.Is(err, ErrBadEntry) {
						t.Fatalf("no token without ErrBadEntry: %v", err)
					}
					continue
				}
				r, live := inFlight[c.Head]
				if !live || c.Token.(int) != r.token {
					t.Fatalf("head %d token %v: not the request in flight (%+v, %v)", c.Head, c.Token, r, live)
				}
				if (c.Len > r.writable) != errors.Is(err, ErrBadEntry) {
					t.Fatalf("%d bytes into %d: error %v", c.Len, r.writable, err)
				}
				delete(inFlight, c.Head)
			}
			used := 0
			for _, r := range inFlight {
				used += r.descs
			}
			if used+len(q.free) != size || q.Outstanding() != len(inFlight) {
				t.Fatalf("%d descriptors in flight, %d free, of %d; %d requests outstanding, %d in flight", used, len(q.free), size, q.Outstanding(), len(inFlight))
			}
		}
	})
}
