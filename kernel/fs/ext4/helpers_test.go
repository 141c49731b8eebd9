package ext4

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// memDev is a Device held in memory.
type memDev struct {
	b       []byte
	flushes int
}

func (d *memDev) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(d.b)) {
		return 0, fmt.Errorf("read past the end: %d+%d", off, len(p))
	}
	return copy(p, d.b[off:]), nil
}

func (d *memDev) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > int64(len(d.b)) {
		return 0, fmt.Errorf("write past the end: %d+%d", off, len(p))
	}
	return copy(d.b[off:], p), nil
}

func (d *memDev) Flush() error { d.flushes++; return nil }
func (d *memDev) Size() int64  { return int64(len(d.b)) }

func needTools(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"mke2fs", "e2fsck", "debugfs"} {
		if _, err := exec.LookPath(tool); err != nil {
			if _, err := os.Stat("/usr/sbin/" + tool); err != nil {
				t.Skipf("%s not installed (apt-get install e2fsprogs)", tool)
			}
		}
	}
	pathOnce.Do(func() { os.Setenv("PATH", os.Getenv("PATH")+":/usr/sbin:/sbin") })
}

// pathOnce adds the sbin directories once, though parallel tests all call
// needTools.
var pathOnce sync.Once

// mkfs makes an image of size bytes with mke2fs and the given options,
// filled from dir when dir is not empty, and returns its path.
func mkfs(t testing.TB, size string, dir string, opts ...string) string {
	t.Helper()
	needTools(t)
	img := filepath.Join(t.TempDir(), "img")
	args := append([]string{"-q", "-F", "-E", "lazy_itable_init=1"}, opts...)
	if dir != "" {
		args = append(args, "-d", dir)
	}
	args = append(args, img, size)
	cmd := exec.Command("mke2fs", args...)
	cmd.Env = append(os.Environ(), "MKE2FS_CONFIG=/etc/mke2fs.conf", "E2FSPROGS_FAKE_TIME=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mke2fs %v: %v\n%s", args, err, out)
	}
	return img
}

func loadImage(t testing.TB, img string) *memDev {
	t.Helper()
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	return &memDev{b: b}
}

func saveImage(t testing.TB, d *memDev) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "out.img")
	if err := os.WriteFile(img, d.b, 0o644); err != nil {
		t.Fatal(err)
	}
	return img
}

// mounted maps a device to the file system a test mounted read-write on
// it, so that fsck can commit its journal first.
var (
	mountedMu sync.Mutex
	mounted   = map[*memDev]*FS{}
)

// mountDev mounts d and remembers it for fsck until t ends.
func mountDev(t testing.TB, d *memDev, o Options) (*FS, error) {
	f, err := Mount(d, o)
	if err == nil {
		remember(t, d, f)
	}
	return f, err
}

// remember records f as mounted on d until t ends: kept longer, every
// image of the run would stay reachable (12 GB of RSS over the package).
func remember(t testing.TB, d *memDev, f *FS) {
	mountedMu.Lock()
	mounted[d] = f
	mountedMu.Unlock()
	t.Cleanup(func() {
		mountedMu.Lock()
		delete(mounted, d)
		mountedMu.Unlock()
	})
}

// syncHome commits and checkpoints, so that the blocks are home and the
// log is empty, as an unmount leaves them (the mount stays read-write):
// e2fsck -n and debugfs do not replay a log.
func (fs *FS) syncHome() error {
	if err := fs.Sync(); err != nil {
		return err
	}
	return fs.Checkpoint()
}

// fsck runs e2fsck -fn on the device's contents and fails the test unless
// it finds nothing. A file system mounted on it commits its journal and
// checkpoints first (as unmounting would).
func fsck(t testing.TB, d *memDev) {
	t.Helper()
	mountedMu.Lock()
	f := mounted[d]
	mountedMu.Unlock()
	if f != nil {
		if err := f.syncHome(); err != nil {
			t.Fatalf("sync: %v", err)
		}
	}
	img := saveImage(t, d)
	out, err := exec.Command("e2fsck", "-fn", img).CombinedOutput()
	if err != nil {
		t.Fatalf("e2fsck -fn: %v\n%s", err, out)
	}
}

func debugfs(t testing.TB, d *memDev, req string) string {
	t.Helper()
	mountedMu.Lock()
	f := mounted[d]
	mountedMu.Unlock()
	if f != nil {
		if err := f.syncHome(); err != nil {
			t.Fatalf("sync: %v", err)
		}
	}
	img := saveImage(t, d)
	out, err := exec.Command("debugfs", "-R", req, img).CombinedOutput()
	if err != nil {
		t.Fatalf("debugfs -R %q: %v\n%s", req, err, out)
	}
	return string(out)
}

// walk resolves a slash-separated path from the root.
func walk(t testing.TB, f *FS, path string) uint32 {
	t.Helper()
	ino := uint32(RootIno)
	for _, c := range strings.Split(strings.Trim(path, "/"), "/") {
		if c == "" {
			continue
		}
		next, err := f.Lookup(ino, c)
		if err != nil {
			t.Fatalf("lookup %q in %s: %v", c, path, err)
		}
		ino = next
	}
	return ino
}

func readAll(t testing.TB, f *FS, ino uint32) []byte {
	t.Helper()
	st, err := f.Stat(ino)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, st.Size)
	n, err := f.ReadAt(ino, buf, 0)
	if err != nil || uint64(n) != st.Size {
		t.Fatalf("read inode %d: %d of %d bytes, %v", ino, n, st.Size, err)
	}
	return buf
}

// compareTree checks that the tree under root in f matches the host tree
// at dir: names, types, modes, sizes, link counts, contents, targets.
func compareTree(t *testing.T, f *FS, dir string, root uint32) int {
	t.Helper()
	count := 0
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		ino := root
		for _, c := range strings.Split(rel, string(filepath.Separator)) {
			next, err := f.Lookup(ino, c)
			if err != nil {
				t.Errorf("%s: lookup %q: %v", rel, c, err)
				return nil
			}
			ino = next
		}
		count++
		var hs syscall.Stat_t
		if err := syscall.Lstat(p, &hs); err != nil {
			return err
		}
		st, err := f.Stat(ino)
		if err != nil {
			t.Errorf("%s: stat: %v", rel, err)
			return nil
		}
		if st.Mode != hs.Mode {
			t.Errorf("%s: mode %o, host %o", rel, st.Mode, hs.Mode)
		}
		if hs.Mode&syscall.S_IFMT != syscall.S_IFDIR && st.Nlink != uint32(hs.Nlink) {
			t.Errorf("%s: nlink %d, host %d", rel, st.Nlink, hs.Nlink)
		}
		if st.Mtime.Sec != hs.Mtim.Sec {
			t.Errorf("%s: mtime %d, host %d", rel, st.Mtime.Sec, hs.Mtim.Sec)
		}
		switch hs.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			want, _ := os.ReadFile(p)
			if got := readAll(t, f, ino); !bytes.Equal(got, want) {
				t.Errorf("%s: contents differ (%d bytes, host %d)", rel, len(got), len(want))
			}
		case syscall.S_IFLNK:
			want, _ := os.Readlink(p)
			if got, err := f.Readlink(ino); err != nil || got != want {
				t.Errorf("%s: target %q %v, host %q", rel, got, err, want)
			}
		case syscall.S_IFCHR, syscall.S_IFBLK:
			maj, min := uint32(hs.Rdev>>8&0xfff), uint32(hs.Rdev&0xff|hs.Rdev>>12&0xfff00)
			if st.RdevMajor != maj || st.RdevMinor != min {
				t.Errorf("%s: device %d:%d, host %d:%d", rel, st.RdevMajor, st.RdevMinor, maj, min)
			}
		case syscall.S_IFDIR:
			ents, err := f.ReadDir(ino)
			if err != nil {
				t.Errorf("%s: readdir: %v", rel, err)
				return nil
			}
			host, _ := os.ReadDir(p)
			if len(ents) != len(host)+2 {
				t.Errorf("%s: %d entries, host %d (+2)", rel, len(ents), len(host))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return count
}
