package devfs

// Block device files: /dev lists the disks and partitions of
// Options.Blocks as they are at each lookup, so partitions a BLKRRPART
// adds or removes appear and vanish without a remount. Their bytes go
// through the page cache (Options.Cache): one cached file per device,
// shared by every open file of it and, as on Linux, written back and
// dropped when the last one closes. A whole disk and its partitions are
// cached apart (so are they on Linux). Opened with O_DIRECT, or with no
// cache, a block file reads and writes the disk itself.

import (
	"errors"
	"sync"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/blk"
	"shortbread/kernel/pagecache"
	"shortbread/kernel/vfs"
)

// blockNodes keeps one inode per block device for as long as the device
// is listed, so the VFS's cached dentries stay valid.
type blockNodes struct {
	mu    sync.Mutex
	nodes map[blk.Device]*node // protected by mu
}

// blockList returns the block devices and their inodes now.
func (fs *FS) blockList() ([]blk.Node, []*node) {
	if fs.o.Blocks == nil {
		return nil, nil
	}
	list := fs.o.Blocks.Nodes()
	fs.blocks.mu.Lock()
	defer fs.blocks.mu.Unlock()
	old := fs.blocks.nodes
	fs.blocks.nodes = make(map[blk.Device]*node, len(list))
	inodes := make([]*node, len(list))
	for i, b := range list {
		n := old[b.Dev]
		if n == nil {
			n = fs.newNode(linux.S_IFBLK|0o660, linux.MakeDev(b.Major, b.Minor))
			n.GID = 6 // disk
			d := b.Dev
			n.open = func(_ *vfs.Ctx, flags uint32) (vfs.File, error) { return fs.openBlock(d, flags), nil }
		}
		fs.blocks.nodes[b.Dev] = n
		inodes[i] = n
	}
	return list, inodes
}

func (fs *FS) blockLookup(name string) (*node, bool) {
	list, inodes := fs.blockList()
	for i, b := range list {
		if b.Name == name {
			return inodes[i], true
		}
	}
	return nil, false
}

// registerBlocks enters the block devices there are now in v's device
// table, opened by number (a partition a later BLKRRPART makes is found
// only through /dev).
func (fs *FS) registerBlocks(v *vfs.VFS) {
	list, _ := fs.blockList()
	for _, b := range list {
		v.RegisterDevice(linux.S_IFBLK, linux.MakeDev(b.Major, b.Minor), blockOpener{fs, b.Major, b.Minor})
	}
}

type blockOpener struct {
	fs           *FS
	major, minor uint32
}

func (o blockOpener) Open(flags uint32) (vfs.File, error) {
	n, ok := o.fs.o.Blocks.Find(o.major, o.minor)
	if !ok {
		return nil, linux.ENXIO
	}
	return o.fs.openBlock(n.Dev, flags), nil
}

func (fs *FS) openBlock(d blk.Device, flags uint32) *blockFile {
	if p, ok := d.(*blk.Partition); ok {
		p.Opened()
	}
	return &blockFile{d: d, disks: fs.o.Blocks, cache: openCached(fs.o.Cache, d),
		direct: flags&linux.O_DIRECT != 0}
}

// cachedDevices holds the cached file of each open block device, with
// its open count: every devfs instance shares them, so that two /dev
// mounts see one device's bytes alike.
var cachedDevices struct {
	sync.Mutex
	m map[blk.Device]*cachedDevice // protected by the mutex
}

type cachedDevice struct {
	f     *pagecache.File
	opens int
}

// openCached returns d's cached file, made on its first open; nil
// without a cache.
func openCached(c *pagecache.Cache, d blk.Device) *cachedDevice {
	if c == nil {
		return nil
	}
	cachedDevices.Lock()
	defer cachedDevices.Unlock()
	if cachedDevices.m == nil {
		cachedDevices.m = map[blk.Device]*cachedDevice{}
	}
	cd := cachedDevices.m[d]
	if cd == nil {
		cd = &cachedDevice{f: c.Open(blk.Bytes{D: d}, blk.Size(d), pagecache.KindBlock)}
		cachedDevices.m[d] = cd
	}
	cd.opens++
	return cd
}

// closeCached ends one open of d; the last writes d's pages back and
// drops them. Holding the lock meanwhile keeps a new open from finding
// the file being released.
func closeCached(d blk.Device, cd *cachedDevice) {
	cachedDevices.Lock()
	defer cachedDevices.Unlock()
	if cd.opens--; cd.opens == 0 {
		delete(cachedDevices.m, d)
		cd.f.Release() // a failure was the last fsync's to report
	}
}

// FlushBuffers writes back and drops the cached pages of the block
// device f is open on, then flushes the disk (BLKFLSBUF).
func FlushBuffers(f *vfs.OpenFile) error {
	b, ok := f.Impl().(*blockFile)
	if !ok {
		return linux.ENOTTY
	}
	var err error
	if b.cache != nil {
		err = b.cache.f.DropClean()
	}
	if ferr := b.d.Flush(); err == nil {
		err = ferr
	}
	return blockErrno(0, err)
}

// DiscardCached drops the cached pages of bytes [off, off+n) of the
// block device f is open on, before the range is discarded (their
// contents are about to be undefined; a dirty page would write old data
// over the discard later).
func DiscardCached(f *vfs.OpenFile, off, n int64) {
	if b, ok := f.Impl().(*blockFile); ok && b.cache != nil {
		b.cache.f.Invalidate(off, n)
	}
}

// BlockOf returns the disk behind f when f is an open block device
// file, for the BLK* ioctls.
func BlockOf(f *vfs.OpenFile) (blk.Device, bool) {
	b, ok := f.Impl().(*blockFile)
	if !ok {
		return nil, false
	}
	return b.d, true
}

// RereadPartitions reads the partition table of the whole disk f is
// open on again (BLKRRPART): EINVAL on a partition, EBUSY while one of
// the disk's partitions is open.
func RereadPartitions(f *vfs.OpenFile) error {
	b, ok := f.Impl().(*blockFile)
	if !ok || b.disks == nil {
		return linux.ENOTTY
	}
	switch err := b.disks.Reread(b.d); {
	case errors.Is(err, blk.ErrNotDisk):
		return linux.EINVAL
	case errors.Is(err, blk.ErrBusy):
		return linux.EBUSY
	}
	return nil
}

// blockFile is an open block device: any byte range, read and written
// through the page cache, or straight to the disk.
type blockFile struct {
	d      blk.Device
	disks  *blk.Disks    // the set d is in (BLKRRPART)
	cache  *cachedDevice // nil: no cache
	direct bool          // O_DIRECT: around the cache
}

func (f *blockFile) Read(_ vfs.Blocking, p []byte, off int64) (int, error) {
	if f.cache == nil {
		n, err := blk.ReadBytes(f.d, p, off)
		return n, blockErrno(n, err)
	}
	if f.direct {
		// What others wrote must be on the disk to be read there.
		if err := f.cache.f.Writeback(); err != nil {
			return 0, blockErrno(0, err)
		}
		n, err := blk.ReadBytes(f.d, p, off)
		return n, blockErrno(n, err)
	}
	n, err := f.cache.f.Read(p, off)
	return n, blockErrno(n, cacheErr(err))
}

func (f *blockFile) Write(_ vfs.Blocking, p []byte, off int64) (int, error) {
	if f.cache == nil {
		n, err := blk.WriteBytes(f.d, p, off)
		return n, blockErrno(n, err)
	}
	if f.direct {
		if err := f.cache.f.Writeback(); err != nil {
			return 0, blockErrno(0, err)
		}
		n, err := blk.WriteBytes(f.d, p, off)
		f.cache.f.Invalidate(off, int64(n))
		return n, blockErrno(n, err)
	}
	n, err := f.cache.f.Write(p, off)
	return n, blockErrno(n, cacheErr(err))
}

// cacheErr maps the cache's own errors to the device's.
func cacheErr(err error) error {
	if errors.Is(err, pagecache.ErrRange) {
		return blk.ErrRange
	}
	return err
}

func (f *blockFile) Lseek(pos, off int64, whence int) (int64, error) {
	return vfs.SeekSized(pos, off, whence, blk.Size(f.d))
}

// Sync writes the device's dirty pages back, then flushes the disk's
// cache.
func (f *blockFile) Sync() error {
	if f.cache == nil {
		return blockErrno(0, f.d.Flush())
	}
	return blockErrno(0, f.cache.f.Sync())
}

func (f *blockFile) Release() {
	if f.cache != nil {
		closeCached(f.d, f.cache)
	}
	if p, ok := f.d.(*blk.Partition); ok {
		p.Closed()
	}
}

// blockErrno is what a program sees: a partial transfer counts; the
// device's failures are EIO (the driver logged which sector).
func blockErrno(n int, err error) error {
	switch {
	case err == nil || n > 0:
		return nil
	case errors.Is(err, blk.ErrRange):
		return linux.ENOSPC
	case errors.Is(err, blk.ErrReadOnly):
		return linux.EROFS
	case errors.Is(err, pagecache.ErrNoMemory):
		return linux.ENOMEM
	}
	return linux.EIO
}
