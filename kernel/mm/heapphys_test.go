package mm

import (
	"sync"
	"testing"
)

// TestHeapPhysLive: Live counts the frames allocated and not freed;
// a freed frame is gone (Page is nil) and freeing it again, or an
// address never allocated, changes nothing; frames are distinct,
// nonzero and zeroed, also when allocated from several goroutines.
func TestHeapPhysLive(t *testing.T) {
	var h HeapPhys
	if n := h.Live(); n != 0 {
		t.Fatalf("a new HeapPhys has %d live frames", n)
	}
	seen := map[uintptr]bool{}
	var pas []uintptr
	for i := 0; i < 3; i++ {
		pa := h.Alloc()
		if pa == 0 || seen[pa] {
			t.Fatalf("frame %d at %#x (seen: %v)", i, pa, seen[pa])
		}
		seen[pa] = true
		pas = append(pas, pa)
		p := h.Page(pa)
		if p == nil || *p != [PageSize]byte{} {
			t.Fatalf("frame %#x is missing or not zeroed", pa)
		}
		p[0] = byte(i + 1)
	}
	if n := h.Live(); n != 3 {
		t.Fatalf("%d live frames after 3 allocations", n)
	}
	h.Free(pas[1])
	if n := h.Live(); n != 2 || h.Page(pas[1]) != nil {
		t.Fatalf("after a free: %d live frames, freed page %p", n, h.Page(pas[1]))
	}
	h.Free(pas[1])
	h.Free(pas[2] + 64*PageSize)
	if n := h.Live(); n != 2 {
		t.Fatalf("freeing twice or a stranger changed the count to %d", n)
	}
	if h.Page(pas[0])[0] != 1 || h.Page(pas[2])[0] != 3 {
		t.Fatal("a free touched another frame")
	}

	const workers, each = 4, 50
	var wg sync.WaitGroup
	got := make([][]uintptr, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				got[w] = append(got[w], h.Alloc())
			}
		}()
	}
	wg.Wait()
	if n := h.Live(); n != 2+workers*each {
		t.Fatalf("%d live frames after %d concurrent allocations, want %d", n, workers*each, 2+workers*each)
	}
	for _, g := range got {
		for _, pa := range g {
			if seen[pa] {
				t.Fatalf("frame %#x handed out twice", pa)
			}
			seen[pa] = true
			h.Free(pa)
		}
	}
	h.Free(pas[0])
	h.Free(pas[2])
	if n := h.Live(); n != 0 {
		t.Fatalf("%d live frames after freeing all", n)
	}
}
