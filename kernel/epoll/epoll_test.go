package epoll

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// fakeFile is a pollable file whose readiness a test sets; it counts the
// questions it is asked, and fails the test if asked after its release.
type fakeFile struct {
	t        *testing.T
	ready    atomic.Uint32
	polls    atomic.Int64
	released atomic.Bool
	q        vfs.Queue
}

func (f *fakeFile) Read(vfs.Blocking, []byte, int64) (int, error)  { return 0, linux.EINVAL }
func (f *fakeFile) Write(vfs.Blocking, []byte, int64) (int, error) { return 0, linux.EINVAL }
func (f *fakeFile) Release()                                       { f.released.Store(true) }
func (f *fakeFile) Watch(w vfs.Wake) func()                        { return f.q.Watch(w) }
func (f *fakeFile) Readiness() uint32 {
	if f.released.Load() {
		f.t.Error("readiness asked of a released file")
	}
	f.polls.Add(1)
	return f.ready.Load()
}

// set changes the readiness and notifies, as a file does on a change.
func (f *fakeFile) set(r uint32) {
	f.ready.Store(r)
	f.q.Notify()
}

func newFake(t *testing.T) (*fakeFile, *vfs.OpenFile) {
	ff := &fakeFile{t: t}
	return ff, vfs.NewFile(vfs.NewAnonInode(linux.S_IFREG|0o600, vfs.Owner{}), ff, linux.O_RDWR)
}

func newInstance(t *testing.T) (*Instance, *vfs.OpenFile) {
	ep := New()
	f := vfs.NewFile(vfs.NewAnonInode(linux.S_IFREG|0o600, vfs.Owner{}), ep, linux.O_RDWR)
	t.Cleanup(f.DecRef)
	return ep, f
}

func collect(ep *Instance, max int) []Event { return ep.Collect(nil, max) }

func mustAdd(t *testing.T, ep *Instance, fd int, f *vfs.OpenFile, events uint32) {
	t.Helper()
	if err := ep.Add(fd, f, events, uint64(fd)); err != nil {
		t.Fatalf("add fd %d: %v", fd, err)
	}
}

func wantEvents(t *testing.T, what string, got []Event, want ...Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events %v, want %v", what, len(got), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: event %d is %+v, want %+v", what, i, got[i], want[i])
		}
	}
}

func TestLevelTriggeredStaysWhileReady(t *testing.T) {
	ep, _ := newInstance(t)
	ff, f := newFake(t)
	defer f.DecRef()
	mustAdd(t, ep, 3, f, linux.POLLIN)
	wantEvents(t, "not ready", collect(ep, 8))
	ff.set(linux.POLLIN)
	for i := range 3 { // reported on every call while it stays ready
		wantEvents(t, "ready "+string(rune('0'+i)), collect(ep, 8), Event{linux.POLLIN, 3})
	}
	if ep.Readiness() != linux.POLLIN {
		t.Error("instance not readable with a ready level-triggered interest")
	}
	ff.ready.Store(0) // drained, no notification needed to drop it
	wantEvents(t, "drained", collect(ep, 8))
	if ep.Readiness() != 0 {
		t.Error("instance readable with nothing ready")
	}
	ff.set(linux.POLLIN | linux.POLLOUT) // only what was asked for
	wantEvents(t, "again", collect(ep, 8), Event{linux.POLLIN, 3})
}

func TestEdgeTriggeredOncePerEdge(t *testing.T) {
	ep, _ := newInstance(t)
	ff, f := newFake(t)
	defer f.DecRef()
	ff.ready.Store(linux.POLLIN)
	mustAdd(t, ep, 4, f, linux.POLLIN|ET)
	wantEvents(t, "first", collect(ep, 8), Event{linux.POLLIN, 4})
	wantEvents(t, "no new edge", collect(ep, 8))
	if ep.Readiness() != 0 {
		t.Error("instance readable with an edge already reported")
	}
	ff.set(linux.POLLIN) // new data on a readable file: an edge
	if ep.Readiness() != linux.POLLIN {
		t.Error("instance not readable with a new edge")
	}
	wantEvents(t, "new edge", collect(ep, 8), Event{linux.POLLIN, 4})
	wantEvents(t, "once", collect(ep, 8))
	ff.set(0) // an edge to not ready reports nothing
	wantEvents(t, "edge to nothing", collect(ep, 8))
	ff.ready.Store(linux.POLLIN) // ready without a signal: no edge seen yet
	if err := ep.Modify(4, f, linux.POLLIN|ET, 9); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, "modify re-arms", collect(ep, 8), Event{linux.POLLIN, 9})
	wantEvents(t, "modify once", collect(ep, 8))
}

func TestOneshot(t *testing.T) {
	ep, _ := newInstance(t)
	ff, f := newFake(t)
	defer f.DecRef()
	mustAdd(t, ep, 5, f, linux.POLLIN|Oneshot)
	ff.set(linux.POLLIN)
	wantEvents(t, "first", collect(ep, 8), Event{linux.POLLIN, 5})
	ff.set(linux.POLLIN)
	wantEvents(t, "disarmed", collect(ep, 8))
	if ep.Readiness() != 0 {
		t.Error("instance readable with only a disarmed interest")
	}
	if err := ep.Modify(5, f, linux.POLLIN|Oneshot, 6); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, "rearmed", collect(ep, 8), Event{linux.POLLIN, 6})
	wantEvents(t, "disarmed again", collect(ep, 8))
}

func TestDeleteAndErrors(t *testing.T) {
	ep, _ := newInstance(t)
	ff, f := newFake(t)
	defer f.DecRef()
	mustAdd(t, ep, 3, f, linux.POLLIN)
	if err := ep.Add(3, f, linux.POLLIN, 0); !errors.Is(err, linux.EEXIST) {
		t.Errorf("add twice: %v", err)
	}
	mustAdd(t, ep, 7, f, linux.POLLIN) // another descriptor of the file
	ff.set(linux.POLLIN)
	if err := ep.Delete(3, f); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, "after delete", collect(ep, 8), Event{linux.POLLIN, 7})
	ff.set(linux.POLLIN)
	wantEvents(t, "deleted stays gone", collect(ep, 8), Event{linux.POLLIN, 7})
	if err := ep.Delete(3, f); !errors.Is(err, linux.ENOENT) {
		t.Errorf("delete twice: %v", err)
	}
	if err := ep.Modify(3, f, linux.POLLIN, 0); !errors.Is(err, linux.ENOENT) {
		t.Errorf("modify deleted: %v", err)
	}
	if err := ep.Delete(7, f); err != nil {
		t.Fatal(err)
	}
	ff.set(linux.POLLIN)
	wantEvents(t, "all deleted", collect(ep, 8))
	if ep.Readiness() != 0 || ff.q.Waiters() != 0 {
		t.Errorf("deleted interests left: readable %#x, %d watches", ep.Readiness(), ff.q.Waiters())
	}
	mustAdd(t, ep, 8, f, linux.POLLIN|Exclusive)
	if err := ep.Modify(8, f, linux.POLLIN, 0); !errors.Is(err, linux.EINVAL) {
		t.Errorf("modify exclusive: %v", err)
	}
}

// Only the interests on the ready list are asked for their readiness:
// the cost of a call follows what is ready, not what is watched.
func TestCollectAsksOnlyTheReady(t *testing.T) {
	ep, _ := newInstance(t)
	fakes := make([]*fakeFile, 100)
	for i := range fakes {
		ff, f := newFake(t)
		defer f.DecRef()
		fakes[i] = ff
		mustAdd(t, ep, i, f, linux.POLLIN)
	}
	wantEvents(t, "none ready", collect(ep, 8)) // each looked at once after ADD
	for _, ff := range fakes {
		ff.polls.Store(0)
	}
	for range 5 {
		wantEvents(t, "idle", collect(ep, 8))
	}
	fakes[42].set(linux.POLLIN)
	wantEvents(t, "one ready", collect(ep, 8), Event{linux.POLLIN, 42})
	for i, ff := range fakes {
		want := int64(0)
		if i == 42 {
			want = 1
		}
		if n := ff.polls.Load(); n != want {
			t.Errorf("file %d asked %d times, want %d", i, n, want)
		}
	}
}

// With more ready than asked for, the rest wait their turn, and
// level-triggered interests take turns.
func TestMaxEventsTakesTurns(t *testing.T) {
	ep, _ := newInstance(t)
	var files []*vfs.OpenFile
	for i := range 3 {
		ff, f := newFake(t)
		defer f.DecRef()
		files = append(files, f)
		mustAdd(t, ep, i, f, linux.POLLIN)
		ff.set(linux.POLLIN)
	}
	wantEvents(t, "first two", collect(ep, 2), Event{linux.POLLIN, 0}, Event{linux.POLLIN, 1})
	wantEvents(t, "then the third", collect(ep, 2), Event{linux.POLLIN, 2}, Event{linux.POLLIN, 0})
	wantEvents(t, "round", collect(ep, 1), Event{linux.POLLIN, 1})
	wantEvents(t, "all", collect(ep, 8), Event{linux.POLLIN, 2}, Event{linux.POLLIN, 0}, Event{linux.POLLIN, 1})
}

// An interest goes with its file's last reference, not with one of its
// descriptors, and the file is never asked anything after its release.
func TestFileReleaseForgetsInterest(t *testing.T) {
	ep, _ := newInstance(t)
	ff, f := newFake(t)
	mustAdd(t, ep, 3, f, linux.POLLIN)
	ff.set(linux.POLLIN)
	f.IncRef() // a second descriptor
	f.DecRef() // one closed: the interest stays
	wantEvents(t, "dup open", collect(ep, 8), Event{linux.POLLIN, 3})
	f.DecRef() // the last: released
	if !ff.released.Load() {
		t.Fatal("file not released: the instance holds a reference")
	}
	wantEvents(t, "released", collect(ep, 8))
	if ep.Readiness() != 0 || len(ep.list) != 0 {
		t.Errorf("released file's interest left (readable %#x, %d interests)", ep.Readiness(), len(ep.list))
	}
}

func TestReleaseInstance(t *testing.T) {
	ep := New()
	epf := vfs.NewFile(vfs.NewAnonInode(linux.S_IFREG|0o600, vfs.Owner{}), ep, linux.O_RDWR)
	ff, f := newFake(t)
	defer f.DecRef()
	mustAdd(t, ep, 3, f, linux.POLLIN)
	epf.DecRef()
	if ff.q.Waiters() != 0 {
		t.Errorf("%d watches left after the instance's release", ff.q.Waiters())
	}
}

func TestNested(t *testing.T) {
	outer, outerf := newInstance(t)
	inner, innerf := newInstance(t)
	ff, f := newFake(t)
	defer f.DecRef()
	mustAdd(t, inner, 3, f, linux.POLLIN)
	mustAdd(t, outer, 9, innerf, linux.POLLIN)
	wantEvents(t, "inner idle", collect(outer, 8))
	ff.set(linux.POLLIN)
	wantEvents(t, "inner ready", collect(outer, 8), Event{linux.POLLIN, 9})
	wantEvents(t, "inner ready again", collect(outer, 8), Event{linux.POLLIN, 9})
	wantEvents(t, "inner's own", collect(inner, 8), Event{linux.POLLIN, 3})
	ff.set(0)
	wantEvents(t, "inner drained", collect(outer, 8))
	if err := inner.Add(10, outerf, linux.POLLIN, 0); !errors.Is(err, linux.ELOOP) {
		t.Errorf("cycle: %v", err)
	}
	chain := []*vfs.OpenFile{innerf}
	for range MaxNests + 1 {
		ep, epf := newInstance(t)
		if err := ep.Add(1, chain[len(chain)-1], linux.POLLIN, 0); err != nil {
			if !errors.Is(err, linux.ELOOP) {
				t.Fatal(err)
			}
			return
		}
		chain = append(chain, epf)
	}
	t.Error("nesting deeper than MaxNests accepted")
}

func TestWakeSignalled(t *testing.T) {
	ep, _ := newInstance(t)
	ff, f := newFake(t)
	defer f.DecRef()
	mustAdd(t, ep, 3, f, linux.POLLIN) // not ready: no wake-up (TestControlWakesOnlyWhenReady)
	w := ep.WaitQueue().GetWaiter()
	w.Watch(ep.WaitQueue())
	defer w.Release(ep.WaitQueue())
	ff.set(linux.POLLIN)
	select {
	case <-w.C():
	default:
		t.Fatal("a file's notification did not wake the instance")
	}
	ch := make(chan struct{}, 1)
	cancel := ep.Watch(vfs.WakeChan(ch))
	defer cancel()
	ff.set(linux.POLLIN)
	select {
	case <-ch:
	default:
		t.Fatal("a file's notification did not wake the instance's pollers")
	}
}

// Producers make files ready and notify while a consumer collects with
// edge-triggered interests: every edge is reported (none lost between a
// Collect's sampling and a notification) and no interest is reported
// while nothing new happened to it. Run with -race.
func TestConcurrentEdges(t *testing.T) {
	ep, _ := newInstance(t)
	const files, rounds = 8, 300
	type prod struct {
		ff   *fakeFile
		sent atomic.Int64 // edges made
		seen atomic.Int64 // edges consumed by the collector
		ack  chan struct{}
	}
	ps := make([]*prod, files)
	for i := range ps {
		ff, f := newFake(t)
		defer f.DecRef()
		ps[i] = &prod{ff: ff, ack: make(chan struct{}, 1)}
		mustAdd(t, ep, i, f, linux.POLLIN|ET)
	}
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				p.sent.Add(1)
				p.ff.set(linux.POLLIN)
				<-p.ack // the consumer saw it: make the next edge
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	wake := make(chan struct{}, 1)
	cancel := ep.Watch(vfs.WakeChan(wake))
	defer cancel()
	total := 0
	for total < files*rounds {
		evs := ep.Collect(nil, 4)
		if len(evs) == 0 {
			select {
			case <-wake:
			case <-done:
			}
			continue
		}
		for _, ev := range evs {
			p := ps[ev.Data]
			if p.seen.Add(1) > p.sent.Load() {
				t.Fatalf("file %d reported more often than it had edges", ev.Data)
			}
			total++
			p.ack <- struct{}{}
		}
	}
	for i, p := range ps {
		if p.seen.Load() != rounds {
			t.Errorf("file %d: %d edges reported of %d", i, p.seen.Load(), rounds)
		}
	}
}

// EPOLL_CTL_MOD finds its interest through the file and allocates
// nothing; an ADD after a DEL reuses the forgotten record, so the pair
// allocates only what the file's own Watch does (the fake's queue
// watch: a record and its cancel function).
func TestControlAllocations(t *testing.T) {
	ep, _ := newInstance(t)
	var files []*vfs.OpenFile
	for i := range 64 { // others watched, as in an event loop
		_, f := newFake(t)
		defer f.DecRef()
		files = append(files, f)
		mustAdd(t, ep, 100+i, f, linux.POLLIN)
	}
	ff, f := newFake(t)
	defer f.DecRef()
	ff.ready.Store(linux.POLLOUT)
	mustAdd(t, ep, 3, f, linux.POLLIN)
	i := 0
	mod := testing.AllocsPerRun(1000, func() {
		ev := uint32(linux.POLLIN)
		if i++; i&1 == 0 {
			ev |= linux.POLLOUT
		}
		if err := ep.Modify(3, f, ev, 3); err != nil {
			t.Fatal(err)
		}
	})
	if mod != 0 && !raceEnabled {
		t.Errorf("EPOLL_CTL_MOD: %v allocations a call, want 0", mod)
	}
	watch := testing.AllocsPerRun(100, func() { ff.q.Watch(vfs.WakeChan(nil))() })
	pair := testing.AllocsPerRun(1000, func() {
		if err := ep.Delete(3, f); err != nil {
			t.Fatal(err)
		}
		if err := ep.Add(3, f, linux.POLLIN, 3); err != nil {
			t.Fatal(err)
		}
	})
	if pair > watch && !raceEnabled {
		t.Errorf("EPOLL_CTL_DEL + ADD: %v allocations, want at most the file's watch's %v", pair, watch)
	}
	wantEvents(t, "after the churn", collect(ep, 8))
	ff.set(linux.POLLIN)
	wantEvents(t, "the re-added interest", collect(ep, 8), Event{linux.POLLIN, 3})
	ff.set(0)

	// A file that names its queues is watched with the record's own
	// registrations: nothing is allocated at all.
	qf := &queueFake{fakeFile{t: t}}
	g := vfs.NewFile(vfs.NewAnonInode(linux.S_IFREG|0o600, vfs.Owner{}), qf, linux.O_RDWR)
	defer g.DecRef()
	mustAdd(t, ep, 4, g, linux.POLLIN)
	pair = testing.AllocsPerRun(1000, func() {
		if err := ep.Delete(4, g); err != nil {
			t.Fatal(err)
		}
		if qf.q.Waiters() != 0 {
			t.Fatal("DEL left the registration")
		}
		if err := ep.Add(4, g, linux.POLLIN, 4); err != nil {
			t.Fatal(err)
		}
	})
	if pair != 0 && !raceEnabled {
		t.Errorf("EPOLL_CTL_DEL + ADD of a vfs.QueueWatcher: %v allocations, want 0", pair)
	}
	qf.set(linux.POLLIN)
	wantEvents(t, "registered interest", collect(ep, 8), Event{linux.POLLIN, 4})
}

// queueFake names its queue (vfs.QueueWatcher).
type queueFake struct{ fakeFile }

func (f *queueFake) WatchQueues() (*vfs.Queue, *vfs.Queue) { return &f.q, nil }

// MOD and DEL name an interest by descriptor and file: ENOENT for a
// descriptor never added, for the right descriptor of another file, for
// an interest of another instance, and after DEL.
func TestModifyENOENT(t *testing.T) {
	ep, _ := newInstance(t)
	other, _ := newInstance(t)
	ff, f := newFake(t)
	defer f.DecRef()
	_, g := newFake(t)
	defer g.DecRef()
	if err := ep.Modify(3, f, linux.POLLIN, 0); !errors.Is(err, linux.ENOENT) {
		t.Errorf("modify never added: %v", err)
	}
	mustAdd(t, other, 3, f, linux.POLLIN)
	if err := ep.Modify(3, f, linux.POLLIN, 0); !errors.Is(err, linux.ENOENT) {
		t.Errorf("modify of another instance's interest: %v", err)
	}
	mustAdd(t, ep, 3, f, linux.POLLIN)
	if err := ep.Modify(3, g, linux.POLLIN, 0); !errors.Is(err, linux.ENOENT) {
		t.Errorf("modify of another file under the descriptor: %v", err)
	}
	if err := ep.Modify(4, f, linux.POLLIN, 0); !errors.Is(err, linux.ENOENT) {
		t.Errorf("modify of the file under another descriptor: %v", err)
	}
	if err := ep.Delete(3, f); err != nil {
		t.Fatal(err)
	}
	if err := ep.Modify(3, f, linux.POLLIN, 0); !errors.Is(err, linux.ENOENT) {
		t.Errorf("modify after delete: %v", err)
	}
	if err := ep.Delete(3, f); !errors.Is(err, linux.ENOENT) {
		t.Errorf("delete after delete: %v", err)
	}
	ff.set(linux.POLLIN) // the other instance's interest is untouched
	wantEvents(t, "other instance", collect(other, 8), Event{linux.POLLIN, 3})
	wantEvents(t, "deleted", collect(ep, 8))
}

// MOD re-arms a one-shot interest: reported at once when ready, else on
// the file's next signal, and once only either way; an edge-triggered
// interest modified while ready reports once, then only on new edges.
func TestModifyRearm(t *testing.T) {
	ep, _ := newInstance(t)
	ff, f := newFake(t)
	defer f.DecRef()
	mustAdd(t, ep, 5, f, linux.POLLIN|Oneshot)
	ff.set(linux.POLLIN)
	wantEvents(t, "first", collect(ep, 8), Event{linux.POLLIN, 5})
	ff.set(0)
	if err := ep.Modify(5, f, linux.POLLIN|Oneshot, 6); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, "re-armed, not ready", collect(ep, 8))
	ff.set(linux.POLLIN)
	wantEvents(t, "re-armed, then ready", collect(ep, 8), Event{linux.POLLIN, 6})
	ff.set(linux.POLLIN)
	wantEvents(t, "disarmed", collect(ep, 8))

	if err := ep.Modify(5, f, linux.POLLIN|ET, 7); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, "edge-triggered, ready at MOD", collect(ep, 8), Event{linux.POLLIN, 7})
	wantEvents(t, "no new edge", collect(ep, 8))
	ff.set(linux.POLLIN)
	wantEvents(t, "new edge", collect(ep, 8), Event{linux.POLLIN, 7})
	if err := ep.Modify(5, f, linux.POLLOUT|ET, 8); err != nil {
		t.Fatal(err)
	}
	wantEvents(t, "edge-triggered, asked for what is not ready", collect(ep, 8))
	ff.set(linux.POLLIN | linux.POLLOUT)
	wantEvents(t, "writable edge", collect(ep, 8), Event{linux.POLLOUT, 8})
}

// ADD and MOD wake the waiters only when the interest would report.
func TestControlWakesOnlyWhenReady(t *testing.T) {
	ep, _ := newInstance(t)
	ff, f := newFake(t)
	defer f.DecRef()
	wake := make(chan struct{}, 1)
	cancel := ep.Watch(vfs.WakeChan(wake))
	defer cancel()
	drain := func() bool {
		select {
		case <-wake:
			return true
		default:
			return false
		}
	}
	mustAdd(t, ep, 3, f, linux.POLLIN)
	if drain() {
		t.Error("ADD of a file that is not ready woke the waiters")
	}
	ff.ready.Store(linux.POLLOUT) // no signal: only MOD can find it
	if err := ep.Modify(3, f, linux.POLLIN, 3); err != nil {
		t.Fatal(err)
	}
	if drain() {
		t.Error("MOD asking for what is not ready woke the waiters")
	}
	if err := ep.Modify(3, f, linux.POLLIN|linux.POLLOUT, 3); err != nil {
		t.Fatal(err)
	}
	if !drain() {
		t.Error("MOD asking for what is ready did not wake the waiters")
	}
	wantEvents(t, "writable", collect(ep, 8), Event{linux.POLLOUT, 3})
	_, g := newFake(t)
	defer g.DecRef()
	gf := g.Impl().(*fakeFile)
	gf.ready.Store(linux.POLLIN)
	mustAdd(t, ep, 4, g, linux.POLLIN)
	if !drain() {
		t.Error("ADD of a ready file did not wake the waiters")
	}
}

// A record forgotten and reused for another file ignores a late
// FileReleased of its old file (a release under way when DEL ran).
func TestReusedRecordIgnoresOldRelease(t *testing.T) {
	ep, _ := newInstance(t)
	_, f := newFake(t)
	defer f.DecRef()
	gf, g := newFake(t)
	defer g.DecRef()
	mustAdd(t, ep, 3, f, linux.POLLIN)
	it := ep.list[0]
	if err := ep.Delete(3, f); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, ep, 4, g, linux.POLLIN)
	if ep.list[0] != it {
		t.Fatal("ADD after DEL did not reuse the record")
	}
	it.FileReleased(f)
	gf.set(linux.POLLIN)
	wantEvents(t, "reused record", collect(ep, 8), Event{linux.POLLIN, 4})
}
