// Package unix is the AF_UNIX socket family: SOCK_STREAM, SOCK_DGRAM and
// SOCK_SEQPACKET sockets within one machine, named by file-system paths
// (socket nodes made through the VFS), by abstract names, or not at all;
// descriptor and credential passing. The behaviour and errno values follow
// Linux's net/unix.
//
// Where things are: unix.go (the socket, its life and options), names.go
// (addresses, bind, the name tables), conn.go (listen, connect, accept,
// shutdown), io.go (sending, receiving, readiness).
//
// # Data flow and locking
//
// A sent message goes into the receiver's queue: the connected peer's
// for stream and seqpacket sockets, the destination's for datagrams. Each
// message is charged to its sender (wmem) until it is read or thrown
// away; a sender waits while its charge is at its send buffer size, and
// is notified when a reader drains, which is the back-pressure.
//
// Each socket has one mutex and one vfs.Queue, notified on every change
// of what it may report. Only connect holds two locks at once: the
// connecting socket's, then the listener's (a listening socket never
// connects). Everything else takes one lock at a time, and releases file
// references (of descriptors in flight) with no lock held, since dropping
// the last reference to a passed socket closes that socket.
package unix

import (
	"shortbread/kernel/iobuf"
	"sync"
	"sync/atomic"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/net/socket"
	"shortbread/kernel/vfs"
)

// Socket states.
const (
	unconnected = iota
	listening
	connected
)

// Shutdown bits (RCV_SHUTDOWN, SEND_SHUTDOWN).
const (
	rcvShut  = 1
	sndShut  = 2
	bothShut = rcvShut | sndShut
)

// maxDgramQlen is net.unix.max_dgram_qlen: a socket's queue is full for
// senders it is not connected back to once it holds more datagrams than
// this (one more than the number, as Linux compares).
const maxDgramQlen = 10

// msgOverhead is what each queued message costs its sender beyond its
// bytes, standing for Linux's per-buffer bookkeeping so that many small
// messages fill a buffer too.
const msgOverhead = 256

type sock struct {
	typ  int
	opts socket.Options
	q    vfs.Queue // notified on every change of state, queue or buffer use
	// roomQ is notified when a datagram leaves the receive queue (or the
	// socket closes): senders not connected back to this socket wait on
	// it for room, as Linux's peer_wait, without waking this socket's
	// own watchers.
	roomQ vfs.Queue
	vfs   func() *vfs.VFS

	// wmem is the charge of this socket's messages still queued at a
	// receiver; changed without mu by whoever queues or drains them.
	wmem atomic.Int64

	// spare is a message record read whole from this socket's queue,
	// kept for the next message sent to it (recycle): a request and its
	// answer, one message in flight each way, allocate no record.
	spare atomic.Pointer[msg]

	mu       sync.Mutex
	state    int         // protected by mu
	addr     *address    // bound name; nil when unbound; protected by mu
	peer     *sock       // connected peer or default destination; protected by mu
	peerCred socket.Cred // SO_PEERCRED; protected by mu
	hasCred  bool        // peerCred is set; protected by mu
	rq       []*msg      // receive queue; protected by mu
	shut     int         // rcvShut, sndShut; protected by mu
	err      linux.Errno // pending error (SO_ERROR); protected by mu
	dead     bool        // released; protected by mu

	backlog int     // listen backlog; protected by mu
	pending []*sock // connections not yet accepted; protected by mu

	socket.FileIno // the file's inode number, for /proc/net/unix
}

// msg is one message in a receive queue: a datagram, a seqpacket record
// or a piece of a stream.
type msg struct {
	data   []byte
	buf    *[]byte // data's buffer from package iobuf, until release
	off    int     // stream: bytes already read
	ctl    socket.Control
	cred   socket.Cred // the sender's, for SCM_CREDENTIALS
	from   *address    // the sender's name when it was sent
	sender *sock
	charge int64
}

// spareBuf is the largest buffer a spare record keeps (the smallest of
// package iobuf's): enough for the requests and answers of a key-value
// store, while a bulk transfer's buffers go back to their pools.
const spareBuf = 512

// recycle takes a message read whole off s's hands: it becomes s's
// spare record, keeping its buffer when that is small, unless s has one
// already. Nothing refers to the message any more: it left the queue,
// its descriptors were handed over and its charge given back.
func (s *sock) recycle(m *msg) {
	buf := m.buf
	if buf != nil && cap(*buf) > spareBuf {
		iobuf.Put(buf)
		buf = nil
	}
	*m = msg{buf: buf} // hold no sender, name or files
	if !s.spare.CompareAndSwap(nil, m) && buf != nil {
		iobuf.Put(buf)
	}
}

// uncharge gives the message's charge back to its sender and wakes it.
func (m *msg) uncharge() {
	if m.charge != 0 {
		m.sender.wmem.Add(-m.charge)
		m.charge = 0
		m.sender.q.Notify()
	}
}

// drop throws an unread message away: its charge and its descriptors.
// Preconditions: no socket lock is held.
func (m *msg) drop() {
	m.uncharge()
	countInflight(m.ctl.Files, -1)
	m.ctl.Release()
}

// Register makes AF_UNIX available to socket(2) and socketpair(2); fs
// returns the VFS path names are made in and looked up.
func Register(fs func() *vfs.VFS) {
	socket.Register(linux.AF_UNIX, &socket.Family{
		New: func(c *vfs.Ctx, typ, protocol int) (socket.Socket, error) {
			return newSock(fs, typ, protocol)
		},
		Pair: func(c *vfs.Ctx, typ, protocol int) (socket.Socket, socket.Socket, error) {
			return pair(c, fs, typ, protocol)
		},
	})
}

// newSock makes an unconnected socket, with unix_create's checks: a
// protocol other than 0 or PF_UNIX is EPROTONOSUPPORT, SOCK_RAW means
// SOCK_DGRAM, other types are ESOCKTNOSUPPORT.
func newSock(fs func() *vfs.VFS, typ, protocol int) (*sock, error) {
	if protocol != 0 && protocol != linux.AF_UNIX {
		return nil, linux.EPROTONOSUPPORT
	}
	switch typ {
	case linux.SOCK_STREAM, linux.SOCK_DGRAM, linux.SOCK_SEQPACKET:
	case linux.SOCK_RAW:
		typ = linux.SOCK_DGRAM
	default:
		return nil, linux.ESOCKTNOSUPPORT
	}
	s := &sock{typ: typ, opts: socket.InitOptions(), vfs: fs}
	track(s)
	return s, nil
}

// pair makes two sockets connected to each other (socketpair), each
// with the caller's credentials as its peer's.
func pair(c *vfs.Ctx, fs func() *vfs.VFS, typ, protocol int) (socket.Socket, socket.Socket, error) {
	a, err := newSock(fs, typ, protocol)
	if err != nil {
		return nil, nil, err
	}
	b, _ := newSock(fs, typ, protocol)
	cred := socket.CredOf(c)
	a.peer, b.peer = b, a
	a.state, b.state = connected, connected
	a.peerCred, b.peerCred = cred, cred
	a.hasCred, b.hasCred = true, true
	return a, b, nil
}

func (s *sock) Family() int              { return linux.AF_UNIX }
func (s *sock) Type() int                { return s.typ }
func (s *sock) Protocol() int            { return 0 }
func (s *sock) Options() *socket.Options { return &s.opts }
func (s *sock) connOriented() bool       { return s.typ != linux.SOCK_DGRAM }

// Watch watches the socket and, for a datagram socket connected to
// another, the room in that one's queue (its POLLOUT depends on it).
func (s *sock) Watch(wake vfs.Wake) func() {
	cancel := s.q.Watch(wake)
	s.mu.Lock()
	peer := s.peer
	s.mu.Unlock()
	if s.typ != linux.SOCK_DGRAM || peer == nil || peer == s {
		return cancel
	}
	c2 := peer.roomQ.Watch(wake)
	return func() { cancel(); c2() }
}

// WatchQueues names the queues Watch registers on (vfs.QueueWatcher).
func (s *sock) WatchQueues() (*vfs.Queue, *vfs.Queue) {
	s.mu.Lock()
	peer := s.peer
	s.mu.Unlock()
	if s.typ != linux.SOCK_DGRAM || peer == nil || peer == s {
		return &s.q, nil
	}
	return &s.q, &peer.roomQ
}

// Release closes the socket when its last descriptor goes: its name is
// freed, unread messages (and the descriptors in them) are dropped,
// connections not yet accepted are closed, and a connected peer sees end
// of file, with ECONNRESET when data was left unread.
func (s *sock) Release() { s.release(false) }

// release closes the socket; embryo is true for a connection that was
// never accepted, whose client then sees ECONNRESET.
func (s *sock) release(embryo bool) {
	untrack(s)
	if m := s.spare.Swap(nil); m != nil && m.buf != nil {
		iobuf.Put(m.buf)
	}
	s.mu.Lock()
	s.dead = true
	rq, pending, peer, addr := s.rq, s.pending, s.peer, s.addr
	s.rq, s.pending = nil, nil
	s.shut = bothShut
	if s.typ == linux.SOCK_DGRAM {
		s.peer = nil
	}
	s.mu.Unlock()
	s.q.Notify()
	s.roomQ.Notify()
	if addr != nil {
		unbind(addr, s)
	}
	if peer != nil && s.connOriented() {
		peer.mu.Lock()
		peer.shut = bothShut
		if len(rq) > 0 || embryo {
			peer.err = linux.ECONNRESET
		}
		peer.mu.Unlock()
		peer.q.Notify()
	}
	for _, m := range rq {
		m.drop()
	}
	for _, n := range pending {
		n.release(true)
	}
	if anyInflight() {
		collect()
	}
}

// GetOption answers the SOL_SOCKET options that depend on the socket's
// state; AF_UNIX has no options at other levels.
func (s *sock) GetOption(c *vfs.Ctx, level, name int) ([]byte, error) {
	if level != linux.SOL_SOCKET {
		return nil, linux.EOPNOTSUPP
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch name {
	case linux.SO_ERROR:
		e := s.err
		s.err = 0
		return putInt(int(e)), nil
	case linux.SO_ACCEPTCONN:
		if s.state == listening {
			return putInt(1), nil
		}
		return putInt(0), nil
	case linux.SO_PEERCRED:
		cr := socket.Cred{UID: ^uint32(0), GID: ^uint32(0)}
		if s.hasCred {
			cr = s.peerCred
		}
		b := make([]byte, 12)
		putU32(b, uint32(cr.PID))
		putU32(b[4:], cr.UID)
		putU32(b[8:], cr.GID)
		return b, nil
	}
	return nil, linux.ENOPROTOOPT
}

// SetOption: every settable SOL_SOCKET option is common (socket.Options).
func (s *sock) SetOption(c *vfs.Ctx, level, name int, val []byte) error {
	if level != linux.SOL_SOCKET {
		return linux.EOPNOTSUPP
	}
	return linux.ENOPROTOOPT
}

func putU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

func putInt(v int) []byte {
	b := make([]byte, 4)
	putU32(b, uint32(int32(v)))
	return b
}

// Queued returns the bytes readable (the whole queue for stream and
// seqpacket sockets, the next datagram's for datagram ones, as
// unix_inq_len counts; EINVAL for a listening socket) and the bytes this
// socket has sent that are not read yet.
func (s *sock) Queued() (in, out int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == listening {
		return 0, 0, linux.EINVAL
	}
	if s.typ == linux.SOCK_DGRAM {
		if len(s.rq) > 0 {
			in = len(s.rq[0].data)
		}
	} else {
		for _, m := range s.rq {
			in += len(m.data) - m.off
		}
	}
	return in, int(s.wmem.Load()), nil
}
