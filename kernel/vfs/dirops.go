package vfs

import (
	"errors"

	"shortbread/kernel/abi/linux"
)

// This file holds the calls that change directories: mkdir, mknod,
// symlink, link, unlink, rmdir and rename. Each walks to the directory
// without locks, then holds the directory's dirMu for writing (rename:
// those of both directories, see VFS), or in a ConcurrentNames directory
// the lock of its name (lockName; a rename within a ConcurrentRenames
// directory those of its two names, lockNames), from its check of the
// name to its dentry cache update.

// lockDir takes directory p's dirMu for a change to its names; it fails
// with ENOENT, holding nothing, when p was removed before the lock was
// won (Linux's IS_DEADDIR).
func lockDir(p *Dentry) error {
	p.dirMu.Lock()
	if p.dead.Load() {
		p.dirMu.Unlock()
		return linux.ENOENT
	}
	return nil
}

// lockName is lockDir for a change of name alone, which in a
// ConcurrentNames directory runs beside changes of other names.
func lockName(p *Dentry, name string) (nameHold, error) {
	h := p.dirMu.lockName(name)
	if p.dead.Load() {
		h.unlock()
		return nameHold{}, linux.ENOENT
	}
	return h, nil
}

// newName resolves the parent of a name about to be created, as
// filename_create does: "", "." and ".." and existing names fail with
// EEXIST, and a trailing slash with ENOENT unless dirOK. On success the
// parent's dirMu is held for the change of name (lockName): the caller
// unlocks it.
func (v *VFS) newName(w *walker, dir *Dentry, path string, dirOK bool) (*Dentry, string, nameHold, error) {
	if err := checkPath(path); err != nil {
		return nil, "", nameHold{}, err
	}
	p, name, trailing, err := w.parent(w.start(dir, path), path)
	if err != nil {
		return nil, "", nameHold{}, err
	}
	if name == "" || name == "." || name == ".." {
		return nil, "", nameHold{}, linux.EEXIST
	}
	h, err := lockName(p, name)
	if err != nil {
		return nil, "", nameHold{}, err
	}
	_, err = v.childLocked(p, name)
	switch {
	case err == nil:
		err = linux.EEXIST
	case !errors.Is(err, linux.ENOENT):
	case trailing && !dirOK:
		err = linux.ENOENT
	default:
		if _, ok := p.inode.(NoNewNames); ok {
			err = linux.ENOENT
			break
		}
		return p, name, h, nil
	}
	h.unlock()
	return nil, "", nameHold{}, err
}

// Mkdir makes a directory (mkdir(2), mkdirat(2)).
func (v *VFS) Mkdir(c *Ctx, dir *Dentry, path string, mode uint32) error {
	w := walker{v: v, c: c}
	p, name, h, err := v.newName(&w, dir, path, true)
	if err != nil {
		return err
	}
	defer h.unlock()
	_, err = v.create(c, p, name, linux.S_IFDIR|mode&^c.Umask&0o1777, 0)
	return err
}

// Mknod makes a regular file, device node, FIFO or socket node
// (mknod(2), mknodat(2)); device nodes need root.
func (v *VFS) Mknod(c *Ctx, dir *Dentry, path string, mode uint32, rdev uint64) error {
	switch mode & linux.S_IFMT {
	case 0:
		mode |= linux.S_IFREG
	case linux.S_IFREG, linux.S_IFIFO, linux.S_IFSOCK:
	case linux.S_IFCHR, linux.S_IFBLK:
		if !c.Cred.Superuser() {
			return linux.EPERM
		}
	case linux.S_IFDIR:
		return linux.EPERM
	default:
		return linux.EINVAL
	}
	w := walker{v: v, c: c}
	p, name, h, err := v.newName(&w, dir, path, false)
	if err != nil {
		return err
	}
	defer h.unlock()
	typ := mode & linux.S_IFMT
	if typ != linux.S_IFCHR && typ != linux.S_IFBLK {
		rdev = 0
	}
	_, err = v.create(c, p, name, typ|mode&^c.Umask&0o7777, rdev)
	return err
}

// Symlink makes a symbolic link holding target (symlink(2), symlinkat(2)).
func (v *VFS) Symlink(c *Ctx, target string, dir *Dentry, path string) error {
	if err := checkPath(target); err != nil {
		return err
	}
	w := walker{v: v, c: c}
	p, name, h, err := v.newName(&w, dir, path, false)
	if err != nil {
		return err
	}
	defer h.unlock()
	if err := v.mayCreate(c, p); err != nil {
		return err
	}
	owner, _ := c.newOwner(p, linux.S_IFLNK)
	ino, err := p.inode.(Dir).Symlink(name, target, owner)
	if err != nil {
		return err
	}
	notifyChild(p, InCreate, 0, name, false)
	p.addChild(name, ino)
	return nil
}

// Link gives the file oldPath names a new name newPath (link(2),
// linkat(2) with AT_SYMLINK_FOLLOW and AT_EMPTY_PATH).
func (v *VFS) Link(c *Ctx, oldDir *Dentry, oldPath string, newDir *Dentry, newPath string, atFlags int) error {
	if atFlags&^(linux.AT_SYMLINK_FOLLOW|linux.AT_EMPTY_PATH) != 0 {
		return linux.EINVAL
	}
	w := walker{v: v, c: c}
	var od *Dentry
	var err error
	if oldPath == "" && atFlags&linux.AT_EMPTY_PATH != 0 {
		od = w.start(oldDir, ".")
	} else if od, err = w.lookup(w.start(oldDir, oldPath), oldPath, atFlags&linux.AT_SYMLINK_FOLLOW != 0); err != nil {
		return err
	}
	p, name, h, err := v.newName(&w, newDir, newPath, false)
	if err != nil {
		return err
	}
	defer h.unlock()
	if od.mount != p.mount {
		return linux.EXDEV
	}
	if err := v.mayCreate(c, p); err != nil {
		return err
	}
	if od.IsDir() {
		return linux.EPERM
	}
	if a := od.inode.Attr(); a.Nlink == 0 {
		return linux.ENOENT
	}
	if err := p.inode.(Dir).Link(name, od.inode); err != nil {
		return err
	}
	if watching.Load() != 0 {
		notifyInode(od.inode, InAttrib, 0, "") // its link count
		notifyChild(p, InCreate, 0, name, false)
	}
	p.addChild(name, od.inode)
	return nil
}

// removal resolves the name an unlink or rmdir removes.
func (v *VFS) removal(w *walker, dir *Dentry, path string) (p *Dentry, name string, trailing bool, err error) {
	if err := checkPath(path); err != nil {
		return nil, "", false, err
	}
	return w.parent(w.start(dir, path), path)
}

// Unlink removes a name of a non-directory (unlink(2), unlinkat(2)).
func (v *VFS) Unlink(c *Ctx, dir *Dentry, path string) error {
	w := walker{v: v, c: c}
	p, name, trailing, err := v.removal(&w, dir, path)
	if err != nil {
		return err
	}
	if name == "" || name == "." || name == ".." {
		return linux.EISDIR
	}
	if p.mount.readOnly {
		return linux.EROFS
	}
	// The victim is held across its removal and let go of once the
	// directory is unlocked (after the deferred unlock below), so that
	// freeing what it held happens outside the lock.
	var held Holder
	defer func() {
		if held != nil {
			held.Drop()
		}
	}()
	h, err := lockName(p, name)
	if err != nil {
		return err
	}
	defer h.unlock()
	d, err := v.childLocked(p, name)
	switch {
	case err != nil:
		return err
	case d.IsDir():
		return linux.EISDIR
	case trailing:
		return linux.ENOTDIR
	}
	if err := mayDelete(c, p, d); err != nil {
		return err
	}
	if d.busy() {
		return linux.EBUSY
	}
	if h, ok := d.inode.(Holder); ok {
		h.Hold()
		held = h
	}
	if err := p.inode.(Dir).Unlink(name); err != nil {
		return err
	}
	if watching.Load() != 0 {
		notifyInode(d.inode, InAttrib, 0, "") // its link count
		if a := d.inode.Attr(); a.Nlink == 0 {
			notifyInode(d.inode, InDeleteSelf, 0, "")
		}
		notifyChild(p, InDelete, 0, name, false)
	}
	p.removeChild(name)
	return nil
}

// Rmdir removes an empty directory (rmdir(2), unlinkat(2) with AT_REMOVEDIR).
func (v *VFS) Rmdir(c *Ctx, dir *Dentry, path string) error {
	w := walker{v: v, c: c}
	p, name, _, err := v.removal(&w, dir, path)
	if err != nil {
		return err
	}
	switch name {
	case ".":
		return linux.EINVAL
	case "..":
		return linux.ENOTEMPTY
	case "":
		return linux.EBUSY
	}
	if p.mount.readOnly {
		return linux.EROFS
	}
	h, err := lockName(p, name)
	if err != nil {
		return err
	}
	defer h.unlock()
	d, err := v.childLocked(p, name)
	if err != nil {
		return err
	}
	if err := mayDelete(c, p, d); err != nil {
		return err
	}
	if !d.IsDir() {
		return linux.ENOTDIR
	}
	if d == w.root() {
		return linux.EBUSY
	}
	// The victim's own lock keeps names from being added to it between
	// the file system's emptiness check and the dentry turning dead,
	// which creators check once they hold it; and a mount from landing
	// on it (attach checks dead under it), so busy is checked under it.
	d.dirMu.lockNested()
	defer d.dirMu.unlockNested()
	if d.busy() {
		return linux.EBUSY
	}
	if err := p.inode.(Dir).Rmdir(name); err != nil {
		return err
	}
	if watching.Load() != 0 {
		notifyInode(d.inode, InDeleteSelf, 0, "") // no IN_ISDIR on Linux 6.1
		notifyChild(p, InDelete, 0, name, true)
	}
	p.removeChild(name)
	return nil
}

func mayDelete(c *Ctx, p, d *Dentry) error {
	if c.Cred.Superuser() {
		// Root may remove any name (a directory's write and search
		// bits do not bind it, nor the sticky bit): no attributes to
		// read while the directory is locked.
		return nil
	}
	pa, da := p.inode.Attr(), d.inode.Attr()
	return c.Cred.mayDelete(&pa, &da)
}

// isAncestor reports whether a is d or one of its ancestors.
func isAncestor(a, d *Dentry) bool {
	for ; d != nil; d = d.parent() {
		if d == a {
			return true
		}
	}
	return false
}

// Rename moves oldPath to newPath (rename(2), renameat(2), renameat2(2)
// with RENAME_NOREPLACE or RENAME_EXCHANGE), replacing what newPath
// names as POSIX says: a file by a file, an empty directory by a
// directory, atomically.
func (v *VFS) Rename(c *Ctx, oldDir *Dentry, oldPath string, newDir *Dentry, newPath string, flags uint32) error {
	exchange := flags&linux.RENAME_EXCHANGE != 0
	if flags&^(linux.RENAME_NOREPLACE|linux.RENAME_EXCHANGE) != 0 ||
		exchange && flags&linux.RENAME_NOREPLACE != 0 {
		return linux.EINVAL
	}
	if err := checkPath(oldPath); err != nil {
		return err
	}
	if err := checkPath(newPath); err != nil {
		return err
	}
	w := walker{v: v, c: c}
	op, oname, otrail, err := w.parent(w.start(oldDir, oldPath), oldPath)
	if err != nil {
		return err
	}
	np, nname, ntrail, err := w.parent(w.start(newDir, newPath), newPath)
	if err != nil {
		return err
	}
	if op.mount != np.mount {
		return linux.EXDEV
	}
	if !isNormal(oname) || !isNormal(nname) {
		return linux.EBUSY
	}
	if op.mount.readOnly {
		return linux.EROFS
	}
	unlock, err := v.lockRename(op, oname, np, nname)
	if err != nil {
		return err
	}
	defer unlock()
	od, err := v.childLocked(op, oname)
	if err != nil {
		return err
	}
	nd, err := v.childLocked(np, nname)
	switch {
	case err == nil:
		if flags&linux.RENAME_NOREPLACE != 0 {
			return linux.EEXIST
		}
	case errors.Is(err, linux.ENOENT) && !exchange:
		nd = nil
	default:
		return err
	}
	if exchange && ntrail && !nd.IsDir() {
		return linux.ENOTDIR
	}
	if !od.IsDir() && (otrail || !exchange && ntrail) {
		return linux.ENOTDIR
	}
	// Both parents are locked and, across directories, renameMu keeps
	// every directory's ancestors still: these answers stay true.
	if isAncestor(od, np) {
		return linux.EINVAL // a directory cannot move into itself
	}
	if nd != nil && isAncestor(nd, op) {
		if exchange {
			return linux.EINVAL
		}
		return linux.ENOTEMPTY
	}
	if nd != nil && od.inode == nd.inode {
		return nil // two names of one file: nothing to do
	}
	if err := v.mayRename(c, op, od, np, nd, nname); err != nil {
		return err
	}
	if nd != nil && !exchange {
		if od.IsDir() && !nd.IsDir() {
			return linux.ENOTDIR
		}
		if !od.IsDir() && nd.IsDir() {
			return linux.EISDIR
		}
	}
	// The directories that move to another parent, or go, are locked
	// too, source before target: a directory being removed must get no
	// new names, and mount checks its mount point under its lock.
	for _, d := range [2]*Dentry{od, nd} {
		if d != nil && d.IsDir() && (op != np || d == nd && !exchange) {
			d.dirMu.lockNested()
			defer d.dirMu.unlockNested()
		}
	}
	if od.busy() || nd != nil && nd.busy() {
		return linux.EBUSY
	}
	if err := op.inode.(Dir).Rename(oname, np.inode.(Dir), nname, flags); err != nil {
		return err
	}
	if watching.Load() != 0 {
		renamed(op, oname, od, np, nname, nd, exchange)
	}
	v.moved(op, oname, od, np, nname, nd, exchange)
	return nil
}

// lockRename takes the directory locks of a rename's parents: one for a
// rename within a directory (in a ConcurrentRenames directory only the
// locks of the two names, see below); else the tree's renameMu, then
// both, an ancestor before its descendant and otherwise the source's
// parent first (Documentation/filesystems/directory-locking.rst in Linux
// shows why this cannot deadlock with rmdir and other renames). A parent
// removed meanwhile fails with ENOENT, holding nothing.
//
// A rename within a ConcurrentRenames directory moves no directory to
// another parent, so it needs neither renameMu nor the directory whole:
// the locks of its two names exclude every other change, and every
// lookup, of either (creates and unlinks hold one, walks that ask the
// file system one for reading), and the file system orders the rename
// against changes of other names. A directory it replaces is still
// locked after (Rename), as rmdir locks its victim after its name. While
// inotify watches exist it holds the directory whole as before, so that
// a rename's IN_MOVED_FROM and IN_MOVED_TO stay adjacent among the
// directory's events.
func (v *VFS) lockRename(op *Dentry, oname string, np *Dentry, nname string) (unlock func(), err error) {
	if op == np && op.dirMu.renames && watching.Load() == 0 {
		h := op.dirMu.lockNames(oname, nname)
		if op.dead.Load() {
			h.unlock()
			return nil, linux.ENOENT
		}
		return h.unlock, nil
	}
	if op == np {
		if err := lockDir(op); err != nil {
			return nil, err
		}
		return op.dirMu.Unlock, nil
	}
	v.renameMu.Lock()
	first, second := op, np
	if isAncestor(np, op) {
		first, second = np, op
	}
	first.dirMu.Lock()
	second.dirMu.lockNested()
	unlock = func() {
		second.dirMu.unlockNested()
		first.dirMu.Unlock()
		v.renameMu.Unlock()
	}
	if op.dead.Load() || np.dead.Load() {
		unlock()
		return nil, linux.ENOENT
	}
	return unlock, nil
}

// moved updates the dentry cache after a rename, under the sequence lock
// that path building checks. Each name changes from its old dentry to
// its new one in one store, and the new name is in place before the old
// one goes: a walk sees a replaced name's old or new file, never none.
// Preconditions: the rename's directory locks are held.
func (v *VFS) moved(op *Dentry, oname string, od *Dentry, np *Dentry, nname string, nd *Dentry, exchange bool) {
	v.seqMu.Lock()
	v.seq.Add(1)
	np.children.Store(nname, od)
	switch {
	case nd != nil && exchange:
		op.children.Store(oname, nd)
		nd.link.Store(&dlink{name: oname, parent: op})
	case nd != nil:
		nd.dead.Store(true)
		op.children.CompareAndDelete(oname, od)
	default:
		op.children.CompareAndDelete(oname, od)
	}
	od.link.Store(&dlink{name: nname, parent: np})
	v.seq.Add(1)
	v.seqMu.Unlock()
}

// renamed raises a rename's events: IN_MOVED_FROM and IN_MOVED_TO
// sharing a cookie on the two directories, IN_MOVE_SELF on what moved
// (both ways for an exchange), and IN_DELETE_SELF on a file the rename
// replaced if that was its last link.
func renamed(op *Dentry, oname string, od *Dentry, np *Dentry, nname string, nd *Dentry, exchange bool) {
	cookie := nextCookie()
	notifyChild(op, InMovedFrom, cookie, oname, od.IsDir())
	notifyChild(np, InMovedTo, cookie, nname, od.IsDir())
	notifyInode(od.inode, InMoveSelf, 0, "") // no IN_ISDIR, as on Linux 6.1
	switch {
	case nd != nil && exchange:
		cookie = nextCookie()
		notifyChild(np, InMovedFrom, cookie, nname, nd.IsDir())
		notifyChild(op, InMovedTo, cookie, oname, nd.IsDir())
		notifyInode(nd.inode, InMoveSelf, 0, "")
	case nd != nil:
		if a := nd.inode.Attr(); a.Nlink == 0 {
			notifyInode(nd.inode, InDeleteSelf, 0, "")
		}
	}
}

func isNormal(name string) bool { return name != "" && name != "." && name != ".." }

// mayRename checks the permissions of a rename: removing the old name,
// removing or adding the new one, and moving a directory to a new
// parent, which rewrites its "..".
func (v *VFS) mayRename(c *Ctx, op, od, np, nd *Dentry, nname string) error {
	if err := mayDelete(c, op, od); err != nil {
		return err
	}
	if nd != nil {
		if err := mayDelete(c, np, nd); err != nil {
			return err
		}
	} else if err := v.mayCreate(c, np); err != nil {
		return err
	}
	if op != np {
		for _, d := range []*Dentry{od, nd} {
			if d != nil && d.IsDir() {
				a := d.inode.Attr()
				if !c.Cred.Permits(&a, linux.W_OK) {
					return linux.EACCES
				}
			}
		}
	}
	return nil
}
