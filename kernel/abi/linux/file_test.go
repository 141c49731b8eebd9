package linux

import (
	"syscall"
	"testing"
)

// TestConstantsMatchHost compares the constants with the host's values
// (Go's syscall package for linux/amd64 is generated from the kernel headers).
func TestConstantsMatchHost(t *testing.T) {
	cases := []struct {
		name      string
		got, want int64
	}{
		{"O_ACCMODE", O_ACCMODE, syscall.O_ACCMODE},
		{"O_WRONLY", O_WRONLY, syscall.O_WRONLY},
		{"O_RDWR", O_RDWR, syscall.O_RDWR},
		{"O_CREAT", O_CREAT, syscall.O_CREAT},
		{"O_EXCL", O_EXCL, syscall.O_EXCL},
		{"O_NOCTTY", O_NOCTTY, syscall.O_NOCTTY},
		{"O_TRUNC", O_TRUNC, syscall.O_TRUNC},
		{"O_APPEND", O_APPEND, syscall.O_APPEND},
		{"O_NONBLOCK", O_NONBLOCK, syscall.O_NONBLOCK},
		{"O_DSYNC", O_DSYNC, syscall.O_DSYNC},
		{"O_ASYNC", O_ASYNC, syscall.O_ASYNC},
		{"O_DIRECT", O_DIRECT, syscall.O_DIRECT},
		{"O_DIRECTORY", O_DIRECTORY, syscall.O_DIRECTORY},
		{"O_NOFOLLOW", O_NOFOLLOW, syscall.O_NOFOLLOW},
		{"O_NOATIME", O_NOATIME, syscall.O_NOATIME},
		{"O_CLOEXEC", O_CLOEXEC, syscall.O_CLOEXEC},
		{"O_SYNC", O_SYNC, syscall.O_SYNC},
		// Values the syscall package lacks or keeps unexported, printed by
		// a C program from the host's headers (Debian 12).
		{"O_PATH", O_PATH, 0o10000000},
		{"O_TMPFILE", O_TMPFILE, 0o20200000},
		{"O_LARGEFILE", O_LARGEFILE, 0o100000},
		{"AT_FDCWD", AT_FDCWD, -100},
		{"AT_SYMLINK_NOFOLLOW", AT_SYMLINK_NOFOLLOW, 0x100},
		{"AT_REMOVEDIR", AT_REMOVEDIR, 0x200},
		{"AT_EACCESS", AT_EACCESS, 0x200},
		{"AT_SYMLINK_FOLLOW", AT_SYMLINK_FOLLOW, 0x400},
		{"AT_EMPTY_PATH", AT_EMPTY_PATH, 0x1000},
		{"S_IFMT", S_IFMT, syscall.S_IFMT},
		{"S_IFSOCK", S_IFSOCK, syscall.S_IFSOCK},
		{"S_IFLNK", S_IFLNK, syscall.S_IFLNK},
		{"S_IFREG", S_IFREG, syscall.S_IFREG},
		{"S_IFBLK", S_IFBLK, syscall.S_IFBLK},
		{"S_IFDIR", S_IFDIR, syscall.S_IFDIR},
		{"S_IFCHR", S_IFCHR, syscall.S_IFCHR},
		{"S_IFIFO", S_IFIFO, syscall.S_IFIFO},
		{"S_ISUID", S_ISUID, syscall.S_ISUID},
		{"S_ISGID", S_ISGID, syscall.S_ISGID},
		{"S_ISVTX", S_ISVTX, syscall.S_ISVTX},
		{"F_DUPFD", F_DUPFD, syscall.F_DUPFD},
		{"F_GETFD", F_GETFD, syscall.F_GETFD},
		{"F_SETFD", F_SETFD, syscall.F_SETFD},
		{"F_GETFL", F_GETFL, syscall.F_GETFL},
		{"F_SETFL", F_SETFL, syscall.F_SETFL},
		{"F_GETLK", F_GETLK, syscall.F_GETLK},
		{"F_SETLK", F_SETLK, syscall.F_SETLK},
		{"F_SETLKW", F_SETLKW, syscall.F_SETLKW},
		{"F_SETOWN", F_SETOWN, syscall.F_SETOWN},
		{"F_GETOWN", F_GETOWN, syscall.F_GETOWN},
		{"F_SETSIG", F_SETSIG, syscall.F_SETSIG},
		{"F_GETSIG", F_GETSIG, syscall.F_GETSIG},
		{"LOCK_SH", LOCK_SH, syscall.LOCK_SH},
		{"LOCK_EX", LOCK_EX, syscall.LOCK_EX},
		{"LOCK_NB", LOCK_NB, syscall.LOCK_NB},
		{"LOCK_UN", LOCK_UN, syscall.LOCK_UN},
		{"F_DUPFD_CLOEXEC", F_DUPFD_CLOEXEC, syscall.F_DUPFD_CLOEXEC},
		{"F_GETPIPE_SZ", F_GETPIPE_SZ, syscall.F_GETPIPE_SZ},
		{"F_SETPIPE_SZ", F_SETPIPE_SZ, syscall.F_SETPIPE_SZ},
		{"FD_CLOEXEC", FD_CLOEXEC, syscall.FD_CLOEXEC},
		{"SEEK_END", SEEK_END, 2},
		{"DT_DIR", DT_DIR, syscall.DT_DIR},
		{"DT_REG", DT_REG, syscall.DT_REG},
		{"DT_LNK", DT_LNK, syscall.DT_LNK},
		{"DT_CHR", DT_CHR, syscall.DT_CHR},
		{"DT_BLK", DT_BLK, syscall.DT_BLK},
		{"DT_FIFO", DT_FIFO, syscall.DT_FIFO},
		{"DT_SOCK", DT_SOCK, syscall.DT_SOCK},
		{"DT_WHT", DT_WHT, syscall.DT_WHT},
		{"EFD_NONBLOCK", EFD_NONBLOCK, syscall.O_NONBLOCK},
		{"MS_RDONLY", MS_RDONLY, syscall.MS_RDONLY},
		{"MS_BIND", MS_BIND, syscall.MS_BIND},
		{"MNT_DETACH", MNT_DETACH, syscall.MNT_DETACH},
		{"TCGETS", TCGETS, syscall.TCGETS},
		{"TIOCGWINSZ", TIOCGWINSZ, syscall.TIOCGWINSZ},
		{"FIONREAD", FIONREAD, 0x541b},
		{"FIONBIO", FIONBIO, 0x5421},
		{"FIOCLEX", FIOCLEX, 0x5451},
		{"TIOCSCTTY", TIOCSCTTY, syscall.TIOCSCTTY},
		{"TIOCSPGRP", TIOCSPGRP, syscall.TIOCSPGRP},
		{"PATH_MAX", PATH_MAX, syscall.PathMax},
		{"RLIMIT_NOFILE", RLIMIT_NOFILE, syscall.RLIMIT_NOFILE},
		{"POLLRDHUP", POLLRDHUP, syscall.EPOLLRDHUP},
		{"POLLIN", POLLIN, syscall.EPOLLIN},
		{"POLLOUT", POLLOUT, syscall.EPOLLOUT},
		{"POLLERR", POLLERR, syscall.EPOLLERR},
		{"POLLHUP", POLLHUP, syscall.EPOLLHUP},
		{"POLLPRI", POLLPRI, syscall.EPOLLPRI},
		{"POLLRDNORM", POLLRDNORM, syscall.EPOLLRDNORM},
		{"POLLWRNORM", POLLWRNORM, syscall.EPOLLWRNORM},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s = %#o, host %#o", c.name, c.got, c.want)
		}
	}
}

func TestDevNumbers(t *testing.T) {
	for _, c := range [][2]uint32{{1, 3}, {5, 1}, {8, 0x12345}, {0x12345, 7}, {0xfffff, 0xfffff}} {
		d := MakeDev(c[0], c[1])
		if DevMajor(d) != c[0] || DevMinor(d) != c[1] {
			t.Errorf("MakeDev(%#x,%#x)=%#x decodes to %#x,%#x", c[0], c[1], d, DevMajor(d), DevMinor(d))
		}
	}
	if MakeDev(1, 3) != 0x103 || MakeDev(136, 0) != 0x8800 || MakeDev(0, 0x100) != 0x100000 {
		t.Errorf("MakeDev layout wrong: %#x %#x %#x", MakeDev(1, 3), MakeDev(136, 0), MakeDev(0, 0x100))
	}
	var st syscall.Stat_t
	if err := syscall.Stat("/dev/null", &st); err == nil {
		if DevMajor(st.Rdev) != 1 || DevMinor(st.Rdev) != 3 || MakeDev(1, 3) != st.Rdev {
			t.Errorf("host /dev/null rdev %#x, MakeDev(1,3)=%#x", st.Rdev, MakeDev(1, 3))
		}
	}
}

func TestDirentType(t *testing.T) {
	for mode, want := range map[uint32]uint8{
		S_IFREG | 0o644: DT_REG, S_IFDIR: DT_DIR, S_IFLNK | 0o777: DT_LNK, S_IFCHR: DT_CHR,
		S_IFBLK: DT_BLK, S_IFIFO: DT_FIFO, S_IFSOCK: DT_SOCK, 0o644: DT_UNKNOWN,
	} {
		if got := DirentType(mode); got != want {
			t.Errorf("DirentType(%#o) = %d, want %d", mode, got, want)
		}
	}
}
