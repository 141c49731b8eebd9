package mqueue

// The mqueue file system (mount -t mqueue none /dev/mqueue): every named
// queue is a file of its name, as Linux's ipc/mqueue.c shows them. There
// is one instance, the queues mq_open sees, so every mount shows the same
// files (Linux's mounts in one IPC namespace share a superblock). Reading
// a file gives the queue's status line; creating a regular file with
// open(2) creates a queue with the default attributes, and the descriptor
// works with the mq_* calls; unlink removes a name as mq_unlink does,
// under the sticky directory's rule; chmod and chown change who may open
// the queue. Directories, links, device nodes and renames are EPERM, as
// the directory has no such operations on Linux.

import (
	"sort"
	"sync"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
	"shortbread/kernel/wallclock"
)

// Magic is the file system's statfs type (MQUEUE_MAGIC).
const Magic = 0x19800202

const (
	fileSize   = 80 // a queue file's st_size (Linux's FILENT_SIZE)
	direntSize = 20 // what each name adds to the directory's st_size (DIRENT_SIZE)
	rootIno    = 1
	// defaultLimit is RLIMIT_MSGQUEUE's default (MQ_BYTES_MAX): the
	// limit a queue created by open(2) is charged against, as the VFS
	// does not pass the caller's own.
	defaultLimit = 819200
)

var (
	dev  uint64 // st_dev of every queue file; see SetDev
	inos = uint64(rootIno)
	root = &rootDir{node: node{ino: rootIno, Meta: vfs.Meta{Mode: linux.S_IFDIR | 0o1777}}}
)

func init() {
	now := timespecNow()
	root.Atime, root.Mtime, root.Ctime = now, now, now
}

// SetDev sets the device number stat shows for the file system: the
// kernel gives it an anonymous device at boot, before any queue exists.
func SetDev(d uint64) { dev = d }

// Root returns the file system's root directory, to mount.
func Root() vfs.Inode { return root }

func timespecNow() linux.Timespec {
	t := wallclock.Now()
	return linux.Timespec{Sec: t.Unix(), Nsec: int64(t.Nanosecond())}
}

// node is a queue's file, or the root directory.
type node struct {
	q    *Queue // nil for the root
	ino  uint64
	size int64

	mu       sync.Mutex
	vfs.Meta // protected by mu
}

// newNode makes queue q's file; the caller holds package mu.
func newNode(q *Queue, perm uint32, owner vfs.Owner) *node {
	inos++
	now := timespecNow()
	return &node{q: q, ino: inos, size: fileSize,
		Meta: vfs.Meta{Mode: linux.S_IFREG | perm, UID: owner.UID, GID: owner.GID, Atime: now, Mtime: now, Ctime: now}}
}

func (n *node) Attr() vfs.Attr {
	n.mu.Lock()
	defer n.mu.Unlock()
	return vfs.Attr{Dev: dev, Ino: n.ino, Mode: n.Mode, Nlink: 1, UID: n.UID, GID: n.GID,
		Size: n.size, Blksize: 4096, Atime: n.Atime, Mtime: n.Mtime, Ctime: n.Ctime}
}

// SetAttr changes mode, owner and times; a size is recorded and means
// nothing else (Linux's simple_setattr on a queue's inode).
func (n *node) SetAttr(s *vfs.SetAttr) error {
	now := timespecNow()
	n.mu.Lock()
	defer n.mu.Unlock()
	if s.Mask&vfs.SetSize != 0 {
		n.size = s.Size
	}
	n.Apply(s, now)
	return nil
}

// touch sets the access, change and modification times to now: a
// message sent or received (Linux's mq_timedsend and mq_timedreceive).
func (n *node) touch() {
	now := timespecNow()
	n.mu.Lock()
	n.Atime, n.Mtime, n.Ctime = now, now, now
	n.mu.Unlock()
}

// OpenFor opens the queue through its file: a descriptor the mq_* calls
// accept, as one from mq_open.
func (n *node) OpenFor(_ *vfs.Ctx, _ uint32) (vfs.File, error) {
	mu.Lock()
	defer mu.Unlock()
	if n.q == nil || n.q.freed {
		return nil, linux.ENOENT
	}
	n.q.refs++
	return &File{Q: n.q}, nil
}

// Open is OpenFor with no caller.
func (n *node) Open(flags uint32) (vfs.File, error) { return n.OpenFor(nil, flags) }

// rootDir is the directory of the queues' names.
type rootDir struct{ node }

// changed records a name added or removed (package mu held): the
// directory's times, and its size of 20 bytes a name.
func (r *rootDir) changed(names int) {
	now := timespecNow()
	r.mu.Lock()
	r.Atime, r.Mtime, r.Ctime = now, now, now
	r.size = int64(names) * direntSize
	r.mu.Unlock()
}

func (r *rootDir) Attr() vfs.Attr {
	a := r.node.Attr()
	a.Nlink = 2
	return a
}

// Volatile: mq_open and mq_unlink change the names without the VFS.
func (r *rootDir) Volatile() {}

func (r *rootDir) Lookup(name string) (vfs.Inode, error) {
	mu.Lock()
	defer mu.Unlock()
	if q := names[name]; q != nil {
		return q.node, nil
	}
	return nil, linux.ENOENT
}

// Create makes a queue with the default attributes, charged to its owner
// against the default RLIMIT_MSGQUEUE; only root passes queues_max. Other
// file types are EPERM.
func (r *rootDir) Create(name string, mode uint32, _ uint64, owner vfs.Owner) (vfs.Inode, error) {
	if mode&linux.S_IFMT != linux.S_IFREG {
		return nil, linux.EPERM
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	if names[name] != nil {
		return nil, linux.EEXIST
	}
	q, err := createLocked(name, owner, mode, limits.MsgDefault, limits.MsgsizeDefault, defaultLimit, owner.UID != 0)
	if err != nil {
		return nil, err
	}
	return q.node, nil
}

// Unlink removes a name, as mq_unlink; the VFS has applied the sticky
// directory's rule.
func (r *rootDir) Unlink(name string) error {
	mu.Lock()
	defer mu.Unlock()
	q := names[name]
	if q == nil {
		return linux.ENOENT
	}
	unlinkLocked(name, q)
	return nil
}

func (r *rootDir) Symlink(string, string, vfs.Owner) (vfs.Inode, error) { return nil, linux.EPERM }
func (r *rootDir) Link(string, vfs.Inode) error                         { return linux.EPERM }
func (r *rootDir) Rmdir(string) error                                   { return linux.EPERM }
func (r *rootDir) Rename(string, vfs.Dir, string, uint32) error         { return linux.EPERM }

// ReadDir lists the names in the order the queues were made: a name's
// position is its inode number, so positions survive names coming and
// going.
func (r *rootDir) ReadDir(pos int64, emit func(vfs.DirEntry) bool) error {
	type entry struct {
		name string
		ino  uint64
	}
	mu.Lock()
	es := make([]entry, 0, len(names))
	for name, q := range names {
		if int64(q.node.ino) >= pos {
			es = append(es, entry{name, q.node.ino})
		}
	}
	mu.Unlock()
	sort.Slice(es, func(i, j int) bool { return es[i].ino < es[j].ino })
	for _, e := range es {
		if !emit(vfs.DirEntry{Name: e.name, Ino: e.ino, Type: linux.DT_REG, Next: int64(e.ino) + 1}) {
			break
		}
	}
	return nil
}

// StatFS reports the file system's magic number and no blocks.
func (r *rootDir) StatFS() vfs.StatFS {
	return vfs.StatFS{Type: Magic, Bsize: 4096, Namelen: nameMax}
}
