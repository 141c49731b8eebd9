package vfs_test

import (
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/tmpfs"
	"shortbread/kernel/vfs"
)

// gateDir is a tmpfs directory whose Create of the name gate stops until
// the test releases it: the VFS meanwhile holds for that create what
// every create holds (lockName). It declares ConcurrentNames, as tmpfs
// does; renamesDir adds ConcurrentRenames, as ext4 does. (tmpfs's own
// Rename locks every shard of its directories, so it is safe under
// either.)
type gateDir struct {
	vfs.Dir
	gate    string
	entered chan struct{}
	release chan struct{}
}

func (d *gateDir) Create(name string, mode uint32, rdev uint64, owner vfs.Owner) (vfs.Inode, error) {
	if name == d.gate {
		close(d.entered)
		<-d.release
	}
	return d.Dir.Create(name, mode, rdev, owner)
}

// Rename hands tmpfs its own directory: it moves names only between
// its own.
func (d *gateDir) Rename(oldName string, newDir vfs.Dir, newName string, flags uint32) error {
	switch n := newDir.(type) {
	case *gateDir:
		newDir = n.Dir
	case renamesDir:
		newDir = n.Dir
	}
	return d.Dir.Rename(oldName, newDir, newName, flags)
}

func (d *gateDir) ConcurrentNames() {}

type renamesDir struct{ *gateDir }

func (renamesDir) ConcurrentRenames() {}

// pickName returns the first name n<i> not in taken for which ok holds
// of its lock.
func pickName(ok func(lock int) bool, taken ...string) string {
	for i := 0; ; i++ {
		if name := "n" + strconv.Itoa(i); ok(vfs.NameLock(name)) && !slices.Contains(taken, name) {
			return name
		}
	}
}

// TestRenameBesideCreate stops a create inside the file system and
// renames other names of its directory meanwhile (names whose locks
// differ from the created name's: a name's lock is one of 16 shared by
// the names hashed to it, with a hash seeded anew in each process). In a directory that
// declares ConcurrentRenames the rename must finish while the create
// waits (it takes only its names' locks; the VFS before issue 21 took
// the directory's lock for writing and waited), while a rename onto the
// name being created must wait for it, also when that name's lock comes
// second in the rename's order; in a ConcurrentNames directory
// without it (tmpfs) the rename waits for the create, as before.
func TestRenameBesideCreate(t *testing.T) {
	for _, renames := range []bool{true, false} {
		name := "ConcurrentNames"
		if renames {
			name = "ConcurrentRenames"
		}
		t.Run(name, func(t *testing.T) {
			// The created name's lock is neither the first nor the
			// last, so that b's can come before it.
			slow := pickName(func(l int) bool { return l > 0 && l < 15 })
			sl := vfs.NameLock(slow)
			g := &gateDir{
				Dir:     tmpfs.New(tmpfs.Options{Dev: linux.MakeDev(0, 43), Mode: 0o777}).Root().(vfs.Dir),
				gate:    slow,
				entered: make(chan struct{}),
				release: make(chan struct{}),
			}
			var root vfs.Dir = g
			if renames {
				root = renamesDir{g}
			}
			v, err := vfs.New(root, "gate")
			if err != nil {
				t.Fatal(err)
			}
			c := &vfs.Ctx{Root: v.Root(), Cwd: v.Root(), Umask: 0o22}
			an := pickName(func(l int) bool { return l != sl }, slow)
			a, b := "/"+an, "/"+pickName(func(l int) bool { return l < sl }, slow, an)
			must(t, "mknod "+a, v.Mknod(c, nil, a, linux.S_IFREG|0o644, 0))
			created := make(chan error, 1)
			go func() { created <- v.Mknod(c, nil, "/"+slow, linux.S_IFREG|0o644, 0) }()
			<-g.entered
			renamed := make(chan error, 1)
			go func() { renamed <- v.Rename(c, nil, a, nil, b, 0) }()
			onto := make(chan error, 1)
			if renames {
				select {
				case err := <-renamed:
					must(t, "rename "+a+" "+b, err)
				case <-time.After(30 * time.Second):
					close(g.release)
					t.Fatal("a rename of other names waited for a create in a ConcurrentRenames directory")
				}
				// One of the rename's names is being created: it waits.
				go func() { onto <- v.Rename(c, nil, b, nil, "/"+slow, 0) }()
			}
			select {
			case err := <-renamed:
				t.Errorf("rename a b finished (%v) during a create in a directory without ConcurrentRenames", err)
			case err := <-onto:
				t.Errorf("rename b slow finished (%v) during the create of slow", err)
			case <-time.After(100 * time.Millisecond):
			}
			close(g.release)
			must(t, "mknod "+slow, <-created)
			if renames {
				must(t, "rename b onto "+slow, <-onto)
				if _, err := v.Stat(c, nil, b, 0); !errors.Is(err, linux.ENOENT) {
					t.Errorf("stat b after its rename onto slow: %v", err)
				}
			} else {
				must(t, "rename "+a+" "+b, <-renamed)
				if _, err := v.Stat(c, nil, b, 0); err != nil {
					t.Errorf("stat b: %v", err)
				}
			}
			if _, err := v.Stat(c, nil, a, 0); !errors.Is(err, linux.ENOENT) {
				t.Errorf("stat a after its rename: %v", err)
			}
			if _, err := v.Stat(c, nil, "/"+slow, 0); err != nil {
				t.Errorf("stat slow: %v", err)
			}
		})
	}
}
