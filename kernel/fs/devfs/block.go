package devfs

// Block device files: /dev lists the disks and partitions of
// Options.Blocks as they are at each lookup, so partitions a BLKRRPART
// adds or removes appear and vanish without a remount. Their bytes go
// through the page cache (Options.Cache): one cached file per device,
// shared by every open file of it and, as on Linux, written back and
// dropped when the last one closes. A whole disk and its partitions are
// cached apart, as on Linux 6.1, where each has a page cache of its own:
// what one writes reaches the other through the disk, once written back.
// With O_DIRECT, or with no cache, a block file reads and writes the
// disk itself, in Linux's alignment (CheckDirect).
//
// A failed write-back is reported by the next fsync of every open file
// of the device open at the time (pagecache's errseq): each blockFile
// keeps its own cursor. A failure nobody has reported when the last
// file closes is kept for the device's next open, as Linux keeps it in
// the block device's inode.

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
			n.open = func(*vfs.Ctx, uint32) (vfs.File, error) { return fs.openBlock(d), nil }
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
	return o.fs.openBlock(n.Dev), nil
}

func (fs *FS) openBlock(d blk.Device) *blockFile {
	if p, ok := d.(*blk.Partition); ok {
		p.Opened()
	}
	f := &blockFile{d: d, disks: fs.o.Blocks, cache: openCached(fs.o.Cache, fs.o.Blocks, d)}
	if f.cache != nil {
		f.errs = f.cache.f.SampleErr()
	}
	return f
}

// cachedDevices holds the cached file of each open block device, with
// its open count: every devfs instance shares them, so that two /dev
// mounts see one device's bytes alike.
var cachedDevices struct {
	sync.Mutex
	m map[blk.Device]*cachedDevice // protected by the mutex
	// unseen holds the write-back failure of a device that was closed
	// with no open file having reported it, for its next open; an entry
	// goes when that open takes it or once the device is gone.
	unseen map[blk.Device]error // protected by the mutex
}

type cachedDevice struct {
	f     *pagecache.File
	opens int
}

// openCached returns d's cached file, made on its first open (with the
// failure its last close left unreported); nil without a cache. disks
// is the set d is in.
func openCached(c *pagecache.Cache, disks *blk.Disks, d blk.Device) *cachedDevice {
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
		if err := cachedDevices.unseen[d]; err != nil {
			cd.f.RecordErr(err)
			delete(cachedDevices.unseen, d)
		}
		forgetGoneLocked(disks)
	}
	cd.opens++
	return cd
}

// forgetGoneLocked drops the unreported failures of devices no longer
// in disks (partitions a BLKRRPART took away).
// Preconditions: cachedDevices locked.
func forgetGoneLocked(disks *blk.Disks) {
	if len(cachedDevices.unseen) == 0 || disks == nil {
		return
	}
	listed := map[blk.Device]bool{}
	for _, n := range disks.Nodes() {
		listed[n.Dev] = true
	}
	for d := range cachedDevices.unseen {
		if !listed[d] {
			delete(cachedDevices.unseen, d)
		}
	}
}

// closeCached ends one open of d; the last writes d's pages back and
// drops them, keeping a failure no open file reported for the next
// open. Holding the lock meanwhile keeps a new open from finding the
// file being released.
func closeCached(d blk.Device, cd *cachedDevice) {
	cachedDevices.Lock()
	defer cachedDevices.Unlock()
	if cd.opens--; cd.opens == 0 {
		delete(cachedDevices.m, d)
		cd.f.Release()
		if err := cd.f.UnseenErr(); err != nil {
			if cachedDevices.unseen == nil {
				cachedDevices.unseen = map[blk.Device]error{}
			}
			cachedDevices.unseen[d] = err
		}
	}
}

// WritebackBlocks writes back the dirty pages of every open block
// device (sync(2)); a failure is recorded for the devices' open files'
// next fsync, as Linux's sync leaves it.
func WritebackBlocks() {
	cachedDevices.Lock()
	files := make([]*pagecache.File, 0, len(cachedDevices.m))
	for _, cd := range cachedDevices.m {
		files = append(files, cd.f)
	}
	cachedDevices.Unlock()
	// A file released meanwhile has no dirty pages left: writing it
	// back does nothing.
	for _, f := range files {
		f.Writeback()
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
// through the page cache, or straight to the disk (O_DIRECT).
type blockFile struct {
	d     blk.Device
	disks *blk.Disks    // the set d is in (BLKRRPART)
	cache *cachedDevice // nil: no cache
	// errs is this open file's place in the device's write-back
	// failures: Sync reports those past it.
	errs pagecache.ErrCursor
}

func (f *blockFile) Read(b vfs.Blocking, p []byte, off int64) (int, error) {
	if f.cache == nil {
		n, err := blk.ReadBytes(f.d, p, off)
		return n, blockErrno(n, err)
	}
	if b.Direct {
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

// ReadCached implements vfs.CachedReader from the device's page cache.
func (f *blockFile) ReadCached(dst [][]byte, off int64) (int, bool) {
	if f.cache == nil {
		return 0, false
	}
	return f.cache.f.ReadCached(dst, off)
}

// ReadsExactly implements vfs.ExactReader: Read copies every byte it
// reports, from the page cache or the disk.
func (f *blockFile) ReadsExactly() {}

func (f *blockFile) Write(b vfs.Blocking, p []byte, off int64) (int, error) {
	if f.cache == nil {
		n, err := blk.WriteBytes(f.d, p, off)
		return n, blockErrno(n, err)
	}
	if b.Direct {
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
// cache; it reports a write-back failure this open file has not
// reported yet, its own or another's.
func (f *blockFile) Sync() error {
	if f.cache == nil {
		return blockErrno(0, f.d.Flush())
	}
	return blockErrno(0, f.cache.f.SyncFrom(&f.errs))
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

// CheckDirect is Linux 6.1's check of an O_DIRECT read or write of the
// user buffers iov (address, length) at off (< 0: the file position) on
// f, made before any byte moves: nil when f is not a block device open
// with O_DIRECT or not open for the transfer (which fails with EBADF),
// or when the transfer is empty or starts at or past the end (the read
// returns 0 bytes, the write ENOSPC); else EINVAL unless
// the offset and each buffer's length (of the part within the device)
// are multiples of the logical block size and each buffer's address a
// multiple of the device's memory alignment (blk.MemAlign: 512, or 4 on
// NVMe).
func CheckDirect(f *vfs.OpenFile, iov [][2]uint64, off int64, write bool) error {
	b, ok := f.Impl().(*blockFile)
	fl := f.Flags()
	acc := fl & linux.O_ACCMODE
	if !ok || fl&linux.O_DIRECT == 0 || acc == linux.O_RDONLY && write || acc == linux.O_WRONLY && !write {
		return nil
	}
	if off < 0 {
		pos, err := f.Seek(0, linux.SEEK_CUR)
		if err != nil {
			return err
		}
		off = pos
	}
	size := blk.Size(b.d)
	total := uint64(0)
	for _, v := range iov {
		total += v[1]
	}
	if total == 0 || off >= size {
		return nil
	}
	bmask := uint64(b.d.SectorSize() - 1)
	mmask := uint64(blk.MemAlign(b.d) - 1)
	if uint64(off)&bmask != 0 {
		return linux.EINVAL
	}
	left := min(total, uint64(size-off))
	for _, v := range iov {
		n := min(v[1], left)
		if n&bmask != 0 || v[0]&mmask != 0 {
			return linux.EINVAL
		}
		if left -= n; left == 0 {
			break
		}
	}
	return nil
}
