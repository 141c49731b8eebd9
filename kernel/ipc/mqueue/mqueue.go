// Package mqueue is POSIX message queues (mq_overview(7)): named queues
// of prioritised messages, opened as file descriptors, with Linux's
// limits (/proc/sys/fs/mqueue and RLIMIT_MSGQUEUE, charged to the user
// who created the queue) and its notification on arrival (mq_notify).
// The system calls are kernel/proc/sys_mqueue.go; they decode and check,
// and this package does the work.
package mqueue

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// Limits are /proc/sys/fs/mqueue's files, with Linux's defaults.
type Limits struct {
	QueuesMax      int // queues_max: queues in the system (root may pass it)
	MsgMax         int // msg_max: mq_maxmsg without CAP_SYS_RESOURCE
	MsgsizeMax     int // msgsize_max: mq_msgsize without CAP_SYS_RESOURCE
	MsgDefault     int // msg_default: mq_maxmsg when no attributes are given
	MsgsizeDefault int // msgsize_default
}

// Hard limits not even root may pass (HARD_MSGMAX, HARD_MSGSIZEMAX), and
// the number of priorities (MQ_PRIO_MAX).
const (
	hardMsgMax     = 65536
	hardMsgsizeMax = 16 << 20
	PrioMax        = 32768
	nameMax        = 255
)

var (
	mu     sync.Mutex
	limits = Limits{QueuesMax: 256, MsgMax: 10, MsgsizeMax: 8192, MsgDefault: 10, MsgsizeDefault: 8192}
	names  = map[string]*Queue{} // protected by mu
	count  int                   // queues alive, named or not; protected by mu
	// userBytes is each user's RLIMIT_MSGQUEUE charge; protected by mu.
	userBytes = map[uint32]uint64{}
)

// GetLimits returns the current limits.
func GetLimits() Limits {
	mu.Lock()
	defer mu.Unlock()
	return limits
}

// SetLimits replaces them (writes to /proc/sys/fs/mqueue).
func SetLimits(l Limits) {
	mu.Lock()
	limits = l
	mu.Unlock()
}

// Attr is struct mq_attr.
type Attr struct {
	Flags, MaxMsg, MsgSize, CurMsgs int64
}

type message struct {
	prio uint32
	data []byte
}

// Notification is who mq_notify registered: Fire is called (without
// locks held) when a message arrives in an empty queue with no receiver
// waiting, with the sender's pid and uid; the registration is then gone.
type Notification struct {
	PID  int // the registering process, for the status line
	Sig  int // 0 for SIGEV_NONE
	Fire func(senderPID int, senderUID uint32)
	// Removed, if set, is called (without locks held) when the
	// registration goes without firing: mq_notify(NULL) or the close of
	// the descriptor it came through.
	Removed func()
	Thread  bool  // SIGEV_THREAD, for the status line
	via     *File // the descriptor it was registered through
}

// Queue is one message queue.
type Queue struct {
	node    *node // its file in the mqueue file system: mode, owner, times
	creator uint32
	maxMsg  int
	msgSize int
	charge  uint64 // RLIMIT_MSGQUEUE bytes charged to creator

	mu       sync.Mutex
	msgs     []message // by priority, highest first; FIFO within one; protected by mu
	bytes    int       // protected by mu
	refs     int       // open descriptors; protected by package mu
	named    bool      // still in the names table; protected by package mu
	freed    bool      // given back (no name, no descriptor); protected by package mu
	notify   *Notification
	rwaiters int // receivers waiting; protected by mu
	q        vfs.Queue
}

// chargeOf is what a queue costs its creator under RLIMIT_MSGQUEUE, as
// Linux 6.1 computes it (mqueue_get_inode): a struct msg_msg (48 bytes)
// per message, a priority tree node (40) per message up to MQ_PRIO_MAX,
// and the messages' bytes.
func chargeOf(maxMsg, msgSize int) uint64 {
	return uint64(maxMsg)*48 + uint64(min(maxMsg, PrioMax))*40 + uint64(maxMsg)*uint64(msgSize)
}

// checkName accepts a queue name as mq_open passes it (musl and glibc
// strip the leading '/'): one path component.
func checkName(name string) error {
	switch {
	case len(name) > nameMax:
		return linux.ENAMETOOLONG
	case name == "" || name == "." || name == "..":
		return linux.ENOENT
	}
	for i := 0; i < len(name); i++ {
		if name[i] == '/' {
			return linux.EACCES
		}
	}
	return nil
}

// OpenArgs is mq_open's request.
type OpenArgs struct {
	Name   string
	Flags  int // O_RDONLY/O_WRONLY/O_RDWR, O_CREAT, O_EXCL, O_NONBLOCK
	Mode   uint32
	Attr   *Attr // nil: the defaults
	Cred   vfs.Cred
	Umask  uint32
	Limit  uint64 // the caller's RLIMIT_MSGQUEUE
	Capped bool   // the caller lacks CAP_SYS_RESOURCE: msg_max and msgsize_max apply
}

// Open opens or creates the queue a names, returning the queue and the
// access it was opened for.
func Open(a OpenArgs) (*Queue, error) {
	if err := checkName(a.Name); err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	q := names[a.Name]
	if q != nil {
		if a.Flags&linux.O_CREAT != 0 && a.Flags&linux.O_EXCL != 0 {
			return nil, linux.EEXIST
		}
		if err := q.permit(a.Cred, a.Flags); err != nil {
			return nil, err
		}
		q.refs++
		return q, nil
	}
	if a.Flags&linux.O_CREAT == 0 {
		return nil, linux.ENOENT
	}
	maxMsg, msgSize := limits.MsgDefault, limits.MsgsizeDefault
	if a.Attr != nil {
		if a.Attr.MaxMsg <= 0 || a.Attr.MsgSize <= 0 ||
			a.Attr.MaxMsg > hardMsgMax || a.Attr.MsgSize > hardMsgsizeMax ||
			(a.Capped && (a.Attr.MaxMsg > int64(limits.MsgMax) || a.Attr.MsgSize > int64(limits.MsgsizeMax))) {
			return nil, linux.EINVAL
		}
		maxMsg, msgSize = int(a.Attr.MaxMsg), int(a.Attr.MsgSize)
	}
	owner := vfs.Owner{UID: a.Cred.EUID, GID: a.Cred.EGID}
	q, err := createLocked(a.Name, owner, a.Mode&^a.Umask, maxMsg, msgSize, a.Limit, a.Capped)
	if err != nil {
		return nil, err
	}
	q.refs = 1
	return q, nil
}

// createLocked makes the queue name, charging owner's user; the caller
// holds package mu.
func createLocked(name string, owner vfs.Owner, mode uint32, maxMsg, msgSize int, limit uint64, capped bool) (*Queue, error) {
	if count >= limits.QueuesMax && capped {
		return nil, linux.ENOSPC
	}
	charge := chargeOf(maxMsg, msgSize)
	if used := userBytes[owner.UID]; used+charge < used || used+charge > limit {
		return nil, linux.EMFILE
	}
	userBytes[owner.UID] += charge
	count++
	q := &Queue{
		creator: owner.UID,
		maxMsg:  maxMsg,
		msgSize: msgSize,
		charge:  charge,
		named:   true,
	}
	q.node = newNode(q, mode&0o777, owner)
	names[name] = q
	root.changed(len(names))
	return q, nil
}

// permit checks the access mq_open asks for against the queue's mode.
func (q *Queue) permit(c vfs.Cred, flags int) error {
	var want uint32
	switch flags & linux.O_ACCMODE {
	case linux.O_RDONLY:
		want = 4
	case linux.O_WRONLY:
		want = 2
	case linux.O_RDWR:
		want = 6
	default:
		return linux.EINVAL
	}
	if c.Superuser() {
		return nil
	}
	a := q.node.Attr()
	perm := a.Mode & 7
	switch {
	case c.EUID == a.UID:
		perm = a.Mode >> 6 & 7
	case c.EGID == a.GID || inGroups(c.Groups, a.GID):
		perm = a.Mode >> 3 & 7
	}
	if perm&want != want {
		return linux.EACCES
	}
	return nil
}

func inGroups(gs []uint32, g uint32) bool {
	for _, x := range gs {
		if x == g {
			return true
		}
	}
	return false
}

// Unlink removes a name; the queue lives on until its last descriptor
// closes. Only its owner (or root) may remove it.
func Unlink(name string, c vfs.Cred) error {
	if err := checkName(name); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	q := names[name]
	if q == nil {
		return linux.ENOENT
	}
	if !c.Superuser() && c.EUID != q.node.Attr().UID {
		return linux.EACCES // Linux: the parent directory (/dev/mqueue, 1777 sticky)
	}
	unlinkLocked(name, q)
	return nil
}

// unlinkLocked removes a queue's name; the caller holds package mu.
func unlinkLocked(name string, q *Queue) {
	delete(names, name)
	q.named = false
	q.freeLocked()
	root.changed(len(names))
}

// freeLocked gives back a queue that has no name and no descriptor
// (package mu held).
func (q *Queue) freeLocked() {
	if q.refs > 0 || q.named || q.freed {
		return
	}
	q.freed = true
	count--
	userBytes[q.creator] -= q.charge
	if userBytes[q.creator] == 0 {
		delete(userBytes, q.creator)
	}
	q.mu.Lock()
	q.msgs, q.bytes = nil, 0
	q.mu.Unlock()
}

// Attr returns the queue's attributes (mq_getattr); Flags is the
// caller's to fill in (O_NONBLOCK belongs to the descriptor).
func (q *Queue) Attr() Attr {
	q.mu.Lock()
	defer q.mu.Unlock()
	return Attr{MaxMsg: int64(q.maxMsg), MsgSize: int64(q.msgSize), CurMsgs: int64(len(q.msgs))}
}

// Wait is how a send or receive may block: the descriptor's O_NONBLOCK
// and the thread's interruption, and an absolute CLOCK_REALTIME
// deadline (zero: none).
type Wait struct {
	vfs.Blocking
	Deadline time.Time
	Now      func() time.Time // the realtime clock
}

// wait blocks until ready reports true or the wait gives up: EAGAIN
// (non-blocking), ETIMEDOUT (the deadline) or EINTR.
func (q *Queue) wait(w Wait, ready func() bool) error {
	if ready() {
		return nil
	}
	if w.NonBlock {
		return linux.EAGAIN
	}
	ch := make(chan struct{}, 1)
	defer q.q.Watch(vfs.WakeChan(ch))()
	var expired <-chan time.Time
	if !w.Deadline.IsZero() {
		d := w.Deadline.Sub(w.Now())
		if d <= 0 {
			return linux.ETIMEDOUT
		}
		t := time.NewTimer(d)
		defer t.Stop()
		expired = t.C
	}
	for {
		if ready() {
			return nil
		}
		vfs.NoteWait(w.Intr)
		select {
		case <-ch:
		case <-w.Intr:
			return linux.EINTR
		case <-expired:
			if ready() {
				return nil
			}
			return linux.ETIMEDOUT
		}
	}
}

// Send queues msg with priority prio (mq_timedsend), waiting for room
// as w allows. sender names who sent it, for a notification.
func (q *Queue) Send(w Wait, msg []byte, prio uint32, senderPID int, senderUID uint32) error {
	if len(msg) > q.msgSize {
		return linux.EMSGSIZE
	}
	if prio >= PrioMax {
		return linux.EINVAL
	}
	m := message{prio: prio, data: append([]byte(nil), msg...)}
	var fire *Notification
	err := q.wait(w, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		if len(q.msgs) >= q.maxMsg {
			return false
		}
		// After the last message of the same or a higher priority.
		i := sort.Search(len(q.msgs), func(i int) bool { return q.msgs[i].prio < prio })
		q.msgs = append(q.msgs, message{})
		copy(q.msgs[i+1:], q.msgs[i:])
		q.msgs[i] = m
		q.bytes += len(msg)
		if len(q.msgs) == 1 && q.rwaiters == 0 && q.notify != nil {
			fire, q.notify = q.notify, nil
		}
		return true
	})
	if err != nil {
		return err
	}
	q.node.touch()
	q.q.Notify()
	if fire != nil && fire.Fire != nil {
		fire.Fire(senderPID, senderUID)
	}
	return nil
}

// Receive takes the oldest message of the highest priority into buf
// (mq_timedreceive), waiting for one as w allows, and returns its length
// and priority. A buffer shorter than the queue's message size is
// EMSGSIZE.
func (q *Queue) Receive(w Wait, buf []byte) (int, uint32, error) {
	if len(buf) < q.msgSize {
		return 0, 0, linux.EMSGSIZE
	}
	q.mu.Lock()
	q.rwaiters++
	q.mu.Unlock()
	var m message
	err := q.wait(w, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		if len(q.msgs) == 0 {
			return false
		}
		m = q.msgs[0]
		q.msgs[0] = message{}
		q.msgs = q.msgs[1:]
		q.bytes -= len(m.data)
		return true
	})
	q.mu.Lock()
	q.rwaiters--
	q.mu.Unlock()
	if err != nil {
		return 0, 0, err
	}
	q.node.touch()
	q.q.Notify()
	return copy(buf, m.data), m.prio, nil
}

// SetNotify registers n (mq_notify) through descriptor f, or removes
// the registration of process pid when n is nil. A queue has one
// registration: another is EBUSY.
func (f *File) SetNotify(pid int, n *Notification) error {
	q := f.Q
	q.mu.Lock()
	if n == nil {
		var gone *Notification
		if q.notify != nil && q.notify.PID == pid {
			gone, q.notify = q.notify, nil
		}
		q.mu.Unlock()
		if gone != nil && gone.Removed != nil {
			gone.Removed()
		}
		return nil
	}
	defer q.mu.Unlock()
	if q.notify != nil {
		return linux.EBUSY
	}
	n.via = f
	q.notify = n
	return nil
}

// Status is what read(2) on a queue descriptor gives, as Linux's
// mqueue_read_file formats it.
func (q *Queue) Status() []byte {
	q.mu.Lock()
	defer q.mu.Unlock()
	sig, pid := 0, 0
	if q.notify != nil {
		sig, pid = q.notify.Sig, q.notify.PID
	}
	notify := 0
	switch {
	case q.notify != nil && q.notify.Thread:
		notify = 2 // SIGEV_THREAD
	case q.notify != nil && sig == 0:
		notify = 1 // SIGEV_NONE
	}
	return fmt.Appendf(nil, "QSIZE:%-10d NOTIFY:%-5d SIGNO:%-5d NOTIFY_PID:%-6d\n", q.bytes, notify, sig, pid)
}

// Readiness is poll's view: readable with a message waiting, writable
// with room.
func (q *Queue) Readiness() uint32 {
	q.mu.Lock()
	defer q.mu.Unlock()
	var r uint32
	if len(q.msgs) > 0 {
		r |= linux.POLLIN | linux.POLLRDNORM
	}
	if len(q.msgs) < q.maxMsg {
		r |= linux.POLLOUT | linux.POLLWRNORM
	}
	return r
}

// Watch registers ch for readiness changes.
func (q *Queue) Watch(wake vfs.Wake) func() { return q.q.Watch(wake) }

// Stats counts the queues alive and the RLIMIT_MSGQUEUE bytes charged,
// for tests of their release.
func Stats() (queues int, charged uint64) {
	mu.Lock()
	defer mu.Unlock()
	for _, b := range userBytes {
		charged += b
	}
	return count, charged
}

// File is an open queue descriptor's file: read(2) gives the status
// line, poll and epoll see the queue's readiness, and the last close
// drops the descriptor's reference and a notification registered
// through it.
type File struct {
	Q *Queue
}

// NewFile makes the open file of a queue opened with flags (the access
// mode and O_NONBLOCK): its inode is the queue's file in the mqueue file
// system, as on Linux.
func NewFile(q *Queue, flags int) *vfs.OpenFile {
	return vfs.NewFile(q.node, &File{Q: q}, uint32(flags)&(linux.O_ACCMODE|linux.O_NONBLOCK))
}

// From returns the queue behind an open file, or EBADF: mq_* calls on
// another kind of descriptor fail so.
func From(f *vfs.OpenFile) (*File, error) {
	mf, ok := f.Impl().(*File)
	if !ok {
		return nil, linux.EBADF
	}
	return mf, nil
}

func (f *File) Read(_ vfs.Blocking, p []byte, off int64) (int, error) {
	s := f.Q.Status()
	if off >= int64(len(s)) {
		return 0, nil
	}
	return copy(p, s[off:]), nil
}

// Lseek moves the position in the status line as in a file of the queue
// file's st_size (Linux's default_llseek), so reads go on from where the
// last one stopped and the second read of the line is end of file.
func (f *File) Lseek(pos, off int64, whence int) (int64, error) {
	return vfs.SeekSized(pos, off, whence, f.Q.node.Attr().Size)
}

// Write is EINVAL: a queue file has no write operation.
func (f *File) Write(vfs.Blocking, []byte, int64) (int, error) { return 0, linux.EINVAL }

func (f *File) Release() {
	f.Q.mu.Lock()
	var gone *Notification
	if f.Q.notify != nil && f.Q.notify.via == f {
		gone, f.Q.notify = f.Q.notify, nil
	}
	f.Q.mu.Unlock()
	if gone != nil && gone.Removed != nil {
		gone.Removed()
	}
	mu.Lock()
	f.Q.refs--
	f.Q.freeLocked()
	mu.Unlock()
}

func (f *File) Readiness() uint32          { return f.Q.Readiness() }
func (f *File) Watch(wake vfs.Wake) func() { return f.Q.Watch(wake) }
