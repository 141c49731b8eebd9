package vfs_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// eof reports whether a nonblocking read of the pipe end sees end of file
// (as opposed to EAGAIN: a writer still holds the pipe).
func eof(t *testing.T, r *vfs.OpenFile) bool {
	t.Helper()
	r.SetFlags(linux.O_NONBLOCK)
	n, err := r.Read(make([]byte, 1), nil)
	if errors.Is(err, linux.EAGAIN) {
		return false
	}
	if n != 0 || err != nil {
		t.Fatalf("read %d %v", n, err)
	}
	return true
}

func TestFDTableLimit(t *testing.T) {
	fdt := vfs.NewFDTable(4)
	r, w := newPipe(t)
	defer r.DecRef()
	defer w.DecRef()
	for want := 0; want < 4; want++ {
		fd, err := fdt.Install(r, false)
		if fd != want || err != nil {
			t.Fatalf("install %d: %d %v", want, fd, err)
		}
	}
	if _, err := fdt.Install(r, false); !errors.Is(err, linux.EMFILE) {
		t.Errorf("install past the limit: %v", err)
	}
	if _, err := fdt.Dup(0); !errors.Is(err, linux.EMFILE) {
		t.Errorf("dup past the limit: %v", err)
	}
	if _, err := fdt.DupFD(0, 4, false); !errors.Is(err, linux.EINVAL) {
		t.Errorf("F_DUPFD at the limit: %v", err)
	}
	if _, err := fdt.Dup2(0, 4); !errors.Is(err, linux.EBADF) {
		t.Errorf("dup2 at the limit: %v", err)
	}
	must(t, "close", fdt.Close(2))
	if fd, _ := fdt.Install(w, true); fd != 2 {
		t.Errorf("reused fd %d, want 2", fd)
	}
	// Lowering the limit keeps what is open and refuses new ones.
	must(t, "setlimit", fdt.SetLimit(2))
	if got := fmt.Sprint(fdt.FDs()); got != "[0 1 2 3]" {
		t.Errorf("fds after lowering the limit %s", got)
	}
	fdt.Close(0)
	if fd, err := fdt.Install(r, false); fd != 0 || err != nil {
		t.Errorf("install under the lowered limit: %d %v", fd, err)
	}
	fdt.Close(1)
	fdt.Close(0)
	if _, err := fdt.DupFD(3, 1, false); err != nil {
		t.Errorf("F_DUPFD below the limit: %v", err)
	}
	if _, err := fdt.DupFD(3, 1, false); !errors.Is(err, linux.EMFILE) {
		t.Errorf("F_DUPFD with nothing free below the limit: %v", err)
	}
	if err := fdt.SetLimit(linux.NR_OPEN + 1); !errors.Is(err, linux.EPERM) {
		t.Errorf("limit above nr_open: %v", err)
	}
	fdt.CloseAll()
	if len(fdt.FDs()) != 0 {
		t.Errorf("fds after CloseAll: %v", fdt.FDs())
	}
}

func TestFDTableReferences(t *testing.T) {
	fdt := vfs.NewFDTable(vfs.DefaultNOFILE)
	r, w := newPipe(t)
	defer r.DecRef()
	wfd, _ := fdt.Install(w, false)
	w.DecRef() // the table's reference is the only one left
	dup, _ := fdt.Dup(wfd)
	child := fdt.Fork()
	fdt.Close(wfd)
	fdt.Close(dup)
	if eof(t, r) {
		t.Fatal("EOF while the child's table holds the write end")
	}
	// A system call in progress holds the file even after close.
	held, err := child.Get(wfd)
	must(t, "get", err)
	child.CloseAll()
	if eof(t, r) {
		t.Fatal("EOF while a call holds the write end")
	}
	if _, err := child.Get(wfd); !errors.Is(err, linux.EBADF) {
		t.Errorf("get after close: %v", err)
	}
	held.DecRef()
	if !eof(t, r) {
		t.Error("no EOF after the last reference went")
	}
}

func TestFDTableCloseOnExec(t *testing.T) {
	fdt := vfs.NewFDTable(vfs.DefaultNOFILE)
	r, w := newPipe(t)
	defer r.DecRef()
	fdt.Install(r, false)
	keep, _ := fdt.Install(w, false)
	gone, _ := fdt.Install(w, true)
	d, _ := fdt.Dup3(keep, 10, linux.O_CLOEXEC)
	fdt.SetFDFlags(keep, 0)
	if fl, _ := fdt.FDFlags(gone); fl != linux.FD_CLOEXEC {
		t.Errorf("FD_CLOEXEC not set: %d", fl)
	}
	if _, err := fdt.FDFlags(99); !errors.Is(err, linux.EBADF) {
		t.Errorf("F_GETFD on a closed fd: %v", err)
	}
	w.DecRef()
	fdt.CloseOnExec()
	if got := fmt.Sprint(fdt.FDs()); got != fmt.Sprint([]int{0, keep}) {
		t.Errorf("after exec %s", got)
	}
	_ = d
	fdt.CloseRange(0, 100, true)
	if fl, _ := fdt.FDFlags(keep); fl != linux.FD_CLOEXEC {
		t.Error("close_range CLOEXEC did not set the flag")
	}
	fdt.CloseRange(1, 100, false)
	if got := fmt.Sprint(fdt.FDs()); got != "[0]" {
		t.Errorf("after close_range %s", got)
	}
	if !eof(t, r) {
		t.Error("write end still open")
	}
	fdt.CloseAll()
}

func TestFDTableInstallAt(t *testing.T) {
	fdt := vfs.NewFDTable(8)
	r, w := newPipe(t)
	defer r.DecRef()
	must(t, "install at 5", fdt.InstallAt(5, w, false))
	w.DecRef()
	if fd, _ := fdt.Install(r, false); fd != 0 {
		t.Errorf("lowest free is %d", fd)
	}
	must(t, "replace at 5", fdt.InstallAt(5, r, false))
	if !eof(t, r) {
		t.Error("replacing the only write end did not release it")
	}
	if err := fdt.InstallAt(8, r, false); !errors.Is(err, linux.EBADF) {
		t.Errorf("install at the limit: %v", err)
	}
	fdt.CloseAll()
}

// TestFDTableConcurrent installs, dups and closes from many goroutines
// sharing one table, as threads do; no descriptor may be handed out twice.
func TestFDTableConcurrent(t *testing.T) {
	fdt := vfs.NewFDTable(vfs.DefaultNOFILE)
	r, w := newPipe(t)
	defer r.DecRef()
	defer w.DecRef()
	var mu sync.Mutex
	owned := map[int]bool{}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				fd, err := fdt.Install(r, i%2 == 0)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if owned[fd] {
					t.Errorf("fd %d handed out twice", fd)
				}
				owned[fd] = true
				mu.Unlock()
				if i%3 == 0 {
					continue
				}
				mu.Lock()
				delete(owned, fd)
				mu.Unlock()
				if err := fdt.Close(fd); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if len(fdt.FDs()) != len(owned) {
		t.Errorf("%d fds open, %d expected", len(fdt.FDs()), len(owned))
	}
	fdt.CloseAll()
}
