package unix

import (
	"shortbread/kernel/abi/linux"
	"shortbread/kernel/net/socket"
	"shortbread/kernel/vfs"
)

// Listen makes a bound stream or seqpacket socket accept connections
// (listen(2)); calling it again changes the backlog. Datagram sockets
// fail with EOPNOTSUPP, unbound or connected ones with EINVAL.
func (s *sock) Listen(c *vfs.Ctx, backlog int) error {
	if !s.connOriented() {
		return linux.EOPNOTSUPP
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.addr == nil || s.state == connected {
		return linux.EINVAL
	}
	// A negative backlog is a huge unsigned one in Linux: the cap.
	if backlog < 0 || backlog > linux.SOMAXCONN {
		backlog = linux.SOMAXCONN
	}
	s.backlog = backlog
	if s.state != listening {
		s.state = listening
		s.peerCred, s.hasCred = socket.CredOf(c), true
	}
	s.q.Notify() // connectors waiting for a bigger backlog
	return nil
}

// Connect connects the socket (connect(2)). A stream or seqpacket socket
// joins a listener's queue of pending connections, waiting while that
// queue is over the backlog; the connection is usable at once, before
// it is accepted. A datagram socket only sets its default destination,
// and the family alone (AF_UNSPEC) clears it.
func (s *sock) Connect(c *vfs.Ctx, raw []byte, b socket.Blocking) error {
	if !s.connOriented() {
		return s.connectDgram(c, raw)
	}
	if _, _, _, err := parse(raw, false); err != nil {
		return err
	}
	t, err := s.find(c, raw)
	if err != nil {
		return err
	}
	if t == s {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.state == connected {
			return linux.EISCONN
		}
		if s.state == listening {
			return linux.EINVAL
		}
		return linux.ECONNREFUSED
	}
	_, sndTimeo := s.opts.Timeouts()
	var cerr error
	werr := socket.Wait(b, sndTimeo, func() bool {
		var done bool
		done, cerr = s.tryConnect(c, t)
		return done || cerr != nil
	}, &t.q)
	if werr != nil {
		return werr
	}
	return cerr
}

// tryConnect makes the connection to listener t if its queue has room:
// done reports success, and an error is final; neither means wait.
func (s *sock) tryConnect(c *vfs.Ctx, t *sock) (done bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.state == connected:
		return false, linux.EISCONN
	case s.state == listening:
		return false, linux.EINVAL
	case s.dead:
		return false, linux.EBADF
	}
	if s.addr == nil && s.opts.Flag(linux.SO_PASSCRED) {
		if err := s.autobindLocked(); err != nil {
			return false, err
		}
	}
	t.mu.Lock()
	if t.typ != s.typ {
		t.mu.Unlock()
		return false, linux.EPROTOTYPE
	}
	if t.dead || t.state != listening {
		t.mu.Unlock()
		return false, linux.ECONNREFUSED
	}
	if len(t.pending) > t.backlog {
		t.mu.Unlock()
		return false, nil
	}
	// The server's end of the connection: it takes the listener's name
	// and the client's credentials, and the client takes the listener's.
	n := &sock{typ: s.typ, opts: socket.InitOptions(), vfs: s.vfs, state: connected,
		addr: t.addr, peer: s, peerCred: socket.CredOf(c), hasCred: true}
	track(n)
	t.pending = append(t.pending, n)
	s.peerCred, s.hasCred = t.peerCred, true
	t.mu.Unlock()
	s.peer, s.state = n, connected
	t.q.Notify()
	s.q.Notify()
	return true, nil
}

// connectDgram sets or (AF_UNSPEC) clears a datagram socket's default
// destination.
func (s *sock) connectDgram(c *vfs.Ctx, raw []byte) error {
	if len(raw) >= 2 && raw[0] == linux.AF_UNSPEC && raw[1] == 0 {
		s.mu.Lock()
		s.peer = nil
		s.mu.Unlock()
		s.q.Notify()
		return nil
	}
	t, err := s.find(c, raw)
	if err != nil {
		return err
	}
	if t.typ != s.typ {
		return linux.EPROTOTYPE
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.addr == nil && s.opts.Flag(linux.SO_PASSCRED) {
		if err := s.autobindLocked(); err != nil {
			return err
		}
	}
	s.peer = t
	s.q.Notify()
	return nil
}

// Accept takes the oldest pending connection (accept(2)), waiting for
// one as b and SO_RCVTIMEO allow. The new socket inherits SO_PASSCRED.
func (s *sock) Accept(c *vfs.Ctx, b socket.Blocking) (socket.Socket, error) {
	if !s.connOriented() {
		return nil, linux.EOPNOTSUPP
	}
	rcvTimeo, _ := s.opts.Timeouts()
	var n *sock
	var err error
	werr := socket.Wait(b, rcvTimeo, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.state != listening {
			err = linux.EINVAL
			return true
		}
		if len(s.pending) == 0 {
			return false
		}
		n = s.pending[0]
		s.pending = s.pending[1:]
		return true
	}, &s.q)
	if werr != nil {
		return nil, werr
	}
	if err != nil {
		return nil, err
	}
	s.q.Notify() // room in the backlog for a waiting connector
	n.opts.SetFlag(linux.SO_PASSCRED, s.opts.Flag(linux.SO_PASSCRED))
	return n, nil
}

// Shutdown shuts down reading, writing or both (shutdown(2)); for stream
// and seqpacket sockets the peer sees the other half: end of file after
// its queue when this end stops writing.
func (s *sock) Shutdown(how int) error {
	if how < linux.SHUT_RD || how > linux.SHUT_RDWR {
		return linux.EINVAL
	}
	mode := how + 1 // SHUT_RD -> rcvShut, SHUT_WR -> sndShut, SHUT_RDWR -> both
	s.mu.Lock()
	s.shut |= mode
	peer := s.peer
	s.mu.Unlock()
	s.q.Notify()
	s.roomQ.Notify()
	if peer != nil && s.connOriented() {
		peerMode := 0
		if mode&rcvShut != 0 {
			peerMode |= sndShut
		}
		if mode&sndShut != 0 {
			peerMode |= rcvShut
		}
		peer.mu.Lock()
		peer.shut |= peerMode
		peer.mu.Unlock()
		peer.q.Notify()
	}
	return nil
}
