package vfs

// SetLookupHook makes f run inside every dentry-cache miss, between the
// file system's answer and its caching, so that tests can put another
// call in that window.
func SetLookupHook(f func(dir *Dentry, name string)) { lookupHook = f }

// SetGetHook makes f run inside every FDTable.Get, between loading the
// descriptor's file and taking a reference to it (nil: none).
func SetGetHook(f func(fd int)) { getHook = f }

// NameLock returns the number of the lock (shard) that name takes in a
// ConcurrentNames directory, so that tests can pick names whose changes
// must not wait for each other, or a pair whose locks come in a known
// order.
func NameLock(name string) int { return int(shardOf(name)) }
