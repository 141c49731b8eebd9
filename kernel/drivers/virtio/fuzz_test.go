package virtio

import (
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

// FuzzUsed: whatever a device writes into the used ring, Used returns
// only requests in flight, each once, with lengths they can hold, or
// ErrDevice; it never panics.
func FuzzUsed(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 0, 0, 0, 0, 8, 0, 0, 0})
	f.Add([]byte{0, 0, 3, 0, 2, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, ring []byte) {
		const size = 8
		mk := func() Page { return Page{Mem: make([]byte, PageSize)} }
		q := &Queue{t: &Transport{Dev: &pci.Device{}, notify: nullRegion{}}, size: size, desc: mk(), avail: mk(), used: mk(),
			inflight: make([]chain, size)}
		for d := size - 1; d >= 0; d-- {
			q.free = append(q.free, uint16(d))
		}
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
