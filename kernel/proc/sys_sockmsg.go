package proc

// The socket message calls: sendto, recvfrom, sendmsg, recvmsg, sendmmsg
// and recvmmsg. They copy struct msghdr, the iovecs, the address and the
// control messages (SCM_RIGHTS, SCM_CREDENTIALS) between user memory and
// socket.SendMsg/RecvMsg.

import (
	"encoding/binary"
	"errors"
	"shortbread/kernel/iobuf"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/net/socket"
	"shortbread/kernel/vfs"
)

// Sizes of the structures (x86-64): struct msghdr, struct mmsghdr,
// struct cmsghdr, struct ucred.
const (
	msghdrSize  = 56
	mmsghdrSize = 64
	cmsgHdrSize = 16
	ucredSize   = 12
	uioMaxIOV   = 1024
)

func cmsgAlign(n int) int { return (n + 7) &^ 7 }

// msghdr is struct msghdr as read from user memory.
type msghdr struct {
	name, namelen       uint64
	iov, iovlen         uint64
	control, controlLen uint64
}

func (t *Thread) readMsghdr(at uint64) (msghdr, int64) {
	var b [msghdrSize]byte
	if err := t.Proc.Space().CopyIn(uintptr(at), b[:]); err != nil {
		return msghdr{}, errno(err)
	}
	le := binary.LittleEndian
	m := msghdr{
		name: le.Uint64(b[0:]), namelen: uint64(le.Uint32(b[8:])),
		iov: le.Uint64(b[16:]), iovlen: le.Uint64(b[24:]),
		control: le.Uint64(b[32:]), controlLen: le.Uint64(b[40:]),
	}
	if m.name == 0 {
		m.namelen = 0
	}
	if int32(m.namelen) < 0 {
		return m, -eINVAL
	}
	m.namelen = min(m.namelen, sockaddrMax)
	if m.iovlen > uioMaxIOV {
		return m, -eMSGSIZE
	}
	return m, 0
}

const eMSGSIZE = int64(linux.EMSGSIZE)

// gather copies the iovecs' bytes in (up to maxIO).
func (t *Thread) gather(iov [][2]uint64) (*[]byte, int64) {
	total := uint64(0)
	for _, v := range iov {
		total += min(v[1], maxIO-total)
	}
	pb := iobuf.Get(int(total))
	buf := (*pb)[:0]
	for _, v := range iov {
		k := min(v[1], total-uint64(len(buf)))
		if err := t.Proc.Space().CopyIn(uintptr(v[0]), buf[len(buf):len(buf)+int(k)]); err != nil {
			iobuf.Put(pb)
			return nil, errno(err)
		}
		buf = buf[:len(buf)+int(k)]
	}
	*pb = buf
	return pb, 0
}

// scatter copies data out over the iovecs.
func (t *Thread) scatter(iov [][2]uint64, data []byte) int64 {
	for _, v := range iov {
		if len(data) == 0 {
			break
		}
		k := min(uint64(len(data)), v[1])
		if err := t.Proc.Space().CopyOut(uintptr(v[0]), data[:k]); err != nil {
			return errno(err)
		}
		data = data[k:]
	}
	return 0
}

func iovTotal(iov [][2]uint64) uint64 {
	n := uint64(0)
	for _, v := range iov {
		n += v[1]
	}
	return n
}

// sendResult turns a send's outcome into a result: EPIPE raises SIGPIPE
// unless MSG_NOSIGNAL.
func (t *Thread) sendResult(s socket.Socket, n int, err error, flags int) int64 {
	if err == nil {
		return int64(n)
	}
	if errors.Is(err, linux.EPIPE) && flags&linux.MSG_NOSIGNAL == 0 {
		t.signalThread(sigPIPE)
	}
	_, snd := s.Options().Timeouts()
	return t.sockErr(err, snd != 0)
}

func sysSendto(t *Thread, a *[6]uint64) (int64, bool) {
	f, s, e := t.sock(a[0])
	if e != 0 {
		return e, false
	}
	defer f.DecRef()
	flags := int(int32(a[3]))
	m := t.sendMsg()
	defer t.doneMsg()
	m.Flags = flags
	if a[4] != 0 && a[5] != 0 {
		if m.To, e = t.sockaddrIn(a[4], a[5]); e != 0 {
			return e, false
		}
	}
	iov := t.iovFast[:1]
	iov[0] = [2]uint64{a[1], a[2]}
	data, e := t.gather(iov)
	if e != 0 {
		return e, false
	}
	defer iobuf.Put(data)
	m.Data = *data
	c := t.ctx()
	m.Sender = socket.MsgCredOf(c)
	t.sleepBegin()
	n, err := s.SendMsg(c, t.blocking(f, flags), m)
	t.sleepEnd()
	return t.sendResult(s, n, err, flags), false
}

// socketWrite is write(2) and writev(2) on a socket: a send with no
// flags that carries the writer's credentials, as SCM_CREDENTIALS
// reports them to a receiver with SO_PASSCRED. EPIPE is returned for
// ioResult to raise SIGPIPE.
func (t *Thread) socketWrite(f *vfs.OpenFile, s socket.Socket, buf []byte) (int, error) {
	if f.Flags()&linux.O_ACCMODE == linux.O_RDONLY {
		return 0, linux.EBADF
	}
	c := t.ctx()
	m := t.sendMsg()
	defer t.doneMsg()
	m.Data, m.Sender = buf, socket.MsgCredOf(c)
	return s.SendMsg(c, t.blocking(f, 0), m)
}

// sendMsg and recvMsg return the thread's own message structure for a
// send or receive, zeroed: passed to a socket (an interface), one made
// per call would escape to the heap. doneMsg zeroes both once the call
// is over, so they keep no buffer or file alive.
func (t *Thread) sendMsg() *socket.SendMsg {
	t.smsg = socket.SendMsg{}
	return &t.smsg
}

func (t *Thread) recvMsg() *socket.RecvMsg {
	t.rmsg = socket.RecvMsg{}
	return &t.rmsg
}

func (t *Thread) doneMsg() {
	t.smsg, t.rmsg = socket.SendMsg{}, socket.RecvMsg{}
}

func sysRecvfrom(t *Thread, a *[6]uint64) (int64, bool) {
	f, s, e := t.sock(a[0])
	if e != 0 {
		return e, false
	}
	defer f.DecRef()
	flags := int(int32(a[3]))
	pb := iobuf.Get(int(min(a[2], maxIO)))
	defer iobuf.Put(pb)
	if !f.ReadsExactly() {
		clear(*pb) // see readInto
	}
	m := t.recvMsg()
	defer t.doneMsg()
	m.Buf, m.Flags = *pb, flags
	c := t.ctx()
	t.sleepBegin()
	n, err := s.RecvMsg(c, t.blocking(f, flags), m)
	t.sleepEnd()
	// recvfrom has nowhere to put descriptors: they are closed.
	m.Control.Release()
	if err != nil {
		rcv, _ := s.Options().Timeouts()
		return t.sockErr(err, rcv != 0), false
	}
	if err := t.Proc.Space().CopyOut(uintptr(a[1]), m.Buf[:m.N]); err != nil {
		return errno(err), false
	}
	if a[4] != 0 {
		if e := t.sockaddrOut(m.From, a[4], a[5]); e != 0 {
			return e, false
		}
	}
	return int64(n), false
}

func sysSendmsg(t *Thread, a *[6]uint64) (int64, bool) {
	f, s, e := t.sock(a[0])
	if e != 0 {
		return e, false
	}
	defer f.DecRef()
	return t.sendmsg(f, s, a[1], int(int32(a[2]))), false
}

// sendmsg sends the message of the struct msghdr at at.
func (t *Thread) sendmsg(f *vfs.OpenFile, s socket.Socket, at uint64, flags int) int64 {
	h, e := t.readMsghdr(at)
	if e != 0 {
		return e
	}
	iov, e := t.iovecs(h.iov, h.iovlen)
	if e != 0 {
		return e
	}
	m := t.sendMsg()
	defer t.doneMsg()
	m.Flags = flags
	if h.namelen > 0 {
		if m.To, e = t.sockaddrIn(h.name, h.namelen); e != 0 {
			return e
		}
	}
	data, e := t.gather(iov)
	if e != 0 {
		return e
	}
	defer iobuf.Put(data)
	m.Data = *data
	c := t.ctx()
	m.Sender = socket.MsgCredOf(c)
	if e := t.readControl(&h, &m.Control); e != 0 {
		return e
	}
	t.sleepBegin()
	n, err := s.SendMsg(c, t.blocking(f, flags), m)
	t.sleepEnd()
	if err != nil {
		m.Control.Release() // not sent: the references are still ours
	}
	return t.sendResult(s, n, err, flags)
}

// readControl decodes the control messages of a send as __scm_send
// does: each must fit (EINVAL), those at other levels are skipped,
// SCM_RIGHTS takes references to at most SCM_MAX_FD open descriptors
// (EBADF, EINVAL) and SCM_CREDENTIALS must name the caller unless it is
// privileged (EPERM). On failure nothing is held.
func (t *Thread) readControl(h *msghdr, ctl *socket.Control) (e int64) {
	if h.controlLen == 0 {
		return 0
	}
	if h.controlLen > 1<<31-1 {
		return -int64(linux.ENOBUFS)
	}
	if h.controlLen < cmsgHdrSize {
		return 0 // no room for even one header: no control messages
	}
	buf := make([]byte, min(h.controlLen, 1<<16))
	if err := t.Proc.Space().CopyIn(uintptr(h.control), buf); err != nil {
		return errno(err)
	}
	defer func() {
		if e != 0 {
			ctl.Release()
			ctl.Cred = nil
		}
	}()
	le := binary.LittleEndian
	for off := 0; off+cmsgHdrSize <= len(buf); {
		n := le.Uint64(buf[off:])
		level, typ := int32(le.Uint32(buf[off+8:])), int32(le.Uint32(buf[off+12:]))
		if n < cmsgHdrSize || n > uint64(len(buf)-off) {
			return -eINVAL
		}
		data := buf[off+cmsgHdrSize : off+int(n)]
		off += cmsgAlign(int(n))
		if level != linux.SOL_SOCKET {
			continue
		}
		switch typ {
		case linux.SCM_RIGHTS:
			k := len(data) / 4
			if len(ctl.Files)+k > linux.SCM_MAX_FD {
				return -eINVAL
			}
			for i := range k {
				fd := int(int32(le.Uint32(data[4*i:])))
				f, err := t.file(fd)
				if err != nil {
					return errno(err)
				}
				ctl.Files = append(ctl.Files, f)
			}
		case linux.SCM_CREDENTIALS:
			if len(data) != ucredSize {
				return -eINVAL
			}
			cr := socket.Cred{PID: int32(le.Uint32(data)), UID: le.Uint32(data[4:]), GID: le.Uint32(data[8:])}
			if !t.mayClaim(cr) {
				return -ePERM
			}
			ctl.Cred = &cr
		default:
			return -eINVAL
		}
	}
	return 0
}

// mayClaim reports whether the caller may send credentials cr: its own
// pid and one of its real, effective or saved IDs, unless it is root
// (scm_check_creds).
func (t *Thread) mayClaim(cr socket.Cred) bool {
	p := t.Proc
	p.mu.Lock()
	defer p.mu.Unlock()
	c := &p.cred
	if c.euid == 0 {
		return true
	}
	return cr.PID == int32(p.PID) &&
		(cr.UID == c.ruid || cr.UID == c.euid || cr.UID == c.suid) &&
		(cr.GID == c.rgid || cr.GID == c.egid || cr.GID == c.sgid)
}

func sysRecvmsg(t *Thread, a *[6]uint64) (int64, bool) {
	f, s, e := t.sock(a[0])
	if e != 0 {
		return e, false
	}
	defer f.DecRef()
	return t.recvmsg(f, s, a[1], int(int32(a[2])), false), false
}

// recvmsg receives into the struct msghdr at at and writes back its
// msg_namelen, msg_controllen and msg_flags. forceNonBlock is recvmmsg's
// MSG_WAITFORONE after the first message.
func (t *Thread) recvmsg(f *vfs.OpenFile, s socket.Socket, at uint64, flags int, forceNonBlock bool) int64 {
	h, e := t.readMsghdr(at)
	if e != 0 {
		return e
	}
	iov, e := t.iovecs(h.iov, h.iovlen)
	if e != 0 {
		return e
	}
	pb := iobuf.Get(int(min(iovTotal(iov), maxIO)))
	defer iobuf.Put(pb)
	if !f.ReadsExactly() {
		clear(*pb) // see readInto
	}
	m := t.recvMsg()
	defer t.doneMsg()
	m.Buf, m.Flags = *pb, flags
	b := t.blocking(f, flags)
	b.NonBlock = b.NonBlock || forceNonBlock
	t.sleepBegin()
	n, err := s.RecvMsg(t.ctx(), b, m)
	t.sleepEnd()
	if err != nil {
		rcv, _ := s.Options().Timeouts()
		return t.sockErr(err, rcv != 0)
	}
	if e := t.scatter(iov, m.Buf[:m.N]); e != 0 {
		m.Control.Release()
		return e
	}
	le := binary.LittleEndian
	var out [8]byte
	namelen := uint64(0)
	if h.name != 0 && len(m.From) > 0 {
		k := min(int(h.namelen), len(m.From))
		if err := t.Proc.Space().CopyOut(uintptr(h.name), m.From[:k]); err != nil {
			m.Control.Release()
			return errno(err)
		}
		namelen = uint64(len(m.From))
	}
	msgFlags := m.MsgFlags
	used, ctrunc := t.writeControl(&h, &m.Control, flags)
	if ctrunc {
		msgFlags |= linux.MSG_CTRUNC
	}
	le.PutUint32(out[:4], uint32(namelen))
	if err := t.Proc.Space().CopyOut(uintptr(at+8), out[:4]); err != nil {
		return errno(err)
	}
	le.PutUint64(out[:], uint64(used))
	if err := t.Proc.Space().CopyOut(uintptr(at+40), out[:]); err != nil {
		return errno(err)
	}
	le.PutUint32(out[:4], uint32(msgFlags))
	if err := t.Proc.Space().CopyOut(uintptr(at+48), out[:4]); err != nil {
		return errno(err)
	}
	return int64(n)
}

// writeControl stores the received control messages in the caller's
// buffer as scm_recv does: credentials first, then as many descriptors
// as fit, installed in the table (close-on-exec with MSG_CMSG_CLOEXEC).
// What does not fit, or cannot be written (a bad buffer), is closed and
// reported as MSG_CTRUNC; like Linux, a bad buffer does not fail the
// call, whose data has been received. It returns the bytes of the
// buffer used. The files are consumed either way.
func (t *Thread) writeControl(h *msghdr, ctl *socket.Control, flags int) (used int, ctrunc bool) {
	defer ctl.Release()
	space := int(min(h.controlLen, 1<<31-1))
	if h.control == 0 {
		space = 0
	}
	le := binary.LittleEndian
	// putAt stores one control message, cut short when it does not fit,
	// and reports whether it was stored; put stores one of SOL_SOCKET.
	var putAt func(level, typ int, data []byte) bool
	put := func(typ int, data []byte) bool { return putAt(linux.SOL_SOCKET, typ, data) }
	putAt = func(level, typ int, data []byte) bool {
		left := space - used
		if left < cmsgHdrSize {
			ctrunc = true
			return false
		}
		n := cmsgHdrSize + len(data)
		b := make([]byte, n)
		le.PutUint64(b, uint64(n))
		le.PutUint32(b[8:], uint32(level))
		le.PutUint32(b[12:], uint32(typ))
		copy(b[cmsgHdrSize:], data)
		if n > left {
			ctrunc = true
			b = b[:left]
		}
		if err := t.Proc.Space().CopyOut(uintptr(h.control)+uintptr(used), b); err != nil {
			ctrunc = true
			return false
		}
		used += min(cmsgAlign(n), left)
		return true
	}
	for _, m := range ctl.Proto {
		putAt(m.Level, m.Type, m.Data)
	}
	if cr := ctl.Cred; cr != nil {
		var d [ucredSize]byte
		le.PutUint32(d[:], uint32(cr.PID))
		le.PutUint32(d[4:], cr.UID)
		le.PutUint32(d[8:], cr.GID)
		if !put(linux.SCM_CREDENTIALS, d[:]) && len(ctl.Files) > 0 {
			return used, true
		}
	}
	if len(ctl.Files) == 0 {
		return used, ctrunc
	}
	left := space - used
	fit := 0
	if left > cmsgHdrSize {
		fit = min((left-cmsgHdrSize)/4, len(ctl.Files))
	}
	if fit < len(ctl.Files) {
		ctrunc = true
	}
	if fit == 0 {
		return used, ctrunc
	}
	fds := make([]byte, 0, 4*fit)
	cloexec := flags&linux.MSG_CMSG_CLOEXEC != 0
	var installed []int
	for _, f := range ctl.Files[:fit] {
		fd, err := t.Proc.files.Install(f, cloexec)
		if err != nil {
			ctrunc = true
			break
		}
		installed = append(installed, fd)
		fds = le.AppendUint32(fds, uint32(fd))
	}
	if len(fds) > 0 && !put(linux.SCM_RIGHTS, fds) {
		// The numbers could not be stored: the program cannot know the
		// descriptors, so they are not left open.
		for _, fd := range installed {
			t.Proc.files.Close(fd)
		}
	}
	return used, ctrunc
}

func sysSendmmsg(t *Thread, a *[6]uint64) (int64, bool) {
	f, s, e := t.sock(a[0])
	if e != 0 {
		return e, false
	}
	defer f.DecRef()
	vec, vlen, flags := a[1], min(a[2], uioMaxIOV), int(int32(a[3]))
	return t.eachMmsg(vec, vlen, func(at uint64, _ int64) int64 { return t.sendmsg(f, s, at, flags) }, nil), false
}

// eachMmsg makes one message call per mmsghdr of a sendmmsg/recvmmsg
// vector and stores each result in its msg_len. An error ends the call,
// and is its result only if no message went through; more, when set, is
// asked after each message whether to go on.
func (t *Thread) eachMmsg(vec, vlen uint64, call func(at uint64, done int64) int64, more func() bool) int64 {
	done := int64(0)
	for i := range vlen {
		at := vec + i*mmsghdrSize
		r := call(at, done)
		if r >= 0 {
			var b [4]byte
			binary.LittleEndian.PutUint32(b[:], uint32(r))
			if err := t.Proc.Space().CopyOut(uintptr(at+msghdrSize), b[:]); err != nil {
				r = errno(err)
			}
		}
		if r < 0 {
			if done > 0 {
				break
			}
			return r
		}
		done++
		if more != nil && !more() {
			break
		}
	}
	return done
}

// sysRecvmmsg receives up to vlen messages; with MSG_WAITFORONE only the
// first may wait, and a timeout ends the call once it has passed after a
// message (as Linux checks it only between messages).
func sysRecvmmsg(t *Thread, a *[6]uint64) (int64, bool) {
	f, s, e := t.sock(a[0])
	if e != 0 {
		return e, false
	}
	defer f.DecRef()
	vec, vlen, flags := a[1], min(a[2], uioMaxIOV), int(int32(a[3]))
	var deadline time.Time
	if a[4] != 0 {
		var b [16]byte
		if err := t.Proc.Space().CopyIn(uintptr(a[4]), b[:]); err != nil {
			return errno(err), false
		}
		sec, nsec := int64(binary.LittleEndian.Uint64(b[:])), int64(binary.LittleEndian.Uint64(b[8:]))
		if sec < 0 || nsec < 0 || nsec >= 1e9 {
			return -eINVAL, false
		}
		deadline = time.Now().Add(time.Duration(sec)*time.Second + time.Duration(nsec))
	}
	wait1 := flags&linux.MSG_WAITFORONE != 0
	return t.eachMmsg(vec, vlen, func(at uint64, got int64) int64 {
		return t.recvmsg(f, s, at, flags&^linux.MSG_WAITFORONE, got > 0 && wait1)
	}, func() bool { return deadline.IsZero() || !time.Now().After(deadline) }), false
}
