package vfs

import (
	"errors"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
)

// flock locks belong to open file descriptions: shared ones coexist, an
// exclusive one excludes, a waiter wakes when the holder's last
// reference goes, and nothing is left in the table afterwards.
func TestFlock(t *testing.T) {
	ino := NewAnonInode(linux.S_IFREG|0o644, Owner{})
	a, b := lockedFile(ino), lockedFile(ino)
	if err := a.Flock(linux.F_RDLCK, true, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Flock(linux.F_RDLCK, true, nil); err != nil {
		t.Fatalf("second shared lock: %v", err)
	}
	if err := b.Flock(linux.F_WRLCK, true, nil); !errors.Is(err, linux.EAGAIN) {
		t.Fatalf("upgrade past another shared lock: %v", err)
	}
	// The failed conversion dropped b's shared lock (as Linux does): a
	// can now convert to exclusive.
	if err := a.Flock(linux.F_WRLCK, true, nil); err != nil {
		t.Fatalf("upgrade once alone: %v", err)
	}
	// Record locks are independent of flock locks.
	if err := b.SetLock(nil, -1, linux.F_WRLCK, 0, MaxOffset, false, nil); err != nil {
		t.Fatalf("OFD lock beside a flock lock: %v", err)
	}
	b.SetLock(nil, -1, linux.F_UNLCK, 0, MaxOffset, false, nil)
	done := make(chan error)
	go func() { done <- b.Flock(linux.F_WRLCK, false, nil) }()
	select {
	case err := <-done:
		t.Fatalf("waiter did not wait: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	a.IncRef()
	a.DecRef() // not the last reference: the lock stays
	select {
	case err := <-done:
		t.Fatalf("lock went with a reference that was not the last: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	a.DecRef()
	if err := <-done; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	intr := make(chan struct{})
	close(intr)
	c := lockedFile(ino)
	if err := c.Flock(linux.F_RDLCK, false, intr); !errors.Is(err, linux.EINTR) {
		t.Fatalf("interrupted wait: %v", err)
	}
	if err := b.Flock(linux.F_UNLCK, false, nil); err != nil {
		t.Fatal(err)
	}
	c.DecRef()
	b.DecRef()
	lockMu.Lock()
	n := len(lockTable)
	lockMu.Unlock()
	if n != 0 || lockCount.Load() != 0 {
		t.Errorf("left behind: %d inodes, %d locks", n, lockCount.Load())
	}
}
