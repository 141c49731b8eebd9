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

// TestConcurrentRenames runs renames side by side (handles, handle.go)
// with readers and commits: workers rename files between two shared
// directories in opposite directions (the lock orders of two renames
// cross), onto names whose files go with their last link or stay
// orphans while open, trade names across the two (RENAME_EXCHANGE),
// rename and remove directories in the shared ones, and now and then
// move a directory to another parent (the exclusive path among the
// handles). Run under -race it checks the locking; afterwards each
// worker's names hold what it last put there, and e2fsck finds nothing
// wrong.
func TestConcurrentRenames(t *testing.T) {
	for _, v := range []struct {
		name string
		opts []string
	}{
		{"ext4", []string{"-t", "ext4"}},
		{"ext3", []string{"-t", "ext3"}},
	} {
		t.Run(v.name, func(t *testing.T) { testConcurrentRenames(t, v.opts) })
	}
}

func testConcurrentRenames(t *testing.T, opts []string) {
	const workers, readers, rounds = 4, 2, 40
	dev := loadImage(t, mkfs(t, "32M", "", opts...))
	f, err := mountDev(t, dev, Options{Pages: pagecache.New(&mm.HeapPhys{}, 4<<20)})
	if err != nil {
		t.Fatal(err)
	}
	var shared [2]uint32
	for i := range shared {
		if shared[i], err = f.Mkdir(RootIno, "s"+strconv.Itoa(i), 0o755, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	// Enough names in the first that it has an index (htree).
	for i := range 200 {
		if _, err := f.Create(shared[0], fmt.Sprintf("filler-%03d", i), linux.S_IFREG|0o644, 0, 0, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	own := make([]uint32, workers)
	for w := range own {
		if own[w], err = f.Mkdir(RootIno, "own"+strconv.Itoa(w), 0o755, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	big, err := f.Create(RootIno, "big", linux.S_IFREG|0o644, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	bigData := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	if _, err := f.WriteAt(big, bigData, 0); err != nil {
		t.Fatal(err)
	}
	before := f.handlesRun.Load()
	var wg sync.WaitGroup
	errs := make(chan error, workers+readers+1)
	done := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from, to := shared[w%2], shared[1-w%2]
			if err := renameWorker(f, own[w], from, to, w, rounds); err != nil {
				errs <- fmt.Errorf("worker %d: %w", w, err)
			}
		}()
	}
	var rg sync.WaitGroup
	for r := range readers {
		rg.Add(1)
		go func() {
			defer rg.Done()
			if err := concurrentReader(f, append([]uint32{RootIno, shared[0], shared[1]}, own...), r, done, big, bigData); err != nil {
				errs <- fmt.Errorf("reader %d: %w", r, err)
			}
		}()
	}
	rg.Add(1)
	go func() {
		defer rg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
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
	close(done)
	rg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	for w := range workers {
		to := shared[1-w%2]
		ino, err := f.Lookup(to, "k"+strconv.Itoa(w))
		if err != nil {
			t.Fatalf("worker %d's k: %v", w, err)
		}
		if got, want := readAll(t, f, ino), renameContent(w, rounds-1); !bytes.Equal(got, want) {
			t.Errorf("worker %d's k holds %q, want %q", w, got, want)
		}
	}
	if n := f.handlesRun.Load() - before; n < workers*rounds*10 {
		t.Errorf("%d operations ran as handles, want at least %d", n, workers*rounds*10)
	}
	fsck(t, dev)
	if err := f.Unmount(); err != nil {
		t.Fatal(err)
	}
	fsck(t, dev)
}

func renameContent(w, i int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("w%d.%d;", w, i)), 100+i*13%700)
}

// renameWorker: per round, a file made in from, moved to to and onto
// k<w> there (the previous k's last link goes), traded with a file of
// its own directory and back; one held open while a rename replaces
// it; directories made, renamed onto each other and removed in from;
// every eighth a 2 MiB file made in from and unlinked, or replaced by
// a rename first; every fourth
// round a directory moved from its own directory to from and removed
// there.
func renameWorker(f *FS, own, from, to uint32, w, rounds int) error {
	sw := strconv.Itoa(w)
	k, e, h := "k"+sw, "e"+sw, "h"+sw
	if _, err := f.Create(own, e, linux.S_IFREG|0o600, 0, 0, 0, 0); err != nil {
		return err
	}
	for i := range rounds {
		c := fmt.Sprintf("c%d.%d", w, i)
		ino, err := f.Create(from, c, linux.S_IFREG|0o644, 0, 0, 0, 0)
		if err != nil {
			return fmt.Errorf("create %s: %w", c, err)
		}
		if _, err := f.WriteAt(ino, renameContent(w, i), 0); err != nil {
			return fmt.Errorf("write %s: %w", c, err)
		}
		if err := f.Rename(from, c, to, c, 0); err != nil {
			return fmt.Errorf("rename %s across: %w", c, err)
		}
		if err := f.Rename(to, c, to, k, 0); err != nil {
			return fmt.Errorf("rename %s onto %s: %w", c, k, err)
		}
		if err := f.Rename(own, e, to, k, linux.RENAME_NOREPLACE); !errors.Is(err, linux.EEXIST) {
			return fmt.Errorf("rename with RENAME_NOREPLACE onto %s: %v, want EEXIST", k, err)
		}
		for range 2 { // there and back
			if err := f.Rename(own, e, to, k, linux.RENAME_EXCHANGE); err != nil {
				return fmt.Errorf("exchange %s and %s: %w", e, k, err)
			}
		}
		// A file open while a rename takes its name: an orphan
		// until its release.
		hino, err := f.Create(to, h, linux.S_IFREG|0o644, 0, 0, 0, 0)
		if err != nil {
			return fmt.Errorf("create %s: %w", h, err)
		}
		if _, err := f.WriteAt(hino, []byte("held"), 0); err != nil {
			return err
		}
		f.Hold(hino)
		if _, err := f.Create(from, c, linux.S_IFREG|0o644, 0, 0, 0, 0); err != nil {
			return fmt.Errorf("create %s again: %w", c, err)
		}
		if err := f.Rename(from, c, to, h, 0); err != nil {
			return fmt.Errorf("rename %s onto %s: %w", c, h, err)
		}
		buf := make([]byte, 8)
		if n, err := f.ReadAt(hino, buf, 0); err != nil || string(buf[:n]) != "held" {
			return fmt.Errorf("read of the replaced %s: %q, %v", h, buf[:n], err)
		}
		if err := f.Release(hino); err != nil {
			return fmt.Errorf("release %s: %w", h, err)
		}
		if err := f.Unlink(to, h); err != nil {
			return fmt.Errorf("unlink %s: %w", h, err)
		}
		// Directories within from.
		d1, d2 := "d"+sw, "dd"+sw
		if _, err := f.Mkdir(from, d1, 0o755, 0, 0); err != nil {
			return fmt.Errorf("mkdir %s: %w", d1, err)
		}
		if _, err := f.Mkdir(from, d2, 0o755, 0, 0); err != nil {
			return fmt.Errorf("mkdir %s: %w", d2, err)
		}
		if _, err := f.Create(from, "x"+sw, linux.S_IFREG|0o644, 0, 0, 0, 0); err != nil {
			return err
		}
		if err := f.Rename(from, "x"+sw, from, d2, 0); !errors.Is(err, linux.EISDIR) {
			return fmt.Errorf("rename of a file onto a directory: %v, want EISDIR", err)
		}
		if err := f.Unlink(from, "x"+sw); err != nil {
			return err
		}
		if err := f.Rename(from, d1, from, d2, 0); err != nil {
			return fmt.Errorf("rename %s onto %s: %w", d1, d2, err)
		}
		if err := f.Rmdir(from, d2); err != nil {
			return fmt.Errorf("rmdir %s: %w", d2, err)
		}
		if i%8 == 1 {
			// A file bigger than a handle's own credits free,
			// unlinked with more reserved (freeCredits).
			b := "big" + sw
			bino, err := f.Create(from, b, linux.S_IFREG|0o644, 0, 0, 0, 0)
			if err != nil {
				return fmt.Errorf("create %s: %w", b, err)
			}
			if _, err := f.WriteAt(bino, bytes.Repeat([]byte{byte(w)}, 2<<20), 0); err != nil {
				return fmt.Errorf("write %s: %w", b, err)
			}
			if i%16 == 9 {
				// Replaced by a rename instead.
				if _, err := f.Create(from, b+"s", linux.S_IFREG|0o644, 0, 0, 0, 0); err != nil {
					return fmt.Errorf("create %ss: %w", b, err)
				}
				if err := f.Rename(from, b+"s", from, b, 0); err != nil {
					return fmt.Errorf("rename onto %s: %w", b, err)
				}
			}
			if err := f.Unlink(from, b); err != nil {
				return fmt.Errorf("unlink %s: %w", b, err)
			}
		}
		if i%4 == 0 {
			// A directory to another parent: exclusive.
			m := "m" + sw
			sub, err := f.Mkdir(own, m, 0o755, 0, 0)
			if err != nil {
				return fmt.Errorf("mkdir %s: %w", m, err)
			}
			if err := f.Rename(own, m, from, m, 0); err != nil {
				return fmt.Errorf("rename %s across: %w", m, err)
			}
			if dd, err := f.Lookup(sub, ".."); err != nil || dd != from {
				return fmt.Errorf("%s/..: %d, %v; want %d", m, dd, err, from)
			}
			if err := f.Rmdir(from, m); err != nil {
				return fmt.Errorf("rmdir %s: %w", m, err)
			}
		}
	}
	return nil
}
