package main

// The page cache block device files and ext4's file data share
// (package pagecache): its frames, its flusher, its place in memory
// pressure, and the device wrapper an ext4 mount reads data through.

import (
	"sync"

	"shortbread/kernel/blk"
	"shortbread/kernel/kmem"
	"shortbread/kernel/machine"
	"shortbread/kernel/pagecache"
	"shortbread/kernel/proc"
)

// cacheFrames is physical memory for cached pages. Like tmpfs data it
// stops at twice the kernel's reserve, so a full cache leaves room for
// the kernel and for programs; past that the cache reuses its own clean
// pages, and programs' faults, tmpfs and the kernel's low-memory probe
// take it back through kmem.Reclaim.
type cacheFrames struct{ proc.Frames }

var cacheReserve = sync.OnceValue(func() uint64 { return 2 * kmem.Reserve(machine.ReadMemStats().TotalFrames) })

func (cacheFrames) Alloc() uintptr { return machine.AllocFrame(cacheReserve()) }

// startPageCache makes the page cache and starts its flusher. Dirty
// pages are bounded by a tenth of memory (Linux's dirty_ratio is 20%
// of what is available): past it writers write their own back.
func (k *kernel) startPageCache() {
	total := machine.ReadMemStats().TotalFrames
	k.cache = pagecache.New(cacheFrames{}, int64(total/10))
	kmem.SetReclaim(k.cache.Shrink)
	go k.cache.Flusher(nil)
}

// cachedDisk is the device under an ext4 mount: file data is read
// through the page cache (ext4.DataReader), and every write and discard
// of the device (data, metadata, journal) drops the pages it covers, so
// the cache never holds bytes older than the disk's. Nothing is written
// through the cache, so the journal's ordering of writes is the same
// with it as without it.
type cachedDisk struct {
	blk.Bytes
	data *pagecache.File
}

func (d cachedDisk) ReadData(p []byte, off int64) (int, error) { return d.data.Read(p, off) }

func (d cachedDisk) WriteAt(p []byte, off int64) (int, error) {
	n, err := d.Bytes.WriteAt(p, off)
	d.data.Invalidate(off, int64(len(p)))
	return n, err
}

func (d cachedDisk) Discard(off, n int64) error {
	err := d.Bytes.Discard(off, n)
	d.data.Invalidate(off, n)
	return err
}
