package ext4

import "shortbread/kernel/abi/linux"

// cache holds recently used metadata blocks (bitmaps, inode tables,
// directory, extent and indirect blocks). A block changed in place is
// handed to write, which writes it home at once or, with a journal, adds
// it to the running transaction; so an entry can be dropped whenever it
// is not in the transaction. File data does not pass through it: the
// kernel's page cache holds that, by inode (pages.go).
//
// A block freed by the allocator is dropped (forget), since it may come
// back as file data written around the cache.
type cache struct {
	blocks map[uint64][]byte
	max    int
}

const cacheBlocks = 1024

func (c *cache) init(blockSize uint32) {
	c.blocks = make(map[uint64][]byte)
	c.max = cacheBlocks
}

// get returns block n, reading it if not cached. The slice is the cache's:
// a caller may change it and then must call write.
func (c *cache) get(fs *FS, n uint64) ([]byte, error) {
	if b, ok := c.blocks[n]; ok {
		return b, nil
	}
	b := make([]byte, fs.blockSize)
	if d := fs.checkpointed(n); d != nil {
		copy(b, d) // the home copy is stale until the checkpoint
	} else if err := fs.readRaw(b, n); err != nil {
		return nil, err
	}
	c.put(n, b)
	return b, nil
}

// zero returns a zeroed cached buffer for block n without reading it, for
// a block just allocated.
func (c *cache) zero(fs *FS, n uint64) []byte {
	b := make([]byte, fs.blockSize)
	c.put(n, b)
	return b
}

func (c *cache) put(n uint64, b []byte) { c.blocks[n] = b }

// trim drops entries past the cache's size. It runs only between
// operations (under FS.mu, before one starts), so that no caller holds a
// slice the cache no longer has: two copies of one block could otherwise
// each be changed and written, the second undoing the first.
// Blocks in the running transaction stay: their home copy is stale.
func (c *cache) trim(fs *FS) {
	if len(c.blocks) < c.max {
		return
	}
	// Drop an arbitrary half: simple, and every entry is clean.
	i := 0
	for k := range c.blocks {
		if i%2 == 0 && !fs.inTransaction(k) {
			delete(c.blocks, k)
		}
		i++
	}
}

// write writes block n, a slice get or zero returned, to the device, or
// with a journal, adds it to the running transaction.
func (c *cache) write(fs *FS, n uint64, b []byte) error {
	c.blocks[n] = b
	if fs.jnl != nil {
		if fs.ro {
			return linux.EROFS
		}
		return fs.logBlock(n, b)
	}
	return fs.writeRaw(b, n)
}

// forget drops block n, freed: from the cache and from the transaction.
func (c *cache) forget(fs *FS, n uint64) {
	delete(c.blocks, n)
	fs.unlog(n)
}
