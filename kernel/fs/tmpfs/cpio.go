package tmpfs

import (
	"fmt"
	"path"
	"strings"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/cpio"
	"shortbread/kernel/vfs"
)

// FromCPIO returns a file system holding the members of a newc archive,
// as Linux unpacks its initramfs (init/initramfs.c): names are taken
// relative to the root ("./bin/sh", "bin/sh" and "/bin/sh" alike),
// missing parent directories are made with mode 0755, a later member
// replaces an earlier one of the same name (a directory over a directory
// just takes the new owner and mode), and modification times are kept,
// the directories' set last so that filling them does not move them.
//
// cpio.Entry carries no device numbers and no inode numbers, so device
// nodes get device 0 and hard-linked members become separate files.
func FromCPIO(entries []cpio.Entry, o Options) (*FS, error) {
	fs := New(o)
	type dirTime struct {
		d     *dir
		mtime int64
	}
	var dirTimes []dirTime
	for _, e := range entries {
		name := path.Clean("/" + e.Name)
		owner := vfs.Owner{UID: e.UID, GID: e.GID}
		mtime := linux.Timespec{Sec: e.Mtime}
		if name == "/" {
			if e.Mode&linux.S_IFMT != linux.S_IFDIR {
				return nil, fmt.Errorf("tmpfs: cpio member %q: the root must be a directory", e.Name)
			}
			fs.root.SetAttr(&vfs.SetAttr{Mask: vfs.SetMode | vfs.SetUID | vfs.SetGID, Mode: e.Mode, UID: e.UID, GID: e.GID})
			dirTimes = append(dirTimes, dirTime{fs.root, e.Mtime})
			continue
		}
		parent, err := fs.mkdirAll(path.Dir(name))
		if err != nil {
			return nil, fmt.Errorf("tmpfs: cpio member %q: %w", e.Name, err)
		}
		base := path.Base(name)
		typ := e.Mode & linux.S_IFMT
		if old, err := parent.Lookup(base); err == nil {
			if od, ok := old.(*dir); ok && typ == linux.S_IFDIR {
				od.SetAttr(&vfs.SetAttr{Mask: vfs.SetMode | vfs.SetUID | vfs.SetGID, Mode: e.Mode, UID: e.UID, GID: e.GID})
				dirTimes = append(dirTimes, dirTime{od, e.Mtime})
				continue
			}
			if _, ok := old.(*dir); ok {
				err = parent.Rmdir(base)
			} else {
				err = parent.Unlink(base)
			}
			if err != nil {
				return nil, fmt.Errorf("tmpfs: cpio member %q replaces %w", e.Name, err)
			}
		}
		var in vfs.Inode
		switch typ {
		case linux.S_IFLNK:
			in, err = parent.Symlink(base, string(e.Data), owner)
		case linux.S_IFREG, linux.S_IFDIR, linux.S_IFCHR, linux.S_IFBLK, linux.S_IFIFO, linux.S_IFSOCK:
			in, err = parent.Create(base, e.Mode, 0, owner)
		default:
			err = fmt.Errorf("unknown file type %#o", typ)
		}
		if err != nil {
			return nil, fmt.Errorf("tmpfs: cpio member %q: %w", e.Name, err)
		}
		if f, ok := in.(*file); ok && len(e.Data) > 0 {
			if _, err := f.WriteAt(e.Data, 0); err != nil {
				return nil, fmt.Errorf("tmpfs: cpio member %q: %w", e.Name, err)
			}
		}
		if d, ok := in.(*dir); ok {
			dirTimes = append(dirTimes, dirTime{d, e.Mtime})
			continue
		}
		in.SetAttr(&vfs.SetAttr{Mask: vfs.SetAtime | vfs.SetMtime, Atime: mtime, Mtime: mtime})
	}
	for _, t := range dirTimes {
		ts := linux.Timespec{Sec: t.mtime}
		t.d.SetAttr(&vfs.SetAttr{Mask: vfs.SetAtime | vfs.SetMtime, Atime: ts, Mtime: ts})
	}
	return fs, nil
}

// mkdirAll returns the directory at the absolute, clean path p, making
// missing ones with mode 0755 owned by root.
func (fs *FS) mkdirAll(p string) (*dir, error) {
	d := fs.root
	for _, name := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		if name == "" {
			continue
		}
		in, err := d.Lookup(name)
		if err != nil {
			if in, err = d.Create(name, linux.S_IFDIR|0o755, 0, vfs.Owner{}); err != nil {
				return nil, err
			}
		}
		sub, ok := in.(*dir)
		if !ok {
			return nil, fmt.Errorf("%s is not a directory", name)
		}
		d = sub
	}
	return d, nil
}
