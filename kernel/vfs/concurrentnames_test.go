package vfs_test

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
)

// A tmpfs directory takes creates and removals of different names at
// once (vfs.ConcurrentNames): each holds only its name's shard. These
// tests race them with each other, with renames and with listings.
// Run with -race.

// listOnce lists directory path with a small buffer, so that the
// listing takes many getdents calls while the directory changes, and
// returns how many times each name came. The records' offsets must
// rise: a listing resumes after the last record it returned.
func listOnce(t *testing.T, k *kernelSys, path string) map[string]int {
	fd, err := k.open(path, linux.O_RDONLY|linux.O_DIRECTORY, 0)
	if err != nil {
		t.Errorf("open %s: %v", path, err)
		return nil
	}
	defer k.close(fd)
	seen := map[string]int{}
	buf := make([]byte, 128)
	last := int64(-1)
	for {
		n, err := k.getdents(fd, buf)
		if err != nil {
			t.Errorf("getdents: %v", err)
			return seen
		}
		if n == 0 {
			return seen
		}
		for off := 0; off < n; {
			d, l := linux.DecodeDirent64(buf[off:n])
			if l == 0 {
				t.Errorf("bad record at %d", off)
				return seen
			}
			seen[d.Name]++
			if d.Off <= last {
				t.Errorf("offset %d after %d", d.Off, last)
			}
			last = d.Off
			off += l
		}
	}
}

// TestConcurrentNamesChurn has workers create, write, link and unlink
// files and make and remove directories, each under names of its own,
// in one directory, while another renames a file there back and forth
// and others list it. Every listing shows each name that stays
// throughout exactly once, in rising offsets (a name removed and made
// again is a new entry, which POSIX lets a listing show again); at the
// end the directory holds exactly the names the workers left, with the
// size and link count they imply.
func TestConcurrentNamesChurn(t *testing.T) {
	k := newKernelSys(t)
	must(t, "mkdir", k.mkdir("/d", 0o777))
	const stay = 40
	for i := range stay {
		fd, err := k.open(fmt.Sprintf("/d/s%02d", i), linux.O_CREAT|linux.O_WRONLY, 0o644)
		must(t, "create", err)
		k.close(fd)
	}
	fd, err := k.open("/d/ra", linux.O_CREAT|linux.O_WRONLY, 0o644)
	must(t, "create", err)
	k.close(fd)

	const workers, rounds, window = 4, 400, 8
	var stop atomic.Bool
	var listings atomic.Int32
	within(t, 120*time.Second, func() {
		var churn, others sync.WaitGroup
		for w := range workers {
			churn.Add(1)
			go func() {
				defer churn.Done()
				c := k.ctx
				name := func(n int) string { return fmt.Sprintf("/d/w%d.%d", w, n%(2*window)) }
				for n := range rounds {
					f, err := k.v.Open(&c, nil, name(n), linux.O_CREAT|linux.O_EXCL|linux.O_WRONLY, 0o644)
					if err != nil {
						t.Errorf("create %s: %v", name(n), err)
						return
					}
					f.Write([]byte("x"), nil)
					f.DecRef()
					if n%5 == 0 {
						link := fmt.Sprintf("/d/l%d", w)
						if err := k.v.Link(&c, nil, name(n), nil, link, 0); err != nil {
							t.Errorf("link: %v", err)
						}
						if err := k.v.Unlink(&c, nil, link); err != nil {
							t.Errorf("unlink %s: %v", link, err)
						}
					}
					if n%7 == 0 {
						sub := fmt.Sprintf("/d/sub%d", w)
						if err := k.v.Mkdir(&c, nil, sub, 0o755); err != nil {
							t.Errorf("mkdir: %v", err)
						}
						if err := k.v.Rmdir(&c, nil, sub); err != nil {
							t.Errorf("rmdir: %v", err)
						}
					}
					if n >= window {
						if err := k.v.Unlink(&c, nil, name(n-window)); err != nil {
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
			c := k.ctx
			from, to := "/d/ra", "/d/rb"
			for !stop.Load() {
				if err := k.v.Rename(&c, nil, from, nil, to, 0); err != nil {
					t.Errorf("rename %s: %v", from, err)
					return
				}
				from, to = to, from
			}
		}()
		for range 2 {
			others.Add(1)
			go func() {
				defer others.Done()
				for !stop.Load() {
					seen := listOnce(t, k, "/d")
					for i := range stay {
						if seen[fmt.Sprintf("s%02d", i)] != 1 {
							t.Errorf("s%02d listed %d times, want once", i, seen[fmt.Sprintf("s%02d", i)])
						}
					}
					listings.Add(1)
				}
			}()
		}
		churn.Wait()
		stop.Store(true)
		others.Wait()
	})
	if listings.Load() == 0 {
		t.Error("no listing finished")
	}
	var want []string
	for i := range stay {
		want = append(want, fmt.Sprintf("s%02d", i))
	}
	for w := range workers {
		for n := rounds - window; n < rounds; n++ {
			want = append(want, fmt.Sprintf("w%d.%d", w, n%(2*window)))
		}
	}
	seen := listOnce(t, k, "/d")
	var got []string
	for name := range seen {
		if name != "." && name != ".." && name != "ra" && name != "rb" {
			got = append(got, name)
		}
	}
	if seen["ra"]+seen["rb"] != 1 {
		t.Errorf("renamed file listed as ra %d, rb %d times", seen["ra"], seen["rb"])
	}
	sort.Strings(want)
	sort.Strings(got)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("directory holds %v\nwant %v", got, want)
	}
	s, err := k.stat("/d")
	if err != nil || s.Nlink != 2 || s.Size != int64(2+len(want)+1)*20 {
		t.Errorf("/d: %+v, %v; want 2 links, size %d", s, err, (2+len(want)+1)*20)
	}
	if _, err := k.stat("/d/w0.0"); err == nil && rounds%(2*window) <= window {
		t.Error("w0.0 still there")
	} else if err != nil && !errors.Is(err, linux.ENOENT) {
		t.Errorf("stat w0.0: %v", err)
	}
}
