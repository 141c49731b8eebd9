package vfs

// SetLookupHook makes f run inside every dentry-cache miss, between the
// file system's answer and its caching, so that tests can put another
// call in that window.
func SetLookupHook(f func(dir *Dentry, name string)) { lookupHook = f }

// SetGetHook makes f run inside every FDTable.Get, between loading the
// descriptor's file and taking a reference to it (nil: none).
func SetGetHook(f func(fd int)) { getHook = f }
