package proc

// The file system as processes see it: the VFS, each process's fd table,
// cwd and umask, and the glue between system calls and package vfs.

import (
	"errors"
	"io"
	"strings"
	"sync"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/mm"
	"shortbread/kernel/vfs"
)

// fsys is the file system every process sees; the kernel sets it at boot.
var fsys *vfs.VFS

// SetVFS makes v the file system of the processes started from now on.
func SetVFS(v *vfs.VFS) {
	fsys = v
	v.SetPinned(pinned)
}

// pinned reports whether some process's working or root directory is
// in m, which makes m busy for umount.
func pinned(m *vfs.Mount) bool {
	tableMu.Lock()
	ps := make([]*Process, 0, len(table))
	for _, p := range table {
		ps = append(ps, p)
	}
	tableMu.Unlock()
	for _, p := range ps {
		select {
		case <-p.done:
			continue // exited: its directories no longer count
		default:
		}
		p.mu.Lock()
		in := m.Contains(p.cwd) || m.Contains(p.root)
		p.mu.Unlock()
		if in {
			return true
		}
	}
	return false
}

// mountsText is /proc/mounts and /proc/<pid>/mounts.
func mountsText() []byte {
	if fsys == nil {
		return nil
	}
	return fsys.Mounts()
}

// ctx is the VFS context of a system call made by t.
//
// The context lives in the thread and is filled anew by each call, so
// that system calls do not allocate one: it is valid for the current
// system call only, and nothing may keep it.
func (t *Thread) ctx() *vfs.Ctx {
	p := t.Proc
	p.mu.Lock()
	defer p.mu.Unlock()
	root := p.root
	if root == nil {
		root = fsys.Root()
	}
	t.vctx = vfs.Ctx{Cred: p.cred.vfsCred(), Root: root, Cwd: p.cwd, Umask: p.umask, Intr: t.sigWake, PID: p.PID, TID: t.TID, Sleeper: t}
	return &t.vctx
}

// file returns the open file behind fd (a reference the caller drops).
// It takes no lock: the process's table never changes (see
// Process.files), and looking a descriptor up in it takes none.
func (t *Thread) file(fd int) (*vfs.OpenFile, error) {
	files := t.Proc.files
	if files == nil {
		return nil, linux.EBADF
	}
	return files.Get(fd)
}

// dirOf resolves the dirfd of an *at call: nil for AT_FDCWD, else the
// directory the descriptor names.
func (t *Thread) dirOf(dirfd int, path string) (*vfs.Dentry, error) {
	// An absolute path ignores dirfd, whatever it is (Linux does not even
	// look it up); AT_FDCWD is the working directory.
	if strings.HasPrefix(path, "/") || dirfd == linux.AT_FDCWD {
		return nil, nil
	}
	f, err := t.file(dirfd)
	if err != nil {
		return nil, err
	}
	defer f.DecRef()
	d := f.Dentry()
	// A relative path needs a directory to start from; an empty one
	// (AT_EMPTY_PATH) names the file itself, whatever it is.
	if d == nil || path != "" && !d.IsDir() {
		return nil, linux.ENOTDIR
	}
	return d, nil
}

// writerFile is an open file that writes to a kernel io.Writer (the
// self-tests capture a program's output this way).
type writerFile struct{ w io.Writer }

func (w writerFile) Read(vfs.Blocking, []byte, int64) (int, error) { return 0, linux.EBADF }
func (w writerFile) Write(_ vfs.Blocking, p []byte, _ int64) (int, error) {
	return w.w.Write(p)
}
func (w writerFile) Release() {}

// WriterFile makes an open file (write-only) of an io.Writer.
func WriterFile(w io.Writer) *vfs.OpenFile {
	ino := vfs.NewAnonInode(linux.S_IFIFO|0o600, vfs.Owner{})
	return vfs.NewFile(ino, writerFile{w}, linux.O_WRONLY)
}

// readFile reads a whole regular file for exec, resolving path as t would,
// and returns its dentry too (nil without a VFS).
func (t *Thread) readFile(path string) (*execFile, error) {
	return t.readFileAt(nil, path, 0)
}

// readFileAt is readFile for execveat: path from dir (nil: the cwd),
// with its AT_EMPTY_PATH and AT_SYMLINK_NOFOLLOW.
func (t *Thread) readFileAt(dir *vfs.Dentry, path string, atFlags int) (*execFile, error) {
	if fsys == nil {
		if t.Proc.fs == nil {
			return nil, linux.ENOENT
		}
		data, err := t.Proc.fs.ReadFile(path)
		return &execFile{data: data, size: int64(len(data))}, err
	}
	c := t.ctx()
	f, readable, err := fsys.OpenExec(c, dir, path, atFlags)
	if err != nil {
		return nil, err
	}
	a := f.Attr()
	if d := f.Dentry(); d != nil && d.Mount() != nil && d.Mount().NoSuid() {
		a.Mode &^= linux.S_ISUID | linux.S_ISGID // the program runs with its caller's IDs
	}
	e := &execFile{exe: f.Dentry(), pages: pagesOf(f), attr: a, readable: readable, file: f, size: a.Size}
	// Programs are exec'd again and again (a shell's every command): keep
	// one copy of each image (or of its head) while its file is unchanged.
	key := imageKey{f.Inode(), a.Ino, a.Size, a.Mtime}
	imageMu.Lock()
	data, ok := images[key]
	imageMu.Unlock()
	if ok {
		e.data = data
		return e, nil
	}
	n := a.Size
	if e.pages != nil {
		n = min(n, execHead) // the segments map the file's pages
	}
	if e.data, err = readAt(f, n); err != nil {
		e.release()
		return nil, err
	}
	if data = e.data; len(data) <= maxImageBytes/4 {
		imageMu.Lock()
		if len(images) >= maxImages || imageBytes+len(data) > maxImageBytes {
			clear(images)
			imageBytes = 0
		}
		images[key] = data
		imageBytes += len(data)
		imageMu.Unlock()
	}
	return e, nil
}

// execHead is how much of a file whose segments exec maps from its pages
// it reads for the headers: Linux's loader reads one page first; a
// program whose headers lie further is read whole (execFile.parse).
const execHead = 4096

// readAt reads the first n bytes of f (fewer if it has fewer).
func readAt(f *vfs.OpenFile, n int64) ([]byte, error) {
	data := make([]byte, n)
	for off := 0; off < len(data); {
		k, err := f.Pread(data[off:], int64(off), nil)
		if err != nil {
			return nil, err
		}
		if k == 0 {
			return data[:off], nil
		}
		off += k
	}
	return data, nil
}

// execFile is a program file as exec reads it: its contents, its dentry
// (for /proc/<pid>/exe), and its page store when the file system has one
// (tmpfs, or ext4 through the page cache), which the program's segments
// then map instead of copying; of such a file only the head is read. It
// holds the open file and a reference to the pages until release.
type execFile struct {
	data  []byte // the file's first bytes: all size of them, or its head
	size  int64
	exe   *vfs.Dentry
	pages *mm.Shm
	file  *vfs.OpenFile
	// attr is the file's owner and mode, for set-user-ID and set-group-ID
	// programs; readable says whether the caller could read it.
	attr     vfs.Attr
	readable bool
}

// release drops the references to the pages and the file; the mappings
// hold their own.
func (e *execFile) release() {
	if e.pages != nil {
		e.pages.DecRef()
		e.pages = nil
	}
	if e.file != nil {
		e.file.DecRef()
		e.file = nil
	}
}

// The exec image cache: file contents by inode and version. Mappings made
// from an image keep their slice alive even after it leaves the cache.
type imageKey struct {
	inode vfs.Inode
	ino   uint64
	size  int64
	mtime linux.Timespec
}

// The cache holds at most maxImages images and maxImageBytes of them
// (Go heap the collector scans and the kernel cannot give back while
// cached); an image larger than a quarter of that is not kept.
const (
	maxImages     = 64
	maxImageBytes = 32 << 20
)

var (
	imageMu    sync.Mutex
	images     = map[imageKey][]byte{}
	imageBytes int // the sum of the cached images' sizes; protected by imageMu
)

// errnoOf maps a linux.Errno (or wrapped one) to a negative result.
func errnoOf(err error) (int64, bool) {
	if e, ok := err.(linux.Errno); ok { // the common case, without errors.As's allocation
		return -int64(e), true
	}
	var e linux.Errno
	if errors.As(err, &e) {
		return -int64(e), true
	}
	return 0, false
}
