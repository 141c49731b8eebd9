package mqueue

import (
	"errors"
	"testing"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// list lists the root directory as ReadDir gives it from pos.
func list(t *testing.T, pos int64) (names []string, next []int64) {
	t.Helper()
	err := root.ReadDir(pos, func(e vfs.DirEntry) bool {
		names, next = append(names, e.Name), append(next, e.Next)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return names, next
}

func TestFileSystem(t *testing.T) {
	queues0, charged0 := Stats()
	owner := vfs.Owner{UID: 1000, GID: 100}
	a, err := root.Create("fs-a", linux.S_IFREG|0o640, 0, owner)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := root.Create("fs-a", linux.S_IFREG|0o640, 0, owner); !errors.Is(err, linux.EEXIST) {
		t.Errorf("second create: %v, want EEXIST", err)
	}
	if _, err := root.Create("fs-dir", linux.S_IFDIR|0o755, 0, owner); !errors.Is(err, linux.EPERM) {
		t.Errorf("create of a directory: %v, want EPERM", err)
	}
	// mq_open sees a queue made through the file system, with the
	// default attributes, and its file is the same inode.
	q, err := Open(OpenArgs{Name: "fs-a", Flags: linux.O_RDWR, Cred: vfs.Cred{EUID: 1000, EGID: 100}, Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if q.node != a {
		t.Error("mq_open's queue is not the file's")
	}
	if at := q.Attr(); at.MaxMsg != 10 || at.MsgSize != 8192 {
		t.Errorf("attributes %+v, want the defaults 10 and 8192", at)
	}
	if at := a.Attr(); at.Mode != linux.S_IFREG|0o640 || at.UID != 1000 || at.GID != 100 || at.Size != fileSize {
		t.Errorf("file attributes %+v", at)
	}
	qb, err := Open(OpenArgs{Name: "b", Flags: linux.O_CREAT | linux.O_RDWR, Mode: 0o600,
		Cred: vfs.Cred{EUID: 1000}, Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	listed, next := list(t, 0)
	if len(listed) < 2 || listed[len(listed)-2] != "fs-a" || listed[len(listed)-1] != "b" {
		t.Fatalf("listed %v, want fs-a then b last (creation order)", listed)
	}
	// Positions survive a name going: listing from b's position gives b.
	posB := next[len(next)-2]
	if err := root.Unlink("fs-a"); err != nil {
		t.Fatal(err)
	}
	if got, _ := list(t, posB); len(got) != 1 || got[0] != "b" {
		t.Errorf("from b's position: %v", got)
	}
	if _, err := root.Lookup("fs-a"); !errors.Is(err, linux.ENOENT) {
		t.Errorf("lookup after unlink: %v", err)
	}
	// The open descriptor keeps the unlinked queue; its last close
	// gives it back, and the file cannot be opened again.
	f := &File{Q: q}
	f.Release()
	if _, err := a.(*node).OpenFor(nil, 0); !errors.Is(err, linux.ENOENT) {
		t.Errorf("open of a freed queue's file: %v, want ENOENT", err)
	}
	if err := Unlink("b", vfs.Cred{EUID: 1000}); err != nil {
		t.Fatal(err)
	}
	if queues, charged := Stats(); queues != queues0+1 || charged <= charged0 {
		// b is still open (Open's reference).
		t.Errorf("after unlinks: %d queues, %d bytes charged; want one left open", queues, charged)
	}
	(&File{Q: qb}).Release()
	if queues, charged := Stats(); queues != queues0 || charged != charged0 {
		t.Errorf("after the last close: %d queues, %d bytes charged; want %d, %d", queues, charged, queues0, charged0)
	}
	mu.Lock()
	n := len(names)
	mu.Unlock()
	if root.Attr().Size != int64(n)*direntSize {
		t.Errorf("directory size %d for %d names", root.Attr().Size, n)
	}
}
