package vfs

import (
	"errors"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
)

type sigioCall struct {
	o    SigOwner
	sig  int
	code int32
	fd   int32
}

// catchSigio installs a sender that records calls, until the test ends.
func catchSigio(t *testing.T) chan sigioCall {
	calls := make(chan sigioCall, 16)
	old := sendSigio
	SetSigioSender(func(o SigOwner, sig int, code int32, band uint32, fd int32) {
		calls <- sigioCall{o, sig, code, fd}
	})
	t.Cleanup(func() { SetSigioSender(old) })
	return calls
}

// O_ASYNC on a pipe's read end: a write signals the owner with POLL_IN
// and the descriptor; turning it off and closing the file end the watch
// (no goroutine or queue registration is left behind).
func TestAsyncPipe(t *testing.T) {
	calls := catchSigio(t)
	r, w, err := NewPipe(linux.O_NONBLOCK, Owner{})
	if err != nil {
		t.Fatal(err)
	}
	e := r.file.(*pipeEnd)
	r.SetOwner(SigOwner{Kind: linux.F_OWNER_PID, ID: 7})
	r.SetSig(40)
	r.SetStatusFlags(linux.O_ASYNC|linux.O_NONBLOCK, 3)
	if n := e.p.rq.Waiters(); n != 1 {
		t.Fatalf("%d watchers after O_ASYNC, want 1", n)
	}
	if _, err := w.Write([]byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-calls:
		if c.o.ID != 7 || c.sig != 40 || c.code != linux.POLL_IN || c.fd != 3 {
			t.Errorf("signal %+v, want owner 7, sig 40, POLL_IN, fd 3", c)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("no signal on data")
	}
	r.SetStatusFlags(linux.O_NONBLOCK, 3)
	waitFor(t, func() bool { return e.p.rq.Waiters() == 0 }, "watch ended after O_ASYNC off")
	w.Write([]byte("y"), nil)
	select {
	case c := <-calls:
		t.Fatalf("signal with O_ASYNC off: %+v", c)
	case <-time.After(50 * time.Millisecond):
	}
	r.SetStatusFlags(linux.O_ASYNC, 4)
	r.DecRef()
	waitFor(t, func() bool { return e.p.rq.Waiters() == 0 }, "watch ended at release")
	w.DecRef()
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out: %s", what)
}

// A write lease broken by a reader: the holder is told (POLL_MSG, its
// descriptor), a non-blocking opener gets EAGAIN, a blocking one waits
// for the downgrade; an opener for writing waits for the unlock, which
// clears the owner; nothing is left in the lock table.
func TestLeaseBreak(t *testing.T) {
	calls := catchSigio(t)
	ino := NewAnonInode(linux.S_IFREG|0o644, Owner{})
	d := &Dentry{inode: ino, mode: linux.S_IFREG}
	f := NewFile(ino, nopFile{}, linux.O_RDONLY)
	f.dentry = d
	root := Root
	if err := f.SetLease(&root, 9, 5, linux.F_WRLCK); err != nil {
		t.Fatal(err)
	}
	if err := breakLease(ino, false, true, nil); !errors.Is(err, linux.EAGAIN) {
		t.Fatalf("non-blocking break: %v", err)
	}
	if c := <-calls; c.o.ID != 9 || c.code != linux.POLL_MSG || c.fd != 5 {
		t.Errorf("break notice %+v", c)
	}
	if got := f.Lease(); got != linux.F_RDLCK {
		t.Errorf("F_GETLEASE while breaking = %d, want F_RDLCK", got)
	}
	done := make(chan error)
	go func() { done <- breakLease(ino, false, false, nil) }()
	select {
	case err := <-done:
		t.Fatalf("reader did not wait: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	if err := f.SetLease(&root, 9, 5, linux.F_RDLCK); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("reader after downgrade: %v", err)
	}
	go func() { done <- breakLease(ino, true, false, nil) }()
	<-calls
	if err := f.SetLease(&root, 9, 5, linux.F_UNLCK); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("writer after unlock: %v", err)
	}
	if o := f.Owner(); o.ID != 0 {
		t.Errorf("owner after the lease's end: %+v", o)
	}
	f.DecRef()
	lockMu.Lock()
	n := len(lockTable)
	lockMu.Unlock()
	if n != 0 || lockCount.Load() != 0 {
		t.Errorf("left behind: %d inodes, %d locks", n, lockCount.Load())
	}
}
