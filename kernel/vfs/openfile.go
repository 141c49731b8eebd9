package vfs

import (
	"sync"
	"sync/atomic"

	"shortbread/kernel/abi/linux"
)

// OpenFile is an open file description: what open(2), pipe(2) and the
// like create and file descriptors refer to. It holds the file position
// and the status flags, both shared by every descriptor dup'ed or
// inherited from the same open.
//
// An OpenFile is reference counted: each FDTable slot holds one
// reference, and a system call using a file holds another (FDTable.Get,
// which takes it without a lock and never from zero) so that a
// concurrent close cannot release the file under it. The File's
// Release runs when the count drops to zero; that is when a pipe's writer
// goes away and its reader sees end of file.
type OpenFile struct {
	refs     atomic.Int64
	dentry   *Dentry // nil for files with no path
	name     string  // what /proc/<pid>/fd shows for a file with no path, if set
	inode    Inode
	file     File
	seekable bool                      // file implements Seeker
	writer   bool                      // counted as a writer of a regular file (textbusy.go)
	flags    atomic.Uint32             // access mode and status flags (F_GETFL)
	reader   bool                      // counted as a read-only opener of a regular file (lease.go)
	async    atomic.Pointer[fileAsync] // owner and signal for O_ASYNC and leases (async.go)

	onRelease atomic.Pointer[releaseWatchers] // told of the last reference's release (onrelease.go)

	posMu sync.Mutex // serializes the users of pos
	pos   int64      // protected by posMu
}

func newOpenFile(d *Dentry, ino Inode, file File, flags uint32) *OpenFile {
	if c, ok := ino.(OpenCounter); ok {
		c.Opened()
	}
	f := &OpenFile{dentry: d, inode: ino, file: file}
	if d != nil && d.mount != nil {
		d.mount.files.Add(1)
	}
	_, f.seekable = file.(Seeker)
	f.flags.Store(flags)
	f.refs.Store(1)
	liveFiles.Add(1)
	return f
}

// NewFile returns an open file with no path: a pipe end, an eventfd, an
// epoll instance, a socket. ino answers fstat (see NewAnonInode); flags
// are the access mode and status flags F_GETFL reports. It holds one
// reference.
func NewFile(ino Inode, file File, flags uint32) *OpenFile {
	return newOpenFile(nil, ino, file, flags)
}

// NewUnlinkedFile returns an open regular file that has no path, I/O on
// ino (memfd_create's file); name is what /proc/<pid>/fd shows for it.
// flags are as for NewFile. It holds one reference.
func NewUnlinkedFile(ino Regular, flags uint32, name string) *OpenFile {
	f := newOpenFile(nil, ino, regularFile{ino}, flags|linux.O_LARGEFILE)
	f.name = name
	if acc := flags & linux.O_ACCMODE; acc == linux.O_WRONLY || acc == linux.O_RDWR {
		getWriteAccess(ino) // a file nobody runs: cannot fail
		f.writer = true
	}
	return f
}

// Name returns the name given to a file with no path, or "".
func (f *OpenFile) Name() string { return f.name }

// IncRef takes a reference.
// Preconditions: the caller holds one.
func (f *OpenFile) IncRef() { f.refs.Add(1) }

// tryIncRef takes a reference unless the count already reached zero
// (the file is being released and must not come back): how FDTable.Get,
// which holds no reference while it looks, takes one.
func (f *OpenFile) tryIncRef() bool {
	for {
		n := f.refs.Load()
		if n <= 0 {
			return false
		}
		if f.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// DecRef drops a reference, releasing the file with the last one.
func (f *OpenFile) DecRef() {
	switch n := f.refs.Add(-1); {
	case n == 0:
		f.tellReleased()
		if f.dentry != nil && !f.IsPath() && watching.Load() != 0 {
			if f.writable() {
				notifyFile(f.dentry, InCloseWrite)
			} else {
				notifyFile(f.dentry, InCloseNowrite)
			}
		}
		f.stopAsync()
		releaseLocks(f.inode, f) // its open-file-description locks, flock locks and leases
		if f.reader {
			putReadAccess(f.inode)
		}
		if f.writer {
			putWriteAccess(f.inode)
			if f.dentry != nil && f.dentry.mount != nil {
				f.dentry.mount.writers.Add(-1)
			}
		}
		liveFiles.Add(-1)
		f.file.Release()
		if c, ok := f.inode.(OpenCounter); ok {
			c.Closed()
		}
		if f.dentry != nil && f.dentry.mount != nil {
			f.dentry.mount.closed()
		}
	case n < 0:
		panic("vfs: OpenFile reference count below zero")
	}
}

// HoldMount keeps f's mount in use, as an open file does, until the
// returned function is called (once): umount without MNT_DETACH is
// EBUSY, and a lazily detached mount keeps its file system. A mapping of
// a file whose pages a cache keeps takes such a hold for its life, as
// Linux's mapping holds its file: a fault or a write-back through it
// after the file system was released would read or write a disk that
// may be mounted elsewhere by then.
func (f *OpenFile) HoldMount() (release func()) {
	if f.dentry == nil || f.dentry.mount == nil {
		return func() {}
	}
	m := f.dentry.mount
	m.files.Add(1)
	var once sync.Once
	return func() { once.Do(m.closed) }
}

// Dentry returns the file's place in the tree, or nil for a file with no path.
func (f *OpenFile) Dentry() *Dentry { return f.dentry }

// Inode returns the file's inode.
func (f *OpenFile) Inode() Inode { return f.inode }

// Impl returns the File behind the open file, for calls that depend on
// its kind (ioctl on a terminal, epoll_ctl on an epoll instance).
func (f *OpenFile) Impl() File { return f.file }

// Flags returns the access mode and status flags, as F_GETFL does.
func (f *OpenFile) Flags() uint32 { return f.flags.Load() }

// setflMask holds the status flags F_SETFL may change (SETFL_MASK).
const setflMask = linux.O_APPEND | linux.O_NONBLOCK | linux.O_DIRECT | linux.O_NOATIME | linux.O_ASYNC

// SetFlags changes the status flags F_SETFL may change: O_APPEND,
// O_NONBLOCK, O_ASYNC, O_DIRECT and O_NOATIME; other bits are ignored.
func (f *OpenFile) SetFlags(flags uint32) {
	for {
		old := f.flags.Load()
		if f.flags.CompareAndSwap(old, old&^setflMask|flags&setflMask) {
			return
		}
	}
}

// IsPath reports whether the file was opened with O_PATH: it names a
// file but cannot be read, written or changed through.
func (f *OpenFile) IsPath() bool { return f.Flags()&linux.O_PATH != 0 }

func (f *OpenFile) readable() bool {
	fl := f.Flags()
	acc := fl & linux.O_ACCMODE
	return fl&linux.O_PATH == 0 && (acc == linux.O_RDONLY || acc == linux.O_RDWR)
}

func (f *OpenFile) writable() bool {
	fl := f.Flags()
	acc := fl & linux.O_ACCMODE
	return fl&linux.O_PATH == 0 && (acc == linux.O_WRONLY || acc == linux.O_RDWR)
}

func (f *OpenFile) blocking(intr <-chan struct{}) Blocking {
	fl := f.Flags()
	return Blocking{NonBlock: fl&linux.O_NONBLOCK != 0, Intr: intr, Direct: fl&linux.O_DIRECT != 0}
}

// MayBlock reports whether reads and writes can wait for another party
// (pipes, terminals, sockets: files without a position).
func (f *OpenFile) MayBlock() bool { return !f.seekable }

// Read reads at the file position and advances it, like read(2). It may
// block unless the file is O_NONBLOCK; intr interrupts the wait.
func (f *OpenFile) Read(p []byte, intr <-chan struct{}) (int, error) {
	if !f.readable() {
		return 0, linux.EBADF
	}
	if !f.seekable {
		n, err := f.file.Read(f.blocking(intr), p, 0)
		f.read(n, len(p), err)
		return n, err
	}
	f.posMu.Lock()
	n, err := f.file.Read(f.blocking(intr), p, f.pos)
	f.pos += int64(n)
	f.posMu.Unlock()
	f.read(n, len(p), err)
	return n, err
}

// ReadsExactly reports whether the file writes every byte of a read it
// reports (see ExactReader).
func (f *OpenFile) ReadsExactly() bool {
	if r, ok := f.file.(regularFile); ok {
		_, ok := r.r.(ExactReader)
		return ok
	}
	_, ok := f.file.(ExactReader)
	return ok
}

// cachedReader returns the file as a CachedReader (a regular file's
// inode, or the File itself), or nil.
func (f *OpenFile) cachedReader() CachedReader {
	if r, ok := f.file.(regularFile); ok {
		c, _ := r.r.(CachedReader)
		return c
	}
	c, _ := f.file.(CachedReader)
	return c
}

// CachedReads reports whether ReadCached may serve reads of the file
// (not when it is O_DIRECT: those go to the disk).
func (f *OpenFile) CachedReads() bool {
	return f.seekable && f.Flags()&linux.O_DIRECT == 0 && f.cachedReader() != nil
}

// ReadCached is Pread at off, or Read at the file position when off <
// 0, served whole from memory into dst (see CachedReader); the position
// moves, and the caller calls AfterRead once it may wait again. It
// returns false when it cannot serve the whole read so (the file is not
// a CachedReader, or is O_DIRECT, or the bytes are not all in memory,
// or another read holds the position, or the call is one Pread
// refuses): then nothing happened but bytes copied into dst, which the
// ordinary read that must follow overwrites.
func (f *OpenFile) ReadCached(dst [][]byte, off int64) (int, bool) {
	c := f.cachedReader()
	if c == nil || !f.seekable || !f.readable() || f.Flags()&linux.O_DIRECT != 0 {
		return 0, false
	}
	if off >= 0 {
		asked := int64(0)
		for _, d := range dst {
			asked += int64(len(d))
		}
		if off+asked < 0 {
			return 0, false
		}
		return c.ReadCached(dst, off)
	}
	if !f.posMu.TryLock() {
		return 0, false
	}
	defer f.posMu.Unlock()
	n, all := c.ReadCached(dst, f.pos)
	if all {
		f.pos += int64(n)
	}
	return n, all
}

// AfterRead follows a ReadCached of asked bytes that served n, as Read
// and Pread do themselves: the access time, IN_ACCESS.
func (f *OpenFile) AfterRead(n, asked int) { f.read(n, asked, nil) }

// read follows a read of asked bytes that returned n: the access time
// moves as the mount's mode says, as Linux's does for every read that
// asked for bytes and did not fail (at the end of a file too; a pipe or
// other file without a position only when it returned some), and
// IN_ACCESS is raised for bytes read.
func (f *OpenFile) read(n, asked int, err error) {
	if n > 0 || f.seekable && asked > 0 && err == nil {
		f.touchAtime()
	}
	f.accessed(n, InAccess)
}

// accessed raises an inotify event (IN_ACCESS, IN_MODIFY) for n bytes
// read or written through a file with a path.
func (f *OpenFile) accessed(n int, mask uint32) {
	if n > 0 && f.dentry != nil && watching.Load() != 0 {
		notifyFile(f.dentry, mask)
	}
}

// appender is implemented by Files that can write at the end atomically.
type appender interface {
	Append(p []byte) (n int, end int64, err error)
}

// Write writes at the file position, or at the end with O_APPEND, and
// advances the position, like write(2). A write that fails with EPIPE
// must raise SIGPIPE; it may have written some bytes first.
func (f *OpenFile) Write(p []byte, intr <-chan struct{}) (int, error) {
	if !f.writable() {
		return 0, linux.EBADF
	}
	if !f.seekable {
		n, err := f.file.Write(f.blocking(intr), p, 0)
		f.accessed(n, InModify)
		return n, err
	}
	f.posMu.Lock()
	var n int
	var err error
	if a, ok := f.file.(appender); ok && f.Flags()&linux.O_APPEND != 0 {
		var end int64
		n, end, err = a.Append(p)
		if n > 0 || err == nil {
			f.pos = end
		}
	} else {
		n, err = f.file.Write(f.blocking(intr), p, f.pos)
		f.pos += int64(n)
	}
	f.posMu.Unlock()
	f.accessed(n, InModify)
	return n, err
}

// Pread reads at off without using or moving the file position.
//
// Linux asks whether the file can be read at an offset (ESPIPE) before
// whether it was opened for reading (EBADF), and refuses a range whose
// end does not fit in an off_t (rw_verify_area).
func (f *OpenFile) Pread(p []byte, off int64, intr <-chan struct{}) (int, error) {
	if f.IsPath() {
		return 0, linux.EBADF
	}
	if !f.seekable {
		return 0, linux.ESPIPE
	}
	if !f.readable() {
		return 0, linux.EBADF
	}
	if off < 0 || off+int64(len(p)) < 0 {
		return 0, linux.EINVAL
	}
	n, err := f.file.Read(f.blocking(intr), p, off)
	f.read(n, len(p), err)
	return n, err
}

// Pwrite writes at off without using or moving the file position. Like
// Linux (see BUGS in pwrite(2)) it appends when the file is O_APPEND.
func (f *OpenFile) Pwrite(p []byte, off int64, intr <-chan struct{}) (int, error) {
	if f.IsPath() {
		return 0, linux.EBADF
	}
	if !f.seekable {
		return 0, linux.ESPIPE
	}
	if !f.writable() {
		return 0, linux.EBADF
	}
	if off < 0 || off+int64(len(p)) < 0 {
		return 0, linux.EINVAL
	}
	var n int
	var err error
	if a, ok := f.file.(appender); ok && f.Flags()&linux.O_APPEND != 0 {
		n, _, err = a.Append(p)
	} else {
		n, err = f.file.Write(f.blocking(intr), p, off)
	}
	f.accessed(n, InModify)
	return n, err
}

// Seek moves the file position like lseek(2) and returns it.
func (f *OpenFile) Seek(off int64, whence int) (int64, error) {
	if f.IsPath() {
		return 0, linux.EBADF
	}
	s, ok := f.file.(Seeker)
	if !ok {
		return 0, linux.ESPIPE
	}
	f.posMu.Lock()
	defer f.posMu.Unlock()
	n, err := s.Lseek(f.pos, off, whence)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, linux.EINVAL
	}
	f.pos = n
	return n, nil
}

// Getdents fills buf with struct linux_dirent64 records from the file
// position on, like getdents64(2), and returns the bytes used: 0 at the
// end of the directory, EINVAL when not even one record fits.
func (f *OpenFile) Getdents(buf []byte) (int, error) {
	if f.IsPath() {
		return 0, linux.EBADF
	}
	d, ok := f.file.(*dirFile)
	if !ok {
		return 0, linux.ENOTDIR
	}
	f.posMu.Lock()
	defer f.posMu.Unlock()
	n, next, err := d.getdents(f.pos, buf)
	if err != nil {
		return 0, err
	}
	f.pos = next
	f.touchAtime()
	return n, nil
}

// Attr returns the attributes of the file, as fstat(2) reports them.
func (f *OpenFile) Attr() Attr { return f.inode.Attr() }

// Truncate sets the size of the file like ftruncate(2): the file must be
// open for writing (EINVAL otherwise, or EBADF for O_PATH) and regular.
func (f *OpenFile) Truncate(size int64) error {
	if f.IsPath() {
		return linux.EBADF
	}
	if !f.writable() || size < 0 {
		return linux.EINVAL
	}
	if f.dentry != nil && f.dentry.mode != linux.S_IFREG {
		return linux.EINVAL
	}
	if _, ok := f.file.(regularFile); f.dentry == nil && !ok {
		return linux.EINVAL // a pipe, a socket, an eventfd
	}
	if err := truncate(f.inode, size); err != nil {
		return err
	}
	notifyFile(f.dentry, InModify)
	return nil
}

// Pollable reports whether the file's readiness can change, so epoll
// accepts it (regular files and directories are always ready: EPERM).
func (f *OpenFile) Pollable() bool {
	_, ok := f.file.(Poller)
	return ok
}

// Readiness returns the poll bits that hold now (linux.POLLIN, ...).
func (f *OpenFile) Readiness() uint32 {
	if p, ok := f.file.(Poller); ok {
		return p.Readiness()
	}
	return DefaultReadiness
}

// Watch registers wake to be told whenever the file's readiness may have
// changed, until cancel is called (see Queue.Watch). Files that are
// always ready never signal.
func (f *OpenFile) Watch(wake Wake) (cancel func()) {
	if p, ok := f.file.(Poller); ok {
		return p.Watch(wake)
	}
	return func() {}
}

// pathFile is the File of an O_PATH open: no I/O at all.
type pathFile struct{}

func (pathFile) Read(Blocking, []byte, int64) (int, error)  { return 0, linux.EBADF }
func (pathFile) Write(Blocking, []byte, int64) (int, error) { return 0, linux.EBADF }
func (pathFile) Release()                                   {}

// regularFile is the File of a regular file: I/O on its Regular inode.
type regularFile struct{ r Regular }

func (f regularFile) Read(_ Blocking, p []byte, off int64) (int, error) {
	return f.r.ReadAt(p, off)
}

func (f regularFile) Write(_ Blocking, p []byte, off int64) (int, error) {
	return f.r.WriteAt(p, off)
}

func (f regularFile) Append(p []byte) (int, int64, error) { return f.r.Append(p) }

func (f regularFile) Lseek(pos, off int64, whence int) (int64, error) {
	a := f.r.Attr()
	return seekWithin(pos, off, whence, a.Size)
}

func (regularFile) Release() {}
