package vfs_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/tmpfs"
	"shortbread/kernel/vfs"
)

// TestCreateIntoRemovedDir races creators inside a directory against
// its removal and re-creation. Creation and removal of names hold only
// the directory's own lock (not the whole namespace's), so a creator
// that resolved the directory before an rmdir must notice it is gone:
// a file made in a removed directory would be lost, and its unlink,
// which resolves the path again, would fail. Every name that was made
// must be removable right after. Run with -race.
func TestCreateIntoRemovedDir(t *testing.T) {
	k := newKernelSys(t)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // the directory comes and goes
		defer wg.Done()
		c := k.ctx
		for {
			select {
			case <-stop:
				return
			default:
			}
			k.v.Mkdir(&c, nil, "/d", 0o777)
			k.v.Rmdir(&c, nil, "/d")
		}
	}()
	var lost sync.Map
	var made, madeDirs int
	var mu sync.Mutex
	var workers sync.WaitGroup
	for g := range 3 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			c := k.ctx
			// Until this worker has won the race 300 times; the bound
			// only stops a broken kernel from hanging the test.
			for i, won := 0, 0; won < 300; i++ {
				if i == 1_000_000 {
					t.Errorf("worker %d: %d creations in %d tries", g, won, i)
					return
				}
				name := fmt.Sprintf("/d/f%d-%d", g, i)
				if g == 2 { // subdirectories too: rmdir of /d must not remove a non-empty tree
					if k.v.Mkdir(&c, nil, name, 0o755) != nil {
						continue
					}
					won++
					mu.Lock()
					madeDirs++
					mu.Unlock()
					if err := k.v.Rmdir(&c, nil, name); err != nil {
						lost.Store(name, err)
					}
					continue
				}
				f, err := k.v.Open(&c, nil, name, linux.O_CREAT|linux.O_EXCL|linux.O_WRONLY, 0o644)
				if err != nil {
					if !errors.Is(err, linux.ENOENT) {
						lost.Store(name, err)
					}
					continue
				}
				f.DecRef()
				won++
				mu.Lock()
				made++
				mu.Unlock()
				if err := k.v.Unlink(&c, nil, name); err != nil {
					lost.Store(name, err)
				}
			}
		}()
	}
	workers.Wait()
	close(stop)
	wg.Wait()
	lost.Range(func(k, v any) bool {
		t.Errorf("%s: made, then %v", k, v)
		return true
	})
	t.Logf("%d files and %d directories made and removed", made, madeDirs)
}

// TestLookupDuringUnlink looks names up (missing the dentry cache, so
// asking the file system) while they are made and removed in the same
// directory. A lookup that asked the file system just before an unlink
// must not cache the name after it: once the churn stops, what the
// cache answers must be what the file system holds.
func TestLookupDuringUnlink(t *testing.T) {
	k := newKernelSys(t)
	k.mkdir("d", 0o777)
	const names = 8
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			c := k.ctx
			for i := range 3000 {
				name := fmt.Sprintf("/d/n%d", (i+g)%names)
				if f, err := k.v.Open(&c, nil, name, linux.O_CREAT|linux.O_WRONLY, 0o644); err == nil {
					f.DecRef()
				}
				k.v.Unlink(&c, nil, name)
			}
		}()
		go func() {
			defer wg.Done()
			c := k.ctx
			for i := range 6000 {
				k.v.Stat(&c, nil, fmt.Sprintf("/d/n%d", i%names), 0)
			}
		}()
	}
	wg.Wait()
	listed := map[string]bool{}
	fd, err := k.open("/d", linux.O_RDONLY|linux.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range readNames(t, k, fd) {
		listed[n] = true
	}
	k.close(fd)
	for i := range names {
		name := fmt.Sprintf("n%d", i)
		_, err := k.stat("d/" + name)
		if (err == nil) != listed[name] {
			t.Errorf("%s: stat says %v, the directory lists it: %v", name, err, listed[name])
		}
	}
}

// readNames lists a directory's names but "." and "..".
func readNames(t *testing.T, k *kernelSys, fd int) []string {
	t.Helper()
	f, err := k.file(fd)
	if err != nil {
		t.Fatal(err)
	}
	defer f.DecRef()
	var out []string
	buf := make([]byte, 4096)
	for {
		n, err := f.Getdents(buf)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return out
		}
		for off := 0; off < n; {
			reclen := int(buf[off+16]) | int(buf[off+17])<<8
			name := buf[off+19 : off+reclen]
			for i, b := range name {
				if b == 0 {
					name = name[:i]
					break
				}
			}
			if s := string(name); s != "." && s != ".." {
				out = append(out, s)
			}
			off += reclen
		}
	}
}

// TestUnlinkInLookupWindow puts an unlink of a name into the window of a
// cache-missing lookup of the same name, between the file system's
// answer and its caching. The unlink must wait for the lookup (the
// directory's lock, held for reading), or the lookup would cache a name
// that no longer exists. With the lock, the unlink cannot finish within
// the window and the hook stops waiting for it after a while; without
// it, the unlink finishes inside the window and the stale name shows.
func TestUnlinkInLookupWindow(t *testing.T) {
	// Names made in the file system before the tree exists are not in
	// the dentry cache, as with an initramfs.
	fs := tmpfs.New(tmpfs.Options{Dev: linux.MakeDev(0, 42), Mode: 0o755})
	root := fs.Root().(vfs.Dir)
	d, err := root.Create("d", linux.S_IFDIR|0o777, 0, vfs.Owner{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.(vfs.Dir).Create("z", linux.S_IFREG|0o644, 0, vfs.Owner{}); err != nil {
		t.Fatal(err)
	}
	v, err := vfs.New(fs.Root(), "tmpfs")
	if err != nil {
		t.Fatal(err)
	}
	c := vfs.Ctx{Root: v.Root(), Cwd: v.Root()}
	unlinked := make(chan error, 1)
	inWindow := false
	var first atomic.Bool
	vfs.SetLookupHook(func(_ *vfs.Dentry, name string) {
		if name != "z" || first.Swap(true) {
			return // the unlink's own lookup passes straight through
		}
		go func() {
			c := c
			unlinked <- v.Unlink(&c, nil, "/d/z")
		}()
		select {
		case err := <-unlinked:
			inWindow = true
			unlinked <- err
		case <-time.After(200 * time.Millisecond):
		}
	})
	defer vfs.SetLookupHook(nil)
	if _, err := v.Stat(&c, nil, "/d/z", 0); err != nil {
		t.Fatalf("stat before the unlink: %v", err)
	}
	if err := <-unlinked; err != nil {
		t.Fatalf("unlink: %v", err)
	}
	if inWindow {
		t.Errorf("the unlink finished while a lookup of the same name was between the file system and the cache")
	}
	if _, err := v.Stat(&c, nil, "/d/z", 0); !errors.Is(err, linux.ENOENT) {
		t.Errorf("stat after the unlink: %v, want ENOENT (a stale cached name)", err)
	}
}
