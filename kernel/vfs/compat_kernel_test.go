package vfs_test

import (
	"sync"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/tmpfs"
	"shortbread/kernel/vfs"
)

// kernelSys runs the scenarios on the VFS over a fresh tmpfs: a small
// system call layer of the kind the process layer builds, decoding
// descriptors and *at directories into vfs calls.
type kernelSys struct {
	t   testing.TB
	v   *vfs.VFS
	fdt *vfs.FDTable
	ctx vfs.Ctx
}

// testClock is a clock that moves one millisecond per reading, so that
// every change gets a distinct, later time. Changes in different
// directories run in parallel, so it takes a lock.
func testClock() func() time.Time {
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Millisecond)
		return now
	}
}

func newKernelSys(t testing.TB) *kernelSys {
	fs := tmpfs.New(tmpfs.Options{Dev: linux.MakeDev(0, 42), Clock: testClock(), Mode: 0o755})
	v, err := vfs.New(fs.Root(), "tmpfs")
	if err != nil {
		t.Fatal(err)
	}
	k := &kernelSys{t: t, v: v, fdt: vfs.NewFDTable(vfs.DefaultNOFILE)}
	k.ctx = vfs.Ctx{Root: v.Root(), Cwd: v.Root(), Umask: 0o22}
	t.Cleanup(k.fdt.CloseAll)
	return k
}

func (k *kernelSys) name() string { return "shortbread" }

// at returns the directory a dirfd names: nil for AT_FDCWD.
func (k *kernelSys) at(dirfd int) (*vfs.Dentry, error) {
	if dirfd == linux.AT_FDCWD {
		return nil, nil
	}
	f, err := k.fdt.Get(dirfd)
	if err != nil {
		return nil, err
	}
	defer f.DecRef()
	if f.Dentry() == nil {
		return nil, linux.ENOTDIR
	}
	return f.Dentry(), nil
}

func (k *kernelSys) file(fd int) (*vfs.OpenFile, error) { return k.fdt.Get(fd) }

func (k *kernelSys) install(f *vfs.OpenFile, err error, flags int) (int, error) {
	if err != nil {
		return -1, err
	}
	defer f.DecRef()
	return k.fdt.Install(f, flags&linux.O_CLOEXEC != 0)
}

func (k *kernelSys) open(path string, flags int, mode uint32) (int, error) {
	return k.openat(linux.AT_FDCWD, path, flags, mode)
}

func (k *kernelSys) openat(dirfd int, path string, flags int, mode uint32) (int, error) {
	dir, err := k.at(dirfd)
	if err != nil {
		return -1, err
	}
	f, err := k.v.Open(&k.ctx, dir, path, uint32(flags), mode)
	return k.install(f, err, flags)
}

func (k *kernelSys) close(fd int) error { return k.fdt.Close(fd) }

func (k *kernelSys) read(fd int, p []byte) (int, error) {
	f, err := k.file(fd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	return f.Read(p, nil)
}

func (k *kernelSys) write(fd int, p []byte) (int, error) {
	f, err := k.file(fd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	return f.Write(p, nil)
}

func (k *kernelSys) pread(fd int, p []byte, off int64) (int, error) {
	f, err := k.file(fd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	return f.Pread(p, off, nil)
}

func (k *kernelSys) pwrite(fd int, p []byte, off int64) (int, error) {
	f, err := k.file(fd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	return f.Pwrite(p, off, nil)
}

func (k *kernelSys) lseek(fd int, off int64, whence int) (int64, error) {
	f, err := k.file(fd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	return f.Seek(off, whence)
}

func (k *kernelSys) getdents(fd int, buf []byte) (int, error) {
	f, err := k.file(fd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	return f.Getdents(buf)
}

func fromAttr(a vfs.Attr) st {
	return st{
		Mode: a.Mode, Nlink: uint64(a.Nlink), Size: a.Size, Ino: a.Ino, Dev: a.Dev, Rdev: a.Rdev, UID: a.UID, GID: a.GID,
		Blocks: a.Blocks, Atime: a.Atime, Mtime: a.Mtime, Ctime: a.Ctime,
	}
}

func (k *kernelSys) fstat(fd int) (st, error) {
	f, err := k.file(fd)
	if err != nil {
		return st{}, err
	}
	defer f.DecRef()
	return fromAttr(f.Attr()), nil
}

func (k *kernelSys) stat(path string) (st, error) { return k.fstatat(linux.AT_FDCWD, path, 0) }
func (k *kernelSys) lstat(path string) (st, error) {
	return k.fstatat(linux.AT_FDCWD, path, linux.AT_SYMLINK_NOFOLLOW)
}

func (k *kernelSys) fstatat(dirfd int, path string, flags int) (st, error) {
	dir, err := k.at(dirfd)
	if err != nil {
		return st{}, err
	}
	a, err := k.v.Stat(&k.ctx, dir, path, flags)
	return fromAttr(a), err
}

func (k *kernelSys) mkdir(path string, mode uint32) error { return k.v.Mkdir(&k.ctx, nil, path, mode) }
func (k *kernelSys) mknod(path string, mode uint32, dev uint64) error {
	return k.v.Mknod(&k.ctx, nil, path, mode, dev)
}
func (k *kernelSys) rmdir(path string) error  { return k.v.Rmdir(&k.ctx, nil, path) }
func (k *kernelSys) unlink(path string) error { return k.v.Unlink(&k.ctx, nil, path) }

func (k *kernelSys) unlinkat(dirfd int, path string, flags int) error {
	dir, err := k.at(dirfd)
	if err != nil {
		return err
	}
	switch flags {
	case 0:
		return k.v.Unlink(&k.ctx, dir, path)
	case linux.AT_REMOVEDIR:
		return k.v.Rmdir(&k.ctx, dir, path)
	}
	return linux.EINVAL
}

func (k *kernelSys) link(oldpath, newpath string) error {
	return k.v.Link(&k.ctx, nil, oldpath, nil, newpath, 0)
}

func (k *kernelSys) linkat(olddirfd int, oldpath string, newdirfd int, newpath string, flags int) error {
	od, err := k.at(olddirfd)
	if err != nil {
		return err
	}
	nd, err := k.at(newdirfd)
	if err != nil {
		return err
	}
	return k.v.Link(&k.ctx, od, oldpath, nd, newpath, flags)
}

func (k *kernelSys) symlink(target, path string) error { return k.v.Symlink(&k.ctx, target, nil, path) }
func (k *kernelSys) readlink(path string) (string, error) {
	return k.v.Readlink(&k.ctx, nil, path, 0)
}
func (k *kernelSys) rename(oldpath, newpath string) error {
	return k.v.Rename(&k.ctx, nil, oldpath, nil, newpath, 0)
}
func (k *kernelSys) renameat2(oldpath, newpath string, flags uint) error {
	return k.v.Rename(&k.ctx, nil, oldpath, nil, newpath, uint32(flags))
}
func (k *kernelSys) truncate(path string, size int64) error {
	return k.v.Truncate(&k.ctx, nil, path, size)
}

func (k *kernelSys) ftruncate(fd int, size int64) error {
	f, err := k.file(fd)
	if err != nil {
		return err
	}
	defer f.DecRef()
	return f.Truncate(size)
}

func (k *kernelSys) chmod(path string, mode uint32) error {
	return k.v.Chmod(&k.ctx, nil, path, mode, 0)
}

func (k *kernelSys) fchmod(fd int, mode uint32) error {
	f, err := k.file(fd)
	if err != nil {
		return err
	}
	defer f.DecRef()
	return f.Chmod(&k.ctx.Cred, mode)
}

func (k *kernelSys) chown(path string, uid, gid int) error {
	return k.v.Chown(&k.ctx, nil, path, uint32(uid), uint32(gid), 0)
}

func (k *kernelSys) access(path string, mode uint32) error {
	return k.v.Access(&k.ctx, nil, path, mode, 0)
}

func (k *kernelSys) utimensat(path string, times *[2]linux.Timespec, flags int) error {
	return k.v.Utimens(&k.ctx, nil, path, times, flags)
}

func (k *kernelSys) chdir(path string) error {
	d, err := k.v.Chdir(&k.ctx, nil, path, 0)
	if err == nil {
		k.ctx.Cwd = d
	}
	return err
}

func (k *kernelSys) fchdir(fd int) error {
	dir, err := k.at(fd)
	if err != nil {
		return err
	}
	d, err := k.v.Chdir(&k.ctx, dir, "", linux.AT_EMPTY_PATH)
	if err == nil {
		k.ctx.Cwd = d
	}
	return err
}

func (k *kernelSys) getcwd() (string, error) { return k.v.Getcwd(&k.ctx, nil) }

func (k *kernelSys) umask(mask uint32) uint32 {
	old := k.ctx.Umask
	k.ctx.Umask = mask & 0o777
	return old
}

func (k *kernelSys) dup(fd int) (int, error)            { return k.fdt.Dup(fd) }
func (k *kernelSys) dup2(oldfd, newfd int) (int, error) { return k.fdt.Dup2(oldfd, newfd) }
func (k *kernelSys) dup3(oldfd, newfd, flags int) (int, error) {
	return k.fdt.Dup3(oldfd, newfd, flags)
}

func (k *kernelSys) fcntl(fd, cmd, arg int) (int, error) {
	switch cmd {
	case linux.F_DUPFD:
		return k.fdt.DupFD(fd, arg, false)
	case linux.F_DUPFD_CLOEXEC:
		return k.fdt.DupFD(fd, arg, true)
	case linux.F_GETFD:
		return k.fdt.FDFlags(fd)
	case linux.F_SETFD:
		return 0, k.fdt.SetFDFlags(fd, arg)
	}
	f, err := k.file(fd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	switch cmd {
	case linux.F_GETFL:
		return int(f.Flags()), nil
	case linux.F_SETFL:
		f.SetFlags(uint32(arg))
		return 0, nil
	case linux.F_GETPIPE_SZ:
		return vfs.PipeSize(f)
	case linux.F_SETPIPE_SZ:
		return vfs.SetPipeSize(f, arg, k.ctx.Cred.Superuser())
	}
	return 0, linux.EINVAL
}

func (k *kernelSys) pipe2(flags int) ([2]int, error) {
	r, w, err := vfs.NewPipe(uint32(flags), vfs.Owner{})
	if err != nil {
		return [2]int{}, err
	}
	defer r.DecRef()
	defer w.DecRef()
	cloexec := flags&linux.O_CLOEXEC != 0
	rfd, err := k.fdt.Install(r, cloexec)
	if err != nil {
		return [2]int{}, err
	}
	wfd, err := k.fdt.Install(w, cloexec)
	if err != nil {
		k.fdt.Close(rfd)
		return [2]int{}, err
	}
	return [2]int{rfd, wfd}, nil
}

func (k *kernelSys) eventfd(initval uint, flags int) (int, error) {
	f, err := vfs.NewEventFD(uint64(initval), flags, vfs.Owner{})
	return k.install(f, err, flags)
}

func (k *kernelSys) poll(fd int, events int16) (int16, error) {
	f, err := k.file(fd)
	if err != nil {
		return linux.POLLNVAL, nil
	}
	defer f.DecRef()
	return int16(f.Readiness() & (uint32(uint16(events)) | linux.POLLERR | linux.POLLHUP)), nil
}

func (k *kernelSys) as(uid, gid uint32, groups []uint32) {
	k.ctx.Cred = vfs.Cred{UID: uid, GID: gid, EUID: uid, EGID: gid, Groups: groups}
}

func (k *kernelSys) statx(dirfd int, path string, flags int, mask uint32) (linux.Statx, error) {
	dir, err := k.at(dirfd)
	if err != nil {
		return linux.Statx{}, err
	}
	return k.v.Statx(&k.ctx, dir, path, flags, mask)
}
