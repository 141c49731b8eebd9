package ext4

import (
	"fmt"
	"math/bits"
	"strconv"
	"sync"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/mm"
	"shortbread/kernel/pagecache"
)

// Per-group allocator locks (alloc.go): a file's inode and blocks go in
// its directory's group, and a create and write there go on while
// another group's lock is held, as they could not under one allocator
// lock or one that takes every group's.
func TestGroupLocksSideBySide(t *testing.T) {
	dev := loadImage(t, mkfs(t, "64M", "", "-t", "ext4"))
	f, err := mountDev(t, dev, Options{Pages: pagecache.New(&mm.HeapPhys{}, 4<<20)})
	if err != nil {
		t.Fatal(err)
	}
	if f.groupCount() < 4 {
		t.Fatalf("%d groups: the image needs several", f.groupCount())
	}
	groupOfIno := func(ino uint32) uint32 { return (ino - 1) / f.sb.inodesPerGroup }
	a, err := f.Mkdir(RootIno, "a", 0o755, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	ga := groupOfIno(a)
	gb := (ga + 1) % f.groupCount()
	// The groups' first inodes, where directories made side by side in
	// different groups land, do not share an inode lock.
	ipg := f.sb.inodesPerGroup
	for g := range f.groupCount() - 1 {
		if f.ilock(g*ipg+1) == f.ilock((g+1)*ipg+1) {
			t.Errorf("inodes %d and %d share an inode lock", g*ipg+1, (g+1)*ipg+1)
		}
	}
	// Hold group gb's lock: a create and write in a must not need it.
	f.glocks[gb].Lock()
	type result struct {
		ino  uint32
		blk  uint64
		errs []error
	}
	done := make(chan result)
	go func() {
		var r result
		ino, err := f.Create(a, "file", linux.S_IFREG|0o644, 0, 0, 0, 0)
		r.ino = ino
		if err != nil {
			r.errs = append(r.errs, err)
		} else if _, err := f.WriteAt(ino, make([]byte, 4096), 0); err != nil {
			r.errs = append(r.errs, err)
		} else if err := f.Sync(); err != nil {
			r.errs = append(r.errs, err)
		} else {
			f.mu.RLock()
			in, err := f.iget(ino)
			if err == nil {
				var fm *fileMapping
				if fm, err = f.mapping(in); err == nil {
					r.blk, _, _, err = fm.lookup(0, 1)
				}
			}
			f.mu.RUnlock()
			if err != nil {
				r.errs = append(r.errs, err)
			}
		}
		done <- r
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute):
		// Long past what the create takes: it waits for group gb.
		t.Fatalf("a create and write in group %d waited for group %d's lock", ga, gb)
	}
	f.glocks[gb].Unlock()
	if len(r.errs) > 0 {
		t.Fatal(r.errs)
	}
	if g := groupOfIno(r.ino); g != ga {
		t.Errorf("file in a (group %d) got inode %d in group %d", ga, r.ino, g)
	}
	if g := f.groupOf(r.blk); g != ga {
		t.Errorf("file in a (group %d) got block %d in group %d", ga, r.blk, g)
	}
	fsck(t, dev)
}

// Many creates, writes and unlinks at once in directories of their own
// (in different groups) and in one they share: afterwards the free
// counts equal a fresh count of the bitmaps, group by group and in all,
// before and after a remount, and e2fsck finds nothing wrong. A count
// changed outside its group's lock, or an allocation racing another in
// one group, shows here (and under -race).
func TestGroupCountsNoDrift(t *testing.T) {
	const workers, rounds = 4, 150
	dev := loadImage(t, mkfs(t, "64M", "", "-t", "ext4"))
	f, err := mountDev(t, dev, Options{Pages: pagecache.New(&mm.HeapPhys{}, 8<<20)})
	if err != nil {
		t.Fatal(err)
	}
	shared, err := f.Mkdir(RootIno, "shared", 0o755, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	own := make([]uint32, workers)
	for w := range own {
		if own[w], err = f.Mkdir(RootIno, "own"+strconv.Itoa(w), 0o755, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers+1)
	stop := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := make([]byte, 20<<10)
			for i := range rounds {
				for _, d := range []uint32{own[w], shared} {
					name := fmt.Sprintf("w%d.%d", w, i)
					ino, err := f.Create(d, name, linux.S_IFREG|0o644, 0, 0, 0, 0)
					if err != nil {
						errs <- fmt.Errorf("create %s: %w", name, err)
						return
					}
					if _, err := f.WriteAt(ino, data[:1024+(i*w*977)%(19<<10)], 0); err != nil {
						errs <- fmt.Errorf("write %s: %w", name, err)
						return
					}
					if i >= 8 {
						if err := f.Unlink(d, fmt.Sprintf("w%d.%d", w, i-8)); err != nil {
							errs <- fmt.Errorf("unlink: %w", err)
							return
						}
					}
				}
			}
		}()
	}
	var cg sync.WaitGroup
	cg.Add(1)
	go func() { // the periodic commit
		defer cg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := f.Commit(); err != nil {
				errs <- fmt.Errorf("commit: %w", err)
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	cg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if f.handlesRun.Load() == 0 {
		t.Fatal("no operation ran as a handle")
	}
	recount := func(f *FS) (blocks, inodes int64) {
		t.Helper()
		f.mu.Lock()
		defer f.mu.Unlock()
		for g := range f.groupCount() {
			bb, err := f.blockBitmap(g)
			if err != nil {
				t.Fatal(err)
			}
			ib, err := f.inodeBitmap(g)
			if err != nil {
				t.Fatal(err)
			}
			fb := uint32(0)
			for i := range f.groupBlocks(g) {
				if !testBit(bb, i) {
					fb++
				}
			}
			fi := uint32(0)
			for i := range f.sb.inodesPerGroup / 8 {
				fi += uint32(8 - bits.OnesCount8(ib[i]))
			}
			d := &f.groups[g]
			if d.freeBlocks != fb || d.freeInodes != fi {
				t.Errorf("group %d: descriptor counts %d blocks and %d inodes free, its bitmaps %d and %d", g, d.freeBlocks, d.freeInodes, fb, fi)
			}
			blocks += int64(fb)
			inodes += int64(fi)
		}
		if got := f.freeBlocks.Load(); got != blocks {
			t.Errorf("free blocks %d, the bitmaps count %d", got, blocks)
		}
		if got := f.freeInodes.Load(); got != inodes {
			t.Errorf("free inodes %d, the bitmaps count %d", got, inodes)
		}
		return blocks, inodes
	}
	blocks, inodes := recount(f)
	st := f.Statfs()
	if st.Free != uint64(blocks) || st.FilesFree != uint64(inodes) {
		t.Errorf("statfs: %d blocks and %d inodes free, the bitmaps %d and %d", st.Free, st.FilesFree, blocks, inodes)
	}
	fsck(t, dev)
	if err := f.Unmount(); err != nil {
		t.Fatal(err)
	}
	fsck(t, dev)
	f2, err := mountDev(t, dev, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b2, i2 := recount(f2); b2 != blocks || i2 != inodes {
		t.Errorf("after a remount %d blocks and %d inodes free, before %d and %d", b2, i2, blocks, inodes)
	}
	if err := f2.Unmount(); err != nil {
		t.Fatal(err)
	}
}
