package proc

// File system calls: they decode arguments, copy user memory, and call
// package vfs.

import (
	"encoding/binary"
	"errors"
	"shortbread/kernel/iobuf"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/devfs"
	"shortbread/kernel/net/socket"
	"shortbread/kernel/tty"
	"shortbread/kernel/vfs"
)

const maxPath = linux.PATH_MAX

func (t *Thread) path(at uint64) (string, error) {
	return t.Proc.Space().CopyInString(uintptr(at), maxPath)
}

// ioResult turns a read or write outcome into a result: a partial count
// wins over an error, an interrupted call with nothing done restarts or
// fails with EINTR, and EPIPE raises SIGPIPE.
func (t *Thread) ioResult(n int, err error) int64 {
	if err == nil {
		return int64(n)
	}
	if errors.Is(err, linux.EPIPE) {
		t.signalThread(sigPIPE)
	}
	if n > 0 || err == nil {
		return int64(n)
	}
	if errors.Is(err, linux.EINTR) {
		return t.restartOrEINTR()
	}
	return errno(err)
}

// readIO and writeIO read and write at off, or at the file position
// when off < 0; a file that can block counts as sleeping for CPU-time
// accounting.
func (t *Thread) readIO(f *vfs.OpenFile, buf []byte, off int64) (int, error) {
	if f.MayBlock() {
		t.sleepBegin()
		defer t.sleepEnd()
	}
	if off >= 0 {
		return f.Pread(buf, off, t.sigWake)
	}
	if sf, ok := f.Impl().(*signalFile); ok {
		return t.readSignalfd(f, sf, buf) // the reader's own signals
	}
	return f.Read(buf, t.sigWake)
}

func (t *Thread) writeIO(f *vfs.OpenFile, buf []byte, off int64) (int, error) {
	if f.MayBlock() {
		t.sleepBegin()
		defer t.sleepEnd()
	} else if len(buf) > 0 { // an empty write changes nothing, bits included
		var err error
		if buf, err = t.fsizeLimit(f, buf, off); err != nil {
			return 0, err
		}
		if err := f.KillSetID(t.cred); err != nil {
			return 0, err
		}
	}
	if off >= 0 {
		return f.Pwrite(buf, off, t.sigWake)
	}
	if s, ok := f.Impl().(socket.Socket); ok {
		return t.socketWrite(f, s, buf) // with the writer's credentials
	}
	return f.Write(buf, t.sigWake)
}

// fsizeLimit applies RLIMIT_FSIZE to a write of a regular file at off
// (the file position when off < 0, the end with O_APPEND): the write is
// cut at the limit, and one that would start at or past it raises
// SIGXFSZ and fails with EFBIG, as Linux's generic_write_check_limits.
func (t *Thread) fsizeLimit(f *vfs.OpenFile, buf []byte, off int64) ([]byte, error) {
	limit := t.Proc.fsize.Load()
	if a := f.Attr(); limit == rlimInfinity || a.Type() != linux.S_IFREG {
		return buf, nil
	}
	pos := off
	switch {
	case f.Flags()&linux.O_APPEND != 0:
		pos = f.Attr().Size
	case pos < 0:
		var err error
		if pos, err = f.Seek(0, linux.SEEK_CUR); err != nil {
			return buf, nil // the write reports what is wrong
		}
	}
	if uint64(pos) >= limit {
		t.signalThread(sigXFSZ)
		return nil, linux.EFBIG
	}
	return buf[:min(uint64(len(buf)), limit-uint64(pos))], nil
}

// truncLimit applies RLIMIT_FSIZE to a truncation to size.
func (t *Thread) truncLimit(size int64) error {
	limit := t.Proc.fsize.Load()
	if limit != rlimInfinity && uint64(size) > limit {
		t.signalThread(sigXFSZ)
		return linux.EFBIG
	}
	return nil
}

// read and pread64 are readv and preadv with one buffer; likewise for
// the writes.
func sysRead(t *Thread, a *[6]uint64) (int64, bool) {
	return t.readInto(int(int32(a[0])), [][2]uint64{{a[1], a[2]}}, -1), false
}

func sysWrite(t *Thread, a *[6]uint64) (int64, bool) {
	return t.writeFrom(int(int32(a[0])), [][2]uint64{{a[1], a[2]}}, -1), false
}

func sysPread(t *Thread, a *[6]uint64) (int64, bool) {
	if int64(a[3]) < 0 {
		return -eINVAL, false
	}
	return t.readInto(int(int32(a[0])), [][2]uint64{{a[1], a[2]}}, int64(a[3])), false
}

func sysPwrite(t *Thread, a *[6]uint64) (int64, bool) {
	if int64(a[3]) < 0 {
		return -eINVAL, false
	}
	return t.writeFrom(int(int32(a[0])), [][2]uint64{{a[1], a[2]}}, int64(a[3])), false
}

// iovecs reads an iovec array. Arrays of up to fastIOV entries (most
// programs pass one to three) are read into the thread's own array, so
// the call allocates nothing; the result is valid until the thread's
// next iovecs call.
func (t *Thread) iovecs(at uint64, cnt uint64) ([][2]uint64, int64) {
	if cnt > 1024 {
		return nil, -eINVAL
	}
	var raw []byte
	var out [][2]uint64
	if cnt <= fastIOV {
		raw, out = t.iovRaw[:16*cnt], t.iovFast[:cnt]
	} else {
		raw, out = make([]byte, 16*cnt), make([][2]uint64, cnt)
	}
	if err := t.Proc.Space().CopyIn(uintptr(at), raw); err != nil {
		return nil, errno(err)
	}
	total := uint64(0)
	for i := range out {
		out[i] = [2]uint64{binary.LittleEndian.Uint64(raw[16*i:]), binary.LittleEndian.Uint64(raw[16*i+8:])}
		total += out[i][1]
		if int64(out[i][1]) < 0 || int64(total) < 0 {
			return nil, -eINVAL
		}
	}
	return out, 0
}

// fastIOV is how many iovecs the thread's own array holds (Linux's
// UIO_FASTIOV).
const fastIOV = 8

// sysWritev gathers into one buffer and makes one write, so a pipe write
// of up to PIPE_BUF bytes stays atomic.
func sysWritev(t *Thread, a *[6]uint64) (int64, bool) {
	return t.writev(a, -1, 0), false
}

func sysPwritev(t *Thread, a *[6]uint64) (int64, bool) {
	if int64(a[3]) < 0 {
		return -eINVAL, false
	}
	return t.writev(a, int64(a[3]), 0), false
}

// rwfSupported are the preadv2/pwritev2 flags accepted: RWF_HIPRI,
// RWF_DSYNC, RWF_SYNC (every file system here is synchronous) and
// RWF_NOWAIT (nothing blocks on a regular file's data). RWF_APPEND is
// not supported.
const rwfSupported = 1 | 2 | 4 | 8

// sysPreadv2 and sysPwritev2 are preadv and pwritev with flags; an
// offset of -1 means the file position, as readv and writev use.
// Linux looks at the flags last (kiocb_set_rw_flags), after the
// descriptor and the iovec array.
func sysPreadv2(t *Thread, a *[6]uint64) (int64, bool) {
	off := int64(a[3])
	if off < -1 {
		return -eINVAL, false
	}
	return t.readv(a, off, a[5]), false
}

func sysPwritev2(t *Thread, a *[6]uint64) (int64, bool) {
	off := int64(a[3])
	if off < -1 {
		return -eINVAL, false
	}
	return t.writev(a, off, a[5]), false
}

// vectorCheck is what readv and writev check, in Linux's order, before
// the transfer: the descriptor exists (EBADF), the iovec array is sound
// (EINVAL, EFAULT), the RWF flags are known (EOPNOTSUPP).
func (t *Thread) vectorCheck(a *[6]uint64, rwf uint64) ([][2]uint64, int64) {
	f, err := t.file(int(int32(a[0])))
	if err != nil {
		return nil, errno(err)
	}
	f.DecRef()
	iov, e := t.iovecs(a[1], a[2])
	if e != 0 {
		return nil, e
	}
	if rwf&^rwfSupported != 0 {
		return nil, -eOPNOTSUPP
	}
	return iov, 0
}

func (t *Thread) writev(a *[6]uint64, off int64, rwf uint64) int64 {
	iov, e := t.vectorCheck(a, rwf)
	if e != 0 {
		return e
	}
	return t.writeFrom(int(int32(a[0])), iov, off)
}

// writeFrom gathers the user buffers iov into one kernel buffer (up to
// maxIO bytes) and makes one write at off (< 0: the file position).
func (t *Thread) writeFrom(fd int, iov [][2]uint64, off int64) int64 {
	f, err := t.file(fd)
	if err != nil {
		return errno(err)
	}
	defer f.DecRef()
	if r := t.terminalIO(f, true); r != 0 {
		return r
	}
	if f.Flags()&linux.O_DIRECT != 0 { // devfs.CheckDirect passes every other file
		if err := devfs.CheckDirect(f, iov, off, true); err != nil {
			return errno(err)
		}
	}
	total := uint64(0)
	for _, v := range iov {
		total += min(v[1], maxIO-total)
	}
	buf, pb := t.ioBuffer(int(total))
	defer putIOBuffer(pb)
	buf = buf[:0]
	for _, v := range iov {
		k := min(v[1], total-uint64(len(buf)))
		b := buf[len(buf) : len(buf)+int(k)]
		if err := t.Proc.Space().CopyIn(uintptr(v[0]), b); err != nil {
			return errno(err)
		}
		buf = buf[:len(buf)+int(k)]
	}
	return t.ioResult(t.writeIO(f, buf, off))
}

func sysReadv(t *Thread, a *[6]uint64) (int64, bool) {
	return t.readv(a, -1, 0), false
}

func sysPreadv(t *Thread, a *[6]uint64) (int64, bool) {
	if int64(a[3]) < 0 {
		return -eINVAL, false
	}
	return t.readv(a, int64(a[3]), 0), false
}

func (t *Thread) readv(a *[6]uint64, off int64, rwf uint64) int64 {
	iov, e := t.vectorCheck(a, rwf)
	if e != 0 {
		return e
	}
	return t.readInto(int(int32(a[0])), iov, off)
}

// smallIO is the size of a thread's own I/O buffer (Thread.ioSmall).
const smallIO = 512

// ioBuffer lends the buffer of one read or write of n bytes (n <=
// maxIO): the thread's own for a short one, else one of iobuf's, which
// pb then names for putIOBuffer. The thread makes one call at a time,
// and a File keeps no buffer it is given (package iobuf), so the
// thread's buffer is free again when the call returns.
func (t *Thread) ioBuffer(n int) (buf []byte, pb *[]byte) {
	if n <= smallIO {
		return t.ioSmall[:n], nil
	}
	pb = iobuf.Get(n)
	return *pb, pb
}

// putIOBuffer gives back a buffer ioBuffer took from iobuf (pb non-nil).
func putIOBuffer(pb *[]byte) {
	if pb != nil {
		iobuf.Put(pb)
	}
}

// readInto makes one read (up to maxIO bytes) at off (< 0: the file
// position) and scatters what came into the user buffers iov.
func (t *Thread) readInto(fd int, iov [][2]uint64, off int64) int64 {
	f, err := t.file(fd)
	if err != nil {
		return errno(err)
	}
	defer f.DecRef()
	if r := t.terminalIO(f, false); r != 0 {
		return r
	}
	if f.Flags()&linux.O_DIRECT != 0 { // devfs.CheckDirect passes every other file
		if err := devfs.CheckDirect(f, iov, off, false); err != nil {
			return errno(err)
		}
	}
	total := uint64(0)
	for _, v := range iov {
		total += v[1]
	}
	if total > 0 && total <= maxCachedRead && f.CachedReads() {
		if n, ok := t.readCached(f, iov, off, int(total)); ok {
			return n
		}
	}
	buf, pb := t.ioBuffer(int(min(total, maxIO)))
	defer putIOBuffer(pb)
	// A lent buffer holds what another call moved: cleared, so that a
	// file that reports bytes it did not write (as one might that
	// counted on a new buffer's zeros) cannot hand them out. Files of
	// the page cache (ext4's, block devices) copy every byte they report.
	if !f.ReadsExactly() {
		clear(buf)
	}
	n, err := t.readIO(f, buf, off)
	done := buf[:n]
	for _, v := range iov {
		if len(done) == 0 {
			break
		}
		k := min(uint64(len(done)), v[1])
		if cerr := t.Proc.Space().CopyOut(uintptr(v[0]), done[:k]); cerr != nil {
			return errno(cerr)
		}
		done = done[k:]
	}
	return t.ioResult(n, err)
}

// maxCachedRead is the largest read readCached serves: it makes every
// page of the buffers present first, which a read cut short by the end
// of the file would not have touched.
const maxCachedRead = 128 << 10

// readCached serves a read of total bytes from a page cache (a block
// device's, an ext4 file's) straight into the user buffers iov, with
// no kernel buffer between: the buffers' pages are made present and
// held mapped (mm.PinUser) while the file copies into them, which it
// does only if every byte is in memory (vfs.OpenFile.ReadCached). It
// reports false when it did not serve the read (a page not cached, a
// buffer that would fault further): the ordinary read then does,
// overwriting what was copied.
func (t *Thread) readCached(f *vfs.OpenFile, iov [][2]uint64, off int64, total int) (int64, bool) {
	sp := t.Proc.Space()
	segs, got := sp.PinUser(iov, total, true, t.pinned[:0])
	n, ok := 0, false
	if got == total {
		n, ok = f.ReadCached(segs, off)
	}
	sp.UnpinUser()
	clear(segs) // no references to user pages kept
	t.pinned = segs[:0]
	if ok {
		f.AfterRead(n, total)
	}
	return int64(n), ok
}

func sysOpen(t *Thread, a *[6]uint64) (int64, bool) {
	return t.openat(linux.AT_FDCWD, a[0], uint32(a[1]), uint32(a[2])), false
}

func sysOpenat(t *Thread, a *[6]uint64) (int64, bool) {
	return t.openat(int(int32(a[0])), a[1], uint32(a[2]), uint32(a[3])), false
}

func sysCreat(t *Thread, a *[6]uint64) (int64, bool) {
	return t.openat(linux.AT_FDCWD, a[0], linux.O_CREAT|linux.O_WRONLY|linux.O_TRUNC, uint32(a[1])), false
}

func (t *Thread) openat(dirfd int, pathAt uint64, flags, mode uint32) int64 {
	path, err := t.path(pathAt)
	if err != nil {
		return errno(err)
	}
	if err := t.Proc.files.Room(); err != nil {
		return errno(err)
	}
	dir, err := t.dirOf(dirfd, path)
	if err != nil {
		return errno(err)
	}
	f, err := fsys.Open(t.ctx(), dir, path, flags, mode)
	if err != nil {
		if errors.Is(err, linux.EINTR) {
			return t.restartOrEINTR()
		}
		return errno(err)
	}
	defer f.DecRef()
	fd, err := t.Proc.files.Install(f, flags&linux.O_CLOEXEC != 0)
	if err != nil {
		return errno(err)
	}
	t.openedFile(f, flags)
	return int64(fd)
}

func sysClose(t *Thread, a *[6]uint64) (int64, bool) {
	return errno(t.Proc.files.Close(int(int32(a[0])))), false
}

// sysCloseRange implements close_range(2): close descriptors first to
// last, or with CLOSE_RANGE_CLOEXEC mark them close-on-exec.
// CLOSE_RANGE_UNSHARE is accepted and changes nothing: a process's table
// is shared only by its threads here (CLONE_FILES between processes
// copies), and those keep sharing it.
func sysCloseRange(t *Thread, a *[6]uint64) (int64, bool) {
	const unshare, cloexec = 2, 4
	first, last, flags := uint32(a[0]), uint32(a[1]), a[2]
	if flags&^(unshare|cloexec) != 0 || first > last {
		return -eINVAL, false
	}
	t.Proc.files.CloseRange(int(first), int(last), flags&cloexec != 0)
	return 0, false
}

func sysLseek(t *Thread, a *[6]uint64) (int64, bool) {
	f, err := t.file(int(int32(a[0])))
	if err != nil {
		return errno(err), false
	}
	defer f.DecRef()
	off, err := f.Seek(int64(a[1]), int(a[2]))
	if err != nil {
		return errno(err), false
	}
	return off, false
}

func sysDup(t *Thread, a *[6]uint64) (int64, bool) {
	fd, err := t.Proc.files.Dup(int(int32(a[0])))
	return fdResult(fd, err), false
}

func sysDup2(t *Thread, a *[6]uint64) (int64, bool) {
	fd, err := t.Proc.files.Dup2(int(int32(a[0])), int(int32(a[1])))
	return fdResult(fd, err), false
}

func sysDup3(t *Thread, a *[6]uint64) (int64, bool) {
	fd, err := t.Proc.files.Dup3(int(int32(a[0])), int(int32(a[1])), int(a[2]))
	return fdResult(fd, err), false
}

func fdResult(fd int, err error) int64 {
	if err != nil {
		return errno(err)
	}
	return int64(fd)
}

func sysIoctl(t *Thread, a *[6]uint64) (int64, bool) {
	f, err := t.file(int(int32(a[0])))
	if err != nil {
		return errno(err), false
	}
	defer f.DecRef()
	if f.IsPath() {
		return -eBADF, false
	}
	// Linux takes the command as an unsigned int: musl passes it as an
	// int, sign-extended (BLKGETSIZE64 has the top bit set).
	cmd, arg := uint64(uint32(a[1])), uintptr(a[2])
	if r, ok := t.socketIoctl(f, cmd, arg); ok {
		return r, false
	}
	const fionbio, fioclex, fionclex, fioasync = 0x5421, 0x5451, 0x5450, 0x5452
	switch cmd {
	case fioasync:
		var b [4]byte
		if err := t.Proc.Space().CopyIn(arg, b[:]); err != nil {
			return errno(err), false
		}
		fl := f.Flags() &^ linux.O_ASYNC
		if binary.LittleEndian.Uint32(b[:]) != 0 {
			fl |= linux.O_ASYNC
		}
		if fl != f.Flags() && !f.CanSignal() {
			return -eNOTTY, false // ioctl_fioasync: no fasync
		}
		f.SetStatusFlags(fl, int(int32(a[0])))
		return 0, false
	case fionbio:
		var b [4]byte
		if err := t.Proc.Space().CopyIn(arg, b[:]); err != nil {
			return errno(err), false
		}
		fl := f.Flags() &^ linux.O_NONBLOCK
		if binary.LittleEndian.Uint32(b[:]) != 0 {
			fl |= linux.O_NONBLOCK
		}
		f.SetFlags(fl)
		return 0, false
	case fioclex, fionclex:
		fl := 0
		if cmd == fioclex {
			fl = linux.FD_CLOEXEC
		}
		return errno(t.Proc.files.SetFDFlags(int(int32(a[0])), fl)), false
	case fionread:
		n, err := vfs.PipeBuffered(f)
		if in, ierr := vfs.InotifyFrom(f); ierr == nil {
			n, err = in.Queued(), nil
		}
		if err == nil {
			var b [4]byte
			binary.LittleEndian.PutUint32(b[:], uint32(n))
			return errno(t.Proc.Space().CopyOut(arg, b[:])), false
		}
	}
	if term, master, ok := tty.Of(f); ok {
		return t.terminalIoctl(f, term, master, cmd, arg), false
	}
	if d, ok := devfs.BlockOf(f); ok {
		return t.blockIoctl(f, d, cmd, arg), false
	}
	if r, ok := devfs.RTCOf(f); ok {
		return t.rtcIoctl(r, cmd, arg), false
	}
	if cmd == fiTrim {
		return t.fiTrim(f, arg), false
	}
	return -eNOTTY, false
}

func sysPipe(t *Thread, a *[6]uint64) (int64, bool) { return t.pipe2(a[0], 0), false }

func sysPipe2(t *Thread, a *[6]uint64) (int64, bool) { return t.pipe2(a[0], uint32(a[1])), false }

func (t *Thread) pipe2(at uint64, flags uint32) int64 {
	if flags&^(linux.O_CLOEXEC|linux.O_NONBLOCK|linux.O_DIRECT) != 0 {
		return -eINVAL
	}
	r, w, err := vfs.NewPipe(flags, vfs.Owner{})
	if err != nil {
		return errno(err)
	}
	defer r.DecRef()
	defer w.DecRef()
	files := t.Proc.files
	cloexec := flags&linux.O_CLOEXEC != 0
	rfd, err := files.Install(r, cloexec)
	if err != nil {
		return errno(err)
	}
	wfd, err := files.Install(w, cloexec)
	if err != nil {
		files.Close(rfd)
		return errno(err)
	}
	var b [8]byte
	binary.LittleEndian.PutUint32(b[0:], uint32(rfd))
	binary.LittleEndian.PutUint32(b[4:], uint32(wfd))
	if err := t.Proc.Space().CopyOut(uintptr(at), b[:]); err != nil {
		files.Close(rfd)
		files.Close(wfd)
		return errno(err)
	}
	return 0
}

func sysEventfd(t *Thread, a *[6]uint64) (int64, bool)  { return t.eventfd(a[0], 0), false }
func sysEventfd2(t *Thread, a *[6]uint64) (int64, bool) { return t.eventfd(a[0], int(a[1])), false }

func (t *Thread) eventfd(initval uint64, flags int) int64 {
	f, err := vfs.NewEventFD(uint64(uint32(initval)), flags, vfs.Owner{})
	if err != nil {
		return errno(err)
	}
	defer f.DecRef()
	fd, err := t.Proc.files.Install(f, flags&linux.O_CLOEXEC != 0)
	return fdResult(fd, err)
}

func sysGetdents64(t *Thread, a *[6]uint64) (int64, bool) {
	f, err := t.file(int(int32(a[0])))
	if err != nil {
		return errno(err), false
	}
	defer f.DecRef()
	pb := iobuf.Get(int(min(a[2], 1<<20)))
	defer iobuf.Put(pb)
	buf := *pb
	n, err := f.Getdents(buf)
	if err != nil {
		return errno(err), false
	}
	if err := t.Proc.Space().CopyOut(uintptr(a[1]), buf[:n]); err != nil {
		return errno(err), false
	}
	return int64(n), false
}
