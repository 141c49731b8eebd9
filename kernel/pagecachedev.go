package main

// The page cache block device files and ext4's file data share
// (package pagecache): its frames, its flusher, its place in memory
// pressure. (An ext4 mount is handed it: package ext4 caches each
// regular file's pages by inode.)

import (
	"sync"

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
