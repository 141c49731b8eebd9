package ext4

// Handles: changes made side by side. The operations a file churn is
// made of (Create, WriteAt of a small write, Unlink of a small file) run
// holding FS.mu only for reading, as jbd2's handles join the running
// transaction: hbegin reserves room in the transaction for what one
// such operation logs (handleCredits blocks) and counts the operation
// open (FS.handles, jbd2's t_updates); a commit, and every operation
// still made whole under FS.mu held for writing, waits for the open
// ones to end, since taking FS.mu for writing waits for its readers.
// So a transaction closes only between handles, with every block they
// changed whole, as before.
//
// What a handle changes is guarded by finer locks, each under FS.mu
// held for reading:
//   - an inode's fields and, for a directory, its entries, by the
//     inode's lock (ilock: striped by inode number), held for writing by
//     the handle that changes it and for reading by the operations that
//     only read it (Stat, Lookup, ReadDir, ...). An inode table block
//     holds several inodes: each lock covers only its inode's bytes in
//     it, and its file's extent blocks and pages' map;
//   - the bitmaps, the group descriptors and the superblock's counts and
//     orphan list head, by allocMu (the allocator's lock);
//   - the running transaction's block list, reservations and freed
//     blocks, by jmu;
//   - the page cache's maps by inode (files, maps, ordered, unsynced,
//     dataErr), by pagesMu.
//
// A handle that finds it cannot finish side by side before it changed
// anything (a second inode's lock held by another, a file too big to
// free within its credits, the disk full while freed blocks are held
// back, which only a commit gives back) returns errExclusive, and the
// operation runs again holding FS.mu for writing.

import (
	"errors"
	"sync"
)

// inodeLockStripes is the number of inode locks; inode n takes lock n
// modulo it, so two inodes may share one (the lock order below takes
// that into account).
const inodeLockStripes = 64

// handleCredits is the most metadata blocks a handle's operation logs:
// an inode and a directory block or two, an htree split, the bitmaps
// and descriptors of the few groups a small file's blocks sit in, and
// its extent blocks.
const handleCredits = 64

// handleMaxWrite is the largest write made side by side: a bigger one
// may allocate more blocks than a handle's credits cover.
const handleMaxWrite = 64 << 10

// handleMaxFree is the most 512-byte sectors a file freed by a handle
// may hold (1 MiB): a bigger one may touch more groups than its
// credits cover.
const handleMaxFree = 2048

// errExclusive says an operation tried side by side must run again
// holding FS.mu for writing; nothing was changed.
var errExclusive = errors.New("ext4: operation needs the file system to itself")

// ilock returns inode ino's lock.
func (fs *FS) ilock(ino uint32) *sync.RWMutex {
	return &fs.ilocks[ino%inodeLockStripes]
}

// dirLocks are what a handle that changes a directory holds: the
// directory's inode lock and, once try took it, a second inode's.
type dirLocks struct {
	fs       *FS
	dir, ino *sync.RWMutex
}

// lockDir takes dir's inode lock for a handle.
func (fs *FS) lockDir(dir uint32) *dirLocks {
	l := &dirLocks{fs: fs, dir: fs.ilock(dir)}
	l.dir.Lock()
	return l
}

// try takes inode n's lock unless another holds it (a handle never
// waits for a second inode's lock); n may share the directory's stripe.
func (l *dirLocks) try(n uint32) bool {
	if m := l.fs.ilock(n); m != l.dir {
		if !m.TryLock() {
			return false
		}
		l.ino = m
	}
	return true
}

// unlock releases what the handle took.
func (l *dirLocks) unlock() {
	if l.ino != nil {
		l.ino.Unlock()
	}
	l.dir.Unlock()
}

// hbegin starts a handle: FS.mu held for reading and handleCredits
// blocks of the running transaction reserved. It returns false, with
// nothing held, where the operation must run holding FS.mu for
// writing: no journal (a change goes home at once, from the cache's
// buffer), a read-only mount, a journal too small to share, a running
// transaction too full (the exclusive operation's end commits it), or
// a metadata cache due for its trim.
func (fs *FS) hbegin() bool {
	fs.mu.RLock()
	j := fs.jnl
	if fs.ro || j == nil || j.cap < 16*handleCredits || fs.cache.full() {
		fs.mu.RUnlock()
		return false
	}
	fs.jmu.Lock()
	if len(j.blocks)+j.reserved+handleCredits > j.cap/2 {
		fs.jmu.Unlock()
		fs.mu.RUnlock()
		return false
	}
	j.reserved += handleCredits
	fs.handles.Add(1)
	fs.handlesRun.Add(1)
	fs.jmu.Unlock()
	return true
}

// hend ends a handle; if the transaction has grown past the size at
// which operations commit it, it is committed (holding FS.mu for
// writing, as an exclusive operation's end does).
func (fs *FS) hend() {
	j := fs.jnl
	fs.jmu.Lock()
	j.reserved -= handleCredits
	big := len(j.blocks) >= j.cap/4
	fs.jmu.Unlock()
	fs.handles.Add(-1)
	fs.mu.RUnlock()
	if big {
		fs.mu.Lock()
		if !fs.ro {
			fs.maybeCommit()
		}
		fs.mu.Unlock()
	}
}

// inHandle reports whether the caller runs in a handle: with FS.mu
// held for writing no handle is open, so a count above zero means the
// caller holds it only for reading.
func (fs *FS) inHandle() bool { return fs.handles.Load() > 0 }

// shared runs op in a handle if one can start, and else, or if op
// returns errExclusive, holding FS.mu for writing (excl).
func (fs *FS) shared(op, excl func() error) error {
	if fs.hbegin() {
		err := op()
		fs.hend()
		if !errors.Is(err, errExclusive) {
			return err
		}
	}
	fs.begin()
	defer fs.end()
	return excl()
}
