package ext4

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/pagecache"
)

// TestRandomSpace runs random writes (with holes), fallocates (growing
// the size or keeping it), hole punches, truncates (down, to the same
// size, up), unlinks, mkdirs, creates of many long names in them and
// slow symlinks on a disk small enough that many of them meet
// ENOSPC. ENOSPC is the only error allowed. Every few operations e2fsck
// must find nothing (no block marked used and owned by nothing, no
// count wrong) and every file must read as a model of it says; at the
// end, with every file gone, every block is free again. make fuzz-soak
// found blocks left behind this way (fallocate's past the end).
func TestRandomSpace(t *testing.T) {
	for _, cached := range []bool{false, true} {
		for _, bsize := range []string{"1024", "4096"} {
			for seed := int64(1); seed <= 5; seed++ {
				t.Run(fmt.Sprintf("cached-%v-%s-%d", cached, bsize, seed), func(t *testing.T) {
					randomSpace(t, cached, bsize, seed)
				})
			}
		}
	}
}

// randomSpace is one run of TestRandomSpace: writes through the page
// cache if cached, else straight to the disk.
func randomSpace(t *testing.T, cached bool, bsize string, seed int64) {
	dev := loadImage(t, mkfs(t, "4M", "", "-t", "ext4", "-b", bsize, "-N", "64"))
	o := Options{Clock: func() time.Time { return time.Unix(1700000000, 0) }}
	if cached {
		o.Pages = pagecache.New(&limitedFrames{}, 1<<20)
	}
	f, err := mountDev(t, dev, o)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(seed))
	free := f.Statfs().Free
	type file struct {
		ino  uint32
		data []byte // the contents, or nil once unknown
	}
	files := map[string]*file{}
	names := func() []string {
		var out []string
		for i := 0; i < 8; i++ {
			if n := fmt.Sprint("f", i); files[n] != nil {
				out = append(out, n)
			}
		}
		return out
	}
	bs := int64(f.blockSize)
	fill := bytes.Repeat([]byte("0123456789abcdef"), 1<<12) // 64 KiB
	allowed := func(op string, err error) bool {
		if err != nil && !errors.Is(err, linux.ENOSPC) {
			t.Fatalf("%s: %v", op, err)
		}
		return err == nil
	}
	grow := func(d []byte, size int64) []byte {
		for int64(len(d)) < size {
			d = append(d, 0)
		}
		return d
	}
	// Directories with many long names (so they grow blocks and, past
	// a block, an htree), and slow symlinks (a block each).
	dirs := map[string]uint32{}
	entries := map[string][]string{}
	var links []string
	long := string(bytes.Repeat([]byte("n"), 120))
	nospc := 0
	for op := 0; op < 300; op++ {
		if rng.Intn(10) == 0 {
			switch d := fmt.Sprint("d", rng.Intn(3)); {
			case dirs[d] == 0:
				ino, err := f.Mkdir(RootIno, d, 0o755, 0, 0)
				if allowed("mkdir "+d, err) {
					dirs[d] = ino
				} else {
					nospc++
				}
			case rng.Intn(3) == 0:
				l := fmt.Sprint("l", len(links))
				_, err := f.Symlink(RootIno, l, long, 0, 0)
				if allowed("symlink "+l, err) {
					links = append(links, l)
				} else {
					nospc++
				}
			default:
				for i := 0; i < 20; i++ {
					e := fmt.Sprintf("%s-%d-%d", long, op, i)
					_, err := f.Create(dirs[d], e, linux.S_IFREG|0o644, 0, 0, 0, 0)
					if !allowed("create in "+d, err) {
						nospc++
						break
					}
					entries[d] = append(entries[d], e)
				}
			}
			continue
		}
		live := names()
		if len(live) == 0 || rng.Intn(8) == 0 {
			n := fmt.Sprint("f", rng.Intn(8))
			if files[n] != nil {
				continue
			}
			ino, err := f.Create(RootIno, n, linux.S_IFREG|0o644, 0, 0, 0, 0)
			if allowed("create "+n, err) {
				files[n] = &file{ino: ino, data: []byte{}}
			}
			continue
		}
		n := live[rng.Intn(len(live))]
		fl := files[n]
		off := rng.Int63n(1024) * bs / 2 % (768 << 10)
		length := 1 + rng.Int63n(int64(len(fill)))
		switch k := rng.Intn(10); {
		case k < 4:
			got, err := f.WriteAt(fl.ino, fill[:length], off)
			if err != nil {
				allowed(fmt.Sprintf("write %s %d@%d", n, length, off), err)
				nospc++
			}
			if got > 0 && fl.data != nil {
				fl.data = grow(fl.data, off+int64(got))
				copy(fl.data[off:], fill[:got])
			}
		case k < 6:
			mode := uint32(0)
			if rng.Intn(2) == 0 {
				mode = FallocKeepSize
			}
			err := f.Fallocate(fl.ino, mode, off, length*16)
			if allowed(fmt.Sprintf("fallocate %s %d %d@%d", n, mode, length*16, off), err) {
				if mode == 0 && fl.data != nil {
					fl.data = grow(fl.data, off+length*16)
				}
			} else {
				nospc++
			}
		case k < 7:
			err := f.Fallocate(fl.ino, FallocPunchHole|FallocKeepSize, off, length)
			if allowed(fmt.Sprintf("punch %s %d@%d", n, length, off), err) {
				if fl.data != nil && off < int64(len(fl.data)) {
					clear(fl.data[off:min(off+length, int64(len(fl.data)))])
				}
			} else {
				fl.data = nil
				nospc++
			}
		case k < 9:
			var size int64
			switch rng.Intn(3) {
			case 0:
				size = int64(len(fl.data))
				if fl.data == nil {
					st, _ := f.Stat(fl.ino)
					size = int64(st.Size)
				}
			case 1:
				size = off
			default:
				size = off + length
			}
			err := f.Truncate(fl.ino, uint64(size))
			if allowed(fmt.Sprintf("truncate %s %d", n, size), err) && fl.data != nil {
				if size < int64(len(fl.data)) {
					fl.data = fl.data[:size]
				}
				fl.data = grow(fl.data, size)
			} else if err != nil {
				fl.data = nil
				nospc++
			}
		case rng.Intn(4) == 0:
			ok(t, f.Unlink(RootIno, n))
			delete(files, n)
		}
		if op%25 == 24 {
			fsck(t, dev)
			for name, fl := range files {
				if got := readAll(t, f, fl.ino); fl.data != nil && !bytes.Equal(got, fl.data) {
					t.Fatalf("op %d: %s reads %d bytes unlike its model's %d", op, name, len(got), len(fl.data))
				}
			}
		}
	}
	if nospc == 0 {
		t.Error("no operation met ENOSPC: the test covers nothing")
	}
	for _, n := range names() {
		ok(t, f.Unlink(RootIno, n))
	}
	for d, ino := range dirs {
		for _, e := range entries[d] {
			ok(t, f.Unlink(ino, e))
		}
		ok(t, f.Rmdir(RootIno, d))
	}
	for _, l := range links {
		ok(t, f.Unlink(RootIno, l))
	}
	fsck(t, dev)
	if got := f.Statfs().Free; got != free {
		t.Errorf("every file gone: %d blocks free, %d before", got, free)
	}
	t.Logf("%d operations met ENOSPC", nospc)
}
