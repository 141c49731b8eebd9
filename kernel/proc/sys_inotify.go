package proc

// inotify(7): the system calls decode and check; package vfs keeps the
// watches and raises the events.

import (
	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

func init() {
	for no, e := range map[uint64]Entry{
		253: {"inotify_init", sysInotifyInit},
		254: {"inotify_add_watch", sysInotifyAddWatch},
		255: {"inotify_rm_watch", sysInotifyRmWatch},
		294: {"inotify_init1", sysInotifyInit1},
	} {
		syscalls[no] = e
	}
}

func sysInotifyInit(t *Thread, a *[6]uint64) (int64, bool) { return t.inotifyInit(0), false }

func sysInotifyInit1(t *Thread, a *[6]uint64) (int64, bool) {
	return t.inotifyInit(int(int32(a[0]))), false
}

func (t *Thread) inotifyInit(flags int) int64 {
	c := t.creds()
	f, err := vfs.NewInotify(c.ruid, flags)
	if err != nil {
		return errno(err)
	}
	defer f.DecRef()
	fd, err := t.Proc.files.Install(f, flags&linux.O_CLOEXEC != 0)
	return fdResult(fd, err)
}

// inotify returns the instance behind fd: EBADF for a bad descriptor,
// EINVAL for one that is not an inotify instance.
func (t *Thread) inotify(fd uint64) (*vfs.OpenFile, *vfs.Inotify, int64) {
	f, err := t.file(int(int32(fd)))
	if err != nil {
		return nil, nil, errno(err)
	}
	in, err := vfs.InotifyFrom(f)
	if err != nil {
		f.DecRef()
		return nil, nil, errno(err)
	}
	return f, in, 0
}

func sysInotifyAddWatch(t *Thread, a *[6]uint64) (int64, bool) {
	f, in, e := t.inotify(a[0])
	if e != 0 {
		return e, false
	}
	defer f.DecRef()
	path, err := t.Proc.Space().CopyInString(uintptr(a[1]), 4096)
	if err != nil {
		return errno(err), false
	}
	c := t.ctx()
	wd, err := fsys.AddWatch(c, in, nil, path, uint32(a[2]))
	if err != nil {
		return errno(err), false
	}
	return int64(wd), false
}

func sysInotifyRmWatch(t *Thread, a *[6]uint64) (int64, bool) {
	f, in, e := t.inotify(a[0])
	if e != 0 {
		return e, false
	}
	defer f.DecRef()
	return errno(in.RmWatch(int(int32(a[1])))), false
}
