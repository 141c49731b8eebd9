package ext4

// Handles: changes made side by side. The operations a file churn is
// made of (Create, WriteAt or Append of a small write, Unlink of a small file,
// Rename but of a directory to another parent), and Mkdir, Rmdir,
// Link, a fast Symlink, a SetAttr that leaves the size and TouchAtime
// run holding FS.mu only for reading, as jbd2's handles join the running
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
//   - a group's bitmaps and descriptor, by the group's lock (glocks,
//     alloc.go); the free counts are atomic; the superblock's bytes (the
//     orphan list head), by sbMu;
//   - the running transaction's block list, reservations and freed
//     blocks, by jmu;
//   - the page cache's maps by inode (files, maps, ordered, unsynced,
//     dataErr), by pagesMu.
//
// A handle waits for an inode lock only where its stripe lies above
// those of all the inode locks it holds, and otherwise only tries it
// (TryLock), so that no two handles wait for each other's; two locks
// are a dirLocks, a rename's up to four an inodeLocks. An unlink (or
// rmdir) whose file's lock comes before its directory's, held by
// another, lets go of the directory's and takes both in order, then
// looks the name up again, as a rename does with its set; a link takes
// both in order from the start. Each is taken within one call into the
// package and let go before it returns, so the VFS's own locks (its
// directories' locks, and renameMu across two) are always taken first
// and cannot cross them. A create, mkdir or symlink allocates and writes its new inode
// (a directory's first block too) before it takes the directory's
// lock, and an unlink frees its file after letting go of it, so that
// two handles in one directory hold its lock only while they change its
// entries. Contended inode and group locks spin briefly before they
// sleep (Options.Spin).
//
// A handle that finds it cannot finish side by side before it changed
// anything (a file to free whose blocks need more credits than the
// running transaction has room for, or mapped by indirect blocks and
// too big for a handle's own, the disk full while freed blocks are held
// back, which only a commit gives back, the name an unlink looked up
// again now another file's, held by another) returns errExclusive, and the operation runs again holding FS.mu for
// writing. A create that finds so after it made its inode frees it
// again first.

import (
	"errors"
	"slices"
	"sync"

	"shortbread/kernel/abi/linux"
)

// inodeLockStripes is the number of inode locks (1<<inodeLockBits);
// inode n takes lock stripe(n), so two inodes may share one (the lock
// order below takes that into account).
const (
	inodeLockBits    = 8
	inodeLockStripes = 1 << inodeLockBits
)

// handleCredits is the most metadata blocks a handle's operation logs:
// an inode and a directory block or two, an htree split, the bitmaps
// and descriptors of the few groups a small file's blocks sit in, and
// its extent blocks.
const handleCredits = 64

// handleMaxWrite is the largest write made side by side: a bigger one
// may allocate more blocks than a handle's credits cover.
const handleMaxWrite = 64 << 10

// handleMaxFree is the most 512-byte sectors a file freed by a handle
// may hold (1 MiB) within its credits: a bigger one may touch more
// groups than they cover, and an unlink then reserves more for it
// (freeCredits, hextend).
const handleMaxFree = 2048

// errExclusive says an operation tried side by side must run again
// holding FS.mu for writing; nothing was changed.
var errExclusive = errors.New("ext4: operation needs the file system to itself")

// lockInode takes an inode lock for writing, spinning first where it
// is held (Options.Spin); rlockInode takes one for reading. The method
// values passed to spin are made only when the lock is contended.
func (fs *FS) lockInode(m *sync.RWMutex) {
	if m.TryLock() {
		return
	}
	if fs.spin != nil {
		fs.spin(m.TryLock, m.Lock)
		return
	}
	m.Lock()
}

func (fs *FS) rlockInode(m *sync.RWMutex) {
	if m.TryRLock() {
		return
	}
	if fs.spin != nil {
		fs.spin(m.TryRLock, m.RLock)
		return
	}
	m.RLock()
}

// lockGroup takes a group's lock (glocks), spinning first where it is
// held.
func (fs *FS) lockGroup(m *sync.Mutex) {
	if m.TryLock() {
		return
	}
	if fs.spin != nil {
		fs.spin(m.TryLock, m.Lock)
		return
	}
	m.Lock()
}

// ilock returns inode ino's lock.
func (fs *FS) ilock(ino uint32) *sync.RWMutex {
	return &fs.ilocks[stripe(ino)]
}

// stripe is the index of inode n's lock: a multiplicative (Fibonacci)
// hash, not n modulo the stripes, since the first inodes of the groups
// (where the directories of two workers land once their allocations
// spread over the groups) are all alike modulo any power of two that
// divides the inodes per group; consecutive numbers still fall on
// different stripes.
func stripe(n uint32) uint32 { return n * 0x9E3779B9 >> (32 - inodeLockBits) }

// dirLocks are the inode locks a handle that changes a directory holds:
// the directory's and a second inode's (nil where it shares the
// directory's stripe, or none was taken). Two are taken waiting only in
// ascending stripe order; out of order the second is only tried
// (TryLock), so no two handles wait for each other's.
type dirLocks struct {
	fs       *FS
	dir, ino *sync.RWMutex
}

// lockDir takes dir's inode lock for a handle.
func (fs *FS) lockDir(dir uint32) *dirLocks {
	l := &dirLocks{fs: fs, dir: fs.ilock(dir)}
	fs.lockInode(l.dir)
	return l
}

// lockBoth takes the locks of directory dir and inode n, in stripe
// order.
func (fs *FS) lockBoth(dir, n uint32) *dirLocks {
	l := &dirLocks{fs: fs, dir: fs.ilock(dir)}
	if m := fs.ilock(n); m != l.dir {
		l.ino = m
	}
	if l.ino != nil && stripe(n) < stripe(dir) {
		fs.lockInode(l.ino)
		fs.lockInode(l.dir)
	} else {
		fs.lockInode(l.dir)
		if l.ino != nil {
			fs.lockInode(l.ino)
		}
	}
	return l
}

// holds reports whether inode n's lock is among l's.
func (l *dirLocks) holds(n uint32) bool {
	m := l.fs.ilock(n)
	return m == l.dir || m == l.ino
}

// try takes inode n's lock unless another holds it; n may share the
// directory's stripe. Only one second lock is taken.
func (l *dirLocks) try(n uint32) bool {
	if l.holds(n) {
		return true
	}
	if l.ino != nil {
		return false
	}
	m := l.fs.ilock(n)
	if !m.TryLock() {
		return false
	}
	l.ino = m
	return true
}

// take takes inode n's lock as the second, waiting for it if that keeps
// the stripe order, else trying it; false means it is held by another
// and comes first (the caller lets go and takes both with lockBoth).
func (l *dirLocks) take(dir, n uint32) bool {
	if l.try(n) {
		return true
	}
	if l.ino != nil || stripe(n) < stripe(dir) {
		return false
	}
	l.ino = l.fs.ilock(n)
	l.fs.lockInode(l.ino)
	return true
}

// releaseDir lets go of the directory's lock once the handle is done
// with the directory, keeping the second inode's; not where the two
// share a stripe.
func (l *dirLocks) releaseDir() {
	if l.ino != nil && l.dir != nil {
		l.dir.Unlock()
		l.dir = nil
	}
}

// unlock releases what the handle still holds.
func (l *dirLocks) unlock() {
	if l.ino != nil {
		l.ino.Unlock()
	}
	if l.dir != nil {
		l.dir.Unlock()
	}
}

// inodeLocks are the inode locks of a handle that changes more than
// two inodes (Rename: two directories, the file moved and the one it
// replaces), each stripe once. A lock is waited for only where its
// stripe lies above every stripe held, as dirLocks does with two;
// below, it is only tried, and where another holds it the handle lets
// go of all and takes the whole set in ascending order (lockInodes),
// then looks its names up again.
type inodeLocks struct {
	fs   *FS
	held []uint32 // the stripes held, ascending
}

// lockInodes takes the locks of inodes nums (0 for none) in ascending
// stripe order.
func (fs *FS) lockInodes(nums ...uint32) *inodeLocks {
	l := &inodeLocks{fs: fs, held: make([]uint32, 0, 4)}
	for _, n := range nums {
		if n != 0 {
			l.held = append(l.held, stripe(n))
		}
	}
	slices.Sort(l.held)
	l.held = slices.Compact(l.held)
	for _, s := range l.held {
		fs.lockInode(&fs.ilocks[s])
	}
	return l
}

// holds reports whether inode n's lock is among l's (n 0: yes).
func (l *inodeLocks) holds(n uint32) bool {
	_, ok := slices.BinarySearch(l.held, stripe(n))
	return n == 0 || ok
}

// add takes inode n's lock too (n 0: none), waiting for it only above
// every stripe held; false, with nothing more held, where another
// holds it and it comes before one of l's.
func (l *inodeLocks) add(n uint32) bool {
	if l.holds(n) {
		return true
	}
	s := stripe(n)
	m := &l.fs.ilocks[s]
	i, _ := slices.BinarySearch(l.held, s)
	switch {
	case m.TryLock():
	case i == len(l.held):
		l.fs.lockInode(m)
	default:
		return false
	}
	l.held = slices.Insert(l.held, i, s)
	return true
}

// unlock releases l's locks.
func (l *inodeLocks) unlock() {
	for _, s := range slices.Backward(l.held) {
		l.fs.ilocks[s].Unlock()
	}
	l.held = l.held[:0]
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

// freeCredits returns the blocks freeing regular file in logs beyond
// what handleCredits covers: a block bitmap and a descriptor block for
// each group its blocks (data and extent tree) lie in, and the tree's
// blocks. ok is false where that is not known cheaply: a file mapped
// by indirect blocks, or one with an xattr block. Preconditions: in's
// lock held.
func (fs *FS) freeCredits(in *inode) (n int, ok bool) {
	if in.fileType() != linux.S_IFREG || in.flags&flagExtents == 0 || in.fileACL != 0 {
		return 0, false
	}
	m, err := fs.readExtents(in)
	if err != nil {
		return 0, false
	}
	groups := make(map[uint64]bool)
	bpg := uint64(fs.sb.blocksPerGroup)
	first := uint64(fs.sb.firstDataBlock)
	for _, e := range m.exts {
		if e.pblk < first || e.len == 0 {
			return 0, false
		}
		for g := (e.pblk - first) / bpg; g <= (e.pblk+uint64(e.len)-1-first)/bpg; g++ {
			groups[g] = true
		}
	}
	for _, b := range m.tree {
		if b >= first {
			groups[(b-first)/bpg] = true
		}
	}
	return 2*len(groups) + len(m.tree), true
}

// hextend reserves n blocks more of the running transaction for the
// handle open, as jbd2's journal_extend: false, with nothing reserved,
// where the transaction has no such room (the operation then runs
// exclusive). hshrink gives them back once the operation is done.
func (fs *FS) hextend(n int) bool {
	j := fs.jnl
	fs.jmu.Lock()
	defer fs.jmu.Unlock()
	if len(j.blocks)+j.reserved+n > j.cap/2 {
		return false
	}
	j.reserved += n
	return true
}

func (fs *FS) hshrink(n int) {
	fs.jmu.Lock()
	fs.jnl.reserved -= n
	fs.jmu.Unlock()
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

// sharedInode is shared with op run holding inode ino's lock.
func (fs *FS) sharedInode(ino uint32, op, excl func() error) error {
	return fs.shared(func() error {
		l := fs.ilock(ino)
		fs.lockInode(l)
		defer l.Unlock()
		return op()
	}, excl)
}

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
	return fs.retryHeld(excl)
}
