package vfs_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// Creates in one directory make their inodes and dentries before they
// take the directory's lock, which then covers only the check that the
// name is free and its insertion. These tests race creates of the same
// names, and creates against the directory's removal. Run with -race.

// TestCreateSameNames has workers create the same names with O_EXCL in
// one directory: each name is made exactly once, and what the dentry
// cache holds is what the file system has under the name.
func TestCreateSameNames(t *testing.T) {
	k := newKernelSys(t)
	must(t, "mkdir", k.mkdir("/d", 0o777))
	const workers, names = 6, 300
	var made [names]atomic.Int32
	within(t, 60*time.Second, func() {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := k.ctx
				for i := range names {
					n := (i + w*names/workers) % names
					f, err := k.v.Open(&c, nil, fmt.Sprintf("/d/f%d", n), linux.O_CREAT|linux.O_EXCL|linux.O_WRONLY, 0o644)
					switch {
					case err == nil:
						made[n].Add(1)
						if _, err := f.Write([]byte{byte(n)}, nil); err != nil {
							t.Errorf("write f%d: %v", n, err)
						}
						f.DecRef()
					case !errors.Is(err, linux.EEXIST):
						t.Errorf("create f%d: %v", n, err)
					}
				}
			}()
		}
		wg.Wait()
	})
	for n := range names {
		if m := made[n].Load(); m != 1 {
			t.Errorf("f%d made %d times, want once", n, m)
		}
		s, err := k.stat(fmt.Sprintf("/d/f%d", n))
		if err != nil || s.Size != 1 {
			t.Errorf("f%d: stat %+v, %v; want one byte", n, s, err)
		}
	}
	if s, err := k.stat("/d"); err != nil || s.Nlink != 2 {
		t.Errorf("/d: %+v, %v; want 2 links", s, err)
	}
}

// TestCreateVersusRmdir creates files in a directory while another
// worker removes it: every create either fails with ENOENT or leaves a
// name that makes the removal fail with ENOTEMPTY, never a file in a
// removed directory.
func TestCreateVersusRmdir(t *testing.T) {
	k := newKernelSys(t)
	within(t, 60*time.Second, func() {
		for round := range 200 {
			must(t, "mkdir", k.mkdir("/d", 0o777))
			dir, err := k.v.Lookup(&k.ctx, nil, "/d", 0)
			if err != nil {
				t.Fatal(err)
			}
			var created atomic.Bool
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := k.ctx
				f, err := k.v.Open(&c, dir, "f", linux.O_CREAT|linux.O_WRONLY, 0o644)
				switch {
				case err == nil:
					created.Store(true)
					f.DecRef()
				case !errors.Is(err, linux.ENOENT):
					t.Errorf("round %d: create: %v", round, err)
				}
			}()
			err = k.rmdir("/d")
			wg.Wait()
			switch {
			case err == nil && created.Load():
				t.Fatalf("round %d: a file was created in a directory that was removed", round)
			case err != nil && !errors.Is(err, linux.ENOTEMPTY):
				t.Fatalf("round %d: rmdir: %v", round, err)
			case err != nil && !created.Load():
				t.Fatalf("round %d: rmdir failed with ENOTEMPTY but nothing was created", round)
			}
			if err != nil {
				must(t, "unlink", k.unlink("/d/f"))
				must(t, "rmdir", k.rmdir("/d"))
			}
		}
	})
}

// TestCreatePermissionOrder checks that the permission a create needs is
// asked only of names that do not exist: O_CREAT opens an existing file
// in a directory the caller may not write (even one not yet in the
// dentry cache), and fails with EACCES only for a new name.
func TestCreatePermissionOrder(t *testing.T) {
	k := newKernelSys(t)
	must(t, "mkdir", k.mkdir("/ro", 0o755))
	f, err := k.v.Open(&k.ctx, nil, "/ro/there", linux.O_CREAT|linux.O_WRONLY, 0o666)
	must(t, "create", err)
	f.DecRef()
	user := k.ctx
	user.Cred = vfs.Cred{UID: 1000, GID: 1000, EUID: 1000, EGID: 1000}
	f, err = k.v.Open(&user, nil, "/ro/there", linux.O_CREAT|linux.O_RDONLY, 0o644)
	if err != nil {
		t.Errorf("O_CREAT of an existing file in a read-only directory: %v", err)
	} else {
		f.DecRef()
	}
	// A name the file system has but the dentry cache does not yet.
	ro, err := k.v.Lookup(&k.ctx, nil, "/ro", 0)
	must(t, "lookup", err)
	_, err = ro.Inode().(vfs.Dir).Create("uncached", linux.S_IFREG|0o644, 0, vfs.Owner{})
	must(t, "create behind the cache", err)
	f, err = k.v.Open(&user, nil, "/ro/uncached", linux.O_CREAT|linux.O_RDONLY, 0o644)
	if err != nil {
		t.Errorf("O_CREAT of an existing uncached file in a read-only directory: %v", err)
	} else {
		f.DecRef()
	}
	_, err = k.v.Open(&user, nil, "/ro/new", linux.O_CREAT|linux.O_RDONLY, 0o644)
	wantErr(t, "O_CREAT of a new name in a read-only directory", err, linux.EACCES)
}
