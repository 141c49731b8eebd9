// Package pagecache is the page cache that block-backed files share: a
// block device file's bytes, and a file system's regular files (ext4
// caches each file's data by inode, growing and truncating it with
// Resize), kept in 4 KiB pages of physical memory
// between the program and the disk. Reads are served from it and read ahead on sequential access;
// writes change its pages, which a flusher writes back every five
// seconds, under memory pressure and on fsync (which then flushes the
// disk's own cache). Clean pages go back to the frame allocator when
// memory is short (Shrink) and on drop_caches (DropClean).
//
// Pages are physical frames from a Frames source, not Go heap objects,
// so cached data adds nothing to the garbage collector's work: each
// cached page's bookkeeping is a 32-byte page record in a pointer-free
// slice and an entry in a pointer-free map (measured with their growth
// slack, and the dirty set's: about 120 heap bytes per page, 3% of the
// data; TestHeapPerPage), and the collector scans none of it (0
// GC-scanned bytes per cached page): spans without pointers are never
// scanned, only swept. When pages go, a shard left a quarter full is
// compacted (shard.shrinkLocked) and a large dirty set is let go, so the
// bookkeeping shrinks with the cache (TestHeapGivenBack): a Go map never
// shrinks, and these once kept ~80 bytes for every page ever cached.
//
// Lookup takes no global lock: pages live in 64 shards by a hash of
// (file, page index / 8), each with its own mutex; a hit locks one
// shard and copies while holding it, up to 8 pages a lock (the copy is
// to or from kernel memory, so it cannot fault). The cache-wide lock (Cache.mu) guards
// only the list of files, taken on open, release and by the flusher.
//
// Lock order: File.wbMu, then shard.mu, then File.dmu or Cache.dmu;
// Cache.mu is never held with any of them.
//
// Mappings (package mm, through a file system's pager) map the cache's
// pages in place, holding them while they do (map.go).
//
// Files are the backing objects (Backing): a disk seen as bytes in
// whole sectors, or a file system's file. The package knows nothing of devices, processes or
// the machine, so it runs under go test against an in-memory disk.
package pagecache

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// PageSize is the size of a cached page and of a frame.
const PageSize = 4096

// Frames is physical memory for pages.
type Frames interface {
	// Alloc returns a frame's physical address, or 0 when the caller
	// may have no more (memory is short).
	Alloc() uintptr
	// Free returns a frame.
	Free(pa uintptr)
	// Page returns the frame at pa as kernel-addressable memory.
	Page(pa uintptr) *[PageSize]byte
}

// Backing is what a File caches: ReadAt and WriteAt of whole sectors
// (offsets and lengths multiples of the sector size, which divides
// PageSize), and Flush, which returns once everything written is on
// stable storage.
type Backing interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	Flush() error
}

// Kinds of file, counted apart in Stats (Linux shows a block device's
// pages as Buffers, a file's as Cached).
const (
	KindBlock = iota
	KindFile
	nKinds
)

// Errors the cache returns besides the backing's.
var (
	// ErrNoMemory: no frame could be had even after shrinking the cache.
	ErrNoMemory = errors.New("pagecache: out of memory")
	// ErrRange: a write starting at or past the end.
	ErrRange = errors.New("pagecache: beyond the end")
)

const (
	nShards = 64
	// maxRun is the most pages one device request carries (read-ahead
	// window and write-back batch): 256 KiB.
	maxRun = 64
	// minReadAhead is the window of a read that starts a new stream.
	minReadAhead = 4
	// FlushInterval is how often the flusher writes dirty pages back.
	FlushInterval = 5 * time.Second
)

// Cache is the set of cached pages of every file.
type Cache struct {
	frames Frames
	shards [nShards]shard
	hand   atomic.Uint32 // next shard Shrink starts at

	mu     sync.Mutex
	files  map[uint32]*File // protected by mu
	nextID uint32           // protected by mu

	pages     [nKinds]atomic.Int64
	raPages   atomic.Int64 // pages of asynchronous read-ahead in flight
	dirty     atomic.Int64
	writeback atomic.Int64
	// dirtyLimit is the dirty pages above which a writer writes its own
	// file back before going on (so a fast writer cannot fill memory
	// with pages it cannot drop); above half of it the flusher is woken.
	dirtyLimit int64
	kick       chan struct{}
	bounce     sync.Pool

	// detached holds the frames of pages dropped from their files
	// while mappings held them, by frame, with the holds left
	// (map.go). Protected by dmu, taken after shard.mu.
	dmu      sync.Mutex
	detached map[uintptr]uint16
}

// New makes a cache over frames. dirtyLimit bounds the dirty pages (see
// Cache.dirtyLimit); at least 2*maxRun.
func New(frames Frames, dirtyLimit int64) *Cache {
	c := &Cache{frames: frames, files: map[uint32]*File{}, dirtyLimit: max(dirtyLimit, 2*maxRun),
		kick: make(chan struct{}, 1)}
	c.bounce.New = func() any { b := make([]byte, maxRun*PageSize); return &b }
	for i := range c.shards {
		s := &c.shards[i]
		s.index = map[uint64]int32{}
		s.cond.L = &s.mu
	}
	return c
}

// Stats are the cache's page counts.
type Stats struct {
	Block, File      int64 // pages cached for block devices and files
	Dirty, Writeback int64
}

// ReadStats returns the counts now.
func (c *Cache) ReadStats() Stats {
	return Stats{Block: c.pages[KindBlock].Load(), File: c.pages[KindFile].Load(),
		Dirty: c.dirty.Load(), Writeback: c.writeback.Load()}
}

// File is one cached object.
type File struct {
	c    *Cache
	id   uint32
	kind uint32
	b    Backing
	// size is the file's length in bytes: for a disk a multiple of the
	// sector size; a file system's file may change it (Resize).
	size atomic.Int64

	// ra is the read-ahead state of the file's stream (readahead.go).
	ra struct {
		sync.Mutex
		next     uint64     // page after the last window: where a sequential reader misses next
		win      int        // pages in the last window
		marker   uint64     // the page whose hit starts the next window, or noPage
		inflight int        // asynchronous windows being read
		idle     *sync.Cond // inflight fell to 0; made by the first waiter
	}

	// wbMu makes write-backs of the file one at a time, so an fsync
	// returns only after every page dirty at its start is written,
	// including pages another write-back took first.
	wbMu  sync.Mutex
	dmu   sync.Mutex
	dirty map[uint64]struct{} // pages that may be dirty; protected by dmu
	// wheld counts the file's pages with writable holds (map.go), so
	// that CleanMapped costs nothing for a file no mapping stores to.
	// A page that leaves the file while so held stays counted: a
	// needless scan, never a missed one.
	wheld atomic.Int64
	// wbErr records write-back failures for the open descriptions'
	// cursors (errseq.go); own is Sync's cursor, used under wbErr.mu.
	wbErr errSeq
	own   ErrCursor
}

// Open registers b (size bytes, at most maxSize of them cached) with
// the cache.
func (c *Cache) Open(b Backing, size int64, kind int) *File {
	f := &File{c: c, kind: uint32(kind), b: b, dirty: map[uint64]struct{}{}}
	f.size.Store(min(size, maxSize))
	f.ra.marker = noPage
	c.mu.Lock()
	c.nextID++
	for c.files[c.nextID] != nil || c.nextID == 0 {
		c.nextID++
	}
	f.id = c.nextID
	c.files[f.id] = f
	c.mu.Unlock()
	return f
}

// Size is the file's size in bytes.
func (f *File) Size() int64 { return f.size.Load() }

// Resize sets the file's size (a file system's file growing or being
// truncated); the pages wholly past a smaller size go, dirty ones too.
// The caller keeps reads and writes of the file from racing with it,
// and drops a page the new end cuts through itself if its tail must
// read as zeros.
func (f *File) Resize(size int64) {
	size = min(size, maxSize)
	old := f.size.Swap(size)
	if size < old {
		f.invalidate((size+PageSize-1)/PageSize*PageSize, old, true)
	}
	if size > old && old%PageSize != 0 {
		f.zeroTail(old)
	}
}

// Release writes f's dirty pages back (without flushing the device),
// drops all its pages and forgets f. It returns the write-back's error
// (recorded too: see UnseenErr); the pages go even then (the file is gone: Linux, too, drops a block
// device's pages on its last close whatever the write-back did).
func (f *File) Release() error {
	f.waitAsync() // its pages go below, not after
	err := f.writeback()
	f.invalidate(0, f.size.Load(), true)
	f.c.mu.Lock()
	delete(f.c.files, f.id)
	f.c.mu.Unlock()
	return err
}

// Sync writes f's dirty pages back and then flushes the backing's
// cache; it reports a write-back failure (its own, or a background
// one's since the last Sync), once (see writeback): SyncFrom with a
// cursor of f's own, for a File that has one user.
func (f *File) Sync() error { return f.SyncFrom(&f.own) }

// Writeback writes f's dirty pages back, without flushing the device.
func (f *File) Writeback() error { return f.writeback() }

// DropClean writes f's dirty pages back and drops its clean ones
// (BLKFLSBUF).
func (f *File) DropClean() error {
	f.waitAsync() // pages in flight would stay
	err := f.writeback()
	f.invalidate(0, f.size.Load(), false)
	return err
}

// Invalidate drops the pages holding bytes [off, off+n), dirty ones
// too: their contents changed below the cache (a discard).
func (f *File) Invalidate(off, n int64) {
	if n <= 0 {
		return
	}
	f.invalidate(off, off+n, true)
}

// DropClean drops every clean page in the cache (drop_caches) and
// returns how many went.
func (c *Cache) DropClean() int {
	// Pages being read ahead are busy, which eviction skips: let their
	// reads end first.
	files := c.fileList()
	for _, f := range files {
		f.waitAsync()
	}
	n := 0
	for i := range c.shards {
		n += c.shards[i].evict(c, -1, false)
	}
	return n
}

// Shrink gives back up to n frames under memory pressure: clean pages
// first, least recently used first; if too few are clean, dirty pages
// are written back and the now clean ones dropped. It returns the
// frames freed.
func (c *Cache) Shrink(n int) int {
	freed := c.evict(n)
	if freed < n && c.dirty.Load() > 0 {
		c.WritebackAll()
		freed += c.evict(n - freed)
	}
	return freed
}

// evict drops up to n clean pages, going round the shards.
func (c *Cache) evict(n int) int {
	freed := 0
	start := c.hand.Add(1)
	for i := uint32(0); i < nShards && freed < n; i++ {
		// Two passes per shard: the first clears referenced bits.
		freed += c.shards[(start+i)%nShards].evict(c, n-freed, true)
	}
	return freed
}

// fileList returns the cache's files at this moment.
func (c *Cache) fileList() []*File {
	c.mu.Lock()
	defer c.mu.Unlock()
	files := make([]*File, 0, len(c.files))
	for _, f := range c.files {
		files = append(files, f)
	}
	return files
}

// WritebackAll writes every file's dirty pages back (no device flush),
// recording failures for the files' next Syncs.
func (c *Cache) WritebackAll() { c.writebackAll(false) }

// writebackAll is WritebackAll; with clean, the pages mappings hold
// writably are write-protected first (CleanMapped), which only a caller
// holding no lock a page fault takes may ask: the flusher.
func (c *Cache) writebackAll(clean bool) {
	files := c.fileList()
	for _, f := range files {
		if clean {
			f.CleanMapped()
		}
		f.writeback()
	}
}

// Flusher writes dirty pages back every FlushInterval and when writers
// wake it (the dirty pages passed half the limit). It runs until stop
// is closed.
func (c *Cache) Flusher(stop <-chan struct{}) {
	t := time.NewTicker(FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		case <-c.kick:
		}
		if c.dirty.Load() > 0 {
			c.writebackAll(true)
		}
	}
}

// alloc returns a frame, shrinking the cache when none is free.
func (c *Cache) alloc() (uintptr, error) {
	for try := 0; try < 3; try++ {
		if pa := c.frames.Alloc(); pa != 0 {
			return pa, nil
		}
		if c.Shrink(maxRun) == 0 && try > 0 {
			break
		}
	}
	return 0, ErrNoMemory
}

func (c *Cache) getBounce() *[]byte  { return c.bounce.Get().(*[]byte) }
func (c *Cache) putBounce(b *[]byte) { c.bounce.Put(b) }
