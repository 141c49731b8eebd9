package proc

// Extended attributes: getxattr, setxattr, listxattr, removexattr and
// their l* (no following a final symlink) and f* (descriptor) variants.
// No file system here keeps extended attributes, so every name is
// EOPNOTSUPP and every list empty, after Linux's checks in its order:
// the file (ENOENT, EBADF...), the flags (EINVAL), the name (ERANGE when
// empty or longer than XATTR_NAME_MAX), the value's size (E2BIG), then
// the namespace's permission rule (xattr_permission). That is what
// Linux 6.1's tmpfs answers for user.* (it gained user.* in 6.6); it
// differs where Linux keeps attributes: trusted.* and security.* on
// tmpfs, and ext4.

import (
	"errors"
	"strings"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/mm"
	"shortbread/kernel/vfs"
)

// noFD marks a call that names its file by path.
const noFD = -2 << 40

const (
	xattrNameMax = 255
	xattrSizeMax = 1 << 16
	xattrCreate  = 1
	xattrReplace = 2
)

// xattrTarget returns the attributes of the file an xattr call names:
// path (following a final symlink unless nofollow) or, when fd is not
// noFD (the f* calls), descriptor fd.
func (t *Thread) xattrTarget(pathAt uint64, fd int, nofollow bool) (vfs.Attr, int64) {
	if fd != noFD {
		f, err := t.file(fd)
		if err != nil {
			return vfs.Attr{}, errno(err)
		}
		defer f.DecRef()
		if f.IsPath() {
			return vfs.Attr{}, -eBADF
		}
		return f.Attr(), 0
	}
	dir, path, e := t.atPath(uint64(linux.AT_FDCWD&0xffffffff), pathAt)
	if e != 0 {
		return vfs.Attr{}, e
	}
	flags := 0
	if nofollow {
		flags = linux.AT_SYMLINK_NOFOLLOW
	}
	a, err := fsys.Stat(t.ctx(), dir, path, flags)
	if err != nil {
		return vfs.Attr{}, errno(err)
	}
	return a, 0
}

// xattrName reads and checks an attribute's name.
func (t *Thread) xattrName(at uint64) (string, int64) {
	name, err := t.Proc.Space().CopyInString(uintptr(at), xattrNameMax+1)
	if errors.Is(err, mm.ErrNameTooLong) || err == nil && name == "" {
		return "", -int64(linux.ERANGE)
	}
	if err != nil {
		return "", errno(err)
	}
	return name, 0
}

// xattrAllowed applies xattr_permission: trusted.* is root's (others get
// EPERM writing, ENODATA reading); user.* lives only on regular files
// and directories (the same answers elsewhere) and needs the file's
// read or write permission (EACCES).
func (t *Thread) xattrAllowed(a vfs.Attr, name string, write bool) int64 {
	c := t.cred()
	denied := -int64(linux.ENODATA)
	if write {
		denied = -ePERM
	}
	switch {
	case strings.HasPrefix(name, "trusted."):
		if !c.Superuser() {
			return denied
		}
	case strings.HasPrefix(name, "user."):
		if a.Type() != linux.S_IFREG && a.Type() != linux.S_IFDIR {
			return denied
		}
		want := uint32(linux.R_OK)
		if write {
			want = linux.W_OK
		}
		if !c.Permits(&a, want) {
			return -eACCES
		}
	}
	return 0
}

// getxattr(path, name, value, size), lgetxattr, fgetxattr(fd, ...).
func (t *Thread) getxattr(pathAt uint64, fd int, nofollow bool, nameAt uint64) int64 {
	a, e := t.xattrTarget(pathAt, fd, nofollow)
	if e != 0 {
		return e
	}
	name, e := t.xattrName(nameAt)
	if e != 0 {
		return e
	}
	if e := t.xattrAllowed(a, name, false); e != 0 {
		return e
	}
	return -eOPNOTSUPP
}

// setxattr(path, name, value, size, flags), lsetxattr, fsetxattr.
func (t *Thread) setxattr(pathAt uint64, fd int, nofollow bool, a *[6]uint64) int64 {
	at, e := t.xattrTarget(pathAt, fd, nofollow)
	if e != 0 {
		return e
	}
	if a[4]&^(xattrCreate|xattrReplace) != 0 {
		return -eINVAL
	}
	name, e := t.xattrName(a[1])
	if e != 0 {
		return e
	}
	if a[3] > xattrSizeMax {
		return -int64(linux.E2BIG)
	}
	if a[3] > 0 {
		if err := t.Proc.Space().CopyIn(uintptr(a[2]), make([]byte, a[3])); err != nil {
			return errno(err)
		}
	}
	if e := t.xattrAllowed(at, name, true); e != 0 {
		return e
	}
	return -eOPNOTSUPP
}

// removexattr(path, name), lremovexattr, fremovexattr.
func (t *Thread) removexattr(pathAt uint64, fd int, nofollow bool, nameAt uint64) int64 {
	a, e := t.xattrTarget(pathAt, fd, nofollow)
	if e != 0 {
		return e
	}
	name, e := t.xattrName(nameAt)
	if e != 0 {
		return e
	}
	if e := t.xattrAllowed(a, name, true); e != 0 {
		return e
	}
	return -eOPNOTSUPP
}

// listxattr(path, list, size), llistxattr, flistxattr: no names.
func (t *Thread) listxattr(pathAt uint64, fd int, nofollow bool) int64 {
	_, e := t.xattrTarget(pathAt, fd, nofollow)
	return e
}

func sysGetxattr(t *Thread, a *[6]uint64) (int64, bool) {
	return t.getxattr(a[0], noFD, false, a[1]), false
}
func sysLgetxattr(t *Thread, a *[6]uint64) (int64, bool) {
	return t.getxattr(a[0], noFD, true, a[1]), false
}
func sysFgetxattr(t *Thread, a *[6]uint64) (int64, bool) {
	return t.getxattr(0, int(int32(a[0])), false, a[1]), false
}
func sysSetxattr(t *Thread, a *[6]uint64) (int64, bool) {
	return t.setxattr(a[0], noFD, false, a), false
}
func sysLsetxattr(t *Thread, a *[6]uint64) (int64, bool) {
	return t.setxattr(a[0], noFD, true, a), false
}
func sysFsetxattr(t *Thread, a *[6]uint64) (int64, bool) {
	return t.setxattr(0, int(int32(a[0])), false, a), false
}
func sysListxattr(t *Thread, a *[6]uint64) (int64, bool) {
	return t.listxattr(a[0], noFD, false), false
}
func sysLlistxattr(t *Thread, a *[6]uint64) (int64, bool) {
	return t.listxattr(a[0], noFD, true), false
}
func sysFlistxattr(t *Thread, a *[6]uint64) (int64, bool) {
	return t.listxattr(0, int(int32(a[0])), false), false
}
func sysRemovexattr(t *Thread, a *[6]uint64) (int64, bool) {
	return t.removexattr(a[0], noFD, false, a[1]), false
}
func sysLremovexattr(t *Thread, a *[6]uint64) (int64, bool) {
	return t.removexattr(a[0], noFD, true, a[1]), false
}
func sysFremovexattr(t *Thread, a *[6]uint64) (int64, bool) {
	return t.removexattr(0, int(int32(a[0])), false, a[1]), false
}
