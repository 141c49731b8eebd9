package vfs_test

// The compatibility tests run one scenario twice: against the host's
// Linux kernel through package syscall, in a fresh directory, and against
// Shortbread's VFS over tmpfs through a minimal system call layer. A
// scenario that fails on Linux is a wrong scenario; one that fails only
// on Shortbread is a bug.

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"shortbread/kernel/abi/linux"
)

// st is what the scenarios compare of struct stat.
type st struct {
	Mode   uint32
	Nlink  uint64
	Size   int64
	Ino    uint64
	Dev    uint64
	Rdev   uint64
	UID    uint32
	GID    uint32
	Blocks int64
	Atime  linux.Timespec
	Mtime  linux.Timespec
	Ctime  linux.Timespec
}

// sys is the system call surface the scenarios use. Paths are relative
// to the scenario's directory unless absolute; fds are the caller's.
type sys interface {
	name() string
	open(path string, flags int, mode uint32) (int, error)
	openat(dirfd int, path string, flags int, mode uint32) (int, error)
	close(fd int) error
	read(fd int, p []byte) (int, error)
	write(fd int, p []byte) (int, error)
	pread(fd int, p []byte, off int64) (int, error)
	pwrite(fd int, p []byte, off int64) (int, error)
	lseek(fd int, off int64, whence int) (int64, error)
	getdents(fd int, buf []byte) (int, error)
	fstat(fd int) (st, error)
	stat(path string) (st, error)
	lstat(path string) (st, error)
	fstatat(dirfd int, path string, flags int) (st, error)
	statx(dirfd int, path string, flags int, mask uint32) (linux.Statx, error)
	mkdir(path string, mode uint32) error
	mknod(path string, mode uint32, dev uint64) error
	rmdir(path string) error
	unlink(path string) error
	unlinkat(dirfd int, path string, flags int) error
	link(oldpath, newpath string) error
	linkat(olddirfd int, oldpath string, newdirfd int, newpath string, flags int) error
	symlink(target, path string) error
	readlink(path string) (string, error)
	rename(oldpath, newpath string) error
	renameat2(oldpath, newpath string, flags uint) error
	truncate(path string, size int64) error
	ftruncate(fd int, size int64) error
	chmod(path string, mode uint32) error
	fchmod(fd int, mode uint32) error
	chown(path string, uid, gid int) error
	access(path string, mode uint32) error
	utimensat(path string, times *[2]linux.Timespec, flags int) error
	chdir(path string) error
	fchdir(fd int) error
	getcwd() (string, error) // relative to the scenario's directory, as "/..."
	umask(mask uint32) uint32
	dup(fd int) (int, error)
	dup2(oldfd, newfd int) (int, error)
	dup3(oldfd, newfd, flags int) (int, error)
	fcntl(fd, cmd, arg int) (int, error)
	pipe2(flags int) ([2]int, error)
	eventfd(initval uint, flags int) (int, error)
	poll(fd int, events int16) (int16, error) // revents after a zero timeout
	// as makes later calls run with these real and effective IDs and
	// supplementary groups; as(0, 0, nil) returns to root.
	as(uid, gid uint32, groups []uint32)
}

// errnoOf returns the errno in err, 0 for nil and -1 for a non-errno error.
func errnoOf(err error) int {
	if err == nil {
		return 0
	}
	var h syscall.Errno
	if errors.As(err, &h) {
		return int(h)
	}
	var k linux.Errno
	if errors.As(err, &k) {
		return int(k)
	}
	return -1
}

func errName(n int) string {
	switch n {
	case 0:
		return "success"
	case -1:
		return "non-errno error"
	}
	return linux.Errno(n).Error()
}

// wantErr fails the test unless err carries errno want (0 for success).
func wantErr(t *testing.T, what string, err error, want linux.Errno) {
	t.Helper()
	if got := errnoOf(err); got != int(want) {
		t.Errorf("%s: got %s (%v), want %s", what, errName(got), err, errName(int(want)))
	}
}

// must fails the test at once on an error.
func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// wantN checks a count result.
func wantN[N int | int16 | int64 | uint32 | uint64](t *testing.T, what string, n N, err error, want N) {
	t.Helper()
	if err != nil || n != want {
		t.Errorf("%s: got %d, %v; want %d", what, n, err, want)
	}
}

// both runs scenario f against the host kernel and against Shortbread.
func both(t *testing.T, f func(t *testing.T, s sys)) {
	t.Run("linux", func(t *testing.T) {
		h := newHostSys(t)
		f(t, h)
	})
	t.Run("shortbread", func(t *testing.T) {
		f(t, newKernelSys(t))
	})
}

// kernelAtLeast reports whether the host kernel is at least major.minor.
func kernelAtLeast(major, minor int) bool {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return false
	}
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	parts := strings.SplitN(b.String(), ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, _ := strconv.Atoi(parts[0])
	mi, _ := strconv.Atoi(strings.TrimFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	return ma > major || ma == major && mi >= minor
}

// hostSkip explains why the Linux half of the scenarios cannot run here,
// or returns "".
func hostSkip() string {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return "not linux/amd64"
	}
	if os.Geteuid() != 0 {
		return "not root: the scenarios assume root's permissions, as Shortbread's first process has"
	}
	return ""
}
