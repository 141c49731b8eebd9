package vfs

// SetLookupHook makes f run inside every dentry-cache miss, between the
// file system's answer and its caching, so that tests can put another
// call in that window.
func SetLookupHook(f func(dir *Dentry, name string)) { lookupHook = f }

// SetGetHook makes f run inside every FDTable.Get, between loading the
// descriptor's file and taking a reference to it (nil: none).
func SetGetHook(f func(fd int)) { getHook = f }

// SameNameLock reports whether names a and b of a ConcurrentNames
// directory share a lock (their shard), so that tests can pick names
// whose changes must not wait for each other.
func SameNameLock(a, b string) bool { return shardOf(a) == shardOf(b) }
