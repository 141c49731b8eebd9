package ext4

// Regular files' data in the page cache (package pagecache), one cached
// file per inode, page i holding the file's bytes [i*4096, (i+1)*4096):
// so an inode's pages are found, and dropped, by the inode, whatever
// blocks hold them. They go
//   - when the inode is freed (its last name and last open file gone:
//     evict), all at once, as Linux drops them at the last iput;
//   - past the new size on truncate, and over a punched hole;
//   - when the inode leaves memory (Forget: the VFS let go of it), as an
//     evicted inode's do on Linux;
//   - under memory pressure and on drop_caches, by the cache itself.
//
// Reads fill the pages (with the cache's read-ahead) through
// fileBacking, which maps the file's blocks and reads the disk. Writes
// still go to the disk at once, and drop the pages they cover, so every
// cached page is clean: the cache never writes a page back, and the
// journal's ordering of the disk's writes is what it is without it.
//
// The pages of a file are only read, resized and dropped under FS.mu,
// which is what makes a page read in agree with the inode's map and
// size; the cache's own work (reclaim, drop_caches) drops clean pages
// only, without calling back here.

import (
	"errors"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/pagecache"
)

// pageFile returns in's cached pages, opening them on first use; nil
// without a page cache or for anything but a regular file.
// Preconditions: fs.mu held.
func (fs *FS) pageFile(in *inode) *pagecache.File {
	if fs.pages == nil || in.fileType() != linux.S_IFREG {
		return nil
	}
	f := fs.files[in.num]
	if f == nil {
		f = fs.pages.Open(fileBacking{fs, in.num}, int64(in.size), pagecache.KindFile)
		if fs.files == nil {
			fs.files = make(map[uint32]*pagecache.File)
		}
		fs.files[in.num] = f
	}
	return f
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

// dropPages drops in's cached pages holding any of bytes [off, end),
// whose copy on the disk changed (a write, a hole punched, a tail
// zeroed). Preconditions: fs.mu held.
func (fs *FS) dropPages(in *inode, off, end int64) {
	if f := fs.files[in.num]; f != nil && end > off {
		f.Invalidate(off, end-off)
	}
}

// resizePages sets the size of in's cached pages to the inode's, dropping
// those wholly past it. Preconditions: fs.mu held.
func (fs *FS) resizePages(in *inode) {
	if f := fs.files[in.num]; f != nil {
		f.Resize(int64(in.size))
	}
}

// closePages drops every page of inode ino and forgets them.
// Preconditions: fs.mu held.
func (fs *FS) closePages(ino uint32) {
	if f := fs.files[ino]; f != nil {
		delete(fs.files, ino)
		f.Release() // clean pages only: nothing is written
	}
}

// Forget drops inode ino's pages from the page cache: the kernel holds
// the inode no more (no open file, no cached name), as Linux drops an
// inode's pages when it evicts it from memory.
func (fs *FS) Forget(ino uint32) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.closePages(ino)
}

// fileBacking is what the page cache reads a file's pages from: the
// blocks its map gives, zeros for holes, unwritten extents and bytes
// past its end. The cache calls it only from File.Read, which this
// package calls holding FS.mu; it takes no lock itself.
type fileBacking struct {
	fs  *FS
	ino uint32
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
	return len(p), nil
}

// errNoWriteback: the cache asked to write a page back, which it never
// should (the pages are clean: writes go to the disk).
var errNoWriteback = errors.New("ext4: a cached page of file data to write back")

func (b fileBacking) WriteAt(p []byte, off int64) (int, error) { return 0, errNoWriteback }

func (b fileBacking) Flush() error { return nil }
