package proc

// epoll(7)'s system calls: they decode and check their arguments and
// call kernel/epoll, which keeps the instances and their ready lists.

import (
	"encoding/binary"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/epoll"
	"shortbread/kernel/mm"
	"shortbread/kernel/vfs"
)

const (
	epollCtlAdd = 1
	epollCtlDel = 2
	epollCtlMod = 3

	epollCloexec = linux.O_CLOEXEC
)

func sysEpollCreate(t *Thread, a *[6]uint64) (int64, bool) {
	if int32(a[0]) <= 0 {
		return -eINVAL, false
	}
	return t.epollCreate(0), false
}

func sysEpollCreate1(t *Thread, a *[6]uint64) (int64, bool) {
	if a[0]&^uint64(epollCloexec) != 0 {
		return -eINVAL, false
	}
	return t.epollCreate(uint32(a[0])), false
}

func (t *Thread) epollCreate(flags uint32) int64 {
	f := vfs.NewFile(vfs.NewAnonInode(linux.S_IFREG|0o600, vfs.Owner{}), epoll.New(), linux.O_RDWR)
	defer f.DecRef()
	fd, err := t.Proc.files.Install(f, flags&epollCloexec != 0)
	return fdResult(fd, err)
}

// epollOf returns the epoll instance behind fd.
func (t *Thread) epollOf(fd int) (*epoll.Instance, *vfs.OpenFile, int64) {
	f, err := t.file(fd)
	if err != nil {
		return nil, nil, errno(err)
	}
	ep, ok := f.Impl().(*epoll.Instance)
	if !ok {
		f.DecRef()
		return nil, nil, -eINVAL
	}
	return ep, f, 0
}

// sysEpollCtl checks in Linux's order: the event is read first (EFAULT),
// then both descriptors (EBADF), the target's support for polling
// (EPERM), the instance (EINVAL: itself, or not an epoll file),
// EPOLLEXCLUSIVE's rules (EINVAL), then the operation (ELOOP for cycles
// and depth, EEXIST, ENOENT, EINVAL). The references are dropped
// without defer: with this many returns the compiler would not
// open-code the deferred calls, and the run-time defer records cost an
// event loop's frequent EPOLL_CTL_MODs about a tenth of their time.
func sysEpollCtl(t *Thread, a *[6]uint64) (int64, bool) {
	op, fd := int(a[1]), int(int32(a[2]))
	var events uint32
	var data uint64
	if op != epollCtlDel {
		var b [12]byte
		if err := t.Proc.Space().CopyIn(uintptr(a[3]), b[:]); err != nil {
			return errno(err), false
		}
		events, data = binary.LittleEndian.Uint32(b[:]), binary.LittleEndian.Uint64(b[4:])
	}
	epf, err := t.file(int(int32(a[0])))
	if err != nil {
		return errno(err), false
	}
	if epf.IsPath() {
		epf.DecRef()
		return -eBADF, false
	}
	target, err := t.file(fd)
	if err != nil {
		epf.DecRef()
		return errno(err), false
	}
	r := epollCtl(epf, target, op, fd, events, data)
	target.DecRef()
	epf.DecRef()
	return r, false
}

// epollCtl is sysEpollCtl once both descriptors are looked up.
func epollCtl(epf, target *vfs.OpenFile, op, fd int, events uint32, data uint64) int64 {
	if target.IsPath() {
		return -eBADF
	}
	if !target.Pollable() {
		return -ePERM // regular files and directories: always ready
	}
	ep, isEpoll := epf.Impl().(*epoll.Instance)
	if target == epf || !isEpoll {
		return -eINVAL
	}
	if op != epollCtlDel && events&epoll.Exclusive != 0 {
		_, targetIsEpoll := target.Impl().(*epoll.Instance)
		if op == epollCtlMod || op == epollCtlAdd && (targetIsEpoll || events&^epoll.ExclusiveOK != 0) {
			return -eINVAL
		}
	}
	var err error
	switch op {
	case epollCtlAdd:
		err = ep.Add(fd, target, events, data)
	case epollCtlMod:
		err = ep.Modify(fd, target, events, data)
	case epollCtlDel:
		err = ep.Delete(fd, target)
	default:
		return -eINVAL
	}
	return errno(err)
}

func sysEpollWait(t *Thread, a *[6]uint64) (int64, bool) {
	return t.epollWait(a, msTimeout(a[3]), 0, 0), false
}

func sysEpollPwait(t *Thread, a *[6]uint64) (int64, bool) {
	return t.epollWait(a, msTimeout(a[3]), uintptr(a[4]), a[5]), false
}

// sysEpollPwait2 is epoll_pwait with a timespec timeout (NULL: none),
// read and checked first.
func sysEpollPwait2(t *Thread, a *[6]uint64) (int64, bool) {
	timeout := time.Duration(-1)
	if a[3] != 0 {
		var b [16]byte
		if err := t.Proc.Space().CopyIn(uintptr(a[3]), b[:]); err != nil {
			return errno(err), false
		}
		sec, nsec := int64(binary.LittleEndian.Uint64(b[:])), int64(binary.LittleEndian.Uint64(b[8:]))
		if sec < 0 || nsec < 0 || nsec >= 1e9 {
			return -eINVAL, false
		}
		timeout = time.Duration(min(sec, 1<<32))*time.Second + time.Duration(nsec)
	}
	return t.epollWait(a, timeout, uintptr(a[4]), a[5]), false
}

// msTimeout is epoll_wait's timeout in milliseconds (negative: none).
func msTimeout(arg uint64) time.Duration {
	if ms := int32(arg); ms >= 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return -1
}

// epollMaxEvents is Linux's EP_MAX_EVENTS: as many events as fit in
// INT_MAX bytes.
const epollMaxEvents = (1<<31 - 1) / 12

func (t *Thread) epollWait(a *[6]uint64, timeout time.Duration, maskAt uintptr, maskSize uint64) int64 {
	max := int(int32(a[2]))
	if max <= 0 || max > epollMaxEvents {
		return -eINVAL
	}
	// A buffer that is not in user space at all is EFAULT before the
	// descriptor is looked at (Linux's access_ok).
	if end := uint64(a[1]) + 12*uint64(max); end < a[1] || end > uint64(mm.UserTop) {
		return -eFAULT
	}
	ep, epf, e := t.epollOf(int(int32(a[0])))
	if e != 0 {
		return e
	}
	defer epf.DecRef()
	wait := func() int64 {
		return t.epollSleep(ep, timeout, func() (int64, bool) {
			evs := ep.Collect(t.epollEvs[:0], max)
			if len(evs) == 0 {
				return 0, false
			}
			var buf []byte
			if len(evs) <= len(t.epollEvs) {
				buf = t.epollRaw[:12*len(evs)]
			} else {
				buf = make([]byte, 12*len(evs))
			}
			for i, ev := range evs {
				binary.LittleEndian.PutUint32(buf[12*i:], ev.Events)
				binary.LittleEndian.PutUint64(buf[12*i+4:], ev.Data)
			}
			if err := t.Proc.Space().CopyOut(uintptr(a[1]), buf); err != nil {
				return errno(err), true
			}
			return int64(len(evs)), true
		})
	}
	return t.withMask(maskAt, maskSize, wait)
}

// epollSleep is waitReady for epoll_wait: check until it is done, the
// timeout passes or a signal interrupts, sleeping between checks on the
// instance's wait queue through a vfs.Waiter, registered only once a
// check found nothing (and checked again then, so that a wake-up between
// the two is not missed). Without a timeout the sleep is Waiter.Sleep,
// one channel receive that the thread's interrupt also wakes, instead of
// a select between the wake-up, timer and signal channels.
func (t *Thread) epollSleep(ep *epoll.Instance, timeout time.Duration, check func() (int64, bool)) int64 {
	n, done := check()
	if done || timeout == 0 {
		return n
	}
	q := ep.WaitQueue()
	w := q.GetWaiter()
	w.Watch(q)
	var timer <-chan time.Time
	if timeout > 0 {
		tm := time.NewTimer(timeout)
		defer tm.Stop()
		timer = tm.C
	}
	for {
		if n, done = check(); done || timeout == 0 {
			break
		}
		if t.interrupted() {
			n = -eINTR
			break
		}
		t.sleepBegin()
		if timer == nil {
			w.Sleep(t.sigWake) // counts the switch if it waits (vfs.NoteWait)
		} else {
			t.noteWait()
			select {
			case <-w.C():
			case <-timer:
				timeout = 0
			case <-t.sigWake:
			}
		}
		t.sleepEnd()
	}
	w.Release(q)
	return n
}
