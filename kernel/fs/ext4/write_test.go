package ext4

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"regexp"
	"strings"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
)

// Every write test ends with e2fsck -fn finding nothing, and checks what
// it wrote by reading it back, through this package and through debugfs.

var writeVariants = []struct {
	name string
	opts []string
}{
	{"ext4", []string{"-t", "ext4"}},
	{"ext4-4k", []string{"-t", "ext4", "-b", "4096"}},
	{"ext4-nocsum", []string{"-t", "ext4", "-O", "^metadata_csum,uninit_bg"}},
	{"ext3", []string{"-t", "ext3"}},
	{"ext2", []string{"-t", "ext2"}},
}

func mountRW(t *testing.T, size string, opts ...string) (*FS, *memDev) {
	t.Helper()
	dev := loadImage(t, mkfs(t, size, "", opts...))
	clock := time.Unix(1700000000, 123456789)
	f, err := mountDev(t, dev, Options{Clock: func() time.Time { clock = clock.Add(time.Millisecond); return clock }})
	if err != nil {
		t.Fatal(err)
	}
	if ro, why := f.ReadOnly(); ro {
		t.Fatalf("read-only: %s", why)
	}
	return f, dev
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func okIno(t *testing.T) func(uint32, error) uint32 {
	return func(ino uint32, err error) uint32 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return ino
	}
}

func writeAll(t *testing.T, f *FS, ino uint32, p []byte, off int64) {
	t.Helper()
	n, err := f.WriteAt(ino, p, off)
	if err != nil || n != len(p) {
		t.Fatalf("write %d bytes at %d: %d, %v", len(p), off, n, err)
	}
}

func TestWriteFiles(t *testing.T) {
	for _, v := range writeVariants {
		t.Run(v.name, func(t *testing.T) {
			f, dev := mountRW(t, "64M", v.opts...)
			must := okIno(t)
			rng := rand.New(rand.NewSource(3))
			model := map[string][]byte{}
			sizes := map[string]int{"tiny": 10, "one": int(f.blockSize), "odd": 3*int(f.blockSize) + 77, "big": 3 << 20}
			for name, n := range sizes {
				ino := must(f.Create(RootIno, name, linux.S_IFREG|0o644, 1000, 1000, 0, 0))
				data := make([]byte, n)
				rng.Read(data)
				writeAll(t, f, ino, data, 0)
				model[name] = data
			}
			// Overwrite in the middle, append, extend past a hole.
			big := walk(t, f, "big")
			patch := bytes.Repeat([]byte("P"), 10000)
			writeAll(t, f, big, patch, 12345)
			copy(model["big"][12345:], patch)
			writeAll(t, f, walk(t, f, "tiny"), []byte("appended"), 10)
			model["tiny"] = append(model["tiny"], "appended"...)
			odd := walk(t, f, "odd")
			far := int64(40 << 20)
			writeAll(t, f, odd, []byte("far away"), far)
			m := make([]byte, far+8)
			copy(m, model["odd"])
			copy(m[far:], "far away")
			model["odd"] = m
			// Truncate down to mid-block, then grow: the tail reads zeros.
			one := walk(t, f, "one")
			ok(t, f.Truncate(one, 100))
			ok(t, f.Truncate(one, 5000))
			m = make([]byte, 5000)
			copy(m, model["one"][:100])
			model["one"] = m
			for name, want := range model {
				if got := readAll(t, f, walk(t, f, name)); !bytes.Equal(got, want) {
					t.Errorf("%s: read back differs", name)
				}
			}
			fsck(t, dev)
			out := debugfs(t, dev, "cat tiny")
			if !strings.Contains(out, string(model["tiny"])) {
				t.Errorf("debugfs cat tiny: %q", out)
			}
			st, _ := f.Stat(odd)
			if st.Blocks > 64*uint64(f.blockSize/512) {
				t.Errorf("sparse file holds %d sectors", st.Blocks)
			}
			// Remount and read again: nothing lived only in memory.
			ok(t, f.Sync())
			f2, err := mountDev(t, dev, Options{})
			ok(t, err)
			for name, want := range model {
				if got := readAll(t, f2, walk(t, f2, name)); !bytes.Equal(got, want) {
					t.Errorf("%s after remount: differs", name)
				}
			}
			for name := range model {
				ok(t, f2.Unlink(RootIno, name))
			}
			fsck(t, dev)
			s := f2.Statfs()
			fresh := loadImage(t, mkfs(t, "64M", "", v.opts...))
			f3, _ := Mount(fresh, Options{ReadOnly: true})
			if s2 := f3.Statfs(); s.Free != s2.Free || s.FilesFree != s2.FilesFree {
				t.Errorf("after deleting everything: %d free blocks %d free inodes, a fresh file system %d %d", s.Free, s.FilesFree, s2.Free, s2.FilesFree)
			}
		})
	}
}

// TestExtentTree grows a file of many extents (every other block), so the
// tree gains levels, then fills the holes (it shrinks back) and truncates.
func TestExtentTree(t *testing.T) {
	f, dev := mountRW(t, "64M", "-t", "ext4")
	ino := okIno(t)(f.Create(RootIno, "f", linux.S_IFREG|0o644, 0, 0, 0, 0))
	bs := int64(f.blockSize)
	n := int64(600)
	model := make([]byte, (2*n)*bs)
	for i := int64(0); i < n; i++ {
		b := bytes.Repeat([]byte{byte(i)}, int(bs))
		writeAll(t, f, ino, b, 2*i*bs)
		copy(model[2*i*bs:], b)
	}
	// Other files' blocks in between keep the extents from merging.
	in, _ := f.iget(ino)
	if depth := le.Uint16(in.block[6:]); depth < 1 {
		t.Fatalf("depth %d after %d extents", depth, n)
	}
	fsck(t, dev)
	if got := readAll(t, f, ino); !bytes.Equal(got[:len(model)-int(bs)], model[:len(model)-int(bs)]) {
		t.Fatal("read back differs")
	}
	// Truncate to half: blocks freed, tree shrinks.
	ok(t, f.Truncate(ino, uint64(n*bs)))
	fsck(t, dev)
	// Fill the holes.
	for i := int64(0); i < n/2; i++ {
		b := bytes.Repeat([]byte{0xAA}, int(bs))
		writeAll(t, f, ino, b, (2*i+1)*bs)
		copy(model[(2*i+1)*bs:], b)
	}
	if got := readAll(t, f, ino); !bytes.Equal(got, model[:n*bs]) {
		t.Fatal("read back after filling differs")
	}
	fsck(t, dev)
	ok(t, f.Truncate(ino, 0))
	fsck(t, dev)
	in, _ = f.iget(ino)
	if in.blocks != 0 {
		t.Errorf("empty file holds %d sectors", in.blocks)
	}
}

func TestDirectories(t *testing.T) {
	for _, v := range writeVariants {
		t.Run(v.name, func(t *testing.T) {
			f, dev := mountRW(t, "64M", v.opts...)
			must := okIno(t)
			d := must(f.Mkdir(RootIno, "d", 0o755, 0, 0))
			sub := must(f.Mkdir(d, "sub", 0o700, 5, 6))
			must(f.Mkdir(sub, "deeper", 0o755, 0, 0))
			const n = 2000
			for i := 0; i < n; i++ {
				must(f.Create(d, fmt.Sprintf("file-%05d", i), linux.S_IFREG|0o600, 0, 0, 0, 0))
			}
			for i := 0; i < n; i += 3 {
				ok(t, f.Unlink(d, fmt.Sprintf("file-%05d", i)))
			}
			if _, err := f.Create(d, "file-00001", linux.S_IFREG|0o600, 0, 0, 0, 0); !errors.Is(err, linux.EEXIST) {
				t.Errorf("create of an existing name: %v", err)
			}
			if err := f.Rmdir(RootIno, "d"); !errors.Is(err, linux.ENOTEMPTY) {
				t.Errorf("rmdir of a full directory: %v", err)
			}
			if err := f.Unlink(RootIno, "d"); !errors.Is(err, linux.EISDIR) {
				t.Errorf("unlink of a directory: %v", err)
			}
			if err := f.Rmdir(d, "file-00001"); !errors.Is(err, linux.ENOTDIR) {
				t.Errorf("rmdir of a file: %v", err)
			}
			ents, err := f.ReadDir(d)
			ok(t, err)
			if want := n - (n+2)/3 + 3; len(ents) != want {
				t.Errorf("%d entries, want %d", len(ents), want)
			}
			st, _ := f.Stat(d)
			if st.Nlink != 3 {
				t.Errorf("d has %d links, want 3", st.Nlink)
			}
			st, _ = f.Stat(RootIno)
			if st.Nlink != 4 { // ., .., lost+found/.., d/..
				t.Errorf("root has %d links, want 4", st.Nlink)
			}
			fsck(t, dev)
			if out := debugfs(t, dev, "ls -l /d/sub"); !strings.Contains(out, "deeper") {
				t.Errorf("debugfs ls /d/sub: %s", out)
			}
			ok(t, f.Rmdir(sub, "deeper"))
			ok(t, f.Rmdir(d, "sub"))
			fsck(t, dev)
		})
	}
}

// TestIndexedDirectory changes directories made indexed by e2fsck -D.
func TestIndexedDirectory(t *testing.T) {
	t.Parallel() // one of the longest: with the others, on every core
	needTools(t)
	src := makeTree(t)
	for _, v := range []string{"ext4", "ext3"} {
		t.Run(v, func(t *testing.T) {
			img := mkfs(t, "160M", src, "-t", v)
			indexDirs(t, img)
			dev := loadImage(t, img)
			f, err := mountDev(t, dev, Options{})
			ok(t, err)
			many := walk(t, f, "many")
			ok(t, f.Unlink(many, "entry-with-a-longish-name-00010"))
			fsck(t, dev)
			okIno(t)(f.Create(many, "a-new-name", linux.S_IFREG|0o644, 0, 0, 0, 0))
			fsck(t, dev)
			ents, err := f.ReadDir(many)
			ok(t, err)
			if len(ents) != 3000+2 {
				t.Errorf("%d entries", len(ents))
			}
			if _, err := f.Lookup(many, "entry-with-a-longish-name-02999"); err != nil {
				t.Error(err)
			}
			out := debugfs(t, dev, "ls /many")
			// A removed name first in its block stays, with inode 0.
			removed := regexp.MustCompile(`(^|\s)[1-9][0-9]*\s+\(\d+\) entry-with-a-longish-name-00010\s`)
			if !strings.Contains(out, "a-new-name") || removed.MatchString(out) {
				t.Errorf("debugfs ls /many does not show the change")
			}
		})
	}
}

func TestLinksAndSpecialFiles(t *testing.T) {
	for _, v := range writeVariants {
		t.Run(v.name, func(t *testing.T) {
			f, dev := mountRW(t, "16M", v.opts...)
			must := okIno(t)
			a := must(f.Create(RootIno, "a", linux.S_IFREG|0o644, 0, 0, 0, 0))
			writeAll(t, f, a, []byte("shared"), 0)
			ok(t, f.Link(RootIno, "b", a))
			d := must(f.Mkdir(RootIno, "d", 0o755, 0, 0))
			ok(t, f.Link(d, "c", a))
			if st, _ := f.Stat(a); st.Nlink != 3 {
				t.Errorf("nlink %d", st.Nlink)
			}
			if err := f.Link(RootIno, "dirlink", d); !errors.Is(err, linux.EPERM) {
				t.Errorf("link to a directory: %v", err)
			}
			fast := must(f.Symlink(RootIno, "fast", "a", 0, 0))
			long := strings.Repeat("x/", 100) + "y"
			slow := must(f.Symlink(RootIno, "slow", long, 0, 0))
			must(f.Create(RootIno, "fifo", linux.S_IFIFO|0o600, 0, 0, 0, 0))
			must(f.Create(RootIno, "sock", linux.S_IFSOCK|0o600, 0, 0, 0, 0))
			must(f.Create(RootIno, "null", linux.S_IFCHR|0o666, 0, 0, 1, 3))
			nvme := must(f.Create(RootIno, "nvme", linux.S_IFBLK|0o660, 0, 0, 259, 300))
			if s, _ := f.Readlink(fast); s != "a" {
				t.Errorf("fast symlink %q", s)
			}
			if s, _ := f.Readlink(slow); s != long {
				t.Errorf("slow symlink %q", s)
			}
			if st, _ := f.Stat(nvme); st.RdevMajor != 259 || st.RdevMinor != 300 {
				t.Errorf("device %d:%d", st.RdevMajor, st.RdevMinor)
			}
			ok(t, f.Unlink(RootIno, "a"))
			if st, _ := f.Stat(a); st.Nlink != 2 {
				t.Errorf("nlink after unlink %d", st.Nlink)
			}
			fsck(t, dev)
			out := debugfs(t, dev, "stat /nvme")
			if !strings.Contains(out, "Device major/minor number: 259:300") {
				t.Errorf("debugfs stat /nvme:\n%s", out)
			}
			if out := debugfs(t, dev, "stat /slow"); !strings.Contains(out, "Fast link dest") && !strings.Contains(out, "EXTENTS") && !strings.Contains(out, "BLOCKS") {
				t.Errorf("debugfs stat /slow:\n%s", out)
			}
			if out := debugfs(t, dev, "cat /d/c"); !strings.Contains(out, "shared") {
				t.Errorf("debugfs cat /d/c: %q", out)
			}
			// Hold keeps an unlinked inode until Release.
			f.Hold(a)
			ok(t, f.Unlink(RootIno, "b"))
			ok(t, f.Unlink(d, "c"))
			if got := readAll(t, f, a); string(got) != "shared" {
				t.Errorf("held file reads %q", got)
			}
			ok(t, f.Release(a))
			ok(t, f.Unlink(RootIno, "slow"))
			fsck(t, dev)
		})
	}
}

func TestRename(t *testing.T) {
	for _, v := range writeVariants {
		t.Run(v.name, func(t *testing.T) {
			f, dev := mountRW(t, "16M", v.opts...)
			must := okIno(t)
			x := must(f.Mkdir(RootIno, "x", 0o755, 0, 0))
			y := must(f.Mkdir(RootIno, "y", 0o755, 0, 0))
			file := must(f.Create(x, "file", linux.S_IFREG|0o644, 0, 0, 0, 0))
			other := must(f.Create(y, "other", linux.S_IFREG|0o644, 0, 0, 0, 0))
			writeAll(t, f, other, make([]byte, 10000), 0)
			sub := must(f.Mkdir(x, "sub", 0o755, 0, 0))
			ok(t, f.Rename(x, "file", x, "file2", 0))  // same directory
			ok(t, f.Rename(x, "file2", y, "other", 0)) // replace, across
			ok(t, f.Rename(x, "sub", y, "sub", 0))     // directory across
			if err := f.Rename(RootIno, "y", y, "inside", 0); !errors.Is(err, linux.EINVAL) {
				t.Errorf("move into itself: %v", err)
			}
			must(f.Mkdir(x, "empty", 0o755, 0, 0))
			ok(t, f.Rename(y, "sub", x, "empty", 0)) // replace an empty directory
			must(f.Create(x, "n1", linux.S_IFREG|0o644, 0, 0, 0, 0))
			if err := f.Rename(x, "n1", y, "other", linux.RENAME_NOREPLACE); !errors.Is(err, linux.EEXIST) {
				t.Errorf("noreplace: %v", err)
			}
			ok(t, f.Rename(x, "empty", y, "other", linux.RENAME_EXCHANGE)) // directory <-> file
			if got, _ := f.Lookup(y, "other"); got != sub {
				t.Errorf("exchange: y/other is %d, want %d", got, sub)
			}
			if got, _ := f.Lookup(x, "empty"); got != file {
				t.Errorf("exchange: x/empty is %d, want %d", got, file)
			}
			if p, _ := f.Lookup(sub, ".."); p != y {
				t.Errorf("sub/.. is %d, want %d", p, y)
			}
			for _, c := range []struct {
				dir  uint32
				want uint32
			}{{x, 2}, {y, 3}, {RootIno, 5}} {
				if st, _ := f.Stat(c.dir); st.Nlink != c.want {
					t.Errorf("dir %d: nlink %d, want %d", c.dir, st.Nlink, c.want)
				}
			}
			fsck(t, dev)
		})
	}
}

func TestNoSpace(t *testing.T) {
	f, dev := mountRW(t, "4M", "-t", "ext4", "-N", "64")
	must := okIno(t)
	ino := must(f.Create(RootIno, "fill", linux.S_IFREG|0o644, 0, 0, 0, 0))
	chunk := make([]byte, 64<<10)
	var err error
	for off := int64(0); err == nil; off += int64(len(chunk)) {
		_, err = f.WriteAt(ino, chunk, off)
	}
	if !errors.Is(err, linux.ENOSPC) {
		t.Fatalf("filling: %v", err)
	}
	fsck(t, dev)
	for i := 0; ; i++ {
		_, err := f.Create(RootIno, fmt.Sprint("n", i), linux.S_IFREG|0o644, 0, 0, 0, 0)
		if err != nil {
			if !errors.Is(err, linux.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	fsck(t, dev)
	ok(t, f.Unlink(RootIno, "fill"))
	fsck(t, dev)
	if s := f.Statfs(); s.Free < s.Blocks/2 {
		t.Errorf("after unlink: %d of %d blocks free", s.Free, s.Blocks)
	}
}

// TestUninitGroups writes enough to reach groups mke2fs left
// uninitialized (BLOCK_UNINIT, INODE_UNINIT).
func TestUninitGroups(t *testing.T) {
	f, dev := mountRW(t, "300M", "-t", "ext4", "-b", "1024")
	uninit := 0
	for _, g := range f.groups {
		if g.flags&bgBlockUninit != 0 {
			uninit++
		}
	}
	if uninit == 0 {
		t.Fatal("no BLOCK_UNINIT group: the test covers nothing")
	}
	must := okIno(t)
	for i := 0; i < 40; i++ {
		d := must(f.Mkdir(RootIno, fmt.Sprint("d", i), 0o755, 0, 0))
		ino := must(f.Create(d, "f", linux.S_IFREG|0o644, 0, 0, 0, 0))
		writeAll(t, f, ino, make([]byte, 4<<20), 0)
	}
	after := 0
	for _, g := range f.groups {
		if g.flags&bgBlockUninit != 0 {
			after++
		}
	}
	if after >= uninit {
		t.Errorf("still %d uninitialized groups of %d", after, uninit)
	}
	fsck(t, dev)
}

func TestTimestamps(t *testing.T) {
	f, dev := mountRW(t, "8M", "-t", "ext4")
	ino := okIno(t)(f.Create(RootIno, "t", linux.S_IFREG|0o644, 0, 0, 0, 0))
	when := linux.Timespec{Sec: 1 << 33, Nsec: 987654321} // past 2038: uses the epoch bits
	ok(t, f.SetAttr(ino, SetAtime|SetMtime|SetMode|SetUID|SetGID, Attr{Mode: 0o4711, UID: 70000, GID: 80000, Atime: when, Mtime: when}))
	st, err := f.Stat(ino)
	ok(t, err)
	if st.Mtime != when || st.Atime != when || st.Mode != linux.S_IFREG|0o4711 || st.UID != 70000 || st.GID != 80000 {
		t.Errorf("stat %+v", st)
	}
	if st.Ctime.Nsec == 0 || st.Btime.Sec != 1700000000 {
		t.Errorf("ctime %v btime %v", st.Ctime, st.Btime)
	}
	fsck(t, dev)
	out := debugfs(t, dev, "stat /t")
	if !strings.Contains(out, "User: 70000") || !strings.Contains(out, "0x00000000:eb79a2c6") {
		t.Errorf("debugfs stat /t:\n%s", out)
	}
}

func TestFallocate(t *testing.T) {
	f, dev := mountRW(t, "32M", "-t", "ext4")
	ino := okIno(t)(f.Create(RootIno, "f", linux.S_IFREG|0o644, 0, 0, 0, 0))
	bs := int64(f.blockSize)
	ok(t, f.Fallocate(ino, 0, 0, 100*bs+10))
	st, _ := f.Stat(ino)
	if st.Size != uint64(100*bs+10) || st.Blocks < uint64(101*bs/512) {
		t.Fatalf("after fallocate: size %d, %d sectors", st.Size, st.Blocks)
	}
	if got := readAll(t, f, ino); !bytes.Equal(got, make([]byte, len(got))) {
		t.Fatal("preallocated blocks do not read as zeros")
	}
	fsck(t, dev)
	// Write into the middle of the unwritten extent: it splits.
	data := bytes.Repeat([]byte("w"), int(3*bs))
	writeAll(t, f, ino, data, 10*bs+7)
	ok(t, f.Fallocate(ino, FallocKeepSize, 200*bs, 50*bs))
	if st, _ := f.Stat(ino); st.Size != uint64(100*bs+10) {
		t.Errorf("KEEP_SIZE changed the size to %d", st.Size)
	}
	fsck(t, dev)
	// Punch a hole across the written part.
	ok(t, f.Fallocate(ino, FallocPunchHole|FallocKeepSize, 11*bs+5, bs+100))
	got := readAll(t, f, ino)
	want := make([]byte, 100*bs+10)
	copy(want[10*bs+7:], data)
	clear(want[11*bs+5 : 12*bs+105])
	if !bytes.Equal(got, want) {
		t.Error("contents after punch differ")
	}
	before, _ := f.Stat(ino)
	ok(t, f.Fallocate(ino, FallocPunchHole|FallocKeepSize, 20*bs, 30*bs))
	after, _ := f.Stat(ino)
	if after.Blocks >= before.Blocks {
		t.Errorf("punching 30 blocks freed nothing (%d -> %d sectors)", before.Blocks, after.Blocks)
	}
	if err := f.Fallocate(ino, FallocPunchHole, 0, bs); !errors.Is(err, linux.EINVAL) {
		t.Errorf("punch without KEEP_SIZE: %v", err)
	}
	fsck(t, dev)
	out := debugfs(t, dev, "stat /f")
	if !strings.Contains(out, "[u]") && !strings.Contains(out, "Uninit") {
		t.Logf("debugfs stat:\n%s", out)
	}
	g, d2 := mountRW(t, "8M", "-t", "ext3")
	e := okIno(t)(g.Create(RootIno, "x", linux.S_IFREG|0o644, 0, 0, 0, 0))
	if err := g.Fallocate(e, 0, 0, 4096); !errors.Is(err, linux.EOPNOTSUPP) {
		t.Errorf("fallocate on an indirect-mapped file: %v", err)
	}
	fsck(t, d2)
}

// TestFallocateNoSpace asks for more than the disk has, its free space
// in single blocks (so that the extent tree needs blocks of its own).
// The blocks it got are the file's on the disk too (none is marked used
// and owned by no one: e2fsck), the reserve is left for the tree, and
// unlinking the file gives every block back. Without the reserve the
// tree finds no block, and the call gives back what its last try
// allocated.
func TestFallocateNoSpace(t *testing.T) {
	for _, c := range []struct {
		blockSize string
		reserve   bool
	}{{"1024", true}, {"4096", true}, {"1024", false}, {"4096", false}} {
		t.Run(fmt.Sprintf("%s-reserve-%v", c.blockSize, c.reserve), func(t *testing.T) {
			f, dev := mountRW(t, "16M", "-t", "ext4", "-b", c.blockSize)
			if f.resvBlocks != 16<<20/int64(f.blockSize)/50 {
				t.Errorf("reserve %d blocks of %d", f.resvBlocks, f.sb.blocksCount)
			}
			must := okIno(t)
			// Two files take every other block, one goes.
			a := must(f.Create(RootIno, "a", linux.S_IFREG|0o644, 0, 0, 0, 0))
			b := must(f.Create(RootIno, "b", linux.S_IFREG|0o644, 0, 0, 0, 0))
			blk := make([]byte, f.blockSize)
			for off := int64(0); off < 1<<20; off += int64(len(blk)) {
				writeAll(t, f, a, blk, off)
				writeAll(t, f, b, blk, off)
			}
			ok(t, f.Unlink(RootIno, "b"))
			if !c.reserve {
				f.resvBlocks = 0
			}
			free := f.Statfs().Free
			ino := must(f.Create(RootIno, "big", linux.S_IFREG|0o644, 0, 0, 0, 0))
			err := f.Fallocate(ino, FallocKeepSize, 0, 1<<30)
			if !errors.Is(err, linux.ENOSPC) {
				t.Fatalf("fallocate of 1 GiB on 16 MiB: %v", err)
			}
			st, _ := f.Stat(ino)
			s := f.Statfs()
			if c.reserve && (st.Blocks == 0 || s.Avail != 0 || s.Free == 0) {
				t.Errorf("kept %d sectors; %d blocks free, %d available", st.Blocks, s.Free, s.Avail)
			}
			if !c.reserve && s.Free == 0 {
				// The data took every block; the tree found none,
				// and the last run's blocks went back.
				t.Errorf("kept %d sectors; no block free: nothing given back", st.Blocks)
			}
			fsck(t, dev)
			if in, err := f.iget(ino); err == nil && c.reserve {
				if fm, err := f.mapping(in); err != nil || len(fm.em.tree) == 0 {
					t.Errorf("the test covers nothing: no tree block (%v)", err)
				}
			}
			ok(t, f.Unlink(RootIno, "big"))
			fsck(t, dev)
			if got := f.Statfs().Free; got != free {
				t.Errorf("%d blocks free before, %d after the file went", free, got)
			}
		})
	}
}

// TestKeepSizeBlocksGo: blocks fallocate left past the end go with the
// file, and with a truncate that does not change the size (Linux's
// ext4_setattr truncates at an unchanged size too); a truncate that
// grows the file keeps them.
func TestKeepSizeBlocksGo(t *testing.T) {
	f, dev := mountRW(t, "16M", "-t", "ext4")
	must := okIno(t)
	bs := int64(f.blockSize)
	free := f.Statfs().Free
	sectors := func(ino uint32) uint64 {
		st, err := f.Stat(ino)
		ok(t, err)
		return st.Blocks
	}
	a := must(f.Create(RootIno, "a", linux.S_IFREG|0o644, 0, 0, 0, 0))
	ok(t, f.Fallocate(a, FallocKeepSize, 0, 100*bs))
	ok(t, f.Unlink(RootIno, "a"))
	fsck(t, dev)
	if got := f.Statfs().Free; got != free {
		t.Errorf("unlinked: %d blocks free, %d before", got, free)
	}
	b := must(f.Create(RootIno, "b", linux.S_IFREG|0o644, 0, 0, 0, 0))
	writeAll(t, f, b, []byte("head"), 0)
	ok(t, f.Fallocate(b, FallocKeepSize, 0, 100*bs))
	ok(t, f.Truncate(b, uint64(2*bs)))
	if n := sectors(b); n != uint64(100*bs/512) {
		t.Errorf("grown to 2 blocks: %d sectors, want the 100 blocks still", n)
	}
	ok(t, f.Truncate(b, uint64(2*bs)))
	if n := sectors(b); n != uint64(2*bs/512) {
		t.Errorf("truncated to its size: %d sectors, want %d", n, 2*bs/512)
	}
	if got := readAll(t, f, b); string(got[:4]) != "head" || len(got) != int(2*bs) {
		t.Errorf("contents %q..., %d bytes", got[:4], len(got))
	}
	fsck(t, dev)
}

// TestDeleteAtEpoch: a file deleted while the clock reads the epoch (root
// may set it there) is still deleted to e2fsck, which reads a dtime of 0
// as a live inode (found by make fuzz-soak).
func TestDeleteAtEpoch(t *testing.T) {
	dev := loadImage(t, mkfs(t, "8M", "", "-t", "ext4"))
	f, err := mountDev(t, dev, Options{Clock: func() time.Time { return time.Unix(0, 5) }})
	ok(t, err)
	must := okIno(t)
	must(f.Mkdir(RootIno, "d", 0o755, 0, 0))
	ino := must(f.Create(RootIno, "f", linux.S_IFREG|0o644, 0, 0, 0, 0))
	writeAll(t, f, ino, []byte("x"), 0)
	ok(t, f.Rmdir(RootIno, "d"))
	ok(t, f.Unlink(RootIno, "f"))
	fsck(t, dev)
}
