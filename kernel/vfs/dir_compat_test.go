package vfs_test

import (
	"fmt"
	"sort"
	"testing"

	"shortbread/kernel/abi/linux"
)

// listDir reads a whole directory with getdents64 through a buffer of
// the given size and returns name → type, failing on duplicates.
func listDir(t *testing.T, s sys, fd int, bufSize int) map[string]uint8 {
	t.Helper()
	seen := map[string]uint8{}
	buf := make([]byte, bufSize)
	for {
		n, err := s.getdents(fd, buf)
		if err != nil {
			t.Fatalf("getdents: %v", err)
		}
		if n == 0 {
			return seen
		}
		for off := 0; off < n; {
			d, l := linux.DecodeDirent64(buf[off:n])
			if l == 0 {
				t.Fatalf("bad record at %d", off)
			}
			if _, dup := seen[d.Name]; dup {
				t.Errorf("%q listed twice", d.Name)
			}
			seen[d.Name] = d.Type
			off += l
		}
	}
}

func TestDirectories(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		must(t, "mkdir", s.mkdir("dd", 0o755))
		a, _ := s.stat("dd")
		if a.Mode != linux.S_IFDIR|0o755 || a.Nlink != 2 {
			t.Errorf("new dir: mode %#o nlink %d", a.Mode, a.Nlink)
		}
		for _, n := range []string{"f1", "f2", "f3"} {
			create(t, s, "dd/"+n, "")
		}
		s.mkdir("dd/sub", 0o755)
		s.symlink("f1", "dd/link")
		s.mknod("dd/pipe", linux.S_IFIFO|0o600, 0)
		a, _ = s.stat("dd")
		wantN(t, "nlink with a subdirectory", a.Nlink, nil, 3)
		wantErr(t, "rmdir non-empty", s.rmdir("dd"), linux.ENOTEMPTY)
		wantErr(t, "rmdir file", s.rmdir("dd/f1"), linux.ENOTDIR)

		dfd, err := s.open("dd", linux.O_RDONLY|linux.O_DIRECTORY, 0)
		must(t, "open dir", err)
		got := listDir(t, s, dfd, 4096)
		want := map[string]uint8{".": linux.DT_DIR, "..": linux.DT_DIR, "f1": linux.DT_REG, "f2": linux.DT_REG,
			"f3": linux.DT_REG, "sub": linux.DT_DIR, "link": linux.DT_LNK, "pipe": linux.DT_FIFO}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("listing %v, want %v", got, want)
		}
		// Resuming with a buffer that holds one record at a time gives the same.
		s.lseek(dfd, 0, linux.SEEK_SET)
		if small := listDir(t, s, dfd, 32); fmt.Sprint(small) != fmt.Sprint(want) {
			t.Errorf("listing 32 bytes at a time %v", small)
		}
		s.lseek(dfd, 0, linux.SEEK_SET)
		_, err = s.getdents(dfd, make([]byte, 8))
		wantErr(t, "buffer too small for one record", err, linux.EINVAL)
		fd, _ := s.open("dd/f1", linux.O_RDONLY, 0)
		_, err = s.getdents(fd, make([]byte, 4096))
		wantErr(t, "getdents on a file", err, linux.ENOTDIR)
		s.close(fd)

		// d_off of each record resumes right after it.
		s.lseek(dfd, 0, linux.SEEK_SET)
		buf := make([]byte, 4096)
		n, _ := s.getdents(dfd, buf)
		var recs []linux.Dirent64
		for off := 0; off < n; {
			d, l := linux.DecodeDirent64(buf[off:n])
			recs = append(recs, d)
			off += l
		}
		for i := 0; i+1 < len(recs); i++ {
			s.lseek(dfd, recs[i].Off, linux.SEEK_SET)
			m, _ := s.getdents(dfd, buf)
			if d, _ := linux.DecodeDirent64(buf[:m]); m == 0 || d.Name != recs[i+1].Name {
				t.Errorf("resuming at d_off of %q gives %q, want %q", recs[i].Name, d.Name, recs[i+1].Name)
			}
		}

		// A name added after the listing started shows up after a rewind.
		create(t, s, "dd/f4", "")
		s.lseek(dfd, 0, linux.SEEK_SET)
		if _, ok := listDir(t, s, dfd, 4096)["f4"]; !ok {
			t.Error("new entry missing after rewind")
		}
		s.close(dfd)

		for _, n := range []string{"f1", "f2", "f3", "f4", "link", "pipe"} {
			must(t, "unlink", s.unlink("dd/"+n))
		}
		must(t, "rmdir sub", s.rmdir("dd/sub"))
		a, _ = s.stat("dd")
		wantN(t, "nlink after rmdir", a.Nlink, nil, 2)
		dfd, _ = s.open("dd", linux.O_RDONLY, 0)
		must(t, "rmdir", s.rmdir("dd"))
		wantErr(t, "rmdir again", s.rmdir("dd"), linux.ENOENT)
		_, err = s.getdents(dfd, buf)
		wantErr(t, "getdents of a removed directory", err, linux.ENOENT)
		a, _ = s.fstat(dfd)
		wantN(t, "removed directory nlink", a.Nlink, nil, 0)
		_, err = s.openat(dfd, "x", linux.O_CREAT|linux.O_RDWR, 0o644)
		wantErr(t, "create in a removed directory", err, linux.ENOENT)
		s.close(dfd)
	})
}

// TestListingWhileChanging removes and adds names between getdents
// calls: names that stay are listed exactly once.
func TestListingWhileChanging(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		s.mkdir("d", 0o755)
		for i := range 100 {
			create(t, s, fmt.Sprintf("d/%03d", i), "")
		}
		dfd, _ := s.open("d", linux.O_RDONLY, 0)
		seen := map[string]int{}
		buf := make([]byte, 256)
		last := 99 // names above last have been removed
		for round := 0; ; round++ {
			n, err := s.getdents(dfd, buf)
			must(t, "getdents", err)
			if n == 0 {
				break
			}
			for off := 0; off < n; {
				d, l := linux.DecodeDirent64(buf[off:n])
				seen[d.Name]++
				off += l
			}
			for k := 0; k < 2 && last >= 0; k++ {
				must(t, "unlink", s.unlink(fmt.Sprintf("d/%03d", last)))
				last--
			}
			if round < 40 {
				create(t, s, fmt.Sprintf("d/new%d", round), "")
			}
		}
		s.close(dfd)
		for i := 0; i <= last; i++ {
			if name := fmt.Sprintf("%03d", i); seen[name] != 1 {
				t.Errorf("%s stayed but was seen %d times", name, seen[name])
			}
		}
		for name, n := range seen {
			if n > 1 {
				t.Errorf("%s seen %d times", name, n)
			}
		}
	})
}

func TestCwd(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		cwd, err := s.getcwd()
		if cwd != "/" || err != nil {
			t.Errorf("getcwd %q %v", cwd, err)
		}
		s.mkdir("c1", 0o755)
		s.mkdir("c1/c2", 0o755)
		must(t, "chdir", s.chdir("c1/c2"))
		cwd, _ = s.getcwd()
		if cwd != "/c1/c2" {
			t.Errorf("getcwd after chdir %q", cwd)
		}
		must(t, "chdir ..", s.chdir(".."))
		cwd, _ = s.getcwd()
		if cwd != "/c1" {
			t.Errorf("getcwd after chdir .. %q", cwd)
		}
		_, err = s.stat("c2")
		wantErr(t, "relative to the new cwd", err, 0)
		wantErr(t, "chdir missing", s.chdir("nope"), linux.ENOENT)
		create(t, s, "file", "")
		wantErr(t, "chdir to a file", s.chdir("file"), linux.ENOTDIR)
		s.symlink("c2", "lc")
		must(t, "chdir through symlink", s.chdir("lc"))
		cwd, _ = s.getcwd()
		if cwd != "/c1/c2" {
			t.Errorf("getcwd after chdir via symlink %q", cwd)
		}
		// Renaming an ancestor moves the cwd's path with it.
		must(t, "rename ancestor", s.rename("../../c1", "../../c9"))
		cwd, _ = s.getcwd()
		if cwd != "/c9/c2" {
			t.Errorf("getcwd after renaming an ancestor %q", cwd)
		}
		// Removing the cwd: getcwd fails with ENOENT, lookups find nothing.
		s.chdir("..")
		s.mkdir("gone", 0o755)
		s.chdir("gone")
		must(t, "rmdir cwd", s.rmdir("../gone"))
		_, err = s.getcwd()
		wantErr(t, "getcwd of a removed directory", err, linux.ENOENT)
		_, err = s.open("x", linux.O_CREAT|linux.O_RDWR, 0o644)
		wantErr(t, "create in a removed cwd", err, linux.ENOENT)
		_, err = s.stat(".")
		wantErr(t, "stat . of a removed cwd", err, 0)
		wantErr(t, "chdir .. from a removed cwd", s.chdir(".."), 0)
		cwd, _ = s.getcwd()
		if cwd != "/c9" {
			t.Errorf("getcwd back %q", cwd)
		}
		dfd, _ := s.open("c2", linux.O_RDONLY|linux.O_DIRECTORY, 0)
		must(t, "fchdir", s.fchdir(dfd))
		cwd, _ = s.getcwd()
		if cwd != "/c9/c2" {
			t.Errorf("getcwd after fchdir %q", cwd)
		}
		s.close(dfd)
	})
}

// TestDirNlinks follows a directory's link count through mkdir, rmdir
// and renames across parents.
func TestDirNlinks(t *testing.T) {
	both(t, func(t *testing.T, s sys) {
		s.mkdir("a", 0o755)
		s.mkdir("b", 0o755)
		s.mkdir("a/x", 0o755)
		s.mkdir("a/y", 0o755)
		nl := func() []uint64 {
			var out []uint64
			for _, p := range []string{"a", "b"} {
				a, _ := s.stat(p)
				out = append(out, a.Nlink)
			}
			return out
		}
		if got := fmt.Sprint(nl()); got != "[4 2]" {
			t.Errorf("after mkdir %s", got)
		}
		s.rename("a/x", "b/x")
		if got := fmt.Sprint(nl()); got != "[3 3]" {
			t.Errorf("after moving a dir %s", got)
		}
		s.mkdir("b/y", 0o755)
		s.rename("a/y", "b/y")
		if got := fmt.Sprint(nl()); got != "[2 4]" {
			t.Errorf("after replacing a dir %s", got)
		}
		create(t, s, "a/f", "")
		s.renameat2("a/f", "b/x", linux.RENAME_EXCHANGE)
		if got := fmt.Sprint(nl()); got != "[3 3]" {
			t.Errorf("after exchanging a dir and a file %s", got)
		}
		names := []string{}
		dfd, _ := s.open("b", linux.O_RDONLY, 0)
		for n := range listDir(t, s, dfd, 4096) {
			names = append(names, n)
		}
		s.close(dfd)
		sort.Strings(names)
		if fmt.Sprint(names) != "[. .. x y]" {
			t.Errorf("b holds %v", names)
		}
	})
}
