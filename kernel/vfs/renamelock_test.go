package vfs_test

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/tmpfs"
	"shortbread/kernel/vfs"
)

// Tests of the directory locking without a namespace-wide lock: names
// change under per-directory locks, renames across directories under
// the tree's rename lock, and walks take no lock. Run them with -race.

// within fails the test if f has not returned after d: a deadlock in the
// locking would otherwise hang the test binary.
func within(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("not done after %v: deadlocked?", d)
	}
}

// TestChurnManyDirs runs workers that make, write, rename and remove
// files, each in its own directory, while others rename files across
// the directories and look names up. Afterwards every directory must
// list exactly what stat finds and what the workers left.
func TestChurnManyDirs(t *testing.T) {
	k := newKernelSys(t)
	const workers = 6
	for w := range workers {
		must(t, "mkdir", k.mkdir(fmt.Sprintf("/w%d", w), 0o777))
	}
	must(t, "mkdir", k.mkdir("/shared", 0o777))
	var kept [workers]map[string]bool // what each worker left, by path
	var moved sync.Map                // names moved to /shared
	within(t, 60*time.Second, func() {
		var wg sync.WaitGroup
		for w := range workers {
			kept[w] = map[string]bool{}
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := k.ctx
				for i := range 400 {
					name := fmt.Sprintf("/w%d/f%d", w, i)
					f, err := k.v.Open(&c, nil, name, linux.O_CREAT|linux.O_EXCL|linux.O_WRONLY, 0o644)
					if err != nil {
						t.Errorf("create %s: %v", name, err)
						return
					}
					if _, err := f.Write(make([]byte, 4096), nil); err != nil {
						t.Errorf("write %s: %v", name, err)
					}
					f.DecRef()
					switch i % 4 {
					case 0: // unlinked
						if err := k.v.Unlink(&c, nil, name); err != nil {
							t.Errorf("unlink %s: %v", name, err)
						}
					case 1: // renamed within the directory
						to := fmt.Sprintf("/w%d/r%d", w, i)
						if err := k.v.Rename(&c, nil, name, nil, to, 0); err != nil {
							t.Errorf("rename %s: %v", name, err)
						}
						kept[w][to] = true
					case 2: // moved to the shared directory
						to := fmt.Sprintf("/shared/w%d-%d", w, i)
						if err := k.v.Rename(&c, nil, name, nil, to, 0); err != nil {
							t.Errorf("rename %s: %v", name, err)
						}
						moved.Store(to, true)
					default:
						kept[w][name] = true
					}
					// Look-ups of names that come and go.
					k.v.Stat(&c, nil, fmt.Sprintf("/w%d/f%d", (w+1)%workers, i), 0)
				}
			}()
		}
		wg.Wait()
	})
	for w := range workers {
		dir := fmt.Sprintf("/w%d", w)
		listed := namesIn(t, k, dir)
		if len(listed) != len(kept[w]) {
			t.Errorf("%s lists %d names, the worker left %d", dir, len(listed), len(kept[w]))
		}
		for _, n := range listed {
			if !kept[w][dir+"/"+n] {
				t.Errorf("%s/%s listed but not left by the worker", dir, n)
			}
		}
		for p := range kept[w] {
			if _, err := k.stat(p); err != nil {
				t.Errorf("stat %s: %v", p, err)
			}
		}
	}
	n := 0
	moved.Range(func(p, _ any) bool {
		n++
		if _, err := k.stat(p.(string)); err != nil {
			t.Errorf("stat %s: %v", p, err)
		}
		return true
	})
	if got := len(namesIn(t, k, "/shared")); got != n {
		t.Errorf("/shared lists %d names, %d were moved there", got, n)
	}
}

func namesIn(t *testing.T, k *kernelSys, path string) []string {
	t.Helper()
	fd, err := k.open(path, linux.O_RDONLY|linux.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer k.close(fd)
	return readNames(t, k, fd)
}

// TestRenameIntoItself checks that a directory cannot be moved into
// itself or below itself (EINVAL), nor a directory replaced by one of
// its own ancestors.
func TestRenameIntoItself(t *testing.T) {
	k := newKernelSys(t)
	for _, d := range []string{"/a", "/a/b", "/a/b/c", "/x"} {
		must(t, "mkdir", k.mkdir(d, 0o777))
	}
	wantErr(t, "a into a/b/c", k.rename("/a", "/a/b/c/a"), linux.EINVAL)
	wantErr(t, "a into a", k.rename("/a", "/a/a"), linux.EINVAL)
	wantErr(t, "a/b onto a", k.rename("/a/b", "/a"), linux.ENOTEMPTY)
	wantErr(t, "exchange a, a/b/c", k.renameat2("/a", "/a/b/c", linux.RENAME_EXCHANGE), linux.EINVAL)
	wantErr(t, "exchange a/b/c, a", k.renameat2("/a/b/c", "/a", linux.RENAME_EXCHANGE), linux.EINVAL)
	must(t, "x into a/b/c", k.rename("/x", "/a/b/c/x"))
	wantErr(t, "a into a/b/c/x", k.rename("/a", "/a/b/c/x/a"), linux.EINVAL)
	must(t, "mkdir", k.mkdir("/z", 0o777))
	must(t, "mkdir", k.mkdir("/z/zz", 0o777))
	must(t, "exchange a/b/c/x, z", k.renameat2("/a/b/c/x", "/z", linux.RENAME_EXCHANGE))
	if _, err := k.stat("/a/b/c/x/zz"); err != nil {
		t.Fatalf("z's child after the exchange: %v", err)
	}
	wantErr(t, "a into a/b/c/x/zz", k.rename("/a", "/a/b/c/x/zz/a"), linux.EINVAL)
}

// TestRenameLoopRace races renames that would together make a loop:
// /pN/a into /qN/b while /qN/b goes into /pN/a. The four directories
// involved differ, so no directory lock is shared between the two: only
// the tree's rename lock stops both from succeeding. Each pair must end
// with one directory inside the other, or neither moved, never both;
// every directory must still be reachable from the root, its path
// leading back to it.
func TestRenameLoopRace(t *testing.T) {
	k := newKernelSys(t)
	const pairs = 8
	for p := range pairs {
		must(t, "mkdir", k.mkdir(fmt.Sprintf("/p%d", p), 0o777))
		must(t, "mkdir", k.mkdir(fmt.Sprintf("/q%d", p), 0o777))
	}
	within(t, 60*time.Second, func() {
		for round := range 100 {
			for p := range pairs {
				must(t, "mkdir", k.mkdir(fmt.Sprintf("/p%d/a", p), 0o777))
				must(t, "mkdir", k.mkdir(fmt.Sprintf("/q%d/b", p), 0o777))
			}
			var wg sync.WaitGroup
			var okA, okB [pairs]bool
			for p := range pairs {
				wg.Add(2)
				go func() {
					defer wg.Done()
					c := k.ctx
					okA[p] = k.v.Rename(&c, nil, fmt.Sprintf("/p%d/a", p), nil, fmt.Sprintf("/q%d/b/a", p), 0) == nil
				}()
				go func() {
					defer wg.Done()
					c := k.ctx
					okB[p] = k.v.Rename(&c, nil, fmt.Sprintf("/q%d/b", p), nil, fmt.Sprintf("/p%d/a/b", p), 0) == nil
				}()
			}
			wg.Wait()
			for p := range pairs {
				if okA[p] && okB[p] {
					t.Fatalf("round %d pair %d: both renames succeeded: a loop", round, p)
				}
				// The tree below the root is whole: remove it,
				// deepest first.
				var paths []string
				switch {
				case okA[p]:
					paths = []string{fmt.Sprintf("/q%d/b/a", p), fmt.Sprintf("/q%d/b", p)}
				case okB[p]:
					paths = []string{fmt.Sprintf("/p%d/a/b", p), fmt.Sprintf("/p%d/a", p)}
				default:
					paths = []string{fmt.Sprintf("/p%d/a", p), fmt.Sprintf("/q%d/b", p)}
				}
				for _, path := range paths {
					d, err := k.v.Lookup(&k.ctx, nil, path, 0)
					if err != nil {
						t.Fatalf("round %d: %s: %v", round, path, err)
					}
					if got, err := k.v.Getcwd(&k.ctx, d); err != nil || got != path {
						t.Fatalf("round %d: getcwd of %s: %q %v", round, path, got, err)
					}
					must(t, "rmdir "+path, k.rmdir(path))
				}
			}
		}
	})
}

// TestRenameStress renames directories and files at random among a small
// tree from several goroutines, with every flag, while others remove and
// make directories and walk. It must not deadlock, and the tree must stay
// a tree: every directory reachable once from the root, its ".." its
// parent and its path its own.
func TestRenameStress(t *testing.T) {
	k := newKernelSys(t)
	names := []string{"/p", "/q", "/p/r", "/q/s", "/p/r/t", "/q/s/u"}
	for _, n := range names {
		must(t, "mkdir", k.mkdir(n, 0o777))
	}
	var steps atomic.Int64
	within(t, 90*time.Second, func() {
		var wg sync.WaitGroup
		for g := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := k.ctx
				rng := rand.New(rand.NewSource(int64(g)))
				comp := []string{"p", "q", "r", "s", "t", "u", "f", "g"}
				path := func() string {
					n := 1 + rng.Intn(3)
					var b strings.Builder
					for range n {
						b.WriteString("/" + comp[rng.Intn(len(comp))])
					}
					return b.String()
				}
				for range 3000 {
					steps.Add(1)
					switch rng.Intn(8) {
					case 0, 1, 2:
						k.v.Rename(&c, nil, path(), nil, path(), 0)
					case 3:
						k.v.Rename(&c, nil, path(), nil, path(), linux.RENAME_EXCHANGE)
					case 4:
						k.v.Rename(&c, nil, path(), nil, path(), linux.RENAME_NOREPLACE)
					case 5:
						k.v.Mkdir(&c, nil, path(), 0o777)
					case 6:
						k.v.Rmdir(&c, nil, path())
						if f, err := k.v.Open(&c, nil, path(), linux.O_CREAT|linux.O_WRONLY, 0o644); err == nil {
							f.DecRef()
						}
					default:
						if d, err := k.v.Lookup(&c, nil, path(), 0); err == nil {
							k.v.Getcwd(&c, d)
							k.v.Lookup(&c, d, "..", 0)
						}
					}
				}
			}()
		}
		wg.Wait()
	})
	seen := map[uint64]bool{}
	var walk func(path string)
	walk = func(path string) {
		a, err := k.stat(path)
		if err != nil {
			t.Fatalf("stat %s: %v", path, err)
		}
		if seen[a.Ino] {
			t.Fatalf("%s: inode %d reached twice", path, a.Ino)
		}
		seen[a.Ino] = true
		if a.Mode&linux.S_IFMT != linux.S_IFDIR {
			return
		}
		d, err := k.v.Lookup(&k.ctx, nil, path, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := k.v.Getcwd(&k.ctx, d); err != nil || got != path {
			t.Fatalf("getcwd of %s: %q %v", path, got, err)
		}
		if path != "/" {
			up, _ := k.stat(path + "/..")
			i := strings.LastIndexByte(path, '/')
			want, _ := k.stat(path[:max(i, 1)])
			if up.Ino != want.Ino {
				t.Fatalf("%s/.. is inode %d, its parent %d", path, up.Ino, want.Ino)
			}
		}
		base := strings.TrimSuffix(path, "/")
		for _, n := range namesIn(t, k, path) {
			walk(base + "/" + n)
		}
	}
	walk("/")
	t.Logf("%d operations, %d names left", steps.Load(), len(seen))
}

// TestRenameReplaceNeverMissing replaces a name by rename over and over,
// with files and with directories (RENAME_EXCHANGE), while others look it
// up: every look-up must find the old or the new file, never no file,
// as rename(2) promises.
func TestRenameReplaceNeverMissing(t *testing.T) {
	k := newKernelSys(t)
	must(t, "mkdir", k.mkdir("/d", 0o777))
	must(t, "mkdir", k.mkdir("/x", 0o777))
	must(t, "mkdir", k.mkdir("/y", 0o777))
	must(t, "mkdir", k.mkdir("/x/sub", 0o777))
	must(t, "mkdir", k.mkdir("/y/sub", 0o777))
	fd, err := k.open("/d/target", linux.O_CREAT|linux.O_WRONLY, 0o644)
	must(t, "create", err)
	k.close(fd)
	stop := make(chan struct{})
	var misses, lookups atomic.Int64
	var readers sync.WaitGroup
	for _, p := range []string{"/d/target", "/x/sub", "/y/sub"} {
		readers.Add(1)
		go func() {
			defer readers.Done()
			c := k.ctx
			for {
				select {
				case <-stop:
					return
				default:
				}
				lookups.Add(1)
				if _, err := k.v.Stat(&c, nil, p, 0); err != nil {
					misses.Add(1)
					t.Errorf("stat %s during renames: %v", p, err)
					return
				}
			}
		}()
	}
	within(t, 60*time.Second, func() {
		c := k.ctx
		for i := range 2000 {
			tmp := fmt.Sprintf("/d/tmp%d", i)
			f, err := k.v.Open(&c, nil, tmp, linux.O_CREAT|linux.O_EXCL|linux.O_WRONLY, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			f.DecRef()
			must(t, "rename over", k.v.Rename(&c, nil, tmp, nil, "/d/target", 0))
			must(t, "exchange", k.v.Rename(&c, nil, "/x/sub", nil, "/y/sub", linux.RENAME_EXCHANGE))
		}
	})
	close(stop)
	readers.Wait()
	if misses.Load() > 0 {
		t.Errorf("%d of %d look-ups found nothing", misses.Load(), lookups.Load())
	}
	if n := namesIn(t, k, "/d"); len(n) != 1 || n[0] != "target" {
		t.Errorf("/d lists %v, want [target]", n)
	}
}

// TestGetcwdDuringMoves moves a directory back and forth between two
// parents, under two names, while another goroutine asks the path of a
// directory inside it: each answer must be one of the paths it really
// had, never a mix of one state's name and another's parent.
func TestGetcwdDuringMoves(t *testing.T) {
	k := newKernelSys(t)
	for _, d := range []string{"/x", "/y", "/x/a", "/x/a/in"} {
		must(t, "mkdir", k.mkdir(d, 0o777))
	}
	in, err := k.v.Lookup(&k.ctx, nil, "/x/a/in", 0)
	must(t, "lookup", err)
	valid := map[string]bool{"/x/a/in": true, "/y/b/in": true}
	stop := make(chan struct{})
	var bad atomic.Value
	var n atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		c := k.ctx
		for {
			select {
			case <-stop:
				return
			default:
			}
			p, err := k.v.Getcwd(&c, in)
			n.Add(1)
			if err != nil || !valid[p] {
				bad.Store(fmt.Sprintf("%q %v", p, err))
				return
			}
		}
	}()
	within(t, 60*time.Second, func() {
		c := k.ctx
		for range 3000 {
			must(t, "move", k.v.Rename(&c, nil, "/x/a", nil, "/y/b", 0))
			must(t, "move back", k.v.Rename(&c, nil, "/y/b", nil, "/x/a", 0))
		}
	})
	close(stop)
	<-done
	if b := bad.Load(); b != nil {
		t.Errorf("getcwd gave %s, not a path the directory had", b)
	}
	t.Logf("%d getcwd calls", n.Load())
}

// TestMountVersusRmdir races mounts on a directory against its removal:
// either the mount wins (rmdir is EBUSY) or the removal (mount is
// ENOENT); never a mount on a removed directory.
func TestMountVersusRmdir(t *testing.T) {
	k := newKernelSys(t)
	within(t, 60*time.Second, func() {
		for i := range 300 {
			path := fmt.Sprintf("/m%d", i)
			must(t, "mkdir", k.mkdir(path, 0o777))
			var mountErr, rmErr error
			var wg sync.WaitGroup
			wg.Add(2)
			go func() {
				defer wg.Done()
				c := k.ctx
				mountErr = k.v.Mount(&c, nil, path, newMemDir(), "tmpfs", 0)
			}()
			go func() {
				defer wg.Done()
				c := k.ctx
				rmErr = k.v.Rmdir(&c, nil, path)
			}()
			wg.Wait()
			switch {
			case mountErr == nil && rmErr == nil:
				t.Fatalf("%s: mounted and removed", path)
			case mountErr == nil:
				wantErr(t, "rmdir of a mount point", rmErr, linux.EBUSY)
				must(t, "umount", k.v.Unmount(&k.ctx, nil, path, 0))
				must(t, "rmdir", k.rmdir(path))
			case rmErr == nil:
				if !errors.Is(mountErr, linux.ENOENT) {
					t.Fatalf("%s: mount after rmdir: %v, want ENOENT", path, mountErr)
				}
			default:
				t.Fatalf("%s: mount %v, rmdir %v", path, mountErr, rmErr)
			}
		}
	})
}

func newMemDir() vfs.Inode {
	return tmpfs.New(tmpfs.Options{Dev: linux.MakeDev(0, 43), Mode: 0o755}).Root()
}
