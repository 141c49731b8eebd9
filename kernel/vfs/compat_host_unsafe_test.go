package vfs_test

import (
	"encoding/binary"
	"os"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"shortbread/kernel/abi/linux"
)

// hostSys runs the scenarios on the host kernel, in a new directory that
// becomes the process's working directory for the test (so the
// scenarios must not run in parallel).
type hostSys struct {
	t    *testing.T
	base string
	fds  map[int]bool
}

// Linux x86-64 system call numbers package syscall has no wrapper for.
const (
	sysNewfstatat = 262
	sysUnlinkat   = 263
	sysLinkat     = 265
	sysUtimensat  = 280
	sysEventfd2   = 290
	sysRenameat2  = 316
	sysPoll       = 7
	sysStatx      = 332
)

func newHostSys(t *testing.T) *hostSys {
	if why := hostSkip(); why != "" {
		t.Skip(why)
	}
	dir := ""
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		dir = "/dev/shm" // tmpfs, like Shortbread's
	}
	base, err := os.MkdirTemp(dir, "vfscompat")
	if err != nil {
		t.Fatal(err)
	}
	old, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(base); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	mask := syscall.Umask(0o22)
	h := &hostSys{t: t, base: base, fds: map[int]bool{}}
	t.Cleanup(func() {
		h.as(0, 0, nil)
		for fd := range h.fds {
			syscall.Close(fd)
		}
		syscall.Umask(mask)
		os.Chdir(old)
		os.Chmod(base, 0o755)
		os.RemoveAll(base)
	})
	return h
}

func (h *hostSys) name() string { return "linux" }

func (h *hostSys) track(fd int, err error) (int, error) {
	if err == nil {
		h.fds[fd] = true
	}
	return fd, err
}

func ptr(s string) *byte {
	p, err := syscall.BytePtrFromString(s)
	if err != nil {
		panic(err)
	}
	return p
}

func (h *hostSys) open(path string, flags int, mode uint32) (int, error) {
	return h.track(syscall.Open(path, flags, mode))
}

func (h *hostSys) openat(dirfd int, path string, flags int, mode uint32) (int, error) {
	return h.track(syscall.Openat(dirfd, path, flags, mode))
}

func (h *hostSys) close(fd int) error {
	delete(h.fds, fd)
	return syscall.Close(fd)
}

func (h *hostSys) read(fd int, p []byte) (int, error)  { return syscall.Read(fd, p) }
func (h *hostSys) write(fd int, p []byte) (int, error) { return syscall.Write(fd, p) }
func (h *hostSys) pread(fd int, p []byte, off int64) (int, error) {
	return syscall.Pread(fd, p, off)
}
func (h *hostSys) pwrite(fd int, p []byte, off int64) (int, error) {
	return syscall.Pwrite(fd, p, off)
}
func (h *hostSys) lseek(fd int, off int64, whence int) (int64, error) {
	return syscall.Seek(fd, off, whence)
}
func (h *hostSys) getdents(fd int, buf []byte) (int, error) { return syscall.Getdents(fd, buf) }

func fromHost(s *syscall.Stat_t) st {
	return st{
		Mode: s.Mode, Nlink: s.Nlink, Size: s.Size, Ino: s.Ino, Dev: s.Dev, Rdev: s.Rdev, UID: s.Uid, GID: s.Gid,
		Blocks: s.Blocks, Atime: linux.Timespec(s.Atim), Mtime: linux.Timespec(s.Mtim), Ctime: linux.Timespec(s.Ctim),
	}
}

func (h *hostSys) fstat(fd int) (st, error) {
	var s syscall.Stat_t
	err := syscall.Fstat(fd, &s)
	return fromHost(&s), err
}

func (h *hostSys) stat(path string) (st, error) {
	var s syscall.Stat_t
	err := syscall.Stat(path, &s)
	return fromHost(&s), err
}

func (h *hostSys) lstat(path string) (st, error) {
	var s syscall.Stat_t
	err := syscall.Lstat(path, &s)
	return fromHost(&s), err
}

func errno(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

func (h *hostSys) fstatat(dirfd int, path string, flags int) (st, error) {
	var s syscall.Stat_t
	_, _, e := syscall.Syscall6(sysNewfstatat, uintptr(dirfd), uintptr(unsafe.Pointer(ptr(path))),
		uintptr(unsafe.Pointer(&s)), uintptr(flags), 0, 0)
	return fromHost(&s), errno(e)
}

func (h *hostSys) mkdir(path string, mode uint32) error { return syscall.Mkdir(path, mode) }
func (h *hostSys) mknod(path string, mode uint32, dev uint64) error {
	return syscall.Mknod(path, mode, int(dev))
}
func (h *hostSys) rmdir(path string) error  { return syscall.Rmdir(path) }
func (h *hostSys) unlink(path string) error { return syscall.Unlink(path) }

func (h *hostSys) unlinkat(dirfd int, path string, flags int) error {
	_, _, e := syscall.Syscall(sysUnlinkat, uintptr(dirfd), uintptr(unsafe.Pointer(ptr(path))), uintptr(flags))
	return errno(e)
}

func (h *hostSys) link(oldpath, newpath string) error { return syscall.Link(oldpath, newpath) }

func (h *hostSys) linkat(olddirfd int, oldpath string, newdirfd int, newpath string, flags int) error {
	_, _, e := syscall.Syscall6(sysLinkat, uintptr(olddirfd), uintptr(unsafe.Pointer(ptr(oldpath))),
		uintptr(newdirfd), uintptr(unsafe.Pointer(ptr(newpath))), uintptr(flags), 0)
	return errno(e)
}

func (h *hostSys) symlink(target, path string) error { return syscall.Symlink(target, path) }

func (h *hostSys) readlink(path string) (string, error) {
	buf := make([]byte, linux.PATH_MAX)
	n, err := syscall.Readlink(path, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

func (h *hostSys) rename(oldpath, newpath string) error { return syscall.Rename(oldpath, newpath) }

func (h *hostSys) renameat2(oldpath, newpath string, flags uint) error {
	dirfd := linux.AT_FDCWD
	_, _, e := syscall.Syscall6(sysRenameat2, uintptr(dirfd), uintptr(unsafe.Pointer(ptr(oldpath))),
		uintptr(dirfd), uintptr(unsafe.Pointer(ptr(newpath))), uintptr(flags), 0)
	return errno(e)
}

func (h *hostSys) truncate(path string, size int64) error { return syscall.Truncate(path, size) }
func (h *hostSys) ftruncate(fd int, size int64) error     { return syscall.Ftruncate(fd, size) }
func (h *hostSys) chmod(path string, mode uint32) error   { return syscall.Chmod(path, mode) }
func (h *hostSys) fchmod(fd int, mode uint32) error       { return syscall.Fchmod(fd, mode) }
func (h *hostSys) chown(path string, uid, gid int) error  { return syscall.Chown(path, uid, gid) }
func (h *hostSys) access(path string, mode uint32) error  { return syscall.Access(path, mode) }

func (h *hostSys) utimensat(path string, times *[2]linux.Timespec, flags int) error {
	dirfd := linux.AT_FDCWD
	var p *byte
	if path != "" {
		p = ptr(path)
	}
	_, _, e := syscall.Syscall6(sysUtimensat, uintptr(dirfd), uintptr(unsafe.Pointer(p)),
		uintptr(unsafe.Pointer(times)), uintptr(flags), 0, 0)
	return errno(e)
}

func (h *hostSys) chdir(path string) error { return syscall.Chdir(path) }
func (h *hostSys) fchdir(fd int) error     { return syscall.Fchdir(fd) }

func (h *hostSys) getcwd() (string, error) {
	wd, err := syscall.Getwd()
	if err != nil {
		return "", err
	}
	if wd == h.base {
		return "/", nil
	}
	if rest, ok := strings.CutPrefix(wd, h.base+"/"); ok {
		return "/" + rest, nil
	}
	return wd, nil
}

func (h *hostSys) umask(mask uint32) uint32 { return uint32(syscall.Umask(int(mask))) }
func (h *hostSys) dup(fd int) (int, error)  { return h.track(syscall.Dup(fd)) }

func (h *hostSys) dup2(oldfd, newfd int) (int, error) {
	err := syscall.Dup2(oldfd, newfd)
	return h.track(newfd, err)
}

func (h *hostSys) dup3(oldfd, newfd, flags int) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_DUP3, uintptr(oldfd), uintptr(newfd), uintptr(flags))
	return h.track(int(r), errno(e))
}

func (h *hostSys) fcntl(fd, cmd, arg int) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), uintptr(cmd), uintptr(arg))
	if e == 0 && (cmd == linux.F_DUPFD || cmd == linux.F_DUPFD_CLOEXEC) {
		h.fds[int(r)] = true
	}
	return int(r), errno(e)
}

func (h *hostSys) pipe2(flags int) ([2]int, error) {
	var p [2]int
	err := syscall.Pipe2(p[:], flags)
	if err == nil {
		h.fds[p[0]], h.fds[p[1]] = true, true
	}
	return p, err
}

func (h *hostSys) eventfd(initval uint, flags int) (int, error) {
	r, _, e := syscall.Syscall(sysEventfd2, uintptr(initval), uintptr(flags), 0)
	return h.track(int(r), errno(e))
}

func (h *hostSys) poll(fd int, events int16) (int16, error) {
	pfd := struct {
		fd             int32
		events, revent int16
	}{int32(fd), events, 0}
	_, _, e := syscall.Syscall(sysPoll, uintptr(unsafe.Pointer(&pfd)), 1, 0)
	return pfd.revent, errno(e)
}

// as switches the IDs of every thread of the test process (Go's
// syscall.Setresuid does so on Linux); the saved IDs stay 0 so that root
// can come back.
func (h *hostSys) as(uid, gid uint32, groups []uint32) {
	if err := syscall.Setresuid(0, 0, 0); err != nil {
		h.t.Fatalf("setresuid back to root: %v", err)
	}
	g := make([]int, len(groups))
	for i, x := range groups {
		g[i] = int(x)
	}
	if err := syscall.Setgroups(g); err != nil {
		h.t.Skipf("cannot switch credentials here: %v", err)
	}
	if err := syscall.Setresgid(int(gid), int(gid), 0); err != nil {
		h.t.Skipf("cannot switch credentials here: %v", err)
	}
	if err := syscall.Setresuid(int(uid), int(uid), 0); err != nil {
		h.t.Skipf("cannot switch credentials here: %v", err)
	}
}

// statx decodes the fields of struct statx the scenarios compare.
func (h *hostSys) statx(dirfd int, path string, flags int, mask uint32) (linux.Statx, error) {
	var b [linux.StatxSize]byte
	_, _, e := syscall.Syscall6(sysStatx, uintptr(dirfd), uintptr(unsafe.Pointer(ptr(path))), uintptr(flags),
		uintptr(mask), uintptr(unsafe.Pointer(&b[0])), 0)
	le := binary.LittleEndian
	ts := func(off int) linux.Timespec {
		return linux.Timespec{Sec: int64(le.Uint64(b[off:])), Nsec: int64(le.Uint32(b[off+8:]))}
	}
	return linux.Statx{
		Mask: le.Uint32(b[0:]), Blksize: le.Uint32(b[4:]), Nlink: le.Uint32(b[16:]), UID: le.Uint32(b[20:]),
		GID: le.Uint32(b[24:]), Mode: le.Uint16(b[28:]), Ino: le.Uint64(b[32:]), Size: le.Uint64(b[40:]),
		Blocks: le.Uint64(b[48:]), Atime: ts(64), Btime: ts(80), Ctime: ts(96), Mtime: ts(112),
		RdevMajor: le.Uint32(b[128:]), RdevMinor: le.Uint32(b[132:]), DevMajor: le.Uint32(b[136:]), DevMinor: le.Uint32(b[140:]),
	}, errno(e)
}
