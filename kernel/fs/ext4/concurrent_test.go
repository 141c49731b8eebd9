package ext4

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/mm"
	"shortbread/kernel/pagecache"
)

// Many goroutines at once: writers creating, writing, truncating,
// renaming and unlinking files in directories of their own and in one
// they share, readers walking, listing and stating the same directories and reading
// the files through the page cache, and a committer, as the VFS drives
// the file system from several CPUs. Run under -race it checks the
// locking; afterwards the survivors must hold what was written and
// e2fsck must find nothing wrong.
func TestConcurrentOps(t *testing.T) {
	for _, v := range []struct {
		name  string
		opts  []string
		small bool
	}{
		{"ext4", []string{"-t", "ext4"}, true},
		{"ext4-4k", []string{"-t", "ext4", "-b", "4096"}, true},
		{"ext3", []string{"-t", "ext3"}, true},
		{"ext2", []string{"-t", "ext2"}, true},
		// With the buffer cache at its size, creates, small writes
		// and unlinks run as handles, side by side (handle.go); a
		// small one sends them to the exclusive path after a few.
		{"ext4-handles", []string{"-t", "ext4"}, false},
		{"ext3-handles", []string{"-t", "ext3"}, false},
	} {
		t.Run(v.name, func(t *testing.T) { testConcurrentOps(t, v.opts, v.small) })
	}
}

func testConcurrentOps(t *testing.T, opts []string, smallCache bool) {
	const writers, readers, rounds = 4, 3, 60
	dev := loadImage(t, mkfs(t, "32M", "", opts...))
	f, err := mountDev(t, dev, Options{Pages: pagecache.New(&mm.HeapPhys{}, 4<<20)})
	if err != nil {
		t.Fatal(err)
	}
	// A small buffer cache, trimmed often: readers read blocks in side
	// by side, as a cold cache makes them.
	if smallCache {
		f.cache.max = 16
	}
	shared, err := f.Mkdir(RootIno, "shared", 0o755, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Enough names that the shared directory has an index (htree),
	// whose look-ups then run beside its changes.
	for i := range 300 {
		if _, err := f.Create(shared, fmt.Sprintf("filler-%03d", i), linux.S_IFREG|0o644, 0, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	if d, err := f.Stat(shared); err != nil || d.Flags&flagIndex == 0 {
		t.Fatalf("the shared directory has no index (flags %#x, %v)", d.Flags, err)
	}
	// A file larger than the page cache, which readers read and check
	// at once: its pages are read in, dropped and read in again.
	big, err := f.Create(RootIno, "big", linux.S_IFREG|0o644, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	bigData := make([]byte, 6<<20)
	for i := range bigData {
		bigData[i] = byte(i*7 + i>>12)
	}
	if _, err := f.WriteAt(big, bigData, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	own := make([]uint32, writers)
	for w := range own {
		if own[w], err = f.Mkdir(RootIno, "own"+strconv.Itoa(w), 0o755, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	content := func(w, i int) []byte {
		return bytes.Repeat([]byte(fmt.Sprintf("w%d.%d;", w, i)), 300+i*7%900)
	}

	var wg sync.WaitGroup
	errs := make(chan error, writers+readers+1)
	done := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := concurrentWriter(f, own[w], shared, w, rounds, content); err != nil {
				errs <- fmt.Errorf("writer %d: %w", w, err)
			}
		}()
	}
	var rg sync.WaitGroup
	for r := range readers {
		rg.Add(1)
		go func() {
			defer rg.Done()
			if err := concurrentReader(f, append([]uint32{RootIno, shared}, own...), r, done, big, bigData); err != nil {
				errs <- fmt.Errorf("reader %d: %w", r, err)
			}
		}()
	}
	rg.Add(1)
	go func() { // the periodic commit, and now and then an fsync
		defer rg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			var err error
			if i%4 == 0 {
				err = f.Sync()
			} else {
				_, err = f.Commit()
			}
			if err != nil {
				errs <- fmt.Errorf("commit: %w", err)
				return
			}
		}
	}()
	wg.Wait()
	close(done)
	rg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	// Each writer's last files are there with what it wrote.
	for w := range writers {
		for i := rounds - 4; i < rounds; i++ {
			for _, d := range []uint32{own[w], shared} {
				name := fmt.Sprintf("r%d.%d", w, i)
				ino, err := f.Lookup(d, name)
				if err != nil {
					t.Fatalf("lookup %s: %v", name, err)
				}
				if got := readAll(t, f, ino); !bytes.Equal(got, content(w, i)) {
					t.Fatalf("%s holds %d bytes, not the %d written", name, len(got), len(content(w, i)))
				}
			}
		}
	}
	if !smallCache && f.handlesRun.Load() == 0 && f.jnl != nil {
		t.Error("no operation ran as a handle")
	}
	fsck(t, dev)
	if err := f.Unmount(); err != nil {
		t.Fatal(err)
	}
	fsck(t, dev)
}

// concurrentWriter makes, per round, a file in its own directory and
// one in the shared one, writes them, renames them to their final
// names, and removes those of 4 rounds before (the one in its own
// directory held open across its unlink), with a symlink and a
// subdirectory coming and going besides.
func concurrentWriter(f *FS, own, shared uint32, w, rounds int, content func(w, i int) []byte) error {
	held := make([]uint32, rounds)
	defer func() {
		for i := max(0, rounds-4); i < rounds; i++ {
			if held[i] != 0 {
				f.Release(held[i])
			}
		}
	}()
	for i := range rounds {
		for _, d := range []uint32{own, shared} {
			tmp, final := fmt.Sprintf("t%d.%d", w, i), fmt.Sprintf("r%d.%d", w, i)
			ino, err := f.Create(d, tmp, linux.S_IFREG|0o644, 0, 0, 0, 0)
			if err != nil {
				return fmt.Errorf("create %s: %w", tmp, err)
			}
			data := content(w, i)
			if _, err := f.WriteAt(ino, data, 0); err != nil {
				return fmt.Errorf("write %s: %w", tmp, err)
			}
			if d == own && len(data) > 1 {
				// Cut inside its data and written again, as a
				// rewrite through O_TRUNC would (a handle).
				half := len(data) / 2
				if err := f.Truncate(ino, uint64(half)); err != nil {
					return fmt.Errorf("truncate %s: %w", tmp, err)
				}
				if _, err := f.WriteAt(ino, data[half:], int64(half)); err != nil {
					return fmt.Errorf("rewrite %s: %w", tmp, err)
				}
			}
			if d == own {
				// Open until after its unlink: an orphan
				// for a while, freed by its last close.
				f.Hold(ino)
				held[i] = ino
			}
			if err := f.Rename(d, tmp, d, final, 0); err != nil {
				return fmt.Errorf("rename %s: %w", tmp, err)
			}
			if i >= 4 {
				if err := f.Unlink(d, fmt.Sprintf("r%d.%d", w, i-4)); err != nil {
					return fmt.Errorf("unlink: %w", err)
				}
				if d == own {
					if err := f.Release(held[i-4]); err != nil {
						return fmt.Errorf("release: %w", err)
					}
				}
			}
		}
		// A name moved to the shared directory and back: renames
		// across directories both ways, beside the handles in both.
		mv := fmt.Sprintf("m%d", w)
		if _, err := f.Create(own, mv, linux.S_IFREG|0o644, 0, 0, 0, 0); err != nil {
			return fmt.Errorf("create %s: %w", mv, err)
		}
		if err := f.Rename(own, mv, shared, mv, 0); err != nil {
			return fmt.Errorf("rename %s over: %w", mv, err)
		}
		if err := f.Rename(shared, mv, own, mv, 0); err != nil {
			return fmt.Errorf("rename %s back: %w", mv, err)
		}
		if err := f.Unlink(own, mv); err != nil {
			return fmt.Errorf("unlink %s: %w", mv, err)
		}
		link := fmt.Sprintf("l%d", w)
		if _, err := f.Symlink(own, link, fmt.Sprintf("target-%d-%d", w, i), 0, 0); err != nil {
			return fmt.Errorf("symlink: %w", err)
		}
		sub, err := f.Mkdir(own, "sub", 0o755, 0, 0)
		if err != nil {
			return fmt.Errorf("mkdir: %w", err)
		}
		if _, err := f.Create(sub, "x", linux.S_IFREG|0o600, 0, 0, 0, 0); err != nil {
			return fmt.Errorf("create in sub: %w", err)
		}
		if err := f.Unlink(sub, "x"); err != nil {
			return fmt.Errorf("unlink in sub: %w", err)
		}
		if err := f.Rmdir(own, "sub"); err != nil {
			return fmt.Errorf("rmdir: %w", err)
		}
		if err := f.Unlink(own, link); err != nil {
			return fmt.Errorf("unlink symlink: %w", err)
		}
		// In the shared directory, beside the others' changes there
		// (handles where they fit): a directory made and removed, a
		// second name for this round's file and its mode changed.
		sd, hl := fmt.Sprintf("sd%d", w), fmt.Sprintf("h%d", w)
		if _, err := f.Mkdir(shared, sd, 0o700, 0, 0); err != nil {
			return fmt.Errorf("mkdir %s: %w", sd, err)
		}
		ino, err := f.Lookup(shared, fmt.Sprintf("r%d.%d", w, i))
		if err != nil {
			return fmt.Errorf("lookup: %w", err)
		}
		if err := f.Link(shared, hl, ino); err != nil {
			return fmt.Errorf("link %s: %w", hl, err)
		}
		if err := f.SetAttr(ino, SetMode, Attr{Mode: 0o640}); err != nil {
			return fmt.Errorf("chmod: %w", err)
		}
		if st, err := f.Stat(ino); err != nil || st.Nlink != 2 || st.Mode != linux.S_IFREG|0o640 {
			return fmt.Errorf("linked file: %d links, mode %#o, %v; want 2, %#o", st.Nlink, st.Mode, err, linux.S_IFREG|0o640)
		}
		if err := f.Unlink(shared, hl); err != nil {
			return fmt.Errorf("unlink %s: %w", hl, err)
		}
		if err := f.Rmdir(shared, sd); err != nil {
			return fmt.Errorf("rmdir %s: %w", sd, err)
		}
	}
	return nil
}

// concurrentReader lists, looks up, stats and reads what is in dirs
// until done: a name may vanish between the listing and its look-up
// (ENOENT), and an inode between its look-up and its stat, but never
// may anything be corrupt.
func concurrentReader(f *FS, dirs []uint32, r int, done <-chan struct{}, big uint32, bigData []byte) error {
	gone := func(err error) bool { return errors.Is(err, linux.ENOENT) }
	buf := make([]byte, 8192)
	visit := func(d uint32, name string, i int) (err error) {
		ino, err := f.Lookup(d, name)
		if gone(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("lookup %s: %w", name, err)
		}
		if i%2 == 0 { // an open and close around the rest
			f.Hold(ino)
			defer func() {
				if rerr := f.Release(ino); rerr != nil && err == nil {
					err = fmt.Errorf("release %s: %w", name, rerr)
				}
			}()
		}
		st, err := f.Stat(ino)
		if err != nil {
			return fmt.Errorf("stat %s: %w", name, err)
		}
		switch st.Mode & linux.S_IFMT {
		case linux.S_IFLNK:
			if s, err := f.Readlink(ino); err == nil && len(s) < len("target-") {
				return fmt.Errorf("readlink %s: %q", name, s)
			}
		case linux.S_IFREG:
			if _, ok := f.ReadCached(ino, [][]byte{buf[:64]}, 0); ok || i%3 != 0 {
				return nil
			}
			// Inodes go by number here, with no hold as the VFS
			// takes around its look-up: one freed and made again
			// (another generation, perhaps another type) since
			// the stat may fail to read; the same one may not.
			if _, err := f.ReadAt(ino, buf, 0); err != nil {
				now, err2 := f.Stat(ino)
				if err2 == nil && now.Generation == st.Generation && now.Mode == st.Mode && now.Nlink > 0 {
					return fmt.Errorf("read %s: %w", name, err)
				}
			}
		}
		return nil
	}
	for i := 0; ; i++ {
		select {
		case <-done:
			return nil
		default:
		}
		d := dirs[(i+r)%len(dirs)]
		var ents []DirEntry
		var err error
		if i%2 == 0 {
			ents, err = f.ReadDir(d)
		} else {
			ents, err = f.ReadDirAt(d, 0, 1<<20)
		}
		if err != nil {
			return fmt.Errorf("readdir %d: %w", d, err)
		}
		for _, e := range ents {
			if e.Name == "." || e.Name == ".." {
				continue
			}
			if err := visit(d, e.Name, i); err != nil {
				return err
			}
		}
		f.Statfs()
		f.Mappable(d)
		for k := range 16 {
			off := int64((i*7919 + k*104729 + r*65537) % (len(bigData) - 10000))
			got := buf[:1+(i+k)%len(buf)]
			if n, err := f.ReadAt(big, got, off); err != nil || !bytes.Equal(got[:n], bigData[off:off+int64(n)]) || n != len(got) {
				return fmt.Errorf("read of big at %d: %d bytes, %v, or not what was written", off, n, err)
			}
		}
	}
}
