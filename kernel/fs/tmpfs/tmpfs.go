// Package tmpfs is an in-memory file system: regular files, directories,
// symlinks, device nodes, FIFOs and sockets, with hard links, inode
// numbers and timestamps, implementing the inode interfaces of package
// vfs. File data lives in page-sized chunks allocated on write, so a
// file extended by ftruncate or a write far past its end holds holes
// that cost nothing. FromCPIO builds a tree from the newc initramfs.
//
// Locking: each directory's names lock (dir.names) guards its contents
// (names and positions); each inode's mu guards its attributes and data,
// except what opens, closes and stat(2) of one file from several CPUs
// touch, which are atomics: a file's open and access counts, link
// count and page count.
// Lock order: a directory's names before those of a directory inside it,
// then an inode's mu. The VFS locks a directory for every change to it,
// so changes to different directories run in parallel. Only a rename
// takes the names locks of two directories that need not be parent and
// child; the VFS holds both directories' locks (and the tree's rename
// lock when they differ) around it, so no other call takes either names
// lock for writing meanwhile, and look-ups take one names lock at a time.
package tmpfs

import (
	"sync"
	"sync/atomic"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/mm"
	"shortbread/kernel/vfs"
)

// Options configure a new file system.
type Options struct {
	Dev   uint64           // st_dev of every inode (linux.MakeDev)
	Clock func() time.Time // source of timestamps; nil means time.Now
	Mode  uint32           // permissions of the root directory; 0 means 01777, as Linux's tmpfs
	UID   uint32           // owner of the root directory
	GID   uint32
	// Phys holds file data; nil means Go memory (mm.HeapPhys). The kernel
	// gives physical frames, so that MAP_SHARED can map file pages.
	Phys mm.Phys
	// Available returns how many more pages the file system may take
	// (free memory less what the kernel keeps back), for statfs; nil
	// means none are known.
	Available func() uint64
	// Limit is the most pages the file system's files may hold (its
	// size=, Linux's default being half of memory); 0 means no limit
	// but free memory. A write or fallocate past it fails with ENOSPC
	// (pages stores through a shared mapping make are not refused).
	Limit uint64
}

// FS is one tmpfs instance.
type FS struct {
	phys    mm.Phys
	dev     uint64
	clock   func() time.Time
	nextIno atomic.Uint64
	root    *dir
	avail   func() uint64
	// used counts the pages of the files that hold their own (each
	// file's mm.Shm counts in it: CountIn), what statfs reports as used.
	// It moves with every page a file gains or loses, on any CPU, as the
	// frame counts of package mm already do.
	used  atomic.Int64
	limit uint64 // Options.Limit
}

// full reports whether the file system may take no more pages.
func (fs *FS) full() bool {
	return fs.limit != 0 && uint64(max(fs.used.Load(), 0)) >= fs.limit
}

// New returns an empty file system.
func New(o Options) *FS {
	fs := &FS{dev: o.Dev, clock: o.Clock, phys: o.Phys, avail: o.Available, limit: o.Limit}
	if fs.phys == nil {
		fs.phys = &mm.HeapPhys{}
	}
	if fs.clock == nil {
		fs.clock = time.Now
	}
	mode := o.Mode & 0o7777
	if mode == 0 {
		mode = 0o1777
	}
	fs.root = fs.newDir(linux.S_IFDIR|mode, vfs.Owner{UID: o.UID, GID: o.GID})
	return fs
}

// Root returns the root directory, to mount or to make a vfs.VFS with.
func (fs *FS) Root() vfs.Inode { return fs.root }

func (fs *FS) now() linux.Timespec {
	t := fs.clock()
	return linux.Timespec{Sec: t.Unix(), Nsec: int64(t.Nanosecond())}
}

// node holds what every tmpfs inode has.
type node struct {
	fs       *FS
	ino      uint64
	mu       sync.RWMutex // read-locked by Attr: path walks check every directory's permissions
	vfs.Meta              // protected by mu
	// nlink is changed with mu held and may be read without it: a
	// file's open count, an atomic, is checked against it (file.Opened).
	nlink atomic.Uint32
	// stamp is the time of a directory's last change of names not yet
	// written to Meta, in nanoseconds since the epoch plus one (0: none).
	// Creates and removals set it without taking mu, which every path
	// walk's permission check (Attr) takes for reading: two CPUs making
	// files in one directory then share no lock for its times. Whatever
	// writes Meta's times folds it in first (foldStamp), so a stamp is
	// always newer than they are, and Attr shows it as mtime and ctime.
	stamp atomic.Int64
	rdev  uint64
	btime linux.Timespec
}

// inode is implemented by every tmpfs inode type.
type inode interface {
	vfs.Inode
	base() *node
}

func (n *node) base() *node { return n }

func (fs *FS) initNode(n *node, mode uint32, owner vfs.Owner) {
	now := fs.now()
	*n = node{
		fs: fs, ino: fs.nextIno.Add(1), btime: now,
		Meta: vfs.Meta{Mode: mode, UID: owner.UID, GID: owner.GID, Atime: now, Mtime: now, Ctime: now},
	}
	n.nlink.Store(1)
}

// attr fills the attributes common to every type.
// Preconditions: n.mu is held.
func (n *node) attr() vfs.Attr {
	a := vfs.Attr{
		Dev: n.fs.dev, Ino: n.ino, Mode: n.Mode, Nlink: n.nlink.Load(), UID: n.UID, GID: n.GID,
		Rdev: n.rdev, Blksize: pageSize, Atime: n.Atime, Mtime: n.Mtime, Ctime: n.Ctime, Btime: n.btime,
	}
	if p := n.stamp.Load(); p != 0 {
		a.Mtime = fromStamp(p)
		a.Ctime = a.Mtime
	}
	return a
}

// changeLinks adds delta to the link count and sets ctime.
func (n *node) changeLinks(delta int, now linux.Timespec) {
	n.mu.Lock()
	n.foldStamp()
	n.nlink.Store(uint32(int(n.nlink.Load()) + delta))
	n.Ctime = now
	n.mu.Unlock()
}

// touch sets mtime and ctime, as a change of contents does.
func (n *node) touch(now linux.Timespec) {
	n.mu.Lock()
	n.foldStamp()
	n.Mtime, n.Ctime = now, now
	n.mu.Unlock()
}

// touchNames sets a directory's mtime and ctime for a change of its
// names, without mu (see stamp).
func (n *node) touchNames(now linux.Timespec) {
	n.stamp.Store(now.Sec*1e9 + now.Nsec + 1)
}

// foldStamp writes a pending stamp to Meta's times.
// Preconditions: n.mu is held for writing.
func (n *node) foldStamp() {
	if n.stamp.Load() == 0 {
		return
	}
	if p := n.stamp.Swap(0); p != 0 {
		n.Mtime = fromStamp(p)
		n.Ctime = n.Mtime
	}
}

func fromStamp(p int64) linux.Timespec {
	p--
	return linux.Timespec{Sec: p / 1e9, Nsec: p % 1e9}
}

// symlink is a symbolic link.
type symlink struct {
	node
	target string
}

// shortSymlink is the longest target Linux's tmpfs keeps inline,
// allocating no page (SHORT_SYMLINK_LEN).
const shortSymlink = 128

func (s *symlink) Attr() vfs.Attr {
	s.mu.RLock()
	defer s.mu.RUnlock()
	a := s.attr()
	a.Size = int64(len(s.target))
	if len(s.target) > shortSymlink {
		a.Blocks = pageSize / 512
	}
	return a
}

func (s *symlink) SetAttr(a *vfs.SetAttr) error {
	if a.Mask&vfs.SetSize != 0 {
		return linux.EINVAL
	}
	now := s.fs.now()
	s.mu.Lock()
	s.Apply(a, now)
	s.mu.Unlock()
	return nil
}

// Readlink returns the target.
func (s *symlink) Readlink() (string, error) { return s.target, nil }

// special is a device node, FIFO or socket: attributes only; the VFS
// finds what opening it means.
type special struct{ node }

func (s *special) Attr() vfs.Attr {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.attr()
}

func (s *special) SetAttr(a *vfs.SetAttr) error {
	if a.Mask&vfs.SetSize != 0 {
		return linux.EINVAL
	}
	now := s.fs.now()
	s.mu.Lock()
	s.Apply(a, now)
	s.mu.Unlock()
	return nil
}

// newInode makes an inode of the type in mode, unlinked (nlink 1 for a
// file, 2 for a directory, counting its "." entry).
func (fs *FS) newInode(mode uint32, rdev uint64, owner vfs.Owner) (inode, error) {
	switch mode & linux.S_IFMT {
	case linux.S_IFREG:
		f := &file{seals: linux.F_SEAL_SEAL}
		fs.initNode(&f.node, mode, owner)
		return f, nil
	case linux.S_IFDIR:
		return fs.newDir(mode, owner), nil
	case linux.S_IFCHR, linux.S_IFBLK, linux.S_IFIFO, linux.S_IFSOCK:
		s := &special{}
		fs.initNode(&s.node, mode, owner)
		s.rdev = rdev
		return s, nil
	}
	return nil, linux.EINVAL
}

func (fs *FS) newSymlink(target string, owner vfs.Owner) *symlink {
	s := &symlink{target: target}
	fs.initNode(&s.node, linux.S_IFLNK|0o777, owner)
	return s
}

// StatFS reports the file system for statfs: blocks are pages, those in
// use are the pages its files hold, and the free ones are what it may
// still take. Linux's tmpfs without a size= limit is bounded by half of
// memory; this one by free memory, which every tmpfs instance (and every
// process) draws on, so the figures of two instances overlap. There is no
// limit on inodes, reported as Linux reports nr_inodes=0: zero files.
func (fs *FS) StatFS() vfs.StatFS {
	used := uint64(max(fs.used.Load(), 0))
	var free uint64
	if fs.avail != nil {
		free = fs.avail()
	}
	blocks := used + free
	if fs.limit != 0 {
		// As Linux reports a tmpfs with a size: the size, and what is
		// left of it (here also no more than memory has left).
		blocks = fs.limit
		free = min(free, fs.limit-min(used, fs.limit))
	}
	return vfs.StatFS{Type: vfs.TmpfsMagic, Bsize: pageSize, Blocks: blocks, Bfree: free, Bavail: free, Namelen: 255}
}

// StatFS is the file system's statfs, answered by its root directory.
func (d *dir) StatFS() vfs.StatFS { return d.fs.StatFS() }
