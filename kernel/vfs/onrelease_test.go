package vfs_test

import (
	"testing"

	"shortbread/kernel/vfs"
)

type releaseCounter struct {
	n    int
	with *vfs.OpenFile
}

func (c *releaseCounter) FileReleased(f *vfs.OpenFile) { c.n++; c.with = f }

// A release watcher is told once, at the last reference's release, and
// not after StopOnRelease.
func TestOnRelease(t *testing.T) {
	r, w, err := vfs.NewPipe(0, vfs.Owner{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.DecRef()
	var told, stopped releaseCounter
	r.OnRelease(&told)
	r.OnRelease(&stopped)
	if got := r.FindReleaseWatcher(func(w vfs.ReleaseWatcher) bool { return w == &stopped }); got != &stopped {
		t.Errorf("FindReleaseWatcher: %v, want the second watcher", got)
	}
	r.StopOnRelease(&stopped)
	if got := r.FindReleaseWatcher(func(w vfs.ReleaseWatcher) bool { return w == &stopped }); got != nil {
		t.Errorf("FindReleaseWatcher after StopOnRelease: %v, want nil", got)
	}
	r.IncRef()
	r.DecRef()
	if told.n != 0 {
		t.Fatal("told before the last reference went")
	}
	r.DecRef()
	if told.n != 1 || told.with != r {
		t.Errorf("told %d times (file %p, want %p)", told.n, told.with, r)
	}
	if stopped.n != 0 {
		t.Error("told after StopOnRelease")
	}
}

// A WakeFunc watcher is called by every Notify until cancelled, in
// registration order with channel watchers.
func TestQueueWakeFunc(t *testing.T) {
	var q vfs.Queue
	ch := make(chan struct{}, 1)
	var order []string
	calls := 0
	c1 := q.Watch(vfs.WakeChan(ch))
	c2 := q.Watch(vfs.WakeFunc(func() {
		calls++
		if len(ch) == 1 {
			order = append(order, "chan first")
		}
	}))
	q.Notify()
	q.Notify()
	if calls != 2 || len(order) != 2 {
		t.Errorf("%d calls, order %v", calls, order)
	}
	c2()
	q.Notify()
	if calls != 2 {
		t.Error("called after cancel")
	}
	c1()
	if q.Waiters() != 0 {
		t.Errorf("%d waiters left", q.Waiters())
	}
}

// A Registration is told by every Notify until cancelled, and a pipe's
// WatchQueues names exactly the queues its Watch registers on.
func TestRegistrationAndWatchQueues(t *testing.T) {
	var q vfs.Queue
	calls := 0
	var r vfs.Registration
	r.Register(&q, vfs.WakeFunc(func() { calls++ }))
	q.Notify()
	r.Cancel()
	q.Notify()
	r.Cancel() // a second cancel does nothing
	if calls != 1 || q.Waiters() != 0 {
		t.Errorf("told %d times, %d watchers left; want 1, 0", calls, q.Waiters())
	}
	rf, wf, err := vfs.NewPipe(0, vfs.Owner{})
	if err != nil {
		t.Fatal(err)
	}
	defer rf.DecRef()
	defer wf.DecRef()
	for _, f := range []*vfs.OpenFile{rf, wf} {
		q1, q2 := f.Impl().(vfs.QueueWatcher).WatchQueues()
		if q2 != nil {
			t.Fatal("one end of a pipe names two queues")
		}
		ch := make(chan struct{}, 1)
		cancel := f.Impl().(vfs.Poller).Watch(vfs.WakeChan(ch))
		if q1.Waiters() != 1 {
			t.Errorf("Watch registered %d watchers on the named queue, want 1", q1.Waiters())
		}
		cancel()
	}
}
