package vfs

import "shortbread/kernel/abi/linux"

// This file holds the calls that read and change attributes: stat,
// access, chmod, chown, utimensat, truncate and readlink, by path and by
// open file.

// Stat returns the attributes of path, as stat(2), lstat(2) (with
// AT_SYMLINK_NOFOLLOW) and fstatat(2) (with AT_EMPTY_PATH) report them.
func (v *VFS) Stat(c *Ctx, dir *Dentry, path string, atFlags int) (Attr, error) {
	if atFlags&^(linux.AT_SYMLINK_NOFOLLOW|linux.AT_EMPTY_PATH|linux.AT_NO_AUTOMOUNT|linux.AT_STATX_SYNC_TYPE) != 0 {
		return Attr{}, linux.EINVAL
	}
	d, err := v.Lookup(c, dir, path, atFlags)
	if err != nil {
		return Attr{}, err
	}
	return d.inode.Attr(), nil
}

// Statx returns the attributes of path as statx(2) reports them, with
// its checks: the AT_STATX_SYNC_TYPE bits may not both be set and the
// mask may not ask for STATX__RESERVED.
func (v *VFS) Statx(c *Ctx, dir *Dentry, path string, atFlags int, mask uint32) (linux.Statx, error) {
	if atFlags&linux.AT_STATX_SYNC_TYPE == linux.AT_STATX_SYNC_TYPE || mask&linux.STATX__RESERVED != 0 {
		return linux.Statx{}, linux.EINVAL
	}
	if atFlags&^(linux.AT_SYMLINK_NOFOLLOW|linux.AT_EMPTY_PATH|linux.AT_NO_AUTOMOUNT|linux.AT_STATX_SYNC_TYPE) != 0 {
		return linux.Statx{}, linux.EINVAL
	}
	d, err := v.Lookup(c, dir, path, atFlags)
	if err != nil {
		return linux.Statx{}, err
	}
	a := d.inode.Attr()
	x := a.Statx(mask)
	x.Mask |= linux.STATX_MNT_ID
	x.MntID = d.mount.id
	if d.mount.root == d {
		x.Attributes |= linux.STATX_ATTR_MOUNT_ROOT
	}
	x.AttributesMask = linux.STATX_ATTR_MOUNT_ROOT
	return x, nil
}

// Statx returns the attributes of the open file as statx(2) with
// AT_EMPTY_PATH reports them.
func (f *OpenFile) Statx(mask uint32) (linux.Statx, error) {
	if mask&linux.STATX__RESERVED != 0 {
		return linux.Statx{}, linux.EINVAL
	}
	a := f.inode.Attr()
	x := a.Statx(mask)
	if d := f.dentry; d != nil {
		x.Mask |= linux.STATX_MNT_ID
		x.MntID = d.mount.id
		if d.mount.root == d {
			x.Attributes |= linux.STATX_ATTR_MOUNT_ROOT
		}
		x.AttributesMask = linux.STATX_ATTR_MOUNT_ROOT
	}
	return x, nil
}

// Access checks path for access(2) and faccessat(2): mode is F_OK or a
// mix of R_OK, W_OK and X_OK, checked with the real IDs unless atFlags
// holds AT_EACCESS.
func (v *VFS) Access(c *Ctx, dir *Dentry, path string, mode uint32, atFlags int) error {
	if mode&^7 != 0 || atFlags&^(linux.AT_EACCESS|linux.AT_SYMLINK_NOFOLLOW|linux.AT_EMPTY_PATH) != 0 {
		return linux.EINVAL
	}
	d, err := v.Lookup(c, dir, path, atFlags)
	if err != nil {
		return err
	}
	if mode == linux.F_OK {
		return nil
	}
	a := d.inode.Attr()
	ok := c.Cred.permitsReal(&a, mode)
	if atFlags&linux.AT_EACCESS != 0 {
		ok = c.Cred.Permits(&a, mode)
	}
	if !ok {
		return linux.EACCES
	}
	if mode&linux.W_OK != 0 && d.mount.readOnly && d.mode != linux.S_IFCHR && d.mode != linux.S_IFBLK &&
		d.mode != linux.S_IFIFO && d.mode != linux.S_IFSOCK {
		return linux.EROFS
	}
	return nil
}

// Readlink returns the target of the symlink path names (readlink(2)).
// With AT_EMPTY_PATH and an empty path it reads the symlink dir itself
// (an O_PATH descriptor of one).
func (v *VFS) Readlink(c *Ctx, dir *Dentry, path string, atFlags int) (string, error) {
	d, err := v.Lookup(c, dir, path, atFlags|linux.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return "", err
	}
	if d.mode != linux.S_IFLNK {
		if path == "" {
			return "", linux.ENOENT
		}
		return "", linux.EINVAL
	}
	return readlink(c, d)
}

// Chmod sets the permission bits of path (chmod(2), fchmodat(2)).
func (v *VFS) Chmod(c *Ctx, dir *Dentry, path string, mode uint32, atFlags int) error {
	if atFlags&^(linux.AT_SYMLINK_NOFOLLOW|linux.AT_EMPTY_PATH) != 0 {
		return linux.EINVAL
	}
	d, err := v.Lookup(c, dir, path, atFlags)
	if err != nil {
		return err
	}
	if d.mode == linux.S_IFLNK {
		return linux.EOPNOTSUPP // fchmodat2 with AT_SYMLINK_NOFOLLOW on a symlink
	}
	return attrChanged(d, chmod(&c.Cred, d.inode, d.mount, mode))
}

// Chmod sets the permission bits of the open file (fchmod(2)).
func (f *OpenFile) Chmod(c *Cred, mode uint32) error {
	if f.IsPath() {
		return linux.EBADF
	}
	return attrChanged(f.dentry, chmod(c, f.inode, f.mount(), mode))
}

// attrChanged raises IN_ATTRIB for d after a change that succeeded.
func attrChanged(d *Dentry, err error) error {
	if err == nil {
		notifyFile(d, InAttrib)
	}
	return err
}

func (f *OpenFile) mount() *Mount {
	if f.dentry == nil {
		return nil
	}
	return f.dentry.mount
}

func chmod(c *Cred, ino Inode, m *Mount, mode uint32) error {
	a := ino.Attr()
	if !c.Owns(&a) {
		return linux.EPERM
	}
	if m != nil && m.readOnly {
		return linux.EROFS
	}
	mode &= 0o7777
	if !c.Superuser() && !c.InGroup(a.GID) {
		mode &^= linux.S_ISGID
	}
	return ino.SetAttr(&SetAttr{Mask: SetMode, Mode: mode})
}

// NoChange is the uid or gid that chown leaves as it is (-1).
const NoChange = ^uint32(0)

// Chown changes the owner and group of path (chown(2), lchown(2) with
// AT_SYMLINK_NOFOLLOW, fchownat(2)); NoChange keeps one as it is.
func (v *VFS) Chown(c *Ctx, dir *Dentry, path string, uid, gid uint32, atFlags int) error {
	if atFlags&^(linux.AT_SYMLINK_NOFOLLOW|linux.AT_EMPTY_PATH) != 0 {
		return linux.EINVAL
	}
	d, err := v.Lookup(c, dir, path, atFlags)
	if err != nil {
		return err
	}
	return attrChanged(d, chown(&c.Cred, d.inode, d.mount, uid, gid))
}

// Chown changes the owner and group of the open file (fchown(2)).
func (f *OpenFile) Chown(c *Cred, uid, gid uint32) error {
	if f.IsPath() {
		return linux.EBADF
	}
	return attrChanged(f.dentry, chown(c, f.inode, f.mount(), uid, gid))
}

// chown applies chown_ok and chgrp_ok from fs/attr.c: only root gives a
// file away; the owner may change its group to one of its own groups.
// A non-directory loses its set-user-ID bit, and its set-group-ID bit
// when group-executable, as Linux's ATTR_KILL_SUID and ATTR_KILL_SGID do.
func chown(c *Cred, ino Inode, m *Mount, uid, gid uint32) error {
	a := ino.Attr()
	s := SetAttr{}
	if uid != NoChange {
		if !c.Superuser() && (c.EUID != a.UID || uid != a.UID) {
			return linux.EPERM
		}
		s.Mask |= SetUID
		s.UID = uid
	}
	if gid != NoChange {
		if !c.Superuser() && (c.EUID != a.UID || gid != a.GID && !c.InGroup(gid)) {
			return linux.EPERM
		}
		s.Mask |= SetGID
		s.GID = gid
	}
	if m != nil && m.readOnly {
		return linux.EROFS
	}
	if s.Mask != 0 && a.Type() != linux.S_IFDIR {
		mode := a.Mode &^ linux.S_ISUID
		if mode&linux.S_IXGRP != 0 {
			mode &^= linux.S_ISGID
		}
		if mode != a.Mode {
			s.Mask |= SetMode
			s.Mode = mode & 0o7777
		}
	}
	return ino.SetAttr(&s)
}

// Utimens sets the access and modification times of path
// (utimensat(2)). times nil means both now; a Nsec of UTIME_NOW means
// now and UTIME_OMIT leaves that time alone.
//
// The times are checked after the path is looked up, as do_utimes_path
// and vfs_utimes order it: a missing file is ENOENT whatever the times.
func (v *VFS) Utimens(c *Ctx, dir *Dentry, path string, times *[2]linux.Timespec, atFlags int) error {
	if atFlags&^(linux.AT_SYMLINK_NOFOLLOW|linux.AT_EMPTY_PATH) != 0 {
		return linux.EINVAL
	}
	d, err := v.Lookup(c, dir, path, atFlags)
	if err != nil {
		return err
	}
	if err := checkTimes(times); err != nil {
		return err
	}
	return attrChanged(d, utimens(&c.Cred, d.inode, d.mount, times))
}

// Utimens sets the times of the open file (futimens(3)).
func (f *OpenFile) Utimens(c *Cred, times *[2]linux.Timespec) error {
	if f.IsPath() {
		return linux.EBADF
	}
	if err := checkTimes(times); err != nil {
		return err
	}
	return attrChanged(f.dentry, utimens(c, f.inode, f.mount(), times))
}

func checkTimes(times *[2]linux.Timespec) error {
	if times == nil {
		return nil
	}
	for _, t := range times {
		if t.Nsec != linux.UTIME_NOW && t.Nsec != linux.UTIME_OMIT && (t.Nsec < 0 || t.Nsec > 999999999) {
			return linux.EINVAL
		}
	}
	return nil
}

// utimens applies the rules of vfs_utimes: setting both times to now
// needs ownership or write permission, anything else ownership.
func utimens(c *Cred, ino Inode, m *Mount, times *[2]linux.Timespec) error {
	t := [2]linux.Timespec{Now, Now}
	if times != nil {
		t = *times
	}
	if t[0].Nsec == linux.UTIME_OMIT && t[1].Nsec == linux.UTIME_OMIT {
		return nil
	}
	if m != nil && m.readOnly {
		return linux.EROFS
	}
	a := ino.Attr()
	if !c.Owns(&a) {
		allNow := (t[0].Nsec == linux.UTIME_NOW || t[0].Nsec == linux.UTIME_OMIT) &&
			(t[1].Nsec == linux.UTIME_NOW || t[1].Nsec == linux.UTIME_OMIT)
		if !allNow {
			return linux.EPERM
		}
		if !c.Permits(&a, linux.W_OK) {
			return linux.EACCES
		}
	}
	s := SetAttr{Atime: t[0], Mtime: t[1]}
	if t[0].Nsec != linux.UTIME_OMIT {
		s.Mask |= SetAtime
	}
	if t[1].Nsec != linux.UTIME_OMIT {
		s.Mask |= SetMtime
	}
	return ino.SetAttr(&s)
}

// Truncate sets the size of the regular file path names (truncate(2)).
func (v *VFS) Truncate(c *Ctx, dir *Dentry, path string, size int64) error {
	if size < 0 {
		return linux.EINVAL
	}
	d, err := v.Lookup(c, dir, path, 0)
	if err != nil {
		return err
	}
	switch d.mode {
	case linux.S_IFDIR:
		return linux.EISDIR
	case linux.S_IFREG:
	default:
		return linux.EINVAL
	}
	a := d.inode.Attr()
	if !c.Cred.Permits(&a, linux.W_OK) {
		return linux.EACCES
	}
	if d.mount.readOnly {
		return linux.EROFS
	}
	if err := checkNotRunning(d.inode); err != nil {
		return err
	}
	if err := breakLease(d.inode, true, false, c); err != nil {
		return err
	}
	if err := killSetID(&c.Cred, d.inode); err != nil {
		return err
	}
	if err := truncate(d.inode, size); err != nil {
		return err
	}
	notifyFile(d, InModify)
	return nil
}

// KillSetID prepares a write or truncation of the file by the caller
// whose credentials cred returns: a regular file loses its set-user-ID
// bit, and its set-group-ID bit when group-executable or when the writer
// is not in the file's group, unless the writer is root (holds
// CAP_FSETID), as Linux's file_remove_privs does. Without
// it, a user allowed to write another user's set-user-ID program could
// put code of its own behind that user's rights. cred is called only
// when a bit is set, so a write of a plain file takes no credentials.
// A file not open for writing keeps its bits: the write will fail.
func (f *OpenFile) KillSetID(cred func() *Cred) error {
	if f.dentry == nil || f.dentry.mode != linux.S_IFREG || !f.writable() {
		return nil
	}
	if a := f.inode.Attr(); setIDToKill(&a) == 0 {
		return nil
	}
	return killSetID(cred(), f.inode)
}

// setIDToKill returns the set-ID bits a write by an unprivileged user
// may clear: set-user-ID always, set-group-ID when group-executable or
// (see killSetID) when the writer is not in the file's group.
func setIDToKill(a *Attr) uint32 {
	return a.Mode & (linux.S_ISUID | linux.S_ISGID)
}

func killSetID(c *Cred, ino Inode) error {
	a := ino.Attr()
	kill := setIDToKill(&a)
	if kill == 0 || c.Superuser() || a.Type() != linux.S_IFREG {
		return nil
	}
	// Set-group-ID without group execute is kept for a member of the
	// group (Linux's setattr_should_drop_sgid).
	if a.Mode&linux.S_IXGRP == 0 && c.InGroup(a.GID) {
		kill &^= linux.S_ISGID
	}
	return ino.SetAttr(&SetAttr{Mask: SetMode, Mode: a.Mode & 0o7777 &^ kill})
}

// truncate sets a regular file's size; like do_truncate it always
// updates mtime and ctime.
func truncate(ino Inode, size int64) error {
	return ino.SetAttr(&SetAttr{Mask: SetSize | SetMtime, Size: size, Mtime: Now})
}

// Allocator is implemented by regular-file inodes that support
// fallocate(2); the VFS has checked mode and range.
type Allocator interface {
	Allocate(mode uint32, off, n int64) error
}

// Fallocate is fallocate(2) on f, with Linux's checks in its order
// (vfs_fallocate): the range (EINVAL), modes no file system has or that
// do not go together (EOPNOTSUPP), a descriptor open for writing
// (EBADF), the kind of file (ESPIPE, EISDIR, ENODEV), the size limit
// (EFBIG), then what the file system supports (EOPNOTSUPP).
func (f *OpenFile) Fallocate(mode uint32, off, n int64) error {
	const known = linux.FALLOC_FL_KEEP_SIZE | linux.FALLOC_FL_PUNCH_HOLE | linux.FALLOC_FL_NO_HIDE_STALE |
		linux.FALLOC_FL_COLLAPSE_RANGE | linux.FALLOC_FL_ZERO_RANGE | linux.FALLOC_FL_INSERT_RANGE |
		linux.FALLOC_FL_UNSHARE_RANGE
	const punch = linux.FALLOC_FL_PUNCH_HOLE
	switch {
	case f.IsPath():
		return linux.EBADF
	case off < 0 || n <= 0:
		return linux.EINVAL
	case mode&^known != 0,
		mode&(punch|linux.FALLOC_FL_ZERO_RANGE) == punch|linux.FALLOC_FL_ZERO_RANGE,
		mode&punch != 0 && mode&linux.FALLOC_FL_KEEP_SIZE == 0:
		return linux.EOPNOTSUPP
	case !f.writable():
		return linux.EBADF
	}
	at := f.inode.Attr()
	switch at.Type() {
	case linux.S_IFREG:
	case linux.S_IFIFO:
		return linux.ESPIPE
	case linux.S_IFDIR:
		return linux.EISDIR
	default:
		return linux.ENODEV
	}
	if off+n < 0 {
		return linux.EFBIG
	}
	a, ok := f.inode.(Allocator)
	if !ok || mode&^(linux.FALLOC_FL_KEEP_SIZE|punch) != 0 {
		return linux.EOPNOTSUPP
	}
	return a.Allocate(mode, off, n)
}
