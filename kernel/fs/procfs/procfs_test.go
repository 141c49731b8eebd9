package procfs

import (
	"errors"
	"strings"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/tmpfs"
	"shortbread/kernel/vfs"
)

// mounted builds / (tmpfs) with this procfs on /proc, as the kernel does.
func mounted(t *testing.T, fs *FS) (*vfs.VFS, *vfs.Ctx) {
	t.Helper()
	root := tmpfs.New(tmpfs.Options{})
	v, err := vfs.New(root.Root(), "rootfs")
	if err != nil {
		t.Fatal(err)
	}
	c := &vfs.Ctx{}
	if err := v.Mkdir(c, nil, "/proc", 0o555); err != nil {
		t.Fatal(err)
	}
	if err := v.Mount(c, nil, "/proc", fs.Root(), "proc", 0); err != nil {
		t.Fatal(err)
	}
	return v, c
}

func readAll(t *testing.T, v *vfs.VFS, c *vfs.Ctx, p string) string {
	t.Helper()
	f, err := v.Open(c, nil, p, linux.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("open %s: %v", p, err)
	}
	defer f.DecRef()
	var out []byte
	buf := make([]byte, 3) // small reads: offsets must advance
	for {
		n, err := f.Read(buf, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return string(out)
		}
		out = append(out, buf[:n]...)
	}
}

func TestFilesSnapshotsAndWrites(t *testing.T) {
	fs := New(linux.MakeDev(0, 4))
	calls := 0
	fs.AddFile("uptime", func() []byte { calls++; return []byte("12.34 5.67\n") }, nil)
	var written []string
	fs.AddFile("sys/vm/drop", func() []byte { return []byte("0\n") }, func(p []byte) error {
		written = append(written, string(p))
		return nil
	})
	fs.AddSymlink("self", "42")
	v, c := mounted(t, fs)
	if got := readAll(t, v, c, "/proc/uptime"); got != "12.34 5.67\n" || calls != 1 {
		t.Errorf("uptime %q after %d generations (want one snapshot per open)", got, calls)
	}
	if got := readAll(t, v, c, "/proc/sys/vm/drop"); got != "0\n" {
		t.Errorf("nested file %q", got)
	}
	f, err := v.Open(c, nil, "/proc/sys/vm/drop", linux.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.Write([]byte("3\n"), nil); n != 2 || err != nil || len(written) != 1 || written[0] != "3\n" {
		t.Errorf("write: %d %v %q", n, err, written)
	}
	f.DecRef()
	if _, err := v.Open(c, nil, "/proc/uptime", linux.O_WRONLY, 0); err == nil {
		t.Error("a read-only file opened for writing")
	}
	if target, err := v.Readlink(c, nil, "/proc/self", 0); err != nil || target != "42" {
		t.Errorf("readlink %q %v", target, err)
	}
	if err := v.Mkdir(c, nil, "/proc/new", 0o755); err == nil {
		t.Error("mkdir in /proc succeeded")
	}
	if _, err := v.Stat(c, nil, "/proc/nope", 0); !errors.Is(err, linux.ENOENT) {
		t.Errorf("missing file: %v", err)
	}
}

func TestDirectoryListing(t *testing.T) {
	fs := New(linux.MakeDev(0, 4))
	for _, n := range []string{"meminfo", "cpuinfo", "sys/kernel/x"} {
		fs.AddFile(n, func() []byte { return nil }, nil)
	}
	v, c := mounted(t, fs)
	d, err := v.Open(c, nil, "/proc", linux.O_RDONLY|linux.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.DecRef()
	buf := make([]byte, 4096)
	n, err := d.Getdents(buf)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for b := buf[:n]; len(b) > 0; {
		e, size := linux.DecodeDirent64(b)
		if size == 0 {
			t.Fatal("malformed dirent")
		}
		names = append(names, e.Name)
		b = b[size:]
	}
	got := strings.Join(names, " ")
	for _, want := range []string{"cpuinfo", "meminfo", "sys"} {
		if !strings.Contains(got, want) {
			t.Errorf("listing %q lacks %s", got, want)
		}
	}
}
