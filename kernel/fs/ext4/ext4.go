// Package ext4 reads and writes the ext2, ext3 and ext4 on-disk format as
// Linux and e2fsprogs lay it out: the superblock and group descriptors
// (32- and 64-byte), block and inode bitmaps with flex_bg, inodes with
// extra fields and nanosecond timestamps, extent trees and the older
// indirect block map, linear and hashed (htree) directories, symlinks,
// device nodes, and the crc32c checksums of metadata_csum.
//
// The package is the on-disk logic only: it works on a Device (anything
// with ReadAt/WriteAt/Flush/Size, e.g. a block device or, in tests, a byte
// slice) and knows nothing of the VFS. The glue that makes its inodes VFS
// inodes lives apart from it.
//
// Files: superblock.go (features, mount checks), group.go (group
// descriptors), checksum.go (crc32c, crc16), cache.go (metadata buffer
// cache), inode.go, extent.go and blockmap.go (file block mapping),
// file.go (reading and writing file data), pages.go (file data in the
// page cache, by inode), fallocate.go, dir.go,
// htree.go, htree_write.go and dirhash.go (directories and their hash
// index), alloc.go (bitmaps), fileops.go (stat, read, write, truncate,
// listings), namei.go (create, link, unlink, mkdir, rmdir, symlink),
// rename.go (rename, setattr, statfs), orphan.go (inodes past their last
// name), journal.go (jbd2 format), recovery.go (replay at mount) and
// transaction.go (writing metadata through the journal).
//
// Locking: FS.mu, a reader-writer lock, guards the file system's state:
// the contents of the cached metadata blocks, the allocator, the running
// journal transaction, every inode and directory. Most operations that
// change anything (or may: a commit at its end, a read that fills the
// page cache) hold it for writing, from begin to end. The operations
// that only read (Stat, Lookup, ReadDir, ReadDirAt, Readlink, Statfs,
// Mappable, ReadCached, and ReadAt of a file whose pages are open) hold
// it for reading (rbegin, rend), so that they run side by side: path
// walks, stats, directory listings and file reads from several CPUs.
// So do the operations of a file churn, Create, a small WriteAt and the
// Unlink of a small file, and Mkdir, Link, the Symlink of a short target
// and a SetAttr that leaves the size, with a journal: as handles
// (handle.go), each
// holding the locks of the inodes it changes, and the groups', the
// transaction's and the page maps' locks for what they guard, which
// readers take too where handles change what they read (an inode's
// lock for reading). Unexported functions expect FS.mu held, for
// writing unless they say otherwise or a handle calls them.
// What waits for the device in fsync and the periodic commit runs
// without it: the write-back of file data, the log's writes and
// flushes, and the checkpoint of a full log (transaction.go,
// checkpoint.go).
//
// Below FS.mu, each with its own short-held mutex: the buffer cache's
// map of blocks (cache.mu: readers holding FS.mu for reading add the
// blocks they read in), the holds of open files (FS.heldMu: an open and
// a close take it alone, orphan.go), and a file's dataMap (dataMap.mu,
// which a write-back holds for its device writes). Lock order:
//
//	FS.mu
//	  inode locks (FS.ilocks, by stripe index: two taken blocking in
//	  ascending order, else the second only by TryLock)
//	    a group's lock (FS.glocks: one at a time), FS.sbMu
//	      FS.jmu
//	      cache.mu
//	    FS.heldMu
//	    FS.pagesMu, dataMap.mu
//	      the page cache's locks (package pagecache)
//
// On-disk format reference: Linux's Documentation/filesystems/ext4/.
package ext4

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/pagecache"
)

// Device is the block device under a file system. Any block device
// satisfies it structurally; offsets and lengths are in bytes.
type Device interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	// Flush makes every completed write durable.
	Flush() error
	// Size is the device's length in bytes.
	Size() int64
}

// CorruptError reports on-disk metadata that breaks the format: a bad
// magic number, a checksum mismatch, a pointer out of range. errors.Is
// matches it with linux.EUCLEAN (Linux's EFSCORRUPTED).
type CorruptError struct {
	What string
}

func (e *CorruptError) Error() string { return "ext4: corrupt file system: " + e.What }

// Unwrap makes the error an EUCLEAN for errors.Is and errors.As.
func (e *CorruptError) Unwrap() error { return linux.EUCLEAN }

func corrupt(format string, args ...any) error {
	return &CorruptError{What: fmt.Sprintf(format, args...)}
}

// ErrUnsupported is wrapped by the error a mount returns for a file system
// using an incompatible feature this package does not implement.
var ErrUnsupported = errors.New("ext4: unsupported feature")

// Options configure a mount.
type Options struct {
	// ReadOnly mounts without writing to the device, except to replay a
	// journal that needs recovery (as Linux does: the file system is not
	// consistent without it).
	ReadOnly bool
	// Clock gives timestamps; nil means time.Now.
	Clock func() time.Time
	// Discard (the discard mount option) tells the device which blocks
	// each transaction freed once it is durable (at once without a
	// journal), where the device takes discards.
	Discard bool
	// As is the type the mount asks for: "ext2" or "ext3" refuse a file
	// system with features those types never had (checkType); "" or
	// "ext4" take any this package knows.
	As string
	// JournalOptions says that options only a journal takes were given
	// (commit= other than the default, data=): a file system without a
	// journal is refused, as Linux does.
	JournalOptions bool
	// Pages is the page cache regular files' data is read through, by
	// inode (pages.go); nil reads the disk every time.
	Pages *pagecache.Cache
	// Spin, where given, takes a contended inode or group lock: it
	// calls try until it succeeds or a short time has passed, then
	// lock (the kernel's vfs.LockSpinning). These locks are held for a
	// directory entry's change or a bitmap's, microseconds, while a
	// waiter put to sleep is woken only once its waker's CPU sends it
	// an interrupt; nil waits in lock at once.
	Spin func(try func() bool, lock func())
}

// ErrWrongType is wrapped by the error a mount returns for a file system
// that is not of the type asked for, or lacks the journal its options
// need.
var ErrWrongType = errors.New("ext4: not of the type or options asked for")

// FS is one mounted ext2/3/4 file system.
type FS struct {
	mu sync.RWMutex // see the package comment
	// The locks of handles (handle.go): inode locks, the groups',
	// the running transaction's and the page maps'; handles counts the
	// handles open, handlesRun those begun.
	ilocks [inodeLockStripes]sync.RWMutex
	// glocks guard each group's bitmaps and descriptor (alloc.go);
	// freeBlocks and freeInodes are the file system's free counts,
	// which allocations change under a group's lock only; sbMu guards
	// the superblock's bytes (the orphan list's head) and its writes.
	glocks     []sync.Mutex
	freeBlocks atomic.Int64
	// resvBlocks is how many free blocks a file's data may not take,
	// kept for the extent-tree blocks that writes already made need
	// (alloc.go allocData).
	resvBlocks int64
	freeInodes atomic.Int64
	sbMu       sync.Mutex
	jmu        sync.Mutex
	pagesMu    sync.Mutex
	handles    atomic.Int32
	handlesRun atomic.Uint64
	// changes counts inode writes (iput): a reader that saw an inode's
	// times at one count knows they are unchanged while the count is
	// (Changes; the access-time check of every read uses it).
	changes atomic.Uint64
	dev     Device
	sb      superblock
	ro      bool   // read-only: by request or forced by a feature
	roWhy   string // why the mount is read-only, when forced
	stopped bool   // read-only because a commit failed (stop)
	// metaErr is the first failed read of a metadata block (readMeta),
	// or the error Abort was given: an operation it failed may have
	// changed the running transaction in part, so that transaction is
	// never committed (closeLocked stops instead), as Linux aborts the
	// journal (errors=remount-ro).
	metaErr atomic.Pointer[error]
	// stoppedCkpt keeps, once stopped, the committed blocks the log
	// held for a checkpoint that never wrote them home: reads go on
	// finding them there, not their stale home copies.
	stoppedCkpt map[uint64][]byte
	clock       func() time.Time
	spin        func(try func() bool, lock func()) // Options.Spin

	blockSize  uint32
	groups     []groupDesc
	descPerBlk uint32
	csumSeed   uint32 // crc32c seed of metadata_csum checksums
	cache      cache
	jnl        *journal      // nil: writes go home at once (no journal, or read-only)
	genCounter atomic.Uint32 // varies new inodes' generation numbers
	noIndex    bool          // tests: grow directories without an index
	noSlot     bool          // tests: addEntry finds room itself (no dirSlot from the lookup)
	// held counts the holds on inodes open (Hold), by number;
	// orphans says the orphan list may not be empty, so that the last
	// Release of an inode may have to take it off and free it. Both
	// are protected by heldMu alone: an open and a close need not wait
	// for FS.mu (orphan.go).
	heldMu  sync.Mutex
	held    map[uint32]int
	orphans bool
	// written counts the device writes completed; durable is its value
	// when the latest flush began, so a Sync whose writes all came
	// before that skips the flush (a second fsync of a message already
	// made durable by the first, or by another's commit).
	written atomic.Uint64
	durable atomic.Uint64
	// disc is the device's discard, where it has one; discardFreed is
	// the discard mount option on such a device. trimming holds, per
	// group, the free blocks a FITRIM is discarding: out of the
	// allocator's reach meanwhile (under mu).
	disc         discarder
	discardFreed bool
	trimming     map[uint32][]byte
	// trimmed marks the groups a FITRIM covered whole with none of
	// their free blocks held back, until a block is freed in them;
	// lastTrimMin is the latest FITRIM's minimum run; frees counts the
	// runs freed, so that a group is not marked if one was freed while
	// it was trimmed (trimmed is set under mu held for writing, an
	// element cleared under its group's lock; lastTrimMin under mu).
	trimmed     []bool
	lastTrimMin uint64
	frees       atomic.Uint64
	// pages is the page cache (Options.Pages); files holds each
	// regular file's pages in it that were used since the inode was
	// last forgotten, and maps their blocks to write back, by inode
	// number; ordered the files written since the last commit,
	// unsynced since the last Sync; dataErr a write-back's failure for
	// the next Sync (pages.go; under mu).
	pages    *pagecache.Cache
	files    map[uint32]*pagecache.File
	maps     map[uint32]*dataMap
	ordered  map[uint32]bool
	unsynced map[uint32]bool
	dataErr  error
	// mapped counts the writable holds of mappings on each file's pages
	// (mmap.go; under mu): a Sync writes such a file back every time.
	mapped map[uint32]int
	// mkclean write-protects a file's pages in its mappings before a
	// write-back (SetMkclean; mmap.go); set once, at mount.
	mkclean func(ino uint32, idxs []uint64)
}

// countedDevice counts the writes to the device under the file system.
type countedDevice struct {
	Device
	n *atomic.Uint64
}

// WriteAt counts a write once it completed: a flush that begins after
// the count says n is sure to cover the first n.
func (d countedDevice) WriteAt(p []byte, off int64) (int, error) {
	n, err := d.Device.WriteAt(p, off)
	d.n.Add(1)
	return n, err
}

// Mount reads and checks the superblock and group descriptors of the file
// system on dev. It refuses incompatible features it does not know and
// mounts read-only when a read-only-compatible feature is unknown.
func Mount(dev Device, o Options) (*FS, error) {
	fs := &FS{ro: o.ReadOnly, clock: o.Clock, pages: o.Pages, orphans: true, spin: o.Spin}
	fs.dev = countedDevice{dev, &fs.written}
	if d, ok := dev.(discarder); ok && d.CanDiscard() {
		fs.disc, fs.discardFreed = d, o.Discard
	}
	if fs.clock == nil {
		fs.clock = time.Now
	}
	recovered := false
	var torn *superCsumError
	if err := fs.readSuper(); errors.As(err, &torn) {
		if err := fs.repairSuper(err); err != nil {
			return nil, err
		}
		recovered = true // and the superblock passes its checksum now
	} else if err != nil {
		return nil, err
	}
	if err := fs.checkType(o); err != nil {
		return nil, err
	}
	fs.cache.init(fs.blockSize)
	if err := fs.readGroups(); err != nil {
		return nil, err
	}
	if !recovered && fs.sb.incompat&incompatRecover != 0 {
		// Replay, then read everything again: the journal may have held
		// the superblock and descriptors themselves.
		if err := fs.recoverJournal(); err != nil {
			return nil, fmt.Errorf("ext4: journal recovery: %w", err)
		}
		fs.cache.init(fs.blockSize)
		if err := fs.readGroups(); err != nil {
			return nil, err
		}
		recovered = true
	}
	fs.countFree()
	if err := fs.openJournal(); err != nil {
		return nil, fmt.Errorf("ext4: journal: %w", err)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	switch {
	case fs.jnl != nil && fs.sb.incompat&incompatRecover == 0:
		// From here until Unmount a crash leaves a log to replay.
		fs.sb.incompat |= incompatRecover
		if err := fs.writeSuperHome(); err != nil {
			return nil, err
		}
	case fs.jnl == nil && recovered:
		// Read-only (or a journal this package does not write): the
		// log is replayed and empty, so the flag goes, as Linux's
		// ext4_mark_recovery_complete does.
		fs.sb.incompat &^= incompatRecover
		if err := fs.writeSuperHome(); err != nil {
			return nil, err
		}
	}
	if !fs.ro {
		err := fs.processOrphans()
		if err == nil {
			err = fs.commitOrStop()
		}
		if err != nil {
			return nil, fmt.Errorf("ext4: orphan inodes: %w", err)
		}
		fs.noteOrphans()
	}
	return fs, nil
}

// Unmount commits what is left, checkpoints (the log is empty then),
// clears needs_recovery and writes the superblock home with the free
// counts, flushed. The file system is read-only afterwards, and its
// files' pages are gone from the page cache.
func (fs *FS) Unmount() error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for ino := range fs.files {
		fs.closePages(ino) // dirty pages written back
	}
	// A failed write-back is reported, but the metadata goes home all
	// the same.
	dataErr := fs.syncData()
	if fs.ro {
		return dataErr
	}
	if err := fs.cleanLocked(); err != nil {
		return err
	}
	fs.ro, fs.roWhy = true, "unmounted"
	return dataErr
}

// cleanLocked leaves the disk as a clean unmount does.
// Preconditions: fs.mu is held and the mount is read-write.
func (fs *FS) cleanLocked() error {
	if err := fs.commitOrStop(); err != nil {
		return err
	}
	if err := fs.checkpoint(); err != nil {
		return err
	}
	fs.sb.incompat &^= incompatRecover
	return fs.writeSuperHome()
}

// Remount makes a read-write mount read-only (the disk left as Unmount
// leaves it) or a read-only one read-write again (needs_recovery set
// again before anything is written). A mount read-only because of a
// feature stays so (EROFS).
func (fs *FS) Remount(ro bool) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if ro == fs.ro {
		return nil
	}
	if ro {
		dataErr := fs.syncData() // reported; the metadata goes home all the same
		if err := fs.cleanLocked(); err != nil {
			return err
		}
		fs.ro, fs.roWhy = true, ""
		return dataErr
	}
	if fs.roWhy != "" {
		return linux.EROFS
	}
	fs.ro = false
	if err := fs.openJournal(); err != nil {
		fs.ro = true
		return err
	}
	if fs.ro { // openJournal found a journal it cannot write
		return linux.EROFS
	}
	if fs.jnl != nil {
		fs.sb.incompat |= incompatRecover
	}
	if err := fs.writeSuperHome(); err != nil {
		fs.ro, fs.jnl = true, nil
		return err
	}
	// Orphans a read-only mount found (a crash's) are freed now, as a
	// read-write mount frees them; unless one is a file held open here
	// (unlinked before a remount read-only), which its last close frees.
	held, err := fs.orphansHeld()
	if err == nil && !held {
		if err = fs.processOrphans(); err == nil {
			err = fs.commitOrStop()
		}
	}
	fs.noteOrphans()
	return err
}

// ReadOnly reports whether the mount is read-only, and why when a feature
// forced it.
func (fs *FS) ReadOnly() (bool, string) {
	if e := fs.metaErr.Load(); e != nil && !fs.ro {
		return true, "stopped after an error: " + (*e).Error()
	}
	return fs.ro, fs.roWhy
}

// ErrorsBehavior is what the superblock asks for after an error
// (s_errors, set by mke2fs -e and tune2fs -e): "continue", "remount-ro"
// or "panic"; mke2fs's default, and any unknown value, is "continue", as
// Linux takes it.
func (fs *FS) ErrorsBehavior() string {
	switch fs.sb.errors {
	case 2:
		return "remount-ro"
	case 3:
		return "panic"
	}
	return "continue"
}

// Abort stops all changes after an error (errors=remount-ro): from now
// on changes are refused (EROFS), and the running transaction, which an
// operation that met the error may have changed in part, is never
// committed, as a failed metadata read leaves it and as Linux aborts its
// journal. What was committed stays; a later mount replays it.
func (fs *FS) Abort(err error) {
	fs.metaErr.CompareAndSwap(nil, &err)
}

// BlockSize returns the file system's block size in bytes.
func (fs *FS) BlockSize() uint32 { return fs.blockSize }

// readRaw reads block n of the device into p (one block long).
func (fs *FS) readRaw(p []byte, n uint64) error {
	if n >= fs.sb.blocksCount {
		return corrupt("block %d beyond the end of the file system (%d blocks)", n, fs.sb.blocksCount)
	}
	_, err := fs.dev.ReadAt(p, int64(n)*int64(fs.blockSize))
	if err != nil {
		return fmt.Errorf("ext4: read block %d: %w", n, errors.Join(linux.EIO, err))
	}
	return nil
}

// writeRaw writes p (one block long) to block n of the device.
func (fs *FS) writeRaw(p []byte, n uint64) error {
	if fs.ro {
		return linux.EROFS
	}
	if n >= fs.sb.blocksCount {
		return corrupt("write to block %d beyond the end of the file system", n)
	}
	_, err := fs.dev.WriteAt(p, int64(n)*int64(fs.blockSize))
	if err != nil {
		return fmt.Errorf("ext4: write block %d: %w", n, errors.Join(linux.EIO, err))
	}
	return nil
}

// Changes returns the count of inode writes so far.
func (fs *FS) Changes() uint64 { return fs.changes.Load() }

// NowSec returns the file system clock's time in seconds.
func (fs *FS) NowSec() int64 { return fs.clock().Unix() }

func (fs *FS) now() linux.Timespec {
	t := fs.clock()
	return linux.Timespec{Sec: t.Unix(), Nsec: int64(t.Nanosecond())}
}
