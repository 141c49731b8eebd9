package vfs

import (
	"hash/maphash"
	"sync"
	"sync/atomic"

	"shortbread/kernel/abi/linux"
)

// Text-busy files. A program runs from its file's own pages (exec maps
// them copy-on-write), so writing the file would change the running
// program under it. As Linux's deny_write_access does, a file that a
// process is running cannot be opened for writing or truncated
// (ETXTBSY), and a file open for writing cannot be run.
//
// The counts are atomics of the inode (AccessCounts, Linux's
// i_writecount and i_readcount), so that opens and closes of one file
// from several CPUs take no lock: every open and close of a regular file
// counts here, and a lock per inode (or per shard of inodes) was where
// opens of one shared file waited (bench/results/lockprof-files-*.md).
// Inodes that do not keep their own counts are counted in a table
// sharded by inode.

// AccessCounts are an inode's counts of the open files that may write
// it, the processes running it and the open files that only read it. A
// file system embeds them in its regular files' inodes, which makes
// those inodes AccessCounters. The zero value is no opens and no runs.
type AccessCounts struct {
	// write is the number of open files that may write the inode, or,
	// when negative, minus the number of processes running it: the two
	// exclude each other, and one compare-and-swap checks one and
	// changes the other.
	write atomic.Int64
	read  atomic.Int64 // open files that only read the inode (leases)
}

// Counts returns the counts themselves: embedding AccessCounts gives an
// inode this method.
func (a *AccessCounts) Counts() *AccessCounts { return a }

// AccessCounter is implemented by inodes that keep their own
// AccessCounts (by embedding them).
type AccessCounter interface {
	Counts() *AccessCounts
}

// countedElsewhere is the entry of an inode that keeps no counts of its
// own, while someone counts or its counts are not zero.
type countedElsewhere struct {
	AccessCounts
	users int // callers between countsOf and done; protected by the shard's mu
}

type countShard struct {
	mu      sync.Mutex
	entries map[Inode]*countedElsewhere // protected by mu
}

const countShards = 64

var (
	counted   [countShards]countShard
	countSeed = maphash.MakeSeed()
)

func countShardOf(ino Inode) uint64 { return maphash.Comparable(countSeed, ino) % countShards }

// countsOf returns ino's counts; the caller calls done(ino) when it has
// changed or read them.
func countsOf(ino Inode) *AccessCounts {
	if c, ok := ino.(AccessCounter); ok {
		return c.Counts()
	}
	s := &counted[countShardOf(ino)]
	s.mu.Lock()
	e := s.entries[ino]
	if e == nil {
		if s.entries == nil {
			s.entries = make(map[Inode]*countedElsewhere)
		}
		e = &countedElsewhere{}
		s.entries[ino] = e
	}
	e.users++
	s.mu.Unlock()
	return &e.AccessCounts
}

// done ends a use of countsOf(ino). The table forgets an inode whose
// counts are back to zero when no one else is using them: changes are
// made only between countsOf and done, so none can be under way.
func done(ino Inode) {
	if _, ok := ino.(AccessCounter); ok {
		return
	}
	s := &counted[countShardOf(ino)]
	s.mu.Lock()
	e := s.entries[ino]
	if e.users--; e.users == 0 && e.write.Load() == 0 && e.read.Load() == 0 {
		delete(s.entries, ino)
	}
	s.mu.Unlock()
}

// addUnless adds delta to v unless v's sign is stop's (stop is 1 or -1),
// and reports whether it did: get_write_access's
// atomic_inc_unless_negative and deny_write_access's
// atomic_dec_unless_positive.
func addUnless(v *atomic.Int64, delta, stop int64) bool {
	for {
		n := v.Load()
		if n*stop > 0 {
			return false
		}
		if v.CompareAndSwap(n, n+delta) {
			return true
		}
	}
}

// getWriteAccess counts a new writer of ino, or fails with ETXTBSY if a
// process runs it.
func getWriteAccess(ino Inode) error {
	a := countsOf(ino)
	defer done(ino)
	if !addUnless(&a.write, 1, -1) {
		return linux.ETXTBSY
	}
	return nil
}

func putWriteAccess(ino Inode) {
	countsOf(ino).write.Add(-1)
	done(ino)
}

// checkNotRunning fails with ETXTBSY if a process runs ino (truncate(2)).
func checkNotRunning(ino Inode) error {
	a := countsOf(ino)
	defer done(ino)
	if a.write.Load() < 0 {
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
	a := countsOf(ino)
	defer done(ino)
	if !addUnless(&a.write, -1, 1) {
		return nil, linux.ETXTBSY
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			countsOf(ino).write.Add(1)
			done(ino)
		})
	}, nil
}

// getReadAccess counts a new read-only opener of a regular file: a write
// lease needs there to be none but the holder (lease.go).
func getReadAccess(ino Inode) {
	countsOf(ino).read.Add(1)
	done(ino)
}

func putReadAccess(ino Inode) {
	countsOf(ino).read.Add(-1)
	done(ino)
}

// openCounts returns how many open files read only and may write ino.
func openCounts(ino Inode) (r, w int) {
	a := countsOf(ino)
	defer done(ino)
	return int(a.read.Load()), int(max(a.write.Load(), 0))
}
