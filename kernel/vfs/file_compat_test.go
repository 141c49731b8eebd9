package vfs_test

import (
	"bytes"
	"testing"

	"shortbread/kernel/abi/linux"
)

func TestReadWriteSeek(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		fd, err := s.open("a.txt", linux.O_CREAT|linux.O_EXCL|linux.O_RDWR, 0o644)
		must(t, "open", err)
		_, err = s.open("a.txt", linux.O_CREAT|linux.O_EXCL|linux.O_RDWR, 0o644)
		wantErr(t, "open O_EXCL existing", err, linux.EEXIST)
		_, err = s.open("nonexistent", linux.O_RDONLY, 0)
		wantErr(t, "open missing", err, linux.ENOENT)
		n, err := s.write(fd, []byte("hello world"))
		wantN(t, "write", n, err, 11)
		off, err := s.lseek(fd, 0, linux.SEEK_CUR)
		wantN(t, "offset after write", off, err, 11)
		off, err = s.lseek(fd, 0, linux.SEEK_SET)
		wantN(t, "SEEK_SET", off, err, 0)
		buf := make([]byte, 64)
		n, err = s.read(fd, buf)
		if n != 11 || err != nil || string(buf[:n]) != "hello world" {
			t.Errorf("read: %q, %v", buf[:n], err)
		}
		n, err = s.read(fd, buf)
		wantN(t, "read at EOF", n, err, 0)
		n, err = s.pread(fd, buf[:5], 6)
		if n != 5 || string(buf[:5]) != "world" {
			t.Errorf("pread: %q, %v", buf[:n], err)
		}
		off, err = s.lseek(fd, 0, linux.SEEK_CUR)
		wantN(t, "pread keeps the offset", off, err, 11)
		n, err = s.pwrite(fd, []byte("HELLO"), 0)
		wantN(t, "pwrite", n, err, 5)
		n, _ = s.pread(fd, buf[:11], 0)
		if string(buf[:n]) != "HELLO world" {
			t.Errorf("after pwrite: %q", buf[:n])
		}
		off, err = s.lseek(fd, -5, linux.SEEK_END)
		wantN(t, "SEEK_END", off, err, 6)
		off, err = s.lseek(fd, 2, linux.SEEK_CUR)
		wantN(t, "SEEK_CUR", off, err, 8)
		_, err = s.lseek(fd, -100, linux.SEEK_SET)
		wantErr(t, "negative offset", err, linux.EINVAL)
		_, err = s.lseek(fd, 0, 9)
		wantErr(t, "bad whence", err, linux.EINVAL)
		_, err = s.lseek(fd, 1<<62, linux.SEEK_SET)
		must(t, "seek far", err)
		_, err = s.lseek(fd, 1<<62, linux.SEEK_CUR)
		wantErr(t, "offset overflow", err, linux.EINVAL)
		off, err = s.lseek(fd, 0, linux.SEEK_DATA)
		wantN(t, "SEEK_DATA", off, err, 0)
		_, err = s.lseek(fd, 100, linux.SEEK_DATA)
		wantErr(t, "SEEK_DATA past end", err, linux.ENXIO)
		off, err = s.lseek(fd, 2, linux.SEEK_HOLE)
		wantN(t, "SEEK_HOLE", off, err, 11)
		_, err = s.pread(fd, buf, -1)
		wantErr(t, "pread negative", err, linux.EINVAL)

		// A write past the end leaves a hole of zeros.
		s.lseek(fd, 100, linux.SEEK_SET)
		n, err = s.write(fd, []byte("Z"))
		wantN(t, "write after hole", n, err, 1)
		a, err := s.fstat(fd)
		must(t, "fstat", err)
		if a.Size != 101 || a.Mode&linux.S_IFMT != linux.S_IFREG || a.Nlink != 1 {
			t.Errorf("fstat: %+v", a)
		}
		hole := make([]byte, 89)
		n, _ = s.pread(fd, hole, 11)
		if n != 89 || !bytes.Equal(hole, make([]byte, 89)) {
			t.Errorf("hole reads %d bytes %q", n, hole[:n])
		}

		// O_TRUNC empties the file for every open description.
		fd2, err := s.open("a.txt", linux.O_WRONLY|linux.O_TRUNC, 0)
		must(t, "open O_TRUNC", err)
		a, _ = s.fstat(fd)
		wantN(t, "size after O_TRUNC", a.Size, nil, 0)
		s.close(fd2)
		// O_APPEND writes at the end whatever the offset, pwrite too.
		fd2, err = s.open("a.txt", linux.O_RDWR|linux.O_APPEND, 0)
		must(t, "open O_APPEND", err)
		s.write(fd2, []byte("one"))
		s.lseek(fd2, 0, linux.SEEK_SET)
		s.write(fd2, []byte("two"))
		off, _ = s.lseek(fd2, 0, linux.SEEK_CUR)
		wantN(t, "offset after append", off, nil, 6)
		n, err = s.pwrite(fd2, []byte("XY"), 0)
		wantN(t, "pwrite O_APPEND", n, err, 2)
		off, _ = s.lseek(fd2, 0, linux.SEEK_CUR)
		wantN(t, "pwrite O_APPEND keeps offset", off, nil, 6)
		n, _ = s.pread(fd, buf, 0)
		if string(buf[:n]) != "onetwoXY" {
			t.Errorf("appended data %q", buf[:n])
		}
		s.close(fd2)
		s.close(fd)
	})
}

func TestOpenFlags(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		must(t, "mkdir", s.mkdir("dir", 0o755))
		fd, err := s.open("f", linux.O_CREAT|linux.O_WRONLY, 0o644)
		must(t, "create", err)
		s.write(fd, []byte("abc"))
		s.close(fd)
		must(t, "symlink", s.symlink("f", "lf"))
		must(t, "symlink", s.symlink("dir", "ld"))
		must(t, "symlink", s.symlink("newfile", "dangle"))
		must(t, "symlink", s.symlink("nowhere/x", "dangle2"))

		for _, c := range []struct {
			path  string
			flags int
			want  linux.Errno
		}{
			{"dir", linux.O_WRONLY, linux.EISDIR},
			{"dir", linux.O_RDWR, linux.EISDIR},
			{"dir", linux.O_RDONLY | linux.O_TRUNC, linux.EISDIR},
			{"dir", linux.O_RDONLY | linux.O_CREAT, linux.EISDIR},
			{"dir", linux.O_RDONLY | linux.O_CREAT | linux.O_EXCL, linux.EEXIST},
			{"dir", linux.O_RDONLY | linux.O_DIRECTORY, 0},
			{"dir/", linux.O_RDONLY, 0},
			{"f", linux.O_RDONLY | linux.O_DIRECTORY, linux.ENOTDIR},
			{"f/", linux.O_RDONLY, linux.ENOTDIR},
			{"f/x", linux.O_RDONLY, linux.ENOTDIR},
			{"newf/", linux.O_RDWR | linux.O_CREAT, linux.EISDIR},
			{"f/", linux.O_RDWR | linux.O_CREAT, linux.EISDIR},
			{".", linux.O_RDWR | linux.O_CREAT, linux.EISDIR},
			{"lf", linux.O_RDWR | linux.O_CREAT | linux.O_NOFOLLOW, linux.ELOOP},
			{"lf", linux.O_RDONLY | linux.O_NOFOLLOW, linux.ELOOP},
			{"ld/", linux.O_RDONLY | linux.O_NOFOLLOW, 0}, // a trailing slash follows anyway
			{"lf", linux.O_RDONLY, 0},
			{"dangle", linux.O_RDONLY, linux.ENOENT},
			{"dangle", linux.O_RDWR | linux.O_CREAT | linux.O_EXCL, linux.EEXIST},
			{"dangle2", linux.O_RDWR | linux.O_CREAT, linux.ENOENT},
			{"f", linux.O_TMPFILE | linux.O_RDONLY, linux.EINVAL},
			{"lf", linux.O_PATH | linux.O_NOFOLLOW, 0},
			{"f", linux.O_PATH | linux.O_DIRECTORY, linux.ENOTDIR},
		} {
			fd, err := s.open(c.path, c.flags, 0o644)
			wantErr(t, "open "+c.path+" "+flagNames(c.flags), err, c.want)
			if err == nil {
				s.close(fd)
			}
		}
		if kernelAtLeast(6, 4) || s.name() != "linux" {
			_, err = s.open("new", linux.O_RDONLY|linux.O_CREAT|linux.O_DIRECTORY, 0o644)
			wantErr(t, "O_CREAT|O_DIRECTORY", err, linux.EINVAL)
		}

		// O_CREAT through a dangling symlink creates its target.
		fd, err = s.open("dangle", linux.O_RDWR|linux.O_CREAT, 0o644)
		must(t, "O_CREAT via dangling symlink", err)
		s.close(fd)
		_, err = s.lstat("newfile")
		wantErr(t, "symlink target created", err, 0)

		// O_RDONLY|O_TRUNC truncates a regular file (Linux does; POSIX leaves it open).
		fd, err = s.open("f", linux.O_RDONLY|linux.O_TRUNC, 0)
		must(t, "O_RDONLY|O_TRUNC", err)
		a, _ := s.stat("f")
		wantN(t, "size after O_RDONLY|O_TRUNC", a.Size, nil, 0)
		s.close(fd)

		// F_GETFL: O_LARGEFILE added, creation flags and O_CLOEXEC gone.
		fd, _ = s.open("f", linux.O_RDWR|linux.O_CLOEXEC|linux.O_NOFOLLOW|linux.O_NONBLOCK|linux.O_APPEND|linux.O_TRUNC, 0)
		fl, err := s.fcntl(fd, linux.F_GETFL, 0)
		wantN(t, "F_GETFL file", fl, err, linux.O_NOFOLLOW|linux.O_LARGEFILE|linux.O_NONBLOCK|linux.O_APPEND|linux.O_RDWR)
		s.fcntl(fd, linux.F_SETFL, 0)
		fl, _ = s.fcntl(fd, linux.F_GETFL, 0)
		wantN(t, "F_SETFL clears", fl, nil, linux.O_NOFOLLOW|linux.O_LARGEFILE|linux.O_RDWR)
		s.fcntl(fd, linux.F_SETFL, linux.O_APPEND|linux.O_RDONLY|linux.O_TRUNC|linux.O_CREAT)
		fl, _ = s.fcntl(fd, linux.F_GETFL, 0)
		wantN(t, "F_SETFL changes only status flags", fl, nil, linux.O_NOFOLLOW|linux.O_LARGEFILE|linux.O_RDWR|linux.O_APPEND)
		s.close(fd)
		fd, _ = s.open("dir", linux.O_RDONLY|linux.O_DIRECTORY|linux.O_CLOEXEC, 0)
		fl, _ = s.fcntl(fd, linux.F_GETFL, 0)
		wantN(t, "F_GETFL dir", fl, nil, linux.O_DIRECTORY|linux.O_LARGEFILE)
		s.close(fd)
		fd, _ = s.open("lf", linux.O_PATH|linux.O_NOFOLLOW|linux.O_RDWR|linux.O_CLOEXEC, 0)
		fl, _ = s.fcntl(fd, linux.F_GETFL, 0)
		wantN(t, "F_GETFL O_PATH", fl, nil, linux.O_PATH|linux.O_NOFOLLOW)
		s.close(fd)
	})
}

func flagNames(f int) string {
	names := []struct {
		bit  int
		name string
	}{
		{linux.O_WRONLY, "O_WRONLY"}, {linux.O_RDWR, "O_RDWR"}, {linux.O_CREAT, "O_CREAT"},
		{linux.O_EXCL, "O_EXCL"}, {linux.O_TRUNC, "O_TRUNC"}, {linux.O_APPEND, "O_APPEND"},
		{linux.O_NONBLOCK, "O_NONBLOCK"}, {linux.O_TMPFILE, "O_TMPFILE"}, {linux.O_DIRECTORY, "O_DIRECTORY"},
		{linux.O_NOFOLLOW, "O_NOFOLLOW"}, {linux.O_PATH, "O_PATH"}, {linux.O_CLOEXEC, "O_CLOEXEC"},
	}
	out := "O_RDONLY"
	if f&linux.O_ACCMODE != 0 {
		out = ""
	}
	for _, n := range names {
		if f&n.bit == n.bit {
			if out != "" {
				out += "|"
			}
			out += n.name
			f &^= n.bit
		}
	}
	return out
}

func TestAccessModes(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		fd, _ := s.open("f", linux.O_CREAT|linux.O_WRONLY, 0o644)
		s.write(fd, []byte("data"))
		buf := make([]byte, 8)
		_, err := s.read(fd, buf)
		wantErr(t, "read O_WRONLY", err, linux.EBADF)
		s.close(fd)
		ro, _ := s.open("f", linux.O_RDONLY, 0)
		_, err = s.write(ro, buf)
		wantErr(t, "write O_RDONLY", err, linux.EBADF)
		wantErr(t, "ftruncate O_RDONLY", s.ftruncate(ro, 0), linux.EINVAL)
		wantErr(t, "fchmod O_RDONLY", s.fchmod(ro, 0o600), 0)
		s.close(ro)
		s.mkdir("d", 0o755)
		dfd, _ := s.open("d", linux.O_RDONLY, 0)
		_, err = s.read(dfd, buf)
		wantErr(t, "read dir", err, linux.EISDIR)
		wantErr(t, "ftruncate dir", s.ftruncate(dfd, 0), linux.EINVAL)
		_, err = s.lseek(dfd, 0, linux.SEEK_END)
		wantErr(t, "SEEK_END on dir", err, linux.EINVAL)
		off, err := s.lseek(dfd, 5, linux.SEEK_SET)
		wantN(t, "SEEK_SET on dir", off, err, 5)
		s.close(dfd)
		p, _ := s.open("f", linux.O_PATH, 0)
		_, err = s.read(p, buf)
		wantErr(t, "read O_PATH", err, linux.EBADF)
		_, err = s.lseek(p, 0, linux.SEEK_SET)
		wantErr(t, "lseek O_PATH", err, linux.EBADF)
		_, err = s.fstat(p)
		wantErr(t, "fstat O_PATH", err, 0)
		wantErr(t, "fchmod O_PATH", s.fchmod(p, 0o600), linux.EBADF)
		wantErr(t, "ftruncate O_PATH", s.ftruncate(p, 0), linux.EBADF)
		s.close(p)
		_, err = s.read(p, buf)
		wantErr(t, "read closed fd", err, linux.EBADF)
		wantErr(t, "close twice", s.close(p), linux.EBADF)
	})
}

func TestTruncate(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		fd, _ := s.open("t.txt", linux.O_CREAT|linux.O_RDWR|linux.O_TRUNC, 0o644)
		s.write(fd, []byte("abcdefghij"))
		must(t, "ftruncate shrink", s.ftruncate(fd, 4))
		a, _ := s.fstat(fd)
		wantN(t, "size", a.Size, nil, 4)
		must(t, "ftruncate grow", s.ftruncate(fd, 8))
		buf := make([]byte, 8)
		n, _ := s.pread(fd, buf, 0)
		if n != 8 || string(buf) != "abcd\x00\x00\x00\x00" {
			t.Errorf("grown file reads %q", buf[:n])
		}
		must(t, "truncate path", s.truncate("t.txt", 2))
		a, _ = s.fstat(fd)
		wantN(t, "size after truncate", a.Size, nil, 2)
		wantErr(t, "ftruncate negative", s.ftruncate(fd, -1), linux.EINVAL)
		wantErr(t, "truncate negative", s.truncate("t.txt", -1), linux.EINVAL)
		wantErr(t, "truncate missing", s.truncate("nope", 0), linux.ENOENT)
		s.mkdir("d", 0o755)
		wantErr(t, "truncate dir", s.truncate("d", 0), linux.EISDIR)
		// A huge sparse size costs no blocks.
		must(t, "ftruncate huge", s.ftruncate(fd, 1<<40))
		a, _ = s.fstat(fd)
		if a.Size != 1<<40 || a.Blocks > 64 {
			t.Errorf("sparse file: size %d blocks %d", a.Size, a.Blocks)
		}
		n, _ = s.pread(fd, buf, 1<<39)
		if n != 8 || string(buf) != "\x00\x00\x00\x00\x00\x00\x00\x00" {
			t.Errorf("sparse read %q", buf[:n])
		}
		// A write into a shrunk page must not bring back old bytes.
		s.ftruncate(fd, 0)
		s.pwrite(fd, []byte("0123456789"), 0)
		s.ftruncate(fd, 3)
		s.ftruncate(fd, 10)
		n, _ = s.pread(fd, buf, 0)
		if string(buf[:n]) != "012\x00\x00\x00\x00\x00" {
			t.Errorf("shrink then grow reads %q", buf[:n])
		}
		s.close(fd)
	})
}

func TestDupAndFcntl(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		fd, _ := s.open("d.txt", linux.O_CREAT|linux.O_RDWR|linux.O_TRUNC, 0o644)
		s.write(fd, []byte("0123456789"))
		s.lseek(fd, 2, linux.SEEK_SET)
		d, err := s.dup(fd)
		must(t, "dup", err)
		off, _ := s.lseek(d, 0, linux.SEEK_CUR)
		wantN(t, "dup shares the offset", off, nil, 2)
		s.lseek(d, 5, linux.SEEK_SET)
		off, _ = s.lseek(fd, 0, linux.SEEK_CUR)
		wantN(t, "offset moves for both", off, nil, 5)
		fl, _ := s.fcntl(d, linux.F_GETFD, 0)
		wantN(t, "dup clears FD_CLOEXEC", fl, nil, 0)
		n, err := s.dup2(fd, 50)
		wantN(t, "dup2", n, err, 50)
		n, err = s.dup2(fd, fd)
		wantN(t, "dup2 same fd", n, err, fd)
		_, err = s.dup2(999, 51)
		wantErr(t, "dup2 bad old", err, linux.EBADF)
		_, err = s.dup2(999, 999)
		wantErr(t, "dup2 bad same", err, linux.EBADF)
		_, err = s.dup2(fd, 1<<30)
		wantErr(t, "dup2 beyond limit", err, linux.EBADF)
		other, _ := s.open("d.txt", linux.O_RDONLY, 0)
		n, err = s.dup2(fd, other)
		wantN(t, "dup2 over an open fd", n, err, other)
		off, _ = s.lseek(other, 0, linux.SEEK_CUR)
		wantN(t, "dup2 target shares", off, nil, 5)
		n, err = s.dup3(fd, 51, linux.O_CLOEXEC)
		wantN(t, "dup3", n, err, 51)
		fl, _ = s.fcntl(51, linux.F_GETFD, 0)
		wantN(t, "dup3 O_CLOEXEC", fl, nil, linux.FD_CLOEXEC)
		_, err = s.dup3(fd, fd, 0)
		wantErr(t, "dup3 same fd", err, linux.EINVAL)
		_, err = s.dup3(fd, 52, 4)
		wantErr(t, "dup3 bad flags", err, linux.EINVAL)
		c, err := s.fcntl(fd, linux.F_DUPFD_CLOEXEC, 60)
		if err != nil || c < 60 {
			t.Errorf("F_DUPFD_CLOEXEC: %d, %v", c, err)
		}
		fl, _ = s.fcntl(c, linux.F_GETFD, 0)
		wantN(t, "F_DUPFD_CLOEXEC flag", fl, nil, linux.FD_CLOEXEC)
		c2, err := s.fcntl(fd, linux.F_DUPFD, 60)
		if err != nil || c2 <= 60 || c2 == c {
			t.Errorf("F_DUPFD: %d, %v", c2, err)
		}
		_, err = s.fcntl(fd, linux.F_DUPFD, 1<<30)
		wantErr(t, "F_DUPFD beyond limit", err, linux.EINVAL)
		must(t, "F_SETFD", func() error { _, err := s.fcntl(d, linux.F_SETFD, linux.FD_CLOEXEC); return err }())
		fl, _ = s.fcntl(d, linux.F_GETFD, 0)
		wantN(t, "F_GETFD", fl, nil, linux.FD_CLOEXEC)
		// Status flags belong to the open file description: dup shares them.
		s.fcntl(fd, linux.F_SETFL, linux.O_APPEND)
		fl, _ = s.fcntl(d, linux.F_GETFL, 0)
		wantN(t, "status flags shared by dup", fl&linux.O_APPEND, nil, linux.O_APPEND)
		s.lseek(fd, 0, linux.SEEK_SET)
		s.write(fd, []byte("A"))
		a, _ := s.fstat(fd)
		wantN(t, "append after F_SETFL", a.Size, nil, 11)
		for _, x := range []int{d, 50, 51, c, c2, other} {
			must(t, "close", s.close(x))
		}
		// The lowest free descriptor is reused.
		lo, _ := s.open("d.txt", linux.O_RDONLY, 0)
		if lo > d {
			t.Errorf("new fd %d above the closed %d", lo, d)
		}
		s.close(lo)
		s.close(fd)
	})
}

func TestUnlinkOpenFile(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		fd, _ := s.open("u", linux.O_CREAT|linux.O_RDWR, 0o644)
		s.write(fd, []byte("still"))
		must(t, "unlink", s.unlink("u"))
		wantErr(t, "gone", s.access("u", linux.F_OK), linux.ENOENT)
		buf := make([]byte, 5)
		n, err := s.pread(fd, buf, 0)
		if n != 5 || err != nil || string(buf) != "still" {
			t.Errorf("read after unlink: %q %v", buf[:n], err)
		}
		s.write(fd, []byte("more"))
		a, _ := s.fstat(fd)
		if a.Nlink != 0 || a.Size != 9 {
			t.Errorf("unlinked file: nlink %d size %d", a.Nlink, a.Size)
		}
		// A new file of the same name is a different file.
		fd2, _ := s.open("u", linux.O_CREAT|linux.O_RDWR, 0o644)
		b, _ := s.fstat(fd2)
		if b.Ino == a.Ino || b.Size != 0 {
			t.Errorf("new file shares inode %d or size %d", b.Ino, b.Size)
		}
		s.close(fd)
		s.close(fd2)
	})
}
