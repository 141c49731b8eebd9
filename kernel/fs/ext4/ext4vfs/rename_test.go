package ext4vfs

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// An ext4 directory takes renames within it beside creates, unlinks and
// other renames (vfs.ConcurrentRenames): the VFS holds the directory's
// lock for reading and the locks of the rename's two names.

// readAll returns the contents of path, read through the VFS.
func readAll(v *vfs.VFS, c *vfs.Ctx, path string) (string, error) {
	f, err := v.Open(c, nil, path, linux.O_RDONLY, 0)
	if err != nil {
		return "", err
	}
	defer f.DecRef()
	buf := make([]byte, 256)
	n, err := f.Read(buf, nil)
	return string(buf[:n]), err
}

// writeNew creates path (O_EXCL) holding s.
func writeNew(v *vfs.VFS, c *vfs.Ctx, path, s string) error {
	f, err := v.Open(c, nil, path, linux.O_CREAT|linux.O_EXCL|linux.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.DecRef()
	_, err = f.Write([]byte(s), nil)
	return err
}

// TestConcurrentRenamesChurn runs, in one directory, workers that each
// write files under a temporary name and rename them to their final
// one (a mail queue), rename a new file onto an old one's name (with the
// old one held open: it must stay readable), try a RENAME_NOREPLACE onto
// an existing name (EEXIST), exchange two of their files, rename a
// directory and then onto an empty one, and unlink; beside them two
// goroutines rename one file back and forth between two names in
// opposite directions (so their two name locks are taken in both
// orders), two exchange a pair of files, two list the directory and one
// commits. Every listing shows each name that stays throughout exactly
// once; at the end the directory holds exactly the names the workers
// left, each with its content, every name used resolves through the
// VFS's dentry cache as the listing says (the same inode, or ENOENT),
// and e2fsck finds the image clean.
func TestConcurrentRenamesChurn(t *testing.T) {
	v, c, dev, fs := setup(t)
	const dir = "/mnt/q"
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("mkdir", v.Mkdir(c, nil, dir, 0o777))
	const stay = 200
	for i := range stay {
		must("create", writeNew(v, c, fmt.Sprintf("%s/s%03d", dir, i), "stay"))
	}
	must("create pa", writeNew(v, c, dir+"/pa", "p"))
	must("create ea", writeNew(v, c, dir+"/ea", "ea"))
	must("create eb", writeNew(v, c, dir+"/eb", "eb"))

	const workers, rounds, window = 4, 200, 8
	var stop atomic.Bool
	var listings atomic.Int32
	var churn, others sync.WaitGroup
	used := make([]map[string]bool, workers) // every name a worker made, for the cache check
	for w := range workers {
		used[w] = map[string]bool{}
		churn.Add(1)
		go func() {
			defer churn.Done()
			c := *c
			final := func(n int) string { return fmt.Sprintf("%s/w%d.%d", dir, w, n%(2*window)) }
			tmp := fmt.Sprintf("%s/t%d", dir, w)
			fail := func(what string, err error) bool {
				if err != nil {
					t.Errorf("worker %d: %s: %v", w, what, err)
				}
				return err != nil
			}
			for n := range rounds {
				used[w][final(n)] = true
				content := fmt.Sprintf("%d.%d", w, n)
				if fail("create", writeNew(v, &c, tmp, content)) {
					return
				}
				if n >= window && n%4 == 0 {
					// Onto the old file's name, held open: the old
					// file stays readable through its descriptor.
					old := final(n - window)
					f, err := v.Open(&c, nil, old, linux.O_RDONLY, 0)
					if fail("open "+old, err) {
						return
					}
					if fail("rename onto "+old, v.Rename(&c, nil, tmp, nil, old, 0)) {
						return
					}
					buf := make([]byte, 64)
					k, err := f.Pread(buf, 0, nil)
					want := fmt.Sprintf("%d.%d", w, n-window)
					if err != nil || string(buf[:k]) != want {
						t.Errorf("worker %d: the replaced %s reads %q, %v; want %q", w, old, buf[:k], err, want)
					}
					f.DecRef()
					if fail("rename to final", v.Rename(&c, nil, old, nil, final(n), 0)) {
						return
					}
				} else {
					if fail("rename to final", v.Rename(&c, nil, tmp, nil, final(n), 0)) {
						return
					}
					if n >= window {
						if fail("unlink", v.Unlink(&c, nil, final(n-window))) {
							return
						}
					}
				}
				if n >= 1 && n%3 == 0 {
					if err := v.Rename(&c, nil, final(n), nil, final(n-1), linux.RENAME_NOREPLACE); !errors.Is(err, linux.EEXIST) {
						t.Errorf("worker %d: RENAME_NOREPLACE onto an existing name: %v", w, err)
					}
					// Exchanged twice: back where they were.
					for range 2 {
						if fail("exchange", v.Rename(&c, nil, final(n), nil, final(n-1), linux.RENAME_EXCHANGE)) {
							return
						}
					}
				}
				if n%5 == 0 {
					a, b := fmt.Sprintf("%s/da%d", dir, w), fmt.Sprintf("%s/db%d", dir, w)
					fail("mkdir", v.Mkdir(&c, nil, a, 0o755))
					fail("rename dir", v.Rename(&c, nil, a, nil, b, 0))
					fail("mkdir", v.Mkdir(&c, nil, a, 0o755))
					fail("rename dir onto empty dir", v.Rename(&c, nil, a, nil, b, 0))
					fail("rmdir", v.Rmdir(&c, nil, b))
				}
			}
		}()
	}
	var flips atomic.Int64
	for i := range 2 { // one file between two names, renamed both ways
		others.Add(1)
		go func() {
			defer others.Done()
			c := *c
			from, to := dir+"/pa", dir+"/pb"
			if i == 1 {
				from, to = to, from
			}
			for !stop.Load() {
				switch err := v.Rename(&c, nil, from, nil, to, 0); {
				case err == nil:
					flips.Add(1)
				case !errors.Is(err, linux.ENOENT): // the other moved it first
					t.Errorf("rename %s %s: %v", from, to, err)
					return
				}
			}
		}()
	}
	for range 2 { // two files exchanged from both sides
		others.Add(1)
		go func() {
			defer others.Done()
			c := *c
			for !stop.Load() {
				if err := v.Rename(&c, nil, dir+"/ea", nil, dir+"/eb", linux.RENAME_EXCHANGE); err != nil {
					t.Errorf("exchange: %v", err)
					return
				}
			}
		}()
	}
	others.Add(1)
	go func() { // the periodic commit
		defer others.Done()
		for !stop.Load() {
			if err := fs.Sync(); err != nil {
				t.Errorf("sync: %v", err)
				return
			}
		}
	}()
	for range 2 {
		others.Add(1)
		go func() {
			defer others.Done()
			c := *c
			for !stop.Load() {
				seen := listNames(t, v, &c, dir)
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
	if listings.Load() == 0 || flips.Load() == 0 {
		t.Errorf("%d listings, %d renames of pa/pb finished", listings.Load(), flips.Load())
	}

	want := []string{"ea", "eb"}
	for i := range stay {
		want = append(want, fmt.Sprintf("s%03d", i))
	}
	for w := range workers {
		for n := rounds - window; n < rounds; n++ {
			want = append(want, fmt.Sprintf("w%d.%d", w, n%(2*window)))
			path := fmt.Sprintf("%s/w%d.%d", dir, w, n%(2*window))
			if got, err := readAll(v, c, path); err != nil || got != fmt.Sprintf("%d.%d", w, n) {
				t.Errorf("%s holds %q, %v; want %q", path, got, err, fmt.Sprintf("%d.%d", w, n))
			}
		}
	}
	ea, err1 := readAll(v, c, dir+"/ea")
	eb, err2 := readAll(v, c, dir+"/eb")
	if err1 != nil || err2 != nil || ea+eb != "eaeb" && ea+eb != "ebea" {
		t.Errorf("exchanged files hold %q (%v) and %q (%v)", ea, err1, eb, err2)
	}
	checkListing(t, listNames(t, v, c, dir), want, "pa", "pb")

	// The dentry cache agrees with the directory: each name listed
	// resolves to the inode the listing gives, each other name used is
	// gone.
	inos := listInos(t, v, c, dir)
	names := []string{"pa", "pb", "ea", "eb"}
	for w := range workers {
		names = append(names, "t"+strconv.Itoa(w), fmt.Sprintf("da%d", w), fmt.Sprintf("db%d", w))
		for p := range used[w] {
			names = append(names, p[len(dir)+1:])
		}
	}
	for _, name := range names {
		a, err := v.Stat(c, nil, dir+"/"+name, linux.AT_SYMLINK_NOFOLLOW)
		ino, listed := inos[name]
		switch {
		case listed && (err != nil || a.Ino != ino):
			t.Errorf("%s: listed as inode %d, stat gives %d, %v", name, ino, a.Ino, err)
		case !listed && !errors.Is(err, linux.ENOENT):
			t.Errorf("%s: not listed, stat gives inode %d, %v", name, a.Ino, err)
		}
	}
	if err := fs.Sync(); err != nil {
		t.Fatal(err)
	}
	fsck(t, dev)
}

// listInos lists directory path through the VFS and returns each name's
// inode number.
func listInos(t *testing.T, v *vfs.VFS, c *vfs.Ctx, path string) map[string]uint64 {
	d, err := v.Open(c, nil, path, linux.O_RDONLY|linux.O_DIRECTORY, 0)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer d.DecRef()
	inos := map[string]uint64{}
	buf := make([]byte, 4096)
	for {
		n, err := d.Getdents(buf)
		if err != nil {
			t.Fatalf("getdents %s: %v", path, err)
		}
		if n == 0 {
			return inos
		}
		for off := 0; off < n; {
			e, l := linux.DecodeDirent64(buf[off:n])
			if l == 0 {
				t.Fatalf("bad record at %d", off)
			}
			inos[e.Name] = e.Ino
			off += l
		}
	}
}
