package ext4

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/mm"
	"shortbread/kernel/pagecache"
)

// The file workloads of bench-scale (user/bench/scale.c) on the host:
// goroutines that each create a file, write 4 KiB to it and unlink the
// one made 16 before, in a directory of their own (private) or all in
// one (shared), on an in-memory device with a page cache, committed
// every 50 ms. What one
// goroutine more adds shows how much of the work runs outside the file
// system's locks. Run it with
//
//	go test ./kernel/fs/ext4 -run '^$' -bench ParallelFiles -cpu 2
//
// Besides files/s it reports the time goroutines waited for this
// package's locks per file (as BenchmarkMail does), and with
// EXT4_MAILPROF=1 the unlocking places that made them wait the longest.

func BenchmarkParallelFiles(b *testing.B) {
	for _, shared := range []bool{false, true} {
		for _, workers := range []int{1, 2, 4} {
			name := fmt.Sprintf("private/workers=%d", workers)
			if shared {
				name = fmt.Sprintf("shared/workers=%d", workers)
			}
			b.Run(name, func(b *testing.B) { benchParallelFiles(b, workers, shared) })
		}
	}
}

func benchParallelFiles(b *testing.B, workers int, shared bool) {
	data := make([]byte, 4096)
	churnBench(b, workers, shared, func(f *FS, dir uint32, w int, next *atomic.Int64) error {
		return filesWorker(f, dir, w, data, next, int64(b.N))
	})
}

// churnBench runs worker in workers goroutines, each in a directory of
// its own or all in one (shared), on a fresh 256 MiB ext4 file system
// on an in-memory device with a page cache, committed every 50 ms, and
// reports files/s (b.N files in all: the workers count them in next),
// the time goroutines waited for this package's locks per file (as
// BenchmarkMail does) and the operations per file that ran as handles,
// side by side (handle.go); with EXT4_MAILPROF=1, also the unlocking
// places that made them wait the longest.
func churnBench(b *testing.B, workers int, shared bool, worker func(f *FS, dir uint32, w int, next *atomic.Int64) error) {
	dev := loadImage(b, mkfs(b, "256M", "", "-t", "ext4"))
	f, err := Mount(dev, Options{Pages: pagecache.New(&mm.HeapPhys{}, 16<<20)})
	if err != nil {
		b.Fatal(err)
	}
	dirs := make([]uint32, workers)
	for w := range dirs {
		if shared && w > 0 {
			dirs[w] = dirs[0]
			continue
		}
		if dirs[w], err = f.Mkdir(RootIno, "w"+strconv.Itoa(w), 0o755, 0, 0); err != nil {
			b.Fatal(err)
		}
	}
	runtime.SetMutexProfileFraction(1)
	defer runtime.SetMutexProfileFraction(0)
	before := lockWaits()
	var next atomic.Int64
	stop := make(chan struct{})
	committed := make(chan error, 1)
	go func() {
		// The periodic commit (ext4vfs.Committer, every 5 s in the
		// kernel), at a pace to match the host's speed: it bounds
		// the running transaction and the blocks it holds freed.
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				committed <- nil
				return
			case <-t.C:
				if _, err := f.Commit(); err != nil {
					committed <- err
					return
				}
			}
		}
	}()
	runWorkers(b, workers, func(w int) error { return worker(f, dirs[w], w, &next) })
	close(stop)
	if err := <-committed; err != nil {
		b.Fatal(err)
	}
	after := lockWaits()
	n := float64(b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "files/s")
	b.ReportMetric((after.total-before.total).Seconds()*1e6/n, "lockwait-µs/file")
	b.ReportMetric(float64(f.handlesRun.Load())/n, "handles/file")
	if os.Getenv("EXT4_MAILPROF") != "" {
		after.report(b, before)
	}
	if err := f.Unmount(); err != nil {
		b.Fatal(err)
	}
}

// filesWorker makes files in dir until next reaches n: scale.c's cycle
// of create, write, close and unlink of the file made 16 before (the
// close is the VFS's alone: the inode stays in memory until unlinked).
func filesWorker(f *FS, dir uint32, w int, data []byte, next *atomic.Int64, n int64) error {
	name := func(i int) string { return "f" + strconv.Itoa(w) + "." + strconv.Itoa(i) }
	for i := 0; next.Add(1) <= n; i++ {
		ino, err := f.Create(dir, name(i), linux.S_IFREG|0o644, 0, 0, 0, 0)
		if err != nil {
			return err
		}
		if _, err := f.WriteAt(ino, data, 0); err != nil {
			return err
		}
		if i >= 16 {
			if err := f.Unlink(dir, name(i-16)); err != nil {
				return err
			}
		}
	}
	return nil
}

// BenchmarkParallelRenames is the churn of BenchmarkParallelFiles
// with the steps that ran exclusive before issue 21 (FS.mu held for
// writing): each file is made under a temporary name, written, renamed
// to its final name (as a mail delivery does) and later replaced by a
// rename onto it, whose last link then goes, and a directory is made
// and removed per file. Run it with
//
//	go test ./kernel/fs/ext4 -run '^$' -bench ParallelRenames -cpu 2
func BenchmarkParallelRenames(b *testing.B) {
	for _, shared := range []bool{false, true} {
		for _, workers := range []int{1, 2} {
			name := fmt.Sprintf("private/workers=%d", workers)
			if shared {
				name = fmt.Sprintf("shared/workers=%d", workers)
			}
			b.Run(name, func(b *testing.B) { benchParallelRenames(b, workers, shared) })
		}
	}
}

func benchParallelRenames(b *testing.B, workers int, shared bool) {
	data := make([]byte, 4096)
	churnBench(b, workers, shared, func(f *FS, dir uint32, w int, next *atomic.Int64) error {
		return renamesWorker(f, dir, w, data, next, int64(b.N))
	})
}

// renamesWorker makes files in dir until next reaches n: create under
// a temporary name, write, rename to the final name; every other file
// is renamed onto the final name of the file made 16 before (that file
// goes with its last link), the others unlink it; a directory made and
// removed.
func renamesWorker(f *FS, dir uint32, w int, data []byte, next *atomic.Int64, n int64) error {
	name := func(i int) string { return "f" + strconv.Itoa(w) + "." + strconv.Itoa(i) }
	tmp := "t" + strconv.Itoa(w)
	sub := "d" + strconv.Itoa(w)
	for i := 0; next.Add(1) <= n; i++ {
		ino, err := f.Create(dir, tmp, linux.S_IFREG|0o644, 0, 0, 0, 0)
		if err != nil {
			return err
		}
		if _, err := f.WriteAt(ino, data, 0); err != nil {
			return err
		}
		final := name(i)
		if i >= 16 && i%2 == 0 {
			// Onto the old file's name, and the name kept.
			if err := f.Rename(dir, tmp, dir, name(i-16), 0); err != nil {
				return err
			}
			if err := f.Rename(dir, name(i-16), dir, final, 0); err != nil {
				return err
			}
		} else {
			if err := f.Rename(dir, tmp, dir, final, 0); err != nil {
				return err
			}
			if i >= 16 {
				if err := f.Unlink(dir, name(i-16)); err != nil {
					return err
				}
			}
		}
		if _, err := f.Mkdir(dir, sub, 0o755, 0, 0); err != nil {
			return err
		}
		if err := f.Rmdir(dir, sub); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkParallelBigUnlink: goroutines each make a 2 MiB file (64
// KiB writes, the largest made side by side) and unlink the one made
// two before, which is bigger than a handle's own credits free
// (handleMaxFree), in directories of their own. Run it with
//
//	go test ./kernel/fs/ext4 -run '^$' -bench ParallelBigUnlink -cpu 2
func BenchmarkParallelBigUnlink(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) { benchParallelBigUnlink(b, workers) })
	}
}

func benchParallelBigUnlink(b *testing.B, workers int) {
	data := make([]byte, 64<<10)
	churnBench(b, workers, false, func(f *FS, dir uint32, _ int, next *atomic.Int64) error {
		name := func(i int) string { return "f" + strconv.Itoa(i) }
		for i := 0; next.Add(1) <= int64(b.N); i++ {
			ino, err := f.Create(dir, name(i), linux.S_IFREG|0o644, 0, 0, 0, 0)
			if err != nil {
				return err
			}
			for off := int64(0); off < 2<<20; off += int64(len(data)) {
				if _, err := f.WriteAt(ino, data, off); err != nil {
					return err
				}
			}
			if i >= 2 {
				if err := f.Unlink(dir, name(i-2)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// BenchmarkParallelLookup is bench-scale's lookup workload: goroutines
// walking one 5-component path name by name, then a stat, an open and a
// close (Hold, Release) of the file at its end, all on the same inodes.
func BenchmarkParallelLookup(b *testing.B) {
	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) { benchParallelLookup(b, workers) })
	}
}

func benchParallelLookup(b *testing.B, workers int) {
	dev := loadImage(b, mkfs(b, "64M", "", "-t", "ext4"))
	f, err := Mount(dev, Options{Pages: pagecache.New(&mm.HeapPhys{}, 4<<20)})
	if err != nil {
		b.Fatal(err)
	}
	path := []string{"usr", "share", "doc", "pkg"}
	d := uint32(RootIno)
	for _, name := range path {
		if d, err = f.Mkdir(d, name, 0o755, 0, 0); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := f.Create(d, "file", linux.S_IFREG|0o644, 0, 0, 0, 0); err != nil {
		b.Fatal(err)
	}
	path = append(path, "file")
	var next atomic.Int64
	runWorkers(b, workers, func(int) error {
		for next.Add(1) <= int64(b.N) {
			ino, err := uint32(RootIno), error(nil)
			for _, name := range path {
				if ino, err = f.Lookup(ino, name); err != nil {
					return err
				}
			}
			if _, err := f.Stat(ino); err != nil {
				return err
			}
			f.Hold(ino)
			if err := f.Release(ino); err != nil {
				return err
			}
		}
		return nil
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "walks/s")
	if err := f.Unmount(); err != nil {
		b.Fatal(err)
	}
}
