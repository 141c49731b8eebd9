package vfs

import (
	"hash/maphash"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// ConcurrentNames is implemented by directories whose file system keeps
// its own name table safe and consistent under concurrent changes of
// different names (tmpfs, ext4): creates and removals in such a
// directory then hold its dirMu only for reading, plus a lock of the
// name alone, so that files made and removed by several CPUs in one
// directory do not queue on one lock. A directory without it gets one
// change at a time, as before (a file system that rewrites a shared
// directory block without a lock of its own needs that).
type ConcurrentNames interface {
	Dir
	ConcurrentNames()
}

// ConcurrentRenames is implemented by ConcurrentNames directories whose
// file system also orders a rename of two names within the directory
// against the changes of its other names made at once (ext4: each holds
// the directory's inode lock for its change). Such a rename then holds
// the directory's dirMu for reading and the locks of its two names
// (lockNames), as a create holds one, instead of dirMu for writing:
// files written under a temporary name and renamed to their final one
// (a mail queue) by several CPUs in one directory do not queue on one
// lock for whole operations. ConcurrentNames alone promises no more than
// creates and removals; a rename across directories holds both
// directories for writing whatever they implement.
type ConcurrentRenames interface {
	ConcurrentNames
	ConcurrentRenames()
}

// dirLock is a directory dentry's lock for adding and removing names.
// When two mounts share a file system (FileSystem.shared), a directory
// has a dentry in each, so a writer also takes the file system's mutate
// lock for writing, which serializes the changes made through either;
// until then writers take it for reading, so that the mount that makes
// it shared can wait for the changes under way.
//
// In a ConcurrentNames directory a change of one name (create, link,
// unlink, rmdir of a child) holds mu for reading and the name's shard
// of names for writing (lockName), and a walk that asks the file system
// for a name holds both for reading; a change of the whole directory
// (rename, the removal of the directory itself, a mount on it) holds mu
// for writing, which excludes all of them. Elsewhere lockName is Lock.
// In a ConcurrentRenames directory a rename within it is a change of
// two names (lockNames) rather than of the whole directory.
type dirLock struct {
	mu         sync.RWMutex
	fs         *FileSystem // nil for a file system the kernel mounted
	held       uint8       // how the writer holds fs.mutate (fsRead, fsWrite); protected by mu
	concurrent bool        // the directory is ConcurrentNames; fixed
	renames    bool        // the directory is ConcurrentRenames; fixed
	// names holds each shard's lock, made when a name of the shard is
	// first changed or looked up; a ConcurrentNames directory's dentry
	// has the table (128 bytes, fixed), others none.
	names *nameLocks
}

type nameLocks [nameShards]atomic.Pointer[sync.RWMutex]

// nameShards is how many locks a ConcurrentNames directory's names are
// spread over: two creates of different names wait for each other only
// when their names hash alike (one time in nameShards).
const nameShards = 16

var nameSeed = maphash.MakeSeed()

// shard returns the lock of name's shard.
// Preconditions: l.concurrent.
func (l *dirLock) shard(name string) *sync.RWMutex { return l.shardAt(shardOf(name)) }

func shardOf(name string) uint64 { return maphash.String(nameSeed, name) % nameShards }

// shardAt returns the lock of shard i, made if need be.
func (l *dirLock) shardAt(i uint64) *sync.RWMutex {
	p := &l.names[i]
	if s := p.Load(); s != nil {
		return s
	}
	p.CompareAndSwap(nil, new(sync.RWMutex))
	return p.Load()
}

const (
	fsRead  = 1
	fsWrite = 2
)

// lockFS takes the file system's mutate lock as a directory writer must
// and reports how.
func (l *dirLock) lockFS() uint8 {
	if l.fs == nil {
		return 0
	}
	if l.fs.shared.Load() {
		l.fs.mutate.Lock()
		return fsWrite
	}
	l.fs.mutate.RLock()
	if l.fs.shared.Load() { // made shared meanwhile: serialize after all
		l.fs.mutate.RUnlock()
		l.fs.mutate.Lock()
		return fsWrite
	}
	return fsRead
}

func (l *dirLock) unlockFS(held uint8) {
	switch held {
	case fsRead:
		l.fs.mutate.RUnlock()
	case fsWrite:
		l.fs.mutate.Unlock()
	}
}

// Lock takes the lock for writing, as the first directory lock a call
// takes; further ones are taken with lockNested.
func (l *dirLock) Lock() {
	held := l.lockFS()
	spinLock(l.mu.TryLock, l.mu.Lock)
	l.held = held
}

// lockNested takes another directory's lock while a first is held
// (rmdir's victim, a rename's second parent and moved directories): the
// first holds the file system's lock already.
func (l *dirLock) lockNested() { spinLock(l.mu.TryLock, l.mu.Lock) }

// unlockNested releases a lock taken with lockNested.
func (l *dirLock) unlockNested() { l.mu.Unlock() }

func (l *dirLock) Unlock() {
	held := l.held
	l.held = 0
	l.mu.Unlock()
	l.unlockFS(held)
}

// nameHold is a directory lock held for the change of one name, or of
// two; its unlock releases what lockName or lockNames took.
type nameHold struct {
	l      *dirLock
	shard  *sync.RWMutex // nil: l is held for writing
	shard2 *sync.RWMutex // lockNames' second shard, if the names' differ
	held   uint8         // how the shard's holder holds fs.mutate
}

// lockName takes the lock for a change of name: for a ConcurrentNames
// directory mu for reading and name's shard for writing, else Lock.
func (l *dirLock) lockName(name string) nameHold {
	if !l.concurrent {
		l.Lock()
		return nameHold{l: l}
	}
	held := l.lockFS()
	spinLock(l.mu.TryRLock, l.mu.RLock)
	s := l.shard(name)
	spinLock(s.TryLock, s.Lock)
	return nameHold{l: l, shard: s, held: held}
}

// lockNames takes the lock for a change of two names a and b at once (a
// rename within a ConcurrentRenames directory): mu for reading and both
// names' shards for writing, the lower-numbered shard first, so that two
// such renames, or one and a create, never wait for each other in a
// circle; names of one shard take it once.
// Preconditions: l.renames.
func (l *dirLock) lockNames(a, b string) nameHold {
	held := l.lockFS()
	spinLock(l.mu.TryRLock, l.mu.RLock)
	i, j := shardOf(a), shardOf(b)
	if j < i {
		i, j = j, i
	}
	h := nameHold{l: l, shard: l.shardAt(i), held: held}
	spinLock(h.shard.TryLock, h.shard.Lock)
	if j != i {
		h.shard2 = l.shardAt(j)
		spinLock(h.shard2.TryLock, h.shard2.Lock)
	}
	return h
}

func (h nameHold) unlock() {
	if h.shard == nil {
		h.l.Unlock()
		return
	}
	if h.shard2 != nil {
		h.shard2.Unlock()
	}
	h.shard.Unlock()
	h.l.mu.RUnlock()
	h.l.unlockFS(h.held)
}

// rlockName takes the lock for reading name from the file system and
// caching it: mu for reading, and in a ConcurrentNames directory name's
// shard too, so the answer cannot be overtaken by a change of the name.
// It returns the shard to give runlockName.
func (l *dirLock) rlockName(name string) *sync.RWMutex {
	spinLock(l.mu.TryRLock, l.mu.RLock)
	if !l.concurrent {
		return nil
	}
	s := l.shard(name)
	spinLock(s.TryRLock, s.RLock)
	return s
}

func (l *dirLock) runlockName(s *sync.RWMutex) {
	if s != nil {
		s.RUnlock()
	}
	l.mu.RUnlock()
}

// dirLockSpin is how long a caller tries to take a directory's lock
// before it sleeps. The lock is held for the change of one name, a few
// microseconds, while a sleeping goroutine is woken only once its
// waker's CPU sends the IPI or switches to it (up to the machine
// layer's wake delay, 150 µs): sleeping on every contended lock made
// creates in one directory from two CPUs slower than from one
// (bench/results/scale-2026-11-28-quiet.md). Linux's mutexes likewise
// spin while the holder runs.
const dirLockSpin = 50 * time.Microsecond

// parallel reports that the kernel's goroutines run on more than one
// CPU, so that a lock's holder may run while a waiter spins. It starts
// as runtime.NumCPU, right on a host; in the kernel that is the count
// the runtime read at its start, before the other CPUs were up (1), so
// the kernel sets it with SetCPUs once they are. (runtime.GOMAXPROCS
// would take the scheduler's lock on every contended acquisition.)
var parallel atomic.Bool

func init() { parallel.Store(runtime.NumCPU() > 1) }

// SetCPUs tells the VFS how many CPUs run the kernel's goroutines.
func SetCPUs(n int) { parallel.Store(n > 1) }

// LockSpinning takes a lock as directory locks are taken (spinLock), and
// counts its contention with theirs: for a file system's short-held
// locks on the path of creates and removals (tmpfs's name shards and
// its set of files holding pages), which ConcurrentNames directories
// take from several CPUs at once.
func LockSpinning(try func() bool, lock func()) { spinLock(try, lock) }

// spinLock takes a lock with try until it succeeds or dirLockSpin has
// passed, then sleeps in lock. With one CPU the holder cannot run while
// we spin. Contended acquisitions count themselves in dirLockStats; the
// uncontended path touches no shared counter.
func spinLock(try func() bool, lock func()) {
	if try() {
		return
	}
	start := time.Now()
	if parallel.Load() {
		for i := 1; ; i++ {
			if try() {
				dirLockStats.spun.Add(1)
				dirLockStats.spunNs.Add(uint64(time.Since(start)))
				return
			}
			if i%64 == 0 && time.Since(start) > dirLockSpin {
				break
			}
		}
	}
	lock()
	dirLockStats.slept.Add(1)
	dirLockStats.waitedNs.Add(uint64(time.Since(start)))
}

// dirLockStats counts the contended acquisitions of directory locks,
// which the runtime's mutex profile does not see while they spin.
var dirLockStats struct {
	spun     atomic.Uint64 // acquisitions that spun and got the lock
	spunNs   atomic.Uint64 // time those spun
	slept    atomic.Uint64 // acquisitions that spun in vain and slept
	waitedNs atomic.Uint64 // time those waited, spinning and asleep
}

// DirLockContention reports the contended acquisitions of directory
// locks since boot (or the last ResetDirLockContention), as
// /proc/shortbread/dirlocks shows them: those won by spinning and the
// time spun, those that slept and the time they waited in all.
func DirLockContention() (spun uint64, spunTime time.Duration, slept uint64, waited time.Duration) {
	s := &dirLockStats
	return s.spun.Load(), time.Duration(s.spunNs.Load()), s.slept.Load(), time.Duration(s.waitedNs.Load())
}

// ResetDirLockContention sets the counts of DirLockContention to zero.
func ResetDirLockContention() {
	s := &dirLockStats
	s.spun.Store(0)
	s.spunNs.Store(0)
	s.slept.Store(0)
	s.waitedNs.Store(0)
}
