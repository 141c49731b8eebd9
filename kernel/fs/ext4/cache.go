package ext4

import (
	"errors"
	"sync"

	"shortbread/kernel/abi/linux"
)

// cache holds recently used metadata blocks (bitmaps, inode tables,
// directory, extent and indirect blocks). A block changed in place is
// handed to write, which writes it home at once or, with a journal, adds
// it to the running transaction; so an entry can be dropped whenever it
// is not in the transaction. File data does not pass through it: the
// kernel's page cache holds that, by inode (pages.go).
//
// A block freed by the allocator is dropped (forget), since it may come
// back as file data written around the cache.
//
// A block's bytes are guarded by FS.mu: changed only by its writers,
// read by its readers too; or, in a handle (handle.go), by the lock of
// what they hold: an inode's lock its bytes in an inode table block and
// its directory or extent blocks, a group's lock its bitmaps and its
// descriptor's bytes, sbMu the superblock. The map has its own lock, mu, since
// readers and handles holding FS.mu for reading add blocks (get, zero,
// write) and drop freed ones (forget); trim, which drops blocks others
// may hold, runs only with FS.mu held for writing.
type cache struct {
	mu     sync.RWMutex      // for reading to find a block (handles do, side by side)
	blocks map[uint64][]byte // protected by mu
	// checked holds the directory blocks whose checksum was found right
	// since they were read (isChecked, markChecked): their bytes change
	// only through writeDirBlock and writeIndexBlock, which checksum them
	// again, so a scan need not check them a second time (a create
	// scanned its leaf three times, each computing a crc32c of the
	// block). A block leaving the cache or replaced by another buffer
	// leaves it. Protected by mu.
	checked map[uint64]struct{}
	max     int
}

const cacheBlocks = 1024

func (c *cache) init(blockSize uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.blocks = make(map[uint64][]byte)
	c.checked = make(map[uint64]struct{})
	c.max = cacheBlocks
}

// get returns block n, reading it if not cached. The slice is the cache's:
// a caller may change it and then must call write.
// Preconditions: FS.mu held, for reading at least.
func (c *cache) get(fs *FS, n uint64) ([]byte, error) {
	c.mu.RLock()
	b, ok := c.blocks[n]
	c.mu.RUnlock()
	if ok {
		return b, nil
	}
	// Read without the map's lock: other readers go on meanwhile.
	b = make([]byte, fs.blockSize)
	if d := fs.checkpointed(n); d != nil {
		copy(b, d) // the home copy is stale until the checkpoint
	} else if err := fs.readRaw(b, n); err != nil {
		if errors.Is(err, linux.EIO) {
			fs.metaErr.CompareAndSwap(nil, &err)
		}
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if had, ok := c.blocks[n]; ok {
		return had, nil // another reader read it first: one copy
	}
	c.blocks[n] = b
	return b, nil
}

// zero returns a zeroed cached buffer for block n without reading it, for
// a block just allocated.
func (c *cache) zero(fs *FS, n uint64) []byte {
	b := make([]byte, fs.blockSize)
	c.put(n, b)
	return b
}

func (c *cache) put(n uint64, b []byte) {
	c.mu.Lock()
	c.blocks[n] = b
	delete(c.checked, n)
	c.mu.Unlock()
}

// isChecked reports whether block n's checksum was found right since it
// was read (the cache's checked).
func (c *cache) isChecked(n uint64) bool {
	c.mu.RLock()
	_, ok := c.checked[n]
	c.mu.RUnlock()
	return ok
}

// markChecked records that block n, read into b, has a right checksum,
// if b is still the cache's buffer for it.
func (c *cache) markChecked(n uint64, b []byte) {
	c.mu.Lock()
	if had, ok := c.blocks[n]; ok && &had[0] == &b[0] {
		c.checked[n] = struct{}{}
	}
	c.mu.Unlock()
}

// trim drops entries past the cache's size. It runs only between
// operations (under FS.mu, before one starts), so that no caller holds a
// slice the cache no longer has: two copies of one block could otherwise
// each be changed and written, the second undoing the first.
// Blocks in the running transaction stay: their home copy is stale.
func (c *cache) trim(fs *FS) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.blocks) < c.max {
		return
	}
	// Drop an arbitrary half: simple, and every entry is clean.
	i := 0
	for k := range c.blocks {
		if i%2 == 0 && !fs.inTransaction(k) {
			delete(c.blocks, k)
			delete(c.checked, k)
		}
		i++
	}
}

// dropClean drops every entry not in the running transaction, as trim
// drops half, and with trim's precondition (FS.mu held for writing).
func (c *cache) dropClean(fs *FS) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k := range c.blocks {
		if !fs.inTransaction(k) {
			delete(c.blocks, k)
			delete(c.checked, k)
			n++
		}
	}
	return n
}

// full reports whether the cache is due for its trim.
func (c *cache) full() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.blocks) >= c.max
}

// write writes block n, a slice get or zero returned, to the device, or
// with a journal, adds it to the running transaction.
func (c *cache) write(fs *FS, n uint64, b []byte) error {
	c.mu.RLock()
	had, ok := c.blocks[n]
	c.mu.RUnlock()
	if !ok || &had[0] != &b[0] {
		c.put(n, b)
	}
	if fs.jnl != nil || fs.stopped {
		// Stopped by a failed commit, the journal is gone but the
		// file system is not one without: what an operation under way
		// changes must not reach the disk, half made, around it.
		if fs.ro {
			return linux.EROFS
		}
		return fs.logBlock(n, b)
	}
	return fs.writeRaw(b, n)
}

// forget drops block n, freed: from the cache and from the transaction.
// (A handle's frees drop a run from each: freeInGroup.)
func (c *cache) forget(fs *FS, n uint64) {
	c.drop(n, 1)
	fs.unlog(n, 1)
}

// drop drops the cnt blocks from n from the cache, taking its lock for
// writing only if one of them is there: the blocks handles free side by
// side are mostly file data, which the cache never holds, and a writer
// of the map waits for, and holds off, every reader.
func (c *cache) drop(n uint64, cnt uint32) {
	c.mu.RLock()
	some := false
	for i := range uint64(cnt) {
		if _, ok := c.blocks[n+i]; ok {
			some = true
			break
		}
	}
	c.mu.RUnlock()
	if !some {
		return
	}
	c.mu.Lock()
	for i := range uint64(cnt) {
		delete(c.blocks, n+i)
		delete(c.checked, n+i)
	}
	c.mu.Unlock()
}
