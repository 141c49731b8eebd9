package ext4

// cache holds recently used metadata blocks (bitmaps, inode tables,
// directory, extent and indirect blocks). It writes through: a block
// changed in place is written to the device at once by write, so dropping
// an entry never loses data. File data does not pass through it; the page
// cache of block-backed files will hold that.
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
	if err := fs.readRaw(b, n); err != nil {
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
func (c *cache) trim() {
	if len(c.blocks) < c.max {
		return
	}
	// Drop an arbitrary half: simple, and every entry is clean.
	i := 0
	for k := range c.blocks {
		if i%2 == 0 {
			delete(c.blocks, k)
		}
		i++
	}
}

// write writes block n, a slice get or zero returned, to the device.
func (c *cache) write(fs *FS, n uint64, b []byte) error {
	c.blocks[n] = b
	return fs.writeRaw(b, n)
}

func (c *cache) forget(n uint64) { delete(c.blocks, n) }
