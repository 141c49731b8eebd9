package mm

import (
	"math/rand"
	"testing"
)

// TestFrameIndexMatchesMap drives the index and a Go map with the same
// random sets, truncations and punches over small, dense and sparse
// ranges, and checks that they agree on every entry and the count.
func TestFrameIndexMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var x frameIndex
	ref := map[uintptr]uintptr{}
	next := uintptr(PageSize)
	spans := []uintptr{4, leafLen, 3 * leafLen, 1 << 20}
	check := func(step int) {
		t.Helper()
		if x.len() != len(ref) {
			t.Fatalf("step %d: len %d, want %d", step, x.len(), len(ref))
		}
		seen := 0
		x.visit(0, ^uintptr(0), func(i, f uintptr) bool {
			if ref[i] != f {
				t.Fatalf("step %d: page %d frame %#x, want %#x", step, i, f, ref[i])
			}
			seen++
			return false
		})
		if seen != len(ref) {
			t.Fatalf("step %d: visited %d, want %d", step, seen, len(ref))
		}
		for i, f := range ref {
			if x.get(i) != f {
				t.Fatalf("step %d: get(%d) = %#x, want %#x", step, i, x.get(i), f)
			}
		}
	}
	for step := 0; step < 20000; step++ {
		span := spans[rng.Intn(len(spans))]
		i := uintptr(rng.Int63n(int64(span)))
		switch op := rng.Intn(10); {
		case op < 7:
			if _, ok := ref[i]; !ok {
				x.set(i, next)
				ref[i] = next
				next += PageSize
			}
		case op < 9:
			j := i + uintptr(rng.Intn(2*leafLen))
			x.visit(i, j, func(k, f uintptr) bool {
				if k < i || k >= j {
					t.Fatalf("visit(%d, %d) reached %d", i, j, k)
				}
				delete(ref, k)
				return true
			})
		default:
			x.visit(i, ^uintptr(0), func(k, f uintptr) bool { delete(ref, k); return true })
		}
		if step%97 == 0 {
			check(step)
		}
	}
	check(-1)
	x.visit(0, ^uintptr(0), func(uintptr, uintptr) bool { return true })
	if x.len() != 0 || x.low != nil || x.high != nil {
		t.Fatalf("emptied index keeps %d entries, low %d, %d leaves", x.len(), cap(x.low), len(x.high))
	}
}

// TestFrameIndexSmallFile: a one-page file's index is one short slice,
// and a large file truncated to one page shrinks back to that.
func TestFrameIndexSmallFile(t *testing.T) {
	var x frameIndex
	x.set(0, PageSize)
	if cap(x.low) != 1 || x.high != nil {
		t.Fatalf("one page: leaf capacity %d, %d high leaves", cap(x.low), len(x.high))
	}
	for i := uintptr(1); i < 5*leafLen; i++ {
		x.set(i, (i+1)*PageSize)
	}
	if cap(x.low) != leafLen || len(x.high) != 4 {
		t.Fatalf("full: leaf capacity %d, %d high leaves", cap(x.low), len(x.high))
	}
	x.visit(1, ^uintptr(0), func(uintptr, uintptr) bool { return true })
	if x.len() != 1 || cap(x.low) > 1 || x.high != nil {
		t.Fatalf("truncated to a page: len %d, leaf capacity %d, %d high leaves", x.len(), cap(x.low), len(x.high))
	}
}

func BenchmarkFrameIndexFill(b *testing.B) {
	for b.Loop() {
		var x frameIndex
		for i := uintptr(0); i < 80000; i++ {
			x.set(i, (i+1)*PageSize)
		}
	}
}
