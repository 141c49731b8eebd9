// Package procfs is the /proc file system (and /sys, which has the same
// shape: kernel/sysfiles.go): a read-only tree of directories, symbolic
// links and generated files whose contents are made when they are opened
// (so a reader sees one consistent snapshot), with an optional write
// handler (like /proc/sys files). The kernel decides what
// the files say; this package only serves them (Linux's
// Documentation/filesystems/proc.rst describes the formats).
package procfs

import (
	"path"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
	"shortbread/kernel/wallclock"
)

// Gen makes a file's contents.
type Gen func() []byte

// WriteFn receives what is written to a file.
type WriteFn func(p []byte) error

// FS is one procfs instance.
type FS struct {
	dev  uint64
	ino  atomic.Uint64
	root *dir
}

// New makes an empty procfs.
func New(dev uint64) *FS {
	fs := &FS{dev: dev}
	fs.root = fs.newDir()
	return fs
}

// Root is the inode to mount.
func (fs *FS) Root() vfs.Inode { return fs.root }

type base struct {
	fs   *FS
	ino  uint64
	mode uint32
	when linux.Timespec
	perm *Perm // nil: root's, with the mode above
}

// Perm gives an entry other permission bits and an owner than root's
// 0444 (files), 0555 (directories) or 0777 (links), so that the VFS's
// ordinary checks decide who may open, list or search it. Owner is asked
// at every stat and permission check, as a process's owner changes with
// its IDs. Check, when set, is a further test of the caller when a file
// is opened or a link read or followed (a nil Ctx is the kernel, which
// passes); its error is the call's.
type Perm struct {
	Mode  uint32
	Owner func() (uid, gid uint32)
	Check func(c *vfs.Ctx) error
	// Allow, when set, grants a caller access whatever the bits say.
	Allow func(c *vfs.Ctx) bool
}

// Grants lets Perm.Allow override the permission bits.
func (b *base) Grants(c *vfs.Ctx, want uint32) bool {
	return b.perm != nil && b.perm.Allow != nil && c != nil && b.perm.Allow(c)
}

// Guard applies p to ino, an inode made by File, Dir or Link of fs, and
// returns it.
func (fs *FS) Guard(ino vfs.Inode, p Perm) vfs.Inode {
	switch i := ino.(type) {
	case *file:
		i.perm = &p
	case *dir:
		i.perm = &p
	case *callerLink:
		i.perm = &p
	default:
		panic("procfs: Guard of a foreign inode")
	}
	return ino
}

// check runs the Perm's caller test, if any.
func (b *base) check(c *vfs.Ctx) error {
	if b.perm == nil || b.perm.Check == nil || c == nil {
		return nil
	}
	return b.perm.Check(c)
}

func (fs *FS) base(mode uint32) base {
	now := wallclock.Now()
	return base{fs: fs, ino: fs.ino.Add(1), mode: mode, when: linux.Timespec{Sec: now.Unix(), Nsec: int64(now.Nanosecond())}}
}

func (b *base) Attr() vfs.Attr {
	n := uint32(1)
	if b.mode&linux.S_IFMT == linux.S_IFDIR {
		n = 2
	}
	a := vfs.Attr{Dev: b.fs.dev, Ino: b.ino, Mode: b.mode, Nlink: n, Blksize: 1024,
		Atime: b.when, Mtime: b.when, Ctime: b.when}
	if b.perm != nil {
		a.Mode = b.mode&linux.S_IFMT | b.perm.Mode&0o7777
		if b.perm.Owner != nil {
			a.UID, a.GID = b.perm.Owner()
		}
	}
	return a
}

// SetAttr refuses a change of mode or owner, as Linux's procfs does, and
// ignores the rest: an open with O_TRUNC, as a shell's `echo 3 >
// /proc/sys/vm/drop_caches` makes, truncates nothing and succeeds.
func (b *base) SetAttr(s *vfs.SetAttr) error {
	if s.Mask&(vfs.SetMode|vfs.SetUID|vfs.SetGID) != 0 {
		return linux.EPERM
	}
	return nil
}

type dir struct {
	base
	mu       sync.Mutex
	children map[string]vfs.Inode
	dyn      *Dyn // entries made on demand, after the fixed ones
}

// Dyn describes directory entries that come and go, like the process
// directories: List names them now, Lookup makes the inode for one (nil
// if it is gone).
type Dyn struct {
	List   func() []string
	Lookup func(name string) vfs.Inode
}

// SetRootDyn adds on-demand entries to /proc itself.
func (fs *FS) SetRootDyn(d Dyn) {
	fs.root.mu.Lock()
	fs.root.dyn = &d
	fs.root.mu.Unlock()
}

// Dir returns a directory made of on-demand entries, with inode number
// ino (callers choose stable numbers above 1<<32, clear of the fixed
// entries').
func (fs *FS) Dir(ino uint64, d Dyn) vfs.Inode {
	b := fs.base(linux.S_IFDIR | 0o555)
	b.ino = ino
	return &dir{base: b, children: map[string]vfs.Inode{}, dyn: &d}
}

// File returns a generated file with inode number ino; write may be nil.
func (fs *FS) File(ino uint64, gen Gen, write WriteFn) vfs.Inode {
	f := fs.newFile(gen, write)
	f.ino = ino
	return f
}

// Link returns a symbolic link whose target is computed for the caller
// that reads or follows it (nil Ctx: the kernel).
func (fs *FS) Link(ino uint64, target func(c *vfs.Ctx) (string, error)) vfs.Inode {
	b := fs.base(linux.S_IFLNK | 0o777)
	b.ino = ino
	return &callerLink{base: b, target: target}
}

type callerLink struct {
	base
	target func(c *vfs.Ctx) (string, error)
}

func (l *callerLink) Readlink() (string, error) { return l.target(nil) }

func (l *callerLink) ReadlinkFor(c *vfs.Ctx) (string, error) {
	if err := l.check(c); err != nil {
		return "", err
	}
	return l.target(c)
}

func (fs *FS) newDir() *dir {
	return &dir{base: fs.base(linux.S_IFDIR | 0o555), children: map[string]vfs.Inode{}}
}

func (d *dir) Lookup(name string) (vfs.Inode, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.children[name]; ok {
		return c, nil
	}
	if d.dyn != nil {
		if c := d.dyn.Lookup(name); c != nil {
			return c, nil
		}
	}
	return nil, linux.ENOENT
}

func (d *dir) ReadDir(pos int64, emit func(vfs.DirEntry) bool) error {
	d.mu.Lock()
	names := make([]string, 0, len(d.children))
	for n := range d.children {
		names = append(names, n)
	}
	dyn := d.dyn
	d.mu.Unlock()
	sort.Strings(names)
	if dyn != nil {
		names = append(names, dyn.List()...)
	}
	for i := int(pos); i < len(names); i++ {
		c, err := d.Lookup(names[i])
		if err != nil {
			continue
		}
		a := c.Attr()
		if !emit(vfs.DirEntry{Name: names[i], Ino: a.Ino, Type: linux.DirentType(a.Mode), Next: int64(i + 1)}) {
			return nil
		}
	}
	return nil
}

// Nothing is made or removed in /proc by name. Linux's proc look-ups fail
// with ENOENT for a name that is not there (rather than leaving a
// negative dentry to create on), so a new name is ENOENT; an existing one
// finds no unlink, rmdir or rename operation, which is EPERM.
func (d *dir) Create(string, uint32, uint64, vfs.Owner) (vfs.Inode, error) { return nil, linux.ENOENT }
func (d *dir) Symlink(string, string, vfs.Owner) (vfs.Inode, error)        { return nil, linux.ENOENT }
func (d *dir) Link(string, vfs.Inode) error                                { return linux.ENOENT }
func (d *dir) Unlink(string) error                                         { return linux.EPERM }
func (d *dir) Rmdir(string) error                                          { return linux.EPERM }

func (d *dir) Rename(_ string, newDir vfs.Dir, newName string, _ uint32) error {
	if _, err := newDir.Lookup(newName); err != nil {
		return linux.ENOENT
	}
	return linux.EPERM
}

// NoNewNames: see Create.
func (d *dir) NoNewNames() {}

// Volatile: the kernel adds entries (process directories) behind the
// VFS's back.
func (d *dir) Volatile() {}

// mkdirs returns the directory at p, creating missing parents.
func (fs *FS) mkdirs(p string) *dir {
	d := fs.root
	for _, name := range strings.Split(strings.Trim(p, "/"), "/") {
		if name == "" || name == "." {
			continue
		}
		d.mu.Lock()
		c, ok := d.children[name].(*dir)
		if !ok {
			c = fs.newDir()
			d.children[name] = c
		}
		d.mu.Unlock()
		d = c
	}
	return d
}

func (fs *FS) add(p string, ino vfs.Inode) {
	p = path.Clean("/" + p)
	d := fs.mkdirs(path.Dir(p))
	d.mu.Lock()
	d.children[path.Base(p)] = ino
	d.mu.Unlock()
}

// AddFile adds a generated file at p (relative to /proc); write may be nil.
func (fs *FS) AddFile(p string, gen Gen, write WriteFn) {
	fs.add(p, fs.newFile(gen, write))
}

func (fs *FS) newFile(gen Gen, write WriteFn) *file {
	mode := uint32(linux.S_IFREG | 0o444)
	if write != nil {
		mode |= 0o200
	}
	return &file{base: fs.base(mode), gen: gen, write: write}
}

// AddSymlink adds a symbolic link at p.
func (fs *FS) AddSymlink(p, target string) {
	fs.add(p, &link{base: fs.base(linux.S_IFLNK | 0o777), target: target})
}

type link struct {
	base
	target string
}

func (l *link) Readlink() (string, error) { return l.target, nil }

type file struct {
	base
	gen   Gen
	write WriteFn
}

// OpenFor checks the caller against the file's Perm, then opens it.
func (f *file) OpenFor(c *vfs.Ctx, flags uint32) (vfs.File, error) {
	if err := f.check(c); err != nil {
		return nil, err
	}
	return f.Open(flags)
}

// Open takes the snapshot a reader will see.
func (f *file) Open(flags uint32) (vfs.File, error) {
	if flags&linux.O_ACCMODE != linux.O_RDONLY && f.write == nil {
		return nil, linux.EACCES
	}
	return &snapshot{data: f.gen(), write: f.write}, nil
}

type snapshot struct {
	data  []byte
	write WriteFn
}

func (s *snapshot) Read(_ vfs.Blocking, p []byte, off int64) (int, error) {
	if off >= int64(len(s.data)) {
		return 0, nil
	}
	return copy(p, s.data[off:]), nil
}

func (s *snapshot) Write(_ vfs.Blocking, p []byte, _ int64) (int, error) {
	if s.write == nil {
		return 0, linux.EACCES
	}
	if err := s.write(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (s *snapshot) Lseek(pos, off int64, whence int) (int64, error) {
	switch whence {
	case linux.SEEK_SET:
	case linux.SEEK_CUR:
		off += pos
	case linux.SEEK_END:
		off += int64(len(s.data))
	default:
		return 0, linux.EINVAL
	}
	if off < 0 {
		return 0, linux.EINVAL
	}
	return off, nil
}

func (s *snapshot) Release() {}
