package ext4

import (
	"bytes"
	"math/rand"
	"sync"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/mm"
	"shortbread/kernel/pagecache"
)

// limitedFrames is page cache frames from the Go heap that can be
// made to run out: with limited, no more than limit live at once.
type limitedFrames struct {
	mm.HeapPhys
	mu      sync.Mutex
	limit   int
	limited bool
}

func (h *limitedFrames) Alloc() uintptr {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.limited && h.Live() >= h.limit {
		return 0
	}
	return h.HeapPhys.Alloc()
}

// mountCached mounts a fresh image with a page cache.
func mountCached(t *testing.T, opts ...string) (*FS, *memDev, *pagecache.Cache, *limitedFrames) {
	t.Helper()
	dev := loadImage(t, mkfs(t, "64M", "", opts...))
	fr := &limitedFrames{}
	c := pagecache.New(fr, 1<<20)
	f, err := mountDev(t, dev, Options{Pages: c, Clock: func() time.Time { return time.Unix(1700000000, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	return f, dev, c, fr
}

func filePages(c *pagecache.Cache) int64 { return c.ReadStats().File }

// TestPagesFollowTheFile: a regular file's data read through the page
// cache agrees with a model through writes, truncates (down and up) and
// holes punched, and its pages leave the cache when it is truncated,
// when its last name goes (or, held open, at the last release), and on
// Forget.
func TestPagesFollowTheFile(t *testing.T) {
	for _, v := range writeVariants {
		t.Run(v.name, func(t *testing.T) {
			f, d, c, fr := mountCached(t, v.opts...)
			must := okIno(t)
			ino := must(f.Create(RootIno, "f", linux.S_IFREG|0o644, 0, 0, 0, 0))
			rng := rand.New(rand.NewSource(7))
			var model []byte
			check := func(what string) {
				t.Helper()
				got := make([]byte, len(model)+5000)
				n, err := f.ReadAt(ino, got, 0)
				if err != nil || n != len(model) || !bytes.Equal(got[:n], model) {
					t.Fatalf("%s: read %d of %d bytes, %v; same: %v", what, n, len(model), err, bytes.Equal(got[:min(n, len(model))], model[:min(n, len(model))]))
				}
			}
			for step := range 300 {
				switch op := rng.Intn(10); {
				case op < 6: // write, often past the end
					off := rng.Intn(len(model) + 20000)
					p := make([]byte, 1+rng.Intn(40000))
					rng.Read(p)
					writeAll(t, f, ino, p, int64(off))
					if end := off + len(p); end > len(model) {
						model = append(model, make([]byte, end-len(model))...)
					}
					copy(model[off:], p)
				case op < 8: // truncate down or up
					size := rng.Intn(len(model) + 20000)
					ok(t, f.Truncate(ino, uint64(size)))
					if size < len(model) {
						model = model[:size]
					} else {
						model = append(model, make([]byte, size-len(model))...)
					}
				case op < 9 && v.name != "ext3" && v.name != "ext2" && len(model) > 0: // punch a hole
					off := rng.Intn(len(model))
					n := 1 + rng.Intn(len(model)-off)
					ok(t, f.Fallocate(ino, FallocPunchHole|FallocKeepSize, int64(off), int64(n)))
					clear(model[off : off+n])
				default: // a read in the middle
					if len(model) > 0 {
						off := rng.Intn(len(model))
						got := make([]byte, rng.Intn(len(model)-off+1))
						n, err := f.ReadAt(ino, got, int64(off))
						if err != nil || n != len(got) || !bytes.Equal(got, model[off:off+n]) {
							t.Fatalf("step %d: read %d at %d: %d, %v", step, len(got), off, n, err)
						}
					}
				}
				check("step")
			}
			// On the disk, once synced.
			ok(t, f.Sync())
			if got := readDisk(t, d, "f"); !bytes.Equal(got, model) {
				t.Fatalf("on the disk: %d bytes, want %d (same prefix: %v)", len(got), len(model), bytes.HasPrefix(model, got) || bytes.HasPrefix(got, model))
			}

			// Truncated, the pages past the end go.
			ok(t, f.Truncate(ino, 0))
			writeAll(t, f, ino, bytes.Repeat([]byte{9}, 1<<20), 0)
			model = bytes.Repeat([]byte{9}, 1<<20)
			check("1 MiB")
			if n := filePages(c); n < 256 {
				t.Fatalf("%d pages cached after reading 1 MiB", n)
			}
			ok(t, f.Truncate(ino, 10000))
			model = model[:10000]
			if n := filePages(c); n > 3 {
				t.Fatalf("%d pages cached past a truncate to 10000 bytes", n)
			}
			check("truncated")

			// Held open, the unlinked file keeps its pages until the
			// last release.
			f.Hold(ino)
			ok(t, f.Unlink(RootIno, "f"))
			check("unlinked, held")
			if filePages(c) == 0 {
				t.Fatal("the pages of an unlinked file held open went")
			}
			ok(t, f.Release(ino))
			if n := filePages(c); n != 0 {
				t.Fatalf("%d pages left of a freed inode", n)
			}

			// Unlinked with no holder: at once. Forgotten: too.
			a := must(f.Create(RootIno, "a", linux.S_IFREG|0o644, 0, 0, 0, 0))
			b := must(f.Create(RootIno, "b", linux.S_IFREG|0o644, 0, 0, 0, 0))
			for _, i := range []uint32{a, b} {
				writeAll(t, f, i, bytes.Repeat([]byte{1}, 100000), 0)
				readAll(t, f, i)
			}
			before := filePages(c)
			ok(t, f.Unlink(RootIno, "a"))
			if n := filePages(c); before-n < 24 {
				t.Fatalf("unlink: %d pages cached before, %d after", before, n)
			}
			f.Forget(b)
			if n := filePages(c); n != 0 {
				t.Fatalf("%d pages left after Forget", n)
			}
			if got := readAll(t, f, b); !bytes.Equal(got, bytes.Repeat([]byte{1}, 100000)) {
				t.Fatal("b reads back wrong after Forget")
			}
			fsck(t, d)
			readAll(t, f, b)
			ok(t, f.Unmount())
			if n := filePages(c); n != 0 || fr.Live() != 0 {
				t.Fatalf("%d pages, %d frames left after the unmount", n, fr.Live())
			}
		})
	}
}

// readDisk reads file name of the root directory from a copy of d's
// bytes, mounted without a page cache (replaying its journal, as after
// a crash at this point).
func readDisk(t *testing.T, d *memDev, name string) []byte {
	t.Helper()
	c := &memDev{b: bytes.Clone(d.b)}
	f, err := Mount(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ino, err := f.Lookup(RootIno, name)
	if err != nil {
		t.Fatal(err)
	}
	return readAll(t, f, ino)
}

// TestPagesOrdered: a commit writes the data of the files written
// before it first (data=ordered), so the disk as the commit leaves it
// holds their bytes, not the stale bytes of blocks just allocated; and
// a write-back running all along (the cache's flusher) changes nothing.
func TestPagesOrdered(t *testing.T) {
	for _, v := range writeVariants {
		t.Run(v.name, func(t *testing.T) {
			f, d, c, _ := mountCached(t, v.opts...)
			must := okIno(t)
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					default:
						c.WritebackAll()
					}
				}
			}()
			rng := rand.New(rand.NewSource(11))
			models := map[string][]byte{}
			for round := range 6 {
				for _, name := range []string{"a", "b", "c"} {
					ino, err := f.Lookup(RootIno, name)
					if err != nil {
						ino = must(f.Create(RootIno, name, linux.S_IFREG|0o644, 0, 0, 0, 0))
					}
					m := models[name]
					off := rng.Intn(len(m) + 5000)
					p := make([]byte, 1+rng.Intn(200000))
					rng.Read(p)
					writeAll(t, f, ino, p, int64(off))
					if end := off + len(p); end > len(m) {
						m = append(m, make([]byte, end-len(m))...)
					}
					copy(m[off:], p)
					if round%2 == 1 {
						size := rng.Intn(len(m))
						ok(t, f.Truncate(ino, uint64(size)))
						m = m[:size]
					}
					models[name] = m
				}
				if v.name == "ext2" {
					ok(t, f.Sync())
				} else if _, err := f.Commit(); err != nil {
					t.Fatal(err)
				}
				for name, m := range models {
					if got := readDisk(t, d, name); !bytes.Equal(got, m) {
						t.Fatalf("round %d: %s on the disk after the commit: %d bytes, want %d", round, name, len(got), len(m))
					}
				}
			}
			close(stop)
			<-done
			fsck(t, d)
		})
	}
}

// TestPagesFreshBlocks: a block allocated for a write into a hole holds
// what a deleted file left there; the rest of its page reads as zeros
// (before and after the write-back), never those stale bytes.
func TestPagesFreshBlocks(t *testing.T) {
	for _, v := range writeVariants {
		t.Run(v.name, func(t *testing.T) {
			f, d, _, _ := mountCached(t, v.opts...)
			must := okIno(t)
			old := must(f.Create(RootIno, "old", linux.S_IFREG|0o644, 0, 0, 0, 0))
			writeAll(t, f, old, bytes.Repeat([]byte{0xAA}, 4<<20), 0)
			ok(t, f.Sync())
			ok(t, f.Unlink(RootIno, "old"))
			ok(t, f.syncHome()) // the blocks free for the taking
			ino := must(f.Create(RootIno, "new", linux.S_IFREG|0o644, 0, 0, 0, 0))
			model := make([]byte, 1<<20)
			ok(t, f.Truncate(ino, uint64(len(model))))
			for _, off := range []int{5000, 300001, 1<<20 - 3} {
				writeAll(t, f, ino, []byte("xyz"), int64(off))
				copy(model[off:], "xyz")
			}
			if got := readAll(t, f, ino); !bytes.Equal(got, model) {
				t.Fatalf("stale bytes read back: %d of them", len(got)-bytes.Count(got, []byte{0})-9)
			}
			ok(t, f.Sync())
			if got := readDisk(t, d, "new"); !bytes.Equal(got, model) {
				t.Fatal("stale bytes on the disk")
			}
		})
	}
}

// TestPagesUnmount: the dirty pages reach the disk at unmount, and a
// remount read-only writes them too.
func TestPagesUnmount(t *testing.T) {
	for _, remount := range []bool{false, true} {
		f, d, c, _ := mountCached(t, "-t", "ext4")
		ino := okIno(t)(f.Create(RootIno, "f", linux.S_IFREG|0o644, 0, 0, 0, 0))
		data := bytes.Repeat([]byte("unmount "), 100000)
		writeAll(t, f, ino, data, 0)
		if c.ReadStats().Dirty == 0 {
			t.Fatal("no dirty pages after a write")
		}
		if remount {
			ok(t, f.Remount(true))
		} else {
			ok(t, f.Unmount())
		}
		if n := c.ReadStats().Dirty; n != 0 {
			t.Fatalf("%d dirty pages left", n)
		}
		if got := readDisk(t, d, "f"); !bytes.Equal(got, data) {
			t.Fatalf("remount %v: %d bytes on the disk, want %d", remount, len(got), len(data))
		}
	}
}

// TestWriteWithoutMemory: a write the page cache has no memory for
// fails (ENOMEM, or short), and the blocks it allocated for bytes it
// did not write go again: no block mapped past the file's end, none
// lost to the bitmap (the fuzz soak found both after such a write).
func TestWriteWithoutMemory(t *testing.T) {
	for _, v := range writeVariants {
		t.Run(v.name, func(t *testing.T) {
			f, d, c, fr := mountCached(t, v.opts...)
			must := okIno(t)
			ino := must(f.Create(RootIno, "a", linux.S_IFREG|0o644, 0, 0, 0, 0))
			writeAll(t, f, ino, bytes.Repeat([]byte("x"), 5000), 0)
			ok(t, f.Sync())
			c.DropClean()
			fr.mu.Lock()
			fr.limit, fr.limited = fr.Live(), true // not one frame more
			fr.mu.Unlock()
			n, err := f.WriteAt(ino, bytes.Repeat([]byte("y"), 15360), 2000)
			if err == nil && n == 15360 {
				t.Fatalf("a write with no memory for its pages wrote everything")
			}
			fr.mu.Lock()
			fr.limited = false
			fr.mu.Unlock()
			size := int64(max(5000, 2000+n))
			got := make([]byte, 20000)
			m, _ := f.ReadAt(ino, got, 0)
			if int64(m) != size {
				t.Fatalf("after a write of %d bytes (%v), the file reads %d bytes, want %d", n, err, m, size)
			}
			fsck(t, d)
		})
	}
}

// TestPagesReadAhead: a file read in order, 4 KiB at a time, from a
// cold cache, so that the cache reads ahead asynchronously through
// PrepareRead (written extents, a punched hole, an unwritten extent,
// fresh blocks of a page written since): every page reads as the model,
// a truncate with read-ahead in flight leaves no page past the end, and
// nothing is left after the unmount.
func TestPagesReadAhead(t *testing.T) {
	for _, v := range writeVariants[:2] {
		t.Run(v.name, func(t *testing.T) {
			f, _, c, fr := mountCached(t, v.opts...)
			must := okIno(t)
			ino := must(f.Create(RootIno, "f", linux.S_IFREG|0o644, 0, 0, 0, 0))
			model := make([]byte, 3<<20+1234)
			rand.New(rand.NewSource(9)).Read(model)
			writeAll(t, f, ino, model, 0)
			ok(t, f.Fallocate(ino, FallocPunchHole|FallocKeepSize, 600<<10, 300<<10))
			clear(model[600<<10 : 900<<10])
			ok(t, f.Fallocate(ino, 0, 700<<10, 100<<10)) // unwritten, inside the hole
			ok(t, f.Sync())
			c.DropClean()
			// Fresh blocks in the hole: a page written, dirty, its
			// neighbours read from the disk around it.
			writeAll(t, f, ino, []byte("fresh"), 850<<10+10)
			copy(model[850<<10+10:], "fresh")
			p := make([]byte, 4096)
			for off := 0; off < len(model); off += len(p) {
				n, err := f.ReadAt(ino, p, int64(off))
				if err != nil || n != min(len(p), len(model)-off) || !bytes.Equal(p[:n], model[off:off+n]) {
					t.Fatalf("read at %d: %d, %v", off, n, err)
				}
			}
			// Again from the middle, then cut the file while the stream
			// runs.
			c.DropClean()
			for off := 1 << 20; off < 1<<20+64<<10; off += len(p) {
				if n, err := f.ReadAt(ino, p, int64(off)); n != len(p) || err != nil || !bytes.Equal(p, model[off:off+n]) {
					t.Fatalf("read at %d: %d, %v", off, n, err)
				}
			}
			ok(t, f.Truncate(ino, 1<<20+10000))
			model = model[:1<<20+10000]
			if got := readAll(t, f, ino); !bytes.Equal(got, model) {
				t.Fatal("wrong bytes after the truncate")
			}
			ok(t, f.Unmount())
			if n := filePages(c); n != 0 || fr.Live() != 0 {
				t.Fatalf("%d pages, %d frames left after the unmount", n, fr.Live())
			}
		})
	}
}

// TestPagesReadCached: FS.ReadCached serves only what the page cache
// holds, whole, within the file, and not while the lock is taken.
func TestPagesReadCached(t *testing.T) {
	f, _, c, _ := mountCached(t)
	must := okIno(t)
	ino := must(f.Create(RootIno, "f", linux.S_IFREG|0o644, 0, 0, 0, 0))
	model := make([]byte, 100000)
	rand.New(rand.NewSource(10)).Read(model)
	writeAll(t, f, ino, model, 0)
	ok(t, f.Sync())
	c.DropClean()
	a, b := make([]byte, 3000), make([]byte, 5000)
	if n, all := f.ReadCached(ino, [][]byte{a, b}, 1000); all || n != 0 {
		t.Fatalf("cold: %d, %v", n, all)
	}
	readAll(t, f, ino)
	if n, all := f.ReadCached(ino, [][]byte{a, b}, 1000); !all || n != 8000 || !bytes.Equal(append(a, b...), model[1000:9000]) {
		t.Fatalf("cached: %d, %v", n, all)
	}
	// Up to the end: the ordinary read's.
	if _, all := f.ReadCached(ino, [][]byte{a}, int64(len(model))-1000); all {
		t.Fatal("a read crossing the end served")
	}
	f.mu.Lock()
	if _, all := f.ReadCached(ino, [][]byte{a}, 0); all {
		t.Fatal("served with the lock taken")
	}
	f.mu.Unlock()
}
