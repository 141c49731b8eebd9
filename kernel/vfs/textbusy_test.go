package vfs

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"shortbread/kernel/abi/linux"
)

// countedInode keeps its own access counts; plainInode is counted in the
// sharded table.
type countedInode struct {
	AccessCounts
	plainInode
}

type plainInode struct{ ino uint64 }

func (p *plainInode) Attr() Attr             { return Attr{Ino: p.ino, Mode: linux.S_IFREG | 0o755, Nlink: 1} }
func (p *plainInode) SetAttr(*SetAttr) error { return nil }

func tableHolds(ino Inode) bool {
	s := &counted[countShardOf(ino)]
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.entries[ino]
	return ok
}

func TestTextBusy(t *testing.T) {
	for _, ino := range []Inode{&countedInode{plainInode: plainInode{1}}, &plainInode{2}} {
		_, own := ino.(AccessCounter)
		d := &Dentry{inode: ino, mode: linux.S_IFREG}
		if err := getWriteAccess(ino); err != nil {
			t.Fatalf("own=%v: first writer: %v", own, err)
		}
		if _, err := DenyWrite(d); !errors.Is(err, linux.ETXTBSY) {
			t.Errorf("own=%v: running a file open for writing: %v, want ETXTBSY", own, err)
		}
		getReadAccess(ino)
		if r, w := openCounts(ino); r != 1 || w != 1 {
			t.Errorf("own=%v: counts %d readers, %d writers; want 1, 1", own, r, w)
		}
		putWriteAccess(ino)
		release, err := DenyWrite(d)
		if err != nil {
			t.Fatalf("own=%v: running a file no one writes: %v", own, err)
		}
		release2, err := DenyWrite(d)
		if err != nil {
			t.Fatalf("own=%v: a second process running it: %v", own, err)
		}
		if err := getWriteAccess(ino); !errors.Is(err, linux.ETXTBSY) {
			t.Errorf("own=%v: writing a running file: %v, want ETXTBSY", own, err)
		}
		if err := checkNotRunning(ino); !errors.Is(err, linux.ETXTBSY) {
			t.Errorf("own=%v: truncating a running file: %v, want ETXTBSY", own, err)
		}
		if r, w := openCounts(ino); r != 1 || w != 0 {
			t.Errorf("own=%v: counts while running %d, %d; want 1 reader, 0 writers", own, r, w)
		}
		release()
		release() // once only: the second process still runs it
		if err := getWriteAccess(ino); !errors.Is(err, linux.ETXTBSY) {
			t.Errorf("own=%v: writing a file one process still runs: %v, want ETXTBSY", own, err)
		}
		release2()
		if err := checkNotRunning(ino); err != nil {
			t.Errorf("own=%v: truncating a file no one runs: %v", own, err)
		}
		putReadAccess(ino)
		if r, w := openCounts(ino); r != 0 || w != 0 {
			t.Errorf("own=%v: counts at the end %d, %d; want 0, 0", own, r, w)
		}
		if !own && tableHolds(ino) {
			t.Errorf("the table still holds an inode whose counts are all zero")
		}
	}
}

// TestTextBusyRaces runs writers, runners and readers of one file at
// once: a writer and a runner must never hold it together, and the
// counts must come back to zero.
func TestTextBusyRaces(t *testing.T) {
	for _, ino := range []Inode{&countedInode{plainInode: plainInode{1}}, &plainInode{2}} {
		_, own := ino.(AccessCounter)
		d := &Dentry{inode: ino, mode: linux.S_IFREG}
		var writers, runners, both, wrote, ran atomic.Int64
		var wg sync.WaitGroup
		for g := 0; g < 6; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 2000; i++ {
					switch (g + i) % 3 {
					case 0:
						if getWriteAccess(ino) != nil {
							continue
						}
						writers.Add(1)
						if runners.Load() > 0 {
							both.Add(1)
						}
						wrote.Add(1)
						writers.Add(-1)
						putWriteAccess(ino)
					case 1:
						release, err := DenyWrite(d)
						if err != nil {
							continue
						}
						runners.Add(1)
						if writers.Load() > 0 {
							both.Add(1)
						}
						ran.Add(1)
						runners.Add(-1)
						release()
					default:
						getReadAccess(ino)
						putReadAccess(ino)
					}
				}
			}()
		}
		wg.Wait()
		if both.Load() != 0 {
			t.Errorf("own=%v: a writer and a runner held the file together %d times", own, both.Load())
		}
		if wrote.Load() == 0 || ran.Load() == 0 {
			t.Errorf("own=%v: %d writes and %d runs: each kind should have got in", own, wrote.Load(), ran.Load())
		}
		if r, w := openCounts(ino); r != 0 || w != 0 || checkNotRunning(ino) != nil {
			t.Errorf("own=%v: counts at the end %d readers, %d writers, running %v", own, r, w, checkNotRunning(ino))
		}
		if !own && tableHolds(ino) {
			t.Errorf("the table still holds an inode whose counts are all zero")
		}
	}
}
