package vfs_test

// Lock-free descriptor look-ups (FDTable.Get) against close, dup2 and
// growth of the same table on other goroutines; best run with -race.

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// trackedFile is a File that knows how many calls are using it and
// complains if it is released while one is, or released twice.
type trackedFile struct {
	t        *testing.T
	id       int
	users    atomic.Int32 // calls between Get and DecRef
	released atomic.Int32
}

func (f *trackedFile) Read(vfs.Blocking, []byte, int64) (int, error) {
	if f.released.Load() != 0 {
		f.t.Errorf("file %d read after its release", f.id)
	}
	return 0, nil
}

func (f *trackedFile) Write(vfs.Blocking, []byte, int64) (int, error) { return 0, linux.EBADF }

func (f *trackedFile) Release() {
	if n := f.users.Load(); n != 0 {
		f.t.Errorf("file %d released while %d calls use it", f.id, n)
	}
	if f.released.Add(1) != 1 {
		f.t.Errorf("file %d released twice", f.id)
	}
}

// tracked makes n open files over trackedFiles, each with the one
// reference NewFile gives.
func tracked(t *testing.T, n int) ([]*vfs.OpenFile, []*trackedFile) {
	files := make([]*vfs.OpenFile, n)
	impls := make([]*trackedFile, n)
	for i := range files {
		impls[i] = &trackedFile{t: t, id: i}
		files[i] = vfs.NewFile(vfs.NewAnonInode(linux.S_IFIFO|0o600, vfs.Owner{}), impls[i], linux.O_RDONLY)
	}
	return files, impls
}

// useFD is a system call on fd: look it up, use the file, drop it. It
// returns the file's index, or -1 for EBADF.
func useFD(t *testing.T, fdt *vfs.FDTable, fd int) int {
	f, err := fdt.Get(fd)
	if err != nil {
		if !errors.Is(err, linux.EBADF) {
			t.Errorf("get %d: %v", fd, err)
		}
		return -1
	}
	impl := f.Impl().(*trackedFile)
	impl.users.Add(1)
	f.Read(make([]byte, 1), nil)
	runtime.Gosched() // let a close run while the call holds the file
	impl.users.Add(-1)
	f.DecRef()
	return impl.id
}

// TestFDTableGetRacesClose has calls on one descriptor race a thread that
// keeps closing it, putting fresh files there and dup2'ing other
// descriptors onto it: every call sees a file or EBADF, no file is
// released while a call uses it or twice, and every file is released
// once all is closed.
func TestFDTableGetRacesClose(t *testing.T) {
	const target, other, rounds = 3, 4, 500
	files, impls := tracked(t, rounds+1)
	fdt := vfs.NewFDTable(vfs.DefaultNOFILE)
	must(t, "install other", fdt.InstallAt(other, files[rounds], false))
	files[rounds].DecRef()
	var stop atomic.Bool
	var wg sync.WaitGroup
	seen := make([]atomic.Int32, rounds+1)
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if id := useFD(t, fdt, target); id >= 0 {
					seen[id].Add(1)
				}
			}
		}()
	}
	for i := 0; i < rounds; i++ {
		must(t, "install", fdt.InstallAt(target, files[i], i%2 == 0))
		files[i].DecRef() // the table's is the only reference left
		switch i % 3 {
		case 0:
			must(t, "close", fdt.Close(target))
		case 1:
			if _, err := fdt.Dup2(other, target); err != nil {
				t.Fatal(err)
			}
		}
		runtime.Gosched()
	}
	stop.Store(true)
	wg.Wait()
	fdt.CloseAll()
	for i, f := range impls {
		if f.released.Load() != 1 {
			t.Errorf("file %d released %d times", i, f.released.Load())
		}
	}
	if _, err := fdt.Get(target); !errors.Is(err, linux.EBADF) {
		t.Errorf("get after CloseAll: %v", err)
	}
	n := 0
	for i := range seen {
		if seen[i].Load() > 0 {
			n++
		}
	}
	t.Logf("calls saw %d of %d files", n, len(seen))
}

// TestFDTableGetDuringGrowth looks descriptors up while other goroutines
// install files far up the table, which makes it publish larger copies
// of its slots: a descriptor open throughout is always found, with its
// own file.
func TestFDTableGetDuringGrowth(t *testing.T) {
	files, impls := tracked(t, 2)
	fdt := vfs.NewFDTable(1 << 16)
	must(t, "install", fdt.InstallAt(5, files[0], false))
	files[0].DecRef()
	var stop atomic.Bool
	var wg sync.WaitGroup
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if id := useFD(t, fdt, 5); id != 0 {
					t.Errorf("fd 5 gave file %d", id)
					return
				}
			}
		}()
	}
	for fd := 64; fd < 1<<16; fd = fd*2 + 1 {
		must(t, "install high", fdt.InstallAt(fd, files[1], false))
		runtime.Gosched()
	}
	stop.Store(true)
	wg.Wait()
	files[1].DecRef()
	if got := len(fdt.FDs()); got != 11 {
		t.Errorf("%d descriptors open, want 11", got)
	}
	child := fdt.Fork()
	fdt.CloseAll()
	if impls[0].released.Load() != 0 || impls[1].released.Load() != 0 {
		t.Error("released while the forked table holds the files")
	}
	if id := useFD(t, child, 519); id != 1 {
		t.Errorf("the copy's fd 519 gave %d", id)
	}
	child.CloseAll()
	for i, f := range impls {
		if f.released.Load() != 1 {
			t.Errorf("file %d released %d times", i, f.released.Load())
		}
	}
}

// TestFDTableGetRacesCloseOnExec races look-ups with exec's closing of
// FD_CLOEXEC descriptors and close_range: a descriptor without the flag
// always stays, one with it goes once.
func TestFDTableGetRacesCloseOnExec(t *testing.T) {
	files, impls := tracked(t, 2)
	fdt := vfs.NewFDTable(vfs.DefaultNOFILE)
	keep, _ := fdt.Install(files[0], false)
	gone, _ := fdt.Install(files[1], true)
	files[0].DecRef()
	files[1].DecRef()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 1000; i++ {
			if id := useFD(t, fdt, keep); id != 0 {
				t.Errorf("kept fd gave %d", id)
				return
			}
			useFD(t, fdt, gone)
		}
	}()
	runtime.Gosched()
	fdt.CloseOnExec()
	wg.Wait()
	if impls[1].released.Load() != 1 || impls[0].released.Load() != 0 {
		t.Errorf("after exec: released %d, %d", impls[0].released.Load(), impls[1].released.Load())
	}
	fdt.CloseRange(0, 100, false)
	if impls[0].released.Load() != 1 {
		t.Error("close_range left the file")
	}
}

// TestFDTableGetWindow changes the descriptor inside Get, after it found
// the file and before it took its reference: Get must not revive a file
// whose count went to zero, nor return one the descriptor no longer
// names.
func TestFDTableGetWindow(t *testing.T) {
	files, impls := tracked(t, 3)
	fdt := vfs.NewFDTable(vfs.DefaultNOFILE)
	for i, f := range files {
		must(t, "install", fdt.InstallAt(3+i, f, false))
		f.DecRef()
	}
	once := func(f func()) func(int) {
		var done bool
		return func(int) {
			if !done {
				done = true
				f()
			}
		}
	}
	defer vfs.SetGetHook(nil)

	// dup2 onto fd 3 while file 0 lives on at fd 6: the new file.
	must(t, "dup fd 3", fdt.InstallAt(6, files[0], false))
	vfs.SetGetHook(once(func() { fdt.Dup2(4, 3) }))
	if id := useFD(t, fdt, 3); id != 1 {
		t.Errorf("get across dup2 gave file %d, want 1", id)
	}

	// Close the last descriptor of file 2: released, never revived.
	vfs.SetGetHook(once(func() { fdt.Close(5) }))
	if id := useFD(t, fdt, 5); id != -1 {
		t.Errorf("get across the last close gave file %d", id)
	}
	if impls[2].released.Load() != 1 {
		t.Errorf("file 2 released %d times", impls[2].released.Load())
	}

	// Close the last descriptor of file 0 and put file 1 there.
	vfs.SetGetHook(once(func() {
		fdt.Close(6)
		fdt.Dup2(4, 6)
	}))
	if id := useFD(t, fdt, 6); id != 1 {
		t.Errorf("get across close and dup2 gave file %d, want 1", id)
	}
	vfs.SetGetHook(nil)
	fdt.CloseAll()
	for i, f := range impls {
		if f.released.Load() != 1 {
			t.Errorf("file %d released %d times", i, f.released.Load())
		}
	}
}
