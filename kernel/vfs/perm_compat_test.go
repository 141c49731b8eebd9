package vfs_test

import (
	"testing"

	"shortbread/kernel/abi/linux"
)

// TestPermissions runs as an unprivileged user (uid 1000, gid 1000,
// also in group 2000) among files root made.
func TestPermissions(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		s.mkdir("pub", 0o777)
		s.chmod("pub", 0o777)
		s.mkdir("priv", 0o700)
		create(t, s, "priv/f", "")
		create(t, s, "rootfile", "secret")
		s.chmod("rootfile", 0o600)
		create(t, s, "readable", "public")
		s.mkdir("sticky", 0o777)
		s.chmod("sticky", 0o1777)
		create(t, s, "sticky/rootowned", "")
		s.chmod("sticky/rootowned", 0o666)
		s.mkdir("sg", 0o777)
		s.chown("sg", 0, 50)
		s.chmod("sg", 0o2777)
		s.mkdir("grp", 0o770)
		s.chown("grp", 0, 2000)
		s.chmod("grp", 0o770)
		create(t, s, "script", "")
		s.chmod("script", 0o744)

		s.as(1000, 1000, []uint32{2000})
		_, err := s.open("rootfile", linux.O_RDONLY, 0)
		wantErr(t, "read a 0600 root file", err, linux.EACCES)
		fd, err := s.open("readable", linux.O_RDONLY, 0)
		wantErr(t, "read a 0644 file", err, 0)
		s.close(fd)
		_, err = s.open("readable", linux.O_WRONLY, 0)
		wantErr(t, "write a 0644 root file", err, linux.EACCES)
		_, err = s.open("readable", linux.O_RDONLY|linux.O_TRUNC, 0)
		wantErr(t, "O_TRUNC needs write permission", err, linux.EACCES)
		_, err = s.stat("priv/f")
		wantErr(t, "search a 0700 root directory", err, linux.EACCES)
		_, err = s.stat("priv")
		wantErr(t, "stat the directory itself", err, 0)
		_, err = s.open("mine", linux.O_CREAT|linux.O_RDWR, 0o644)
		wantErr(t, "create in a 0755 root directory", err, linux.EACCES)
		wantErr(t, "mkdir in a 0755 root directory", s.mkdir("d", 0o755), linux.EACCES)
		wantErr(t, "unlink in a 0755 root directory", s.unlink("readable"), linux.EACCES)
		wantErr(t, "truncate a 0644 root file", s.truncate("readable", 0), linux.EACCES)
		wantErr(t, "access W_OK", s.access("readable", linux.W_OK), linux.EACCES)
		wantErr(t, "access R_OK", s.access("readable", linux.R_OK), 0)
		wantErr(t, "access X_OK on 0744", s.access("script", linux.X_OK), linux.EACCES)
		wantErr(t, "group member searches a 0770 directory", s.access("grp", linux.X_OK), 0)
		_, err = s.open("grp/g", linux.O_CREAT|linux.O_RDWR, 0o644)
		wantErr(t, "group member creates in a 0770 directory", err, 0)

		fd, err = s.open("pub/mine", linux.O_CREAT|linux.O_RDWR, 0o644)
		must(t, "create in a 0777 directory", err)
		a, _ := s.fstat(fd)
		if a.UID != 1000 || a.GID != 1000 {
			t.Errorf("new file owned by %d:%d", a.UID, a.GID)
		}
		s.close(fd)
		wantErr(t, "chmod another's file", s.chmod("readable", 0o666), linux.EPERM)
		wantErr(t, "chmod own file", s.chmod("pub/mine", 0o600), 0)
		wantErr(t, "give a file away", s.chown("pub/mine", 0, -1), linux.EPERM)
		wantErr(t, "chown to oneself", s.chown("pub/mine", 1000, -1), 0)
		wantErr(t, "chgrp to an own group", s.chown("pub/mine", -1, 2000), 0)
		wantErr(t, "chgrp to a foreign group", s.chown("pub/mine", -1, 50), linux.EPERM)
		wantErr(t, "chown another's file", s.chown("readable", -1, 1000), linux.EPERM)
		wantErr(t, "utimensat now on another's read-only file", s.utimensat("readable", nil, 0), linux.EACCES)
		times := [2]linux.Timespec{{Sec: 5}, {Sec: 6}}
		wantErr(t, "utimensat times on another's file", s.utimensat("readable", &times, 0), linux.EPERM)
		wantErr(t, "utimensat times on own file", s.utimensat("pub/mine", &times, 0), 0)
		wantErr(t, "rename into a 0700 root directory", s.rename("pub/mine", "priv/x"), linux.EACCES)

		// The sticky bit: only the owner (or the directory's) may delete.
		wantErr(t, "unlink another's file in a sticky dir", s.unlink("sticky/rootowned"), linux.EPERM)
		wantErr(t, "rename another's file in a sticky dir", s.rename("sticky/rootowned", "sticky/x"), linux.EPERM)
		create(t, s, "sticky/m", "")
		wantErr(t, "unlink own file in a sticky dir", s.unlink("sticky/m"), 0)

		// Set-group-ID directories pass on their group, and to directories the bit.
		create(t, s, "sg/f", "")
		s.mkdir("sg/d", 0o755)
		f, _ := s.stat("sg/f")
		d, _ := s.stat("sg/d")
		if f.GID != 50 || d.GID != 50 || d.Mode&linux.S_ISGID == 0 || f.Mode&linux.S_ISGID != 0 {
			t.Errorf("in a setgid dir: file gid %d mode %#o, dir gid %d mode %#o", f.GID, f.Mode, d.GID, d.Mode)
		}
		// chmod drops S_ISGID when the caller is not in the file's group.
		must(t, "chmod g+s", s.chmod("sg/f", 0o2755))
		f, _ = s.stat("sg/f")
		wantN(t, "setgid dropped", f.Mode&0o7777, nil, 0o755)
		must(t, "chmod g+s in own group", s.chmod("pub/mine", 0o2755))
		f, _ = s.stat("pub/mine")
		wantN(t, "setgid kept", f.Mode&0o7777, nil, 0o2755)

		s.mkdir("pub/closed", 0o755)
		s.chmod("pub/closed", 0)
		wantErr(t, "chdir into a mode-0 directory", s.chdir("pub/closed"), linux.EACCES)
		s.as(0, 0, nil)
		wantErr(t, "root chdirs anywhere", s.chdir("pub/closed"), 0)
	})
}
