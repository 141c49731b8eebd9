// Package socket is the family-independent socket layer: what every
// socket is (the Socket interface a family implements), sockets as open
// files of the VFS, the registry of address families, the SOL_SOCKET
// options every family shares, and ancillary data in flight. The
// system-call layer (kernel/proc) decodes user memory into the types here
// and calls a Socket; the families (kernel/net/unix, later AF_INET over
// netstack) do the work.
package socket

import (
	"sync"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/kmem"
	"shortbread/kernel/vfs"
)

// Socket is one socket of some family. It is also the vfs.File and
// vfs.Poller of its open file, so read(2), write(2), close(2), poll and
// epoll work on it as on a pipe: Read is recv with no flags and Write is
// send with no flags (raising SIGPIPE on EPIPE, which the caller does).
//
// Addresses are raw sockaddr bytes as the program passed them (the
// family decodes its own); c is the caller's context (credentials, pid,
// root and cwd for path names, interrupt channel).
type Socket interface {
	vfs.File
	vfs.Poller

	// Family, Type and Protocol answer SO_DOMAIN, SO_TYPE, SO_PROTOCOL.
	Family() int
	Type() int
	Protocol() int

	Bind(c *vfs.Ctx, addr []byte) error
	Listen(c *vfs.Ctx, backlog int) error
	// Accept waits for a connection as b allows and returns the new,
	// connected socket.
	Accept(c *vfs.Ctx, b Blocking) (Socket, error)
	Connect(c *vfs.Ctx, addr []byte, b Blocking) error
	Shutdown(how int) error
	// Name returns the socket's own address (getsockname), Peer its
	// peer's (getpeername: ENOTCONN when it has none).
	Name() []byte
	Peer() ([]byte, error)

	// SendMsg sends m (sendmsg(2)); it returns the bytes sent. On
	// success the socket owns m.Control's references; on failure they
	// stay the caller's.
	SendMsg(c *vfs.Ctx, b Blocking, m *SendMsg) (int, error)
	// RecvMsg receives into m (recvmsg(2)) and returns the byte count
	// the call returns (the full datagram length with MSG_TRUNC).
	RecvMsg(c *vfs.Ctx, b Blocking, m *RecvMsg) (int, error)

	// GetOption returns the value of an option the family handles,
	// ENOPROTOOPT for one it does not know; SetOption sets one. The
	// SOL_SOCKET options of Options are answered by the caller of these
	// (see Common).
	GetOption(c *vfs.Ctx, level, name int) ([]byte, error)
	SetOption(c *vfs.Ctx, level, name int, val []byte) error

	// Queued returns the bytes waiting to be read (SIOCINQ, FIONREAD)
	// and those sent but not yet read by the peer (SIOCOUTQ).
	Queued() (in, out int, err error)

	// Options returns the SOL_SOCKET state the family keeps.
	Options() *Options
}

// Blocking is how a socket call may wait: vfs.Blocking (O_NONBLOCK or
// MSG_DONTWAIT, and the interrupt channel), with the socket's timeout
// applied by Wait.
type Blocking = vfs.Blocking

// Cred is a process's credentials as SO_PEERCRED and SCM_CREDENTIALS
// carry them (struct ucred).
type Cred struct {
	PID      int32
	UID, GID uint32
}

// CredOf returns the credentials SO_PEERCRED reports for the caller c:
// its pid and effective IDs.
func CredOf(c *vfs.Ctx) Cred {
	return Cred{PID: int32(c.PID), UID: c.Cred.EUID, GID: c.Cred.EGID}
}

// MsgCredOf returns the credentials a message from c carries for
// SCM_CREDENTIALS when it attaches none: its pid and real IDs, as
// Linux's scm_send fills them in.
func MsgCredOf(c *vfs.Ctx) Cred {
	return Cred{PID: int32(c.PID), UID: c.Cred.UID, GID: c.Cred.GID}
}

// Control is ancillary data in flight: descriptors (SCM_RIGHTS), each an
// open-file reference the message holds, and credentials
// (SCM_CREDENTIALS).
type Control struct {
	Files []*vfs.OpenFile
	Cred  *Cred
	// Proto are a protocol level's messages about received data
	// (IP_TTL, IPV6_HOPLIMIT, ...), written before the others.
	Proto []Cmsg
}

// Cmsg is one control message as the caller will see it: its level,
// type and data (the header and padding are the caller's).
type Cmsg struct {
	Level, Type int
	Data        []byte
}

// Release drops the file references a message held when it is thrown
// away unread, so that passing a descriptor never leaks its file.
func (c *Control) Release() {
	for _, f := range c.Files {
		f.DecRef()
	}
	c.Files = nil
}

// SendMsg is one sendmsg(2) as the family sees it.
type SendMsg struct {
	To      []byte // destination address; nil when none was given
	Data    []byte
	Control Control
	Flags   int // MSG_* flags
	// Sender is the caller's credentials (MsgCredOf): what
	// SCM_CREDENTIALS carries when the sender did not attach its own.
	Sender Cred
}

// RecvMsg is one recvmsg(2) as the family sees it: Buf's length is what
// the caller asked for; the family fills the rest.
type RecvMsg struct {
	Buf   []byte
	Flags int // MSG_* flags of the call

	N        int     // bytes stored in Buf
	From     []byte  // the sender's address, when the family knows one
	Control  Control // what came with the data; the caller installs or releases it
	MsgFlags int     // msg_flags: MSG_TRUNC, MSG_EOR (MSG_CTRUNC is the caller's)
}

// Family makes the sockets of one address family.
type Family struct {
	// New makes a socket of typ (SOCK_* without flags) and protocol.
	New func(c *vfs.Ctx, typ, protocol int) (Socket, error)
	// Pair makes two connected sockets (socketpair); nil: EOPNOTSUPP.
	Pair func(c *vfs.Ctx, typ, protocol int) (Socket, Socket, error)
}

var (
	familiesMu sync.RWMutex
	families   = map[int]*Family{}
)

// Register makes family available to socket(2) and socketpair(2).
func Register(family int, f *Family) {
	familiesMu.Lock()
	defer familiesMu.Unlock()
	families[family] = f
}

// afMax bounds the address family numbers Linux knows (AF_MAX).
const afMax = 46

func lookup(family, typ int) (*Family, error) {
	if family < 0 || family >= afMax {
		return nil, linux.EAFNOSUPPORT
	}
	if typ < 0 || typ > 10 {
		return nil, linux.EINVAL
	}
	familiesMu.RLock()
	f := families[family]
	familiesMu.RUnlock()
	if f == nil {
		return nil, linux.EAFNOSUPPORT
	}
	return f, nil
}

// New makes a socket for socket(2); typ holds only the type (the caller
// takes SOCK_NONBLOCK and SOCK_CLOEXEC off). Unknown families fail with
// EAFNOSUPPORT and bad types with EINVAL, as Linux checks them.
func New(c *vfs.Ctx, family, typ, protocol int) (Socket, error) {
	f, err := lookup(family, typ)
	if err != nil {
		return nil, err
	}
	if kmem.Refuse() { // no memory for another socket (Linux: ENOBUFS)
		return nil, linux.ENOBUFS
	}
	return f.New(c, typ, protocol)
}

// Pair makes two connected sockets for socketpair(2).
func Pair(c *vfs.Ctx, family, typ, protocol int) (Socket, Socket, error) {
	f, err := lookup(family, typ)
	if err != nil {
		return nil, nil, err
	}
	if f.Pair == nil {
		return nil, nil, linux.EOPNOTSUPP
	}
	if kmem.Refuse() {
		return nil, nil, linux.ENOBUFS
	}
	return f.Pair(c, typ, protocol)
}

// NewFile makes the open file of s: O_RDWR with the status flags
// (O_NONBLOCK) given, and an inode that fstat reports as S_IFSOCK|0777
// owned by owner, as Linux's sockfs does.
func NewFile(s Socket, flags uint32, owner vfs.Owner) *vfs.OpenFile {
	ino := vfs.NewAnonInode(linux.S_IFSOCK|0o777, owner)
	if n, ok := s.(inoSetter); ok {
		n.SetIno(ino.Attr().Ino)
	}
	return vfs.NewFile(ino, s, linux.O_RDWR|flags&linux.O_NONBLOCK)
}

// inoSetter is implemented by sockets that report their inode number
// (AF_UNIX, in /proc/net/unix).
type inoSetter interface{ SetIno(ino uint64) }

// From returns the socket behind an open file, or ENOTSOCK.
func From(f *vfs.OpenFile) (Socket, error) {
	s, ok := f.Impl().(Socket)
	if !ok {
		return nil, linux.ENOTSOCK
	}
	return s, nil
}
