// Package ext4vfs makes a mounted ext2/3/4 file system (package ext4)
// a tree of VFS inodes: directories, regular files, symlinks and special
// files implementing the interfaces of package vfs. It holds no file
// system state of its own beyond one Go object per inode in use, so that
// the VFS (its FIFO table, bound sockets) sees one identity per inode;
// every call goes down to package ext4, which does the work under its
// own lock.
//
// Errors from below are mapped to errno values: a corrupt file system
// gives EUCLEAN (logged with what was wrong), an I/O failure EIO.
package ext4vfs

import (
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/ext4"
	"shortbread/kernel/mm"
	"shortbread/kernel/pagecache"
	"shortbread/kernel/vfs"
)

// Options configure the adapter.
type Options struct {
	Dev uint64 // st_dev of every inode (linux.MakeDev of the block device)
	// Logf reports corruption found below; nil discards it.
	Logf func(format string, args ...any)
	// Errors is what to do once corruption is found (Linux's errors=
	// mount option): "continue" (report it, change nothing),
	// "remount-ro" (stop all changes: ext4.FS.Abort) or "panic" (call
	// Panic); "" means what the superblock asks for.
	Errors string
	// Panic is called for errors=panic with what was found; it should
	// not return (the kernel panics). Nil: remount-ro instead.
	Panic func(what string)
}

// FS is the VFS face of one mounted ext4.FS.
type FS struct {
	disk    *ext4.FS
	dev     uint64
	logf    func(format string, args ...any)
	errors  string // Options.Errors, "" replaced by the superblock's
	panicf  func(what string)
	stopped atomic.Bool // errors=remount-ro has stopped changes

	// mu is taken before the disk's locks (ext4.FS.mu), never under
	// them: inode reads an inode's type again under it, and forget
	// drops an inode's pages under it.
	mu    sync.Mutex
	nodes map[uint32]weak.Pointer[node] // protected by mu
}

// New wraps disk.
func New(disk *ext4.FS, o Options) *FS {
	f := &FS{disk: disk, dev: o.Dev, logf: o.Logf, errors: o.Errors, panicf: o.Panic, nodes: make(map[uint32]weak.Pointer[node])}
	if f.errors == "" {
		f.errors = disk.ErrorsBehavior()
	}
	disk.SetMkclean(f.mkclean)
	return f
}

// Sync commits the journal and flushes the device: what every call
// before it changed is durable. It is what fsync, fdatasync, syncfs and
// sync come down to (one journal for all files), and what a timer should
// call every few seconds, as Linux commits every 5 s.
func (f *FS) Sync() error { return f.errno(f.disk.Sync()) }

// Checkpoint writes the log's committed blocks home and empties it
// (sync and syncfs, after Sync): see ext4.FS.Checkpoint.
func (f *FS) Checkpoint() error { return f.errno(f.disk.Checkpoint()) }

// DropCaches drops the clean cached metadata blocks (drop_caches).
func (f *FS) DropCaches() { f.disk.DropClean() }

// Unmount leaves the disk clean (needs_recovery cleared, the superblock
// home with the free counts); the file system is read-only afterwards.
func (f *FS) Unmount() error { return f.errno(f.disk.Unmount()) }

// Remount makes the file system read-only, its disk left clean as by
// Unmount, or read-write again.
func (f *FS) Remount(ro bool) error { return f.errno(f.disk.Remount(ro)) }

// CanDiscard reports whether the disk takes discards (FITRIM's
// EOPNOTSUPP otherwise).
func (f *FS) CanDiscard() bool { return f.disk.CanDiscard() }

// Trim discards the free blocks of a byte range in free runs of at
// least minLen bytes (FITRIM) and returns the bytes discarded.
func (f *FS) Trim(start, length, minLen uint64) (uint64, error) {
	n, err := f.disk.Trim(start, length, minLen)
	return n, f.errno(err)
}

// Committer commits the journal every interval until stop is closed, as
// Linux's journal thread does every 5 s (commit=5): the most a crash can
// take from a program that never calls fsync. Run it in its own
// goroutine for a read-write mount.
func (f *FS) Committer(stop <-chan struct{}, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if _, err := f.disk.Commit(); err != nil {
				f.errno(err)
			}
		}
	}
}

// Root returns the root directory, to mount.
func (f *FS) Root() (vfs.Inode, error) { return f.inode(ext4.RootIno) }

// errno turns an error from package ext4 into the errno the VFS returns.
func (f *FS) errno(err error) error {
	if err == nil {
		return nil
	}
	var ce *ext4.CorruptError
	if errors.As(err, &ce) {
		if f.logf != nil {
			f.logf("ext4: %s", ce.What)
		}
		f.corruption(ce)
	}
	var e linux.Errno
	if errors.As(err, &e) {
		return e
	}
	if f.logf != nil {
		f.logf("ext4: %v", err)
	}
	return linux.EIO
}

// corruption acts on corruption found, as the errors= option says.
func (f *FS) corruption(ce *ext4.CorruptError) {
	switch {
	case f.errors == "continue":
	case f.errors == "panic" && f.panicf != nil:
		f.panicf(ce.What)
	default:
		f.disk.Abort(ce)
		if !f.stopped.Swap(true) && f.logf != nil {
			f.logf("ext4: errors=remount-ro: no more changes until the next mount")
		}
	}
}

// Errors returns what the file system does once corruption is found:
// "continue", "remount-ro" or "panic".
func (f *FS) Errors() string { return f.errors }

// node is one inode; its Go type (dir, file, symlink, special) carries
// the interfaces its file type needs.
type node struct {
	fs  *FS
	ino uint32
	typ uint32 // the file type (S_IFMT bits) it was made for
	// self is the vfs.Inode the node was handed out as.
	self vfs.Inode
	// The VFS's open and run counts (ETXTBSY, leases), atomics: the node
	// is the one inode of its number while anyone holds it.
	vfs.AccessCounts
	// atimeSeq and atimeUntil remember that under relatime the access
	// time was found fresh (ext4.FS.TouchAtime) at that count of inode
	// writes and stays so until that second: a read then skips the file
	// system's lock and the inode's decoding, which every read paid.
	atimeSeq   atomic.Uint64
	atimeUntil atomic.Int64
	// mapped holds the objects of the file's mappings (mmap.go).
	mapMu  sync.Mutex
	mapped map[*mm.Shm]bool
}

type dir struct{ *node }
type file struct{ *node }
type symlink struct{ *node }
type special struct{ *node }

// inode returns the canonical VFS inode for ino, making it if no one
// holds it now. The inode's type is read before mu is taken, so that
// look-ups from several CPUs share the file system's lock (they would
// queue on mu otherwise); read again under mu when a node held for the
// number has another type, so that a stale answer never replaces a
// node of the right type.
func (f *FS) inode(ino uint32) (vfs.Inode, error) {
	st, err := f.disk.Stat(ino)
	f.mu.Lock()
	defer f.mu.Unlock()
	var held *node
	if wp, ok := f.nodes[ino]; ok {
		held = wp.Value()
	}
	if held != nil && err == nil && held.typ != st.Mode&linux.S_IFMT {
		st, err = f.disk.Stat(ino)
	}
	if err != nil {
		if held != nil {
			return held.self, nil
		}
		return nil, f.errno(err)
	}
	// A node still held for a number that was freed and given to a file
	// of another type (a second mount's dentry for a name removed
	// through the first) is not that file: it gets a node of its own.
	if held != nil && held.typ == st.Mode&linux.S_IFMT {
		return held.self, nil
	}
	n := &node{fs: f, ino: ino, typ: st.Mode & linux.S_IFMT}
	switch n.typ {
	case linux.S_IFDIR:
		n.self = dir{n}
	case linux.S_IFREG:
		n.self = file{n}
	case linux.S_IFLNK:
		n.self = symlink{n}
	default:
		n.self = special{n}
	}
	f.nodes[ino] = weak.Make(n)
	runtime.AddCleanup(n, f.forget, ino)
	return n.self, nil
}

// forget drops the map entry of an inode whose node was collected, and
// the inode's pages from the page cache (nothing in the kernel holds it
// now: no open file, no cached name), unless a new node took its place.
func (f *FS) forget(ino uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if wp, ok := f.nodes[ino]; ok && wp.Value() == nil {
		delete(f.nodes, ino)
		f.disk.Forget(ino)
	}
}

// Attr implements vfs.Inode.
func (n *node) Attr() vfs.Attr {
	st, err := n.fs.disk.Stat(n.ino)
	if err != nil {
		n.fs.errno(err)
		return vfs.Attr{Dev: n.fs.dev, Ino: uint64(n.ino)}
	}
	return vfs.Attr{
		Dev: n.fs.dev, Ino: uint64(st.Ino), Mode: st.Mode, Nlink: st.Nlink, UID: st.UID, GID: st.GID,
		Rdev: linux.MakeDev(st.RdevMajor, st.RdevMinor), Size: int64(st.Size), Blocks: int64(st.Blocks),
		Blksize: int32(n.fs.disk.BlockSize()), Atime: st.Atime, Mtime: st.Mtime, Ctime: st.Ctime, Btime: st.Btime,
	}
}

// SetAttr implements vfs.Inode.
func (n *node) SetAttr(s *vfs.SetAttr) error {
	var mask uint32
	a := ext4.Attr{Mode: s.Mode, UID: s.UID, GID: s.GID, Size: uint64(s.Size), Atime: s.Atime, Mtime: s.Mtime}
	now := n.fs.disk.Now()
	if s.Mask&vfs.SetMode != 0 {
		mask |= ext4.SetMode
	}
	if s.Mask&vfs.SetUID != 0 {
		mask |= ext4.SetUID
	}
	if s.Mask&vfs.SetGID != 0 {
		mask |= ext4.SetGID
	}
	if s.Mask&vfs.SetSize != 0 {
		if s.Size < 0 {
			return linux.EINVAL
		}
		mask |= ext4.SetSize
	}
	if s.Mask&vfs.SetAtime != 0 {
		mask |= ext4.SetAtime
		if a.Atime.Nsec == linux.UTIME_NOW {
			a.Atime = now
		}
	}
	if s.Mask&vfs.SetMtime != 0 {
		mask |= ext4.SetMtime
		if a.Mtime.Nsec == linux.UTIME_NOW {
			a.Mtime = now
		}
	}
	err := n.fs.errno(n.fs.disk.SetAttr(n.ino, mask, a))
	if s.Mask&vfs.SetSize != 0 {
		// Pages wholly past the new end left the cache: so must they
		// leave the mappings (SIGBUS at their next touch, as on Linux).
		n.unmapPages(uint64((s.Size+pagecache.PageSize-1)/pagecache.PageSize), ^uint64(0))
	}
	return err
}

// TouchAtime implements vfs.Atimer: the access time moves after a read
// as the mount's mode says, through the journal like any inode change.
func (n *node) TouchAtime(strict bool) {
	d := n.fs.disk
	if !strict {
		// The until is read first: a TouchAtime on another CPU stores
		// its until before its count, so a count that matches is never
		// paired with an older file's until (and a newer until only
		// goes with a count that no longer matches).
		until := n.atimeUntil.Load()
		if s := n.atimeSeq.Load(); s != 0 && s == d.Changes() && d.NowSec() < until {
			return
		}
	}
	seq, until, err := d.TouchAtime(n.ino, func(a, m, c, now linux.Timespec) bool {
		return vfs.AtimeStale(a, m, c, now, strict)
	})
	if n.fs.errno(err) != nil || strict {
		return
	}
	n.atimeUntil.Store(until)
	n.atimeSeq.Store(seq)
}

// Opened implements vfs.OpenCounter: an open file keeps the inode after
// its last name goes.
func (n *node) Opened() { n.fs.disk.Hold(n.ino) }

// Closed implements vfs.OpenCounter.
func (n *node) Closed() { n.fs.errno(n.fs.disk.Release(n.ino)) }

// StatFS implements vfs.FSStater on the root (every directory has it;
// the VFS asks the root).
func (d dir) StatFS() vfs.StatFS {
	s := d.fs.disk.Statfs()
	return vfs.StatFS{
		Type: Magic, Bsize: int64(s.BlockSize), Blocks: s.Blocks, Bfree: s.Free, Bavail: s.Avail,
		Files: s.Files, Ffree: s.FilesFree, Namelen: int64(s.NameLen),
	}
}

// Magic is statfs's f_type for ext2/3/4 (EXT4_SUPER_MAGIC).
const Magic = 0xEF53

// Lookup implements vfs.Dir.
func (d dir) Lookup(name string) (vfs.Inode, error) {
	ino, err := d.fs.disk.Lookup(d.ino, name)
	if err != nil {
		return nil, d.fs.errno(err)
	}
	return d.fs.inode(ino)
}

// Create implements vfs.Dir.
func (d dir) Create(name string, mode uint32, rdev uint64, owner vfs.Owner) (vfs.Inode, error) {
	var ino uint32
	var err error
	if mode&linux.S_IFMT == linux.S_IFDIR {
		ino, err = d.fs.disk.Mkdir(d.ino, name, mode&0o7777, owner.UID, owner.GID)
	} else {
		ino, err = d.fs.disk.Create(d.ino, name, mode, owner.UID, owner.GID, linux.DevMajor(rdev), linux.DevMinor(rdev))
	}
	if err != nil {
		return nil, d.fs.errno(err)
	}
	return d.fs.inode(ino)
}

// Symlink implements vfs.Dir.
func (d dir) Symlink(name, target string, owner vfs.Owner) (vfs.Inode, error) {
	ino, err := d.fs.disk.Symlink(d.ino, name, target, owner.UID, owner.GID)
	if err != nil {
		return nil, d.fs.errno(err)
	}
	return d.fs.inode(ino)
}

// nodeOf returns the node behind a VFS inode of this file system.
func (f *FS) nodeOf(i vfs.Inode) (*node, bool) {
	var n *node
	switch v := i.(type) {
	case dir:
		n = v.node
	case file:
		n = v.node
	case symlink:
		n = v.node
	case special:
		n = v.node
	default:
		return nil, false
	}
	return n, n.fs == f
}

// Link implements vfs.Dir.
func (d dir) Link(name string, target vfs.Inode) error {
	n, ok := d.fs.nodeOf(target)
	if !ok {
		return linux.EXDEV
	}
	return d.fs.errno(d.fs.disk.Link(d.ino, name, n.ino))
}

// Unlink implements vfs.Dir.
func (d dir) Unlink(name string) error { return d.fs.errno(d.fs.disk.Unlink(d.ino, name)) }

// ConcurrentNames implements vfs.ConcurrentNames: package ext4 keeps a
// directory's entries whole under changes of different names made at
// once (each holds the directory's inode lock, or the file system's
// lock for writing, for its change), so the VFS holds a directory's
// lock only for reading, and the lock of the name changed, while it
// calls Create, Unlink, Link, Symlink and Rmdir: creates and unlinks in
// one directory from several CPUs then meet only on ext4's lock of the
// directory, held for the insertion or removal of the entry alone,
// instead of queueing for the whole operation (the new inode's
// allocation, the freed file's blocks).
func (d dir) ConcurrentNames() {}

// ConcurrentRenames implements vfs.ConcurrentRenames: package ext4's
// Rename of two names of one directory holds the directory's inode lock
// for its change, as a create or unlink does (or FS.mu for writing), and
// the inode locks of the files it moves and replaces, so the VFS holds
// only the two names' locks for it, and renames, creates and unlinks of
// other names in the directory run beside it.
func (d dir) ConcurrentRenames() {}

// Grants implements vfs.Permissioner: the superuser may search, list and
// change any directory whatever its bits (permits' rule for uid 0; a
// dir's node is a directory for life), so a path walk by root through
// an ext4 directory reads none of its attributes. Each read is a stat
// under the directory's inode lock, which creates and unlinks in it
// from other CPUs hold for writing. Others' checks read the bits.
func (d dir) Grants(c *vfs.Ctx, want uint32) bool { return c.Cred.EUID == 0 }

// Rmdir implements vfs.Dir.
func (d dir) Rmdir(name string) error { return d.fs.errno(d.fs.disk.Rmdir(d.ino, name)) }

// Rename implements vfs.Dir.
func (d dir) Rename(oldName string, newDir vfs.Dir, newName string, flags uint32) error {
	nd, ok := d.fs.nodeOf(newDir)
	if !ok {
		return linux.EXDEV
	}
	return d.fs.errno(d.fs.disk.Rename(d.ino, oldName, nd.ino, newName, flags))
}

// readDirBatch is how many entries ReadDir fetches at a time.
const readDirBatch = 128

// ReadDir implements vfs.Dir. A position is package ext4's (ReadDirAt):
// an entry's byte offset or made of its name's hash. The next position
// is one past the entry's, so an entry removed or added meanwhile never
// makes the listing repeat one; names with equal hashes share a
// position, and each but the last of them is marked Shared (ReadDirAt
// returns them together).
func (d dir) ReadDir(pos int64, emit func(vfs.DirEntry) bool) error {
	for {
		ents, err := d.fs.disk.ReadDirAt(d.ino, pos, readDirBatch)
		if err != nil {
			return d.fs.errno(err)
		}
		if len(ents) == 0 {
			return nil
		}
		pos = ents[len(ents)-1].Off + 1
		ents = slices.DeleteFunc(ents, func(e ext4.DirEntry) bool { return e.Name == "." || e.Name == ".." })
		for i, e := range ents {
			next, shared := e.Off+1, i+1 < len(ents) && ents[i+1].Off == e.Off
			if shared {
				next = e.Off
			}
			if !emit(vfs.DirEntry{Name: e.Name, Ino: uint64(e.Ino), Type: e.Type, Next: next, Shared: shared}) {
				return nil
			}
		}
	}
}

// ReadAt implements vfs.Regular.
func (f file) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.fs.disk.ReadAt(f.ino, p, off)
	return n, f.fs.errno(err)
}

// ReadCached implements vfs.CachedReader from the file's page cache.
func (f file) ReadCached(dst [][]byte, off int64) (int, bool) {
	return f.fs.disk.ReadCached(f.ino, dst, off)
}

// ReadsExactly implements vfs.ExactReader: a read copies every byte it
// reports (from the page cache, the disk, or zeros for holes).
func (f file) ReadsExactly() {}

// WriteAt implements vfs.Regular.
func (f file) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.fs.disk.WriteAt(f.ino, p, off)
	return n, f.fs.errno(err)
}

// Allocate implements vfs.Allocator: fallocate(2), preallocation
// (unwritten extents) and hole punching (ext4's Fallocate). A punch
// takes the pages it touches out of the page cache, its edges' pages
// too (zeroed on the disk), so the mappings lose them as well: the next
// touch reads the hole's zeros, and a store there reaches the file.
func (f file) Allocate(mode uint32, off, n int64) error {
	err := f.fs.disk.Fallocate(f.ino, mode, off, n)
	if mode&linux.FALLOC_FL_PUNCH_HOLE != 0 {
		f.unmapPages(uint64(off/pagecache.PageSize), uint64((off+n+pagecache.PageSize-1)/pagecache.PageSize))
	}
	return f.fs.errno(err)
}

// Append implements vfs.Regular.
func (f file) Append(p []byte) (int, int64, error) {
	n, end, err := f.fs.disk.Append(f.ino, p)
	return n, end, f.fs.errno(err)
}

// Readlink implements vfs.Symlink.
func (s symlink) Readlink() (string, error) {
	t, err := s.fs.disk.Readlink(s.ino)
	return t, s.fs.errno(err)
}
