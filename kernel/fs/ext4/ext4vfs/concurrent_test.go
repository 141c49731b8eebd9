package ext4vfs

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// An ext4 directory takes creates and removals of different names at
// once (vfs.ConcurrentNames): the VFS holds its lock for reading and
// the name's, and package ext4 the directory's inode lock for each
// change. These tests race such changes through the VFS with each
// other, with renames, listings and commits. Run with -race.

// listNames lists directory path through the VFS with a small buffer,
// so that a listing takes many getdents calls while the directory
// changes, and counts each name.
// checkListing checks a directory's listing (seen: listNames): every
// name once, the file renamed back and forth between a and b under one
// of them, and the other names exactly want.
func checkListing(t *testing.T, seen map[string]int, want []string, a, b string) {
	t.Helper()
	var got []string
	for name, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", name, n)
		}
		if name != "." && name != ".." && name != a && name != b {
			got = append(got, name)
		}
	}
	if seen[a]+seen[b] != 1 {
		t.Errorf("renamed file listed as %s %d, %s %d times", a, seen[a], b, seen[b])
	}
	sort.Strings(want)
	sort.Strings(got)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("directory holds %v\nwant %v", got, want)
	}
}

func listNames(t *testing.T, v *vfs.VFS, c *vfs.Ctx, path string) map[string]int {
	d, err := v.Open(c, nil, path, linux.O_RDONLY|linux.O_DIRECTORY, 0)
	if err != nil {
		t.Errorf("open %s: %v", path, err)
		return nil
	}
	defer d.DecRef()
	seen := map[string]int{}
	buf := make([]byte, 256)
	for {
		n, err := d.Getdents(buf)
		if err != nil {
			t.Errorf("getdents %s: %v", path, err)
			return seen
		}
		if n == 0 {
			return seen
		}
		for off := 0; off < n; {
			reclen := int(buf[off+16]) | int(buf[off+17])<<8
			seen[string(bytes.TrimRight(buf[off+19:off+reclen], "\x00"))]++
			off += reclen
		}
	}
}

// TestConcurrentNamesChurn runs workers that create, write and unlink
// files, link and unlink a second name, make and remove a symlink and a
// subdirectory and change a file's mode, each under names of their own,
// in one directory, while
// another renames a file there back and forth, two list it and the
// journal commits. Every listing shows each name that stays throughout
// exactly once; at the end the directory holds exactly the names the
// workers left, and e2fsck finds the image clean.
func TestConcurrentNamesChurn(t *testing.T) {
	v, c, dev, fs := setup(t)
	if err := v.Mkdir(c, nil, "/mnt/d", 0o777); err != nil {
		t.Fatal(err)
	}
	// Enough names that the directory has an index from the start (a
	// listing spanning a one-block directory's change into an indexed
	// one is TestListSpansIndexing's).
	const stay = 300
	for i := range stay {
		f, err := v.Open(c, nil, fmt.Sprintf("/mnt/d/s%03d", i), linux.O_CREAT|linux.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.DecRef()
	}
	if f, err := v.Open(c, nil, "/mnt/d/ra", linux.O_CREAT|linux.O_WRONLY, 0o644); err != nil {
		t.Fatal(err)
	} else {
		f.DecRef()
	}
	const workers, rounds, window = 4, 300, 8
	var stop atomic.Bool
	var listings atomic.Int32
	var churn, others sync.WaitGroup
	for w := range workers {
		churn.Add(1)
		go func() {
			defer churn.Done()
			c := *c
			name := func(n int) string { return fmt.Sprintf("/mnt/d/w%d.%d", w, n%(2*window)) }
			for n := range rounds {
				f, err := v.Open(&c, nil, name(n), linux.O_CREAT|linux.O_EXCL|linux.O_WRONLY, 0o644)
				if err != nil {
					t.Errorf("create %s: %v", name(n), err)
					return
				}
				if _, err := f.Write(bytes.Repeat([]byte{'x'}, 4096), nil); err != nil {
					t.Errorf("write %s: %v", name(n), err)
				}
				f.DecRef()
				if n%5 == 0 {
					link := fmt.Sprintf("/mnt/d/l%d", w)
					if err := v.Link(&c, nil, name(n), nil, link, 0); err != nil {
						t.Errorf("link: %v", err)
					}
					if err := v.Unlink(&c, nil, link); err != nil {
						t.Errorf("unlink %s: %v", link, err)
					}
				}
				if n%3 == 0 {
					// A fast symlink, made and removed, and the
					// file's mode changed: handles too.
					sym := fmt.Sprintf("/mnt/d/y%d", w)
					if err := v.Symlink(&c, name(n), nil, sym); err != nil {
						t.Errorf("symlink: %v", err)
					}
					if got, err := v.Readlink(&c, nil, sym, 0); err != nil || got != name(n) {
						t.Errorf("readlink %s: %q, %v", sym, got, err)
					}
					if err := v.Unlink(&c, nil, sym); err != nil {
						t.Errorf("unlink %s: %v", sym, err)
					}
					if err := v.Chmod(&c, nil, name(n), 0o600, 0); err != nil {
						t.Errorf("chmod %s: %v", name(n), err)
					}
					if a, err := v.Stat(&c, nil, name(n), 0); err != nil || a.Mode != linux.S_IFREG|0o600 {
						t.Errorf("stat %s: mode %#o, %v", name(n), a.Mode, err)
					}
				}
				if n%7 == 0 {
					sub := fmt.Sprintf("/mnt/d/sub%d", w)
					if err := v.Mkdir(&c, nil, sub, 0o755); err != nil {
						t.Errorf("mkdir: %v", err)
					}
					if err := v.Rmdir(&c, nil, sub); err != nil {
						t.Errorf("rmdir: %v", err)
					}
				}
				if n >= window {
					if err := v.Unlink(&c, nil, name(n-window)); err != nil {
						t.Errorf("unlink %s: %v", name(n-window), err)
						return
					}
				}
			}
		}()
	}
	others.Add(1)
	go func() { // a file renamed back and forth in the same directory
		defer others.Done()
		c := *c
		from, to := "/mnt/d/ra", "/mnt/d/rb"
		for !stop.Load() {
			if err := v.Rename(&c, nil, from, nil, to, 0); err != nil {
				t.Errorf("rename %s: %v", from, err)
				return
			}
			from, to = to, from
		}
	}()
	others.Add(1)
	go func() { // the periodic commit
		defer others.Done()
		for !stop.Load() {
			if err := fs.Sync(); err != nil {
				t.Errorf("sync: %v", err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	for range 2 {
		others.Add(1)
		go func() {
			defer others.Done()
			c := *c
			for !stop.Load() {
				seen := listNames(t, v, &c, "/mnt/d")
				for i := range stay {
					if n := seen[fmt.Sprintf("s%03d", i)]; n != 1 {
						t.Errorf("s%03d listed %d times, want once", i, n)
					}
				}
				listings.Add(1)
			}
		}()
	}
	churn.Wait()
	stop.Store(true)
	others.Wait()
	if listings.Load() == 0 {
		t.Error("no listing finished")
	}
	var want []string
	for i := range stay {
		want = append(want, fmt.Sprintf("s%03d", i))
	}
	for w := range workers {
		for n := rounds - window; n < rounds; n++ {
			want = append(want, fmt.Sprintf("w%d.%d", w, n%(2*window)))
		}
	}
	checkListing(t, listNames(t, v, c, "/mnt/d"), want, "ra", "rb")
	if err := fs.Sync(); err != nil {
		t.Fatal(err)
	}
	fsck(t, dev)
}

// BenchmarkFiles is bench-scale's file churn through the VFS, as the
// guest's programs make it (open O_CREAT, write 4 KiB, close, unlink
// the file made 16 before), from goroutines in a directory each
// (private) or all in one (shared), on an in-memory device. Unlike
// package ext4's BenchmarkParallelFiles it includes the VFS's
// directory locks. With -cpu 2 it shows what a second worker adds:
//
//	go test ./kernel/fs/ext4/ext4vfs -run '^$' -bench Files -cpu 2
//
// Besides files/s it reports the contended acquisitions of the VFS's
// directory locks and ext4's inode and group locks per 1,000 files, and
// the time they waited per file (/proc/shortbread/dirlocks' counts).
func BenchmarkFiles(b *testing.B) {
	for _, shared := range []bool{false, true} {
		for _, workers := range []int{1, 2} {
			name := fmt.Sprintf("private/workers=%d", workers)
			if shared {
				name = fmt.Sprintf("shared/workers=%d", workers)
			}
			b.Run(name, func(b *testing.B) { benchFiles(b, workers, shared) })
		}
	}
}

func benchFiles(b *testing.B, workers int, shared bool) {
	data := bytes.Repeat([]byte{'x'}, 4096)
	churnVFS(b, workers, shared, func(v *vfs.VFS, c *vfs.Ctx, dir string, w int, next *atomic.Int64) error {
		name := func(n int64) string { return dir + "/w" + strconv.Itoa(w) + "." + strconv.FormatInt(n%32, 10) }
		for n := int64(0); next.Add(1) <= int64(b.N); n++ {
			f, err := v.Open(c, nil, name(n), linux.O_CREAT|linux.O_WRONLY|linux.O_TRUNC, 0o644)
			if err == nil {
				_, err = f.Write(data, nil)
				f.DecRef()
			}
			if err == nil && n >= 16 {
				err = v.Unlink(c, nil, name(n-16))
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}
