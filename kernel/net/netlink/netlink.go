// Package netlink is AF_NETLINK: the socket that carries requests from a
// program to the kernel and the kernel's replies back as datagrams of
// netlink messages, and the framing every netlink protocol shares
// (headers, attributes, acknowledgements, errors, multipart dumps). The
// protocols register here; NETLINK_ROUTE is kernel/net/rtnetlink.
//
// Requests are handled inside sendmsg, as Linux does for its kernel-side
// sockets, and a dump is generated whole into the socket's receive
// queue: the tables it walks are small (interfaces, addresses, routes).
package netlink

import (
	"encoding/binary"
	"errors"
	"sync"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/net/socket"
	"shortbread/kernel/vfs"
)

// Protocol numbers (linux/netlink.h).
const (
	Route = 0 // NETLINK_ROUTE
	// maxLinks bounds protocol numbers (MAX_LINKS).
	maxLinks = 32
)

// SOL_NETLINK options.
const (
	solNetlink        = 270
	optAddMembership  = 1
	optDropMembership = 2
	optPktInfo        = 3
	optNoENOBUFS      = 5
	optListenAll      = 8
	optCapAck         = 10
	optExtAck         = 11
	optStrictCheck    = 12
)

// AddrLen is sizeof(struct sockaddr_nl): family, padding, port ID and
// multicast groups.
const AddrLen = 12

// Handler answers one request of a protocol, writing its replies to w.
// An error becomes an NLMSG_ERROR carrying its errno; for a dump, a nil
// error is followed by NLMSG_DONE, and for another request with
// NLM_F_ACK by an acknowledgement.
type Handler func(c *vfs.Ctx, req Request, w *Writer) error

var (
	protosMu sync.RWMutex
	protos   = map[int]Handler{}
)

// RegisterProtocol makes socket(AF_NETLINK, _, proto) available,
// answered by h.
func RegisterProtocol(proto int, h Handler) {
	protosMu.Lock()
	protos[proto] = h
	protosMu.Unlock()
}

// Register makes AF_NETLINK available to socket(2).
func Register() {
	socket.Register(linux.AF_NETLINK, &socket.Family{New: newSocket})
}

// ports are the bound port IDs of every netlink socket (Linux keeps one
// table per protocol; one for all is stricter and enough here).
var (
	portsMu  sync.Mutex
	ports    = map[uint32]*sock{}
	nextAuto = int32(-4096) // Linux's rover for sockets whose pid is taken
)

// sock is one netlink socket.
type sock struct {
	typ, proto int
	handler    Handler
	opts       socket.Options
	q          vfs.Queue

	mu      sync.Mutex
	portID  uint32   // protected by mu; 0 until bound
	groups  uint32   // protected by mu; multicast groups 1..32 joined
	rx      [][]byte // protected by mu; datagrams waiting to be read
	rxBytes int      // protected by mu
	err     error    // protected by mu; reported once by the next recv (ENOBUFS)
	flags   map[int]bool
}

func newSocket(c *vfs.Ctx, typ, proto int) (socket.Socket, error) {
	if typ != linux.SOCK_RAW && typ != linux.SOCK_DGRAM {
		return nil, linux.ESOCKTNOSUPPORT
	}
	if proto < 0 || proto >= maxLinks {
		return nil, linux.EPROTONOSUPPORT
	}
	protosMu.RLock()
	h := protos[proto]
	protosMu.RUnlock()
	if h == nil {
		return nil, linux.EPROTONOSUPPORT
	}
	return &sock{typ: typ, proto: proto, handler: h, opts: socket.InitOptions(), flags: map[int]bool{}}, nil
}

func (s *sock) Family() int                { return linux.AF_NETLINK }
func (s *sock) Type() int                  { return s.typ }
func (s *sock) Protocol() int              { return s.proto }
func (s *sock) Options() *socket.Options   { return &s.opts }
func (s *sock) Watch(wake vfs.Wake) func() { return s.q.Watch(wake) }

// AsyncIO: O_ASYNC signals readiness changes (vfs.AsyncIO).
func (*sock) AsyncIO() {}

func (s *sock) Readiness() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := uint32(linux.POLLOUT | linux.POLLWRNORM)
	if len(s.rx) > 0 {
		r |= linux.POLLIN | linux.POLLRDNORM
	}
	if s.err != nil {
		r |= linux.POLLERR
	}
	return r
}

func (s *sock) Release() {
	s.mu.Lock()
	id := s.portID
	s.rx, s.rxBytes = nil, 0
	s.mu.Unlock()
	if id != 0 {
		portsMu.Lock()
		if ports[id] == s {
			delete(ports, id)
		}
		portsMu.Unlock()
	}
}

// decodeAddr reads a sockaddr_nl: EINVAL when short or of another
// family.
func decodeAddr(b []byte) (port, groups uint32, err error) {
	if len(b) < AddrLen || binary.LittleEndian.Uint16(b) != linux.AF_NETLINK {
		return 0, 0, linux.EINVAL
	}
	return binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[8:]), nil
}

func encodeAddr(port, groups uint32) []byte {
	b := make([]byte, AddrLen)
	binary.LittleEndian.PutUint16(b, linux.AF_NETLINK)
	binary.LittleEndian.PutUint32(b[4:], port)
	binary.LittleEndian.PutUint32(b[8:], groups)
	return b
}

// bind gives s port ID want, or picks one when want is 0: the caller's
// process ID if free, else a negative number from a rover, as
// netlink_autobind does. Binding again to another ID is EINVAL.
func (s *sock) bind(c *vfs.Ctx, want uint32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.portID != 0 {
		if want != 0 && want != s.portID {
			return linux.EINVAL
		}
		return nil
	}
	portsMu.Lock()
	defer portsMu.Unlock()
	if want != 0 {
		if ports[want] != nil {
			return linux.EADDRINUSE
		}
	} else {
		if c != nil && c.PID > 0 && ports[uint32(c.PID)] == nil {
			want = uint32(c.PID)
		}
		for want == 0 {
			if ports[uint32(nextAuto)] == nil {
				want = uint32(nextAuto)
			}
			nextAuto--
			if nextAuto >= -4096 || nextAuto == 0 {
				nextAuto = -4097
			}
		}
	}
	ports[want] = s
	s.portID = want
	return nil
}

func (s *sock) Bind(c *vfs.Ctx, addr []byte) error {
	port, groups, err := decodeAddr(addr)
	if err != nil {
		return err
	}
	// rtnetlink's groups may be joined by anyone (NL_CFG_F_NONROOT_RECV).
	if err := s.bind(c, port); err != nil {
		return err
	}
	s.mu.Lock()
	s.groups = groups
	s.mu.Unlock()
	return nil
}

func (s *sock) Listen(*vfs.Ctx, int) error { return linux.EOPNOTSUPP }

func (s *sock) Accept(*vfs.Ctx, socket.Blocking) (socket.Socket, error) {
	return nil, linux.EOPNOTSUPP
}

// Connect sets the default destination; only the kernel (port 0) can be
// talked to, so it just checks the address and binds.
func (s *sock) Connect(c *vfs.Ctx, addr []byte, _ socket.Blocking) error {
	if len(addr) >= 2 && binary.LittleEndian.Uint16(addr) == linux.AF_UNSPEC {
		return nil
	}
	if _, _, err := decodeAddr(addr); err != nil {
		return err
	}
	return s.bind(c, 0)
}

func (s *sock) Shutdown(int) error { return linux.EOPNOTSUPP }

func (s *sock) Name() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return encodeAddr(s.portID, s.groups)
}

// Peer is always the kernel.
func (s *sock) Peer() ([]byte, error) { return encodeAddr(0, 0), nil }

func (s *sock) Read(b vfs.Blocking, p []byte, _ int64) (int, error) {
	m := socket.RecvMsg{Buf: p}
	return s.RecvMsg(nil, b, &m)
}

func (s *sock) Write(b vfs.Blocking, p []byte, _ int64) (int, error) {
	return s.SendMsg(nil, b, &socket.SendMsg{Data: p})
}

// SendMsg handles every request in the buffer, in order, queueing the
// replies. A message addressed to another socket's port, or to
// multicast groups (root only: rtnetlink lets no one else send to its
// groups), is delivered to those sockets as it is.
func (s *sock) SendMsg(c *vfs.Ctx, _ socket.Blocking, m *socket.SendMsg) (int, error) {
	if len(m.Control.Files) > 0 {
		return 0, linux.EINVAL
	}
	var to, groups uint32
	if m.To != nil {
		var err error
		if to, groups, err = decodeAddr(m.To); err != nil {
			return 0, err
		}
		if groups != 0 && (c == nil || !c.Cred.Superuser()) {
			return 0, linux.EPERM
		}
	}
	if err := s.bind(c, 0); err != nil {
		return 0, err
	}
	if to != 0 || groups != 0 {
		return len(m.Data), s.deliver(to, groups, m.Data)
	}
	s.mu.Lock()
	port := s.portID
	s.mu.Unlock()
	for _, req := range Split(m.Data) {
		if req.Flags&FlagRequest == 0 || req.Type < MinType {
			continue // Linux ignores these (netlink_rcv_skb)
		}
		w := &Writer{port: port, seq: req.Seq, dump: req.Flags&FlagDump != 0 && isGet(req.Type)}
		err := s.handler(c, req, w)
		switch {
		case err != nil:
			w.discard()
			w.out = append(w.out, errorMsg(req, port, -int32(errnoOf(err))))
		case w.dump:
			// Linux's dump sends NLMSG_DONE in a datagram of its own
			// unless the dump was empty (netlink_dump).
			w.end()
			done := encode(Header{Type: MsgDone, Flags: FlagMulti, Seq: req.Seq, PortID: port}, make([]byte, 4))
			w.add(done)
		case req.Flags&FlagAck != 0:
			w.add(errorMsg(req, port, 0))
		}
		w.end()
		if !s.enqueue(w.out) {
			return 0, linux.ENOBUFS
		}
	}
	return len(m.Data), nil
}

// isGet reports whether a type is a GET request (rtnetlink's types come
// in fours: NEW, DEL, GET, SET), the only ones NLM_F_DUMP applies to.
func isGet(t uint16) bool { return t >= MinType && t&3 == 2 }

// errnoOf is the errno an error from a handler stands for (handlers
// return linux.Errno values; anything else is a bad request).
func errnoOf(err error) linux.Errno {
	var e linux.Errno
	if errors.As(err, &e) {
		return e
	}
	return linux.EINVAL
}

// deliver sends a datagram from user space to the socket bound to port
// to (ECONNREFUSED when there is none) and to every other socket of the
// protocol that joined one of groups.
func (s *sock) deliver(to, groups uint32, d []byte) error {
	d = append([]byte(nil), d...)
	var dst []*sock
	portsMu.Lock()
	if to != 0 {
		t := ports[to]
		if t == nil || t.proto != s.proto {
			portsMu.Unlock()
			return linux.ECONNREFUSED
		}
		dst = append(dst, t)
	}
	portsMu.Unlock()
	if groups != 0 {
		dst = append(dst, members(s.proto, groups, s)...)
	}
	for _, t := range dst {
		t.enqueue([][]byte{d}) // a full receiver loses it, as on Linux
	}
	return nil
}

// members returns the sockets of proto that joined any of groups, but
// not except.
func members(proto int, groups uint32, except *sock) []*sock {
	// The sockets are collected first: bind holds a socket's lock while
	// it takes portsMu, so portsMu must not be held while a socket's is
	// taken.
	portsMu.Lock()
	var all []*sock
	for _, t := range ports {
		if t != except && t.proto == proto {
			all = append(all, t)
		}
	}
	portsMu.Unlock()
	var out []*sock
	for _, t := range all {
		t.mu.Lock()
		g := t.groups
		t.mu.Unlock()
		if g&groups != 0 {
			out = append(out, t)
		}
	}
	return out
}

// Notify sends a kernel event (a message built by build, of type typ)
// to every socket of proto that joined group (1..32), as rtnetlink
// announces new and removed addresses and routes.
func Notify(proto int, group uint, typ uint16, build func(m *Builder)) {
	if group == 0 || group > 32 {
		return
	}
	var m Builder
	build(&m)
	msg := encode(Header{Type: typ}, m.b)
	for _, t := range members(proto, 1<<(group-1), nil) {
		t.enqueue([][]byte{msg})
	}
}

// Deliver queues a datagram from the kernel on the netlink socket
// behind f (mq_notify's SIGEV_THREAD cookies); EBADF for another kind of
// file. A full receiver loses it, as on Linux.
func Deliver(f *vfs.OpenFile, d []byte) error {
	s, ok := f.Impl().(*sock)
	if !ok {
		return linux.EBADF
	}
	s.enqueue([][]byte{append([]byte(nil), d...)})
	return nil
}

// rxLimit bounds what waits in a socket's receive queue: its receive
// buffer, at least what one dump of a small machine takes.
func (s *sock) rxLimit() int {
	_, rcv, _, _ := s.opts.Buffers()
	return max(rcv, 1<<16)
}

// enqueue adds datagrams to the receive queue, all or none: the whole
// answer to a request is refused when it does not fit, and the sender
// gets ENOBUFS (Linux would make the dump wait for the reader; our
// dumps are generated whole).
func (s *sock) enqueue(dgrams [][]byte) bool {
	n := 0
	for _, d := range dgrams {
		n += len(d)
	}
	s.mu.Lock()
	if s.rxBytes+n > s.rxLimit() && s.rxBytes > 0 {
		s.mu.Unlock()
		return false
	}
	s.rx = append(s.rx, dgrams...)
	s.rxBytes += n
	s.mu.Unlock()
	s.q.Notify()
	return true
}

// RecvMsg takes one datagram (or looks at it with MSG_PEEK); a buffer
// shorter than it gets its start and MSG_TRUNC, and the rest is dropped.
func (s *sock) RecvMsg(c *vfs.Ctx, b socket.Blocking, m *socket.RecvMsg) (int, error) {
	rcv, _ := s.opts.Timeouts()
	var d []byte
	err := socket.Wait(b, rcv, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.rx) == 0 {
			return false
		}
		d = s.rx[0]
		if m.Flags&linux.MSG_PEEK == 0 {
			s.rx[0] = nil
			s.rx = s.rx[1:]
			s.rxBytes -= len(d)
		}
		return true
	}, &s.q)
	if err != nil {
		return 0, err
	}
	m.N = copy(m.Buf, d)
	m.From = encodeAddr(0, 0)
	if m.N < len(d) {
		m.MsgFlags |= linux.MSG_TRUNC
	}
	if m.Flags&linux.MSG_TRUNC != 0 {
		return len(d), nil
	}
	return m.N, nil
}

func (s *sock) GetOption(c *vfs.Ctx, level, name int) ([]byte, error) {
	if level != solNetlink {
		return nil, linux.ENOPROTOOPT
	}
	switch name {
	case optPktInfo, optNoENOBUFS, optListenAll, optCapAck, optExtAck, optStrictCheck:
		s.mu.Lock()
		defer s.mu.Unlock()
		v := uint32(0)
		if s.flags[name] {
			v = 1
		}
		return binary.LittleEndian.AppendUint32(nil, v), nil
	}
	return nil, linux.ENOPROTOOPT
}

func (s *sock) SetOption(c *vfs.Ctx, level, name int, val []byte) error {
	if level != solNetlink {
		return linux.ENOPROTOOPT
	}
	if len(val) < 4 {
		return linux.EINVAL
	}
	v := binary.LittleEndian.Uint32(val)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch name {
	case optAddMembership, optDropMembership:
		if v == 0 || v > 32 { // groups above 32 exist on Linux; none here
			return linux.EINVAL
		}
		if name == optAddMembership {
			s.groups |= 1 << (v - 1)
		} else {
			s.groups &^= 1 << (v - 1)
		}
	case optPktInfo, optNoENOBUFS, optListenAll, optCapAck, optExtAck, optStrictCheck:
		s.flags[name] = v != 0
	default:
		return linux.ENOPROTOOPT
	}
	return nil
}

func (s *sock) Queued() (in, out int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.rx) > 0 {
		in = len(s.rx[0])
	}
	return in, 0, nil
}

// goodSize is how much of a dump one datagram carries: Linux fills
// socket buffers of NLMSG_GOODSIZE (a page less its overhead), and
// programs size their receive buffers to match.
const goodSize = 4096 - 320

// Writer collects one request's replies into datagrams.
type Writer struct {
	port uint32
	seq  uint32
	dump bool

	out [][]byte // finished datagrams
	cur []byte   // the datagram being filled
}

// Dump reports whether the request is a dump (replies are NLM_F_MULTI
// parts ended by NLMSG_DONE).
func (w *Writer) Dump() bool { return w.dump }

// Message adds a reply of type typ with the payload build writes.
func (w *Writer) Message(typ uint16, build func(m *Builder)) {
	var m Builder
	build(&m)
	var flags uint16
	if w.dump {
		flags = FlagMulti
	}
	w.add(encode(Header{Type: typ, Flags: flags, Seq: w.seq, PortID: w.port}, m.b))
}

func (w *Writer) add(msg []byte) {
	if len(w.cur) > 0 && len(w.cur)+len(msg) > goodSize {
		w.end()
	}
	w.cur = append(w.cur, msg...)
	if !w.dump {
		w.end() // each reply to a plain request is its own datagram
	}
}

func (w *Writer) end() {
	if len(w.cur) > 0 {
		w.out = append(w.out, w.cur)
		w.cur = nil
	}
}

// discard drops what a failed request had written: Linux sends only the
// error.
func (w *Writer) discard() { w.out, w.cur = nil, nil }
