package tmpfs

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// manualClock returns a clock the test moves by hand.
func manualClock(start int64) (func() time.Time, func(d time.Duration)) {
	now := time.Unix(start, 0)
	var mu sync.Mutex
	return func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return now
		}, func(d time.Duration) {
			mu.Lock()
			now = now.Add(d)
			mu.Unlock()
		}
}

func mustCreate(t *testing.T, d vfs.Dir, name string, mode uint32) vfs.Inode {
	t.Helper()
	in, err := d.Create(name, mode, 0, vfs.Owner{UID: 7, GID: 8})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return in
}

func TestTimestamps(t *testing.T) {
	clock, advance := manualClock(1_000_000)
	fs := New(Options{Clock: clock, Dev: 99})
	root := fs.Root().(vfs.Dir)
	f := mustCreate(t, root, "f", linux.S_IFREG|0o644).(vfs.Regular)
	a := f.Attr()
	t0 := linux.Timespec{Sec: 1_000_000}
	if a.Atime != t0 || a.Mtime != t0 || a.Ctime != t0 || a.Btime != t0 || a.Dev != 99 || a.UID != 7 || a.GID != 8 {
		t.Errorf("new file: %+v", a)
	}
	if r := root.Attr(); r.Mtime != t0 || r.Mode != linux.S_IFDIR|0o1777 {
		t.Errorf("root after create: %+v", r)
	}
	advance(time.Second)
	f.WriteAt([]byte("data"), 0)
	a = f.Attr()
	if a.Mtime.Sec != 1_000_001 || a.Ctime.Sec != 1_000_001 || a.Atime != t0 {
		t.Errorf("after write: %+v", a)
	}
	advance(time.Second)
	f.SetAttr(&vfs.SetAttr{Mask: vfs.SetMode, Mode: 0o600})
	a = f.Attr()
	if a.Ctime.Sec != 1_000_002 || a.Mtime.Sec != 1_000_001 || a.Mode != linux.S_IFREG|0o600 {
		t.Errorf("after chmod: %+v", a)
	}
	// The VFS moves the access time after a read, as the mount says.
	read := func(strict bool) {
		f.ReadAt(make([]byte, 4), 0)
		f.(vfs.Atimer).TouchAtime(strict)
	}
	// relatime: a read moves atime when it is not after mtime...
	advance(time.Second)
	read(false)
	if a = f.Attr(); a.Atime.Sec != 1_000_003 {
		t.Errorf("first read: atime %v", a.Atime)
	}
	// ...but not again until a day passes or the file changes.
	advance(time.Hour)
	read(false)
	if a = f.Attr(); a.Atime.Sec != 1_000_003 {
		t.Errorf("second read: atime %v", a.Atime)
	}
	advance(24 * time.Hour)
	read(false)
	if a = f.Attr(); a.Atime.Sec != 1_000_003+3600+86400 {
		t.Errorf("read a day later: atime %v", a.Atime)
	}
	// strictatime: every read moves it.
	advance(time.Second)
	read(true)
	if a = f.Attr(); a.Atime.Sec != 1_000_003+3600+86400+1 {
		t.Errorf("strict read: atime %v", a.Atime)
	}
	f.SetAttr(&vfs.SetAttr{Mask: vfs.SetAtime | vfs.SetMtime, Atime: linux.Timespec{Sec: 5, Nsec: 6}, Mtime: vfs.Now})
	if a = f.Attr(); a.Atime != (linux.Timespec{Sec: 5, Nsec: 6}) || a.Mtime.Sec != 1_000_003+3600+86400+1 {
		t.Errorf("utimens: %+v", a)
	}
}

// TestDirectoryTimes follows a directory's mtime and ctime through
// changes of its names (set without its lock, see node.stamp) and the
// changes of its attributes that write them under it: each shows the
// time of the last change, whichever kind came last.
func TestDirectoryTimes(t *testing.T) {
	clock, advance := manualClock(1_000_000)
	fs := New(Options{Clock: clock, Dev: 99})
	root := fs.Root().(vfs.Dir)
	check := func(what string, mtime, ctime int64) {
		t.Helper()
		if a := root.Attr(); a.Mtime.Sec != mtime || a.Ctime.Sec != ctime {
			t.Errorf("%s: mtime %v ctime %v, want %d %d", what, a.Mtime, a.Ctime, mtime, ctime)
		}
	}
	advance(time.Second)
	mustCreate(t, root, "f", linux.S_IFREG|0o644)
	check("after create", 1_000_001, 1_000_001)
	advance(time.Second)
	root.SetAttr(&vfs.SetAttr{Mask: vfs.SetMode, Mode: 0o755})
	check("after chmod", 1_000_001, 1_000_002)
	advance(time.Second)
	if err := root.Unlink("f"); err != nil {
		t.Fatal(err)
	}
	check("after unlink", 1_000_003, 1_000_003)
	root.SetAttr(&vfs.SetAttr{Mask: vfs.SetMtime, Mtime: linux.Timespec{Sec: 5}})
	if a := root.Attr(); a.Mtime.Sec != 5 || a.Ctime.Sec != 1_000_003 {
		t.Errorf("after utimens into the past: %+v", a)
	}
	root.SetAttr(&vfs.SetAttr{Mask: vfs.SetMtime, Mtime: linux.Timespec{Sec: 9_000_000}})
	advance(time.Second)
	mustCreate(t, root, "g", linux.S_IFREG|0o644)
	check("create after utimens into the future", 1_000_004, 1_000_004)
	advance(time.Second)
	mustCreate(t, root, "sub", linux.S_IFDIR|0o755)
	if a := root.Attr(); a.Mtime.Sec != 1_000_005 || a.Nlink != 3 {
		t.Errorf("after mkdir: %+v", a)
	}
	advance(time.Second)
	if err := root.Rename("g", root, "h", 0); err != nil {
		t.Fatal(err)
	}
	check("after rename", 1_000_006, 1_000_006)
}

func TestInodesAndLinks(t *testing.T) {
	fs := New(Options{})
	root := fs.Root().(vfs.Dir)
	f := mustCreate(t, root, "f", linux.S_IFREG|0o644)
	d := mustCreate(t, root, "d", linux.S_IFDIR|0o755).(vfs.Dir)
	s, err := root.Symlink("s", "f", vfs.Owner{})
	if err != nil {
		t.Fatal(err)
	}
	inos := map[uint64]bool{}
	for _, in := range []vfs.Inode{root, f, d, s} {
		a := in.Attr()
		if inos[a.Ino] {
			t.Errorf("inode number %d used twice", a.Ino)
		}
		inos[a.Ino] = true
	}
	if _, err := root.Create("f", linux.S_IFREG, 0, vfs.Owner{}); !errors.Is(err, linux.EEXIST) {
		t.Errorf("create over a name: %v", err)
	}
	if err := d.Link("g", f); err != nil {
		t.Fatal(err)
	}
	if a := f.Attr(); a.Nlink != 2 {
		t.Errorf("nlink after link %d", a.Nlink)
	}
	if g, _ := d.Lookup("g"); g != f {
		t.Error("link does not name the same inode")
	}
	if err := root.Link("x", New(Options{}).Root()); !errors.Is(err, linux.EXDEV) {
		t.Errorf("link across file systems: %v", err)
	}
	if err := root.Link("x", d); !errors.Is(err, linux.EPERM) {
		t.Errorf("link a directory: %v", err)
	}
	root.Unlink("f")
	d.Unlink("g")
	if a := f.Attr(); a.Nlink != 0 {
		t.Errorf("nlink after both unlinks %d", a.Nlink)
	}
	if a := root.Attr(); a.Nlink != 3 || a.Size != (2+2)*20 {
		t.Errorf("root: nlink %d size %d", a.Nlink, a.Size)
	}
	if err := root.Rmdir("s"); !errors.Is(err, linux.ENOTDIR) {
		t.Errorf("rmdir a symlink: %v", err)
	}
	if err := root.Unlink("d"); !errors.Is(err, linux.EISDIR) {
		t.Errorf("unlink a directory: %v", err)
	}
	mustCreate(t, d, "inner", linux.S_IFREG)
	if err := root.Rmdir("d"); !errors.Is(err, linux.ENOTEMPTY) {
		t.Errorf("rmdir non-empty: %v", err)
	}
	d.Unlink("inner")
	if err := root.Rmdir("d"); err != nil {
		t.Fatal(err)
	}
	if a := d.Attr(); a.Nlink != 0 {
		t.Errorf("removed directory nlink %d", a.Nlink)
	}
	if a := root.Attr(); a.Nlink != 2 {
		t.Errorf("root nlink %d", a.Nlink)
	}
	if a := s.Attr(); a.Size != 1 || a.Mode != linux.S_IFLNK|0o777 || a.Blocks != 0 {
		t.Errorf("symlink attr %+v", a)
	}
	long, _ := root.Symlink("long", string(make([]byte, 200)), vfs.Owner{})
	if a := long.Attr(); a.Blocks != 8 {
		t.Errorf("long symlink blocks %d", a.Blocks)
	}
}

func TestSparseData(t *testing.T) {
	fs := New(Options{})
	f := mustCreate(t, fs.Root().(vfs.Dir), "f", linux.S_IFREG|0o644).(*file)
	if n, err := f.WriteAt([]byte("end"), 1<<40); n != 3 || err != nil {
		t.Fatal(n, err)
	}
	a := f.Attr()
	if a.Size != 1<<40+3 || a.Blocks != 8 || f.pages() != 1 {
		t.Errorf("sparse write: size %d blocks %d pages %d", a.Size, a.Blocks, f.pages())
	}
	buf := make([]byte, 10000)
	for i := range buf {
		buf[i] = 0xff
	}
	if n, _ := f.ReadAt(buf, 1<<40-9997); n != 10000 || buf[9996] != 0 || string(buf[9997:]) != "end" {
		t.Errorf("read across the hole: %d %q", n, buf[9990:])
	}
	if err := f.SetAttr(&vfs.SetAttr{Mask: vfs.SetSize, Size: 1 << 50}); err != nil || f.pages() != 1 {
		t.Errorf("huge extension allocated: %v, %d pages", err, f.pages())
	}
	f.SetAttr(&vfs.SetAttr{Mask: vfs.SetSize, Size: 4097})
	if f.pages() != 0 || f.Attr().Blocks != 0 {
		t.Errorf("shrink kept %d pages", f.pages())
	}
	// A write across page boundaries lands in order.
	data := make([]byte, 3*pageSize+10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	f.WriteAt(data, 100)
	got := make([]byte, len(data))
	f.ReadAt(got, 100)
	if string(got) != string(data) {
		t.Error("multi-page write reads back differently")
	}
	if n, err := f.WriteAt([]byte("x"), math.MaxInt64); n != 0 || !errors.Is(err, linux.EFBIG) {
		t.Errorf("write at the maximum size: %d %v", n, err)
	}
	if n, err := f.WriteAt([]byte("xyz"), math.MaxInt64-1); n != 1 || err != nil {
		t.Errorf("write crossing the maximum size: %d %v", n, err)
	}
	if n, end, err := f.Append([]byte("a")); n != 0 || end != math.MaxInt64 || !errors.Is(err, linux.EFBIG) {
		t.Errorf("append at the maximum size: %d %d %v", n, end, err)
	}
}

func TestReadDirPositions(t *testing.T) {
	fs := New(Options{})
	root := fs.Root().(vfs.Dir)
	for i := range 100 {
		mustCreate(t, root, fmt.Sprintf("f%02d", i), linux.S_IFREG)
	}
	list := func(pos int64, max int) (names []string, next int64) {
		next = pos
		root.ReadDir(pos, func(e vfs.DirEntry) bool {
			if len(names) == max {
				return false
			}
			names = append(names, e.Name)
			next = e.Next
			return true
		})
		return names, next
	}
	first, pos := list(0, 10)
	if first[0] != "f00" || first[9] != "f09" {
		t.Errorf("first page %v", first)
	}
	// Remove most names, forcing compaction, then resume.
	for i := 5; i < 95; i++ {
		if i == 50 {
			continue
		}
		root.Unlink(fmt.Sprintf("f%02d", i))
	}
	slots, live := 0, 0
	for i := range fs.root.shards {
		if s := fs.root.shards[i].Load(); s != nil {
			slots += len(s.order)
			live += len(s.entries)
		}
	}
	// Each shard keeps at most compactMin dead slots, or as many as its
	// live ones.
	if slots > 2*live+dirShards*compactMin || slots >= 100 {
		t.Errorf("no compaction: %d slots for %d names", slots, live)
	}
	rest, _ := list(pos, 100)
	if fmt.Sprint(rest) != "[f50 f95 f96 f97 f98 f99]" {
		t.Errorf("resumed listing %v", rest)
	}
	mustCreate(t, root, "new", linux.S_IFREG)
	all, _ := list(0, 100)
	if len(all) != 12 || all[11] != "new" {
		t.Errorf("listing with a new name at the end %v", all)
	}
}

func TestRenameExchange(t *testing.T) {
	fs := New(Options{})
	root := fs.Root().(vfs.Dir)
	a := mustCreate(t, root, "a", linux.S_IFDIR|0o755).(vfs.Dir)
	b := mustCreate(t, root, "b", linux.S_IFDIR|0o755).(vfs.Dir)
	sub := mustCreate(t, a, "sub", linux.S_IFDIR|0o755)
	f := mustCreate(t, b, "f", linux.S_IFREG)
	if err := a.Rename("sub", b, "f", linux.RENAME_EXCHANGE); err != nil {
		t.Fatal(err)
	}
	if x, _ := a.Lookup("sub"); x != f {
		t.Error("a/sub is not the file")
	}
	if x, _ := b.Lookup("f"); x != sub {
		t.Error("b/f is not the directory")
	}
	if a.Attr().Nlink != 2 || b.Attr().Nlink != 3 {
		t.Errorf("nlinks a %d b %d", a.Attr().Nlink, b.Attr().Nlink)
	}
	if err := a.Rename("sub", b, "f", linux.RENAME_NOREPLACE); !errors.Is(err, linux.EEXIST) {
		t.Errorf("RENAME_NOREPLACE: %v", err)
	}
	mustCreate(t, sub.(vfs.Dir), "x", linux.S_IFREG)
	mustCreate(t, a, "d2", linux.S_IFDIR)
	if err := a.Rename("d2", b, "f", 0); !errors.Is(err, linux.ENOTEMPTY) {
		t.Errorf("replace a non-empty dir: %v", err)
	}
	if err := a.Rename("nope", b, "x", 0); !errors.Is(err, linux.ENOENT) {
		t.Errorf("rename missing: %v", err)
	}
}

func TestConcurrentData(t *testing.T) {
	fs := New(Options{})
	f := mustCreate(t, fs.Root().(vfs.Dir), "f", linux.S_IFREG).(vfs.Regular)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := []byte(fmt.Sprintf("<%d>", g))
			buf := make([]byte, 64)
			for range 500 {
				f.Append(rec)
				f.ReadAt(buf, 0)
				f.Attr()
			}
		}()
	}
	wg.Wait()
	if a := f.Attr(); a.Size != 4*500*3 {
		t.Errorf("appends lost: size %d", a.Size)
	}
	buf := make([]byte, 4*500*3)
	f.ReadAt(buf, 0)
	for i := 0; i < len(buf); i += 3 {
		if buf[i] != '<' || buf[i+2] != '>' {
			t.Fatalf("interleaved append at %d: %q", i, buf[i:i+3])
		}
	}
}

// A tmpfs file declares vfs.ExactReader, so read(2) hands it a lent
// buffer without clearing it: ReadAt must write every byte it reports,
// zeros for a hole and for a page never written, and none past them.
func TestReadWritesWhatItReports(t *testing.T) {
	var _ vfs.ExactReader = (*file)(nil)
	fs := New(Options{})
	f := mustCreate(t, fs.Root().(vfs.Dir), "f", linux.S_IFREG|0o644).(*file)
	if n, err := f.WriteAt([]byte("end"), 2*pageSize+5); n != 3 || err != nil {
		t.Fatal(n, err)
	}
	buf := make([]byte, 4*pageSize)
	for i := range buf {
		buf[i] = 0xee
	}
	n, err := f.ReadAt(buf, 10)
	if err != nil || n != 2*pageSize-2 {
		t.Fatalf("read: %d %v", n, err)
	}
	for i, b := range buf[:n-3] {
		if b != 0 {
			t.Fatalf("byte %d of the hole reads %#x", i, b)
		}
	}
	if string(buf[n-3:n]) != "end" {
		t.Errorf("data after the hole: %q", buf[n-3:n])
	}
	for i, b := range buf[n:] {
		if b != 0xee {
			t.Fatalf("byte %d past the %d read written: %#x", n+i, n, b)
		}
	}
}
