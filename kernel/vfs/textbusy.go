package vfs

import (
	"hash/maphash"
	"sync"

	"shortbread/kernel/abi/linux"
)

// Text-busy files. A program runs from its file's own pages (exec maps
// them copy-on-write), so writing the file would change the running
// program under it. As Linux's deny_write_access does, a file that a
// process is running cannot be opened for writing or truncated
// (ETXTBSY), and a file open for writing cannot be run.
//
// The counts are kept in shards by inode, so that opens and closes of
// different files do not meet on one lock (every open and close of a
// regular file counts here: bench/results/lockprof-files-2026-11-25.md).

type busyShard struct {
	mu      sync.Mutex
	writers map[Inode]int // open files that may write the inode
	readers map[Inode]int // open files that only read the inode (leases)
	running map[Inode]int // processes running the inode
}

const busyShards = 64

var (
	busy     [busyShards]busyShard
	busySeed = maphash.MakeSeed()
)

func init() {
	for i := range busy {
		busy[i] = busyShard{writers: map[Inode]int{}, readers: map[Inode]int{}, running: map[Inode]int{}}
	}
}

// shardOf returns ino's shard, locked.
func shardOf(ino Inode) *busyShard {
	s := &busy[maphash.Comparable(busySeed, ino)%busyShards]
	s.mu.Lock()
	return s
}

func dec(m map[Inode]int, ino Inode) {
	if m[ino]--; m[ino] <= 0 {
		delete(m, ino)
	}
}

// getWriteAccess counts a new writer of ino, or fails with ETXTBSY if a
// process runs it.
func getWriteAccess(ino Inode) error {
	s := shardOf(ino)
	defer s.mu.Unlock()
	if s.running[ino] > 0 {
		return linux.ETXTBSY
	}
	s.writers[ino]++
	return nil
}

func putWriteAccess(ino Inode) {
	s := shardOf(ino)
	dec(s.writers, ino)
	s.mu.Unlock()
}

// checkNotRunning fails with ETXTBSY if a process runs ino (truncate(2)).
func checkNotRunning(ino Inode) error {
	s := shardOf(ino)
	defer s.mu.Unlock()
	if s.running[ino] > 0 {
		return linux.ETXTBSY
	}
	return nil
}

// DenyWrite marks the file d as run by one more process: it fails with
// ETXTBSY while the file is open for writing. The returned function ends
// the hold (when the process runs another program or exits); it may be
// called once.
func DenyWrite(d *Dentry) (release func(), err error) {
	ino := d.inode
	s := shardOf(ino)
	defer s.mu.Unlock()
	if s.writers[ino] > 0 {
		return nil, linux.ETXTBSY
	}
	s.running[ino]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s := shardOf(ino)
			dec(s.running, ino)
			s.mu.Unlock()
		})
	}, nil
}

// getReadAccess counts a new read-only opener of a regular file: a write
// lease needs there to be none but the holder (lease.go).
func getReadAccess(ino Inode) {
	s := shardOf(ino)
	s.readers[ino]++
	s.mu.Unlock()
}

func putReadAccess(ino Inode) {
	s := shardOf(ino)
	dec(s.readers, ino)
	s.mu.Unlock()
}

// openCounts returns how many open files read only and may write ino.
func openCounts(ino Inode) (r, w int) {
	s := shardOf(ino)
	defer s.mu.Unlock()
	return s.readers[ino], s.writers[ino]
}
