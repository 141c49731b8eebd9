package vfs_test

import (
	"strings"
	"testing"

	"shortbread/kernel/abi/linux"
)

func create(t *testing.T, s sys, path, data string) {
	t.Helper()
	fd, err := s.open(path, linux.O_CREAT|linux.O_WRONLY|linux.O_TRUNC, 0o644)
	must(t, "create "+path, err)
	if data != "" {
		s.write(fd, []byte(data))
	}
	s.close(fd)
}

func readAll(s sys, path string) string {
	fd, err := s.open(path, linux.O_RDONLY, 0)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	defer s.close(fd)
	buf := make([]byte, 256)
	n, _ := s.read(fd, buf)
	return string(buf[:n])
}

func TestRenameLinkSymlink(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		create(t, s, "r1", "r1data")
		a1, _ := s.stat("r1")
		must(t, "rename", s.rename("r1", "r2"))
		_, err := s.stat("r1")
		wantErr(t, "old name gone", err, linux.ENOENT)
		a2, err := s.stat("r2")
		if err != nil || a2.Ino != a1.Ino {
			t.Errorf("renamed inode %d, was %d (%v)", a2.Ino, a1.Ino, err)
		}
		create(t, s, "r3", "r3")
		must(t, "rename replacing", s.rename("r2", "r3"))
		if got := readAll(s, "r3"); got != "r1data" {
			t.Errorf("replaced file reads %q", got)
		}
		must(t, "mkdir", s.mkdir("rd", 0o755))
		must(t, "rename into dir", s.rename("r3", "rd/r4"))
		wantErr(t, "rename missing", s.rename("nope", "nope2"), linux.ENOENT)
		must(t, "mkdir", s.mkdir("rd2", 0o755))
		wantErr(t, "dir over non-empty dir", s.rename("rd2", "rd"), linux.ENOTEMPTY)
		must(t, "rename dir", s.rename("rd2", "rd3"))
		wantErr(t, "dir into itself", s.rename("rd3", "rd3/x"), linux.EINVAL)
		wantErr(t, "dir into its child", s.rename("rd", "rd/sub/x"), linux.ENOENT)
		must(t, "mkdir", s.mkdir("rd/sub", 0o755))
		wantErr(t, "dir into its grandchild", s.rename("rd", "rd/sub/x"), linux.EINVAL)
		wantErr(t, "dir over its ancestor", s.rename("rd/sub", "rd"), linux.ENOTEMPTY)
		wantErr(t, "rename .", s.rename(".", "x"), linux.EBUSY)
		wantErr(t, "rename to ..", s.rename("rd3", "rd/.."), linux.EBUSY)
		create(t, s, "file", "")
		wantErr(t, "dir over file", s.rename("rd3", "file"), linux.ENOTDIR)
		wantErr(t, "file over dir", s.rename("file", "rd3"), linux.EISDIR)
		wantErr(t, "file with slash", s.rename("file/", "x"), linux.ENOTDIR)
		wantErr(t, "file to slash", s.rename("file", "x/"), linux.ENOTDIR)
		must(t, "dir to slash", s.rename("rd3", "rd5/"))
		must(t, "empty dir over empty dir", s.rename("rd5", "rd/sub"))
		a, _ := s.stat("rd")
		wantN(t, "parent nlink after dir replaced", a.Nlink, nil, 3)

		// renameat2 flags
		create(t, s, "x", "x")
		create(t, s, "y", "y")
		wantErr(t, "RENAME_NOREPLACE", s.renameat2("x", "y", linux.RENAME_NOREPLACE), linux.EEXIST)
		must(t, "RENAME_NOREPLACE to new", s.renameat2("x", "z", linux.RENAME_NOREPLACE))
		must(t, "RENAME_EXCHANGE", s.renameat2("z", "y", linux.RENAME_EXCHANGE))
		if readAll(s, "z") != "y" || readAll(s, "y") != "x" {
			t.Errorf("exchange: z=%q y=%q", readAll(s, "z"), readAll(s, "y"))
		}
		wantErr(t, "RENAME_EXCHANGE missing", s.renameat2("z", "nope", linux.RENAME_EXCHANGE), linux.ENOENT)
		wantErr(t, "both flags", s.renameat2("z", "y", linux.RENAME_EXCHANGE|linux.RENAME_NOREPLACE), linux.EINVAL)
		wantErr(t, "unknown flag", s.renameat2("z", "y", 1<<5), linux.EINVAL)
		must(t, "exchange dir and file", s.renameat2("rd", "z", linux.RENAME_EXCHANGE))
		if st, _ := s.stat("z/sub"); st.Mode&linux.S_IFMT != linux.S_IFDIR {
			t.Error("exchanged directory not found under its new name")
		}
		wantErr(t, "exchange with ancestor", s.renameat2("z/sub", "z", linux.RENAME_EXCHANGE), linux.EINVAL)
		s.renameat2("rd", "z", linux.RENAME_EXCHANGE)

		// Hard links
		must(t, "link", s.link("rd/r4", "l1"))
		a, _ = s.stat("l1")
		if a.Nlink != 2 || a.Ino != a1.Ino {
			t.Errorf("link: nlink %d ino %d", a.Nlink, a.Ino)
		}
		wantErr(t, "link existing", s.link("rd/r4", "l1"), linux.EEXIST)
		wantErr(t, "link dir", s.link("rd", "ldir"), linux.EPERM)
		wantErr(t, "link missing", s.link("nope", "l2"), linux.ENOENT)
		wantErr(t, "link with slash", s.link("l1", "l2/"), linux.ENOENT)
		must(t, "rename onto own hard link is a no-op", s.rename("l1", "rd/r4"))
		if _, err := s.stat("l1"); err != nil {
			t.Error("rename between hard links removed a name")
		}
		must(t, "unlink one link", s.unlink("rd/r4"))
		a, _ = s.stat("l1")
		wantN(t, "nlink after unlink", a.Nlink, nil, 1)
		if got := readAll(s, "l1"); got != "r1data" {
			t.Errorf("link content %q", got)
		}

		// Symbolic links
		must(t, "symlink", s.symlink("l1", "s1"))
		got, err := s.readlink("s1")
		if got != "l1" || err != nil {
			t.Errorf("readlink %q %v", got, err)
		}
		_, err = s.readlink("l1")
		wantErr(t, "readlink non-link", err, linux.EINVAL)
		ls, _ := s.lstat("s1")
		if ls.Mode&linux.S_IFMT != linux.S_IFLNK || ls.Size != 2 || ls.Mode&0o777 != 0o777 {
			t.Errorf("lstat symlink: mode %#o size %d", ls.Mode, ls.Size)
		}
		ss, _ := s.stat("s1")
		if ss.Ino != a1.Ino {
			t.Error("stat does not follow the symlink")
		}
		ls2, _ := s.fstatat(linux.AT_FDCWD, "s1", linux.AT_SYMLINK_NOFOLLOW)
		if ls2.Ino != ls.Ino {
			t.Error("fstatat AT_SYMLINK_NOFOLLOW differs from lstat")
		}
		if got := readAll(s, "s1"); got != "r1data" {
			t.Errorf("open via symlink reads %q", got)
		}
		must(t, "dangling symlink", s.symlink("missing", "s2"))
		_, err = s.stat("s2")
		wantErr(t, "stat dangling", err, linux.ENOENT)
		_, err = s.lstat("s2")
		wantErr(t, "lstat dangling", err, 0)
		wantErr(t, "symlink over existing", s.symlink("x", "s1"), linux.EEXIST)
		wantErr(t, "symlink empty target", s.symlink("", "s3"), linux.ENOENT)
		wantErr(t, "symlink with slash", s.symlink("x", "s3/"), linux.ENOENT)
		must(t, "symlink to dir", s.symlink("rd", "sd"))
		must(t, "mkdir through symlink", s.mkdir("sd/inner", 0o755))
		_, err = s.stat("rd/inner")
		wantErr(t, "made through symlink", err, 0)
		must(t, "link to symlink", s.link("s1", "s1link"))
		ls3, _ := s.lstat("s1link")
		if ls3.Ino != ls.Ino {
			t.Error("link(2) followed the symlink")
		}
		must(t, "unlink symlink", s.unlink("s1"))
		_, err = s.stat("l1")
		wantErr(t, "target kept", err, 0)
		must(t, "absolute symlink", s.symlink("/abs/target", "sa"))
		got, _ = s.readlink("sa")
		if got != "/abs/target" {
			t.Errorf("readlink absolute %q", got)
		}
	})
}

func TestPathRules(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		create(t, s, "f", "")
		s.mkdir("d", 0o755)
		s.symlink("d", "ld")
		s.symlink("f", "lf")
		for _, c := range []struct {
			what string
			err  error
			want linux.Errno
		}{
			{"mkdir exists", s.mkdir("d", 0o755), linux.EEXIST},
			{"mkdir with slash", s.mkdir("n1/", 0o755), 0},
			{"mkdir .", s.mkdir(".", 0o755), linux.EEXIST},
			{"mkdir ..", s.mkdir("d/..", 0o755), linux.EEXIST},
			{"mkdir over symlink", s.mkdir("lf", 0o755), linux.EEXIST},
			{"mkdir no parent", s.mkdir("nope/x", 0o755), linux.ENOENT},
			{"mkdir under file", s.mkdir("f/x", 0o755), linux.ENOTDIR},
			{"unlink dir", s.unlink("d"), linux.EISDIR},
			{"unlink dir/", s.unlink("d/"), linux.EISDIR},
			{"unlink file/", s.unlink("f/"), linux.ENOTDIR},
			{"unlink missing/", s.unlink("missing/"), linux.ENOENT},
			{"unlink .", s.unlink("."), linux.EISDIR},
			{"unlink ld/", s.unlink("ld/"), linux.ENOTDIR}, // the symlink itself, not followed
			{"rmdir .", s.rmdir("."), linux.EINVAL},
			{"rmdir d/.", s.rmdir("d/."), linux.EINVAL},
			{"rmdir ..", s.rmdir(".."), linux.ENOTEMPTY},
			{"rmdir file", s.rmdir("f"), linux.ENOTDIR},
			{"rmdir symlink to dir", s.rmdir("ld"), linux.ENOTDIR},
			{"rmdir missing", s.rmdir("missing"), linux.ENOENT},
			{"rmdir n1/", s.rmdir("n1/"), 0},
			{"mknod fifo", s.mknod("fifo", linux.S_IFIFO|0o644, 0), 0},
			{"mknod dir", s.mknod("nd", linux.S_IFDIR|0o755, 0), linux.EPERM},
			{"mknod bad type", s.mknod("nd", 0o170000|0o644, 0), linux.EINVAL},
			{"mknod with slash", s.mknod("nd/", linux.S_IFIFO|0o644, 0), linux.ENOENT},
			{"mknod exists", s.mknod("f", linux.S_IFIFO|0o644, 0), linux.EEXIST},
			{"stat f/", errOf(s.stat("f/")), linux.ENOTDIR},
			{"stat d/", errOf(s.stat("d/")), 0},
			{"stat d/.", errOf(s.stat("d/.")), 0},
			{"stat d/../f", errOf(s.stat("d/../f")), 0},
			{"stat d//..//f", errOf(s.stat("d//..//f")), 0},
			{"lstat ld/", errOf(s.lstat("ld/")), 0},
			{"lstat lf/", errOf(s.lstat("lf/")), linux.ENOTDIR},
			{"stat empty", errOf(s.stat("")), linux.ENOENT},
			{"stat ../..", errOf(s.stat("../../../../../../../../..")), 0},
		} {
			wantErr(t, c.what, c.err, c.want)
		}
		if st, _ := s.lstat("ld/"); st.Mode&linux.S_IFMT != linux.S_IFDIR {
			t.Error("lstat with a trailing slash did not follow the symlink")
		}
		st, _ := s.stat("fifo")
		if st.Mode != linux.S_IFIFO|0o644 {
			t.Errorf("fifo mode %#o", st.Mode)
		}
	})
}

func errOf(_ st, err error) error { return err }

func TestSymlinkLoops(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		create(t, s, "target", "t")
		// A chain of 40 symlinks resolves; 41 is too many.
		prev := "target"
		for i := 1; i <= 41; i++ {
			name := "l" + strings.Repeat("x", i)
			must(t, "symlink", s.symlink(prev, name))
			prev = name
		}
		_, err := s.stat("l" + strings.Repeat("x", 40))
		wantErr(t, "40 links", err, 0)
		_, err = s.stat("l" + strings.Repeat("x", 41))
		wantErr(t, "41 links", err, linux.ELOOP)
		_, err = s.lstat("l" + strings.Repeat("x", 41))
		wantErr(t, "lstat does not follow", err, 0)
		s.symlink("loop2", "loop1")
		s.symlink("loop1", "loop2")
		_, err = s.stat("loop1")
		wantErr(t, "loop", err, linux.ELOOP)
		_, err = s.open("loop1", linux.O_CREAT|linux.O_RDWR, 0o644)
		wantErr(t, "O_CREAT through a loop", err, linux.ELOOP)
		s.symlink(".", "self")
		_, err = s.stat("self/self/self/self/target")
		wantErr(t, "symlink to . in the middle", err, 0)
		s.mkdir("d", 0o755)
		s.symlink("../d", "d/up")
		_, err = s.stat("d/up/up/up/up")
		wantErr(t, "relative symlink resolves from its directory", err, 0)
	})
}

func TestNameLengths(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		long := strings.Repeat("n", 255)
		create(t, s, long, "")
		_, err := s.stat(long)
		wantErr(t, "255-byte name", err, 0)
		_, err = s.stat(long + "x")
		wantErr(t, "256-byte name", err, linux.ENAMETOOLONG)
		wantErr(t, "mkdir 256-byte name", s.mkdir(long+"x", 0o755), linux.ENAMETOOLONG)
		_, err = s.open(long+"x", linux.O_CREAT|linux.O_RDWR, 0o644)
		wantErr(t, "create 256-byte name", err, linux.ENAMETOOLONG)
		// Paths: 4095 bytes with the NUL fit, 4096 do not.
		p := strings.Repeat("./", 2046) + "abc" // 4095 bytes
		create(t, s, "abc", "")
		_, err = s.stat(p)
		wantErr(t, "4095-byte path", err, 0)
		_, err = s.stat(p + "d")
		wantErr(t, "4096-byte path", err, linux.ENAMETOOLONG)
		wantErr(t, "symlink with a 4096-byte target", s.symlink(p+"d", "sl"), linux.ENAMETOOLONG)
	})
}
