package tmpfs

import (
	"math"
	"sync/atomic"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/mm"
	"shortbread/kernel/vfs"
)

const pageSize = mm.PageSize

// file is a regular file. Its data is a sparse set of pages in an
// mm.Shm: a page that was never written, or lies in a hole, reads as
// zeros and takes no memory. The same pages are what MAP_SHARED maps, so
// reads, writes and mappings all see one copy.
//
// The file holds a reference to its pages while it is in use: while it
// has a name (nlink) or an open file refers to it. When both are gone it
// drops the reference, and the pages go back at once unless a mapping
// (a program exec'd from the file, an mmap) still holds them; the inode
// itself is then only Go memory that nothing refers to.
type file struct {
	node
	vfs.AccessCounts         // open files and runs, for the VFS (ETXTBSY, leases)
	size             int64   // protected by mu
	data             *mm.Shm // made at the first write; protected by mu
	held             bool    // the file holds a reference to data; protected by mu
	// opens counts the open files of the inode (and the VFS's holds).
	// It changes without mu,
	// so that opens and closes of one file on several CPUs do not queue
	// on the inode's lock; only a change that may take the file in or
	// out of use (with no names left) takes mu to hold or drop the
	// pages (Opened, Closed).
	opens atomic.Int64
	seals uint32 // linux.F_SEAL_* (seal.go); protected by mu
	// reaped: the file went out of use and its pages with it (no
	// mapping held them): an open that raced the last unlink finds it
	// so and fails (Reaped) instead of reviving an empty page store.
	// Protected by mu.
	reaped bool
}

// Opened counts an open file of the inode (vfs.OpenCounter).
func (f *file) Opened() {
	f.opens.Add(1)
	// A file with a name is in use already. The count is raised before
	// the link count is read, and the last unlink lowers the link count
	// before it reads the open count (linksChanged): one of the two
	// sees the other's change and holds the pages under mu.
	if f.nlink.Load() == 0 {
		f.linksChanged()
	}
}

// Closed counts the release of an open file.
func (f *file) Closed() {
	n := f.opens.Add(-1)
	if n < 0 {
		panic("tmpfs: more closes than opens")
	}
	if n == 0 && f.nlink.Load() == 0 {
		f.linksChanged()
	}
}

// Hold keeps the file in use across the removal of its name
// (vfs.Holder), so that its pages are freed by Drop, after the VFS has
// unlocked the directory. It counts as an open file.
func (f *file) Hold() { f.Opened() }

// Drop ends a Hold.
func (f *file) Drop() { f.Closed() }

// linksChanged is called after the link count or the open count changed
// in a way that may take the file out of use or back into it.
func (f *file) linksChanged() {
	f.mu.Lock()
	f.holdLocked()
	f.mu.Unlock()
}

// holdLocked takes or drops the file's reference to its pages as it comes
// into use or goes out of it. A file out of use can come back: a running
// program's /proc/<pid>/exe opens its file after the last name went, and
// the pages are still there if the program's mappings still hold them.
// Preconditions: f.mu is held.
func (f *file) holdLocked() {
	inUse := f.nlink.Load() > 0 || f.opens.Load() > 0
	switch {
	case f.data == nil || inUse == f.held || f.reaped:
	case inUse:
		f.data.IncRef()
		f.held = true
		f.data.CountIn(&f.fs.used)
	default:
		f.data.CountIn(nil)
		f.reaped = f.data.DecRef()
		f.held = false
	}
}

// Reaped reports whether the file's pages went with its last name and
// open file (vfs.Reaper): an open that found it before the unlink must
// fail, as if it had come after.
func (f *file) Reaped() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reaped
}

// pages is the number of pages holding data.
func (f *file) pages() int {
	if f.data == nil {
		return 0
	}
	return f.data.Pages()
}

// SharedPages returns the file's pages for a mapping, with a reference
// the caller drops once the mapping holds its own (or it gave up).
func (f *file) SharedPages() *mm.Shm {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ensureData()
	f.data.IncRef()
	return f.data
}

// ensureData makes the page store. Preconditions: f.mu is held; the file
// is in use (only a name or an open file reaches it).
func (f *file) ensureData() {
	if f.data == nil {
		f.data = mm.NewShm(f.fs.phys) // the file's reference
		f.held = true
		f.data.CountIn(&f.fs.used)
		f.data.SetSize(func() int64 {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.size
		})
	}
}

func (f *file) Attr() vfs.Attr {
	f.mu.RLock()
	defer f.mu.RUnlock()
	a := f.attr()
	a.Size = f.size
	a.Blocks = int64(f.pages()) * (pageSize / 512)
	return a
}

func (f *file) SetAttr(s *vfs.SetAttr) error {
	if s.Mask&vfs.SetSize != 0 && s.Size < 0 {
		return linux.EINVAL
	}
	now := f.fs.now()
	f.mu.Lock()
	var cut *mm.Shm
	if s.Mask&vfs.SetSize != 0 {
		if err := f.sealedResize(s.Size); err != nil {
			f.mu.Unlock()
			return err
		}
		if s.Size < f.size {
			cut = f.data
		}
		f.resize(s.Size)
	}
	f.Apply(s, now)
	f.mu.Unlock()
	if cut != nil {
		// The pages cut off leave the mappings too (SIGBUS at their next
		// touch, as on Linux); a fault takes f.mu (the size), so this
		// comes after it is released.
		cut.UnmapPages(uintptr((s.Size+pageSize-1)/pageSize), ^uintptr(0))
	}
	return nil
}

// resize sets the size, freeing the pages past it and zeroing the tail
// of the last page, so a later extension reads zeros.
// Preconditions: f.mu is held.
func (f *file) resize(size int64) {
	if size < f.size {
		if f.data != nil {
			last := (size + pageSize - 1) / pageSize // first page wholly past the end
			f.data.Truncate(uintptr(last))
			if off := size % pageSize; off != 0 {
				if p, _ := f.data.Page(uintptr(size/pageSize), false); p != nil {
					clear(p[off:])
				}
			}
		}
	}
	f.size = size
}

// ReadsExactly implements vfs.ExactReader: ReadAt writes every byte it
// reports, zeros for holes.
func (*file) ReadsExactly() {}

// ReadAt reads from off; past the end it returns 0 bytes. The VFS moves
// the access time afterwards (TouchAtime), as the mount says.
func (f *file) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, linux.EINVAL
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if off >= f.size || len(p) == 0 {
		return 0, nil
	}
	n := int(min(int64(len(p)), f.size-off))
	for done := 0; done < n; {
		idx, in := (off+int64(done))/pageSize, int((off+int64(done))%pageSize)
		chunk := min(n-done, pageSize-in)
		var pg *[pageSize]byte
		if f.data != nil {
			pg, _ = f.data.Page(uintptr(idx), false)
		}
		if pg != nil {
			copy(p[done:done+chunk], pg[in:])
		} else {
			clear(p[done : done+chunk])
		}
		done += chunk
	}
	return n, nil
}

// TouchAtime moves the access time to now after a read (vfs.Atimer):
// always when strict, else as relatime does, when it is not after the
// modification or change time or is a day old. The check takes the
// lock for reading only, so readers of one file do not queue on it.
func (n *node) TouchAtime(strict bool) {
	now := n.fs.now()
	n.mu.RLock()
	need := n.atimeStale(strict, now)
	n.mu.RUnlock()
	if need {
		n.mu.Lock()
		if n.atimeStale(strict, now) {
			n.Atime = now
		}
		n.mu.Unlock()
	}
}

// atimeStale reports whether a read at now moves the access time.
// Preconditions: n.mu is held.
func (n *node) atimeStale(strict bool, now linux.Timespec) bool {
	return vfs.AtimeStale(n.Atime, n.Mtime, n.Ctime, now, strict)
}

// WriteAt writes at off, extending the file as needed.
func (f *file) WriteAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, linux.EINVAL
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.write(p, off)
}

// Append writes at the end.
func (f *file) Append(p []byte) (int, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.write(p, f.size)
	return n, f.size, err
}

// write is WriteAt with f.mu held. Files end at MAX_LFS_FILESIZE
// (2^63-1): a write starting there fails with EFBIG, one crossing it is
// cut short.
func (f *file) write(p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if off >= math.MaxInt64 {
		return 0, linux.EFBIG
	}
	if room := math.MaxInt64 - off; int64(len(p)) > room {
		p = p[:room]
	}
	allowed, err := f.sealedWrite(off, int64(len(p)))
	if err != nil {
		return 0, err
	}
	p = p[:allowed]
	f.ensureData()
	for done := 0; done < len(p); {
		idx, in := (off+int64(done))/pageSize, int((off+int64(done))%pageSize)
		pg, err := f.newPage(uintptr(idx))
		if err != nil {
			if done > 0 {
				p = p[:done] // a short write, then ENOSPC next time
				break
			}
			return 0, linux.ENOSPC
		}
		done += copy(pg[in:], p[done:])
	}
	if end := off + int64(len(p)); end > f.size {
		f.size = end
	}
	now := f.fs.now()
	f.Mtime, f.Ctime = now, now
	return len(p), nil
}

// newPage returns page idx of the file's data, allocating it if it has
// none and the file system's size allows one more.
// Preconditions: f.mu is held; f.data exists.
func (f *file) newPage(idx uintptr) (*[pageSize]byte, error) {
	if pg, _ := f.data.Page(idx, false); pg != nil {
		return pg, nil
	}
	if f.fs.full() {
		return nil, linux.ENOSPC
	}
	return f.data.Page(idx, true)
}

// Allocate implements fallocate(2) for tmpfs, as Linux's shmem_fallocate:
// mode 0 allocates (zeroed) pages for [off, off+n) and extends the size
// to cover them, linux.FALLOC_FL_KEEP_SIZE allocates without extending,
// and FALLOC_FL_PUNCH_HOLE|KEEP_SIZE makes the range read as zeros,
// freeing whole pages. A range that cannot be allocated fails with
// ENOSPC and keeps the pages it got, as Linux keeps what it allocated.
func (f *file) Allocate(mode uint32, off, n int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	end := off + n
	if mode&linux.FALLOC_FL_PUNCH_HOLE != 0 {
		if f.seals&writeSeals != 0 {
			return linux.EPERM
		}
		if f.data == nil {
			return nil
		}
		first, last := (off+pageSize-1)/pageSize, end/pageSize // whole pages inside
		f.data.PunchHole(uintptr(first), uintptr(last))
		for _, r := range [][2]int64{{off, min(end, first*pageSize)}, {max(off, last*pageSize), end}} {
			if r[0] >= r[1] {
				continue
			}
			if pg, _ := f.data.Page(uintptr(r[0]/pageSize), false); pg != nil {
				clear(pg[r[0]%pageSize : (r[1]-1)%pageSize+1])
			}
		}
		now := f.fs.now()
		f.Mtime, f.Ctime = now, now
		return nil
	}
	if f.seals&linux.F_SEAL_GROW != 0 && end > f.size {
		return linux.EPERM
	}
	f.ensureData()
	for idx := off / pageSize; idx*pageSize < end; idx++ {
		if _, err := f.newPage(uintptr(idx)); err != nil {
			return linux.ENOSPC
		}
	}
	if mode&linux.FALLOC_FL_KEEP_SIZE == 0 && end > f.size {
		f.size = end
	}
	f.Ctime = f.fs.now()
	return nil
}
