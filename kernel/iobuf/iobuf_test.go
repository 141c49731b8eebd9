package iobuf

import "testing"

func TestClasses(t *testing.T) {
	for _, c := range []struct{ n, class, cap int }{
		{0, 0, 512}, {1, 0, 512}, {512, 0, 512}, {513, 1, 1024}, {4096, 3, 4096}, {4097, 4, 8192}, {Max, 11, Max},
	} {
		if got := class(c.n); got != c.class {
			t.Errorf("class of %d: %d, want %d", c.n, got, c.class)
		}
		b := Get(c.n)
		if len(*b) != c.n || cap(*b) != c.cap {
			t.Errorf("buffer of %d: len %d cap %d, want cap %d", c.n, len(*b), cap(*b), c.cap)
		}
		Put(b)
	}
	if got := len(pools); got != 12 {
		t.Errorf("%d pools, want 12 (512 bytes to 1 MiB)", got)
	}
}

// A buffer given back is lent again: the steady state allocates nothing.
func TestNoAllocation(t *testing.T) {
	Put(Get(4096))
	if n := testing.AllocsPerRun(1000, func() { Put(Get(4000)) }); n > 0.01 {
		t.Errorf("%.2f allocations per Get and Put", n)
	}
}
