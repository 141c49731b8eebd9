package proc

// System calls on paths: stat family, directories, links, permissions,
// the working directory.

import (
	"encoding/binary"
	"errors"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/devfs"
	"shortbread/kernel/iobuf"
	"shortbread/kernel/vfs"
)

// atPath decodes a (dirfd, path) pair.
func (t *Thread) atPath(dirfd uint64, pathAt uint64) (*vfs.Dentry, string, int64) {
	path, err := t.path(pathAt)
	if err != nil {
		return nil, "", errno(err)
	}
	dir, err := t.dirOf(int(int32(dirfd)), path)
	if err != nil {
		return nil, "", errno(err)
	}
	return dir, path, 0
}

func (t *Thread) putStat(at uint64, a vfs.Attr) int64 {
	st := a.Stat()
	b := st.Encode()
	return errno(t.Proc.Space().CopyOut(uintptr(at), b[:]))
}

// emptyPath reports an empty path with AT_EMPTY_PATH: the call is about
// the descriptor itself, whatever it is. glibc's fstat is
// newfstatat(fd, "", AT_EMPTY_PATH), on pipes and sockets too, so this
// is decided before the descriptor is taken for a directory.
func (t *Thread) emptyPath(pathAt uint64, flags int) bool {
	if flags&linux.AT_EMPTY_PATH == 0 {
		return false
	}
	path, err := t.path(pathAt)
	return err == nil && path == ""
}

func (t *Thread) statAt(dirfd, pathAt, buf uint64, flags int) int64 {
	if t.emptyPath(pathAt, flags) {
		return t.fstat(int(int32(dirfd)), buf)
	}
	dir, path, e := t.atPath(dirfd, pathAt)
	if e != 0 {
		return e
	}
	a, err := fsys.Stat(t.ctx(), dir, path, flags)
	if err != nil {
		return errno(err)
	}
	return t.putStat(buf, a)
}

func (t *Thread) fstat(fd int, buf uint64) int64 {
	f, err := t.file(fd)
	if err != nil {
		return errno(err)
	}
	defer f.DecRef()
	return t.putStat(buf, f.Attr())
}

func sysStat(t *Thread, a *[6]uint64) (int64, bool) {
	return t.statAt(uint64(linux.AT_FDCWD&0xffffffff), a[0], a[1], 0), false
}

func sysLstat(t *Thread, a *[6]uint64) (int64, bool) {
	return t.statAt(uint64(linux.AT_FDCWD&0xffffffff), a[0], a[1], linux.AT_SYMLINK_NOFOLLOW), false
}

func sysFstat(t *Thread, a *[6]uint64) (int64, bool) {
	return t.fstat(int(int32(a[0])), a[1]), false
}

func sysNewfstatat(t *Thread, a *[6]uint64) (int64, bool) {
	return t.statAt(a[0], a[1], a[2], int(a[3])), false
}

func sysStatx(t *Thread, a *[6]uint64) (int64, bool) {
	flags, mask := int(a[2]), uint32(a[3])
	var dir *vfs.Dentry
	path, e := "", int64(0)
	if !t.emptyPath(a[1], flags) {
		if dir, path, e = t.atPath(a[0], a[1]); e != 0 {
			return e, false
		}
	}
	var x linux.Statx
	var err error
	if path == "" && flags&linux.AT_EMPTY_PATH != 0 {
		f, ferr := t.file(int(int32(a[0])))
		if ferr != nil {
			return errno(ferr), false
		}
		x, err = f.Statx(mask)
		f.DecRef()
	} else {
		x, err = fsys.Statx(t.ctx(), dir, path, flags, mask)
	}
	if err != nil {
		return errno(err), false
	}
	b := x.Encode()
	return errno(t.Proc.Space().CopyOut(uintptr(a[4]), b[:])), false
}

func sysAccess(t *Thread, a *[6]uint64) (int64, bool) {
	return t.accessAt(uint64(linux.AT_FDCWD&0xffffffff), a[0], uint32(a[1]), 0), false
}

func sysFaccessat(t *Thread, a *[6]uint64) (int64, bool) {
	return t.accessAt(a[0], a[1], uint32(a[2]), 0), false
}

func sysFaccessat2(t *Thread, a *[6]uint64) (int64, bool) {
	return t.accessAt(a[0], a[1], uint32(a[2]), int(a[3])), false
}

func (t *Thread) accessAt(dirfd, pathAt uint64, mode uint32, flags int) int64 {
	dir, path, e := t.atPath(dirfd, pathAt)
	if e != 0 {
		return e
	}
	return errno(fsys.Access(t.ctx(), dir, path, mode, flags))
}

func sysReadlink(t *Thread, a *[6]uint64) (int64, bool) {
	return t.readlinkAt(uint64(linux.AT_FDCWD&0xffffffff), a[0], a[1], a[2]), false
}

func sysReadlinkat(t *Thread, a *[6]uint64) (int64, bool) {
	return t.readlinkAt(a[0], a[1], a[2], a[3]), false
}

func (t *Thread) readlinkAt(dirfd, pathAt, buf, size uint64) int64 {
	if int32(size) <= 0 { // bufsiz is an int, checked before the path
		return -eINVAL
	}
	size = uint64(int32(size))
	dir, path, e := t.atPath(dirfd, pathAt)
	if e != 0 {
		return e
	}
	flags := 0
	if path == "" { // the link itself, opened with O_PATH|O_NOFOLLOW
		flags = linux.AT_EMPTY_PATH
	}
	target, err := fsys.Readlink(t.ctx(), dir, path, flags)
	if err != nil {
		return errno(err)
	}
	b := []byte(target)
	if uint64(len(b)) > size {
		b = b[:size]
	}
	if err := t.Proc.Space().CopyOut(uintptr(buf), b); err != nil {
		return errno(err)
	}
	return int64(len(b))
}

const atCwd = uint64(linux.AT_FDCWD & 0xffffffff)

func sysMkdir(t *Thread, a *[6]uint64) (int64, bool) {
	return t.mkdirAt(atCwd, a[0], uint32(a[1])), false
}
func sysMkdirat(t *Thread, a *[6]uint64) (int64, bool) {
	return t.mkdirAt(a[0], a[1], uint32(a[2])), false
}

func (t *Thread) mkdirAt(dirfd, pathAt uint64, mode uint32) int64 {
	dir, path, e := t.atPath(dirfd, pathAt)
	if e != 0 {
		return e
	}
	return errno(fsys.Mkdir(t.ctx(), dir, path, mode))
}

func sysMknodat(t *Thread, a *[6]uint64) (int64, bool) {
	dir, path, e := t.atPath(a[0], a[1])
	if e != 0 {
		return e, false
	}
	return errno(fsys.Mknod(t.ctx(), dir, path, uint32(a[2]), a[3])), false
}

func sysMknod(t *Thread, a *[6]uint64) (int64, bool) {
	return sysMknodat(t, &[6]uint64{atCwd, a[0], a[1], a[2]})
}

func sysRmdir(t *Thread, a *[6]uint64) (int64, bool) {
	dir, path, e := t.atPath(atCwd, a[0])
	if e != 0 {
		return e, false
	}
	return errno(fsys.Rmdir(t.ctx(), dir, path)), false
}

func sysUnlink(t *Thread, a *[6]uint64) (int64, bool) {
	return sysUnlinkat(t, &[6]uint64{atCwd, a[0], 0})
}

func sysUnlinkat(t *Thread, a *[6]uint64) (int64, bool) {
	if a[2]&^linux.AT_REMOVEDIR != 0 {
		return -eINVAL, false
	}
	dir, path, e := t.atPath(a[0], a[1])
	if e != 0 {
		return e, false
	}
	if a[2]&linux.AT_REMOVEDIR != 0 {
		return errno(fsys.Rmdir(t.ctx(), dir, path)), false
	}
	return errno(fsys.Unlink(t.ctx(), dir, path)), false
}

func sysRename(t *Thread, a *[6]uint64) (int64, bool) {
	return sysRenameat2(t, &[6]uint64{atCwd, a[0], atCwd, a[1], 0})
}

func sysRenameat(t *Thread, a *[6]uint64) (int64, bool) {
	return sysRenameat2(t, &[6]uint64{a[0], a[1], a[2], a[3], 0})
}

func sysRenameat2(t *Thread, a *[6]uint64) (int64, bool) {
	odir, opath, ndir, npath, e := t.pathPair(a)
	if e != 0 {
		return e, false
	}
	return errno(fsys.Rename(t.ctx(), odir, opath, ndir, npath, uint32(a[4]))), false
}

// pathPair reads the (olddirfd, oldpath, newdirfd, newpath) arguments of
// renameat2 and linkat.
func (t *Thread) pathPair(a *[6]uint64) (odir *vfs.Dentry, opath string, ndir *vfs.Dentry, npath string, e int64) {
	if odir, opath, e = t.atPath(a[0], a[1]); e != 0 {
		return
	}
	ndir, npath, e = t.atPath(a[2], a[3])
	return
}

func sysLink(t *Thread, a *[6]uint64) (int64, bool) {
	return sysLinkat(t, &[6]uint64{atCwd, a[0], atCwd, a[1], 0})
}

func sysLinkat(t *Thread, a *[6]uint64) (int64, bool) {
	odir, opath, ndir, npath, e := t.pathPair(a)
	if e != 0 {
		return e, false
	}
	return errno(fsys.Link(t.ctx(), odir, opath, ndir, npath, int(a[4]))), false
}

func sysSymlink(t *Thread, a *[6]uint64) (int64, bool) {
	return sysSymlinkat(t, &[6]uint64{a[0], atCwd, a[1]})
}

func sysSymlinkat(t *Thread, a *[6]uint64) (int64, bool) {
	target, err := t.path(a[0])
	if err != nil {
		return errno(err), false
	}
	dir, path, e := t.atPath(a[1], a[2])
	if e != 0 {
		return e, false
	}
	return errno(fsys.Symlink(t.ctx(), target, dir, path)), false
}

func sysChmod(t *Thread, a *[6]uint64) (int64, bool) {
	return sysFchmodat(t, &[6]uint64{atCwd, a[0], a[1]})
}

func sysFchmodat(t *Thread, a *[6]uint64) (int64, bool) {
	dir, path, e := t.atPath(a[0], a[1])
	if e != 0 {
		return e, false
	}
	return errno(fsys.Chmod(t.ctx(), dir, path, uint32(a[2]), 0)), false
}

func sysFchmod(t *Thread, a *[6]uint64) (int64, bool) {
	f, err := t.file(int(int32(a[0])))
	if err != nil {
		return errno(err), false
	}
	defer f.DecRef()
	return errno(f.Chmod(t.cred(), uint32(a[1]))), false
}

func sysChown(t *Thread, a *[6]uint64) (int64, bool) {
	return sysFchownat(t, &[6]uint64{atCwd, a[0], a[1], a[2], 0})
}

func sysLchown(t *Thread, a *[6]uint64) (int64, bool) {
	return sysFchownat(t, &[6]uint64{atCwd, a[0], a[1], a[2], linux.AT_SYMLINK_NOFOLLOW})
}

func sysFchownat(t *Thread, a *[6]uint64) (int64, bool) {
	dir, path, e := t.atPath(a[0], a[1])
	if e != 0 {
		return e, false
	}
	return errno(fsys.Chown(t.ctx(), dir, path, uint32(a[2]), uint32(a[3]), int(a[4]))), false
}

func sysFchown(t *Thread, a *[6]uint64) (int64, bool) {
	f, err := t.file(int(int32(a[0])))
	if err != nil {
		return errno(err), false
	}
	defer f.DecRef()
	return errno(f.Chown(t.cred(), uint32(a[1]), uint32(a[2]))), false
}

func sysTruncate(t *Thread, a *[6]uint64) (int64, bool) {
	if int64(a[1]) < 0 {
		return -eINVAL, false
	}
	dir, path, e := t.atPath(atCwd, a[0])
	if e != 0 {
		return e, false
	}
	if err := t.truncLimit(int64(a[1])); err != nil {
		return errno(err), false
	}
	err := fsys.Truncate(t.ctx(), dir, path, int64(a[1]))
	if errors.Is(err, linux.EINTR) { // waiting for a lease to break
		return t.restartOrEINTR(), false
	}
	return errno(err), false
}

func sysFtruncate(t *Thread, a *[6]uint64) (int64, bool) {
	if int64(a[1]) < 0 {
		return -eINVAL, false
	}
	f, err := t.file(int(int32(a[0])))
	if err != nil {
		return errno(err), false
	}
	defer f.DecRef()
	if at := f.Attr(); at.Type() == linux.S_IFREG && f.Flags()&linux.O_ACCMODE != linux.O_RDONLY {
		if err := t.truncLimit(int64(a[1])); err != nil {
			return errno(err), false
		}
	}
	if err := f.KillSetID(t.cred); err != nil {
		return errno(err), false
	}
	return errno(f.Truncate(int64(a[1]))), false
}

// sysFallocate implements fallocate(2) (tmpfs: allocation, KEEP_SIZE,
// PUNCH_HOLE). Allocating past RLIMIT_FSIZE (with KEEP_SIZE too, as
// shmem_fallocate checks) raises SIGXFSZ and fails with EFBIG.
func sysFallocate(t *Thread, a *[6]uint64) (int64, bool) {
	mode, off, n := uint32(a[1]), int64(a[2]), int64(a[3])
	f, err := t.file(int(int32(a[0])))
	if err != nil {
		return errno(err), false
	}
	defer f.DecRef()
	at := f.Attr()
	if at.Type() == linux.S_IFREG && f.Flags()&linux.O_ACCMODE != linux.O_RDONLY && !f.IsPath() &&
		off >= 0 && n > 0 && off+n > at.Size && mode&linux.FALLOC_FL_PUNCH_HOLE == 0 {
		if err := t.truncLimit(off + n); err != nil {
			return errno(err), false
		}
	}
	return errno(f.Fallocate(mode, off, n)), false
}

// sysFsync covers fsync and fdatasync. A block device flushes its disk's
// cache; a file on a disk file system commits its journal (one for all
// files, so fsync is syncfs); on an in-memory file system data is as
// durable as it gets once written. Files that cannot be synced (pipes,
// sockets, character devices) give EINVAL, as on Linux.
func sysFsync(t *Thread, a *[6]uint64) (int64, bool) {
	f, err := t.file(int(int32(a[0])))
	if err != nil {
		return errno(err), false
	}
	defer f.DecRef()
	if f.IsPath() {
		return -eBADF, false
	}
	if s, ok := f.Impl().(vfs.Syncer); ok {
		return errno(s.Sync()), false
	}
	switch a := f.Attr(); a.Type() {
	case linux.S_IFREG, linux.S_IFDIR:
		if d := f.Dentry(); d != nil {
			return errno(d.Mount().Sync()), false
		}
		return 0, false
	}
	return -eINVAL, false
}

// sysSyncfs writes back the file system fd's file is on.
func sysSyncfs(t *Thread, a *[6]uint64) (int64, bool) {
	f, err := t.file(int(int32(a[0])))
	if err != nil {
		return errno(err), false
	}
	defer f.DecRef()
	if d := f.Dentry(); d != nil {
		return errno(d.Mount().SyncFS()), false
	}
	return 0, false
}

// sysSync writes back every file system and the cached pages of every
// open block device; like Linux's it reports no error (a block device's
// failure waits for its open files' next fsync).
func sysSync(t *Thread, a *[6]uint64) (int64, bool) {
	if fsys != nil {
		fsys.SyncAll()
	}
	devfs.WritebackBlocks()
	return 0, false
}

func sysUtimensat(t *Thread, a *[6]uint64) (int64, bool) {
	var times *[2]linux.Timespec
	if a[2] != 0 {
		var b [32]byte
		if err := t.Proc.Space().CopyIn(uintptr(a[2]), b[:]); err != nil {
			return errno(err), false
		}
		le := binary.LittleEndian
		times = &[2]linux.Timespec{
			{Sec: int64(le.Uint64(b[0:])), Nsec: int64(le.Uint64(b[8:]))},
			{Sec: int64(le.Uint64(b[16:])), Nsec: int64(le.Uint64(b[24:]))},
		}
	}
	if a[1] == 0 { // futimens: a null path names dirfd itself, with no flags
		if int32(a[0]) == linux.AT_FDCWD {
			return -eFAULT, false // do_utimes_path reads the null path
		}
		if a[3] != 0 {
			return -eINVAL, false
		}
		f, err := t.file(int(int32(a[0])))
		if err != nil {
			return errno(err), false
		}
		defer f.DecRef()
		return errno(f.Utimens(t.cred(), times)), false
	}
	dir, path, e := t.atPath(a[0], a[1])
	if e != 0 {
		return e, false
	}
	return errno(fsys.Utimens(t.ctx(), dir, path, times, int(a[3]))), false
}

func sysUmask(t *Thread, a *[6]uint64) (int64, bool) {
	p := t.Proc
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.umask
	p.umask = uint32(a[0]) & 0o777
	return int64(old), false
}

func sysGetcwd(t *Thread, a *[6]uint64) (int64, bool) {
	c := t.ctx()
	path, err := fsys.Getcwd(c, c.Cwd)
	if err != nil {
		return errno(err), false
	}
	b := append([]byte(path), 0)
	if uint64(len(b)) > a[1] {
		return -int64(linux.ERANGE), false
	}
	if err := t.Proc.Space().CopyOut(uintptr(a[0]), b); err != nil {
		return errno(err), false
	}
	return int64(len(b)), false
}

func sysChdir(t *Thread, a *[6]uint64) (int64, bool) {
	path, err := t.path(a[0])
	if err != nil {
		return errno(err), false
	}
	d, err := fsys.Chdir(t.ctx(), nil, path, 0)
	if err != nil {
		return errno(err), false
	}
	t.Proc.mu.Lock()
	t.Proc.cwd = d
	t.Proc.mu.Unlock()
	return 0, false
}

// sysChroot implements chroot(2): the directory must be found and
// searchable (ENOENT, ENOTDIR, EACCES come first), then the caller must be
// root (CAP_SYS_CHROOT). The working directory stays where it was, as on
// Linux, even outside the new root.
func sysChroot(t *Thread, a *[6]uint64) (int64, bool) {
	path, err := t.path(a[0])
	if err != nil {
		return errno(err), false
	}
	d, err := fsys.Chdir(t.ctx(), nil, path, 0)
	if err != nil {
		return errno(err), false
	}
	if !t.creds().privileged() {
		return -ePERM, false
	}
	t.Proc.mu.Lock()
	t.Proc.root = d
	t.Proc.mu.Unlock()
	return 0, false
}

func sysFchdir(t *Thread, a *[6]uint64) (int64, bool) {
	dir, err := t.dirOf(int(int32(a[0])), ".")
	if err != nil {
		return errno(err), false
	}
	if dir == nil { // AT_FDCWD is no descriptor
		return -int64(linux.EBADF), false
	}
	d, err := fsys.Chdir(t.ctx(), dir, ".", 0)
	if err != nil {
		return errno(err), false
	}
	t.Proc.mu.Lock()
	t.Proc.cwd = d
	t.Proc.mu.Unlock()
	return 0, false
}

// sysSendfile copies between files through a kernel buffer.
// maxRWCount is the most one read, write or sendfile moves (Linux's
// MAX_RW_COUNT: 2 GiB less a page).
const maxRWCount = 0x7ffff000

func sysSendfile(t *Thread, a *[6]uint64) (int64, bool) {
	out, err := t.file(int(int32(a[0])))
	if err != nil {
		return errno(err), false
	}
	defer out.DecRef()
	in, err := t.file(int(int32(a[1])))
	if err != nil {
		return errno(err), false
	}
	defer in.DecRef()
	// The source must be something with data to splice, as Linux's
	// splice_read: a file, a device or a socket. An eventfd, a pipe or an
	// epoll instance is EINVAL (an eventfd read 8 bytes at a time could
	// keep a huge count going for hours).
	switch ia := in.Attr(); ia.Type() {
	case linux.S_IFREG, linux.S_IFCHR, linux.S_IFBLK, linux.S_IFSOCK:
	default:
		return -eINVAL, false
	}
	s := t.Proc.Space()
	off := int64(-1)
	if a[2] != 0 {
		var b [8]byte
		if err := s.CopyIn(uintptr(a[2]), b[:]); err != nil {
			return errno(err), false
		}
		off = int64(binary.LittleEndian.Uint64(b[:]))
		if off < 0 {
			return -eINVAL, false
		}
	}
	count := min(a[3], maxRWCount) // one call moves at most MAX_RW_COUNT
	if err := out.KillSetID(t.cred); err != nil {
		return errno(err), false
	}
	pb := iobuf.Get(64 << 10) // lent, not allocated: nginx sends every file this way
	defer iobuf.Put(pb)
	buf := *pb
	clear(buf) // see readInto
	var done int64
	for uint64(done) < count {
		chunk := buf[:min(uint64(len(buf)), count-uint64(done))]
		var n int
		if off >= 0 {
			n, err = in.Pread(chunk, off+done, t.sigWake)
		} else {
			n, err = in.Read(chunk, t.sigWake)
		}
		if n == 0 || err != nil {
			break
		}
		w, werr := out.Write(chunk[:n], t.sigWake)
		done += int64(w)
		if werr != nil || w < n {
			err = werr
			break
		}
		// A long copy stops for a signal (or the process's death) with
		// what it has done, as Linux's does between pages.
		select {
		case <-t.sigWake:
			t.wake() // the wake-up is for the return to user mode
		default:
			continue
		}
		break
	}
	if off >= 0 {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(off+done))
		if cerr := s.CopyOut(uintptr(a[2]), b[:]); cerr != nil {
			return errno(cerr), false
		}
	}
	return t.ioResult(int(done), err), false
}
