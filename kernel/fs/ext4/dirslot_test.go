package ext4

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"shortbread/kernel/abi/linux"
)

// TestSlotPlacement makes the same changes to two copies of a file
// system, one entering names where the lookup that found them free saw
// room (dirSlot), the other scanning again (noSlot): every directory
// block ends up the same, byte for byte but for the checksum tail
// (which covers the inode's generation), and e2fsck finds both clean.
// Names of several lengths, removals leaving holes, links, directories,
// symlinks and renames, in a one-block, an indexed and (without
// dir_index) a plain multi-block directory.
func TestSlotPlacement(t *testing.T) {
	for _, opts := range [][]string{
		{"-t", "ext4", "-b", "1024"},
		{"-t", "ext4", "-b", "4096"},
		{"-t", "ext4", "-b", "1024", "-O", "^dir_index"},
	} {
		t.Run(strings.Join(opts, " "), func(t *testing.T) {
			img := mkfs(t, "32M", "", append(opts, "-N", "4000")...)
			var fss [2]*FS
			var devs [2]*memDev
			var dirs [2][]uint32
			for k := range fss {
				devs[k] = loadImage(t, img)
				f, err := mountDev(t, devs[k], Options{})
				if err != nil {
					t.Fatal(err)
				}
				f.noSlot = k == 1
				fss[k] = f
			}
			for k, f := range fss {
				must := okIno(t)
				small := must(f.Mkdir(RootIno, "small", 0o755, 0, 0))
				big := must(f.Mkdir(RootIno, "big", 0o755, 0, 0))
				dirs[k] = []uint32{RootIno, small, big}
				for i := range 400 {
					d := big
					if i%40 == 0 {
						d = small
					}
					name := fmt.Sprintf("f%d-%s", i, strings.Repeat("x", i*7%40))
					ino := must(f.Create(d, name, linux.S_IFREG|0o644, 0, 0, 0, 0))
					switch i % 5 {
					case 1:
						ok(t, f.Link(d, "link-"+name, ino))
					case 2:
						must(f.Mkdir(d, "dir-"+name, 0o755, 0, 0))
					case 3:
						must(f.Symlink(d, "sym-"+name, "target-"+name, 0, 0))
					}
					if i%3 == 0 && i > 30 {
						victim := fmt.Sprintf("f%d-%s", i-30, strings.Repeat("x", (i-30)*7%40))
						vd := big
						if (i-30)%40 == 0 {
							vd = small
						}
						if (i-30)%17 == 0 {
							victim = "renamed-" + victim
						}
						ok(t, f.Unlink(vd, victim))
					}
					if i%17 == 0 {
						ok(t, f.Rename(d, name, d, "renamed-"+name, 0))
					}
				}
			}
			for j := range dirs[0] {
				a, b := dirBytes(t, fss[0], dirs[0][j]), dirBytes(t, fss[1], dirs[1][j])
				if len(a) != len(b) {
					t.Fatalf("directory %d: %d blocks with slots, %d without", dirs[0][j], len(a), len(b))
				}
				for i := range a {
					if !bytes.Equal(a[i], b[i]) {
						t.Errorf("directory %d block %d differs with slots", dirs[0][j], i)
					}
				}
			}
			for k := range devs {
				ok(t, fss[k].Sync())
				fsck(t, devs[k])
			}
		})
	}
}

// dirBytes returns the blocks of directory ino without their checksum
// tails.
func dirBytes(t *testing.T, f *FS, ino uint32) [][]byte {
	t.Helper()
	in, err := f.iget(ino)
	ok(t, err)
	n, err := f.dirBlocks(in)
	ok(t, err)
	fm, err := f.mapping(in)
	ok(t, err)
	var out [][]byte
	for lblk := range n {
		b, _, err := f.dirBlock(fm, lblk)
		ok(t, err)
		end := len(b)
		if f.hasCsum() {
			end -= dirTailSize
		}
		out = append(out, bytes.Clone(b[:end]))
	}
	return out
}

// TestCacheChecked checks that a block's checksum mark (cache.checked)
// goes with the buffer it was found in: a block dropped, trimmed or
// replaced by another buffer is checked again.
func TestCacheChecked(t *testing.T) {
	f, _ := mountRW(t, "8M", "-t", "ext4", "-b", "1024")
	c := &f.cache
	get := func(n uint64) []byte {
		b, err := c.get(f, n)
		ok(t, err)
		return b
	}
	b := get(100)
	c.markChecked(100, b)
	if !c.isChecked(100) {
		t.Fatal("a marked block is not checked")
	}
	c.markChecked(101, make([]byte, 1024)) // not the cache's buffer
	if c.isChecked(101) {
		t.Error("a buffer the cache does not hold was marked")
	}
	c.forget(f, 100)
	if c.isChecked(100) {
		t.Error("a forgotten block stays checked")
	}
	c.markChecked(100, b) // the old buffer: no longer the cache's
	if c.isChecked(100) {
		t.Error("the buffer of a forgotten block was marked")
	}
	b = get(100)
	c.markChecked(100, b)
	c.zero(f, 100)
	if c.isChecked(100) {
		t.Error("a block replaced by a zeroed buffer stays checked")
	}
	b = get(102)
	c.markChecked(102, b)
	ok(t, c.write(f, 102, bytes.Clone(b)))
	if c.isChecked(102) {
		t.Error("a block written from another buffer stays checked")
	}
	// Fill the cache past its size and trim it: the marks of the blocks
	// trimmed go with them.
	for n := uint64(200); n < uint64(200+c.max); n++ {
		c.markChecked(n, get(n))
	}
	c.trim(f)
	c.mu.RLock()
	for n := range c.checked {
		if _, ok := c.blocks[n]; !ok {
			t.Errorf("block %d trimmed but checked", n)
		}
	}
	if len(c.checked) == 0 || len(c.checked) >= c.max {
		t.Errorf("%d blocks checked after the trim of %d", len(c.checked), c.max)
	}
	c.mu.RUnlock()
}
