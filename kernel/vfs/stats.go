package vfs

import "sync/atomic"

// liveFiles counts open file descriptions (OpenFile), for
// /proc/shortbread/kmem: where the kernel heap goes, and what a program
// exhausting kernel memory is making.
var liveFiles atomic.Int64

// Stats are the VFS's object counts.
type Stats struct {
	Files int64 // open file descriptions
	Locks int64 // record locks held
}

// ReadStats returns the counts now.
func ReadStats() Stats { return Stats{liveFiles.Load(), lockCount.Load()} }
