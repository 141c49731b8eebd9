package vfs_test

import (
	"testing"

	"shortbread/kernel/abi/linux"
)

func later(a, b linux.Timespec) bool {
	return a.Sec > b.Sec || a.Sec == b.Sec && a.Nsec > b.Nsec
}

func TestAttributes(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		fd, _ := s.open("s.txt", linux.O_CREAT|linux.O_RDWR|linux.O_TRUNC, 0o640)
		s.write(fd, []byte("12345"))
		a, _ := s.stat("s.txt")
		b, _ := s.fstat(fd)
		c, _ := s.fstatat(linux.AT_FDCWD, "s.txt", 0)
		if a.Ino != b.Ino || b.Ino != c.Ino || a.Dev != b.Dev {
			t.Error("stat, fstat and fstatat disagree")
		}
		if a.Size != 5 || a.Mode != linux.S_IFREG|0o640 || a.Nlink != 1 || a.UID != 0 {
			t.Errorf("stat: %+v", a)
		}
		e, err := s.fstatat(fd, "", linux.AT_EMPTY_PATH)
		if err != nil || e.Ino != a.Ino {
			t.Errorf("AT_EMPTY_PATH: %v", err)
		}
		_, err = s.fstatat(fd, "", 0)
		wantErr(t, "empty path without AT_EMPTY_PATH", err, linux.ENOENT)
		_, err = s.fstatat(fd, "x", 0)
		wantErr(t, "relative to a file", err, linux.ENOTDIR)
		_, err = s.fstatat(linux.AT_FDCWD, "s.txt", 0x80000)
		wantErr(t, "unknown fstatat flag", err, linux.EINVAL)

		// A write moves mtime and ctime.
		before, _ := s.fstat(fd)
		s.write(fd, []byte("678"))
		after, _ := s.fstat(fd)
		if after.Size != 8 || !later(after.Mtime, before.Mtime) && after.Mtime != before.Mtime {
			t.Errorf("write: size %d mtime %v -> %v", after.Size, before.Mtime, after.Mtime)
		}
		s.close(fd)

		// access: root may read and write anything, execute only with an x bit.
		wantErr(t, "F_OK", s.access("s.txt", linux.F_OK), 0)
		wantErr(t, "R_OK", s.access("s.txt", linux.R_OK), 0)
		wantErr(t, "W_OK", s.access("s.txt", linux.W_OK), 0)
		wantErr(t, "X_OK without x bits", s.access("s.txt", linux.X_OK), linux.EACCES)
		wantErr(t, "missing", s.access("nope", linux.F_OK), linux.ENOENT)
		wantErr(t, "bad mode", s.access("s.txt", 0x80), linux.EINVAL)
		s.mkdir("d", 0)
		wantErr(t, "X_OK on a mode-0 dir", s.access("d", linux.X_OK), 0)

		// chmod
		must(t, "chmod", s.chmod("s.txt", 0o755))
		a, _ = s.stat("s.txt")
		wantN(t, "mode after chmod", a.Mode, nil, linux.S_IFREG|0o755)
		wantErr(t, "X_OK after chmod", s.access("s.txt", linux.X_OK), 0)
		must(t, "chmod setuid", s.chmod("s.txt", 0o4711))
		a, _ = s.stat("s.txt")
		wantN(t, "mode 04711", a.Mode, nil, linux.S_IFREG|0o4711)
		must(t, "chmod type bits ignored", s.chmod("s.txt", linux.S_IFDIR|0o644))
		a, _ = s.stat("s.txt")
		wantN(t, "type kept", a.Mode, nil, linux.S_IFREG|0o644)
		wantErr(t, "chmod missing", s.chmod("nope", 0o644), linux.ENOENT)

		// chown by root, and -1 keeping a value
		must(t, "chown", s.chown("s.txt", 1000, 100))
		a, _ = s.stat("s.txt")
		if a.UID != 1000 || a.GID != 100 {
			t.Errorf("owner %d:%d", a.UID, a.GID)
		}
		must(t, "chown keep uid", s.chown("s.txt", -1, 200))
		a, _ = s.stat("s.txt")
		if a.UID != 1000 || a.GID != 200 {
			t.Errorf("owner after chown -1 %d:%d", a.UID, a.GID)
		}
		s.chmod("s.txt", 0o6755)
		s.chown("s.txt", 0, 0)
		a, _ = s.stat("s.txt")
		wantN(t, "chown clears setuid and setgid on an executable", a.Mode, nil, linux.S_IFREG|0o755)

		// umask applies to new files, directories and nodes, not to chmod.
		old := s.umask(0o77)
		if got := s.umask(0o22); got != 0o77 {
			t.Errorf("umask returned %#o", got)
		}
		s.umask(0o77)
		create(t, s, "m1", "")
		s.mkdir("m2", 0o777)
		s.mknod("m3", linux.S_IFIFO|0o666, 0)
		s.symlink("x", "m4")
		for p, want := range map[string]uint32{"m1": 0o600, "m2": 0o700, "m3": 0o600, "m4": 0o777} {
			a, _ := s.lstat(p)
			if a.Mode&0o7777 != want {
				t.Errorf("%s mode %#o under umask 077, want %#o", p, a.Mode&0o7777, want)
			}
		}
		s.chmod("m1", 0o666)
		a, _ = s.stat("m1")
		wantN(t, "chmod ignores umask", a.Mode&0o777, nil, 0o666)
		s.umask(old)
		s.mkdir("sticky", 0o7777)
		a, _ = s.stat("sticky")
		wantN(t, "mkdir keeps the sticky bit, drops set-ID bits", a.Mode&0o7777, nil, 0o1755)
	})
}

func TestUtimens(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		create(t, s, "f", "")
		times := [2]linux.Timespec{{Sec: 1000, Nsec: 5}, {Sec: 2000, Nsec: 7}}
		must(t, "utimensat", s.utimensat("f", &times, 0))
		a, _ := s.stat("f")
		if a.Atime != times[0] || a.Mtime != times[1] {
			t.Errorf("times %v %v", a.Atime, a.Mtime)
		}
		if !later(a.Ctime, a.Mtime) {
			t.Error("ctime did not move")
		}
		omit := [2]linux.Timespec{{Sec: 1, Nsec: linux.UTIME_OMIT}, {Sec: 3000, Nsec: 0}}
		must(t, "UTIME_OMIT", s.utimensat("f", &omit, 0))
		a, _ = s.stat("f")
		if a.Atime != times[0] || a.Mtime.Sec != 3000 {
			t.Errorf("after UTIME_OMIT %v %v", a.Atime, a.Mtime)
		}
		now := [2]linux.Timespec{{Nsec: linux.UTIME_NOW}, {Nsec: linux.UTIME_OMIT}}
		must(t, "UTIME_NOW", s.utimensat("f", &now, 0))
		a, _ = s.stat("f")
		if a.Atime.Sec < 1_700_000_000 || a.Mtime.Sec != 3000 {
			t.Errorf("after UTIME_NOW %v %v", a.Atime, a.Mtime)
		}
		must(t, "NULL times", s.utimensat("f", nil, 0))
		a, _ = s.stat("f")
		if a.Mtime.Sec < 1_700_000_000 {
			t.Errorf("after NULL times %v", a.Mtime)
		}
		bad := [2]linux.Timespec{{Sec: 1, Nsec: 1_000_000_000}, {}}
		wantErr(t, "nsec out of range", s.utimensat("f", &bad, 0), linux.EINVAL)
		wantErr(t, "bad flags", s.utimensat("f", nil, 0x4), linux.EINVAL)
		wantErr(t, "missing", s.utimensat("nope", nil, 0), linux.ENOENT)
		s.symlink("f", "l")
		must(t, "AT_SYMLINK_NOFOLLOW", s.utimensat("l", &times, linux.AT_SYMLINK_NOFOLLOW))
		l, _ := s.lstat("l")
		f, _ := s.stat("f")
		if l.Mtime != times[1] || f.Mtime == times[1] {
			t.Errorf("nofollow set link %v file %v", l.Mtime, f.Mtime)
		}
	})
}

func TestStatx(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		create(t, s, "f", "12345")
		s.chmod("f", 0o640)
		a, _ := s.stat("f")
		x, err := s.statx(linux.AT_FDCWD, "f", 0, linux.STATX_BASIC_STATS)
		must(t, "statx", err)
		if x.Mask&linux.STATX_BASIC_STATS != linux.STATX_BASIC_STATS {
			t.Errorf("mask %#x", x.Mask)
		}
		if x.Mode != linux.S_IFREG|0o640 || x.Size != 5 || x.Ino != a.Ino || x.Nlink != 1 ||
			x.Mtime != a.Mtime || x.Ctime != a.Ctime || x.Blksize != 4096 ||
			linux.MakeDev(x.DevMajor, x.DevMinor) != a.Dev {
			t.Errorf("statx %+v, stat %+v", x, a)
		}
		if x.Mask&linux.STATX_BTIME != 0 || x.Mask&linux.STATX_MNT_ID == 0 {
			t.Errorf("birth time not asked for: mask %#x", x.Mask)
		}
		x, _ = s.statx(linux.AT_FDCWD, "f", 0, linux.STATX_BASIC_STATS|linux.STATX_BTIME)
		if x.Btime.Sec == 0 || x.Mask&linux.STATX_BTIME == 0 {
			t.Errorf("no birth time: mask %#x btime %v", x.Mask, x.Btime)
		}
		fd, _ := s.open("f", linux.O_RDONLY, 0)
		y, err := s.statx(fd, "", linux.AT_EMPTY_PATH, linux.STATX_BASIC_STATS)
		if err != nil || y.Ino != a.Ino {
			t.Errorf("statx AT_EMPTY_PATH: %v", err)
		}
		s.close(fd)
		_, err = s.statx(linux.AT_FDCWD, "nope", 0, linux.STATX_BASIC_STATS)
		wantErr(t, "missing", err, linux.ENOENT)
		_, err = s.statx(linux.AT_FDCWD, "f", 0x80000000, linux.STATX_BASIC_STATS)
		wantErr(t, "unknown flag", err, linux.EINVAL)
		_, err = s.statx(linux.AT_FDCWD, "f", linux.AT_STATX_SYNC_TYPE, linux.STATX_BASIC_STATS)
		wantErr(t, "both sync flags", err, linux.EINVAL)
		_, err = s.statx(linux.AT_FDCWD, "f", 0, linux.STATX__RESERVED)
		wantErr(t, "reserved mask bit", err, linux.EINVAL)
	})
}
