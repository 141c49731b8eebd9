package vfs

// inotify(7): watches on inodes, and the events the VFS's operations
// raise for them. An event on a file goes to the watches on its inode
// and, with the file's name, to those on its parent directory, as
// Linux's fsnotify does for a directory's children. The calls that raise
// events are in this package (open, read, write, close, create, unlink,
// rename, attribute changes, unmount); an instance is an open file whose
// reads return struct inotify_event records.

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"shortbread/kernel/abi/linux"
)

// Event bits and watch flags (linux/inotify.h).
const (
	InAccess       = 0x1
	InModify       = 0x2
	InAttrib       = 0x4
	InCloseWrite   = 0x8
	InCloseNowrite = 0x10
	InOpen         = 0x20
	InMovedFrom    = 0x40
	InMovedTo      = 0x80
	InCreate       = 0x100
	InDelete       = 0x200
	InDeleteSelf   = 0x400
	InMoveSelf     = 0x800
	InUnmount      = 0x2000
	InQOverflow    = 0x4000
	InIgnored      = 0x8000
	InAllEvents    = 0xfff

	InOnlyDir     = 0x01000000
	InDontFollow  = 0x02000000
	InExclUnlink  = 0x04000000
	InMaskCreate  = 0x10000000
	InMaskAdd     = 0x20000000
	InIsDir       = 0x40000000
	InOneShot     = 0x80000000
	inWatchFlags  = InOnlyDir | InDontFollow | InExclUnlink | InMaskCreate | InMaskAdd | InOneShot
	inEventHeader = 16 // sizeof(struct inotify_event) without its name
)

// InotifyLimits are /proc/sys/fs/inotify's files.
type InotifyLimits struct {
	MaxQueuedEvents  int
	MaxUserInstances int
	MaxUserWatches   int
}

var (
	watchMu sync.Mutex
	// watches are the watches on each watched inode; protected by
	// watchMu.
	watches = map[Inode][]*iwatch{}
	// watching counts them, for a check without the lock on every
	// read and write.
	watching      atomic.Int64
	inotifyLimits = InotifyLimits{MaxQueuedEvents: 16384, MaxUserInstances: 128, MaxUserWatches: 8192}
	userInstances = map[uint32]int{} // protected by watchMu
	userWatches   = map[uint32]int{} // protected by watchMu
	moveCookie    atomic.Uint32
)

// GetInotifyLimits returns the limits; SetInotifyLimits changes them.
func GetInotifyLimits() InotifyLimits {
	watchMu.Lock()
	defer watchMu.Unlock()
	return inotifyLimits
}

func SetInotifyLimits(l InotifyLimits) {
	watchMu.Lock()
	inotifyLimits = l
	watchMu.Unlock()
	queuedMax.Store(int64(l.MaxQueuedEvents))
}

type iwatch struct {
	wd    int
	mask  uint32
	in    *Inotify
	ino   Inode
	mount *Mount
}

type inotifyEvent struct {
	wd     int32
	mask   uint32
	cookie uint32
	name   string
}

func (e *inotifyEvent) size() int {
	if e.name == "" {
		return inEventHeader
	}
	// The name with its NUL, padded to a multiple of the header.
	return inEventHeader + (len(e.name)+1+inEventHeader-1)/inEventHeader*inEventHeader
}

// Inotify is one inotify instance: its watches and its event queue.
type Inotify struct {
	uid    uint32
	mu     sync.Mutex
	nextWD int             // protected by mu
	byWD   map[int]*iwatch // protected by watchMu
	queue  []inotifyEvent  // protected by mu
	bytes  int             // protected by mu
	q      Queue
}

// NewInotify makes an instance for user uid (inotify_init1); EMFILE past
// max_user_instances. flags may hold IN_NONBLOCK (O_NONBLOCK) and
// IN_CLOEXEC, which the caller applies to the descriptor.
func NewInotify(uid uint32, flags int) (*OpenFile, error) {
	if flags&^(linux.O_NONBLOCK|linux.O_CLOEXEC) != 0 {
		return nil, linux.EINVAL
	}
	watchMu.Lock()
	if userInstances[uid] >= inotifyLimits.MaxUserInstances {
		watchMu.Unlock()
		return nil, linux.EMFILE
	}
	userInstances[uid]++
	watchMu.Unlock()
	in := &Inotify{uid: uid, nextWD: 1, byWD: map[int]*iwatch{}}
	return NewFile(NewAnonInode(0o600, Owner{UID: uid}), in, linux.O_RDONLY|uint32(flags)&linux.O_NONBLOCK), nil
}

// InotifyFrom returns the instance behind an open file, or EINVAL.
func InotifyFrom(f *OpenFile) (*Inotify, error) {
	in, ok := f.Impl().(*Inotify)
	if !ok {
		return nil, linux.EINVAL
	}
	return in, nil
}

// AddWatch is inotify_add_watch(2) on the file path names: the caller's
// read permission on it is needed. It returns the watch descriptor.
func (v *VFS) AddWatch(c *Ctx, in *Inotify, dir *Dentry, path string, mask uint32) (int, error) {
	if mask&InAllEvents == 0 {
		return 0, linux.EINVAL
	}
	if mask&InMaskAdd != 0 && mask&InMaskCreate != 0 {
		return 0, linux.EINVAL
	}
	atFlags := 0
	if mask&InDontFollow != 0 {
		atFlags = linux.AT_SYMLINK_NOFOLLOW
	}
	d, err := v.Lookup(c, dir, path, atFlags)
	if err != nil {
		return 0, err
	}
	if mask&InOnlyDir != 0 && !d.IsDir() {
		return 0, linux.ENOTDIR
	}
	a := d.inode.Attr()
	if !c.Cred.Permits(&a, linux.R_OK) {
		return 0, linux.EACCES
	}
	watchMu.Lock()
	defer watchMu.Unlock()
	for _, w := range watches[d.inode] {
		if w.in != in {
			continue
		}
		if mask&InMaskCreate != 0 {
			return 0, linux.EEXIST
		}
		if mask&InMaskAdd != 0 {
			w.mask |= mask &^ InMaskAdd
		} else {
			w.mask = mask
		}
		return w.wd, nil
	}
	if userWatches[in.uid] >= inotifyLimits.MaxUserWatches {
		return 0, linux.ENOSPC
	}
	in.mu.Lock()
	w := &iwatch{wd: in.nextWD, mask: mask &^ InMaskCreate, in: in, ino: d.inode, mount: d.mount}
	in.nextWD++
	in.mu.Unlock()
	watches[d.inode] = append(watches[d.inode], w)
	in.byWD[w.wd] = w
	userWatches[in.uid]++
	watching.Add(1)
	return w.wd, nil
}

// RmWatch is inotify_rm_watch(2): EINVAL for a descriptor not in use.
func (in *Inotify) RmWatch(wd int) error {
	watchMu.Lock()
	w := in.byWD[wd]
	if w == nil {
		watchMu.Unlock()
		return linux.EINVAL
	}
	removeWatchLocked(w)
	watchMu.Unlock()
	in.push(inotifyEvent{wd: int32(wd), mask: InIgnored})
	return nil
}

// removeWatchLocked forgets w. Preconditions: watchMu is held.
func removeWatchLocked(w *iwatch) {
	ws := watches[w.ino]
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(watches, w.ino)
	} else {
		watches[w.ino] = ws
	}
	delete(w.in.byWD, w.wd)
	userWatches[w.in.uid]--
	watching.Add(-1)
}

// push queues an event, merging it with an identical last one and
// replacing the tail with IN_Q_OVERFLOW when the queue is full.
func (in *Inotify) push(e inotifyEvent) {
	in.mu.Lock()
	n := len(in.queue)
	switch {
	case n > 0 && in.queue[n-1] == e:
		in.mu.Unlock()
		return
	case n >= int(queuedMax.Load()):
		if n > 0 && in.queue[n-1].mask == InQOverflow {
			in.mu.Unlock()
			return
		}
		e = inotifyEvent{wd: -1, mask: InQOverflow}
	}
	in.queue = append(in.queue, e)
	in.bytes += e.size()
	in.mu.Unlock()
	in.q.Notify()
}

// queuedMax is max_queued_events, which push reads without watchMu.
var queuedMax atomic.Int64

func init() { queuedMax.Store(int64(inotifyLimits.MaxQueuedEvents)) }

// notifyInode delivers the event mask (one event bit, with IN_ISDIR
// when about a directory) with name and cookie to the watches on ino
// that asked for it. IN_DELETE_SELF and IN_UNMOUNT end every watch on
// the inode, and an IN_ONESHOT watch ends with its first event; an
// ended watch queues IN_IGNORED.
func notifyInode(ino Inode, mask, cookie uint32, name string) {
	if ino == nil {
		return
	}
	type delivery struct {
		w       *iwatch
		hit     bool
		ignored bool
	}
	var out []delivery
	watchMu.Lock()
	for _, w := range append([]*iwatch(nil), watches[ino]...) {
		hit := w.mask&mask&InAllEvents != 0 || mask&InUnmount != 0
		ends := mask&(InDeleteSelf|InUnmount) != 0 || hit && w.mask&InOneShot != 0
		if ends {
			removeWatchLocked(w)
		}
		if hit || ends {
			out = append(out, delivery{w, hit, ends})
		}
	}
	watchMu.Unlock()
	for _, d := range out {
		if d.hit {
			d.w.in.push(inotifyEvent{wd: int32(d.w.wd), mask: mask, cookie: cookie, name: name})
		}
		if d.ignored {
			d.w.in.push(inotifyEvent{wd: int32(d.w.wd), mask: InIgnored})
		}
	}
}

// notifyFile raises mask for d: on its inode, and with its name on its
// parent's (reads, writes, opens, closes, attribute changes).
func notifyFile(d *Dentry, mask uint32) {
	if watching.Load() == 0 || d == nil || d.mount == nil || d.mount.vfs == nil {
		return
	}
	if d.IsDir() {
		mask |= InIsDir
	}
	notifyInode(d.inode, mask, 0, "")
	if l := d.where(); l.parent != nil && l.parent.mount == d.mount && mask&(InDeleteSelf|InMoveSelf) == 0 {
		notifyInode(l.parent.inode, mask, 0, l.name)
	}
}

// notifyChild raises mask (IN_CREATE, IN_DELETE, IN_MOVED_*) on
// directory p for its child name.
func notifyChild(p *Dentry, mask, cookie uint32, name string, isDir bool) {
	if watching.Load() == 0 || p == nil {
		return
	}
	if isDir {
		mask |= InIsDir
	}
	notifyInode(p.inode, mask, cookie, name)
}

// unmounted ends the watches on the inodes of m (and of the other mounts
// of its file system, gone before it) with IN_UNMOUNT.
func unmounted(m *Mount) {
	if watching.Load() == 0 {
		return
	}
	watchMu.Lock()
	var ended []*iwatch
	for _, ws := range watches {
		for _, w := range ws {
			if w.mount == m || m.fs != nil && w.mount != nil && w.mount.fs == m.fs {
				ended = append(ended, w)
			}
		}
	}
	for _, w := range ended {
		removeWatchLocked(w)
	}
	watchMu.Unlock()
	for _, w := range ended {
		mask := uint32(InUnmount)
		if a := w.ino.Attr(); a.Type() == linux.S_IFDIR {
			mask |= InIsDir // as Linux 6.1 reports it (not for IN_DELETE_SELF, IN_MOVE_SELF)
		}
		w.in.push(inotifyEvent{wd: int32(w.wd), mask: mask})
		w.in.push(inotifyEvent{wd: int32(w.wd), mask: InIgnored})
	}
}

// Read returns whole events; a buffer too small for the first is
// EINVAL.
func (in *Inotify) Read(b Blocking, p []byte, _ int64) (int, error) {
	var out int
	err := WaitFor(&in.q, b, func() bool {
		in.mu.Lock()
		defer in.mu.Unlock()
		return len(in.queue) > 0
	})
	if err != nil {
		return 0, err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	for len(in.queue) > 0 {
		e := in.queue[0]
		n := e.size()
		if out+n > len(p) {
			if out == 0 {
				return 0, linux.EINVAL
			}
			break
		}
		r := p[out : out+n]
		clear(r)
		binary.LittleEndian.PutUint32(r[0:], uint32(e.wd))
		binary.LittleEndian.PutUint32(r[4:], e.mask)
		binary.LittleEndian.PutUint32(r[8:], e.cookie)
		binary.LittleEndian.PutUint32(r[12:], uint32(n-inEventHeader))
		copy(r[inEventHeader:], e.name)
		out += n
		in.queue = in.queue[1:]
		in.bytes -= n
	}
	return out, nil
}

// Write is EINVAL: an inotify descriptor has no write.
func (in *Inotify) Write(Blocking, []byte, int64) (int, error) { return 0, linux.EINVAL }

// Queued returns the bytes waiting (FIONREAD).
func (in *Inotify) Queued() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.bytes
}

func (in *Inotify) Readiness() uint32 {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.queue) > 0 {
		return linux.POLLIN | linux.POLLRDNORM
	}
	return 0
}

func (in *Inotify) Watch(wake Wake) func() { return in.q.Watch(wake) }

// AsyncIO: O_ASYNC signals new events, as inotify's fasync does.
func (in *Inotify) AsyncIO() {}

// Release drops every watch of the instance.
func (in *Inotify) Release() {
	watchMu.Lock()
	for _, w := range in.byWD {
		removeWatchLocked(w)
	}
	userInstances[in.uid]--
	watchMu.Unlock()
}

// InotifyWatches counts the watches in place, for tests of their release.
func InotifyWatches() int64 { return watching.Load() }

// nextCookie is a rename's cookie, pairing IN_MOVED_FROM and IN_MOVED_TO.
func nextCookie() uint32 { return moveCookie.Add(1) }
