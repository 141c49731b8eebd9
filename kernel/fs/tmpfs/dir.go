package tmpfs

import (
	"sort"
	"sync"
	"sync/atomic"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// dir is a directory. Its entries keep the order they were made in, each
// with a position that never changes, so a listing resumed at a position
// neither repeats nor skips an entry that stayed, whatever else came and
// went (Linux's tmpfs gives the same guarantee with its stable offsets).
type dir struct {
	node
	names   sync.RWMutex
	entries map[string]*entry // protected by names
	order   []*entry          // by position, with removed entries left in; protected by names
	removed int               // removed entries still in order; protected by names
	nextPos int64             // protected by names
	// size is len(entries), changed with names held for writing and
	// read without it: stat of a directory (and a create's check of
	// its parent's permissions) then does not wait for the changes of
	// its names.
	size atomic.Int64
}

type entry struct {
	name    string
	inode   inode
	pos     int64
	removed bool
}

// bogoDirent is the size Linux's tmpfs counts per directory entry in a
// directory's st_size (BOGO_DIRENT_SIZE).
const bogoDirent = 20

func (fs *FS) newDir(mode uint32, owner vfs.Owner) *dir {
	d := &dir{entries: make(map[string]*entry)}
	fs.initNode(&d.node, mode, owner)
	d.nlink.Store(2)
	return d
}

func (d *dir) Attr() vfs.Attr {
	d.mu.RLock()
	defer d.mu.RUnlock()
	a := d.attr()
	a.Size = (2 + d.size.Load()) * bogoDirent
	return a
}

func (d *dir) SetAttr(s *vfs.SetAttr) error {
	if s.Mask&vfs.SetSize != 0 {
		return linux.EISDIR
	}
	now := d.fs.now()
	d.mu.Lock()
	d.Apply(s, now)
	d.mu.Unlock()
	return nil
}

// Lookup returns the inode named name.
func (d *dir) Lookup(name string) (vfs.Inode, error) {
	d.names.RLock()
	defer d.names.RUnlock()
	if e := d.entries[name]; e != nil {
		return e.inode, nil
	}
	return nil, linux.ENOENT
}

// add links in under name at the next position.
// Preconditions: d.names is held for writing; name is free.
func (d *dir) add(name string, in inode) {
	e := &entry{name: name, inode: in, pos: d.nextPos}
	d.nextPos++
	d.entries[name] = e
	d.order = append(d.order, e)
	d.size.Store(int64(len(d.entries)))
}

// remove forgets name, leaving its slot in order until enough slots are
// dead to be worth compacting; the slot lets go of the inode at once, so
// an unlinked file is not kept by its old place in a listing. Compaction
// also gives back the memory of
// a directory that shrank: a Go map never shrinks, and the slice keeps
// its capacity, so a directory that once held 100,000 names would hold
// ~10 MB of Go heap for ever.
// Preconditions: d.names is held for writing; name exists.
func (d *dir) remove(name string) {
	e := d.entries[name]
	delete(d.entries, name)
	d.size.Store(int64(len(d.entries)))
	e.removed = true
	e.inode = nil
	d.removed++
	if d.removed > 32 && d.removed > len(d.order)/2 {
		live := make([]*entry, 0, len(d.order)-d.removed)
		entries := make(map[string]*entry, len(d.order)-d.removed)
		for _, e := range d.order {
			if !e.removed {
				live = append(live, e)
				entries[e.name] = e
			}
		}
		d.order, d.entries = live, entries
		d.removed = 0
	}
}

// Create makes a new inode under name.
func (d *dir) Create(name string, mode uint32, rdev uint64, owner vfs.Owner) (vfs.Inode, error) {
	in, err := d.NewInode(mode, rdev, owner)
	if err != nil {
		return nil, err
	}
	if err := d.AddInode(name, in); err != nil {
		return nil, err
	}
	return in, nil
}

// NewInode makes an inode for Create without a name
// (vfs.InodeMaker), outside any lock.
func (d *dir) NewInode(mode uint32, rdev uint64, owner vfs.Owner) (vfs.Inode, error) {
	return d.fs.newInode(mode, rdev, owner)
}

// AddInode names an inode made by NewInode.
func (d *dir) AddInode(name string, ino vfs.Inode) error {
	in, ok := ino.(inode)
	if !ok || in.base().fs != d.fs {
		return linux.EXDEV
	}
	now := d.fs.now()
	d.names.Lock()
	defer d.names.Unlock()
	if d.entries[name] != nil {
		return linux.EEXIST
	}
	d.add(name, in)
	if _, isDir := in.(*dir); isDir {
		d.changeLinks(1, now) // the new directory's ".."
	}
	d.touch(now)
	return nil
}

// Symlink makes a symbolic link under name.
func (d *dir) Symlink(name, target string, owner vfs.Owner) (vfs.Inode, error) {
	s := d.fs.newSymlink(target, owner)
	d.names.Lock()
	defer d.names.Unlock()
	if d.entries[name] != nil {
		return nil, linux.EEXIST
	}
	d.add(name, s)
	d.touch(d.fs.now())
	return s, nil
}

// Link gives target another name.
func (d *dir) Link(name string, target vfs.Inode) error {
	in, ok := target.(inode)
	if !ok || in.base().fs != d.fs {
		return linux.EXDEV
	}
	if _, isDir := in.(*dir); isDir {
		return linux.EPERM
	}
	d.names.Lock()
	defer d.names.Unlock()
	if d.entries[name] != nil {
		return linux.EEXIST
	}
	d.add(name, in)
	now := d.fs.now()
	in.base().changeLinks(1, now)
	linksChanged(in)
	d.touch(now)
	return nil
}

// Unlink removes a name of a non-directory.
func (d *dir) Unlink(name string) error {
	d.names.Lock()
	defer d.names.Unlock()
	e := d.entries[name]
	if e == nil {
		return linux.ENOENT
	}
	if _, isDir := e.inode.(*dir); isDir {
		return linux.EISDIR
	}
	in := e.inode
	d.remove(name)
	now := d.fs.now()
	in.base().changeLinks(-1, now)
	linksChanged(in)
	d.touch(now)
	return nil
}

// Rmdir removes an empty directory.
func (d *dir) Rmdir(name string) error {
	d.names.Lock()
	defer d.names.Unlock()
	e := d.entries[name]
	if e == nil {
		return linux.ENOENT
	}
	sub, ok := e.inode.(*dir)
	if !ok {
		return linux.ENOTDIR
	}
	if !sub.empty() {
		return linux.ENOTEMPTY
	}
	d.remove(name)
	now := d.fs.now()
	sub.changeLinks(-int(sub.nlink.Load()), now) // a removed directory has no links at all
	d.changeLinks(-1, now)
	d.touch(now)
	return nil
}

// empty reports whether the directory has no entries. The caller holds
// the names lock of its parent, which comes first in the lock order.
func (d *dir) empty() bool {
	d.names.RLock()
	defer d.names.RUnlock()
	return len(d.entries) == 0
}

// lockPair takes the names locks of a rename's two directories, the
// lower inode number first. The VFS holds both directories' locks, so
// no other writer of either can be waiting: this order only has to
// agree with itself.
func lockPair(a, b *dir) (unlock func()) {
	if a == b {
		a.names.Lock()
		return a.names.Unlock
	}
	if b.ino < a.ino {
		a, b = b, a
	}
	a.names.Lock()
	b.names.Lock()
	return func() {
		b.names.Unlock()
		a.names.Unlock()
	}
}

// linksChanged tells a regular file its link count changed: the last
// name gone, it may free its data.
func linksChanged(in inode) {
	if f, ok := in.(*file); ok {
		f.linksChanged()
	}
}

// Rename moves or swaps names. The VFS has checked the file types agree.
func (d *dir) Rename(oldName string, newDir vfs.Dir, newName string, flags uint32) error {
	nd, ok := newDir.(*dir)
	if !ok || nd.fs != d.fs {
		return linux.EXDEV
	}
	unlock := lockPair(d, nd)
	defer unlock()
	src := d.entries[oldName]
	if src == nil {
		return linux.ENOENT
	}
	dst := nd.entries[newName]
	now := d.fs.now()
	_, srcDir := src.inode.(*dir)
	if flags&linux.RENAME_EXCHANGE != 0 {
		if dst == nil {
			return linux.ENOENT
		}
		_, dstDir := dst.inode.(*dir)
		if srcDir != dstDir && d != nd {
			// The directory of the two changes parents.
			from, to := d, nd
			if dstDir {
				from, to = nd, d
			}
			from.changeLinks(-1, now)
			to.changeLinks(1, now)
		}
		src.inode, dst.inode = dst.inode, src.inode
		src.inode.base().changeLinks(0, now)
		dst.inode.base().changeLinks(0, now)
		d.touch(now)
		nd.touch(now)
		return nil
	}
	if dst != nil {
		if flags&linux.RENAME_NOREPLACE != 0 {
			return linux.EEXIST
		}
		if sub, ok := dst.inode.(*dir); ok {
			if !sub.empty() {
				return linux.ENOTEMPTY
			}
			sub.changeLinks(-int(sub.nlink.Load()), now)
			nd.changeLinks(-1, now)
		} else {
			dst.inode.base().changeLinks(-1, now)
			linksChanged(dst.inode)
		}
		nd.remove(newName)
	}
	moved := src.inode
	d.remove(oldName)
	nd.add(newName, moved)
	if srcDir && d != nd {
		d.changeLinks(-1, now)
		nd.changeLinks(1, now)
	}
	moved.base().changeLinks(0, now)
	d.touch(now)
	nd.touch(now)
	return nil
}

// ReadDir lists the entries from position pos on.
func (d *dir) ReadDir(pos int64, emit func(vfs.DirEntry) bool) error {
	d.names.RLock()
	defer d.names.RUnlock()
	i := sort.Search(len(d.order), func(i int) bool { return d.order[i].pos >= pos })
	for ; i < len(d.order); i++ {
		e := d.order[i]
		if e.removed {
			continue
		}
		n := e.inode.base()
		n.mu.Lock()
		typ := linux.DirentType(n.Mode)
		n.mu.Unlock()
		if !emit(vfs.DirEntry{Name: e.name, Ino: n.ino, Type: typ, Next: e.pos + 1}) {
			break
		}
	}
	return nil
}
