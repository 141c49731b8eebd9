package ext4

// Regular files' data in the page cache (package pagecache), one cached
// file per inode, page i holding the file's bytes [i*4096, (i+1)*4096):
// so an inode's pages are found, and dropped, by the inode, whatever
// blocks hold them. They go
//   - when the inode is freed (its last name and last open file gone:
//     evict), all at once and unwritten, as Linux drops them at the last
//     iput;
//   - past the new size on truncate, and over a punched hole;
//   - when the inode leaves memory (Forget: the VFS let go of it),
//     written back first, as an evicted inode's do on Linux;
//   - clean ones under memory pressure and on drop_caches, by the cache.
//
// Reads fill the pages (with the cache's read-ahead) through
// fileBacking, which maps the file's blocks and reads the disk.
//
// Writes (on a file system whose blocks are no larger than a page) go
// to the pages, which become dirty: the blocks are allocated at write
// time as before (no delayed allocation: ENOSPC is the write's, and the
// block map each dirty page needs is known then), and each page's
// blocks are noted in the inode's dataMap. The cache writes dirty pages
// back by itself (its flusher every 5 s, past its dirty limit, under
// memory pressure) through fileBacking.WriteAt, which takes the blocks
// from the dataMap and never FS.mu, so that write-back can run from
// inside an operation that holds it (a page allocation that reclaims).
// A block allocated for a write (or an unwritten extent a write turns
// written) is fresh until its page is written back: the disk's bytes
// there are stale, so a page read in meanwhile reads zeros there.
//
// Ordered data (jbd2's data=ordered): every file written since the last
// commit has its dirty pages written back by that commit before it
// writes its log (writeCommit), so no committed block map points at
// blocks whose data is not on the disk; Sync (fsync, fdatasync, syncfs,
// sync) writes every file's dirty pages back, then commits and
// flushes. Both write the pages back without FS.mu (a commit's
// write-back of a file a Sync is writing back waits for it: the cache
// writes a file back one write-back at a time).
// Truncate and punch hole take the blocks they free out of the dataMap
// before freeing them, under the dataMap's lock, which a write-back
// holds for its device writes: so no write-back writes a page to a
// block after it was freed (and perhaps given to another file).
//
// A file's pages are read, written, resized and dropped under FS.mu,
// which is what makes a page read in agree with the inode's map and
// size (read, and filled, perhaps holding it only for reading: no
// writer changes the map or size meanwhile); the cache's own work (reclaim, drop_caches, the flusher) needs
// only the dataMap's lock.

import (
	"errors"
	"fmt"
	"sync"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/pagecache"
)

// maxPageBlocks is the most blocks a page holds (1 KiB blocks).
const maxPageBlocks = pagecache.PageSize / 1024

// pageBlocks are the blocks a dirty page is written back to: blk[i]
// holds the page's bytes [i*bs, (i+1)*bs) (0: none, a hole or bytes
// never written through the cache); bit i of fresh says blk[i] was
// allocated or made written since the page was last written back.
type pageBlocks struct {
	blk   [maxPageBlocks]uint64
	fresh uint8
}

// dataMap is one file's pageBlocks by page index. Its lock is held by
// a write-back for its device writes, and taken by truncate and punch
// hole to take blocks out before freeing them.
type dataMap struct {
	mu    sync.Mutex
	pages map[uint64]pageBlocks // protected by mu
}

// pageFile returns in's cached pages, opening them on first use; nil
// without a page cache or for anything but a regular file.
// Preconditions: fs.mu held for writing, or in a handle in's lock (so
// no one else opens in's pages meanwhile: the cache's Open runs without
// pagesMu).
func (fs *FS) pageFile(in *inode) *pagecache.File {
	if fs.pages == nil || in.fileType() != linux.S_IFREG {
		return nil
	}
	if f := fs.fileOf(in.num); f != nil {
		return f
	}
	dm := &dataMap{pages: map[uint64]pageBlocks{}}
	f := fs.pages.Open(fileBacking{fs, in.num, dm}, int64(in.size), pagecache.KindFile)
	fs.pagesMu.Lock()
	defer fs.pagesMu.Unlock()
	if fs.files == nil {
		fs.files = make(map[uint32]*pagecache.File)
		fs.maps = make(map[uint32]*dataMap)
	}
	fs.files[in.num] = f
	fs.maps[in.num] = dm
	return f
}

// fileOf returns inode ino's cached pages, nil if not open.
func (fs *FS) fileOf(ino uint32) *pagecache.File {
	fs.pagesMu.Lock()
	defer fs.pagesMu.Unlock()
	return fs.files[ino]
}

// mapOf returns inode ino's dataMap, nil if its pages are not open.
func (fs *FS) mapOf(ino uint32) *dataMap {
	fs.pagesMu.Lock()
	defer fs.pagesMu.Unlock()
	return fs.maps[ino]
}

// noteDataErr keeps a write-back's failure for the next Sync.
func (fs *FS) noteDataErr(err error) {
	fs.pagesMu.Lock()
	fs.dataErr = errors.Join(fs.dataErr, err)
	fs.pagesMu.Unlock()
}

// buffered reports whether writes to in go through the page cache.
func (fs *FS) buffered(in *inode) bool {
	return fs.pages != nil && in.fileType() == linux.S_IFREG && fs.blockSize <= pagecache.PageSize
}

// noteBlocks records that the n blocks from pblk hold in's logical
// blocks from lblk, to be written back from the cache; fresh: they were
// just allocated or made written (stale on the disk). Preconditions:
// fs.mu held, in's pages open.
func (fs *FS) noteBlocks(in *inode, lblk uint32, pblk uint64, n uint32, fresh bool) {
	dm := fs.mapOf(in.num)
	per := uint64(pagecache.PageSize / fs.blockSize)
	dm.mu.Lock()
	defer dm.mu.Unlock()
	for i := range uint64(n) {
		l := uint64(lblk) + i
		idx, slot := l/per, l%per
		pb := dm.pages[idx]
		pb.blk[slot] = pblk + i
		if fresh {
			pb.fresh |= 1 << slot
		}
		dm.pages[idx] = pb
	}
}

// forgetBlocks takes in's logical blocks from first on (up to last,
// exclusive) out of its dataMap, once any write-back writing them is
// done: the blocks are about to be freed. Preconditions: fs.mu held.
func (fs *FS) forgetBlocks(in *inode, first, last uint64) {
	dm := fs.mapOf(in.num)
	if dm == nil || first >= last {
		return
	}
	per := uint64(pagecache.PageSize / fs.blockSize)
	dm.mu.Lock()
	defer dm.mu.Unlock()
	for idx, pb := range dm.pages {
		for slot := range per {
			if l := idx*per + slot; l >= first && l < last {
				pb.blk[slot] = 0
				pb.fresh &^= 1 << slot
			}
		}
		if pb.blk == ([maxPageBlocks]uint64{}) {
			delete(dm.pages, idx)
		} else {
			dm.pages[idx] = pb
		}
	}
}

// writeCached writes p at off through the page cache: the blocks are
// mapped (allocated for holes, unwritten extents made written) as for a
// write to the disk, noted for write-back, and the bytes copied into
// the cache's pages, dirty. Preconditions: fs.mu held, in buffered.
func (fs *FS) writeCached(in *inode, fm *fileMapping, p []byte, off int64) (int, error) {
	f := fs.pageFile(in)
	bs := int64(fs.blockSize)
	mapped := 0
	var werr error
	for mapped < len(p) {
		pos := off + int64(mapped)
		lblk := uint32(pos / bs)
		inBlk := pos % bs
		pblk, n, fresh, err := fs.mapForWrite(fm, pos, len(p)-mapped)
		if err != nil {
			werr = err
			break
		}
		chunk := min(int64(n)*bs-inBlk, int64(len(p)-mapped))
		fs.noteBlocks(in, lblk, pblk, uint32((inBlk+chunk+bs-1)/bs), fresh)
		mapped += int(chunk)
	}
	// The map stored before a byte is copied: what it could not hold
	// is undone, and the write stops short of it.
	saved := len(fm.changes) > 0 && fm.em != nil
	hadTree := saved && len(fm.em.tree) > 0
	mapped, werr = fs.saveWritten(fm, off, mapped, werr)
	if saved && (hadTree || len(fm.em.tree) > 0) {
		// And in with it: the tree's new root is in's alone until in
		// is written, and a page the copy below reads in first (the
		// rest of a page written in part) is read through the inode
		// loaded afresh, which must find the root that goes with the
		// tree's blocks as they are now. (A root in the inode alone,
		// before and after, points at no block that changed or went:
		// the old one reads the page's old contents right.)
		if err := fs.iput(in); err != nil {
			werr = errors.Join(werr, err)
		}
	}
	if mapped == 0 {
		return 0, werr
	}
	fs.pagesMu.Lock()
	if fs.ordered == nil {
		fs.ordered = make(map[uint32]bool)
		fs.unsynced = make(map[uint32]bool)
	}
	fs.ordered[in.num] = true
	fs.unsynced[in.num] = true
	fs.pagesMu.Unlock()
	f.Resize(max(int64(in.size), off+int64(mapped)))
	n, err := f.Write(p[:mapped], off)
	if err != nil {
		if errors.Is(err, pagecache.ErrNoMemory) {
			err = errors.Join(linux.ENOMEM, err)
		}
		werr = err
	}
	if end := uint64(off) + uint64(n); n > 0 && end > in.size {
		in.size = end
	}
	f.Resize(int64(in.size)) // a short write's pages past the end go
	return n, werr
}

// syncData writes every file's dirty pages back and returns the
// failures since the last call (this write-back's, the cache's own,
// the commits'). Only the files written since the last call can have
// dirty pages, or a failed write-back to report.
// Preconditions: fs.mu held.
func (fs *FS) syncData() error {
	files, err := fs.takeUnsynced()
	clear(fs.ordered) // written back below, before any commit
	return syncFiles(files, err)
}

// takeUnsynced returns the cached files a Sync writes back (those
// written since the last Sync, and every file with writable mappings,
// whose stores the cache does not see) and the failures recorded since
// the last call, and starts the next count. The files stay ordered: a
// commit that closes before their write-back is done waits for it in
// writeCommit (the cache writes a file back one write-back at a time).
// Preconditions: fs.mu held.
func (fs *FS) takeUnsynced() ([]*pagecache.File, error) {
	err := fs.dataErr
	fs.dataErr = nil
	var files []*pagecache.File
	for ino := range fs.mapped {
		if f := fs.files[ino]; f != nil && !fs.unsynced[ino] {
			files = append(files, f)
		}
	}
	for ino := range fs.unsynced {
		if f := fs.files[ino]; f != nil {
			files = append(files, f)
		}
	}
	clear(fs.unsynced)
	return files, err
}

// syncFiles writes files' dirty pages back and returns their failures
// joined to err (the earlier ones), as EIO. It needs no FS.mu: a
// write-back takes only the file's dataMap lock (fileBacking.WriteAt),
// and a file released or truncated meanwhile has no pages, or no
// blocks, left to write.
func syncFiles(files []*pagecache.File, err error) error {
	for _, f := range files {
		err = errors.Join(err, f.Sync()) // the backing's Flush does nothing
	}
	if err != nil {
		return errors.Join(linux.EIO, err)
	}
	return nil
}

// takeOrdered returns the cached files of those written since the last
// commit, for the commit closing now to write back (writeCommit).
// Preconditions: fs.mu held.
func (fs *FS) takeOrdered() []*pagecache.File {
	var files []*pagecache.File
	for ino := range fs.ordered {
		if f := fs.files[ino]; f != nil {
			files = append(files, f)
		}
	}
	clear(fs.ordered)
	return files
}

// readCached reads in's data at off into p (cut at the size already)
// through the page cache. Preconditions: fs.mu held.
func (fs *FS) readCached(f *pagecache.File, in *inode, p []byte, off int64) (int, error) {
	// The size grows by writes and fallocate, which leave the cache
	// alone; truncate has shrunk it already.
	f.Resize(int64(in.size))
	n, err := f.Read(p, off)
	if errors.Is(err, pagecache.ErrNoMemory) {
		err = errors.Join(linux.ENOMEM, err)
	}
	return n, err
}

// readShared is ReadAt for a regular file whose pages are open and of
// the inode's size, holding FS.mu for reading, so that reads of files
// from several CPUs run side by side (the page cache takes concurrent
// reads, filling pages through fileBacking, which only reads the
// file's map). ok false: the pages are not open, or need resizing,
// which ReadAt does holding FS.mu for writing.
func (fs *FS) readShared(ino uint32, p []byte, off int64) (n int, ok bool, err error) {
	fs.rbegin()
	defer fs.rend()
	l := fs.ilock(ino)
	fs.rlockInode(l)
	defer l.RUnlock()
	f, in, err := fs.sizedPages(ino)
	if f == nil {
		return 0, err != nil, err
	}
	if p, err = clipRead(in, p, off); err != nil || len(p) == 0 {
		return 0, true, err
	}
	n, err = f.Read(p, off)
	if errors.Is(err, pagecache.ErrNoMemory) {
		err = errors.Join(linux.ENOMEM, err)
	}
	return n, true, err
}

// sizedPages returns regular file ino's open pages and its inode where
// the pages are of the inode's size, for an operation that shares them
// (readShared, holdShared); f nil where they are not, or the inode
// could not be read (err). Preconditions: FS.mu and the inode's lock
// held for reading.
func (fs *FS) sizedPages(ino uint32) (f *pagecache.File, in *inode, err error) {
	f = fs.fileOf(ino)
	if f == nil {
		return nil, nil, nil
	}
	if in, err = fs.iget(ino); err != nil {
		return nil, nil, err
	}
	if in.fileType() != linux.S_IFREG || !fs.buffered(in) || f.Size() != int64(in.size) {
		return nil, nil, nil
	}
	return f, in, nil
}

// ReadCached copies into dst the bytes of file ino at off if its page
// cache holds every one of them, without waiting: nothing when a
// writer holds the file system's lock (it may be changing them), the
// file has no pages open, or a page is missing. Readers share the lock,
// so cached reads from several CPUs run side by side. It returns the
// bytes copied and whether they are all of dst; a read that reaches the
// end of the file is never all (ReadAt, which knows the size, serves
// it). For vfs.CachedReader: it must not wait or do I/O.
func (fs *FS) ReadCached(ino uint32, dst [][]byte, off int64) (int, bool) {
	if !fs.mu.TryRLock() {
		return 0, false
	}
	defer fs.mu.RUnlock()
	l := fs.ilock(ino)
	if !l.TryRLock() {
		return 0, false // a writer of the file's (handle.go)
	}
	defer l.RUnlock()
	f := fs.fileOf(ino)
	if f == nil {
		return 0, false
	}
	total := 0
	for _, d := range dst {
		total += len(d)
	}
	n, _ := f.ReadCached(dst, off)
	return n, n == total
}

// dropPages drops in's cached pages holding any of bytes [off, end),
// whose copy on the disk changed (a write, a hole punched, a tail
// zeroed). Preconditions: fs.mu held.
func (fs *FS) dropPages(in *inode, off, end int64) {
	if f := fs.fileOf(in.num); f != nil && end > off {
		f.Invalidate(off, end-off)
	}
}

// zeroPageTail clears the bytes from at on of in's cached page holding
// at (a truncate to at). Preconditions: fs.mu held.
func (fs *FS) zeroPageTail(in *inode, at uint64) {
	if f := fs.fileOf(in.num); f != nil {
		f.ZeroFrom(int64(at))
	}
}

// keepHead writes in's dirty pages back when at cuts through a page
// (not at a page boundary), so that the bytes of that page before at
// survive the page being dropped. Preconditions: fs.mu held.
func (fs *FS) keepHead(in *inode, at uint64) {
	f := fs.fileOf(in.num)
	if f == nil || at%pagecache.PageSize == 0 || at >= in.size {
		return
	}
	if err := f.Writeback(); err != nil {
		fs.noteDataErr(err)
	}
}

// resizePages sets the size of in's cached pages to the inode's, dropping
// those wholly past it. Preconditions: fs.mu held.
func (fs *FS) resizePages(in *inode) {
	if f := fs.fileOf(in.num); f != nil {
		f.Resize(int64(in.size))
	}
}

// closePages writes inode ino's dirty pages back, drops every page and
// forgets them (a freed inode has none left: truncate dropped them).
// Preconditions: fs.mu held.
func (fs *FS) closePages(ino uint32) {
	fs.pagesMu.Lock()
	f := fs.files[ino]
	if f != nil {
		delete(fs.files, ino)
		delete(fs.maps, ino)
		delete(fs.ordered, ino)
		delete(fs.unsynced, ino)
	}
	fs.pagesMu.Unlock()
	if f != nil {
		if err := f.Release(); err != nil {
			fs.noteDataErr(err)
		}
	}
}

// Forget drops inode ino's pages from the page cache, written back
// first: the kernel holds the inode no more (no open file, no cached
// name), as Linux drops an inode's pages when it evicts it from memory.
func (fs *FS) Forget(ino uint32) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.closePages(ino)
}

// fileBacking is what the page cache reads a file's pages from and
// writes them back to. Reads: the blocks its map gives, zeros for
// holes, unwritten extents, fresh blocks and bytes past its end; the
// cache calls ReadAt and PrepareRead (its asynchronous read-ahead maps
// a window then and reads it later) only from File.Read, File.Write and
// File.HoldPage, which this package calls holding FS.mu (File.Read
// perhaps only for reading, by several at once: readShared). Writes:
// the blocks the dataMap gives, under the dataMap's lock and without
// FS.mu.
type fileBacking struct {
	fs  *FS
	ino uint32
	dm  *dataMap
}

func (b fileBacking) ReadAt(p []byte, off int64) (int, error) {
	in, err := b.fs.iget(b.ino)
	if err != nil {
		return 0, err
	}
	n, err := b.fs.readBlocks(in, p, off)
	clear(p[n:])
	if err != nil {
		return n, err
	}
	// Fresh blocks hold what the disk had before they were allocated.
	bs := int64(b.fs.blockSize)
	b.dm.mu.Lock()
	defer b.dm.mu.Unlock()
	for pos := int64(0); pos < int64(len(p)); pos += pagecache.PageSize {
		pb, ok := b.dm.pages[uint64((off+pos)/pagecache.PageSize)]
		if !ok || pb.fresh == 0 {
			continue
		}
		for slot := range int64(pagecache.PageSize) / bs {
			if pb.fresh&(1<<slot) != 0 {
				from := min(pos+slot*bs, int64(len(p)))
				clear(p[from:min(from+bs, int64(len(p)))])
			}
		}
	}
	return len(p), nil
}

// PrepareRead implements pagecache.Preparer for the cache's
// asynchronous read-ahead: it maps bytes [off, off+n) now, holding FS.mu
// as for ReadAt, and returns the device reads to do later without it.
// What it saw then is what the pages get: a block freed or a hole
// filled meanwhile is a change (truncate, hole punch, a write to a
// busy page, which waits for the read) that invalidates the pages or
// writes over them once read.
func (b fileBacking) PrepareRead(off int64, n int) (func(p []byte) error, error) {
	fs := b.fs
	in, err := fs.iget(b.ino)
	if err != nil {
		return nil, err
	}
	valid := int64(0) // bytes within the file
	if uint64(off) < in.size {
		valid = min(int64(n), int64(in.size-uint64(off)))
	}
	fm, err := fs.mapping(in)
	if err != nil {
		return nil, err
	}
	// The runs to read: (where in p, bytes, byte on the device); the
	// rest of p reads as zeros.
	type run struct{ at, n, dev int64 }
	var runs []run
	bs := int64(fs.blockSize)
	for done := int64(0); done < valid; {
		pos := off + done
		inBlk := pos % bs
		pblk, cnt, unwritten, err := fm.lookup(uint32(pos/bs), uint32((inBlk+valid-done+bs-1)/bs))
		if err != nil {
			return nil, err
		}
		chunk := min(int64(cnt)*bs-inBlk, valid-done)
		if pblk != 0 && !unwritten {
			runs = append(runs, run{done, chunk, int64(pblk)*bs + inBlk})
		}
		done += chunk
	}
	// Fresh blocks hold what the disk had before they were allocated.
	var fresh [][2]int64
	b.dm.mu.Lock()
	for pos := int64(0); pos < int64(n); pos += pagecache.PageSize {
		pb, ok := b.dm.pages[uint64((off+pos)/pagecache.PageSize)]
		if !ok || pb.fresh == 0 {
			continue
		}
		for slot := range int64(pagecache.PageSize) / bs {
			if pb.fresh&(1<<slot) != 0 {
				from := min(pos+slot*bs, int64(n))
				fresh = append(fresh, [2]int64{from, min(from+bs, int64(n))})
			}
		}
	}
	b.dm.mu.Unlock()
	return func(p []byte) error {
		clear(p)
		for _, r := range runs {
			if _, err := fs.dev.ReadAt(p[r.at:r.at+r.n], r.dev); err != nil {
				return fmt.Errorf("ext4: read inode %d: %w", b.ino, errors.Join(linux.EIO, err))
			}
		}
		for _, z := range fresh {
			clear(p[z[0]:z[1]])
		}
		return nil
	}, nil
}

// WriteAt writes back pages from off (a page boundary): each block the
// dataMap names for them, runs of consecutive blocks in one request;
// the last block, cut by the file's end, is filled out with zeros.
func (b fileBacking) WriteAt(p []byte, off int64) (int, error) {
	fs := b.fs
	bs := int64(fs.blockSize)
	per := int64(pagecache.PageSize) / bs
	b.dm.mu.Lock()
	defer b.dm.mu.Unlock()
	var first error
	var runBlk uint64 // the run's first block
	var runOff int64  // where its bytes start in p
	var runLen int64  // blocks in it
	flush := func() {
		if runLen == 0 {
			return
		}
		data := p[runOff:min(runOff+runLen*bs, int64(len(p)))]
		if int64(len(data)) < runLen*bs {
			full := make([]byte, runLen*bs)
			copy(full, data)
			data = full
		}
		if _, err := fs.dev.WriteAt(data, int64(runBlk)*bs); err != nil {
			first = errors.Join(first, fmt.Errorf("ext4: write back inode %d: %w", b.ino, errors.Join(linux.EIO, err)))
		} else {
			b.clearFresh(off, runOff, runLen)
		}
		runLen = 0
	}
	for pos := int64(0); pos < int64(len(p)); pos += pagecache.PageSize {
		pb, ok := b.dm.pages[uint64((off+pos)/pagecache.PageSize)]
		for slot := range per {
			from := pos + slot*bs
			if !ok || pb.blk[slot] == 0 || from >= int64(len(p)) {
				flush()
				continue
			}
			if runLen > 0 && pb.blk[slot] == runBlk+uint64(runLen) && from == runOff+runLen*bs {
				runLen++
				continue
			}
			flush()
			runBlk, runOff, runLen = pb.blk[slot], from, 1
		}
	}
	flush()
	if first != nil {
		return 0, first
	}
	return len(p), nil
}

// clearFresh marks the n blocks written from byte from of a write-back
// of pages from off as on the disk. Preconditions: b.dm.mu held.
func (b fileBacking) clearFresh(off, from, n int64) {
	bs := int64(b.fs.blockSize)
	for i := range n {
		at := off + from + i*bs
		idx := uint64(at / pagecache.PageSize)
		if pb, ok := b.dm.pages[idx]; ok {
			pb.fresh &^= 1 << (at % pagecache.PageSize / bs)
			b.dm.pages[idx] = pb
		}
	}
}

// Flush does nothing: Sync flushes the device once for every file.
func (b fileBacking) Flush() error { return nil }
