package ext4vfs

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/ext4"
	"shortbread/kernel/fs/tmpfs"
	"shortbread/kernel/vfs"
)

// BenchmarkRenames is package ext4's BenchmarkParallelRenames through
// the VFS, with its directory locks: each file is made under a
// temporary name (open O_CREAT, 4 KiB written, closed), renamed to its
// final name as a mail delivery does, and later replaced by a rename
// onto it or unlinked; a directory is made and removed per file. In a
// directory per goroutine (private) or all in one (shared):
//
//	go test ./kernel/fs/ext4/ext4vfs -run '^$' -bench Renames -cpu 2
//
// It reports files/s and, as BenchmarkFiles, the contended acquisitions
// of the VFS's directory locks and ext4's locks per 1,000 files.
func BenchmarkRenames(b *testing.B) {
	for _, shared := range []bool{false, true} {
		for _, workers := range []int{1, 2} {
			name := fmt.Sprintf("private/workers=%d", workers)
			if shared {
				name = fmt.Sprintf("shared/workers=%d", workers)
			}
			b.Run(name, func(b *testing.B) { benchRenames(b, workers, shared) })
		}
	}
}

// benchMount makes a 256 MiB ext4 image in memory and mounts it on /mnt
// of a tmpfs-rooted VFS, spinning on contended locks as the kernel's
// mount does; the returned stop ends its periodic commit and unmounts.
func benchMount(b *testing.B) (v *vfs.VFS, c *vfs.Ctx, stop func()) {
	img := b.TempDir() + "/img"
	tool(b, "mke2fs", "-q", "-F", "-t", "ext4", "-E", "lazy_itable_init=0,lazy_journal_init=0", img, "256M")
	raw, err := os.ReadFile(img)
	if err != nil {
		b.Fatal(err)
	}
	disk, err := ext4.Mount(&memDev{b: raw}, ext4.Options{Spin: vfs.LockSpinning})
	if err != nil {
		b.Fatal(err)
	}
	fs := New(disk, Options{})
	root, err := fs.Root()
	if err != nil {
		b.Fatal(err)
	}
	if v, err = vfs.New(tmpfs.New(tmpfs.Options{Dev: linux.MakeDev(0, 1)}).Root(), "rootfs"); err != nil {
		b.Fatal(err)
	}
	c = &vfs.Ctx{Root: v.Root(), Cwd: v.Root(), Umask: 0o22}
	if err := v.Mkdir(c, nil, "/mnt", 0o755); err != nil {
		b.Fatal(err)
	}
	if err := v.Mount(c, nil, "/mnt", root, "ext4", 0); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	committed := make(chan struct{})
	go func() { // the periodic commit, at a pace to match the host's
		defer close(committed)
		fs.Committer(done, 50*time.Millisecond)
	}()
	return v, c, func() {
		close(done)
		<-committed
		if err := fs.Unmount(); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRenames(b *testing.B, workers int, shared bool) {
	data := bytes.Repeat([]byte{'x'}, 4096)
	churnVFS(b, workers, shared, func(v *vfs.VFS, c *vfs.Ctx, dir string, w int, next *atomic.Int64) error {
		return renamesVFS(v, c, dir, w, data, next, int64(b.N))
	})
}

// churnVFS runs worker in workers goroutines on a fresh file system
// (benchMount), each with its own copy of the context and in a
// directory of its own under /mnt or all in one (shared), b.N files in
// all (the workers count them in next), and reports files/s and the
// contended acquisitions of the VFS's directory locks and ext4's inode
// and group locks per 1,000 files and the time they waited per file
// (/proc/shortbread/dirlocks' counts).
func churnVFS(b *testing.B, workers int, shared bool, worker func(v *vfs.VFS, c *vfs.Ctx, dir string, w int, next *atomic.Int64) error) {
	v, c, stop := benchMount(b)
	for w := range workers {
		if shared && w > 0 {
			break
		}
		if err := v.Mkdir(c, nil, "/mnt/d"+strconv.Itoa(w), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	vfs.ResetDirLockContention()
	errs := make(chan error, workers)
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := *c
			dir := "/mnt/d" + strconv.Itoa(w)
			if shared {
				dir = "/mnt/d0"
			}
			if err := worker(v, &c, dir, w, &next); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	stop()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	spun, spunTime, slept, waited := vfs.DirLockContention()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "files/s")
	b.ReportMetric(float64(spun+slept)*1000/float64(b.N), "lockwaits/kfile")
	b.ReportMetric((spunTime+waited).Seconds()*1e6/float64(b.N), "lockwait-µs/file")
}

// renamesVFS is one goroutine of BenchmarkRenames (package ext4's
// renamesWorker, through the VFS) in directory dir, until next passes n.
func renamesVFS(v *vfs.VFS, c *vfs.Ctx, dir string, w int, data []byte, next *atomic.Int64, n int64) error {
	name := func(i int) string { return dir + "/f" + strconv.Itoa(w) + "." + strconv.Itoa(i) }
	tmp := dir + "/t" + strconv.Itoa(w)
	sub := dir + "/d" + strconv.Itoa(w)
	for i := 0; next.Add(1) <= n; i++ {
		f, err := v.Open(c, nil, tmp, linux.O_CREAT|linux.O_EXCL|linux.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		_, err = f.Write(data, nil)
		f.DecRef()
		if err != nil {
			return err
		}
		final := name(i)
		if i >= 16 && i%2 == 0 {
			// Onto the old file's name, and the name kept.
			if err := v.Rename(c, nil, tmp, nil, name(i-16), 0); err != nil {
				return err
			}
			if err := v.Rename(c, nil, name(i-16), nil, final, 0); err != nil {
				return err
			}
		} else {
			if err := v.Rename(c, nil, tmp, nil, final, 0); err != nil {
				return err
			}
			if i >= 16 {
				if err := v.Unlink(c, nil, name(i-16)); err != nil {
					return err
				}
			}
		}
		if err := v.Mkdir(c, nil, sub, 0o755); err != nil {
			return err
		}
		if err := v.Rmdir(c, nil, sub); err != nil {
			return err
		}
	}
	return nil
}
