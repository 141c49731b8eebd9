package tmpfs

import (
	"hash/maphash"
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
//
// The names are spread over shards by a hash of the name, each with its
// own lock, map and list in position order, so that creates and removals
// of different names on different CPUs do not wait for each other (the
// VFS lets them run at once: ConcurrentNames). Positions come from one
// counter, taken under the shard's lock, so each shard's list stays in
// order; a listing merges the shards' lists by position. A rename holds
// every shard of its directories, a listing every shard for reading.
type dir struct {
	node
	// shards are made as names first fall in them: a directory costs
	// 128 bytes for the table, plus 64 for each shard it used.
	shards  [dirShards]atomic.Pointer[dirShard]
	nextPos atomic.Int64
	// size is the number of names. It is read without any lock: stat of
	// a directory (and a create's check of its parent's permissions)
	// then does not wait for the changes of its names.
	size atomic.Int64
}

// dirShards is how many shards a directory's names are spread over.
const dirShards = 16

// dirShard is one shard of a directory's names (64 bytes: a cache line).
type dirShard struct {
	mu      sync.RWMutex
	entries map[string]*entry // protected by mu
	order   []*entry          // by position, with removed entries left in; protected by mu
	removed int               // removed entries still in order; protected by mu
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

var nameSeed = maphash.MakeSeed()

func (fs *FS) newDir(mode uint32, owner vfs.Owner) *dir {
	d := &dir{}
	fs.initNode(&d.node, mode, owner)
	d.nlink.Store(2)
	return d
}

func shardOf(name string) int { return int(maphash.String(nameSeed, name) % dirShards) }

// shard returns the shard of name, making it if need be.
func (d *dir) shard(name string) *dirShard {
	return d.shardAt(shardOf(name))
}

func (d *dir) shardAt(i int) *dirShard {
	p := &d.shards[i]
	if s := p.Load(); s != nil {
		return s
	}
	p.CompareAndSwap(nil, new(dirShard))
	return p.Load()
}

// lock takes the shard's lock for writing; a change holds it for a few
// hundred instructions, so a waiter spins first (vfs.LockSpinning).
func (s *dirShard) lock()  { vfs.LockSpinning(s.mu.TryLock, s.mu.Lock) }
func (s *dirShard) rlock() { vfs.LockSpinning(s.mu.TryRLock, s.mu.RLock) }

// shardSet is what lockAll locked.
type shardSet [dirShards]*dirShard

// lockAll takes the lock of every shard, in shard order: for writing
// (a rename) every shard, made if need be, so no name can come or go;
// for reading (a listing, an emptiness check) those that exist. A shard
// made after a reader looked holds names made during its listing, which
// a listing may leave out.
func (d *dir) lockAll(write bool) *shardSet {
	var set shardSet
	for i := range set {
		if write {
			set[i] = d.shardAt(i)
			set[i].lock()
		} else if set[i] = d.shards[i].Load(); set[i] != nil {
			set[i].rlock()
		}
	}
	return &set
}

func unlockAll(set *shardSet, write bool) {
	for _, s := range set {
		switch {
		case s == nil:
		case write:
			s.mu.Unlock()
		default:
			s.mu.RUnlock()
		}
	}
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
	d.foldStamp()
	d.Apply(s, now)
	d.mu.Unlock()
	return nil
}

// Lookup returns the inode named name.
func (d *dir) Lookup(name string) (vfs.Inode, error) {
	s := d.shards[shardOf(name)].Load()
	if s == nil {
		return nil, linux.ENOENT
	}
	s.rlock()
	defer s.mu.RUnlock()
	if e := s.entries[name]; e != nil {
		return e.inode, nil
	}
	return nil, linux.ENOENT
}

// add links in under name at the next position.
// Preconditions: s is name's shard of d, locked for writing; name is free.
func (d *dir) add(s *dirShard, name string, in inode) {
	e := &entry{name: name, inode: in, pos: d.nextPos.Add(1) - 1}
	if s.entries == nil {
		s.entries = make(map[string]*entry)
	}
	s.entries[name] = e
	s.order = append(s.order, e)
	d.size.Add(1)
}

// compactMin is how many removed slots a shard keeps at least before it
// compacts its list.
const compactMin = 4

// remove forgets name, leaving its slot in the shard's order until
// enough slots are dead to be worth compacting; the slot lets go of the
// inode at once, so an unlinked file is not kept by its old place in a
// listing. Compaction also gives back the memory of a directory that
// shrank: a Go map never shrinks, and the slice keeps its capacity, so a
// directory that once held 100,000 names would hold ~10 MB of Go heap
// for ever.
// Preconditions: s is name's shard of d, locked for writing; name exists.
func (d *dir) remove(s *dirShard, name string) {
	e := s.entries[name]
	delete(s.entries, name)
	d.size.Add(-1)
	e.removed = true
	e.inode = nil
	s.removed++
	if s.removed > compactMin && s.removed > len(s.order)/2 {
		live := make([]*entry, 0, len(s.order)-s.removed)
		entries := make(map[string]*entry, len(s.order)-s.removed)
		for _, e := range s.order {
			if !e.removed {
				live = append(live, e)
				entries[e.name] = e
			}
		}
		s.order, s.entries = live, entries
		s.removed = 0
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

// ConcurrentNames tells the VFS that creates and removals of different
// names may run at once (vfs.ConcurrentNames): each holds only its
// name's shard, and only to change the table.
func (d *dir) ConcurrentNames() {}

// AddInode names an inode made by NewInode.
func (d *dir) AddInode(name string, ino vfs.Inode) error {
	in, ok := ino.(inode)
	if !ok || in.base().fs != d.fs {
		return linux.EXDEV
	}
	_, isDir := in.(*dir)
	s := d.shard(name)
	s.lock()
	if s.entries[name] != nil {
		s.mu.Unlock()
		return linux.EEXIST
	}
	d.add(s, name, in)
	s.mu.Unlock()
	d.changed(isDir, 1)
	return nil
}

// changed updates the directory's times (and link count, for a
// subdirectory's "..") after a change of its names, outside the shard's
// lock, and but for a subdirectory's link count without mu
// (touchNames). Two changes at once may store their times in either
// order; both are within a clock tick of the last change.
func (d *dir) changed(subdir bool, links int) {
	now := d.fs.now()
	if subdir {
		d.changeLinks(links, now)
	}
	d.touchNames(now)
}

// Symlink makes a symbolic link under name.
func (d *dir) Symlink(name, target string, owner vfs.Owner) (vfs.Inode, error) {
	sl := d.fs.newSymlink(target, owner)
	s := d.shard(name)
	s.lock()
	if s.entries[name] != nil {
		s.mu.Unlock()
		return nil, linux.EEXIST
	}
	d.add(s, name, sl)
	s.mu.Unlock()
	d.changed(false, 0)
	return sl, nil
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
	s := d.shard(name)
	s.lock()
	if s.entries[name] != nil {
		s.mu.Unlock()
		return linux.EEXIST
	}
	d.add(s, name, in)
	// The link count rises with the name, so that an unlink of another
	// name of the file sees either both or neither.
	now := d.fs.now()
	in.base().changeLinks(1, now)
	s.mu.Unlock()
	linksChanged(in)
	d.touchNames(now)
	return nil
}

// Unlink removes a name of a non-directory.
func (d *dir) Unlink(name string) error {
	s := d.shard(name)
	s.lock()
	e := s.entries[name]
	if e == nil {
		s.mu.Unlock()
		return linux.ENOENT
	}
	if _, isDir := e.inode.(*dir); isDir {
		s.mu.Unlock()
		return linux.EISDIR
	}
	in := e.inode
	d.remove(s, name)
	// The link count drops with the name, so that a link(2) of the file
	// through another name sees either both or neither.
	now := d.fs.now()
	in.base().changeLinks(-1, now)
	s.mu.Unlock()
	linksChanged(in)
	d.touchNames(now)
	return nil
}

// Rmdir removes an empty directory.
func (d *dir) Rmdir(name string) error {
	s := d.shard(name)
	s.lock()
	defer s.mu.Unlock()
	e := s.entries[name]
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
	d.remove(s, name)
	now := d.fs.now()
	sub.changeLinks(-int(sub.nlink.Load()), now) // a removed directory has no links at all
	d.changeLinks(-1, now)
	d.touch(now)
	return nil
}

// empty reports whether the directory has no entries. The caller holds
// a shard of its parent, which comes first in the lock order.
func (d *dir) empty() bool {
	sh := d.lockAll(false)
	defer unlockAll(sh, false)
	return d.size.Load() == 0
}

// lockPair takes every shard of a rename's two directories, the lower
// inode number first. The VFS holds both directories' locks for writing,
// so no other change of either can be waiting: this order only has to
// agree with itself.
func lockPair(a, b *dir) (unlock func()) {
	if a == b {
		sh := a.lockAll(true)
		return func() { unlockAll(sh, true) }
	}
	if b.ino < a.ino {
		a, b = b, a
	}
	sa := a.lockAll(true)
	sb := b.lockAll(true)
	return func() {
		unlockAll(sb, true)
		unlockAll(sa, true)
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
	ss, ds := d.shard(oldName), nd.shard(newName)
	src := ss.entries[oldName]
	if src == nil {
		return linux.ENOENT
	}
	dst := ds.entries[newName]
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
		nd.remove(ds, newName)
	}
	moved := src.inode
	d.remove(ss, oldName)
	nd.add(ds, newName, moved)
	if srcDir && d != nd {
		d.changeLinks(-1, now)
		nd.changeLinks(1, now)
	}
	moved.base().changeLinks(0, now)
	d.touch(now)
	nd.touch(now)
	return nil
}

// ReadDir lists the entries from position pos on, merging the shards'
// lists by position.
func (d *dir) ReadDir(pos int64, emit func(vfs.DirEntry) bool) error {
	sh := d.lockAll(false)
	defer unlockAll(sh, false)
	var next [dirShards]int // each shard's first entry not yet listed
	var orders [dirShards][]*entry
	for k, s := range sh {
		if s != nil {
			order := s.order
			orders[k] = order
			next[k] = sort.Search(len(order), func(i int) bool { return order[i].pos >= pos })
		}
	}
	for {
		var e *entry
		best := -1
		for k := range orders {
			order := orders[k]
			for next[k] < len(order) && order[next[k]].removed {
				next[k]++
			}
			if next[k] < len(order) && (e == nil || order[next[k]].pos < e.pos) {
				e, best = order[next[k]], k
			}
		}
		if e == nil {
			return nil
		}
		next[best]++
		n := e.inode.base()
		n.mu.Lock()
		typ := linux.DirentType(n.Mode)
		n.mu.Unlock()
		if !emit(vfs.DirEntry{Name: e.name, Ino: n.ino, Type: typ, Next: e.pos + 1}) {
			return nil
		}
	}
}
