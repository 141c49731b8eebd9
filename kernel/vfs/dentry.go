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
// Lock order: VFS.mu; then directories' Dentry.dirMu, a parent's before
// its child's; then Dentry.mu; then the file systems' own locks.
//
// VFS.mu is the namespace lock. It keeps the shape of the tree still:
// where each dentry hangs (name, parent) and what is mounted where.
// Path walks hold it for reading. So do the calls that add or remove a
// name (create, mkdir, mknod, symlink, link, unlink, rmdir): each also
// holds the directory's dirMu for writing, like Linux's inode lock of
// the parent, so calls in different directories run in parallel and
// those in one directory one at a time. A walk that misses the dentry
// cache holds the directory's dirMu for reading while it asks the file
// system and caches the answer, so it never caches a name that a
// concurrent unlink has just removed. Rename and mount, which move
// dentries, hold VFS.mu for writing and so run alone: a walk never sees
// a half-done rename. Reads and writes of open files take none of these.
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
	files       atomic.Int64 // open files inside it (umount's EBUSY)
	writers     atomic.Int64 // open files that may write a regular file in it (remount read-only's EBUSY)
	detached    atomic.Bool  // unmounted: released with its last open file
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
// A file system mounted on a directory gets a root dentry with the same
// name and parent as the directory it covers, so walking ".." out of it
// and building getcwd's path need no special case; the covered dentry
// keeps its place in its parent and points at the mounted root. Each
// mount thus has its own dentries, which rules out bind mounts and
// mounting one file system instance twice (neither is supported).
type Dentry struct {
	inode Inode  // fixed
	mode  uint32 // file type bits, fixed
	mount *Mount // fixed

	name    string  // protected by VFS.mu
	parent  *Dentry // protected by VFS.mu; nil at the top of the tree
	mounted *Dentry // root of a file system mounted here; protected by VFS.mu
	// dead is set when the name is removed: by unlink and rmdir with
	// the parent's dirMu held (rmdir also holds this directory's, which
	// creators check it under), by rename with VFS.mu held for writing.
	dead  atomic.Bool
	dirMu dirLock // a directory's lock for adding and removing names (see VFS)
	// mu guards the cache of names; walks only read it, so they share
	// it with each other.
	mu       sync.RWMutex
	children map[string]*Dentry // protected by mu
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
	d := &Dentry{inode: ino, mode: a.Type(), mount: m, name: name, parent: parent}
	if m != nil {
		d.dirMu.fs = m.fs
	}
	return d
}

// dirLock is a directory dentry's lock for adding and removing names.
// When two mounts share a file system (FileSystem.shared), a directory
// has a dentry in each, so a writer also takes the file system's mutate
// lock, which serializes the changes made through either.
type dirLock struct {
	mu   sync.RWMutex
	fs   *FileSystem // nil for a file system the kernel mounted
	held bool        // the writer holds fs.mutate too; protected by mu
}

func (l *dirLock) Lock() {
	if l.fs != nil && l.fs.shared.Load() {
		l.fs.mutate.Lock()
		l.mu.Lock()
		l.held = true
		return
	}
	l.mu.Lock()
}

// lockNested takes a second directory's lock while the first is held
// (rmdir's victim): the first holds the file system's lock already.
func (l *dirLock) lockNested() { l.mu.Lock() }

func (l *dirLock) Unlock() {
	held := l.held
	l.held = false
	l.mu.Unlock()
	if held {
		l.fs.mutate.Unlock()
	}
}

func (l *dirLock) RLock()   { l.mu.RLock() }
func (l *dirLock) RUnlock() { l.mu.RUnlock() }

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
// Preconditions: v.mu is held, for reading or writing; d.dirMu is not
// held by the caller.
func (v *VFS) child(d *Dentry, name string) (*Dentry, error) {
	return v.childOf(d, name, false)
}

// childLocked is child for a caller holding d.dirMu for writing (or
// v.mu for writing, which keeps every dirMu free).
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
	_, volatile := dir.(Volatile)
	// A shared file system's names may have changed through the other
	// mount: its cached names are checked too.
	recheck := volatile || d.mount != nil && d.mount.fs != nil && d.mount.fs.shared.Load()
	d.mu.RLock()
	c := d.children[name]
	d.mu.RUnlock()
	if c == nil || recheck {
		if !locked && !volatile {
			// A volatile directory's names come and go by themselves
			// (procfs), never through the calls that take dirMu.
			d.dirMu.RLock()
			defer d.dirMu.RUnlock()
		}
		ino, err := dir.Lookup(name)
		if lookupHook != nil {
			lookupHook(d, name)
		}
		if err != nil {
			if recheck && c != nil && errors.Is(err, linux.ENOENT) {
				d.mu.Lock()
				if d.children[name] == c {
					delete(d.children, name)
				}
				d.mu.Unlock()
			}
			return nil, err
		}
		d.mu.Lock()
		c = d.children[name]
		if c == nil || c.inode != ino {
			c = newDentry(name, d, ino, d.mount)
			if d.children == nil {
				d.children = make(map[string]*Dentry)
			}
			d.children[name] = c
		}
		d.mu.Unlock()
	}
	for c.mounted != nil {
		c = c.mounted
	}
	return c, nil
}

// lookupHook, when set (by tests only), runs between a file system's
// Lookup and the caching of its answer.
var lookupHook func(dir *Dentry, name string)

// cached returns the cached dentry for name in d without following mounts.
// Preconditions: v.mu is held for writing, or for reading with d.dirMu.
func (d *Dentry) cached(name string) *Dentry {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.children[name]
}

// addChild caches a dentry for a new name in d.
// Preconditions: v.mu is held for writing, or for reading with d.dirMu
// held for writing.
func (d *Dentry) addChild(name string, ino Inode) *Dentry {
	c := newDentry(name, d, ino, d.mount)
	d.mu.Lock()
	if d.children == nil {
		d.children = make(map[string]*Dentry)
	}
	d.children[name] = c
	d.mu.Unlock()
	return c
}

// removeChild forgets name in d and marks its dentry dead.
// Preconditions: v.mu is held for writing, or for reading with d.dirMu
// held for writing (and, for a directory, its own dirMu too).
func (d *Dentry) removeChild(name string) {
	d.mu.Lock()
	if c := d.children[name]; c != nil {
		c.dead.Store(true)
		delete(d.children, name)
		if len(d.children) == 0 {
			// A Go map keeps its peak size: let an emptied
			// directory's go (rm -rf, a spool directory drained).
			d.children = nil
		}
	}
	d.mu.Unlock()
}

// dotdot returns the parent directory for "..", staying at root and at
// the top of the tree. The root dentry of a mount has the parent of the
// directory it covers, so this crosses mounts upwards.
// Preconditions: v.mu is held.
func (d *Dentry) dotdot(root *Dentry) *Dentry {
	if d == root || d.parent == nil {
		return d
	}
	p := d.parent
	for p.mounted != nil {
		p = p.mounted
	}
	return p
}

// busy reports whether d is a mount point or the root of a mount, which
// cannot be removed or renamed (EBUSY).
func (d *Dentry) busy() bool {
	return d.mounted != nil || d.mount.root == d
}
