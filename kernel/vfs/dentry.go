package vfs

import (
	"errors"
	"sync"
	"sync/atomic"

	"shortbread/kernel/abi/linux"
)

// VFS is one mounted tree of file systems: the dentry cache over it, its
// mount table and the table of device numbers.
//
// Locking (Linux's directory-locking rules, without a namespace-wide lock
// on any path walk or change of names):
//
//   - Path walks take no lock of the tree. A directory's cached names are
//     a concurrent map read without locking (Dentry.children); a dentry's
//     name and parent are one atomic pointer (Dentry.link), and what is
//     mounted on it another (Dentry.mounted). A walk that misses the cache
//     holds the directory's dirMu for reading while it asks the file
//     system and caches the answer, so it never caches a name that a
//     concurrent unlink has just removed, and never misses one a create or
//     rename has just made.
//   - Calls that add or remove a name (create, mkdir, mknod, symlink,
//     link, unlink, rmdir) hold the directory's dirMu for writing, like
//     Linux's i_rwsem of the parent, so calls in different directories
//     run in parallel; rmdir also holds the victim's, which creators
//     check it under. In a directory whose file system keeps its names
//     safe itself (ConcurrentNames: tmpfs, ext4) they hold dirMu for reading
//     and a lock of the name's shard for writing instead, so calls on
//     different names in one directory run in parallel too; a walk
//     that asks such a file system for a name holds both for reading,
//     and what needs the whole directory still (rename, the removal of
//     the directory itself, a mount on it) holds dirMu for writing.
//   - A rename within one directory holds that directory's dirMu, and the
//     replaced directory's if one is removed; in a directory whose file
//     system also orders renames against its other changes
//     (ConcurrentRenames: ext4) it holds dirMu for reading and the locks
//     of its two names' shards for writing instead. A rename across directories
//     first takes the tree's renameMu (Linux's s_vfs_rename_mutex), which
//     keeps every directory's ancestors still, then both parents' dirMu,
//     an ancestor before its descendant (else the source's parent first),
//     checks that no directory would move into itself, then the
//     directories that move or go: source before target.
//   - A rename moves cached dentries under seq, a sequence lock, so that
//     getcwd and /proc paths built from several dentries are not torn.
//   - mu guards the mount table, the device table and the file system
//     types; mount and umount hold it for writing, and mount also holds
//     the mount point's dirMu to check it was not removed.
//
// Lock order: VFS.mu; renameMu; directories' dirMu as above; the file
// systems' own locks. Reads and writes of open files take none of these.
type VFS struct {
	mu       sync.RWMutex
	root     *Dentry
	devices  map[devKey]Opener // protected by mu
	fifos    fifoTable
	mounts   uint64            // mounts made so far, for mount IDs; protected by mu
	table    []*Mount          // attached mounts in mount order; protected by mu
	fsTypes  map[string]FSType // what mount(2) can make; protected by mu
	pinned   func(*Mount) bool // reports a mount some process's cwd or root is in
	claiming map[uint64]bool   // block devices being mounted; protected by mu

	renameMu sync.Mutex // held by renames across directories
	// seq is odd while a rename moves dentries; seqMu orders the writers.
	seqMu sync.Mutex
	seq   atomic.Uint64
}

type devKey struct {
	typ  uint32 // S_IFCHR or S_IFBLK
	rdev uint64
}

// Mount is one file system mounted in the tree.
type Mount struct {
	id          uint64  // statx's stx_mnt_id
	root        *Dentry // the file system's root as mounted here
	point       *Dentry // the dentry it covers; nil for the first mount
	fsType      string
	source      string      // mount(2)'s source, as /proc/mounts shows it
	dev         uint64      // the block device it was made from, or 0
	fs          *FileSystem // what mount(2) made; nil for a root given by the kernel
	vfs         *VFS        // the tree it is in (inotify events take its lock)
	readOnly    bool
	mntFlags    atomic.Uint32 // nosuid, nodev, noexec, the access-time mode (mntflags.go)
	files       atomic.Int64  // open files inside it (umount's EBUSY)
	writers     atomic.Int64  // open files that may write a regular file in it (remount read-only's EBUSY)
	detached    atomic.Bool   // unmounted: released with its last open file
	releaseOnce sync.Once
}

// ID returns the mount's number, unique in its tree (stx_mnt_id).
func (m *Mount) ID() uint64 { return m.id }

// FSType returns the file system type name given at mount time.
func (m *Mount) FSType() string { return m.fsType }

// ReadOnly reports whether the mount refuses changes (MS_RDONLY).
func (m *Mount) ReadOnly() bool { return m.readOnly }

// Dentry is a name in the mounted tree bound to its inode: the unit of
// path walks, the current directory and getcwd. Dentries are cached for
// as long as their names exist; a name removed while in use (an open or
// current directory) leaves its dentry "dead" but usable.
//
// A file system mounted on a directory gets a root dentry that takes its
// name and place from the directory it covers, so walking ".." out of it
// and building getcwd's path need no special case; the covered dentry
// keeps its place in its parent and points at the mounted root. Each
// mount thus has its own dentries, which rules out bind mounts and
// mounting one file system instance twice (neither is supported).
type Dentry struct {
	inode Inode  // fixed
	mode  uint32 // file type bits, fixed
	mount *Mount // fixed
	// covers is, for a mount's root, the directory it is mounted on:
	// set by mount, changed by a move (MS_MOVE) under v.mu and seq.
	covers atomic.Pointer[Dentry]

	// link is where the dentry hangs: replaced as a whole by rename, so a
	// walk reads a name and parent that belonged together.
	link    atomic.Pointer[dlink]
	mounted atomic.Pointer[Dentry] // root of a file system mounted here
	// dead is set when the name is removed: by unlink and rmdir with
	// the parent's dirMu held (rmdir also holds this directory's, which
	// creators check it under), by rename with the parents' held (and
	// this directory's).
	dead  atomic.Bool
	dirMu dirLock // a directory's lock for adding and removing names (see VFS)
	// children caches names found in a directory: string to *Dentry.
	// Reads take no lock; changes are made under dirMu (for writing, or
	// for reading by a walk caching what the file system answered).
	children sync.Map
}

// dlink is a dentry's name and parent; the parent is nil at the top of
// the tree.
type dlink struct {
	name   string
	parent *Dentry
}

// where returns d's name and parent, a mount root's being those of the
// directory it covers.
func (d *Dentry) where() *dlink {
	return d.top().link.Load()
}

// top returns the directory d stands for in its parent: d, or for a
// mount's root the directory the mount covers (that of the mount under
// it, for one mounted on a mount's root).
func (d *Dentry) top() *Dentry {
	for c := d.covers.Load(); c != nil; c = d.covers.Load() {
		d = c
	}
	return d
}

func (d *Dentry) name() string    { return d.where().name }
func (d *Dentry) parent() *Dentry { return d.where().parent }

// cached returns the cached dentry for name in d without following
// mounts, or nil.
func (d *Dentry) cached(name string) *Dentry {
	if c, ok := d.children.Load(name); ok {
		return c.(*Dentry)
	}
	return nil
}

// followMounts returns what a walk reaching d sees: the root of the
// file system mounted last on it, or d.
func followMounts(d *Dentry) *Dentry {
	for m := d.mounted.Load(); m != nil; m = d.mounted.Load() {
		d = m
	}
	return d
}

// Inode returns the dentry's inode.
func (d *Dentry) Inode() Inode { return d.inode }

// Mount returns the mount the dentry belongs to.
func (d *Dentry) Mount() *Mount { return d.mount }

// IsDir reports whether the dentry is a directory.
func (d *Dentry) IsDir() bool { return d.mode == linux.S_IFDIR }

// Type returns the file type bits (linux.S_IFMT) of the inode.
func (d *Dentry) Type() uint32 { return d.mode }

func newDentry(name string, parent *Dentry, ino Inode, m *Mount) *Dentry {
	a := ino.Attr()
	return newDentryOf(name, parent, ino, a.Type(), m)
}

// newDentryOf is newDentry for an inode whose file type is known.
func newDentryOf(name string, parent *Dentry, ino Inode, typ uint32, m *Mount) *Dentry {
	d := &Dentry{inode: ino, mode: typ, mount: m}
	d.link.Store(&dlink{name: name, parent: parent})
	if m != nil {
		d.dirMu.fs = m.fs
	}
	if _, ok := ino.(ConcurrentNames); ok && typ == linux.S_IFDIR {
		d.dirMu.concurrent = true
		d.dirMu.names = new(nameLocks)
		_, d.dirMu.renames = ino.(ConcurrentRenames)
	}
	return d
}

// New returns a tree whose root is the directory root of a file system
// of type fsType.
func New(root Inode, fsType string) (*VFS, error) {
	if _, ok := root.(Dir); !ok {
		return nil, linux.ENOTDIR
	}
	m := &Mount{id: 1, fsType: fsType, source: fsType}
	d := newDentry("/", nil, root, m)
	m.root = d
	v := &VFS{root: d, devices: make(map[devKey]Opener), mounts: 1, table: []*Mount{m},
		fsTypes: make(map[string]FSType)}
	m.vfs = v
	return v, nil
}

// NewFS is New for a root that a file system type's Make made (a disk
// mounted as the root: root= on the kernel command line). The root
// mount holds fs, so sync, remount and release reach it, and
// /proc/mounts shows source and fsType as mount(2) would have. Flags
// are mount(2)'s (MS_RDONLY and the per-mount ones).
func NewFS(fs *FileSystem, fsType, source string, dev uint64, flags uint32) (*VFS, error) {
	v, err := New(fs.Root, fsType)
	if err != nil {
		return nil, err
	}
	m := v.root.mount
	m.source, m.dev, m.fs, m.readOnly = source, dev, fs, flags&linux.MS_RDONLY != 0
	m.mntFlags.Store(mountFlags(flags, 0, false))
	fs.mounts.Store(1)
	return v, nil
}

// Root returns the root of the tree, the first process's root and cwd.
func (v *VFS) Root() *Dentry { return v.root }

// RegisterDevice makes device nodes of type typ (linux.S_IFCHR or
// S_IFBLK) and number rdev open o, wherever the node lives (a tmpfs
// node from mknod or the initramfs works like devfs's own).
func (v *VFS) RegisterDevice(typ uint32, rdev uint64, o Opener) {
	v.mu.Lock()
	v.devices[devKey{typ, rdev}] = o
	v.mu.Unlock()
}

func (v *VFS) device(typ uint32, rdev uint64) Opener {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.devices[devKey{typ, rdev}]
}

// child returns the dentry for name in directory d, from the cache or by
// asking the file system, and follows mounts on it.
// Preconditions: d.dirMu is not held by the caller.
func (v *VFS) child(d *Dentry, name string) (*Dentry, error) {
	return v.childOf(d, name, false)
}

// childLocked is child for a caller holding d.dirMu for writing.
func (v *VFS) childLocked(d *Dentry, name string) (*Dentry, error) {
	return v.childOf(d, name, true)
}

func (v *VFS) childOf(d *Dentry, name string, locked bool) (*Dentry, error) {
	dir, ok := d.inode.(Dir)
	if !ok {
		return nil, linux.ENOTDIR
	}
	if len(name) > linux.NAME_MAX {
		return nil, linux.ENAMETOOLONG
	}
	c := d.cached(name)
	if c == nil || d.recheck() {
		var err error
		if c, err = v.lookupFS(d, dir, name, c, locked); err != nil {
			return nil, err
		}
	}
	return followMounts(c), nil
}

// recheck reports whether d's cached names must be checked with the file
// system on every walk: a volatile directory's come and go by themselves
// (procfs), and a shared file system's may have changed through the
// other mount.
func (d *Dentry) recheck() bool {
	if _, volatile := d.inode.(Volatile); volatile {
		return true
	}
	return d.mount != nil && d.mount.fs != nil && d.mount.fs.shared.Load()
}

// lookupFS asks the file system for name in d (cached as c, or nil) and
// caches the answer.
func (v *VFS) lookupFS(d *Dentry, dir Dir, name string, c *Dentry, locked bool) (*Dentry, error) {
	if _, volatile := dir.(Volatile); !locked && !volatile {
		// A volatile directory's names never change through the calls
		// that take dirMu.
		s := d.dirMu.rlockName(name)
		defer d.dirMu.runlockName(s)
	}
	ino, err := dir.Lookup(name)
	if lookupHook != nil {
		lookupHook(d, name)
	}
	if err != nil {
		if c != nil && errors.Is(err, linux.ENOENT) {
			d.children.CompareAndDelete(name, c)
		}
		return nil, err
	}
	// Walks of a volatile directory, or several that missed the cache
	// together, race to cache the name: the first dentry for the inode
	// stays, so that each inode has one.
	for {
		cur := d.cached(name)
		if cur != nil && cur.inode == ino {
			return cur, nil
		}
		n := newDentry(name, d, ino, d.mount)
		if cur == nil {
			if _, loaded := d.children.LoadOrStore(name, n); !loaded {
				return n, nil
			}
		} else if d.children.CompareAndSwap(name, cur, n) {
			return n, nil
		}
	}
}

// lookupHook, when set (by tests only), runs between a file system's
// Lookup and the caching of its answer.
var lookupHook func(dir *Dentry, name string)

// addChild caches a dentry for a new name in d.
// Preconditions: d.dirMu is held for writing.
func (d *Dentry) addChild(name string, ino Inode) *Dentry {
	c := newDentry(name, d, ino, d.mount)
	d.children.Store(name, c)
	return c
}

// removeChild forgets name in d and marks its dentry dead.
// Preconditions: d.dirMu is held for writing (and, for a directory, its
// own dirMu too).
func (d *Dentry) removeChild(name string) {
	if c := d.cached(name); c != nil {
		c.dead.Store(true)
		d.children.CompareAndDelete(name, c)
	}
}

// dotdot returns the parent directory for "..", staying at root and at
// the top of the tree. The root dentry of a mount has the parent of the
// directory it covers, so this crosses mounts upwards.
func (d *Dentry) dotdot(root *Dentry) *Dentry {
	p := d.parent()
	if d == root || p == nil {
		return d
	}
	return followMounts(p)
}

// busy reports whether d is a mount point or the root of a mount, which
// cannot be removed or renamed (EBUSY).
func (d *Dentry) busy() bool {
	return d.mounted.Load() != nil || d.mount.root == d
}
