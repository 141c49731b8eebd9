package vfs_test

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

type result struct {
	n   int
	err error
}

// async runs f in a goroutine and returns where its result arrives.
func async(f func() (int, error)) <-chan result {
	ch := make(chan result, 1)
	go func() {
		n, err := f()
		ch <- result{n, err}
	}()
	return ch
}

// blocked checks that nothing arrives on ch for a while: the call is
// waiting.
func blocked(t *testing.T, what string, ch <-chan result) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s returned %d, %v instead of blocking", what, r.n, r.err)
	case <-time.After(30 * time.Millisecond):
	}
}

// arrives waits for the result on ch.
func arrives(t *testing.T, what string, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatalf("%s still blocked", what)
	}
	return result{}
}

func newPipe(t *testing.T) (r, w *vfs.OpenFile) {
	t.Helper()
	r, w, err := vfs.NewPipe(0, vfs.Owner{})
	if err != nil {
		t.Fatal(err)
	}
	return r, w
}

func TestPipeReadBlocksUntilWrite(t *testing.T) {
	r, w := newPipe(t)
	defer r.DecRef()
	defer w.DecRef()
	buf := make([]byte, 16)
	ch := async(func() (int, error) { return r.Read(buf, nil) })
	blocked(t, "read of an empty pipe", ch)
	w.Write([]byte("wake"), nil)
	res := arrives(t, "read", ch)
	if res.n != 4 || res.err != nil || string(buf[:4]) != "wake" {
		t.Errorf("read %d %v %q", res.n, res.err, buf[:res.n])
	}
}

func TestPipeReadInterrupted(t *testing.T) {
	r, w := newPipe(t)
	defer r.DecRef()
	defer w.DecRef()
	intr := make(chan struct{})
	ch := async(func() (int, error) { return r.Read(make([]byte, 4), intr) })
	blocked(t, "read", ch)
	close(intr)
	if res := arrives(t, "interrupted read", ch); !errors.Is(res.err, linux.EINTR) {
		t.Errorf("interrupted read: %d %v", res.n, res.err)
	}
	// A value sent on the channel interrupts too, and the pipe still works.
	intr2 := make(chan struct{}, 1)
	ch = async(func() (int, error) { return r.Read(make([]byte, 4), intr2) })
	blocked(t, "read", ch)
	intr2 <- struct{}{}
	if res := arrives(t, "interrupted read", ch); !errors.Is(res.err, linux.EINTR) {
		t.Errorf("read interrupted by a send: %v", res.err)
	}
	w.Write([]byte("ok"), nil)
	if n, err := r.Read(make([]byte, 4), nil); n != 2 || err != nil {
		t.Errorf("read after interrupts: %d %v", n, err)
	}
}

// TestPipeInterrupter: with an Interrupter registered for the interrupt
// channel, as kernel/proc registers one per thread, a blocked pipe read
// or write sleeps on its waiter's channel alone, and an interrupt still
// ends it: EINTR with nothing done, the count with some progress, and
// EINTR at once for an interrupt sent before the call.
func TestPipeInterrupter(t *testing.T) {
	r, w := newPipe(t)
	defer r.DecRef()
	defer w.DecRef()
	c := make(chan struct{}, 1)
	x := vfs.NewInterrupter(c, nil)
	x.Register()
	defer x.Unregister()
	interrupt := func() { // what kernel/proc's Thread.wake does
		select {
		case c <- struct{}{}:
		default:
		}
		x.Interrupted()
	}
	ch := async(func() (int, error) { return r.Read(make([]byte, 4), c) })
	blocked(t, "read", ch)
	interrupt()
	if res := arrives(t, "interrupted read", ch); res.n != 0 || !errors.Is(res.err, linux.EINTR) {
		t.Errorf("interrupted read: %d %v, want EINTR", res.n, res.err)
	}
	ch = async(func() (int, error) { return w.Write(make([]byte, 70000), c) })
	blocked(t, "write", ch)
	interrupt()
	if res := arrives(t, "interrupted write", ch); res.n != 65536 || res.err != nil {
		t.Errorf("write interrupted after progress: %d %v, want 65536 and no error", res.n, res.err)
	}
	interrupt()
	if n, err := w.Write(make([]byte, 10), c); n != 0 || !errors.Is(err, linux.EINTR) {
		t.Errorf("write to a full pipe with an interrupt pending: %d %v, want EINTR", n, err)
	}
	// Data wins over no interrupt: the pipe still works both ways.
	if n, err := r.Read(make([]byte, 4096), c); n != 4096 || err != nil {
		t.Errorf("read after the interrupts: %d %v", n, err)
	}
	if n, err := w.Write(make([]byte, 10), c); n != 10 || err != nil {
		t.Errorf("write after the interrupts: %d %v", n, err)
	}
}

func TestPipeEOFWakesReader(t *testing.T) {
	r, w := newPipe(t)
	defer r.DecRef()
	ch := async(func() (int, error) { return r.Read(make([]byte, 4), nil) })
	blocked(t, "read", ch)
	w.DecRef()
	if res := arrives(t, "read at EOF", ch); res.n != 0 || res.err != nil {
		t.Errorf("read after the writer closed: %d %v", res.n, res.err)
	}
}

func TestPipeWriteBlocksWhenFull(t *testing.T) {
	r, w := newPipe(t)
	defer r.DecRef()
	defer w.DecRef()
	big := make([]byte, 70000)
	for i := range big {
		big[i] = byte(i)
	}
	ch := async(func() (int, error) { return w.Write(big, nil) })
	blocked(t, "write beyond capacity", ch)
	got := make([]byte, 0, len(big))
	buf := make([]byte, 5000)
	for len(got) < len(big) {
		n, err := r.Read(buf, nil)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	if res := arrives(t, "write", ch); res.n != len(big) || res.err != nil {
		t.Errorf("write %d %v", res.n, res.err)
	}
	for i := range got {
		if got[i] != big[i] {
			t.Fatalf("byte %d is %d, want %d", i, got[i], big[i])
		}
	}
}

func TestPipeWriteInterruptedAfterProgress(t *testing.T) {
	r, w := newPipe(t)
	defer r.DecRef()
	defer w.DecRef()
	intr := make(chan struct{})
	ch := async(func() (int, error) { return w.Write(make([]byte, 70000), intr) })
	blocked(t, "write", ch)
	close(intr)
	if res := arrives(t, "interrupted write", ch); res.n != 65536 || res.err != nil {
		t.Errorf("write interrupted after progress: %d %v, want 65536 and no error", res.n, res.err)
	}
	// Interrupted before any progress: EINTR.
	ch = async(func() (int, error) { return w.Write(make([]byte, 10), intr) })
	if res := arrives(t, "interrupted write", ch); res.n != 0 || !errors.Is(res.err, linux.EINTR) {
		t.Errorf("write interrupted with no progress: %d %v", res.n, res.err)
	}
}

func TestPipeReaderCloseWakesWriter(t *testing.T) {
	r, w := newPipe(t)
	defer w.DecRef()
	ch := async(func() (int, error) { return w.Write(make([]byte, 70000), nil) })
	blocked(t, "write", ch)
	r.DecRef()
	if res := arrives(t, "write", ch); res.n != 65536 || !errors.Is(res.err, linux.EPIPE) {
		t.Errorf("write when the reader left: %d %v, want 65536 and EPIPE", res.n, res.err)
	}
}

func TestPipeNonblockFromSetFlags(t *testing.T) {
	r, w := newPipe(t)
	defer r.DecRef()
	defer w.DecRef()
	r.SetFlags(linux.O_NONBLOCK)
	if _, err := r.Read(make([]byte, 1), nil); !errors.Is(err, linux.EAGAIN) {
		t.Errorf("read with O_NONBLOCK set by F_SETFL: %v", err)
	}
	if r.Flags() != linux.O_RDONLY|linux.O_NONBLOCK {
		t.Errorf("flags %#o", r.Flags())
	}
}

// TestPipeWatch checks the readiness notifications poll and epoll use.
func TestPipeWatch(t *testing.T) {
	r, w := newPipe(t)
	defer r.DecRef()
	if !r.Pollable() || !w.Pollable() {
		t.Fatal("pipe ends not pollable")
	}
	rch := make(chan struct{}, 1)
	cancel := r.Watch(vfs.WakeChan(rch))
	wch := make(chan struct{}, 1)
	wcancel := w.Watch(vfs.WakeChan(wch))
	defer wcancel()
	if got := r.Readiness(); got != 0 {
		t.Errorf("empty pipe read end: %#x", got)
	}
	if got := w.Readiness(); got != linux.POLLOUT|linux.POLLWRNORM {
		t.Errorf("write end: %#x", got)
	}
	w.Write([]byte("x"), nil)
	select {
	case <-rch:
	default:
		t.Fatal("write did not signal the read end's watcher")
	}
	if got := r.Readiness(); got != linux.POLLIN|linux.POLLRDNORM {
		t.Errorf("read end with data: %#x", got)
	}
	// Edge-triggered users get a signal per write, even while readable.
	w.Write([]byte("y"), nil)
	select {
	case <-rch:
	default:
		t.Error("second write did not signal")
	}
	r.Read(make([]byte, 2), nil)
	select {
	case <-wch:
	default:
		t.Error("read did not signal the write end's watcher")
	}
	cancel()
	w.Write([]byte("z"), nil)
	select {
	case <-rch:
		t.Error("signalled after cancel")
	default:
	}
	w.DecRef()
	if got := r.Readiness(); got != linux.POLLIN|linux.POLLRDNORM|linux.POLLHUP {
		t.Errorf("after the writer closed: %#x", got)
	}
}

func TestEventFDBlocking(t *testing.T) {
	f, err := vfs.NewEventFD(0, 0, vfs.Owner{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.DecRef()
	buf := make([]byte, 8)
	ch := async(func() (int, error) { return f.Read(buf, nil) })
	blocked(t, "read of a zero eventfd", ch)
	f.Write(binary.LittleEndian.AppendUint64(nil, 5), nil)
	if res := arrives(t, "read", ch); res.n != 8 || binary.LittleEndian.Uint64(buf) != 5 {
		t.Errorf("read %d value %d", res.n, binary.LittleEndian.Uint64(buf))
	}
	f.Write(binary.LittleEndian.AppendUint64(nil, 1<<64-2), nil)
	ch = async(func() (int, error) { return f.Write(binary.LittleEndian.AppendUint64(nil, 3), nil) })
	blocked(t, "write that would overflow", ch)
	f.Read(buf, nil)
	if res := arrives(t, "write", ch); res.n != 8 {
		t.Errorf("write after room was made: %d %v", res.n, res.err)
	}
	intr := make(chan struct{})
	f.Read(buf, nil)
	ch = async(func() (int, error) { return f.Read(buf, intr) })
	blocked(t, "read", ch)
	close(intr)
	if res := arrives(t, "read", ch); !errors.Is(res.err, linux.EINTR) {
		t.Errorf("interrupted eventfd read: %v", res.err)
	}
}

// TestFIFOOpenWaits checks the rendezvous of blocking FIFO opens.
func TestFIFOOpenWaits(t *testing.T) {
	k := newKernelSys(t)
	must(t, "mkfifo", k.mknod("fifo", linux.S_IFIFO|0o600, 0))
	ch := async(func() (int, error) { return k.open("fifo", linux.O_RDONLY, 0) })
	blocked(t, "open for reading", ch)
	w, err := k.open("fifo", linux.O_WRONLY, 0)
	must(t, "open for writing", err)
	res := arrives(t, "open for reading", ch)
	must(t, "open for reading", res.err)
	k.write(w, []byte("through"))
	buf := make([]byte, 16)
	n, _ := k.read(res.n, buf)
	if string(buf[:n]) != "through" {
		t.Errorf("read %q", buf[:n])
	}
	k.close(w)
	k.close(res.n)

	ch = async(func() (int, error) { return k.open("fifo", linux.O_WRONLY, 0) })
	blocked(t, "open for writing", ch)
	r, err := k.open("fifo", linux.O_RDONLY|linux.O_NONBLOCK, 0)
	must(t, "open for reading", err)
	res = arrives(t, "open for writing", ch)
	must(t, "open for writing", res.err)
	k.close(res.n)
	k.close(r)

	intr := make(chan struct{})
	k.ctx.Intr = intr
	ch = async(func() (int, error) { return k.open("fifo", linux.O_RDONLY, 0) })
	blocked(t, "open", ch)
	close(intr)
	if res := arrives(t, "interrupted open", ch); !errors.Is(res.err, linux.EINTR) {
		t.Errorf("interrupted open: %v", res.err)
	}
}

func TestQueue(t *testing.T) {
	var q vfs.Queue
	q.Notify() // nobody watching: nothing happens
	a, b := make(chan struct{}, 1), make(chan struct{}, 1)
	ca, cb := q.Watch(vfs.WakeChan(a)), q.Watch(vfs.WakeChan(b))
	if q.Waiters() != 2 {
		t.Errorf("%d waiters", q.Waiters())
	}
	q.Notify()
	q.Notify() // a full buffer drops the signal instead of blocking
	if len(a) != 1 || len(b) != 1 {
		t.Error("both watchers should hold one signal")
	}
	<-a
	ca()
	cb()
	q.Notify()
	if len(a) != 0 || q.Waiters() != 0 {
		t.Error("cancelled watcher signalled")
	}
	var ready atomic.Bool
	ch := async(func() (int, error) {
		return 0, vfs.WaitFor(&q, vfs.Blocking{}, ready.Load)
	})
	blocked(t, "WaitFor", ch)
	ready.Store(true)
	q.Notify()
	if res := arrives(t, "WaitFor", ch); res.err != nil {
		t.Error(res.err)
	}
	if err := vfs.WaitFor(&q, vfs.Blocking{NonBlock: true}, func() bool { return false }); !errors.Is(err, linux.EAGAIN) {
		t.Errorf("nonblocking WaitFor: %v", err)
	}
}
