package ext4vfs

import (
	"errors"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/mm"
	"shortbread/kernel/pagecache"
)

// pager lets mappings map a regular file's pages in the page cache
// (mm.Pager; the design is in package mm's pager.go and package ext4's
// mmap.go), one per mapping (mmap call). A mapping keeps the inode as
// an open file does, from Pager to Done: an unlinked file stays until
// its last mapping goes. The node knows its mappings' objects (Attach
// to Done), to unmap the pages a truncate or hole punch cuts off.
type pager struct {
	n *node
	o *mm.Shm
}

// Pager returns the file's pager, for a mapping, or false if its pages
// cannot be mapped in place (no page cache, blocks larger than a page).
// The caller's mapping calls Done once.
func (f file) Pager() (mm.Pager, bool) {
	if !f.fs.disk.Mappable(f.ino) {
		return nil, false
	}
	f.fs.disk.Hold(f.ino)
	return &pager{n: f.node}, true
}

// Attach implements mm.Pager.
func (p *pager) Attach(o *mm.Shm) {
	p.o = o
	p.n.mapMu.Lock()
	if p.n.mapped == nil {
		p.n.mapped = make(map[*mm.Shm]bool)
	}
	p.n.mapped[o] = true
	p.n.mapMu.Unlock()
}

// Key implements mm.Pager: the node, one per inode while anything
// holds it (a futex in one file mapped twice is one word).
func (p *pager) Key() any { return p.n }

// mappings lists the objects of the file's mappings now.
func (n *node) mappings() []*mm.Shm {
	n.mapMu.Lock()
	defer n.mapMu.Unlock()
	objs := make([]*mm.Shm, 0, len(n.mapped))
	for o := range n.mapped {
		objs = append(objs, o)
	}
	return objs
}

// unmapPages clears the mappings' entries for pages [first, last) after
// a truncate or hole punch took them out of the page cache (mm's
// UnmapPages): their next touch finds the file as it is now. Called
// without the file system's locks, which a fault takes.
func (n *node) unmapPages(first, last uint64) {
	for _, o := range n.mappings() {
		o.UnmapPages(uintptr(first), uintptr(min(last, uint64(^uintptr(0)))))
	}
}

// mkclean write-protects pages idxs of file ino in its mappings (mm's
// CleanPages) before the page cache writes them back (ext4.SetMkclean).
func (f *FS) mkclean(ino uint32, idxs []uint64) {
	f.mu.Lock()
	var n *node
	if wp, ok := f.nodes[ino]; ok {
		n = wp.Value()
	}
	f.mu.Unlock()
	if n == nil {
		return // no node, no mapping
	}
	objs := n.mappings()
	if len(objs) == 0 {
		return
	}
	pages := make([]uintptr, len(idxs))
	for i, idx := range idxs {
		pages[i] = uintptr(idx)
	}
	for _, o := range objs {
		o.CleanPages(pages)
	}
}

// Downgrade implements mm.Pager.
func (p *pager) Downgrade(idx, pa uintptr) {
	p.n.fs.disk.DowngradePage(p.n.ino, uint64(idx), pa)
}

// HoldPage implements mm.Pager.
func (p *pager) HoldPage(idx uintptr, write bool) (uintptr, error) {
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
func (p *pager) ReleasePage(idx, pa uintptr, write bool) {
	p.n.fs.disk.PutPage(p.n.ino, uint64(idx), pa, write)
}

// Sync implements mm.Pager: msync(MS_SYNC) is fsync of the file.
func (p *pager) Sync() error { return p.n.fs.Sync() }

// Done implements mm.Pager.
func (p *pager) Done() {
	p.n.mapMu.Lock()
	delete(p.n.mapped, p.o)
	p.n.mapMu.Unlock()
	p.n.Closed()
}
