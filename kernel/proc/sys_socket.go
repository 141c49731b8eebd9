package proc

// Socket system calls: they decode and check arguments, copy addresses
// and option values between user memory and the kernel, and call package
// kernel/net/socket; the families (kernel/net/unix) do the work. The
// message calls (sendto, recvfrom, sendmsg, recvmsg and their multiple
// forms) are in sys_sockmsg.go.

import (
	"encoding/binary"
	"errors"
	"strings"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/net/inet"
	"shortbread/kernel/net/netlink"
	"shortbread/kernel/net/rtnetlink"
	"shortbread/kernel/net/socket"
	"shortbread/kernel/net/unix"
	"shortbread/kernel/vfs"
)

func init() {
	unix.Register(func() *vfs.VFS { return fsys })
	inet.Register()
	netlink.Register()
	rtnetlink.Register()
	for no, e := range map[uint64]Entry{
		41:  {"socket", sysSocket},
		42:  {"connect", sysConnect},
		43:  {"accept", sysAccept},
		44:  {"sendto", sysSendto},
		45:  {"recvfrom", sysRecvfrom},
		46:  {"sendmsg", sysSendmsg},
		47:  {"recvmsg", sysRecvmsg},
		48:  {"shutdown", sysShutdown},
		49:  {"bind", sysBind},
		50:  {"listen", sysListen},
		51:  {"getsockname", sysGetsockname},
		52:  {"getpeername", sysGetpeername},
		53:  {"socketpair", sysSocketpair},
		54:  {"setsockopt", sysSetsockopt},
		55:  {"getsockopt", sysGetsockopt},
		288: {"accept4", sysAccept4},
		299: {"recvmmsg", sysRecvmmsg},
		307: {"sendmmsg", sysSendmmsg},
	} {
		syscalls[no] = e
	}
}

// sockaddrMax is the largest address the kernel copies in (struct
// sockaddr_storage).
const sockaddrMax = 128

// sock returns the open file and socket behind fd: EBADF, or ENOTSOCK
// for another kind of file. The caller drops the file reference.
func (t *Thread) sock(fd uint64) (*vfs.OpenFile, socket.Socket, int64) {
	f, err := t.file(int(int32(fd)))
	if err != nil {
		return nil, nil, errno(err)
	}
	s, err := socket.From(f)
	if err != nil {
		f.DecRef()
		return nil, nil, errno(err)
	}
	return f, s, 0
}

// sockaddrIn copies in an address of n bytes as move_addr_to_kernel
// does: a length over sockaddr_storage or negative is EINVAL.
func (t *Thread) sockaddrIn(at uint64, n uint64) ([]byte, int64) {
	if int32(n) < 0 || n > sockaddrMax {
		return nil, -eINVAL
	}
	b := make([]byte, n)
	if err := t.Proc.Space().CopyIn(uintptr(at), b); err != nil {
		return nil, errno(err)
	}
	return b, 0
}

// sockaddrOut stores addr at at for a result-length argument at lenAt
// (an int holding the buffer's size): at most that many bytes are
// stored, and the full length is written back, as move_addr_to_user
// does.
func (t *Thread) sockaddrOut(addr []byte, at, lenAt uint64) int64 {
	var lb [4]byte
	if err := t.Proc.Space().CopyIn(uintptr(lenAt), lb[:]); err != nil {
		return errno(err)
	}
	size := int32(binary.LittleEndian.Uint32(lb[:]))
	if size < 0 {
		return -eINVAL
	}
	if k := min(int(size), len(addr)); k > 0 {
		if err := t.Proc.Space().CopyOut(uintptr(at), addr[:k]); err != nil {
			return errno(err)
		}
	}
	binary.LittleEndian.PutUint32(lb[:], uint32(len(addr)))
	return errno(t.Proc.Space().CopyOut(uintptr(lenAt), lb[:]))
}

// blocking is how a socket call on f may wait: O_NONBLOCK or
// MSG_DONTWAIT, and the thread's signals.
func (t *Thread) blocking(f *vfs.OpenFile, msgFlags int) socket.Blocking {
	return socket.Blocking{
		NonBlock: f.Flags()&linux.O_NONBLOCK != 0 || msgFlags&linux.MSG_DONTWAIT != 0,
		Intr:     t.sigWake,
	}
}

// sockErr turns a socket call's error into a result: an interrupted
// wait restarts under SA_RESTART, except when the socket has a timeout
// for that direction, which Linux never restarts (sock_intr_errno).
func (t *Thread) sockErr(err error, timeout bool) int64 {
	if errors.Is(err, linux.EINTR) {
		if timeout {
			return -int64(linux.EINTR)
		}
		return t.restartOrEINTR()
	}
	return errno(err)
}

// installSock makes the open file of s and installs it.
func (t *Thread) installSock(s socket.Socket, flags int, c *vfs.Ctx) (int, error) {
	f := socket.NewFile(s, uint32(flags), vfs.Owner{UID: c.Cred.EUID, GID: c.Cred.EGID})
	defer f.DecRef()
	return t.Proc.files.Install(f, flags&linux.SOCK_CLOEXEC != 0)
}

// splitType takes SOCK_NONBLOCK and SOCK_CLOEXEC off socket(2)'s type;
// other bits above the type are EINVAL.
func splitType(arg uint64) (typ, flags int, e int64) {
	v := int(int32(arg))
	flags = v &^ linux.SOCK_TYPE_MASK
	if flags&^(linux.SOCK_NONBLOCK|linux.SOCK_CLOEXEC) != 0 {
		return 0, 0, -eINVAL
	}
	return v & linux.SOCK_TYPE_MASK, flags, 0
}

func sysSocket(t *Thread, a *[6]uint64) (int64, bool) {
	typ, flags, e := splitType(a[1])
	if e != 0 {
		return e, false
	}
	c := t.ctx()
	s, err := socket.New(c, int(int32(a[0])), typ, int(int32(a[2])))
	if err != nil {
		return errno(err), false
	}
	fd, err := t.installSock(s, flags, c)
	return fdResult(fd, err), false
}

func sysSocketpair(t *Thread, a *[6]uint64) (int64, bool) {
	typ, flags, e := splitType(a[1])
	if e != 0 {
		return e, false
	}
	c := t.ctx()
	s1, s2, err := socket.Pair(c, int(int32(a[0])), typ, int(int32(a[2])))
	if err != nil {
		return errno(err), false
	}
	fd1, err := t.installSock(s1, flags, c)
	if err != nil {
		s2.Release()
		return errno(err), false
	}
	fd2, err := t.installSock(s2, flags, c)
	if err != nil {
		t.Proc.files.Close(fd1)
		return errno(err), false
	}
	var b [8]byte
	binary.LittleEndian.PutUint32(b[0:], uint32(fd1))
	binary.LittleEndian.PutUint32(b[4:], uint32(fd2))
	if err := t.Proc.Space().CopyOut(uintptr(a[3]), b[:]); err != nil {
		t.Proc.files.Close(fd1)
		t.Proc.files.Close(fd2)
		return errno(err), false
	}
	return 0, false
}

func sysBind(t *Thread, a *[6]uint64) (int64, bool) {
	f, s, e := t.sock(a[0])
	if e != 0 {
		return e, false
	}
	defer f.DecRef()
	addr, e := t.sockaddrIn(a[1], a[2])
	if e != 0 {
		return e, false
	}
	return errno(s.Bind(t.ctx(), addr)), false
}

func sysListen(t *Thread, a *[6]uint64) (int64, bool) {
	f, s, e := t.sock(a[0])
	if e != 0 {
		return e, false
	}
	defer f.DecRef()
	return errno(s.Listen(t.ctx(), int(int32(a[1])))), false
}

func sysConnect(t *Thread, a *[6]uint64) (int64, bool) {
	f, s, e := t.sock(a[0])
	if e != 0 {
		return e, false
	}
	defer f.DecRef()
	addr, e := t.sockaddrIn(a[1], a[2])
	if e != 0 {
		return e, false
	}
	t.sleepBegin()
	err := s.Connect(t.ctx(), addr, t.blocking(f, 0))
	t.sleepEnd()
	_, snd := s.Options().Timeouts()
	return t.sockErr(err, snd != 0), false
}

func sysAccept(t *Thread, a *[6]uint64) (int64, bool) {
	return t.accept(a[0], a[1], a[2], 0), false
}

func sysAccept4(t *Thread, a *[6]uint64) (int64, bool) {
	return t.accept(a[0], a[1], a[2], int(int32(a[3]))), false
}

// accept waits for a connection, installs its socket and stores the
// peer's address; a bad address buffer loses the connection, as on
// Linux.
func (t *Thread) accept(fd, addrAt, lenAt uint64, flags int) int64 {
	if flags&^(linux.SOCK_NONBLOCK|linux.SOCK_CLOEXEC) != 0 {
		return -eINVAL
	}
	f, s, e := t.sock(fd)
	if e != 0 {
		return e
	}
	defer f.DecRef()
	c := t.ctx()
	t.sleepBegin()
	n, err := s.Accept(c, t.blocking(f, 0))
	t.sleepEnd()
	if err != nil {
		rcv, _ := s.Options().Timeouts()
		return t.sockErr(err, rcv != 0)
	}
	nf := socket.NewFile(n, uint32(flags), vfs.Owner{UID: c.Cred.EUID, GID: c.Cred.EGID})
	defer nf.DecRef()
	if addrAt != 0 {
		peer, err := n.Peer()
		if err != nil {
			peer = []byte{byte(n.Family()), 0}
		}
		if e := t.sockaddrOut(peer, addrAt, lenAt); e != 0 {
			return e
		}
	}
	nfd, err := t.Proc.files.Install(nf, flags&linux.SOCK_CLOEXEC != 0)
	return fdResult(nfd, err)
}

func sysShutdown(t *Thread, a *[6]uint64) (int64, bool) {
	f, s, e := t.sock(a[0])
	if e != 0 {
		return e, false
	}
	defer f.DecRef()
	return errno(s.Shutdown(int(int32(a[1])))), false
}

func sysGetsockname(t *Thread, a *[6]uint64) (int64, bool) {
	f, s, e := t.sock(a[0])
	if e != 0 {
		return e, false
	}
	defer f.DecRef()
	return t.sockaddrOut(s.Name(), a[1], a[2]), false
}

func sysGetpeername(t *Thread, a *[6]uint64) (int64, bool) {
	f, s, e := t.sock(a[0])
	if e != 0 {
		return e, false
	}
	defer f.DecRef()
	addr, err := s.Peer()
	if err != nil {
		return errno(err), false
	}
	return t.sockaddrOut(addr, a[1], a[2]), false
}

// sysGetsockopt stores at most the caller's length of the value and
// writes back the length stored, as sock_getsockopt does.
func sysGetsockopt(t *Thread, a *[6]uint64) (int64, bool) {
	f, s, e := t.sock(a[0])
	if e != 0 {
		return e, false
	}
	defer f.DecRef()
	var lb [4]byte
	if err := t.Proc.Space().CopyIn(uintptr(a[4]), lb[:]); err != nil {
		return errno(err), false
	}
	size := int32(binary.LittleEndian.Uint32(lb[:]))
	if size < 0 {
		return -eINVAL, false
	}
	v, err := socket.GetOption(t.ctx(), s, int(int32(a[1])), int(int32(a[2])))
	if err != nil {
		return errno(err), false
	}
	v = v[:min(int(size), len(v))]
	if err := t.Proc.Space().CopyOut(uintptr(a[3]), v); err != nil {
		return errno(err), false
	}
	binary.LittleEndian.PutUint32(lb[:], uint32(len(v)))
	return errno(t.Proc.Space().CopyOut(uintptr(a[4]), lb[:])), false
}

func sysSetsockopt(t *Thread, a *[6]uint64) (int64, bool) {
	f, s, e := t.sock(a[0])
	if e != 0 {
		return e, false
	}
	defer f.DecRef()
	size := int32(a[4])
	if size < 0 {
		return -eINVAL, false
	}
	v := make([]byte, min(int(size), 256))
	if err := t.Proc.Space().CopyIn(uintptr(a[3]), v); err != nil {
		return errno(err), false
	}
	return errno(socket.SetOption(t.ctx(), s, int(int32(a[1])), int(int32(a[2])), v)), false
}

// socketIoctl answers the socket ioctls: SIOCINQ (FIONREAD), SIOCOUTQ
// and the network-interface ioctls, which Linux takes on a socket of any
// family. ok is false for other files and commands.
func (t *Thread) socketIoctl(f *vfs.OpenFile, cmd uint64, arg uintptr) (int64, bool) {
	s, err := socket.From(f)
	if err != nil {
		return 0, false
	}
	switch {
	case cmd == inet.SIOCGIFCONF:
		return t.ifconf(arg), true
	case inet.IsIfIoctl(cmd):
		return t.ifIoctl(cmd, arg), true
	case (cmd == inet.SIOCADDRT || cmd == inet.SIOCDELRT) && s.Family() == linux.AF_INET:
		return t.rtIoctl(cmd, arg), true
	case cmd != linux.SIOCINQ && cmd != linux.SIOCOUTQ:
		return 0, false
	}
	in, out, err := s.Queued()
	if err != nil {
		return errno(err), true
	}
	v := in
	if cmd == linux.SIOCOUTQ {
		v = out
	}
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(v))
	return errno(t.Proc.Space().CopyOut(arg, b[:])), true
}

// ifIoctl copies a struct ifreq in, has the network stack answer it and
// copies it back; changing an interface is root's (CAP_NET_ADMIN).
func (t *Thread) ifIoctl(cmd uint64, arg uintptr) int64 {
	var req [inet.IfreqSize]byte
	if err := t.Proc.Space().CopyIn(arg, req[:]); err != nil {
		return errno(err)
	}
	if inet.IsIfSet(cmd) {
		if !t.creds().privileged() {
			return -ePERM
		}
		return errno(inet.IfIoctl(cmd, &req))
	}
	if err := inet.IfIoctl(cmd, &req); err != nil {
		return errno(err)
	}
	return errno(t.Proc.Space().CopyOut(arg, req[:]))
}

// rtIoctl is SIOCADDRT and SIOCDELRT on an AF_INET socket: root's
// (CAP_NET_ADMIN), a struct rtentry, and the interface name its rt_dev
// points to, of which Linux copies IFNAMSIZ-1 bytes whatever the
// string's length.
func (t *Thread) rtIoctl(cmd uint64, arg uintptr) int64 {
	if !t.creds().privileged() {
		return -ePERM
	}
	var b [inet.RtentrySize]byte
	sp := t.Proc.Space()
	if err := sp.CopyIn(arg, b[:]); err != nil {
		return errno(err)
	}
	e := inet.ParseRtentry(b[:])
	if e.DevPtr != 0 {
		var name [15]byte
		if err := sp.CopyIn(uintptr(e.DevPtr), name[:]); err != nil {
			return errno(err)
		}
		e.Dev, _, _ = strings.Cut(string(name[:]), "\x00")
	}
	return errno(inet.RouteIoctl(cmd, e))
}

// ifconf is SIOCGIFCONF: struct ifconf is an int length (padded to 8)
// and a buffer pointer. A NULL buffer asks for the length needed;
// otherwise as many whole ifreqs as fit are written and the length says
// how many bytes.
func (t *Thread) ifconf(arg uintptr) int64 {
	var hdr [16]byte
	sp := t.Proc.Space()
	if err := sp.CopyIn(arg, hdr[:]); err != nil {
		return errno(err)
	}
	n := int32(binary.LittleEndian.Uint32(hdr[:]))
	buf := uintptr(binary.LittleEndian.Uint64(hdr[8:]))
	reqs := inet.IfConf()
	done := 0
	if buf == 0 {
		done = len(reqs) * inet.IfreqSize
	} else {
		for _, r := range reqs {
			if int(n)-done < inet.IfreqSize {
				break
			}
			if err := sp.CopyOut(buf+uintptr(done), r[:]); err != nil {
				return errno(err)
			}
			done += inet.IfreqSize
		}
	}
	binary.LittleEndian.PutUint32(hdr[:], uint32(done))
	return errno(sp.CopyOut(arg, hdr[:4]))
}
