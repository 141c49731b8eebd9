package socket

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// fakeSock is just enough of a Socket for the option code.
type fakeSock struct {
	Socket
	opts Options
}

func (f *fakeSock) Options() *Options { return &f.opts }
func (f *fakeSock) Type() int         { return linux.SOCK_DGRAM }
func (f *fakeSock) Family() int       { return 99 }
func (f *fakeSock) Protocol() int     { return 0 }
func (f *fakeSock) GetOption(*vfs.Ctx, int, int) ([]byte, error) {
	return nil, linux.ENOPROTOOPT
}
func (f *fakeSock) SetOption(*vfs.Ctx, int, int, []byte) error { return linux.ENOPROTOOPT }

func i32(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }

func getInt32(t *testing.T, s Socket, name int) int32 {
	t.Helper()
	v, err := GetOption(nil, s, linux.SOL_SOCKET, name)
	if err != nil || len(v) != 4 {
		t.Fatalf("getsockopt %d: %v %v", name, v, err)
	}
	return int32(binary.LittleEndian.Uint32(v))
}

func TestBufferSizes(t *testing.T) {
	s := &fakeSock{opts: InitOptions()}
	if got := getInt32(t, s, linux.SO_SNDBUF); got != DefaultBuf {
		t.Errorf("default SO_SNDBUF %d", got)
	}
	for _, c := range []struct{ set, want int32 }{
		{8192, 16384}, {1, MinSndBuf}, {-5, 2 * MaxBuf}, {1 << 30, 2 * MaxBuf},
	} {
		if err := SetOption(nil, s, linux.SOL_SOCKET, linux.SO_SNDBUF, i32(c.set)); err != nil {
			t.Fatal(err)
		}
		if got := getInt32(t, s, linux.SO_SNDBUF); got != c.want {
			t.Errorf("SO_SNDBUF %d: got %d, want %d", c.set, got, c.want)
		}
	}
	SetOption(nil, s, linux.SOL_SOCKET, linux.SO_RCVBUF, i32(1))
	if got := getInt32(t, s, linux.SO_RCVBUF); got != MinRcvBuf {
		t.Errorf("tiny SO_RCVBUF: %d", got)
	}
}

func TestOptionErrors(t *testing.T) {
	s := &fakeSock{opts: InitOptions()}
	for _, c := range []struct {
		name int
		val  []byte
		want error
	}{
		{linux.SO_REUSEADDR, []byte{1, 0}, linux.EINVAL},
		{linux.SO_TYPE, i32(1), linux.ENOPROTOOPT},
		{9999, i32(1), linux.ENOPROTOOPT},
		{linux.SO_RCVTIMEO, make([]byte, 8), linux.EINVAL},
		{linux.SO_LINGER, make([]byte, 4), linux.EINVAL},
	} {
		if err := SetOption(nil, s, linux.SOL_SOCKET, c.name, c.val); !errors.Is(err, c.want) {
			t.Errorf("setsockopt %d: %v, want %v", c.name, err, c.want)
		}
	}
	tv := make([]byte, 16)
	binary.LittleEndian.PutUint64(tv[8:], 1000000)
	if err := SetOption(nil, s, linux.SOL_SOCKET, linux.SO_SNDTIMEO, tv); !errors.Is(err, linux.EDOM) {
		t.Errorf("timeval with 10^6 us: %v, want EDOM", err)
	}
	if _, err := GetOption(nil, s, linux.SOL_SOCKET, 9999); !errors.Is(err, linux.ENOPROTOOPT) {
		t.Errorf("unknown option: %v", err)
	}
}

func TestFlagsAndTimeouts(t *testing.T) {
	s := &fakeSock{opts: InitOptions()}
	SetOption(nil, s, linux.SOL_SOCKET, linux.SO_PASSCRED, i32(7))
	if !s.opts.Flag(linux.SO_PASSCRED) || getInt32(t, s, linux.SO_PASSCRED) != 1 {
		t.Error("SO_PASSCRED not set to 1")
	}
	if getInt32(t, s, linux.SO_TYPE) != linux.SOCK_DGRAM || getInt32(t, s, linux.SO_DOMAIN) != 99 {
		t.Error("SO_TYPE/SO_DOMAIN from the socket")
	}
	tv := make([]byte, 16)
	binary.LittleEndian.PutUint64(tv, 2)
	binary.LittleEndian.PutUint64(tv[8:], 250000)
	SetOption(nil, s, linux.SOL_SOCKET, linux.SO_RCVTIMEO, tv)
	if rcv, _ := s.opts.Timeouts(); rcv != 2250*time.Millisecond {
		t.Errorf("SO_RCVTIMEO %v", rcv)
	}
	v, _ := GetOption(nil, s, linux.SOL_SOCKET, linux.SO_RCVTIMEO)
	if string(v) != string(tv) {
		t.Errorf("SO_RCVTIMEO read back %v", v)
	}
	binary.LittleEndian.PutUint64(tv, uint64(1<<63)) // negative seconds: no timeout
	SetOption(nil, s, linux.SOL_SOCKET, linux.SO_RCVTIMEO, tv)
	if rcv, _ := s.opts.Timeouts(); rcv != 0 {
		t.Errorf("negative SO_RCVTIMEO gave %v", rcv)
	}
}

var ready2 atomic.Bool

func TestWait(t *testing.T) {
	var q vfs.Queue
	ready := false
	check := func() bool { return ready }
	if err := Wait(Blocking{NonBlock: true}, 0, check, &q); !errors.Is(err, linux.EAGAIN) {
		t.Errorf("non-blocking: %v", err)
	}
	start := time.Now()
	if err := Wait(Blocking{}, 30*time.Millisecond, check, &q); !errors.Is(err, linux.EAGAIN) || time.Since(start) < 30*time.Millisecond {
		t.Errorf("timeout: %v after %v", err, time.Since(start))
	}
	intr := make(chan struct{})
	close(intr)
	if err := Wait(Blocking{Intr: intr}, 0, check, &q); !errors.Is(err, linux.EINTR) {
		t.Errorf("interrupted: %v", err)
	}
	err := Wait(Blocking{Intr: intr}, time.Second, check, &q)
	var e linux.Errno
	if errors.Is(err, linux.EINTR) || !errors.As(err, &e) || e != linux.EINTR {
		t.Errorf("interrupted with a timeout: %v, want ErrIntrNoRestart", err)
	}
	var q2 vfs.Queue
	done := make(chan error)
	go func() { done <- Wait(Blocking{}, 0, func() bool { return ready2.Load() }, &q, &q2) }()
	time.Sleep(10 * time.Millisecond)
	ready2.Store(true)
	q2.Notify() // the second queue wakes it
	select {
	case err := <-done:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(5 * time.Second):
		t.Error("not woken by the second queue")
	}
}

// WaitTried looks only once registered: a non-blocking caller gets
// EAGAIN without a look, a condition that turned true since the
// caller's try is seen at the first look (no Notify needed), and
// nothing stays registered.
func TestWaitTried(t *testing.T) {
	var q vfs.Queue
	looks := 0
	check := func() bool { looks++; return true }
	if err := WaitTried(Blocking{NonBlock: true}, 0, check, &q); !errors.Is(err, linux.EAGAIN) || looks != 0 {
		t.Errorf("non-blocking: %v after %d looks, want EAGAIN after none", err, looks)
	}
	if err := WaitTried(Blocking{}, 0, check, &q); err != nil || looks != 1 {
		t.Errorf("ready: %v after %d looks, want nil after 1", err, looks)
	}
	if n := q.Waiters(); n != 0 {
		t.Errorf("%d registrations left", n)
	}
}
