package vfs

import (
	"slices"

	"shortbread/kernel/abi/linux"
)

// dirFile is the File of an open directory. Its position counts entries:
// 0 is ".", 1 is "..", and from 2 on it is the file system's ReadDir
// position plus 2, so the d_off of each record resumes right after it.
type dirFile struct {
	v *VFS
	d *Dentry
	// done holds the names returned at position at that share it with
	// the entries after them (DirEntry.Shared), for the next getdents
	// from there to skip; a seek elsewhere makes it moot. Guarded by
	// the OpenFile's posMu.
	at   int64
	done []string
}

func (*dirFile) Read(Blocking, []byte, int64) (int, error)  { return 0, linux.EISDIR }
func (*dirFile) Write(Blocking, []byte, int64) (int, error) { return 0, linux.EISDIR }
func (*dirFile) Release()                                   {}

// Lseek allows SEEK_SET and SEEK_CUR, as tmpfs's dcache_dir_lseek does.
func (*dirFile) Lseek(pos, off int64, whence int) (int64, error) {
	switch whence {
	case linux.SEEK_SET, linux.SEEK_CUR:
		return seekWithin(pos, off, whence, 0)
	}
	return 0, linux.EINVAL
}

// getdents encodes records from position pos into buf and returns the
// bytes used and the position after the last record.
func (f *dirFile) getdents(pos int64, buf []byte) (int, int64, error) {
	dead := f.d.dead.Load()
	parent := f.d
	if p := f.d.parent(); f.d.mount.root != f.d && p != nil {
		parent = p // the fs root's ".." is itself, as in Linux
	}
	if dead {
		return 0, pos, linux.ENOENT
	}
	var skip []string
	if pos == f.at {
		skip = slices.Clip(f.done)
	}
	done := skip
	n, full := 0, false
	emit := func(name string, ino uint64, typ uint8, next int64, shared bool) bool {
		rec := linux.Dirent64{Ino: ino, Off: next, Type: typ, Name: name}
		m := rec.Encode(buf[n:])
		if m == 0 {
			full = true
			return false
		}
		n += m
		switch {
		case !shared:
			done = nil
		case next != pos:
			done = []string{name} // the first of a run at next
		default:
			done = append(done, name)
		}
		pos = next
		return true
	}
	ok := true
	if pos == 0 {
		a := f.d.inode.Attr()
		ok = emit(".", a.Ino, linux.DT_DIR, 1, false)
	}
	if ok && pos == 1 {
		a := parent.inode.Attr()
		ok = emit("..", a.Ino, linux.DT_DIR, 2, false)
	}
	if ok && pos >= 2 {
		err := f.d.inode.(Dir).ReadDir(pos-2, func(e DirEntry) bool {
			if slices.Contains(skip, e.Name) {
				return true
			}
			return emit(e.Name, e.Ino, e.Type, e.Next+2, e.Shared)
		})
		if err != nil && n == 0 {
			return 0, pos, err
		}
	}
	if n == 0 && full {
		return 0, pos, linux.EINVAL
	}
	f.at, f.done = pos, done
	return n, pos, nil
}
