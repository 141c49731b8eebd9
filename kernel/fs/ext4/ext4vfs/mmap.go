package ext4vfs

import (
	"errors"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/mm"
	"shortbread/kernel/pagecache"
)

// pager lets mappings map a regular file's pages in the page cache
// (mm.Pager; the design is in package mm's pager.go and package ext4's
// mmap.go). Every pager of one inode is equal (a futex in one file
// mapped twice is one word). A mapping keeps the inode as an open file
// does, from Pager to Done: an unlinked file stays until its last
// mapping goes.
type pager struct{ n *node }

// Pager returns the file's pager, for a mapping, or false if its pages
// cannot be mapped in place (no page cache, blocks larger than a page).
// The caller's mapping calls Done once.
func (f file) Pager() (mm.Pager, bool) {
	if !f.fs.disk.Mappable(f.ino) {
		return nil, false
	}
	f.fs.disk.Hold(f.ino)
	return pager{f.node}, true
}

// HoldPage implements mm.Pager.
func (p pager) HoldPage(idx uintptr, write bool) (uintptr, error) {
	pa, err := p.n.fs.disk.HoldPage(p.n.ino, uint64(idx), write)
	switch {
	case err == nil:
		return pa, nil
	case errors.Is(err, pagecache.ErrNoMemory) || errors.Is(err, linux.ENOMEM):
		return 0, mm.ErrNoMem
	case !errors.Is(err, pagecache.ErrRange):
		p.n.fs.errno(err) // logs corruption and I/O failures
	}
	return 0, mm.ErrBus // past the end, ENOSPC, EROFS, EIO: SIGBUS, as on Linux
}

// ReleasePage implements mm.Pager.
func (p pager) ReleasePage(idx, pa uintptr, write bool) {
	p.n.fs.disk.PutPage(p.n.ino, uint64(idx), pa, write)
}

// Sync implements mm.Pager: msync(MS_SYNC) is fsync of the file.
func (p pager) Sync() error { return p.n.fs.Sync() }

// Done implements mm.Pager.
func (p pager) Done() { p.n.Closed() }
