package vfs

import (
	"errors"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/kmem"
)

// Open opens path relative to dir (nil: the cwd) as open(2) and openat(2)
// do, creating a regular file with O_CREAT (mode filtered by the umask).
// The returned file holds one reference; install it in an FDTable (which
// takes its own) and DecRef it. O_CLOEXEC is the FDTable's business.
func (v *VFS) Open(c *Ctx, dir *Dentry, path string, flags uint32, mode uint32) (*OpenFile, error) {
	if flags&linux.O_TMPFILE == linux.O_TMPFILE {
		if flags&linux.O_ACCMODE == linux.O_RDONLY || flags&linux.O_CREAT != 0 {
			return nil, linux.EINVAL
		}
		return nil, v.tmpfileDir(c, dir, path)
	}
	if flags&linux.O_PATH != 0 {
		flags &= linux.O_PATH | linux.O_DIRECTORY | linux.O_NOFOLLOW | linux.O_CLOEXEC
	}
	if flags&(linux.O_CREAT|linux.O_DIRECTORY) == linux.O_CREAT|linux.O_DIRECTORY {
		return nil, linux.EINVAL
	}
	if err := checkPath(path); err != nil {
		return nil, err
	}
	d, created, err := v.openLookup(c, dir, path, flags, mode)
	if err != nil {
		return nil, err
	}
	f, err := v.openDentry(c, d, flags, created)
	if err == nil && flags&linux.O_PATH == 0 {
		if flags&linux.O_TRUNC != 0 && d.mode == linux.S_IFREG && !created {
			notifyFile(d, InModify)
		}
		notifyFile(d, InOpen)
	}
	return f, err
}

// tmpfileDir is O_TMPFILE's answer: no file system here makes unnamed
// files, so EOPNOTSUPP, but only after what Linux checks first, as
// do_tmpfile and vfs_tmpfile do: the path names a directory (ENOENT,
// ENOTDIR, ELOOP, EACCES on the way), on a writable mount, that the
// caller may write and search.
func (v *VFS) tmpfileDir(c *Ctx, dir *Dentry, path string) error {
	if err := checkPath(path); err != nil {
		return err
	}
	w := walker{v: v, c: c}
	d, err := w.lookup(w.start(dir, path), path, true)
	switch {
	case err != nil:
		return err
	case !d.IsDir():
		return linux.ENOTDIR
	case d.mount.readOnly:
		return linux.EROFS
	}
	a := d.inode.Attr()
	if !c.Cred.Permits(&a, linux.W_OK|linux.X_OK) {
		return linux.EACCES
	}
	return linux.EOPNOTSUPP
}

// openLookup finds (or with O_CREAT makes) the file to open.
func (v *VFS) openLookup(c *Ctx, dir *Dentry, path string, flags, mode uint32) (*Dentry, bool, error) {
	follow := flags&linux.O_NOFOLLOW == 0
	if flags&linux.O_CREAT == 0 {
		w := walker{v: v, c: c}
		d, err := w.lookup(w.start(dir, path), path, follow)
		return d, false, err
	}
	w := walker{v: v, c: c}
	p, name, trailing, err := w.parent(w.start(dir, path), path)
	for err == nil {
		if name == "" || name == "." || name == ".." || trailing {
			return nil, false, linux.EISDIR
		}
		var d *Dentry
		var created bool
		d, created, err = v.openChild(c, p, name, mode)
		if err != nil {
			return nil, false, err
		}
		if created {
			return d, true, nil
		}
		if flags&linux.O_EXCL != 0 {
			return nil, false, linux.EEXIST
		}
		if d.IsDir() {
			return nil, false, linux.EISDIR
		}
		if d.mode != linux.S_IFLNK || !follow {
			return d, false, nil
		}
		// Follow a final symlink and create what it names, if missing.
		if w.links++; w.links > linux.MAXSYMLINKS {
			return nil, false, linux.ELOOP
		}
		var target string
		if target, err = readlink(w.c, d); err != nil {
			break
		}
		if target == "" {
			return nil, false, linux.ENOENT
		}
		start := p
		if target[0] == '/' {
			start = w.root()
		}
		p, name, trailing, err = w.parent(start, target)
	}
	return nil, false, err
}

// openChild finds name in p for an open with O_CREAT, and makes it a
// regular file if it does not exist. A name in the dentry cache is
// opened without p's dirMu, so opens of existing files in one directory
// do not queue on it; a miss goes straight to the lock, as Linux takes
// the directory's lock for a create without a first shared look-up. The
// new file's inode and dentry are made before the lock, which then
// covers only the look-up that finds the name free and its insertion.
func (v *VFS) openChild(c *Ctx, p *Dentry, name string, mode uint32) (d *Dentry, created bool, err error) {
	if d := p.cached(name); d != nil && !p.recheck() {
		return followMounts(d), false, nil
	}
	if len(name) > linux.NAME_MAX {
		return nil, false, linux.ENAMETOOLONG
	}
	n := v.prepare(c, p, name, linux.S_IFREG|mode&^c.Umask&0o7777, 0)
	h, err := lockName(p, name)
	if err != nil {
		return nil, false, err
	}
	defer h.unlock()
	d, err = v.childLocked(p, name)
	if !errors.Is(err, linux.ENOENT) {
		return d, false, err
	}
	d, err = v.insert(p, name, &n)
	return d, err == nil, err
}

func readlink(c *Ctx, d *Dentry) (string, error) {
	s, ok := d.inode.(Symlink)
	if !ok {
		return "", linux.EINVAL
	}
	return readlinkFor(c, s)
}

// readlinkFor reads a symlink's target as the caller c sees it.
func readlinkFor(c *Ctx, s Symlink) (string, error) {
	if cs, ok := s.(CallerSymlink); ok && c != nil {
		return cs.ReadlinkFor(c)
	}
	return s.Readlink()
}

// create makes a new inode of the type and permissions in mode under
// name in p, owned by the caller (with the group of p when p is
// set-group-ID), and caches its dentry.
// Preconditions: p.dirMu is held for writing; name is a free normal
// component.
func (v *VFS) create(c *Ctx, p *Dentry, name string, mode uint32, rdev uint64) (*Dentry, error) {
	n := v.prepare(c, p, name, mode, rdev)
	return v.insert(p, name, &n)
}

// newFile is a file about to be created: its inode and dentry made
// before the directory is locked (when the file system can make an
// inode without a name, an InodeMaker), or the error the create is to
// fail with once the name is known to be free.
type newFile struct {
	mode  uint32
	rdev  uint64
	owner Owner
	ino   Inode   // made by an InodeMaker, else nil
	d     *Dentry // ino's dentry, not yet in the cache
	err   error
}

// prepare checks that the caller may create name in p and makes what
// it can of the file without p's lock: an EACCES or EROFS only counts
// once the lock shows the name free (an existing name is opened, not
// created), and p's removal is checked under the lock.
func (v *VFS) prepare(c *Ctx, p *Dentry, name string, mode uint32, rdev uint64) newFile {
	n := newFile{mode: mode, rdev: rdev}
	a := p.inode.Attr()
	switch {
	case !c.Cred.Permits(&a, linux.W_OK|linux.X_OK):
		n.err = linux.EACCES
	case p.mount.readOnly:
		n.err = linux.EROFS
	case kmem.Refuse(): // no memory for another inode: a full file system
		n.err = linux.ENOSPC
	}
	if n.err != nil {
		return n
	}
	n.owner, n.mode = c.newOwnerFrom(&a, mode)
	if m, ok := p.inode.(InodeMaker); ok {
		if n.ino, n.err = m.NewInode(n.mode, rdev, n.owner); n.err == nil {
			n.d = newDentryOf(name, p, n.ino, n.mode&linux.S_IFMT, p.mount)
		}
	}
	return n
}

// insert gives the file n the free name name in p and caches its dentry.
// Preconditions: p.dirMu is held for writing; name is a free normal
// component, and n was prepared for it.
func (v *VFS) insert(p *Dentry, name string, n *newFile) (*Dentry, error) {
	if p.dead.Load() {
		return nil, linux.ENOENT
	}
	if n.err != nil {
		return nil, n.err
	}
	d := n.d
	if d != nil {
		if err := p.inode.(InodeMaker).AddInode(name, n.ino); err != nil {
			return nil, err
		}
	} else {
		ino, err := p.inode.(Dir).Create(name, n.mode, n.rdev, n.owner)
		if err != nil {
			return nil, err
		}
		d = newDentryOf(name, p, ino, n.mode&linux.S_IFMT, p.mount)
	}
	notifyChild(p, InCreate, 0, name, n.mode&linux.S_IFMT == linux.S_IFDIR)
	p.children.Store(name, d)
	return d, nil
}

// mayCreate checks the caller may add a name to directory p.
func (v *VFS) mayCreate(c *Ctx, p *Dentry) error {
	if p.dead.Load() {
		return linux.ENOENT
	}
	a := p.inode.Attr()
	if !c.Cred.Permits(&a, linux.W_OK|linux.X_OK) {
		return linux.EACCES
	}
	if p.mount.readOnly {
		return linux.EROFS
	}
	return nil
}

// newOwner returns the owner and mode of a new inode in directory p: the
// caller's effective IDs, or p's group when p is set-group-ID, in which
// case new directories inherit the bit too (inode_init_owner).
func (c *Ctx) newOwner(p *Dentry, mode uint32) (Owner, uint32) {
	a := p.inode.Attr()
	return c.newOwnerFrom(&a, mode)
}

// newOwnerFrom is newOwner for a directory with attributes a.
func (c *Ctx) newOwnerFrom(a *Attr, mode uint32) (Owner, uint32) {
	o := Owner{UID: c.Cred.EUID, GID: c.Cred.EGID}
	if a.Mode&linux.S_ISGID != 0 {
		o.GID = a.GID
		if mode&linux.S_IFMT == linux.S_IFDIR {
			mode |= linux.S_ISGID
		}
	}
	return o, mode
}

// openDentry checks the open against the file found (may_open) and makes
// the open file.
func (v *VFS) openDentry(c *Ctx, d *Dentry, flags uint32, created bool) (*OpenFile, error) {
	if kmem.Refuse() { // no memory for another open file: the table is full
		return nil, linux.ENFILE
	}
	if flags&linux.O_PATH != 0 {
		if flags&linux.O_DIRECTORY != 0 && !d.IsDir() {
			return nil, linux.ENOTDIR
		}
		return newOpenFile(d, d.inode, pathFile{}, flags&^linux.O_CLOEXEC), nil
	}
	acc := flags & linux.O_ACCMODE
	var want uint32
	if acc == linux.O_RDONLY || acc == linux.O_RDWR || acc == linux.O_ACCMODE {
		want |= linux.R_OK
	}
	if acc != linux.O_RDONLY || flags&linux.O_TRUNC != 0 {
		want |= linux.W_OK
	}
	switch d.mode {
	case linux.S_IFLNK:
		return nil, linux.ELOOP
	case linux.S_IFDIR:
		if want&linux.W_OK != 0 {
			return nil, linux.EISDIR
		}
	case linux.S_IFSOCK:
		return nil, linux.ENXIO
	default:
		if flags&linux.O_DIRECTORY != 0 {
			return nil, linux.ENOTDIR
		}
	}
	if !created {
		if !mayAccess(c, d.inode, want) {
			return nil, linux.EACCES
		}
		// Not updating another user's access times needs ownership
		// (CAP_FOWNER for root), as on Linux.
		if flags&linux.O_NOATIME != 0 {
			if a := d.inode.Attr(); !c.Cred.Owns(&a) {
				return nil, linux.EPERM
			}
		}
		if want&linux.W_OK != 0 && d.mount.readOnly && (d.mode == linux.S_IFREG || d.mode == linux.S_IFDIR) {
			return nil, linux.EROFS
		}
	}
	// A writer of a regular file is counted, so that a program it holds
	// cannot be run, and a running program cannot be opened for writing
	// (ETXTBSY, textbusy.go).
	writer := d.mode == linux.S_IFREG && (acc == linux.O_WRONLY || acc == linux.O_RDWR)
	if writer {
		if err := getWriteAccess(d.inode); err != nil {
			return nil, err
		}
	}
	fail := func(file File, err error) (*OpenFile, error) {
		if file != nil {
			file.Release()
		}
		if writer {
			putWriteAccess(d.inode)
		}
		return nil, err
	}
	file, err := v.fileFor(c, d, flags)
	if err != nil {
		return fail(nil, err)
	}
	// Others' leases are broken before the file is opened, and before
	// O_TRUNC changes it (lease.go).
	if d.mode == linux.S_IFREG {
		if err := breakLease(d.inode, acc != linux.O_RDONLY, flags&linux.O_NONBLOCK != 0, c); err != nil {
			return fail(file, err)
		}
	}
	if flags&linux.O_TRUNC != 0 && d.mode == linux.S_IFREG && !created {
		if err := checkNotRunning(d.inode); err != nil {
			return fail(file, err)
		}
		if err := killSetID(&c.Cred, d.inode); err != nil {
			return fail(file, err)
		}
		if err := d.inode.SetAttr(&SetAttr{Mask: SetSize | SetMtime, Mtime: Now}); err != nil {
			return fail(file, err)
		}
	}
	flags &^= linux.O_CREAT | linux.O_EXCL | linux.O_NOCTTY | linux.O_TRUNC | linux.O_CLOEXEC
	f := newOpenFile(d, d.inode, file, flags|linux.O_LARGEFILE)
	if r, ok := d.inode.(Reaper); ok && r.Reaped() {
		// Counted only after the last unlink freed the data (the
		// count comes first: an unlink after it keeps the data).
		f.DecRef() // the file and the count; not yet a writer or reader
		return fail(nil, linux.ENOENT)
	}
	f.writer = writer
	if writer && d.mount != nil {
		d.mount.writers.Add(1)
	}
	if d.mode == linux.S_IFREG && acc == linux.O_RDONLY {
		f.reader = true
		getReadAccess(d.inode)
	}
	return f, nil
}

// fileFor returns the File behind an open of d.
func (v *VFS) fileFor(c *Ctx, d *Dentry, flags uint32) (File, error) {
	if d.mode == linux.S_IFDIR {
		return &dirFile{v: v, d: d}, nil
	}
	if o, ok := d.inode.(CallerOpener); ok {
		return o.OpenFor(c, flags)
	}
	if o, ok := d.inode.(Opener); ok {
		return o.Open(flags)
	}
	switch d.mode {
	case linux.S_IFREG:
		if r, ok := d.inode.(Regular); ok {
			return regularFile{r}, nil
		}
	case linux.S_IFCHR, linux.S_IFBLK:
		if d.mount != nil && d.mount.noDev() {
			return nil, linux.EACCES // may_open: no device opens in a nodev mount
		}
		a := d.inode.Attr()
		if o := v.device(d.mode, a.Rdev); o != nil {
			return o.Open(flags)
		}
		return nil, linux.ENXIO
	case linux.S_IFIFO:
		return v.openFIFO(c, d.inode, flags)
	}
	return nil, linux.EIO
}

// OpenExec opens the program path names, from dir (nil: the cwd), for
// execve(2) and execveat(2): the caller must be allowed to execute it
// (search the path, and execute permission on a regular file), not to
// read it; the kernel then reads it with its own rights, so a program
// mode 0711 runs for users who cannot read it. It also reports whether
// the caller could have read the file (a program it cannot read runs
// non-dumpable, so its image cannot be read through /proc either).
// atFlags may hold AT_EMPTY_PATH (an empty path names dir itself:
// fexecve) and AT_SYMLINK_NOFOLLOW (a final symlink is ELOOP). Nothing
// in a noexec mount runs (EACCES).
func (v *VFS) OpenExec(c *Ctx, dir *Dentry, path string, atFlags int) (f *OpenFile, readable bool, err error) {
	if path != "" || atFlags&linux.AT_EMPTY_PATH == 0 {
		if err := checkPath(path); err != nil {
			return nil, false, err
		}
	}
	d, err := v.Lookup(c, dir, path, atFlags)
	if err != nil {
		return nil, false, err
	}
	if d.mode == linux.S_IFLNK {
		return nil, false, linux.ELOOP
	}
	if d.mode != linux.S_IFREG || !mayAccess(c, d.inode, linux.X_OK) || d.mount.NoExec() {
		return nil, false, linux.EACCES
	}
	kernel := *c
	kernel.Cred = Root
	f, err = v.openDentry(&kernel, d, linux.O_RDONLY, false)
	if err != nil {
		return nil, false, err
	}
	return f, mayAccess(c, d.inode, linux.R_OK), nil
}
