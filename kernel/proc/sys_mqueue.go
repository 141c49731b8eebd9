package proc

// POSIX message queues: the system calls decode and check their
// arguments in Linux's order and call package kernel/ipc/mqueue.

import (
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/ipc/mqueue"
	"shortbread/kernel/mm"
	"shortbread/kernel/net/netlink"
	"shortbread/kernel/net/socket"
	"shortbread/kernel/vfs"
	"shortbread/kernel/wallclock"
)

func init() {
	for no, e := range map[uint64]Entry{
		240: {"mq_open", sysMqOpen},
		241: {"mq_unlink", sysMqUnlink},
		242: {"mq_timedsend", sysMqTimedsend},
		243: {"mq_timedreceive", sysMqTimedreceive},
		244: {"mq_notify", sysMqNotify},
		245: {"mq_getsetattr", sysMqGetsetattr},
	} {
		syscalls[no] = e
	}
}

const (
	siMesgq    = -3 // si_code of a queue's notification
	mqAttrSize = 64 // struct mq_attr: four longs and four reserved

	notifyCookieLen = 32 // NOTIFY_COOKIE_LEN
	notifyWokenUp   = 1  // NOTIFY_WOKENUP
	notifyRemoved   = 2  // NOTIFY_REMOVED
)

// mqName copies in a queue name (NAME_MAX and its NUL at most).
func (t *Thread) mqName(at uint64) (string, int64) {
	name, err := t.Proc.Space().CopyInString(uintptr(at), 256)
	if err != nil {
		if err == mm.ErrNameTooLong {
			return "", -int64(linux.ENAMETOOLONG)
		}
		return "", errno(err)
	}
	return name, 0
}

func sysMqOpen(t *Thread, a *[6]uint64) (int64, bool) {
	name, e := t.mqName(a[0])
	if e != 0 {
		return e, false
	}
	flags := int(int32(a[1]))
	var attr *mqueue.Attr
	if flags&linux.O_CREAT != 0 && a[3] != 0 {
		var b [mqAttrSize / 2]byte
		if err := t.Proc.Space().CopyIn(uintptr(a[3]), b[:]); err != nil {
			return errno(err), false
		}
		attr = &mqueue.Attr{
			MaxMsg:  int64(binary.LittleEndian.Uint64(b[8:])),
			MsgSize: int64(binary.LittleEndian.Uint64(b[16:])),
		}
	}
	p := t.Proc
	c := t.creds()
	p.mu.Lock()
	limit, umask := p.rlimits()[rlimitMsgqueue].cur, p.umask
	p.mu.Unlock()
	q, err := mqueue.Open(mqueue.OpenArgs{
		Name: name, Flags: flags, Mode: uint32(a[2]), Attr: attr,
		Cred: c.vfsCred(), Umask: umask, Limit: limit, Capped: !c.privileged(),
	})
	if err != nil {
		return errno(err), false
	}
	f := mqueue.NewFile(q, flags)
	defer f.DecRef()
	// Linux gives every queue descriptor close-on-exec (do_mq_open).
	fd, err := p.files.Install(f, true)
	return fdResult(fd, err), false
}

func sysMqUnlink(t *Thread, a *[6]uint64) (int64, bool) {
	name, e := t.mqName(a[0])
	if e != 0 {
		return e, false
	}
	c := t.creds()
	return errno(mqueue.Unlink(name, c.vfsCred())), false
}

// mqFile returns the queue behind fd, opened for want (O_RDONLY or
// O_WRONLY access): EBADF otherwise.
func (t *Thread) mqFile(fd uint64, write bool) (*vfs.OpenFile, *mqueue.File, int64) {
	f, err := t.file(int(int32(fd)))
	if err != nil {
		return nil, nil, errno(err)
	}
	mf, err := mqueue.From(f)
	acc := f.Flags() & linux.O_ACCMODE
	if err == nil && ((write && acc == linux.O_RDONLY) || (!write && acc == linux.O_WRONLY)) {
		err = linux.EBADF
	}
	if err != nil {
		f.DecRef()
		return nil, nil, errno(err)
	}
	return f, mf, 0
}

// mqWait reads an absolute CLOCK_REALTIME timeout (0: none): EINVAL
// when malformed, as Linux checks before it looks at the queue.
func (t *Thread) mqWait(f *vfs.OpenFile, at uint64) (mqueue.Wait, int64) {
	w := mqueue.Wait{
		Blocking: vfs.Blocking{NonBlock: f.Flags()&linux.O_NONBLOCK != 0, Intr: t.sigWake},
		Now:      wallclock.Now,
	}
	if at == 0 {
		return w, 0
	}
	var b [16]byte
	if err := t.Proc.Space().CopyIn(uintptr(at), b[:]); err != nil {
		return w, errno(err)
	}
	sec, nsec := int64(binary.LittleEndian.Uint64(b[:])), int64(binary.LittleEndian.Uint64(b[8:]))
	if sec < 0 || nsec < 0 || nsec >= 1e9 {
		return w, -eINVAL
	}
	w.Deadline = time.Unix(sec, nsec)
	return w, 0
}

// mqResult turns a send's or receive's error into a result: an
// interrupted wait restarts under SA_RESTART.
func (t *Thread) mqResult(err error) int64 {
	if errors.Is(err, linux.EINTR) {
		return t.restartOrEINTR()
	}
	return errno(err)
}

func sysMqTimedsend(t *Thread, a *[6]uint64) (int64, bool) {
	if a[3] >= mqueue.PrioMax {
		return -eINVAL, false
	}
	f, mf, e := t.mqFile(a[0], true)
	if e != 0 {
		return e, false
	}
	defer f.DecRef()
	w, e := t.mqWait(f, a[4])
	if e != 0 {
		return e, false
	}
	if a[2] > uint64(mf.Q.Attr().MsgSize) {
		return -eMSGSIZE, false
	}
	msg := make([]byte, a[2])
	if err := t.Proc.Space().CopyIn(uintptr(a[1]), msg); err != nil {
		return errno(err), false
	}
	t.sleepBegin()
	err := mf.Q.Send(w, msg, uint32(a[3]), t.Proc.PID, t.creds().ruid)
	t.sleepEnd()
	return t.mqResult(err), false
}

func sysMqTimedreceive(t *Thread, a *[6]uint64) (int64, bool) {
	f, mf, e := t.mqFile(a[0], false)
	if e != 0 {
		return e, false
	}
	defer f.DecRef()
	w, e := t.mqWait(f, a[4])
	if e != 0 {
		return e, false
	}
	size := mf.Q.Attr().MsgSize
	if a[2] < uint64(size) {
		return -eMSGSIZE, false
	}
	buf := make([]byte, size)
	t.sleepBegin()
	n, prio, err := mf.Q.Receive(w, buf)
	t.sleepEnd()
	if err != nil {
		return t.mqResult(err), false
	}
	// The message is taken: a fault storing it loses it, as on Linux.
	if err := t.Proc.Space().CopyOut(uintptr(a[1]), buf[:n]); err != nil {
		return errno(err), false
	}
	if a[3] != 0 {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], prio)
		if err := t.Proc.Space().CopyOut(uintptr(a[3]), b[:]); err != nil {
			return errno(err), false
		}
	}
	return int64(n), false
}

func sysMqNotify(t *Thread, a *[6]uint64) (int64, bool) {
	var n *mqueue.Notification
	p := t.Proc
	abandon := func() {} // drops what a registration that failed held
	if a[1] != 0 {
		// struct sigevent: sigev_value at 0, sigev_signo at 8,
		// sigev_notify at 12.
		var b [16]byte
		if err := p.Space().CopyIn(uintptr(a[1]), b[:]); err != nil {
			return errno(err), false
		}
		value := binary.LittleEndian.Uint64(b[:])
		sig := int(int32(binary.LittleEndian.Uint32(b[8:])))
		switch int32(binary.LittleEndian.Uint32(b[12:])) {
		case sigevNone:
			n = &mqueue.Notification{PID: p.PID}
		case sigevSignal:
			if sig < 1 || sig > nSig {
				return -eINVAL, false
			}
			n = &mqueue.Notification{PID: p.PID, Sig: sig, Fire: func(pid int, uid uint32) {
				raw := make([]byte, siSize)
				binary.LittleEndian.PutUint32(raw[16:], uint32(pid))
				binary.LittleEndian.PutUint32(raw[20:], uid)
				binary.LittleEndian.PutUint64(raw[24:], value)
				p.sendSignal(sigInfo{signo: sig, code: siMesgq, raw: raw})
			}}
		case sigevThread:
			// The C library's helper thread reads a 32-byte cookie
			// from a netlink socket (sigev_signo); the last byte says
			// whether the queue was woken or the registration removed.
			var cookie [notifyCookieLen]byte
			if err := p.Space().CopyIn(uintptr(value), cookie[:]); err != nil {
				return errno(err), false
			}
			nf, err := t.file(sig)
			if err != nil {
				return errno(err), false
			}
			if s, err := socket.From(nf); err != nil || s.Family() != linux.AF_NETLINK {
				nf.DecRef()
				return -eBADF, false
			}
			var once sync.Once
			send := func(how byte) {
				once.Do(func() {
					c := cookie
					c[notifyCookieLen-1] = how
					netlink.Deliver(nf, c[:])
					nf.DecRef()
				})
			}
			n = &mqueue.Notification{PID: p.PID, Thread: true,
				Fire:    func(int, uint32) { send(notifyWokenUp) },
				Removed: func() { send(notifyRemoved) }}
			abandon = func() { once.Do(func() { nf.DecRef() }) }
		default:
			return -eINVAL, false
		}
	}
	f, mf, e := t.mqFile(a[0], false)
	if e == -eBADF {
		// Any access mode may register; only a non-queue is EBADF.
		if f2, err := t.file(int(int32(a[0]))); err == nil {
			if m2, err := mqueue.From(f2); err == nil {
				f, mf, e = f2, m2, 0
			} else {
				f2.DecRef()
			}
		}
	}
	if e != 0 {
		abandon()
		return e, false
	}
	defer f.DecRef()
	if err := mf.SetNotify(p.PID, n); err != nil {
		abandon()
		return errno(err), false
	}
	return 0, false
}

func sysMqGetsetattr(t *Thread, a *[6]uint64) (int64, bool) {
	f, err := t.file(int(int32(a[0])))
	if err != nil {
		return errno(err), false
	}
	defer f.DecRef()
	mf, err := mqueue.From(f)
	if err != nil {
		return errno(err), false
	}
	s := t.Proc.Space()
	var newFlags int64
	if a[1] != 0 {
		var b [mqAttrSize]byte
		if err := s.CopyIn(uintptr(a[1]), b[:]); err != nil {
			return errno(err), false
		}
		newFlags = int64(binary.LittleEndian.Uint64(b[:]))
		if newFlags&^linux.O_NONBLOCK != 0 {
			return -eINVAL, false
		}
	}
	if a[2] != 0 {
		at := mf.Q.Attr()
		var b [mqAttrSize]byte
		binary.LittleEndian.PutUint64(b[:], uint64(f.Flags()&linux.O_NONBLOCK))
		binary.LittleEndian.PutUint64(b[8:], uint64(at.MaxMsg))
		binary.LittleEndian.PutUint64(b[16:], uint64(at.MsgSize))
		binary.LittleEndian.PutUint64(b[24:], uint64(at.CurMsgs))
		if err := s.CopyOut(uintptr(a[2]), b[:]); err != nil {
			return errno(err), false
		}
	}
	if a[1] != 0 {
		f.SetFlags(f.Flags()&^linux.O_NONBLOCK | uint32(newFlags))
	}
	return 0, false
}
