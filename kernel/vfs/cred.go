package vfs

import "shortbread/kernel/abi/linux"

// Cred is who performs a file operation. The zero Cred is root.
type Cred struct {
	UID, GID   uint32 // real IDs: access(2) checks with these
	EUID, EGID uint32 // effective IDs: every other check, and new files' owner
	Groups     []uint32
}

// Root is the superuser's Cred.
var Root = Cred{}

// Superuser reports whether c holds root's powers (CAP_DAC_OVERRIDE,
// CAP_FOWNER, CAP_CHOWN: the kernel has no finer capabilities yet).
func (c *Cred) Superuser() bool { return c.EUID == 0 }

// InGroup reports whether gid is c's effective group or a supplementary one.
func (c *Cred) InGroup(gid uint32) bool {
	if c.EGID == gid {
		return true
	}
	for _, g := range c.Groups {
		if g == gid {
			return true
		}
	}
	return false
}

// Permits reports whether c may access a file with attributes a in the
// ways want asks (linux.R_OK, W_OK, X_OK bits), as generic_permission
// decides: the owner's, group's or others' bits, and root may do
// anything except execute a file that has no execute bit at all.
func (c *Cred) Permits(a *Attr, want uint32) bool {
	return permits(c.EUID, c.EGID, c, a, want)
}

// permitsReal is Permits with the real IDs, for access(2).
func (c *Cred) permitsReal(a *Attr, want uint32) bool {
	return permits(c.UID, c.GID, c, a, want)
}

func permits(uid, gid uint32, c *Cred, a *Attr, want uint32) bool {
	if uid == 0 {
		if want&linux.X_OK == 0 || a.Type() == linux.S_IFDIR {
			return true
		}
		return a.Mode&(linux.S_IXUSR|linux.S_IXGRP|linux.S_IXOTH) != 0
	}
	var bits uint32
	switch {
	case uid == a.UID:
		bits = a.Mode >> 6
	case gid == a.GID || c.InGroup(a.GID):
		bits = a.Mode >> 3
	default:
		bits = a.Mode
	}
	return want&^bits&7 == 0
}

// Owns reports whether c may change a file's attributes as its owner
// (inode_owner_or_capable).
func (c *Cred) Owns(a *Attr) bool {
	return c.Superuser() || c.EUID == a.UID
}

// mayDelete reports whether c may remove or replace a name for the file
// with attributes child in the directory with attributes dir: write and
// search on the directory, and with the sticky bit set, ownership of the
// file or of the directory (may_delete and check_sticky in fs/namei.c).
func (c *Cred) mayDelete(dir, child *Attr) error {
	if !c.Permits(dir, linux.W_OK|linux.X_OK) {
		return linux.EACCES
	}
	if dir.Mode&linux.S_ISVTX != 0 && !c.Superuser() && c.EUID != child.UID && c.EUID != dir.UID {
		return linux.EPERM
	}
	return nil
}
