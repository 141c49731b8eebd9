package unix

import (
	"shortbread/kernel/abi/linux"
	"shortbread/kernel/iobuf"
	"shortbread/kernel/kmem"
	"shortbread/kernel/net/socket"
	"shortbread/kernel/vfs"
)

// maxChunk bounds the piece of a stream write queued as one message, so
// that a large write moves as the reader drains.
const maxChunk = 64 << 10

// ReadsExactly implements vfs.ExactReader: a receive writes the bytes it
// reports (m.N, which read(2), recvfrom(2) and recvmsg(2) copy out),
// from the buffer's start, and no more.
func (*sock) ReadsExactly() {}

// Read is recv with no flags, for read(2) and readv(2).
func (s *sock) Read(b vfs.Blocking, p []byte, _ int64) (int, error) {
	m := socket.RecvMsg{Buf: p}
	n, err := s.RecvMsg(nil, b, &m)
	if err == nil && len(m.Control.Files) > 0 {
		// read(2) has nowhere to put descriptors: they are closed.
		m.Control.Release()
	}
	return n, err
}

// Write is send with no flags, for write(2) and writev(2).
func (s *sock) Write(b vfs.Blocking, p []byte, _ int64) (int, error) {
	return s.SendMsg(nil, b, &socket.SendMsg{Data: p})
}

// SendMsg sends one message (sendmsg(2)). A stream socket may send part
// of it when interrupted or non-blocking; the others send it whole or
// not at all.
func (s *sock) SendMsg(c *vfs.Ctx, b socket.Blocking, m *socket.SendMsg) (int, error) {
	if m.Flags&linux.MSG_OOB != 0 {
		return 0, linux.EOPNOTSUPP
	}
	switch s.typ {
	case linux.SOCK_STREAM:
		return s.sendStream(b, m)
	case linux.SOCK_SEQPACKET:
		s.mu.Lock()
		peer, state := s.peer, s.state
		s.mu.Unlock()
		if state != connected {
			return 0, linux.ENOTCONN
		}
		return s.sendDgram(b, m, peer)
	}
	var t *sock
	if m.To != nil {
		var err error
		if c == nil {
			return 0, linux.EINVAL
		}
		if t, err = s.find(c, m.To); err != nil {
			return 0, err
		}
		if t.typ != s.typ {
			return 0, linux.EPROTOTYPE
		}
	} else {
		s.mu.Lock()
		t = s.peer
		s.mu.Unlock()
		if t == nil {
			return 0, linux.ENOTCONN
		}
	}
	s.mu.Lock()
	if s.addr == nil && s.opts.Flag(linux.SO_PASSCRED) {
		s.autobindLocked()
	}
	s.mu.Unlock()
	return s.sendDgram(b, m, t)
}

// newMsg makes the message for data sent by s to t, with the sender's
// credentials (or those it attached) and name: t's spare record when it
// has one (see recycle), else a new one. The data is copied into the
// spare's own small buffer when it fits, else into a buffer lent by
// package iobuf, given back when the message has been read.
func (s *sock) newMsg(t *sock, data []byte, m *socket.SendMsg) *msg {
	s.mu.Lock()
	from := s.addr
	s.mu.Unlock()
	q := t.spare.Swap(nil)
	var buf *[]byte
	if q != nil {
		buf = q.buf
	} else {
		q = new(msg)
	}
	if buf == nil || cap(*buf) < len(data) {
		if buf != nil {
			iobuf.Put(buf)
		}
		buf = iobuf.Get(len(data))
	}
	*buf = (*buf)[:len(data)]
	copy(*buf, data)
	*q = msg{data: *buf, buf: buf, cred: m.Sender, from: from, sender: s}
	if m.Control.Cred != nil {
		q.cred = *m.Control.Cred
	}
	return q
}

// sendStream queues data at the peer in pieces, each once the sender's
// charge is below its send buffer size.
func (s *sock) sendStream(b socket.Blocking, m *socket.SendMsg) (int, error) {
	s.mu.Lock()
	peer, connectedNow, shut := s.peer, s.state == connected, s.shut
	s.mu.Unlock()
	if m.To != nil {
		if connectedNow {
			return 0, linux.EISCONN
		}
		return 0, linux.EOPNOTSUPP
	}
	if !connectedNow || peer == nil {
		return 0, linux.ENOTCONN
	}
	if shut&sndShut != 0 {
		return 0, linux.EPIPE
	}
	if len(m.Data) == 0 {
		// Nothing is queued for an empty write, not even its control
		// message, as on Linux.
		m.Control.Release()
		return 0, nil
	}
	_, sndTimeo := s.opts.Timeouts()
	sent := 0
	first := true
	for sent < len(m.Data) {
		sndBuf := int64(s.opts.SndBuf())
		var err error
		werr := socket.Wait(b, sndTimeo, func() bool {
			err = s.peerGone(peer)
			return err != nil || s.wmem.Load() < sndBuf
		}, &s.q, &peer.q)
		if werr == nil && err != nil {
			werr = err
		}
		if werr != nil {
			if sent > 0 {
				return sent, nil
			}
			return 0, werr
		}
		if kmem.Refuse() { // no kernel memory for the data: Linux's ENOBUFS
			if sent > 0 {
				return sent, nil
			}
			return 0, linux.ENOBUFS
		}
		room := sndBuf - s.wmem.Load()
		k := min(len(m.Data)-sent, maxChunk, int(max(room, sndBuf/2)))
		q := s.newMsg(peer, m.Data[sent:sent+k], m)
		if first {
			q.ctl = m.Control
		}
		if err := peer.enqueue(q); err != nil {
			if sent > 0 {
				return sent, nil
			}
			return 0, err
		}
		first = false
		sent += k
	}
	return sent, nil
}

// peerGone returns EPIPE when the peer can take no more data.
func (s *sock) peerGone(peer *sock) error {
	s.mu.Lock()
	shut := s.shut
	s.mu.Unlock()
	if shut&sndShut != 0 {
		return linux.EPIPE
	}
	peer.mu.Lock()
	defer peer.mu.Unlock()
	if peer.dead || peer.shut&rcvShut != 0 {
		return linux.EPIPE
	}
	return nil
}

// enqueue adds q to the receive queue, charging its sender: EPIPE when
// the socket is closed or shut for reading.
// popFront removes the first n messages of a receive queue. A queue that
// empties starts again at the front of its array, so a queue drained as
// fast as it fills (the usual case) keeps one array instead of sliding
// off its end and growing a new one every few messages.
func popFront(q []*msg, n int) []*msg {
	clear(q[:n])
	if n == len(q) {
		return q[:0]
	}
	return q[n:]
}

func (t *sock) enqueue(q *msg) error {
	countInflight(q.ctl.Files, 1)
	t.mu.Lock()
	if t.dead || t.shut&rcvShut != 0 {
		t.mu.Unlock()
		countInflight(q.ctl.Files, -1)
		return linux.EPIPE
	}
	q.charge = int64(len(q.data) + msgOverhead)
	q.sender.wmem.Add(q.charge)
	t.rq = append(t.rq, q)
	t.mu.Unlock()
	t.q.Notify()
	return nil
}

// sendDgram queues one datagram or seqpacket record at t, waiting for
// the sender's buffer and, when t is not connected back to the sender,
// for room in t's queue.
func (s *sock) sendDgram(b socket.Blocking, m *socket.SendMsg, t *sock) (int, error) {
	sndBuf := s.opts.SndBuf()
	if len(m.Data) > sndBuf-32 {
		return 0, linux.EMSGSIZE
	}
	_, sndTimeo := s.opts.Timeouts()
	var err error
	werr := socket.Wait(b, sndTimeo, func() bool {
		err = s.dgramBlocked(t)
		if err != nil {
			return true
		}
		if s.wmem.Load() >= int64(sndBuf) {
			return false
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.peer == s || len(t.rq) <= maxDgramQlen
	}, &s.q, &t.q, &t.roomQ)
	if werr != nil {
		return 0, werr
	}
	if err != nil {
		return 0, err
	}
	if kmem.Refuse() {
		return 0, linux.ENOBUFS
	}
	q := s.newMsg(t, m.Data, m)
	q.ctl = m.Control
	if err := t.enqueue(q); err != nil {
		q.ctl = socket.Control{}
		if s.typ == linux.SOCK_DGRAM {
			return 0, linux.ECONNREFUSED
		}
		return 0, err
	}
	return len(m.Data), nil
}

// dgramBlocked returns why s cannot send to t at all: t is closed
// (ECONNREFUSED, and s forgets t as its destination; EPIPE for
// seqpacket), t is connected to another socket (EPERM), or either side
// is shut down (EPIPE).
func (s *sock) dgramBlocked(t *sock) error {
	s.mu.Lock()
	shut := s.shut
	s.mu.Unlock()
	if shut&sndShut != 0 {
		return linux.EPIPE
	}
	t.mu.Lock()
	dead, tpeer, tshut := t.dead, t.peer, t.shut
	t.mu.Unlock()
	if dead {
		if s.typ == linux.SOCK_SEQPACKET {
			return linux.EPIPE
		}
		s.mu.Lock()
		if s.peer == t {
			s.peer = nil
		}
		s.mu.Unlock()
		return linux.ECONNREFUSED
	}
	if s.typ == linux.SOCK_DGRAM && tpeer != nil && tpeer != s {
		return linux.EPERM
	}
	if tshut&rcvShut != 0 {
		return linux.EPIPE
	}
	return nil
}

// RecvMsg receives (recvmsg(2)).
func (s *sock) RecvMsg(c *vfs.Ctx, b socket.Blocking, m *socket.RecvMsg) (int, error) {
	if m.Flags&linux.MSG_OOB != 0 {
		return 0, linux.EOPNOTSUPP
	}
	if s.typ == linux.SOCK_STREAM {
		return s.recvStream(b, m)
	}
	return s.recvDgram(b, m)
}

// recvReady is the wait condition of a receive: data, an error or end of
// file.
func (s *sock) recvReady() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rq) > 0 || s.err != 0 || s.shut&rcvShut != 0 || s.dead
}

// recvDgram takes one datagram or record: the rest of one longer than
// the buffer is lost (MSG_TRUNC in msg_flags; the call returns the full
// length when asked with MSG_TRUNC). A seqpacket socket reads end of
// file once its peer is gone.
func (s *sock) recvDgram(b socket.Blocking, m *socket.RecvMsg) (int, error) {
	s.mu.Lock()
	notConn := s.typ == linux.SOCK_SEQPACKET && s.state != connected
	s.mu.Unlock()
	if notConn {
		return 0, linux.ENOTCONN
	}
	rcvTimeo, _ := s.opts.Timeouts()
	if err := socket.Wait(b, rcvTimeo, s.recvReady, &s.q); err != nil {
		return 0, err
	}
	s.mu.Lock()
	if len(s.rq) == 0 {
		err := s.err
		s.err = 0
		s.mu.Unlock()
		if err != 0 {
			return 0, err
		}
		return 0, nil // shut down for reading: end of file
	}
	q := s.rq[0]
	peek := m.Flags&linux.MSG_PEEK != 0
	if !peek {
		s.rq = popFront(s.rq, 1)
	}
	passcred := s.opts.Flag(linux.SO_PASSCRED)
	s.mu.Unlock()
	m.N = copy(m.Buf, q.data)
	m.From = q.from.sockaddr()
	if q.from == nil {
		m.From = nil
	}
	had := len(m.Control.Files)
	s.deliverControl(q, m, peek, passcred)
	if !peek {
		countInflight(m.Control.Files[had:], -1)
		q.uncharge()
		s.roomQ.Notify()
	}
	n := m.N
	if len(q.data) > len(m.Buf) {
		m.MsgFlags |= linux.MSG_TRUNC
		if m.Flags&linux.MSG_TRUNC != 0 {
			n = len(q.data)
		}
	}
	if !peek {
		s.recycle(q)
	}
	return n, nil
}

// deliverControl hands a message's descriptors and credentials to the
// receiver: on a peek, new references to the same files.
func (s *sock) deliverControl(q *msg, m *socket.RecvMsg, peek, passcred bool) {
	if len(q.ctl.Files) > 0 {
		if peek {
			for _, f := range q.ctl.Files {
				f.IncRef()
			}
			m.Control.Files = append(m.Control.Files, q.ctl.Files...)
		} else {
			m.Control.Files = append(m.Control.Files, q.ctl.Files...)
			q.ctl.Files = nil
		}
	}
	if passcred && m.Control.Cred == nil {
		cr := q.cred
		m.Control.Cred = &cr
	}
}

// recvStream reads bytes, from as many queued pieces as fit, but not
// past a piece carrying descriptors once some bytes were read (nor past
// one with other credentials when they are passed), as Linux keeps each
// control message with its own bytes. MSG_WAITALL waits for the whole
// buffer unless end of file, an error or a signal comes first.
func (s *sock) recvStream(b socket.Blocking, m *socket.RecvMsg) (int, error) {
	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	if state != connected {
		return 0, linux.EINVAL
	}
	peek := m.Flags&linux.MSG_PEEK != 0
	waitAll := m.Flags&linux.MSG_WAITALL != 0 && !peek
	rcvTimeo, _ := s.opts.Timeouts()
	passcred := s.opts.Flag(linux.SO_PASSCRED)
	copied := 0
	for {
		err := socket.Wait(b, rcvTimeo, s.recvReady, &s.q)
		if err != nil {
			if copied > 0 {
				return copied, nil
			}
			return 0, err
		}
		var done []*msg
		stop := false
		had := len(m.Control.Files)
		s.mu.Lock()
		if len(s.rq) == 0 {
			e := s.err
			s.err = 0
			s.mu.Unlock()
			if e != 0 && copied == 0 {
				return 0, e
			}
			return copied, nil // end of file, or a pending error after data
		}
		i := 0
		for i < len(s.rq) && copied < len(m.Buf) {
			q := s.rq[i]
			if copied > 0 && (len(q.ctl.Files) > 0 || passcred && m.Control.Cred != nil && *m.Control.Cred != q.cred) {
				stop = true
				break
			}
			k := copy(m.Buf[copied:], q.data[q.off:])
			copied += k
			s.deliverControl(q, m, peek, passcred)
			if !peek {
				q.off += k
				if q.off == len(q.data) {
					done = append(done, q)
				}
			}
			i++
			if len(q.ctl.Files) > 0 || (!peek && len(m.Control.Files) > 0) {
				stop = true // nothing after the descriptors in this call
				break
			}
		}
		if !peek {
			s.rq = popFront(s.rq, len(done))
		}
		s.mu.Unlock()
		if !peek {
			countInflight(m.Control.Files[had:], -1)
		}
		for _, q := range done {
			q.uncharge()
			s.recycle(q)
		}
		if stop || !waitAll || copied >= len(m.Buf) {
			m.N = copied
			return copied, nil
		}
		m.N = copied
	}
}

// Readiness reports the poll bits as Linux's unix_poll (stream) and
// unix_dgram_poll (datagram, seqpacket) do.
// AsyncIO: O_ASYNC signals readiness changes (vfs.AsyncIO).
func (*sock) AsyncIO() {}

func (s *sock) Readiness() uint32 {
	s.mu.Lock()
	var r uint32
	if s.err != 0 {
		r |= linux.POLLERR
	}
	if s.shut == bothShut {
		r |= linux.POLLHUP
	}
	if s.shut&rcvShut != 0 {
		r |= linux.POLLRDHUP | linux.POLLIN | linux.POLLRDNORM
	}
	if len(s.rq) > 0 || len(s.pending) > 0 {
		r |= linux.POLLIN | linux.POLLRDNORM
	}
	if s.connOriented() && s.state == unconnected {
		r |= linux.POLLHUP
	}
	writable := s.state != listening && s.wmem.Load()*4 <= int64(s.opts.SndBuf())
	peer := s.peer
	s.mu.Unlock()
	if writable && s.typ == linux.SOCK_DGRAM && peer != nil && peer != s {
		peer.mu.Lock()
		if peer.peer != s && len(peer.rq) > maxDgramQlen {
			writable = false
		}
		peer.mu.Unlock()
	}
	if writable {
		r |= linux.POLLOUT | linux.POLLWRNORM | linux.POLLWRBAND
	}
	return r
}
