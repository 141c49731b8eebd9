package vfs

import (
	"sync"

	"shortbread/kernel/abi/linux"
)

// Text-busy files. A program runs from its file's own pages (exec maps
// them copy-on-write), so writing the file would change the running
// program under it. As Linux's deny_write_access does, a file that a
// process is running cannot be opened for writing or truncated
// (ETXTBSY), and a file open for writing cannot be run.

var (
	busyMu  sync.Mutex
	writers = map[Inode]int{} // open files that may write the inode
	readers = map[Inode]int{} // open files that only read the inode (leases)
	running = map[Inode]int{} // processes running the inode
)

// getWriteAccess counts a new writer of ino, or fails with ETXTBSY if a
// process runs it.
func getWriteAccess(ino Inode) error {
	busyMu.Lock()
	defer busyMu.Unlock()
	if running[ino] > 0 {
		return linux.ETXTBSY
	}
	writers[ino]++
	return nil
}

func putWriteAccess(ino Inode) {
	busyMu.Lock()
	defer busyMu.Unlock()
	if writers[ino]--; writers[ino] <= 0 {
		delete(writers, ino)
	}
}

// checkNotRunning fails with ETXTBSY if a process runs ino (truncate(2)).
func checkNotRunning(ino Inode) error {
	busyMu.Lock()
	defer busyMu.Unlock()
	if running[ino] > 0 {
		return linux.ETXTBSY
	}
	return nil
}

// DenyWrite marks the file d as run by one more process: it fails with
// ETXTBSY while the file is open for writing. The returned function ends
// the hold (when the process runs another program or exits); it may be
// called once.
func DenyWrite(d *Dentry) (release func(), err error) {
	ino := d.inode
	busyMu.Lock()
	defer busyMu.Unlock()
	if writers[ino] > 0 {
		return nil, linux.ETXTBSY
	}
	running[ino]++
	var once sync.Once
	return func() {
		once.Do(func() {
			busyMu.Lock()
			if running[ino]--; running[ino] <= 0 {
				delete(running, ino)
			}
			busyMu.Unlock()
		})
	}, nil
}

// getReadAccess counts a new read-only opener of a regular file: a write
// lease needs there to be none but the holder (lease.go).
func getReadAccess(ino Inode) {
	busyMu.Lock()
	readers[ino]++
	busyMu.Unlock()
}

func putReadAccess(ino Inode) {
	busyMu.Lock()
	defer busyMu.Unlock()
	if readers[ino]--; readers[ino] <= 0 {
		delete(readers, ino)
	}
}

// openCounts returns how many open files read only and may write ino.
func openCounts(ino Inode) (r, w int) {
	busyMu.Lock()
	defer busyMu.Unlock()
	return readers[ino], writers[ino]
}
