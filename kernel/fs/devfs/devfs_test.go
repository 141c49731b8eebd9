package devfs_test

import (
	"bytes"
	"errors"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/devfs"
	"shortbread/kernel/fs/tmpfs"
	"shortbread/kernel/tty"
	"shortbread/kernel/vfs"
)

// lockedBuffer is a terminal's output, safe to read while it writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// setup mounts a devfs on /dev of a tmpfs root.
func setup(t *testing.T, term *tty.TTY) (*vfs.VFS, *vfs.Ctx) {
	t.Helper()
	root := tmpfs.New(tmpfs.Options{})
	v, err := vfs.New(root.Root(), "tmpfs")
	if err != nil {
		t.Fatal(err)
	}
	c := &vfs.Ctx{}
	if err := v.Mkdir(c, nil, "/dev", 0o755); err != nil {
		t.Fatal(err)
	}
	dev := devfs.New(devfs.Options{Dev: linux.MakeDev(0, 5), Random: bytes.NewReader([]byte("0123456789abcdef")), Console: term,
		ControllingTerminal: func(pid int, _ uint32) (vfs.File, error) {
			if pid != 7 || term == nil {
				return nil, linux.ENXIO
			}
			return tty.NewFile(term), nil
		}})
	if err := v.Mount(c, nil, "/dev", dev.Root(), "devtmpfs", 0); err != nil {
		t.Fatal(err)
	}
	dev.Register(v)
	return v, c
}

func open(t *testing.T, v *vfs.VFS, c *vfs.Ctx, path string, flags uint32) *vfs.OpenFile {
	t.Helper()
	f, err := v.Open(c, nil, path, flags, 0)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	return f
}

func TestMemoryDevices(t *testing.T) {
	v, c := setup(t, nil)
	null := open(t, v, c, "/dev/null", linux.O_RDWR)
	defer null.DecRef()
	buf := make([]byte, 8)
	if n, err := null.Read(buf, nil); n != 0 || err != nil {
		t.Errorf("read /dev/null: %d %v", n, err)
	}
	if n, err := null.Write([]byte("abc"), nil); n != 3 || err != nil {
		t.Errorf("write /dev/null: %d %v", n, err)
	}
	if off, err := null.Seek(100, linux.SEEK_SET); off != 0 || err != nil {
		t.Errorf("lseek /dev/null: %d %v", off, err)
	}
	if n, err := null.Pread(buf, 5, nil); n != 0 || err != nil {
		t.Errorf("pread /dev/null: %d %v", n, err)
	}

	zero := open(t, v, c, "/dev/zero", linux.O_RDONLY)
	defer zero.DecRef()
	for i := range buf {
		buf[i] = 1
	}
	if n, _ := zero.Read(buf, nil); n != 8 || !bytes.Equal(buf, make([]byte, 8)) {
		t.Errorf("read /dev/zero: %d %v", n, buf)
	}

	full := open(t, v, c, "/dev/full", linux.O_RDWR)
	defer full.DecRef()
	if _, err := full.Write([]byte("x"), nil); !errors.Is(err, linux.ENOSPC) {
		t.Errorf("write /dev/full: %v", err)
	}
	if n, _ := full.Read(buf, nil); n != 8 {
		t.Errorf("read /dev/full: %d", n)
	}

	rnd := open(t, v, c, "/dev/urandom", linux.O_RDONLY)
	defer rnd.DecRef()
	if n, _ := rnd.Read(buf, nil); n != 8 || string(buf) != "01234567" {
		t.Errorf("read /dev/urandom: %q", buf[:n])
	}
	rnd2 := open(t, v, c, "/dev/random", linux.O_RDONLY)
	defer rnd2.DecRef()
	if n, _ := rnd2.Read(buf, nil); n != 8 || string(buf) != "89abcdef" {
		t.Errorf("read /dev/random: %q", buf[:n])
	}
	if _, err := rnd2.Read(buf, nil); !errors.Is(err, linux.EIO) {
		t.Errorf("read past the source's end: %v", err)
	}
}

// TestDeviceNumbers compares modes and device numbers with the host's /dev.
func TestDeviceNumbers(t *testing.T) {
	v, c := setup(t, nil)
	for _, name := range []string{"null", "zero", "full", "random", "urandom", "tty", "console"} {
		a, err := v.Stat(c, nil, "/dev/"+name, 0)
		if err != nil {
			t.Fatal(err)
		}
		if a.Type() != linux.S_IFCHR {
			t.Errorf("%s: type %#o", name, a.Type())
		}
		var h syscall.Stat_t
		if syscall.Stat("/dev/"+name, &h) != nil {
			continue
		}
		if a.Rdev != h.Rdev {
			t.Errorf("%s: rdev %d:%d, host %d:%d", name, linux.DevMajor(a.Rdev), linux.DevMinor(a.Rdev),
				linux.DevMajor(h.Rdev), linux.DevMinor(h.Rdev))
		}
		if name != "console" && a.Mode != h.Mode {
			t.Errorf("%s: mode %#o, host %#o", name, a.Mode, h.Mode)
		}
	}
	for _, d := range []struct {
		dev          uint64
		major, minor uint32
	}{
		{devfs.Null, 1, 3}, {devfs.Zero, 1, 5}, {devfs.Full, 1, 7}, {devfs.Random, 1, 8},
		{devfs.URandom, 1, 9}, {devfs.TTY, 5, 0}, {devfs.Console, 5, 1}, {devfs.PTMX, 5, 2},
	} {
		if linux.MakeDev(d.major, d.minor) != d.dev {
			t.Errorf("device %d:%d encoded as %#x", d.major, d.minor, d.dev)
		}
	}
}

// TestTerminal runs the tty devices over the kernel's line discipline.
func TestTerminal(t *testing.T) {
	out := &lockedBuffer{}
	term := tty.New(tty.WriterOutput{W: out}, nil, nil)
	v, c := setup(t, term)
	// /dev/tty is the caller's controlling terminal: process 7 has one.
	if _, err := v.Open(c, nil, "/dev/tty", linux.O_RDWR, 0); !errors.Is(err, linux.ENXIO) {
		t.Errorf("/dev/tty with no controlling terminal: %v, want ENXIO", err)
	}
	c7 := &vfs.Ctx{PID: 7}
	ft := open(t, v, c7, "/dev/tty", linux.O_RDWR)
	if got, _, ok := tty.Of(ft); !ok || got != term {
		t.Error("/dev/tty of process 7 is not its terminal")
	}
	ft.DecRef()
	f := open(t, v, c, "/dev/console", linux.O_RDWR)
	defer f.DecRef()
	if got, _, ok := tty.Of(f); !ok || got != term {
		t.Error("tty.Of does not find the console")
	}
	if n, err := f.Write([]byte("prompt$ "), nil); n != 8 || err != nil || out.String() != "prompt$ " {
		t.Errorf("write: %d %v %q", n, err, out.String())
	}
	if _, err := f.Seek(0, linux.SEEK_CUR); !errors.Is(err, linux.ESPIPE) {
		t.Errorf("lseek on a tty: %v", err)
	}
	if !f.Pollable() || f.Readiness() != linux.POLLOUT|linux.POLLWRNORM {
		t.Errorf("readiness %#x", f.Readiness())
	}
	ch := make(chan struct{}, 1)
	cancel := f.Watch(vfs.WakeChan(ch))
	defer cancel()
	done := make(chan string, 1)
	go func() {
		buf := make([]byte, 16)
		n, _ := f.Read(buf, nil)
		done <- string(buf[:n])
	}()
	select {
	case s := <-done:
		t.Fatalf("read returned %q with no input", s)
	case <-time.After(30 * time.Millisecond):
	}
	term.Input([]byte("ls\n"))
	select {
	case s := <-done:
		if s != "ls\n" {
			t.Errorf("read %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("read still blocked after input")
	}
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("input did not signal the watcher")
	}
	term.Input([]byte("pwd\n"))
	if f.Readiness()&linux.POLLIN == 0 {
		t.Error("no POLLIN with a line ready")
	}
	f.Read(make([]byte, 16), nil)
	f.SetFlags(linux.O_NONBLOCK)
	if _, err := f.Read(make([]byte, 4), nil); !errors.Is(err, linux.EAGAIN) {
		t.Errorf("nonblocking read without input: %v", err)
	}
	f.SetFlags(0)
	intr := make(chan struct{})
	go func() { time.Sleep(20 * time.Millisecond); close(intr) }()
	if _, err := f.Read(make([]byte, 4), intr); !errors.Is(err, linux.EINTR) {
		t.Errorf("interrupted read: %v", err)
	}
	// With no terminal, opening one fails.
	v2, c2 := setup(t, nil)
	if _, err := v2.Open(c2, nil, "/dev/console", linux.O_RDWR, 0); !errors.Is(err, linux.ENXIO) {
		t.Errorf("console without a terminal: %v", err)
	}
}

func TestDevDirectory(t *testing.T) {
	v, c := setup(t, nil)
	d := open(t, v, c, "/dev", linux.O_RDONLY|linux.O_DIRECTORY)
	defer d.DecRef()
	buf := make([]byte, 4096)
	n, err := d.Getdents(buf)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	types := map[string]uint8{}
	for off := 0; off < n; {
		e, l := linux.DecodeDirent64(buf[off:n])
		names = append(names, e.Name)
		types[e.Name] = e.Type
		off += l
	}
	sort.Strings(names)
	want := []string{".", "..", "console", "fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout", "tty", "urandom", "zero"}
	if len(names) != len(want) {
		t.Fatalf("names %v", names)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("names %v, want %v", names, want)
		}
	}
	if types["null"] != linux.DT_CHR || types["fd"] != linux.DT_LNK || types["shm"] != linux.DT_DIR {
		t.Errorf("types %v", types)
	}
	if got, _ := v.Readlink(c, nil, "/dev/stdin", 0); got != "/proc/self/fd/0" {
		t.Errorf("/dev/stdin -> %q", got)
	}
	if a, _ := v.Stat(c, nil, "/dev/shm", 0); a.Mode != linux.S_IFDIR|0o1777 {
		t.Errorf("/dev/shm mode %#o", a.Mode)
	}
	if _, err := v.Open(c, nil, "/dev/newfile", linux.O_CREAT|linux.O_RDWR, 0o644); !errors.Is(err, linux.EPERM) {
		t.Errorf("create in /dev: %v", err)
	}
	if err := v.Unlink(c, nil, "/dev/null"); !errors.Is(err, linux.EPERM) {
		t.Errorf("unlink /dev/null: %v", err)
	}
	if err := v.Chmod(c, nil, "/dev/null", 0o600, 0); err != nil {
		t.Errorf("chmod /dev/null: %v", err)
	}
	if a, _ := v.Stat(c, nil, "/dev/null", 0); a.Mode != linux.S_IFCHR|0o600 {
		t.Errorf("mode after chmod %#o", a.Mode)
	}
	// A tmpfs device node with null's number is /dev/null too.
	if err := v.Mknod(c, nil, "/mynull", linux.S_IFCHR|0o666, devfs.Null); err != nil {
		t.Fatal(err)
	}
	f := open(t, v, c, "/mynull", linux.O_RDWR)
	defer f.DecRef()
	if n, err := f.Write([]byte("gone"), nil); n != 4 || err != nil {
		t.Errorf("write through mknod'ed null: %d %v", n, err)
	}
	// tmpfs mounted on /dev/shm works as a POSIX shm directory.
	shm := tmpfs.New(tmpfs.Options{})
	if err := v.Mount(c, nil, "/dev/shm", shm.Root(), "tmpfs", 0); err != nil {
		t.Fatal(err)
	}
	g := open(t, v, c, "/dev/shm/seg", linux.O_CREAT|linux.O_RDWR)
	g.DecRef()
}

func TestDefaultRandom(t *testing.T) {
	dev := devfs.New(devfs.Options{})
	v, err := vfs.New(dev.Root(), "devtmpfs")
	if err != nil {
		t.Fatal(err)
	}
	f, err := v.Open(&vfs.Ctx{}, nil, "/urandom", linux.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.DecRef()
	a, b := make([]byte, 32), make([]byte, 32)
	f.Read(a, nil)
	f.Read(b, nil)
	if bytes.Equal(a, b) || bytes.Equal(a, make([]byte, 32)) {
		t.Errorf("random reads repeat or are zero: %x %x", a, b)
	}
}
