package vfs_test

import (
	"testing"

	"shortbread/kernel/vfs"
)

// signalled reports whether w's channel holds a signal, taking it.
func signalled(w *vfs.Waiter) bool {
	select {
	case <-w.C():
		return true
	default:
		return false
	}
}

// A Waiter hears every queue it watches until Release, then none; the
// first queue keeps it as its spare, with no signal left in it.
func TestWaiterReuse(t *testing.T) {
	var qs [4]vfs.Queue
	home := &qs[0]
	w := home.GetWaiter()
	for i := range qs { // past the two built-in registrations
		w.Watch(&qs[i])
	}
	for i := range qs {
		if n := qs[i].Waiters(); n != 1 {
			t.Fatalf("queue %d: %d waiters, want 1", i, n)
		}
		qs[i].Notify()
		if !signalled(w) {
			t.Fatalf("queue %d's Notify not heard", i)
		}
	}
	qs[3].Notify() // left in the channel at Release
	w.Release(home)
	for i := range qs {
		if n := qs[i].Waiters(); n != 0 {
			t.Fatalf("queue %d: %d waiters after Release, want 0", i, n)
		}
		qs[i].Notify()
	}
	if signalled(w) {
		t.Fatal("a signal reached the released waiter")
	}
	if again := home.GetWaiter(); again != w {
		t.Fatal("the home queue did not keep its spare")
	}
	if other := home.GetWaiter(); other == w {
		t.Fatal("the spare was handed out twice")
	}
	// Another queue's registration does not disturb its neighbours'.
	a, b := home.GetWaiter(), home.GetWaiter()
	a.Watch(&qs[1])
	b.Watch(&qs[1])
	a.Release(home)
	qs[1].Notify()
	if !signalled(b) || signalled(a) {
		t.Fatal("Release removed the wrong registration")
	}
	b.Release(home)
}

// A wait through a reused Waiter allocates nothing.
func TestWaiterNoAlloc(t *testing.T) {
	var q vfs.Queue
	q.GetWaiter().Release(&q)
	n := testing.AllocsPerRun(100, func() {
		w := q.GetWaiter()
		w.Watch(&q)
		q.Notify()
		<-w.C()
		w.Release(&q)
	})
	if n != 0 {
		t.Fatalf("%v allocations a wait, want 0", n)
	}
}
