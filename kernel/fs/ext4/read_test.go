package ext4

import (
	"errors"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"shortbread/kernel/abi/linux"
)

// makeTree fills a host directory with what the read tests look for: a
// small and a large file, a file of many extents (an extent tree of depth
// one or more), a large sparse file, fast and slow symlinks, a hard link,
// a directory of 3000 names (indexed once e2fsck -D has run), a deep
// path, a FIFO, a socket, a device node, odd modes and owners.
func makeTree(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "src")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "a/b/c/d/e/f"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "a/b/c/d/e/f/deep.txt"), []byte("deep\n"), 0o600))
	must(os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello, world\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "empty"), nil, 0o644))
	must(os.Mkdir(filepath.Join(dir, "emptydir"), 0o700))
	rng := rand.New(rand.NewSource(1))
	big := make([]byte, 300*1024+123)
	rng.Read(big)
	must(os.WriteFile(filepath.Join(dir, "big.bin"), big, 0o644))

	// 150 separate 4 KiB pieces 64 KiB apart: 150 extents.
	frag, err := os.Create(filepath.Join(dir, "frag.bin"))
	must(err)
	piece := make([]byte, 4096)
	for i := 0; i < 150; i++ {
		rng.Read(piece)
		_, err := frag.WriteAt(piece, int64(i)*65536)
		must(err)
	}
	must(frag.Close())

	sparse, err := os.Create(filepath.Join(dir, "sparse.bin"))
	must(err)
	_, err = sparse.WriteAt([]byte("start"), 0)
	must(err)
	_, err = sparse.WriteAt([]byte("the end"), 100<<20)
	must(err)
	must(sparse.Close())

	must(os.Symlink("hello.txt", filepath.Join(dir, "fast-link")))
	long := strings.Repeat("long/path/", 12) + "target"
	must(os.Symlink(long, filepath.Join(dir, "slow-link")))
	must(os.Link(filepath.Join(dir, "hello.txt"), filepath.Join(dir, "hard-link")))

	must(os.Mkdir(filepath.Join(dir, "many"), 0o755))
	for i := 0; i < 3000; i++ {
		must(os.WriteFile(filepath.Join(dir, "many", fmt.Sprintf("entry-with-a-longish-name-%05d", i)), []byte(fmt.Sprint(i)), 0o644))
	}
	must(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o640))
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	must(err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	if os.Geteuid() == 0 {
		must(syscall.Mknod(filepath.Join(dir, "null"), syscall.S_IFCHR|0o666, int(1<<8|3)))
		must(syscall.Mknod(filepath.Join(dir, "bigdev"), syscall.S_IFBLK|0o660, int(259<<8|(300&0xff)|(300&^0xff)<<12)))
		must(os.WriteFile(filepath.Join(dir, "owned"), []byte("x"), 0o4755))
		must(os.Chown(filepath.Join(dir, "owned"), 1234, 5678))
		must(os.Chmod(filepath.Join(dir, "owned"), 0o4755))
	}
	return dir
}

var variants = []struct {
	name string
	opts []string
}{
	{"ext4", []string{"-t", "ext4"}},
	{"ext4-4k", []string{"-t", "ext4", "-b", "4096"}},
	{"ext4-nocsum", []string{"-t", "ext4", "-O", "^metadata_csum,uninit_bg"}},
	{"ext4-32bit", []string{"-t", "ext4", "-O", "^64bit"}},
	{"ext3", []string{"-t", "ext3"}},
	{"ext2", []string{"-t", "ext2"}},
	{"ext2-128", []string{"-t", "ext2", "-I", "128", "-b", "2048"}},
	{"ext4-meta_bg", []string{"-t", "ext4", "-O", "meta_bg,^resize_inode"}},
	{"ext4-bigalloc", []string{"-t", "ext4", "-b", "1024", "-O", "bigalloc", "-C", "16384"}},
}

// indexDirs runs e2fsck -fyD, which indexes the large directories.
func indexDirs(t testing.TB, img string) {
	t.Helper()
	out, err := exec.Command("e2fsck", "-fyD", img).CombinedOutput()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() > 1 {
			t.Fatalf("e2fsck -fyD: %v\n%s", err, out)
		}
	}
}

func TestReadTree(t *testing.T) {
	t.Parallel() // one of the longest: with the others, on every core
	needTools(t)
	src := makeTree(t)
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			img := mkfs(t, "160M", src, v.opts...)
			indexDirs(t, img)
			dev := loadImage(t, img)
			fsck(t, dev)
			if !strings.Contains(debugfs(t, dev, "htree many"), "Root node dump") {
				t.Fatalf("/many is not indexed; the test would not cover htree")
			}
			f, err := Mount(dev, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			if rw, err := Mount(&memDev{b: append([]byte(nil), dev.b...)}, Options{}); err != nil {
				t.Fatal(err)
			} else if ro, why := rw.ReadOnly(); ro != (v.name == "ext4-meta_bg" || v.name == "ext4-bigalloc") {
				t.Errorf("read-only %v (%s)", ro, why)
			}
			n := compareTree(t, f, src, RootIno)
			if n < 3000 {
				t.Errorf("compared %d files", n)
			}
			if strings.HasPrefix(v.name, "ext4") {
				in, err := f.iget(walk(t, f, "frag.bin"))
				if err != nil {
					t.Fatal(err)
				}
				if depth := le.Uint16(in.block[6:]); depth < 1 {
					t.Errorf("frag.bin extent depth %d, want >= 1", depth)
				}
			}
			// A hole reads as zeros.
			buf := make([]byte, 4096)
			if n, err := f.ReadAt(walk(t, f, "sparse.bin"), buf, 50<<20); n != len(buf) || err != nil {
				t.Fatalf("read hole: %d %v", n, err)
			}
			for _, c := range buf {
				if c != 0 {
					t.Fatal("hole reads nonzero")
				}
			}
			if st, _ := f.Stat(walk(t, f, "sparse.bin")); st.Blocks > 64 {
				t.Errorf("sparse file holds %d sectors", st.Blocks)
			}
		})
	}
}

// patchSuper changes a superblock field with fix and recomputes the
// checksum, so that only the field is wrong.
func patchSuper(d *memDev, fix func(sb []byte)) {
	sb := d.b[superOffset : superOffset+superSize]
	fix(sb)
	if le.Uint32(sb[0x64:])&roCompatMetadataCsum != 0 {
		le.PutUint32(sb[0x3FC:], crc32c(^uint32(0), sb[:0x3FC]))
	}
}

func TestMountFeatures(t *testing.T) {
	img := mkfs(t, "8M", "", "-t", "ext4")
	base := loadImage(t, img)
	clone := func() *memDev { return &memDev{b: append([]byte(nil), base.b...)} }

	if f, err := Mount(clone(), Options{}); err != nil {
		t.Fatal(err)
	} else if ro, why := f.ReadOnly(); ro {
		t.Fatalf("default ext4 mounted read-only: %s", why)
	}

	d := clone()
	patchSuper(d, func(sb []byte) { le.PutUint32(sb[0x60:], le.Uint32(sb[0x60:])|0x80000000) })
	if _, err := Mount(d, Options{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("unknown incompat feature: %v", err)
	}
	d = clone()
	patchSuper(d, func(sb []byte) { le.PutUint32(sb[0x60:], le.Uint32(sb[0x60:])|incompatInlineData) })
	if _, err := Mount(d, Options{}); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "inline_data") {
		t.Errorf("inline_data: %v", err)
	}
	d = clone()
	patchSuper(d, func(sb []byte) { le.PutUint32(sb[0x64:], le.Uint32(sb[0x64:])|0x80000000) })
	f, err := Mount(d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ro, why := f.ReadOnly(); !ro || why == "" {
		t.Errorf("unknown ro_compat feature: read-only %v (%q)", ro, why)
	}
	if _, err := f.Create(RootIno, "x", linux.S_IFREG|0o644, 0, 0, 0, 0); !errors.Is(err, linux.EROFS) {
		t.Errorf("create on a read-only mount: %v", err)
	}

	d = clone()
	d.b[superOffset+0x100] ^= 1 // s_default_mount_opts, covered by the checksum
	if _, err := Mount(d, Options{}); !errors.Is(err, linux.EUCLEAN) {
		t.Errorf("bad superblock checksum: %v", err)
	}
	d = clone()
	patchSuper(d, func(sb []byte) { le.PutUint16(sb[0x38:], 0x1234) })
	if _, err := Mount(d, Options{}); !errors.Is(err, linux.EUCLEAN) {
		t.Errorf("bad magic: %v", err)
	}
	d = clone()
	patchSuper(d, func(sb []byte) { le.PutUint32(sb[0x18:], 20) })
	if _, err := Mount(d, Options{}); !errors.Is(err, linux.EUCLEAN) {
		t.Errorf("block size 2^30: %v", err)
	}
}

// TestChecksumsRefused corrupts one byte of each kind of checksummed
// metadata and expects the read that meets it to fail with EUCLEAN.
func TestChecksumsRefused(t *testing.T) {
	t.Parallel() // one of the longest: with the others, on every core
	needTools(t)
	src := makeTree(t)
	img := mkfs(t, "160M", src, "-t", "ext4")
	indexDirs(t, img)
	base := loadImage(t, img)
	f, err := Mount(base, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	bs := int64(f.blockSize)
	blockOf := func(ino uint32, lblk uint32) int64 {
		in, err := f.iget(ino)
		if err != nil {
			t.Fatal(err)
		}
		fm, err := f.mapping(in)
		if err != nil {
			t.Fatal(err)
		}
		p, _, _, err := fm.lookup(lblk, 1)
		if err != nil || p == 0 {
			t.Fatalf("map %d/%d: %d %v", ino, lblk, p, err)
		}
		return int64(p) * bs
	}
	hello := walk(t, f, "hello.txt")
	frag := walk(t, f, "frag.bin")
	many := walk(t, f, "many")
	fragIn, _ := f.iget(frag)
	fragLeaf := int64(le.Uint32(fragIn.block[12+4:])) * bs
	iblk, ioff, _ := f.inodeLoc(hello)

	// Every initialized bitmap, since the allocator may start in any group.
	var blockBitmaps, inodeBitmaps []int64
	for _, g := range f.groups {
		if g.flags&bgBlockUninit == 0 {
			blockBitmaps = append(blockBitmaps, int64(g.blockBitmap)*bs)
		}
		if g.flags&bgInodeUninit == 0 {
			inodeBitmaps = append(inodeBitmaps, int64(g.inodeBitmap)*bs)
		}
	}
	create := func(f *FS) error { _, err := f.Create(RootIno, "new", linux.S_IFREG|0o644, 0, 0, 0, 0); return err }
	write := func(f *FS) error { _, err := f.WriteAt(hello, make([]byte, 5000), 100); return err }
	cases := []struct {
		name string
		offs []int64
		op   func(f *FS) error
	}{
		{"group descriptor", []int64{int64(f.descBlock(0))*bs + 0x0C}, nil},
		{"inode", []int64{int64(iblk)*bs + int64(ioff) + 0x10}, func(f *FS) error { _, err := f.Stat(hello); return err }},
		{"extent block", []int64{fragLeaf + 20}, func(f *FS) error { _, err := f.ReadAt(frag, make([]byte, 10), 0); return err }},
		{"directory leaf", []int64{blockOf(RootIno, 0) + 30}, func(f *FS) error { _, err := f.Lookup(RootIno, "nothing"); return err }},
		{"htree root", []int64{blockOf(many, 0) + 0x28}, func(f *FS) error { _, err := f.ReadDir(many); return err }},
		{"block bitmap", blockBitmaps, write},
		{"inode bitmap", inodeBitmaps, create},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := &memDev{b: append([]byte(nil), base.b...)}
			for _, off := range c.offs {
				d.b[off] ^= 0x40
			}
			f, err := Mount(d, Options{})
			if err == nil && c.op != nil {
				err = c.op(f)
			}
			if !errors.Is(err, linux.EUCLEAN) {
				t.Fatalf("got %v, want EUCLEAN", err)
			}
			var ce *CorruptError
			if !errors.As(err, &ce) || !strings.Contains(ce.What, "checksum") {
				t.Errorf("error %q does not name a checksum", err)
			}
		})
	}
}
