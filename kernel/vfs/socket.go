package vfs

import (
	"errors"

	"shortbread/kernel/abi/linux"
)

// This file holds what a socket family with file-system names (AF_UNIX)
// needs from the VFS: making a socket node at bind(2) and finding one at
// connect(2). The family keeps its own table from the node's inode to the
// bound socket, as Linux keeps it in the inode.

// BindSocket makes a socket node at path, with the permission bits in
// mode less the umask, and returns its inode. An existing name fails
// with EADDRINUSE (Linux turns mknod's EEXIST into that), a missing
// directory with ENOENT; the caller needs write and search permission on
// the directory.
func (v *VFS) BindSocket(c *Ctx, dir *Dentry, path string, mode uint32) (Inode, error) {
	w := walker{v: v, c: c}
	p, name, h, err := v.newName(&w, dir, path, false)
	if errors.Is(err, linux.EEXIST) {
		return nil, linux.EADDRINUSE
	}
	if err != nil {
		return nil, err
	}
	defer h.unlock()
	d, err := v.create(c, p, name, linux.S_IFSOCK|mode&^c.Umask&0o7777, 0)
	if err != nil {
		return nil, err
	}
	return d.inode, nil
}

// FindSocket returns the inode of the socket node path names, following
// symbolic links, for connect(2) and sendto(2): the caller needs write
// permission on it (EACCES); a name that is not a socket fails with
// ECONNREFUSED, as on Linux.
func (v *VFS) FindSocket(c *Ctx, dir *Dentry, path string) (Inode, error) {
	d, err := v.Lookup(c, dir, path, 0)
	if err != nil {
		return nil, err
	}
	a := d.inode.Attr()
	if !c.Cred.Permits(&a, linux.W_OK) {
		return nil, linux.EACCES
	}
	if d.mode != linux.S_IFSOCK {
		return nil, linux.ECONNREFUSED
	}
	return d.inode, nil
}

// Refs returns the open file's reference count. AF_UNIX's collector of
// sockets in flight uses it to find sockets that only queued messages
// still hold.
func (f *OpenFile) Refs() int64 { return f.refs.Load() }
