package ext4

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
)

// Corrupted images must give errors, never panics or hangs. The images
// are small (so that random offsets mostly land on metadata): one ext4
// with metadata_csum, where most damage meets a checksum, and one ext2,
// where it reaches the parsers.

var (
	fuzzOnce   sync.Once
	fuzzImages map[string][]byte
	fuzzErr    error
)

func fuzzBase(t testing.TB) map[string][]byte {
	needTools(t)
	fuzzOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ext4fuzz")
		if err != nil {
			fuzzErr = err
			return
		}
		defer os.RemoveAll(dir)
		src := filepath.Join(dir, "src")
		os.MkdirAll(filepath.Join(src, "d/e"), 0o755)
		os.WriteFile(filepath.Join(src, "small"), []byte("small file\n"), 0o644)
		os.WriteFile(filepath.Join(src, "d/e/f"), make([]byte, 30000), 0o644)
		fr, _ := os.Create(filepath.Join(src, "frag"))
		for i := 0; i < 12; i++ {
			fr.WriteAt([]byte("piece"), int64(i)*8192)
		}
		fr.Close()
		os.Symlink("small", filepath.Join(src, "ln"))
		os.Symlink(fmt.Sprintf("%0100d", 7), filepath.Join(src, "longln"))
		os.Mkdir(filepath.Join(src, "many"), 0o755)
		for i := 0; i < 150; i++ {
			os.WriteFile(filepath.Join(src, "many", fmt.Sprintf("name-%04d-padding-padding", i)), nil, 0o644)
		}
		fuzzImages = map[string][]byte{}
		for _, v := range []struct {
			name string
			opts []string
		}{{"ext4", []string{"-t", "ext4", "-N", "256"}}, {"ext2", []string{"-t", "ext2", "-N", "256"}}} {
			img := mkfs(t, "2M", src, v.opts...)
			indexDirs(t, img)
			b, err := os.ReadFile(img)
			if err != nil {
				fuzzErr = err
				return
			}
			fuzzImages[v.name] = b
		}
		// An ext4 image whose journal needs recovery: two transactions
		// (checksums v3), a revoke, a block that needed escaping.
		img := mkfs(t, "4M", src, "-t", "ext4", "-b", "1024", "-J", "size=1")
		pl := make([]byte, 4096)
		be.PutUint32(pl[1024:], jbdMagic)
		plPath := filepath.Join(dir, "payload")
		os.WriteFile(plPath, pl, 0o644)
		script := "jo -c\njw -b 3000,3001,3002,3003 " + plPath + "\njc\njo\njw -b 3004,3005,3006,3007 " + plPath + "\njw -r 3001\njc\n"
		os.WriteFile(filepath.Join(dir, "cmds"), []byte(script), 0o644)
		if out, err := exec.Command("debugfs", "-w", "-f", filepath.Join(dir, "cmds"), img).CombinedOutput(); err != nil {
			fuzzErr = fmt.Errorf("debugfs: %v\n%s", err, out)
			return
		}
		b, err := os.ReadFile(img)
		if err != nil {
			fuzzErr = err
			return
		}
		if le.Uint32(b[superOffset+0x60:])&incompatRecover == 0 {
			fuzzErr = fmt.Errorf("debugfs left no journal to recover")
			return
		}
		fuzzImages["ext4-journal"] = b
	})
	if fuzzErr != nil {
		t.Fatal(fuzzErr)
	}
	return fuzzImages
}

// corruptImage applies 5-byte records (kind, 3 offset bytes, value) to img.
func corruptImage(img []byte, data []byte) {
	for ; len(data) >= 5; data = data[5:] {
		off := (int(data[1]) | int(data[2])<<8 | int(data[3])<<16) % (len(img) - 4)
		switch data[0] % 4 {
		case 0, 1:
			img[off] ^= data[4] | 1
		case 2:
			le.PutUint32(img[off:], 0xFFFFFFFF)
		case 3:
			le.PutUint32(img[off:], uint32(data[4]))
		}
	}
}

// exercise mounts dev and does everything a user could: walk and read
// the whole tree, then change it. Errors are expected; panics are bugs.
func exercise(dev *memDev) {
	f, err := Mount(dev, Options{})
	if err != nil {
		return
	}
	seen := map[uint32]bool{}
	var visit func(ino uint32, depth int)
	visit = func(ino uint32, depth int) {
		if seen[ino] || depth > 20 || len(seen) > 1000 {
			return
		}
		seen[ino] = true
		st, err := f.Stat(ino)
		if err != nil {
			return
		}
		switch st.Mode & linux.S_IFMT {
		case linux.S_IFDIR:
			ents, _ := f.ReadDir(ino)
			for _, e := range ents {
				f.Lookup(ino, e.Name)
				if e.Name != "." && e.Name != ".." {
					visit(e.Ino, depth+1)
				}
			}
		case linux.S_IFREG:
			buf := make([]byte, 65536)
			f.ReadAt(ino, buf, 0)
			f.ReadAt(ino, buf, int64(st.Size)-100)
		case linux.S_IFLNK:
			f.Readlink(ino)
		}
	}
	visit(RootIno, 0)
	if ino, err := f.Create(RootIno, "new-file", linux.S_IFREG|0o644, 0, 0, 0, 0); err == nil {
		f.WriteAt(ino, make([]byte, 20000), 5000)
		f.Truncate(ino, 100)
	}
	if ino, err := f.Lookup(RootIno, "small"); err == nil {
		f.WriteAt(ino, []byte("more data"), 3)
		f.Link(RootIno, "small-link", ino)
	}
	if ino, err := f.Lookup(RootIno, "frag"); err == nil {
		f.WriteAt(ino, make([]byte, 9000), 4000)
		f.Truncate(ino, 10)
	}
	f.Mkdir(RootIno, "new-dir", 0o755, 0, 0)
	if many, err := f.Lookup(RootIno, "many"); err == nil {
		f.Create(many, "added", linux.S_IFREG|0o600, 0, 0, 0, 0)
		f.Unlink(many, "name-0003-padding-padding")
	}
	f.Symlink(RootIno, "new-link", fmt.Sprintf("%0200d", 1), 0, 0)
	f.Unlink(RootIno, "small")
	f.Rmdir(RootIno, "d")
	if d, err := f.Lookup(RootIno, "d"); err == nil {
		f.Unlink(d, "e")
		f.Rmdir(d, "e")
	}
	f.Rename(RootIno, "many", RootIno, "renamed", 0)
	f.Sync()
}

func TestCorruptImages(t *testing.T) {
	t.Parallel() // one of the longest: with the others, on every core
	imgs := fuzzBase(t)
	rng := rand.New(rand.NewSource(2))
	n := 1000
	if testing.Short() {
		n = 50
	}
	// Undamaged, each image mounts, and what exercise does leaves it
	// clean.
	for _, name := range fuzzNames {
		dev := &memDev{b: append([]byte(nil), imgs[name]...)}
		if _, err := Mount(&memDev{b: append([]byte(nil), dev.b...)}, Options{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		exercise(dev)
		fsck(t, dev)
	}
	var slowest time.Duration
	defer func() { t.Logf("slowest exercise: %v", slowest) }()
	for _, name := range fuzzNames {
		img := imgs[name]
		for i := 0; i < n; i++ {
			data := make([]byte, 5*(1+rng.Intn(8)))
			rng.Read(data)
			// Most damage in the first 256 KiB, where the metadata is.
			for j := 0; j < len(data); j += 5 {
				if rng.Intn(4) != 0 {
					data[j+3] = byte(rng.Intn(4))
				}
			}
			dev := &memDev{b: append([]byte(nil), img...)}
			corruptImage(dev.b, data)
			start := time.Now()
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("%s: corruption %x: panic: %v", name, data, r)
					}
				}()
				exercise(dev)
			}()
			if d := time.Since(start); d > slowest {
				slowest = d
			}
		}
	}
}

var fuzzNames = []string{"ext2", "ext4", "ext4-journal"}

func FuzzCorruptImage(f *testing.F) {
	imgs := fuzzBase(f)
	f.Add(uint8(1), []byte{0, 0x38, 0x04, 0, 0xFF})                // superblock magic
	f.Add(uint8(0), []byte{2, 0x00, 0x08, 0, 0})                   // first group descriptor
	f.Add(uint8(0), []byte{3, 0x10, 0x20, 0, 7, 1, 0, 0x30, 0, 9}) // inode table area
	f.Add(uint8(2), []byte{1, 0x00, 0x40, 0x01, 0x80})             // journal area
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		img := imgs[fuzzNames[int(which)%len(fuzzNames)]]
		dev := &memDev{b: append([]byte(nil), img...)}
		corruptImage(dev.b, data)
		exercise(dev)
	})
}

// TestIndirectLoop: a truncate through a triple indirect block naming
// itself in every slot (2^30 paths) ends quickly, refused as corrupt.
func TestIndirectLoop(t *testing.T) {
	f, dev := mountRW(t, "16M", "-t", "ext2", "-b", "4096")
	ino := okIno(t)(f.Create(RootIno, "f", linux.S_IFREG|0o644, 0, 0, 0, 0))
	writeAll(t, f, ino, []byte("x"), 0)
	in, _ := f.iget(ino)
	blk := le.Uint32(in.block[0:]) // its one data block becomes the triple indirect block
	b := dev.b[int(blk)*4096 : int(blk+1)*4096]
	for i := 0; i < 1024; i++ {
		le.PutUint32(b[4*i:], blk)
	}
	le.PutUint32(in.block[4*14:], blk)
	in.size = 1 << 40
	ok(t, f.iput(in))
	f.cache.forget(f, uint64(blk))
	start := time.Now()
	err := f.Truncate(ino, 0)
	if !errors.Is(err, linux.EUCLEAN) {
		t.Errorf("truncate: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("truncate took %v", d)
	}
}
