// Package inet is AF_INET and AF_INET6: TCP and UDP sockets as thin
// files over gVisor's netstack endpoints on the kernel's loopback
// interface. Netstack's waiter events are forwarded to the socket's
// vfs.Queue so poll, select, epoll and blocking calls see exactly what
// the endpoint reports.
package inet

import (
	"bytes"
	"encoding/binary"
	"io"
	"sync"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
	"gvisor.dev/gvisor/pkg/waiter"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/kmem"
	"shortbread/kernel/net/socket"
	"shortbread/kernel/vfs"
)

// Protocol numbers and option levels (netinet/in.h).
const (
	ipprotoIP     = 0
	ipprotoICMP   = 1
	ipprotoTCP    = 6
	ipprotoUDP    = 17
	ipprotoIPv6   = 41
	ipprotoICMPv6 = 58

	tcpNodelay = 1
	tcpCork    = 3
	tcpInfo    = 11
	ipv6V6only = 26
)

// Register makes AF_INET and AF_INET6 available. The stack itself is
// built on first use (the kernel builds it once every CPU is up: netstack
// starts one TCP processor goroutine per GOMAXPROCS).
func Register() {
	for _, fam := range []int{linux.AF_INET, linux.AF_INET6} {
		fam := fam
		socket.Register(fam, &socket.Family{
			New: func(c *vfs.Ctx, typ, protocol int) (socket.Socket, error) {
				s, err := newSocket(fam, typ, protocol, c.Cred.EUID == 0)
				if err != nil {
					return nil, err
				}
				s.uid = c.Cred.EUID
				return s, nil
			},
		})
	}
}

// sock is one AF_INET or AF_INET6 socket.
type sock struct {
	family, typ, proto int
	opts               socket.Options

	ep tcpip.Endpoint
	// stream is ep as a streamReader, for a stream socket whose endpoint
	// is one (TCP, with netstack-patches/tcp-x-read-stream-endpoint.diff).
	stream streamReader
	wq     *waiter.Queue
	// entry forwards every netstack event to q, where poll, epoll and
	// socket.Wait watch.
	entry waiter.Entry
	q     vfs.Queue

	mu        sync.Mutex
	listening bool // protected by mu

	// The io.Writer netstack copies received bytes into and the
	// io.Reader it takes sent bytes from live here, one of each per
	// socket, instead of escaping to the heap at every call: rmu and
	// wmu serialize the calls into netstack that use them (netstack's
	// TCP serializes them as well), never a wait.
	rmu sync.Mutex
	rw  bufWriter // protected by rmu
	wmu sync.Mutex
	wr  bytes.Reader // protected by wmu

	socket.FileIno // the file's inode number, for /proc/net/tcp

	uid uint32 // the creator's effective user ID, for /proc/net/tcp

	// rx6 holds which IPv6 receive messages were asked for (rx6Info,
	// ...): RFC 3542's and RFC 2292's options are separate on Linux,
	// each with its own message type, while netstack has one flag for
	// both.
	rx6 atomic.Uint32
	// tstamp is SO_TIMESTAMP's or SO_TIMESTAMPNS's setting (tstampOff..).
	tstamp atomic.Uint32
}

func netProto(family int) tcpip.NetworkProtocolNumber {
	if family == linux.AF_INET6 {
		return ipv6.ProtocolNumber
	}
	return ipv4.ProtocolNumber
}

// newSocket makes an endpoint of the stack for socket(2); privileged
// stands for CAP_NET_RAW, which raw sockets need.
func newSocket(family, typ, protocol int, privileged bool) (*sock, error) {
	var tp tcpip.TransportProtocolNumber
	switch typ {
	case linux.SOCK_RAW:
		return newRawSocket(family, protocol, privileged)
	case linux.SOCK_STREAM:
		if protocol != 0 && protocol != ipprotoTCP {
			return nil, linux.EPROTONOSUPPORT
		}
		tp, protocol = tcp.ProtocolNumber, ipprotoTCP
	case linux.SOCK_DGRAM:
		if protocol == icmpProto(family) {
			// A ping socket: Linux allows them to the groups in
			// net.ipv4.ping_group_range, which is "1 0", no group,
			// unless changed; nothing here changes it.
			return nil, linux.EACCES
		}
		if protocol != 0 && protocol != ipprotoUDP {
			return nil, linux.EPROTONOSUPPORT
		}
		tp, protocol = udp.ProtocolNumber, ipprotoUDP
	default:
		return nil, linux.ESOCKTNOSUPPORT
	}
	wq := new(waiter.Queue)
	ep, err := Stack().NewEndpoint(tp, netProto(family), wq)
	if err != nil {
		return nil, errno(err)
	}
	return wrap(family, typ, protocol, ep, wq), nil
}

func wrap(family, typ, protocol int, ep tcpip.Endpoint, wq *waiter.Queue) *sock {
	s := &sock{family: family, typ: typ, proto: protocol, opts: socket.InitOptions(), ep: ep, wq: wq}
	if typ == linux.SOCK_STREAM {
		s.opts = socket.InitOptionsBuf(tcpDefaultSndBuf, tcpDefaultRcvBuf)
		s.stream, _ = ep.(streamReader)
	}
	// Linux's sockets start with SO_REUSEADDR off but netstack's TCP
	// keeps a bound port busy after close only as Linux does with
	// TIME_WAIT; nothing to change here.
	s.entry = waiter.NewFunctionEntry(waiter.AllEvents|waiter.EventErr|waiter.EventHUp, func(waiter.EventMask) { s.q.Notify() })
	wq.EventRegister(&s.entry)
	track(s)
	return s
}

func (s *sock) Family() int                { return s.family }
func (s *sock) Type() int                  { return s.typ }
func (s *sock) Protocol() int              { return s.proto }
func (s *sock) Options() *socket.Options   { return &s.opts }
func (s *sock) Watch(wake vfs.Wake) func() { return s.q.Watch(wake) }

// WatchQueues names the queue Watch registers on (vfs.QueueWatcher).
func (s *sock) WatchQueues() (*vfs.Queue, *vfs.Queue) { return &s.q, nil }

// Readiness reports the endpoint's events; netstack's masks are Linux's
// poll bits, with the *NORM bits added as Linux's tcp_poll sets them.
// AsyncIO: O_ASYNC signals readiness changes (vfs.AsyncIO).
func (*sock) AsyncIO() {}

func (s *sock) Readiness() uint32 {
	m := uint32(s.ep.Readiness(waiter.EventIn | waiter.EventOut | waiter.EventErr | waiter.EventHUp | waiter.EventRdHUp))
	if m&linux.POLLIN != 0 {
		m |= linux.POLLRDNORM
	}
	if m&linux.POLLOUT != 0 {
		m |= linux.POLLWRNORM
	}
	return m
}

func (s *sock) Release() {
	untrack(s)
	s.syncOptions()
	s.wq.EventUnregister(&s.entry)
	s.ep.Close()
	s.q.Notify()
}

// decode turns a sockaddr into a netstack address for this socket's
// family, checking its length and family as Linux's inet_bind and
// inet6_bind do. An AF_INET6 socket may take an AF_INET address only
// when connecting or sending (Linux's v4-mapped form is the way).
func (s *sock) decode(addr []byte) (tcpip.FullAddress, error) {
	if len(addr) < 2 {
		return tcpip.FullAddress{}, linux.EINVAL
	}
	fam := int(binary.LittleEndian.Uint16(addr))
	if s.family == linux.AF_INET {
		if len(addr) < 16 {
			return tcpip.FullAddress{}, linux.EINVAL
		}
		if fam != linux.AF_INET {
			return tcpip.FullAddress{}, linux.EAFNOSUPPORT
		}
		a := tcpip.FullAddress{Port: binary.BigEndian.Uint16(addr[2:])}
		ip := [4]byte(addr[4:8])
		if ip != [4]byte{} {
			a.Addr = tcpip.AddrFrom4(ip)
		}
		return a, nil
	}
	// SIN6_LEN_RFC2133: the scope id is optional.
	if len(addr) < 24 {
		return tcpip.FullAddress{}, linux.EINVAL
	}
	if fam != linux.AF_INET6 {
		return tcpip.FullAddress{}, linux.EAFNOSUPPORT
	}
	a := tcpip.FullAddress{Port: binary.BigEndian.Uint16(addr[2:])}
	ip := [16]byte(addr[8:24])
	if ip != [16]byte{} {
		a.Addr = tcpip.AddrFrom16(ip)
	}
	return a, nil
}

// encode is the sockaddr of a: sockaddr_in (16 bytes) or sockaddr_in6
// (28 bytes) by the socket's family; an IPv4 address on an AF_INET6
// socket is shown v4-mapped.
func (s *sock) encode(a tcpip.FullAddress) []byte {
	if s.family == linux.AF_INET {
		b := make([]byte, 16)
		binary.LittleEndian.PutUint16(b, linux.AF_INET)
		binary.BigEndian.PutUint16(b[2:], a.Port)
		if a.Addr.Len() == 4 {
			copy(b[4:], a.Addr.AsSlice())
		}
		return b
	}
	b := make([]byte, 28)
	binary.LittleEndian.PutUint16(b, linux.AF_INET6)
	binary.BigEndian.PutUint16(b[2:], a.Port)
	switch a.Addr.Len() {
	case 16:
		copy(b[8:], a.Addr.AsSlice())
	case 4:
		b[18], b[19] = 0xff, 0xff
		copy(b[20:], a.Addr.AsSlice())
	}
	return b
}

func (s *sock) Bind(c *vfs.Ctx, addr []byte) error {
	a, err := s.decode(addr)
	if err != nil {
		return err
	}
	s.syncOptions()
	return errno(s.ep.Bind(a))
}

func (s *sock) Listen(c *vfs.Ctx, backlog int) error {
	if s.typ != linux.SOCK_STREAM {
		return linux.EOPNOTSUPP
	}
	// Linux caps the backlog at somaxconn (4096) and takes a negative
	// one as the cap too.
	if backlog < 0 || backlog > 4096 {
		backlog = 4096
	}
	s.syncOptions()
	// Linux's queues are full only past the backlog (sk_acceptq_is_full
	// compares with >), so they hold one more than it; netstack's hold
	// exactly what it is given, and answers with a SYN cookie (MSS at
	// most 1460, no window scaling) once backlog-1 handshakes are under
	// way: with listen(fd, 1) every connection was made by cookie, and
	// listen(fd, 0) accepted none. gVisor's own listen(2) adds the one.
	if err := s.ep.Listen(backlog + 1); err != nil {
		return errno(err)
	}
	s.mu.Lock()
	s.listening = true
	s.mu.Unlock()
	return nil
}

func (s *sock) Accept(c *vfs.Ctx, b socket.Blocking) (socket.Socket, error) {
	s.mu.Lock()
	l := s.listening
	s.mu.Unlock()
	if !l {
		return nil, linux.EINVAL
	}
	var ns socket.Socket
	var aerr error
	rcv, _ := s.opts.Timeouts()
	err := socket.Wait(b, rcv, func() bool {
		ep, wq, e := s.ep.Accept(nil)
		if _, ok := e.(*tcpip.ErrWouldBlock); ok {
			return false
		}
		if e != nil {
			aerr = errno(e)
			return true
		}
		n := wrap(s.family, s.typ, s.proto, ep, wq)
		s.inherit(n)
		if c != nil {
			n.uid = c.Cred.EUID
		}
		ns = n
		return true
	}, &s.q)
	if err != nil {
		return nil, err
	}
	return ns, aerr
}

// inherit gives a connection accepted from s the options s has, as
// Linux's accepted socket is a copy of its listener: the SOL_SOCKET
// options and TCP_NODELAY and TCP_CORK (netstack's accept carries only
// a few of its own).
func (s *sock) inherit(n *sock) {
	n.opts = s.opts.Clone()
	n.syncOptions()
	so, no := s.ep.SocketOptions(), n.ep.SocketOptions()
	no.SetDelayOption(so.GetDelayOption())
	no.SetCorkOption(so.GetCorkOption())
}

func (s *sock) Connect(c *vfs.Ctx, addr []byte, b socket.Blocking) error {
	if len(addr) >= 2 && binary.LittleEndian.Uint16(addr) == 0 && s.typ != linux.SOCK_STREAM {
		// AF_UNSPEC dissolves a UDP association.
		return errno(s.ep.Disconnect())
	}
	a, err := s.decode(addr)
	if err != nil {
		return err
	}
	s.syncOptions()
	e := s.ep.Connect(a)
	switch e.(type) {
	case *tcpip.ErrConnectStarted:
		if b.NonBlock {
			return linux.EINPROGRESS
		}
	case *tcpip.ErrAlreadyConnecting:
		// A blocking connect restarted after a signal waits for the
		// handshake it started, as Linux's __inet_stream_connect does;
		// only a non-blocking one says EALREADY.
		if b.NonBlock {
			return linux.EALREADY
		}
	default:
		return errno(e)
	}
	// Netstack reports a finished handshake's outcome to the next
	// Connect on the endpoint (success once, then EISCONN), as Linux
	// does to a program that polls a non-blocking connect and connects
	// again; until then that call says it is still connecting.
	_, snd := s.opts.Timeouts()
	var res tcpip.Error
	if err := socket.Wait(b, snd, func() bool {
		res = s.ep.Connect(a)
		_, pending := res.(*tcpip.ErrAlreadyConnecting)
		return !pending
	}, &s.q); err != nil {
		if err == linux.EAGAIN {
			return linux.EINPROGRESS
		}
		return err
	}
	return errno(res)
}

func (s *sock) Shutdown(how int) error {
	var f tcpip.ShutdownFlags
	switch how {
	case linux.SHUT_RD:
		f = tcpip.ShutdownRead
	case linux.SHUT_WR:
		f = tcpip.ShutdownWrite
	case linux.SHUT_RDWR:
		f = tcpip.ShutdownRead | tcpip.ShutdownWrite
	default:
		return linux.EINVAL
	}
	err := errno(s.ep.Shutdown(f))
	s.q.Notify()
	return err
}

func (s *sock) Name() []byte {
	a, _ := s.ep.GetLocalAddress()
	return s.encode(a)
}

func (s *sock) Peer() ([]byte, error) {
	a, err := s.ep.GetRemoteAddress()
	if err != nil {
		return nil, linux.ENOTCONN
	}
	return s.encode(a), nil
}

// ReadsExactly implements vfs.ExactReader: a receive reports the bytes
// netstack copied into the buffer (bufWriter), from its start, and no
// more (a truncated datagram fills the buffer). read(2), recvfrom(2)
// and recvmsg(2) then hand their lent buffer out without clearing it
// first: redis reads into 16 KiB for a request of a few dozen bytes.
func (s *sock) ReadsExactly() {}

func (s *sock) Read(b vfs.Blocking, p []byte, _ int64) (int, error) {
	m := socket.RecvMsg{Buf: p}
	return s.RecvMsg(nil, b, &m)
}

func (s *sock) Write(b vfs.Blocking, p []byte, _ int64) (int, error) {
	return s.SendMsg(nil, b, &socket.SendMsg{Data: p})
}

// SendMsg writes as much as fits, waiting for room as b allows; a TCP
// send returns once all of it is queued (or with the count so far when
// interrupted), as Linux's tcp_sendmsg does.
func (s *sock) SendMsg(c *vfs.Ctx, b socket.Blocking, m *socket.SendMsg) (int, error) {
	if len(m.Control.Files) > 0 {
		return 0, linux.EINVAL
	}
	var opts tcpip.WriteOptions
	if m.To != nil && s.typ != linux.SOCK_STREAM {
		a, err := s.decode(m.To)
		if err != nil {
			return 0, err
		}
		opts.To = &a
	}
	opts.More = m.Flags&linux.MSG_MORE != 0
	_, snd := s.opts.Timeouts()
	done := 0
	for {
		if kmem.Refuse() { // no kernel memory for the data: Linux's ENOBUFS
			if done > 0 {
				return done, nil
			}
			return 0, linux.ENOBUFS
		}
		s.wmu.Lock()
		s.wr.Reset(m.Data[done:])
		n, e := s.ep.Write(&s.wr, opts)
		s.wr.Reset(nil)
		s.wmu.Unlock()
		if n > 0 && s.typ == linux.SOCK_RAW {
			countICMPOut(s.family, m.Data[done])
		}
		done += int(n)
		if e == nil && (s.typ != linux.SOCK_STREAM || done == len(m.Data)) {
			return done, nil
		}
		if e != nil {
			if _, ok := e.(*tcpip.ErrWouldBlock); !ok {
				if done > 0 {
					return done, nil
				}
				return 0, errno(e)
			}
		}
		err := socket.WaitTried(b, snd, func() bool {
			return s.ep.Readiness(waiter.EventOut|waiter.EventErr|waiter.EventHUp) != 0
		}, &s.q)
		if err != nil {
			if done > 0 {
				return done, nil
			}
			return 0, err
		}
	}
}

// RecvMsg reads what is there, waiting for data as b allows (and for
// all of Buf with MSG_WAITALL on TCP).
func (s *sock) RecvMsg(c *vfs.Ctx, b socket.Blocking, m *socket.RecvMsg) (int, error) {
	rcv, _ := s.opts.Timeouts()
	peek := m.Flags&linux.MSG_PEEK != 0
	waitAll := m.Flags&linux.MSG_WAITALL != 0 && s.typ == linux.SOCK_STREAM && !peek
	for {
		s.rmu.Lock()
		s.rw = bufWriter{buf: m.Buf[m.N:]}
		var count, total int
		var e tcpip.Error
		if s.stream != nil {
			count, e = s.stream.ReadStream(&s.rw, peek)
		} else {
			count, total, e = s.read(m, peek)
		}
		s.rw = bufWriter{} // the caller's buffer is not kept
		s.rmu.Unlock()
		switch e.(type) {
		case nil:
			m.N += count
			if s.typ != linux.SOCK_STREAM {
				if m.Flags&linux.MSG_TRUNC != 0 {
					return total, nil
				}
				return m.N, nil
			}
			if !waitAll || m.N == len(m.Buf) || count == 0 {
				return m.N, nil
			}
			continue
		case *tcpip.ErrClosedForReceive:
			return m.N, nil
		case *tcpip.ErrWouldBlock:
		default:
			if m.N > 0 {
				return m.N, nil
			}
			if _, ok := e.(*tcpip.ErrNotConnected); ok && s.typ == linux.SOCK_STREAM {
				return 0, linux.ENOTCONN
			}
			return 0, errno(e)
		}
		err := socket.WaitTried(b, rcv, func() bool {
			return s.ep.Readiness(waiter.EventIn|waiter.EventErr|waiter.EventHUp|waiter.EventRdHUp) != 0
		}, &s.q)
		if err != nil {
			if m.N > 0 {
				return m.N, nil
			}
			return 0, err
		}
	}
}

// read reads into s.rw through tcpip.Endpoint.Read (s.rmu held): the
// count, and for a datagram its size, with m's sender, control messages
// and truncation flag filled in. Apart from RecvMsg, so that a stream
// read through s.stream does not zero a tcpip.ReadResult.
func (s *sock) read(m *socket.RecvMsg, peek bool) (count, total int, e tcpip.Error) {
	res, e := s.ep.Read(&s.rw, tcpip.ReadOptions{Peek: peek, NeedRemoteAddr: s.typ != linux.SOCK_STREAM})
	if e == nil && s.typ != linux.SOCK_STREAM {
		m.From = s.encode(res.RemoteAddr)
		m.Control.Proto = recvControl(&res.ControlMessages, s.rx6.Load(), s.tstamp.Load())
		if res.Total > res.Count {
			m.MsgFlags |= linux.MSG_TRUNC
		}
	}
	return res.Count, res.Total, e
}

// streamReader is a stream endpoint that reads without a
// tcpip.ReadResult: a large struct (its control messages) that Read
// zeroes and copies out at each call, of which a stream uses only the
// count.
type streamReader interface {
	ReadStream(dst io.Writer, peek bool) (int, tcpip.Error)
}

// bufWriter is the io.Writer netstack copies received bytes into: it
// takes what fits in buf, and netstack keeps the rest for the next read
// (TCP) or drops it (UDP, reported as truncation).
type bufWriter struct {
	buf []byte
	n   int
}

func (w *bufWriter) Write(p []byte) (int, error) {
	n := copy(w.buf[w.n:], p)
	w.n += n
	if n < len(p) {
		// Tells netstack the rest was not taken.
		return n, io.ErrShortWrite
	}
	return n, nil
}

// Queued answers SIOCINQ and SIOCOUTQ and /proc/net's rx_queue and
// tx_queue: for TCP the bytes readable and the bytes written but not yet
// acknowledged (netstack-patches/tcp-y-send-queue-endpoint.diff), EINVAL
// while listening; UDP endpoints keep no send queue (netstack sends a
// datagram on the writer's goroutine), so theirs is 0.
func (s *sock) Queued() (in, out int, err error) {
	i, e := s.ep.GetSockOptInt(tcpip.ReceiveQueueSizeOption)
	if e != nil {
		return 0, 0, errno(e)
	}
	o, e := s.ep.GetSockOptInt(tcpip.SendQueueSizeOption)
	if e != nil {
		o = 0
	}
	return i, o, nil
}
