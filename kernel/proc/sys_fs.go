package proc

// Calls about file systems rather than files: statfs and fstatfs.

import "shortbread/kernel/vfs"

func sysStatfs(t *Thread, a *[6]uint64) (int64, bool) {
	path, err := t.path(a[0])
	if err != nil {
		return errno(err), false
	}
	d, err := fsys.Lookup(t.ctx(), nil, path, 0)
	if err != nil {
		return errno(err), false
	}
	return t.putStatFS(a[1], d.Mount().StatFS()), false
}

func sysFstatfs(t *Thread, a *[6]uint64) (int64, bool) {
	f, err := t.file(int(int32(a[0])))
	if err != nil {
		return errno(err), false
	}
	defer f.DecRef()
	return t.putStatFS(a[1], f.StatFS()), false
}

func (t *Thread) putStatFS(at uint64, s vfs.StatFS) int64 {
	b := s.Encode()
	return errno(t.Proc.Space().CopyOut(uintptr(at), b[:]))
}
