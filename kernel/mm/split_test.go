package mm

import (
	"math/rand"
	"testing"
)

// TestRandomMapUnmapProtect drives Map, Unmap and Protect at random over
// 64 pages and checks the VMA list after every call against a model of
// each page's protection: sorted, disjoint, non-empty records that cover
// exactly the mapped pages with their protections, and Off advancing
// with Start inside what one Map made (splitLocked's cuts).
func TestRandomMapUnmapProtect(t *testing.T) {
	const base, pages = uintptr(0x400000), 64
	s, _, _ := newTestSpace(t, 1000)
	defer s.Destroy()
	var model [pages]int // 0: unmapped, else prot+1
	var origin [pages]uintptr
	rng := rand.New(rand.NewSource(7))
	prots := []int{ProtRead, ProtRead | ProtWrite, 0}
	for step := 0; step < 3000; step++ {
		a := rng.Intn(pages)
		n := 1 + rng.Intn(min(8, pages-a))
		start, end := base+uintptr(a)*PageSize, base+uintptr(a+n)*PageSize
		switch op := rng.Intn(3); op {
		case 0:
			p := prots[rng.Intn(len(prots))]
			// Off names the page of a made-up object, so that cuts
			// are seen to keep it in step with Start.
			if err := s.Map(VMA{Start: start, End: end, Prot: p, Off: uintptr(a) * PageSize}); err != nil {
				t.Fatalf("step %d: Map(%#x-%#x): %v", step, start, end, err)
			}
			for i := a; i < a+n; i++ {
				model[i], origin[i] = p+1, base
			}
		case 1:
			if err := s.Unmap(start, end-start); err != nil {
				t.Fatalf("step %d: Unmap: %v", step, err)
			}
			for i := a; i < a+n; i++ {
				model[i] = 0
			}
		case 2:
			p := prots[rng.Intn(len(prots))]
			mapped := true
			for i := a; i < a+n; i++ {
				mapped = mapped && model[i] != 0
			}
			err := s.Protect(start, end-start, p)
			if mapped != (err == nil) {
				t.Fatalf("step %d: Protect(%#x-%#x) over mapped=%v: %v", step, start, end, mapped, err)
			}
			if err == nil {
				for i := a; i < a+n; i++ {
					model[i] = p + 1
				}
			}
		}
		vs := s.VMAs()
		for i, v := range vs {
			if v.Start >= v.End || i > 0 && vs[i-1].End > v.Start {
				t.Fatalf("step %d: VMA list not sorted and disjoint: %+v", step, vs)
			}
		}
		for i := range pages {
			va := base + uintptr(i)*PageSize
			got := 0
			for _, v := range vs {
				if v.Start <= va && va < v.End {
					got = v.Prot + 1
					if off := v.Off + (va - v.Start); off != va-origin[i] {
						t.Fatalf("step %d: page %#x at object offset %#x, want %#x", step, va, off, va-origin[i])
					}
				}
			}
			if got != model[i] {
				t.Fatalf("step %d: page %#x: prot+1 %d, model %d; VMAs %+v", step, va, got, model[i], vs)
			}
		}
	}
}
