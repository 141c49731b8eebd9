package unix

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/tmpfs"
	"shortbread/kernel/net/socket"
	"shortbread/kernel/vfs"
)

var registerOnce sync.Once

// setup makes a fresh tmpfs-rooted VFS for the family's path names and
// returns a root caller context on it. Abstract names are global: each
// test uses its own and releases its sockets.
var (
	testVFS *vfs.VFS
	testCtx *vfs.Ctx
)

func setup(t *testing.T) *vfs.Ctx {
	t.Helper()
	registerOnce.Do(func() { Register(func() *vfs.VFS { return testVFS }) })
	v, err := vfs.New(tmpfs.New(tmpfs.Options{Dev: linux.MakeDev(0, 1)}).Root(), "tmpfs")
	if err != nil {
		t.Fatal(err)
	}
	testVFS = v
	testCtx = &vfs.Ctx{Root: v.Root(), Cwd: v.Root(), PID: 7}
	return testCtx
}

func mustSock(t *testing.T, c *vfs.Ctx, typ int) socket.Socket {
	t.Helper()
	s, err := socket.New(c, linux.AF_UNIX, typ, 0)
	if err != nil {
		t.Fatalf("socket(%d): %v", typ, err)
	}
	return s
}

func pathAddr(p string) []byte { return append([]byte{linux.AF_UNIX, 0}, p...) }

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: got %v, want %v", what, err, want)
	}
}

var nb = socket.Blocking{NonBlock: true}

func TestCreateChecks(t *testing.T) {
	c := setup(t)
	_, err := socket.New(c, 45, linux.SOCK_STREAM, 0)
	wantErr(t, "unregistered family", err, linux.EAFNOSUPPORT)
	_, err = socket.New(c, 1000, linux.SOCK_STREAM, 0)
	wantErr(t, "family out of range", err, linux.EAFNOSUPPORT)
	_, err = socket.New(c, linux.AF_UNIX, 0, 0)
	wantErr(t, "type 0", err, linux.ESOCKTNOSUPPORT)
	_, err = socket.New(c, linux.AF_UNIX, 11, 0)
	wantErr(t, "type 11", err, linux.EINVAL)
	_, err = socket.New(c, linux.AF_UNIX, linux.SOCK_RDM, 0)
	wantErr(t, "SOCK_RDM", err, linux.ESOCKTNOSUPPORT)
	_, err = socket.New(c, linux.AF_UNIX, linux.SOCK_STREAM, 6)
	wantErr(t, "protocol 6", err, linux.EPROTONOSUPPORT)
	s, err := socket.New(c, linux.AF_UNIX, linux.SOCK_RAW, 0)
	if err != nil || s.Type() != linux.SOCK_DGRAM {
		t.Errorf("SOCK_RAW: %v, type %v; want a datagram socket", err, s)
	}
}

func TestPairStream(t *testing.T) {
	c := setup(t)
	a, b, err := socket.Pair(c, linux.AF_UNIX, linux.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r := b.Readiness(); r&linux.POLLIN != 0 || r&linux.POLLOUT == 0 {
		t.Errorf("fresh pair readiness %#x: want writable, not readable", r)
	}
	if n, err := a.Write(nb, []byte("hello"), 0); n != 5 || err != nil {
		t.Fatalf("write: %d %v", n, err)
	}
	if r := b.Readiness(); r&linux.POLLIN == 0 {
		t.Errorf("readiness after write %#x: want POLLIN", r)
	}
	if in, _, _ := b.Queued(); in != 5 {
		t.Errorf("SIOCINQ = %d, want 5", in)
	}
	buf := make([]byte, 3)
	m := socket.RecvMsg{Buf: buf, Flags: linux.MSG_PEEK}
	if n, err := b.RecvMsg(c, nb, &m); n != 3 || string(buf) != "hel" || err != nil {
		t.Errorf("peek: %d %q %v", n, buf, err)
	}
	big := make([]byte, 10)
	if n, _ := b.Read(nb, big, 0); string(big[:n]) != "hello" {
		t.Errorf("read after peek: %q", big[:n])
	}
	if _, err := b.Read(nb, big, 0); !errors.Is(err, linux.EAGAIN) {
		t.Errorf("empty non-blocking read: %v, want EAGAIN", err)
	}
	a.Shutdown(linux.SHUT_WR)
	if r := b.Readiness(); r&(linux.POLLIN|linux.POLLRDHUP) != linux.POLLIN|linux.POLLRDHUP || r&linux.POLLHUP != 0 {
		t.Errorf("readiness after peer SHUT_WR %#x: want POLLIN|POLLRDHUP, no POLLHUP", r)
	}
	if n, err := b.Read(nb, big, 0); n != 0 || err != nil {
		t.Errorf("read after SHUT_WR: %d %v, want end of file", n, err)
	}
	if _, err := a.Write(nb, []byte("x"), 0); !errors.Is(err, linux.EPIPE) {
		t.Errorf("write after SHUT_WR: %v, want EPIPE", err)
	}
	a.Release()
	if r := b.Readiness(); r&linux.POLLHUP == 0 {
		t.Errorf("readiness after peer close %#x: want POLLHUP", r)
	}
	if _, err := b.Write(nb, []byte("x"), 0); !errors.Is(err, linux.EPIPE) {
		t.Errorf("write to closed peer: %v, want EPIPE", err)
	}
}

// TestBackPressure: a blocked writer waits while the reader is slow and
// wakes as it drains; every byte arrives in order.
func TestBackPressure(t *testing.T) {
	c := setup(t)
	a, b, _ := socket.Pair(c, linux.AF_UNIX, linux.SOCK_STREAM, 0)
	const total = 4 << 20
	src := make([]byte, total)
	for i := range src {
		src[i] = byte(i * 7)
	}
	// Non-blocking first: the buffer fills and says EAGAIN.
	n, err := a.Write(nb, src, 0)
	if err != nil || n <= 0 || n >= total {
		t.Fatalf("non-blocking big write: %d %v, want a partial count", n, err)
	}
	if _, err := a.Write(nb, src, 0); !errors.Is(err, linux.EAGAIN) {
		t.Errorf("write to a full socket: %v, want EAGAIN", err)
	}
	if a.Readiness()&linux.POLLOUT != 0 {
		t.Error("full socket reports POLLOUT")
	}
	done := make(chan error, 1)
	go func() {
		k, err := a.Write(socket.Blocking{}, src[n:], 0)
		if err == nil && k != total-n {
			err = errors.New("short blocking write")
		}
		done <- err
	}()
	got := make([]byte, 0, total)
	buf := make([]byte, 10000)
	for len(got) < total {
		k, err := b.Read(socket.Blocking{}, buf, 0)
		if err != nil || k == 0 {
			t.Fatalf("read: %d %v after %d bytes", k, err, len(got))
		}
		got = append(got, buf[:k]...)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Error("data differs")
	}
	if _, out, _ := a.Queued(); out != 0 {
		t.Errorf("SIOCOUTQ after drain = %d", out)
	}
}

func TestBindConnectAccept(t *testing.T) {
	c := setup(t)
	l := mustSock(t, c, linux.SOCK_STREAM)
	wantErr(t, "listen unbound", l.Listen(c, 5), linux.EINVAL)
	if err := l.Bind(c, pathAddr("/srv.sock")); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "bind twice", l.Bind(c, pathAddr("/other.sock")), linux.EINVAL)
	wantErr(t, "bind twice to its own path", l.Bind(c, pathAddr("/srv.sock")), linux.EADDRINUSE)
	a, err := testVFS.Stat(c, nil, "/srv.sock", 0)
	if err != nil || a.Type() != linux.S_IFSOCK {
		t.Errorf("socket node: %v %o", err, a.Mode)
	}
	l2 := mustSock(t, c, linux.SOCK_STREAM)
	wantErr(t, "bind existing path", l2.Bind(c, pathAddr("/srv.sock")), linux.EADDRINUSE)
	cl := mustSock(t, c, linux.SOCK_STREAM)
	wantErr(t, "connect before listen", cl.Connect(c, pathAddr("/srv.sock"), nb), linux.ECONNREFUSED)
	wantErr(t, "connect to missing path", cl.Connect(c, pathAddr("/nope.sock"), nb), linux.ENOENT)
	if err := l.Listen(c, 1); err != nil {
		t.Fatal(err)
	}
	if l.Readiness()&linux.POLLIN != 0 {
		t.Error("listener readable with nothing pending")
	}
	_, err = l.Accept(c, nb)
	wantErr(t, "accept with nothing pending", err, linux.EAGAIN)
	if err := cl.Connect(c, pathAddr("/srv.sock"), nb); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "connect twice", cl.Connect(c, pathAddr("/srv.sock"), nb), linux.EISCONN)
	if l.Readiness()&linux.POLLIN == 0 {
		t.Error("listener not readable with a connection pending")
	}
	dg := mustSock(t, c, linux.SOCK_DGRAM)
	wantErr(t, "dgram connect to stream listener", dg.Connect(c, pathAddr("/srv.sock"), nb), linux.EPROTOTYPE)
	cl.Write(nb, []byte("early"), 0) // before accept
	srv, err := l.Accept(c, nb)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, _ := srv.Read(nb, buf, 0); string(buf[:n]) != "early" {
		t.Errorf("accepted socket read %q", buf[:n])
	}
	if got := srv.Name(); string(got) != string(pathAddr("/srv.sock\x00")) {
		t.Errorf("accepted getsockname %q", got)
	}
	if p, err := cl.Peer(); err != nil || string(p) != string(pathAddr("/srv.sock\x00")) {
		t.Errorf("client getpeername %q %v", p, err)
	}
	if p, err := srv.Peer(); err != nil || len(p) != 2 {
		t.Errorf("server getpeername of an unnamed client %q %v", p, err)
	}
	// The backlog: 1 allows two pending connections (Linux's > test).
	for i := range 2 {
		if err := mustSock(t, c, linux.SOCK_STREAM).Connect(c, pathAddr("/srv.sock"), nb); err != nil {
			t.Fatalf("pending connect %d: %v", i, err)
		}
	}
	wantErr(t, "connect over the backlog", mustSock(t, c, linux.SOCK_STREAM).Connect(c, pathAddr("/srv.sock"), nb), linux.EAGAIN)
	// Closing the listener resets the pending clients and frees the name
	// for lookups (the node stays until unlinked).
	l.Release()
	wantErr(t, "connect after listener closed", mustSock(t, c, linux.SOCK_STREAM).Connect(c, pathAddr("/srv.sock"), nb), linux.ECONNREFUSED)
	if err := testVFS.Unlink(c, nil, "/srv.sock"); err != nil {
		t.Fatal(err)
	}
	if err := mustSock(t, c, linux.SOCK_STREAM).Bind(c, pathAddr("/srv.sock")); err != nil {
		t.Errorf("bind after unlink: %v", err)
	}
}

func TestAbstractAndAutobind(t *testing.T) {
	c := setup(t)
	s := mustSock(t, c, linux.SOCK_DGRAM)
	name := []byte("\x00abstract-test")
	if err := s.Bind(c, append([]byte{1, 0}, name...)); err != nil {
		t.Fatal(err)
	}
	if got := s.Name(); !bytes.Equal(got[2:], name) {
		t.Errorf("getsockname %q", got)
	}
	wantErr(t, "abstract in use", mustSock(t, c, linux.SOCK_DGRAM).Bind(c, append([]byte{1, 0}, name...)), linux.EADDRINUSE)
	a := mustSock(t, c, linux.SOCK_DGRAM)
	if err := a.Bind(c, []byte{1, 0}); err != nil {
		t.Fatal(err)
	}
	got := a.Name()
	if len(got) != 8 || got[2] != 0 {
		t.Errorf("autobind name %q, want NUL and five hex digits", got)
	}
	wantErr(t, "bind with the wrong family", mustSock(t, c, linux.SOCK_DGRAM).Bind(c, []byte{2, 0, 'x'}), linux.EINVAL)
	wantErr(t, "bind too short", mustSock(t, c, linux.SOCK_DGRAM).Bind(c, []byte{1}), linux.EINVAL)
	// Datagrams to the abstract name carry the sender's name.
	if n, err := a.SendMsg(c, nb, &socket.SendMsg{To: append([]byte{1, 0}, name...), Data: []byte("ping")}); n != 4 || err != nil {
		t.Fatalf("sendto: %d %v", n, err)
	}
	m := socket.RecvMsg{Buf: make([]byte, 2)}
	n, err := s.RecvMsg(c, nb, &m)
	if n != 2 || err != nil || m.MsgFlags&linux.MSG_TRUNC == 0 || !bytes.Equal(m.From, got) {
		t.Errorf("recvfrom: %d %v flags %#x from %q", n, err, m.MsgFlags, m.From)
	}
	s.Release()
	_, err = a.SendMsg(c, nb, &socket.SendMsg{To: append([]byte{1, 0}, name...), Data: []byte("x")})
	wantErr(t, "sendto a closed name", err, linux.ECONNREFUSED)
}

// TestDgramQueueLimit: an unconnected sender blocks once ten datagrams
// wait; a connected pair is limited by the send buffer only.
func TestDgramQueueLimit(t *testing.T) {
	c := setup(t)
	r := mustSock(t, c, linux.SOCK_DGRAM)
	r.Bind(c, append([]byte{1, 0}, "\x00qlimit"...))
	w := mustSock(t, c, linux.SOCK_DGRAM)
	w.Connect(c, append([]byte{1, 0}, "\x00qlimit"...), nb)
	for i := range maxDgramQlen + 1 {
		if _, err := w.Write(nb, []byte{byte(i)}, 0); err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
	}
	if _, err := w.Write(nb, []byte{1}, 0); !errors.Is(err, linux.EAGAIN) {
		t.Errorf("datagram over the queue limit: %v, want EAGAIN", err)
	}
	if w.Readiness()&linux.POLLOUT != 0 {
		t.Error("sender to a full queue reports POLLOUT")
	}
	third := mustSock(t, c, linux.SOCK_DGRAM)
	r.Connect(c, third.(*sock).autoName(t), nb)
	_, err := w.Write(nb, []byte{1}, 0)
	wantErr(t, "send to a socket connected elsewhere", err, linux.EPERM)
	_, err = w.SendMsg(c, nb, &socket.SendMsg{Data: make([]byte, socket.DefaultBuf)})
	wantErr(t, "datagram over the send buffer", err, linux.EMSGSIZE)
	r.Release()
	w.Release()
	third.Release()
}

func (s *sock) autoName(t *testing.T) []byte {
	if err := s.Bind(testCtx, []byte{1, 0}); err != nil {
		t.Fatal(err)
	}
	return s.Name()
}

// fakeFile counts releases, to show descriptors in flight are released
// exactly once whether they are received or dropped.
type fakeFile struct{ released *int }

func (fakeFile) Read(vfs.Blocking, []byte, int64) (int, error)  { return 0, nil }
func (fakeFile) Write(vfs.Blocking, []byte, int64) (int, error) { return 0, nil }
func (f fakeFile) Release()                                     { *f.released++ }

func TestRightsNotLeaked(t *testing.T) {
	c := setup(t)
	released := 0
	newFile := func() *vfs.OpenFile {
		return vfs.NewFile(vfs.NewAnonInode(0o600, vfs.Owner{}), fakeFile{&released}, linux.O_RDWR)
	}
	for _, typ := range []int{linux.SOCK_STREAM, linux.SOCK_DGRAM, linux.SOCK_SEQPACKET} {
		released = 0
		a, b, _ := socket.Pair(c, linux.AF_UNIX, typ, 0)
		// Received: the receiver gets the reference.
		f := newFile()
		if _, err := a.SendMsg(c, nb, &socket.SendMsg{Data: []byte("x"), Control: socket.Control{Files: []*vfs.OpenFile{f}}}); err != nil {
			t.Fatal(err)
		}
		m := socket.RecvMsg{Buf: make([]byte, 8)}
		if _, err := b.RecvMsg(c, nb, &m); err != nil || len(m.Control.Files) != 1 || m.Control.Files[0] != f {
			t.Fatalf("type %d: received %v %v", typ, m.Control.Files, err)
		}
		m.Control.Release()
		// Dropped unread with the socket.
		for range 3 {
			a.SendMsg(c, nb, &socket.SendMsg{Data: []byte("y"), Control: socket.Control{Files: []*vfs.OpenFile{newFile()}}})
		}
		if released != 1 {
			t.Errorf("type %d: %d released before close, want 1", typ, released)
		}
		b.Release()
		if released != 4 {
			t.Errorf("type %d: %d released after close, want 4", typ, released)
		}
		a.Release()
	}
}

func TestPeerCredAndPassCred(t *testing.T) {
	c := setup(t)
	a, b, _ := socket.Pair(c, linux.AF_UNIX, linux.SOCK_SEQPACKET, 0)
	v, err := socket.GetOption(c, a, linux.SOL_SOCKET, linux.SO_PEERCRED)
	if err != nil || len(v) != 12 || v[0] != 7 {
		t.Errorf("SO_PEERCRED %v %v, want pid 7", v, err)
	}
	one := []byte{1, 0, 0, 0}
	if err := socket.SetOption(c, b, linux.SOL_SOCKET, linux.SO_PASSCRED, one); err != nil {
		t.Fatal(err)
	}
	a.SendMsg(c, nb, &socket.SendMsg{Data: []byte("c"), Sender: socket.Cred{PID: 7, UID: 1, GID: 2}})
	m := socket.RecvMsg{Buf: make([]byte, 4)}
	b.RecvMsg(c, nb, &m)
	if m.Control.Cred == nil || *m.Control.Cred != (socket.Cred{PID: 7, UID: 1, GID: 2}) {
		t.Errorf("SCM_CREDENTIALS %+v", m.Control.Cred)
	}
	v, _ = socket.GetOption(c, a, linux.SOL_SOCKET, linux.SO_TYPE)
	if v[0] != linux.SOCK_SEQPACKET {
		t.Errorf("SO_TYPE %v", v)
	}
	socket.SetOption(c, a, linux.SOL_SOCKET, linux.SO_SNDBUF, []byte{0, 0x10, 0, 0})
	if v, _ := socket.GetOption(c, a, linux.SOL_SOCKET, linux.SO_SNDBUF); v[1] != 0x20 {
		t.Errorf("SO_SNDBUF after setting 4096: %v, want doubled", v)
	}
	_, err = socket.GetOption(c, a, 6, 1)
	wantErr(t, "option at another level", err, linux.EOPNOTSUPP)
}

func TestTimeoutAndInterrupt(t *testing.T) {
	c := setup(t)
	a, _, _ := socket.Pair(c, linux.AF_UNIX, linux.SOCK_STREAM, 0)
	tv := make([]byte, 16)
	tv[8] = 0x50
	tv[9] = 0xc3 // 50000 us
	if err := socket.SetOption(c, a, linux.SOL_SOCKET, linux.SO_RCVTIMEO, tv); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := a.Read(socket.Blocking{}, make([]byte, 1), 0)
	if !errors.Is(err, linux.EAGAIN) || time.Since(start) < 50*time.Millisecond {
		t.Errorf("read with SO_RCVTIMEO: %v after %v", err, time.Since(start))
	}
	intr := make(chan struct{})
	close(intr)
	_, err = a.Read(socket.Blocking{Intr: intr}, make([]byte, 1), 0)
	var e linux.Errno
	if !errors.As(err, &e) || e != linux.EINTR || errors.Is(err, linux.EINTR) {
		t.Errorf("interrupted read with a timeout: %v, want EINTR that is not restarted", err)
	}
	socket.SetOption(c, a, linux.SOL_SOCKET, linux.SO_RCVTIMEO, make([]byte, 16))
	_, err = a.Read(socket.Blocking{Intr: intr}, make([]byte, 1), 0)
	wantErr(t, "interrupted read without a timeout", err, linux.EINTR)
}

// TestCycleCollected: two sockets sent to each other and then closed
// hold each other only through their queues; closing them must still
// release them and every file queued with them. A cycle some process can
// still reach stays.
func TestCycleCollected(t *testing.T) {
	c := setup(t)
	released := 0
	fake := vfs.NewFile(vfs.NewAnonInode(0o600, vfs.Owner{}), fakeFile{&released}, linux.O_RDWR)
	a, b, _ := socket.Pair(c, linux.AF_UNIX, linux.SOCK_STREAM, 0)
	fa, fb := socket.NewFile(a, 0, vfs.Owner{}), socket.NewFile(b, 0, vfs.Owner{})
	send := func(s socket.Socket, files ...*vfs.OpenFile) {
		for _, f := range files {
			f.IncRef() // what sendmsg's descriptor lookup takes
		}
		if _, err := s.SendMsg(c, nb, &socket.SendMsg{Data: []byte("x"), Control: socket.Control{Files: files}}); err != nil {
			t.Fatal(err)
		}
	}
	send(a, fa, fake) // a and the fake file wait in b's queue
	send(b, fb)       // b waits in a's queue
	fake.DecRef()
	fa.DecRef() // the process closes a: b's queue still holds it
	if released != 0 || a.(*sock).dead {
		t.Fatal("released while a process still holds b")
	}
	fb.DecRef() // now only the cycle holds them
	// As on Linux, the collector runs when some AF_UNIX socket closes.
	mustSock(t, c, linux.SOCK_DGRAM).Release()
	if released != 1 || !a.(*sock).dead || !b.(*sock).dead {
		t.Errorf("cycle not collected: fake released %d, a dead %v, b dead %v", released, a.(*sock).dead, b.(*sock).dead)
	}
	if anyInflight() {
		t.Error("sockets still counted in flight")
	}

	// A socket sent over itself to a live peer is received normally.
	x, y, _ := socket.Pair(c, linux.AF_UNIX, linux.SOCK_DGRAM, 0)
	fx, fy := socket.NewFile(x, 0, vfs.Owner{}), socket.NewFile(y, 0, vfs.Owner{})
	send(x, fx)
	fx.DecRef()
	if x.(*sock).dead {
		t.Fatal("collected a socket a live queue holds")
	}
	m := socket.RecvMsg{Buf: make([]byte, 4)}
	if _, err := y.RecvMsg(c, nb, &m); err != nil || len(m.Control.Files) != 1 || m.Control.Files[0] != fx {
		t.Fatalf("receive own socket: %v %v", m.Control.Files, err)
	}
	m.Control.Release()
	if !x.(*sock).dead {
		t.Error("received socket not closed after its last reference")
	}
	fy.DecRef()
	if anyInflight() {
		t.Error("in-flight count left over")
	}
}

// TestConcurrentConnections: goroutines connect, exchange a byte and
// close while others accept and echo; every exchange completes and the
// name table holds nothing but the listener's name afterwards.
func TestConcurrentConnections(t *testing.T) {
	c := setup(t)
	l := mustSock(t, c, linux.SOCK_STREAM)
	name := append([]byte{1, 0}, "\x00concurrent"...)
	if err := l.Bind(c, name); err != nil {
		t.Fatal(err)
	}
	l.Listen(c, 16)
	const clients, each = 8, 100
	var wg sync.WaitGroup
	errs := make(chan error, clients*each)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				s := mustSock(t, c, linux.SOCK_STREAM)
				if err := s.Connect(c, name, socket.Blocking{}); err != nil {
					errs <- err
					return
				}
				s.Write(socket.Blocking{}, []byte{byte(i)}, 0)
				b := make([]byte, 1)
				if n, err := s.Read(socket.Blocking{}, b, 0); n != 1 || b[0] != byte(i)+1 {
					errs <- errors.Join(err, errors.New("bad echo"))
				}
				s.Release()
			}
		}()
	}
	stop := make(chan struct{})
	var servers sync.WaitGroup
	for range 2 {
		servers.Add(1)
		go func() {
			defer servers.Done()
			for {
				n, err := l.Accept(c, socket.Blocking{Intr: stop})
				if err != nil {
					return
				}
				go func() {
					b := make([]byte, 1)
					if k, _ := n.Read(socket.Blocking{}, b, 0); k == 1 {
						b[0]++
						n.Write(socket.Blocking{}, b, 0)
					}
					n.Read(socket.Blocking{}, b, 0) // end of file
					n.Release()
				}()
			}
		}()
	}
	wg.Wait()
	close(stop)
	servers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	l.Release()
	namesMu.Lock()
	defer namesMu.Unlock()
	if _, ok := abstract["\x00concurrent"]; ok {
		t.Error("listener's name left in the table")
	}
}

// TestDgramRoomWakesOtherSenders: a sender blocked on a receiver's full
// queue wakes when the receiver reads, even when the datagram read was
// someone else's.
func TestDgramRoomWakesOtherSenders(t *testing.T) {
	c := setup(t)
	r := mustSock(t, c, linux.SOCK_DGRAM)
	name := append([]byte{1, 0}, "\x00room"...)
	r.Bind(c, name)
	a, b := mustSock(t, c, linux.SOCK_DGRAM), mustSock(t, c, linux.SOCK_DGRAM)
	a.Connect(c, name, nb)
	b.Connect(c, name, nb)
	for range maxDgramQlen + 1 {
		if _, err := a.Write(nb, []byte("a"), 0); err != nil {
			t.Fatal(err)
		}
	}
	ch := make(chan struct{}, 1)
	defer b.Watch(vfs.WakeChan(ch))()
	done := make(chan error, 1)
	go func() {
		_, err := b.Write(socket.Blocking{}, []byte("b"), 0)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	if b.Readiness()&linux.POLLOUT != 0 {
		t.Error("sender to a full queue reports POLLOUT")
	}
	select { // forget earlier signals
	case <-ch:
	default:
	}
	r.Read(nb, make([]byte, 1), 0) // one of a's datagrams
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("blocked sender not woken by the reader")
	}
	select {
	case <-ch:
	default:
		t.Error("watcher of the sender not signalled when room was made")
	}
	r.Release()
	a.Release()
	b.Release()
}

// A unix socket declares vfs.ExactReader, so read(2), recvfrom(2) and
// recvmsg(2) hand it a lent buffer without clearing it: a receive must
// write the bytes it reports, from the buffer's start, and no more — a
// stream read across two sends, and a datagram cut to the buffer.
func TestReceiveWritesWhatItReports(t *testing.T) {
	var _ vfs.ExactReader = (*sock)(nil)
	c := setup(t)
	for _, typ := range []int{linux.SOCK_STREAM, linux.SOCK_DGRAM, linux.SOCK_SEQPACKET} {
		a, b, err := socket.Pair(c, linux.AF_UNIX, typ, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, data := range []string{"abc", "defghij"} {
			if n, err := a.Write(nb, []byte(data), 0); n != len(data) || err != nil {
				t.Fatalf("type %d: write %q: %d %v", typ, data, n, err)
			}
		}
		want := []string{"abcdefghij"}
		if typ != linux.SOCK_STREAM {
			want = []string{"abc", "defg"} // a buffer of 4 cuts the second
		}
		for _, w := range want {
			buf := make([]byte, 64)
			for i := range buf {
				buf[i] = 0xee
			}
			size := 64
			if typ != linux.SOCK_STREAM {
				size = 4
			}
			n, err := b.Read(nb, buf[:size], 0)
			if err != nil || string(buf[:n]) != w {
				t.Fatalf("type %d: read %d %q %v, want %q", typ, n, buf[:n], err, w)
			}
			for i, x := range buf[n:] {
				if x != 0xee {
					t.Fatalf("type %d: byte %d past the %d read written: %#x", typ, n+i, n, x)
				}
			}
		}
		a.Release()
		b.Release()
	}
}

// A message read whole becomes its receiver's spare record, with its
// small buffer, so that a request and its answer allocate nothing; the
// reuse keeps every message's bytes, boundaries and descriptors its own:
// a peeked or partly read message is not reused, a message larger than
// the spare's buffer gets its own, and a record that carried descriptors
// carries none when reused.
func TestRecycledMessages(t *testing.T) {
	c := setup(t)
	released := 0
	for _, typ := range []int{linux.SOCK_STREAM, linux.SOCK_DGRAM, linux.SOCK_SEQPACKET} {
		a, b, err := socket.Pair(c, linux.AF_UNIX, typ, 0)
		if err != nil {
			t.Fatal(err)
		}
		msg := make([]byte, 40)
		buf := make([]byte, 2048)
		echo := func(from, to socket.Socket) {
			if n, err := from.Write(nb, msg, 0); n != len(msg) || err != nil {
				t.Fatalf("type %d: write %d %v", typ, n, err)
			}
			if n, err := to.Read(nb, buf, 0); n != len(msg) || err != nil {
				t.Fatalf("type %d: read %d %v", typ, n, err)
			}
		}
		allocs := testing.AllocsPerRun(500, func() { echo(a, b); echo(b, a) })
		if allocs != 0 && !raceEnabled {
			t.Errorf("type %d: %v allocations a round trip, want 0", typ, allocs)
		}

		send := func(s string) {
			t.Helper()
			if n, err := a.Write(nb, []byte(s), 0); n != len(s) || err != nil {
				t.Fatalf("type %d: write %q: %d %v", typ, s, n, err)
			}
		}
		recv := func(size, flags int, want string) {
			t.Helper()
			m := socket.RecvMsg{Buf: buf[:size], Flags: flags}
			n, err := b.RecvMsg(c, nb, &m)
			if err != nil || string(buf[:n]) != want || len(m.Control.Files) != 0 {
				t.Fatalf("type %d: recv %d %q %v (%d files), want %q", typ, n, buf[:n], err, len(m.Control.Files), want)
			}
		}
		send("first")
		recv(64, linux.MSG_PEEK, "first")
		send("second") // must not reuse the peeked record
		big := string(bytes.Repeat([]byte("x"), 700))
		send(big) // larger than a spare's buffer
		if typ == linux.SOCK_STREAM {
			recv(3, 0, "fir")
			send("third") // the partly read record stays queued
			recv(2048, 0, "st"+"second"+big+"third")
		} else {
			recv(64, 0, "first")
			recv(64, 0, "second")
			recv(2048, 0, big)
		}
		// Descriptors travel with their own message only.
		f := vfs.NewFile(vfs.NewAnonInode(0o600, vfs.Owner{}), fakeFile{&released}, linux.O_RDWR)
		if _, err := a.SendMsg(c, nb, &socket.SendMsg{Data: []byte("fd"), Control: socket.Control{Files: []*vfs.OpenFile{f}}}); err != nil {
			t.Fatal(err)
		}
		m := socket.RecvMsg{Buf: buf[:64]}
		if n, err := b.RecvMsg(c, nb, &m); err != nil || string(buf[:n]) != "fd" || len(m.Control.Files) != 1 || m.Control.Files[0] != f {
			t.Fatalf("type %d: with a descriptor: %q %v %v", typ, buf[:n], m.Control.Files, err)
		}
		m.Control.Release()
		send("after")
		recv(64, 0, "after")
		a.Release()
		b.Release()
	}
	if released != 3 {
		t.Errorf("%d descriptors released, want 3", released)
	}
}
