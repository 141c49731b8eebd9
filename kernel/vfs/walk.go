package vfs

import (
	"strings"

	"shortbread/kernel/abi/linux"
)

// Ctx is the caller of a path operation: the fields of a task that path
// resolution and file creation read.
type Ctx struct {
	Cred  Cred
	Root  *Dentry // where absolute paths start and ".." stops (chroot); nil: the tree's root
	Cwd   *Dentry // where relative paths start when no directory is given; nil: Root
	Umask uint32  // cleared from the mode of new files, directories and nodes
	// Intr interrupts an open that waits (a FIFO waiting for its other
	// end), as Blocking.Intr does.
	Intr <-chan struct{}
	// PID and TID name the calling process and thread (0 for the
	// kernel), for links like /proc/self.
	PID, TID int
	// Sleeper, if set, is told when the operation waits for another
	// party (a lease's holder), so the time counts as sleeping.
	Sleeper Sleeper
}

// Sleeper is the caller of a VFS operation that may wait: the process
// layer's thread, which accounts the wait as sleep, not CPU time.
type Sleeper interface {
	SleepBegin()
	SleepEnd()
}

// walker resolves paths for one operation. It counts the symlinks
// followed, which Linux limits per operation, not per symlink.
type walker struct {
	v     *VFS
	c     *Ctx
	links int
}

func (w *walker) root() *Dentry {
	if w.c.Root != nil {
		return w.c.Root
	}
	return w.v.root
}

// start returns where path begins: the root for an absolute path, else
// dir, or the cwd when dir is nil (AT_FDCWD).
func (w *walker) start(dir *Dentry, path string) *Dentry {
	switch {
	case strings.HasPrefix(path, "/"):
		return w.root()
	case dir != nil:
		return dir
	case w.c.Cwd != nil:
		return w.c.Cwd
	}
	return w.root()
}

// checkPath applies the rules for a path as a system call receives it:
// not empty (ENOENT) and shorter than PATH_MAX with its NUL (ENAMETOOLONG).
func checkPath(path string) error {
	if path == "" {
		return linux.ENOENT
	}
	if len(path) >= linux.PATH_MAX {
		return linux.ENAMETOOLONG
	}
	return nil
}

// mayLookup checks that d is a directory the caller may search.
func (w *walker) mayLookup(d *Dentry) error {
	if !d.IsDir() {
		return linux.ENOTDIR
	}
	if w.c.Cred.EUID == 0 {
		// Root may search any directory (generic_permission): no need
		// to read its attributes.
		return nil
	}
	if !mayAccess(w.c, d.inode, linux.X_OK) {
		return linux.EACCES
	}
	return nil
}

// Permissioner is an inode that may grant access its permission bits
// do not (a process's /proc/<pid>/fd, which the process itself may
// always read).
type Permissioner interface {
	Grants(c *Ctx, want uint32) bool
}

// mayAccess reports whether the caller of c may access ino in the ways
// want asks (linux.R_OK, W_OK, X_OK bits) for a search or an open.
func mayAccess(c *Ctx, ino Inode, want uint32) bool {
	if c.Cred.EUID == 0 && want&linux.X_OK == 0 {
		// Root may read and write anything (CAP_DAC_OVERRIDE): no need
		// to read the attributes, which would make opens of one file
		// from several CPUs meet on its inode.
		return true
	}
	if p, ok := ino.(Permissioner); ok && p.Grants(c, want) {
		return true
	}
	a := ino.Attr()
	return c.Cred.Permits(&a, want)
}

// parent walks all components of path but the last, from start. It
// returns the directory that holds the last component, the component
// ("" when path is all slashes, meaning the directory itself; "." or
// ".." as written) and whether the path ended in a slash.
func (w *walker) parent(start *Dentry, path string) (*Dentry, string, bool, error) {
	trimmed := strings.TrimRight(path, "/")
	trailing := len(trimmed) < len(path)
	if trimmed == "" {
		return start, "", false, nil
	}
	i := strings.LastIndexByte(trimmed, '/')
	d := start
	for rest := trimmed[:i+1]; rest != ""; {
		var name string
		name, rest, _ = strings.Cut(rest, "/")
		if name == "" {
			continue
		}
		if err := w.mayLookup(d); err != nil {
			return nil, "", false, err
		}
		switch name {
		case ".":
			continue
		case "..":
			d = d.dotdot(w.root())
			continue
		}
		c, err := w.v.child(d, name)
		if err != nil {
			return nil, "", false, err
		}
		if c.mode == linux.S_IFLNK {
			if c, err = w.follow(c, d); err != nil {
				return nil, "", false, err
			}
		}
		d = c
	}
	if err := w.mayLookup(d); err != nil {
		return nil, "", false, err
	}
	return d, trimmed[i+1:], trailing, nil
}

// last resolves the last component returned by parent. A symlink is
// followed when follow is set or a slash ended the path; a path that
// ended in a slash must name a directory.
func (w *walker) last(p *Dentry, name string, trailing, follow bool) (*Dentry, error) {
	var d *Dentry
	switch name {
	case "", ".":
		d = p
	case "..":
		d = p.dotdot(w.root())
	default:
		c, err := w.v.child(p, name)
		if err != nil {
			return nil, err
		}
		if c.mode == linux.S_IFLNK && (follow || trailing) {
			if c, err = w.follow(c, p); err != nil {
				return nil, err
			}
		}
		d = c
	}
	if trailing && !d.IsDir() {
		return nil, linux.ENOTDIR
	}
	return d, nil
}

// lookup resolves a whole path from start.
func (w *walker) lookup(start *Dentry, path string, follow bool) (*Dentry, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	p, name, trailing, err := w.parent(start, path)
	if err != nil {
		return nil, err
	}
	return w.last(p, name, trailing, follow)
}

// follow resolves the symlink link found in directory dir.
func (w *walker) follow(link, dir *Dentry) (*Dentry, error) {
	w.links++
	if w.links > linux.MAXSYMLINKS {
		return nil, linux.ELOOP
	}
	s, ok := link.inode.(Symlink)
	if !ok {
		return nil, linux.EIO
	}
	target, err := readlinkFor(w.c, s)
	if err != nil {
		return nil, err
	}
	if target == "" {
		return nil, linux.ENOENT
	}
	start := dir
	if target[0] == '/' {
		start = w.root()
	}
	return w.lookup(start, target, true)
}

// resolve looks up a path for the *at calls: AT_EMPTY_PATH with an
// empty path names dir itself (or the cwd), and AT_SYMLINK_NOFOLLOW
// keeps a final symlink.
func (v *VFS) resolve(c *Ctx, dir *Dentry, path string, atFlags int) (*Dentry, error) {
	w := walker{v: v, c: c}
	if path == "" && atFlags&linux.AT_EMPTY_PATH != 0 {
		return w.start(dir, "."), nil
	}
	return w.lookup(w.start(dir, path), path, atFlags&linux.AT_SYMLINK_NOFOLLOW == 0)
}

// Lookup resolves path from dir (nil: the cwd) and returns its dentry.
// atFlags may hold AT_SYMLINK_NOFOLLOW and AT_EMPTY_PATH. Use it for
// chroot, exec and mount targets; Chdir checks what chdir(2) needs.
func (v *VFS) Lookup(c *Ctx, dir *Dentry, path string, atFlags int) (*Dentry, error) {
	return v.resolve(c, dir, path, atFlags)
}

// Chdir resolves the new working directory for chdir(2) (and fchdir with
// an empty path and AT_EMPTY_PATH): it must be a directory the caller
// may search.
func (v *VFS) Chdir(c *Ctx, dir *Dentry, path string, atFlags int) (*Dentry, error) {
	d, err := v.resolve(c, dir, path, atFlags)
	if err != nil {
		return nil, err
	}
	w := walker{v: v, c: c}
	if err := w.mayLookup(d); err != nil {
		return nil, err
	}
	return d, nil
}

// Getcwd returns the path of dir (normally the cwd) as getcwd(2) builds
// it: from the caller's root, or prefixed with "(unreachable)" when dir
// lies outside it. A directory that has been removed fails with ENOENT.
func (v *VFS) Getcwd(c *Ctx, dir *Dentry) (string, error) {
	w := walker{v: v, c: c}
	if dir == nil {
		dir = w.start(nil, ".")
	}
	if dir.dead.Load() {
		return "", linux.ENOENT
	}
	return w.path(dir), nil
}

// Path returns the path of d as /proc/self/fd and /proc/self/exe show
// it: like Getcwd, with " (deleted)" appended once d's name is gone.
func (v *VFS) Path(c *Ctx, d *Dentry) string {
	w := walker{v: v, c: c}
	if d.dead.Load() {
		return w.path(d) + " (deleted)"
	}
	return w.path(d)
}

// path builds the path of d from the caller's root. A rename that moves
// dentries meanwhile makes it start again, so the path is one that
// existed, not a mix of the names before and after.
func (w *walker) path(d *Dentry) string {
	for {
		seq := w.v.seq.Load()
		if seq&1 == 0 {
			if p := w.pathOnce(d); w.v.seq.Load() == seq {
				return p
			}
		}
		// A rename is moving dentries: wait for it (a few pointer
		// stores) by taking its lock.
		w.v.seqMu.Lock()
		w.v.seqMu.Unlock()
	}
}

func (w *walker) pathOnce(d *Dentry) string {
	root := w.root()
	var parts []string
	for d != root {
		l := d.where()
		if l.parent == nil {
			d = d.top() // a mount moved onto the top of the tree is there too
			break
		}
		parts = append(parts, l.name)
		d = l.parent
	}
	var b strings.Builder
	if d != root {
		b.WriteString("(unreachable)")
	}
	for i := len(parts) - 1; i >= 0; i-- {
		b.WriteByte('/')
		b.WriteString(parts[i])
	}
	if len(parts) == 0 {
		b.WriteByte('/')
	}
	return b.String()
}
