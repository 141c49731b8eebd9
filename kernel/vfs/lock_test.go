package vfs

import (
	"errors"
	"testing"
	"time"

	"shortbread/kernel/abi/linux"
)

type nopFile struct{}

func (nopFile) Read(Blocking, []byte, int64) (int, error)  { return 0, nil }
func (nopFile) Write(Blocking, []byte, int64) (int, error) { return 0, nil }
func (nopFile) Release()                                   {}

func lockedFile(ino Inode) *OpenFile { return NewFile(ino, nopFile{}, linux.O_RDWR) }

// Two descriptor tables (processes) on one inode: conflicts, splits,
// merges, release on close, and nothing left in the table at the end.
func TestRecordLocks(t *testing.T) {
	ino := NewAnonInode(linux.S_IFREG|0o644, Owner{})
	f := lockedFile(ino)
	p1, p2 := NewFDTable(64), NewFDTable(64)
	if err := f.SetLock(p1, 10, linux.F_WRLCK, 0, 9, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.SetLock(p2, 20, linux.F_RDLCK, 5, 5, false, nil); !errors.Is(err, linux.EAGAIN) {
		t.Fatalf("conflicting lock: %v", err)
	}
	if err := f.SetLock(p1, 10, linux.F_UNLCK, 3, 4, false, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		start, end int64
		want       Lock
	}{
		{3, 4, Lock{Type: linux.F_UNLCK}},
		{0, 3, Lock{Type: linux.F_WRLCK, Start: 0, End: 2, PID: 10}},
		{4, MaxOffset, Lock{Type: linux.F_WRLCK, Start: 5, End: 9, PID: 10}},
	} {
		if got, _ := f.GetLock(p2, linux.F_RDLCK, c.start, c.end); got != c.want {
			t.Errorf("GetLock(%d, %d) = %+v, want %+v", c.start, c.end, got, c.want)
		}
	}
	// Filling the hole merges the three pieces back into one lock.
	if err := f.SetLock(p1, 10, linux.F_WRLCK, 3, 4, false, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := f.GetLock(p2, linux.F_RDLCK, 0, 0); got.Start != 0 || got.End != 9 {
		t.Errorf("after filling the hole: %+v", got)
	}
	if n := lockCount.Load(); n != 1 {
		t.Errorf("%d locks held, want 1 (merged)", n)
	}
	// A waiter wakes when the holder's locks go with a closed descriptor.
	done := make(chan error)
	go func() { done <- f.SetLock(p2, 20, linux.F_WRLCK, 0, 0, true, nil) }()
	select {
	case err := <-done:
		t.Fatalf("F_SETLKW returned while the lock was held: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	releaseLocks(ino, p1)
	if err := <-done; err != nil {
		t.Fatalf("F_SETLKW after release: %v", err)
	}
	releaseLocks(ino, p2)
	if lockCount.Load() != 0 || len(lockTable) != 0 {
		t.Errorf("after release: %d locks, %d inodes in the table", lockCount.Load(), len(lockTable))
	}
}

// A wait that would close a cycle of waiting owners is EDEADLK; an
// interrupted wait is EINTR.
func TestRecordLockDeadlock(t *testing.T) {
	ino := NewAnonInode(linux.S_IFREG|0o644, Owner{})
	f := lockedFile(ino)
	a, b := NewFDTable(64), NewFDTable(64)
	f.SetLock(a, 1, linux.F_WRLCK, 0, 0, false, nil)
	f.SetLock(b, 2, linux.F_WRLCK, 1, 1, false, nil)
	done := make(chan error)
	go func() { done <- f.SetLock(b, 2, linux.F_WRLCK, 0, 0, true, nil) }()
	for {
		lockMu.Lock()
		_, waiting := waitsFor[any(b)]
		lockMu.Unlock()
		if waiting {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := f.SetLock(a, 1, linux.F_WRLCK, 1, 1, true, nil); !errors.Is(err, linux.EDEADLK) {
		t.Fatalf("closing the cycle: %v, want EDEADLK", err)
	}
	intr := make(chan struct{})
	close(intr)
	if err := f.SetLock(NewFDTable(64), 3, linux.F_RDLCK, 0, 0, true, intr); !errors.Is(err, linux.EINTR) {
		t.Errorf("interrupted wait: %v", err)
	}
	releaseLocks(ino, a)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	releaseLocks(ino, b)
}
