package workload

import (
	"errors"
	"runtime"
	"testing"
)

func countFiles(v *Vnode) int {
	if v.Mode != modeDir {
		return 1
	}
	n := 0
	for _, c := range v.Children {
		n += countFiles(c)
	}
	return n
}

func TestTreeHoldsEveryFile(t *testing.T) {
	const n = 20000
	fs := NewFS(n)
	if got := countFiles(fs.root); got != n {
		t.Fatalf("tree has %d files, want %d", got, n)
	}
	for _, i := range []int{0, 1, 63, 64, 255, 16384, n - 1} {
		v, err := fs.Lookup(fs.Path(i))
		if err != nil {
			t.Fatal(err)
		}
		if string(v.Data) != v.Name || v.Mode != modeFile {
			t.Errorf("file %d: name %q data %q mode %o", i, v.Name, v.Data, v.Mode)
		}
	}
	if _, err := fs.Lookup("/d1/s0/nosuch"); !errors.Is(err, errNotFound) {
		t.Errorf("missing file: %v", err)
	}
}

func TestRunIsDeterministicAndLeavesTreeIntact(t *testing.T) {
	const n, ops = 5000, 20000
	a, b := NewFS(n), NewFS(n)
	ra, rb := a.Run(1, ops, 7), b.Run(1, ops, 7)
	if ra != rb {
		t.Fatalf("same seed, different results: %+v vs %+v", ra, rb)
	}
	if ra.Ops != ops || ra.Lookups == 0 || ra.Reads == 0 || ra.Creates == 0 || ra.Unlinks == 0 {
		t.Fatalf("operation mix: %+v", ra)
	}
	if ra.Misses != 0 {
		t.Errorf("%d lookups of existing files missed", ra.Misses)
	}
	r4 := a.Run(4, ops, 9)
	if r4.Ops != ops {
		t.Errorf("4 workers did %d ops, want %d", r4.Ops, ops)
	}
	if got := countFiles(a.root); got != n {
		t.Errorf("after runs the tree has %d files, want %d (temporaries leaked or lost)", got, n)
	}
}

func TestVnodeFootprintMatchesExperiment(t *testing.T) {
	const n = 50000
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fs := NewFS(n)
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	// The original experiment: 2 million vnodes in about 640 MB.
	if per < 250 || per > 450 {
		t.Errorf("%.0f bytes per vnode, want about 320", per)
	}
	runtime.KeepAlive(fs)
}
