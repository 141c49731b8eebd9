package proc

// splice(2), tee(2), vmsplice(2), copy_file_range(2), and the hints
// about a file's pages: sync_file_range(2), fadvise64(2), readahead(2).
// The data moves in vfs (splice.go); the hints have nothing to act on
// (tmpfs pages are memory, ext4 writes through its journal at fsync) and
// answer with Linux's checks.

import (
	"encoding/binary"
	"errors"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// splice flags (include/linux/splice.h).
const (
	spliceFMove     = 1
	spliceFNonblock = 2
	spliceFMore     = 4
	spliceFGift     = 8
	spliceFAll      = spliceFMove | spliceFNonblock | spliceFMore | spliceFGift
)

// getOff reads the loff_t at at, if at is not 0.
func (t *Thread) getOff(at uint64) (*int64, int64) {
	if at == 0 {
		return nil, 0
	}
	var b [8]byte
	if err := t.Proc.Space().CopyIn(uintptr(at), b[:]); err != nil {
		return nil, errno(err)
	}
	off := int64(binary.LittleEndian.Uint64(b[:]))
	return &off, 0
}

// putOff writes *off back to at, if both are set.
func (t *Thread) putOff(at uint64, off *int64) int64 {
	if at == 0 || off == nil {
		return 0
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(*off))
	return errno(t.Proc.Space().CopyOut(uintptr(at), b[:]))
}

// twoFiles gets the descriptors a[0] and a[2] (splice's and
// copy_file_range's in and out).
func (t *Thread) twoFiles(in, out uint64) (*vfs.OpenFile, *vfs.OpenFile, int64) {
	fi, err := t.file(int(int32(in)))
	if err != nil {
		return nil, nil, errno(err)
	}
	fo, err := t.file(int(int32(out)))
	if err != nil {
		fi.DecRef()
		return nil, nil, errno(err)
	}
	return fi, fo, 0
}

func canRead(f *vfs.OpenFile) bool {
	acc := f.Flags() & linux.O_ACCMODE
	return !f.IsPath() && (acc == linux.O_RDONLY || acc == linux.O_RDWR)
}

func canWrite(f *vfs.OpenFile) bool {
	acc := f.Flags() & linux.O_ACCMODE
	return !f.IsPath() && (acc == linux.O_WRONLY || acc == linux.O_RDWR)
}

// sysSplice implements splice(2) with Linux's checks in its order: a
// zero length, unknown flags, bad descriptors, an offset given for a
// pipe (ESPIPE), descriptors not open for reading and writing (EBADF),
// neither end a pipe or both the same pipe (EINVAL), an offset for a file
// without one or an O_APPEND output (EINVAL).
func sysSplice(t *Thread, a *[6]uint64) (int64, bool) {
	n, flags := a[4], a[5]
	if n == 0 {
		return 0, false
	}
	if flags&^spliceFAll != 0 {
		return -eINVAL, false
	}
	in, out, e := t.twoFiles(a[0], a[2])
	if e != 0 {
		return e, false
	}
	defer in.DecRef()
	defer out.DecRef()
	ip, op := vfs.IsPipe(in), vfs.IsPipe(out)
	if ip && a[1] != 0 || op && a[3] != 0 {
		return -int64(linux.ESPIPE), false
	}
	inOff, e := t.getOff(a[1])
	if e != 0 {
		return e, false
	}
	outOff, e := t.getOff(a[3])
	if e != 0 {
		return e, false
	}
	if !canRead(in) || !canWrite(out) {
		return -eBADF, false
	}
	count := int(min(n, maxRWCount))
	nonblock := flags&spliceFNonblock != 0
	var got int
	var err error
	switch {
	case ip && op:
		if vfs.SamePipe(in, out) {
			return -eINVAL, false
		}
		nonblock = nonblock || (in.Flags()|out.Flags())&linux.O_NONBLOCK != 0
		got, err = vfs.SplicePipes(in, out, count, nonblock, t.sigWake)
	case ip:
		if outOff != nil && !positioned(out) || out.Flags()&linux.O_APPEND != 0 {
			return -eINVAL, false
		}
		if outOff != nil && *outOff < 0 {
			return -eINVAL, false
		}
		nonblock = nonblock || in.Flags()&linux.O_NONBLOCK != 0
		got, err = vfs.SpliceFromPipe(in, out, outOff, count, nonblock, t.sigWake)
		if e := t.putOff(a[3], outOff); e != 0 && got > 0 {
			return e, false
		}
	case op:
		if inOff != nil && (!positioned(in) || *inOff < 0) {
			return -eINVAL, false
		}
		if !spliceSource(in) {
			return -eINVAL, false
		}
		nonblock = nonblock || out.Flags()&linux.O_NONBLOCK != 0
		got, err = vfs.SpliceToPipe(in, inOff, out, count, nonblock, t.sigWake)
		if e := t.putOff(a[1], inOff); e != 0 && got > 0 {
			return e, false
		}
	default:
		return -eINVAL, false
	}
	return t.spliceResult(got, err), false
}

// positioned reports whether f has a file position (pread works).
func positioned(f *vfs.OpenFile) bool {
	_, err := f.Seek(0, linux.SEEK_CUR)
	return err == nil
}

// spliceSource reports whether Linux could splice from f into a pipe
// (it has splice_read): files, devices and sockets, not eventfds, epoll
// instances or directories.
func spliceSource(f *vfs.OpenFile) bool {
	switch a := f.Attr(); a.Type() {
	case linux.S_IFREG, linux.S_IFCHR, linux.S_IFBLK, linux.S_IFSOCK:
		return true
	}
	return false
}

// spliceResult is ioResult for a call that may have been interrupted
// while waiting: EINTR with nothing done restarts under SA_RESTART.
func (t *Thread) spliceResult(n int, err error) int64 {
	if errors.Is(err, linux.EINTR) && n == 0 {
		return t.restartOrEINTR()
	}
	return t.ioResult(n, err)
}

// sysTee implements tee(2): both descriptors must be pipes, and
// different ones (EINVAL); the input readable and the output writable
// (EBADF).
func sysTee(t *Thread, a *[6]uint64) (int64, bool) {
	n, flags := a[2], a[3]
	if flags&^spliceFAll != 0 {
		return -eINVAL, false
	}
	if n == 0 {
		return 0, false
	}
	in, out, e := t.twoFiles(a[0], a[1])
	if e != 0 {
		return e, false
	}
	defer in.DecRef()
	defer out.DecRef()
	if !canRead(in) || !canWrite(out) {
		return -eBADF, false
	}
	if !vfs.IsPipe(in) || !vfs.IsPipe(out) || vfs.SamePipe(in, out) {
		return -eINVAL, false
	}
	nonblock := flags&spliceFNonblock != 0 || (in.Flags()|out.Flags())&linux.O_NONBLOCK != 0
	got, err := vfs.Tee(in, out, int(min(n, maxRWCount)), nonblock, t.sigWake)
	return t.spliceResult(got, err), false
}

// sysVmsplice implements vmsplice(2) by copying: into a pipe from the
// user's buffers through its write end, or out of it into them through
// its read end. A descriptor that is not a pipe is EBADF, as Linux.
func sysVmsplice(t *Thread, a *[6]uint64) (int64, bool) {
	flags := a[3]
	if flags&^spliceFAll != 0 {
		return -eINVAL, false
	}
	f, err := t.file(int(int32(a[0])))
	if err != nil {
		return errno(err), false
	}
	defer f.DecRef()
	if !vfs.IsPipe(f) {
		return -eBADF, false
	}
	iov, e := t.iovecs(a[1], a[2])
	if e != 0 {
		return e, false
	}
	nonblock := flags&spliceFNonblock != 0
	s := t.Proc.Space()
	total := uint64(0)
	for _, v := range iov {
		total += v[1]
	}
	total = min(total, maxIO)
	switch {
	case canWrite(f):
		buf := make([]byte, 0, total)
		for _, v := range iov {
			b := make([]byte, min(v[1], total-uint64(len(buf))))
			if err := s.CopyIn(uintptr(v[0]), b); err != nil {
				return errno(err), false
			}
			buf = append(buf, b...)
		}
		if len(buf) == 0 {
			return 0, false
		}
		n, err := vfs.PipeIO(f, buf, true, nonblock, t.sigWake)
		return t.spliceResult(n, err), false
	case canRead(f):
		if total == 0 {
			return 0, false
		}
		buf := make([]byte, total)
		n, err := vfs.PipeIO(f, buf, false, nonblock, t.sigWake)
		if n == 0 {
			return t.spliceResult(0, err), false
		}
		done := 0
		for _, v := range iov {
			k := min(int(v[1]), n-done)
			if err := s.CopyOut(uintptr(v[0]), buf[done:done+k]); err != nil {
				return errno(err), false
			}
			if done += k; done == n {
				break
			}
		}
		return int64(n), false
	}
	return -eBADF, false
}

// sysCopyFileRange implements copy_file_range(2); offsets not given are
// the files' positions, which move by what was copied.
func sysCopyFileRange(t *Thread, a *[6]uint64) (int64, bool) {
	in, out, e := t.twoFiles(a[0], a[2])
	if e != 0 {
		return e, false
	}
	defer in.DecRef()
	defer out.DecRef()
	inOff, e := t.getOff(a[1])
	if e != 0 {
		return e, false
	}
	outOff, e := t.getOff(a[3])
	if e != 0 {
		return e, false
	}
	if a[5] != 0 {
		return -eINVAL, false
	}
	var inPos, outPos int64
	if inOff == nil {
		inPos, _ = in.Seek(0, linux.SEEK_CUR)
		inOff = &inPos
	}
	if outOff == nil {
		outPos, _ = out.Seek(0, linux.SEEK_CUR)
		outOff = &outPos
	}
	n := int64(min(a[4], maxRWCount))
	// RLIMIT_FSIZE: a copy starting at or past it raises SIGXFSZ (one
	// crossing it is not cut short).
	if ia, oa := in.Attr(), out.Attr(); ia.Type() == linux.S_IFREG && oa.Type() == linux.S_IFREG &&
		canRead(in) && canWrite(out) && out.Flags()&linux.O_APPEND == 0 && n > 0 {
		if _, err := t.fsizeLimit(out, nil, *outOff); err != nil {
			return errno(err), false
		}
	}
	got, err := vfs.CopyFileRange(in, inOff, out, outOff, n, t.sigWake)
	if got > 0 {
		if a[1] == 0 {
			in.Seek(inPos, linux.SEEK_SET)
		} else if e := t.putOff(a[1], inOff); e != 0 {
			return e, false
		}
		if a[3] == 0 {
			out.Seek(outPos, linux.SEEK_SET)
		} else if e := t.putOff(a[3], outOff); e != 0 {
			return e, false
		}
		return got, false
	}
	return errno(err), false
}

// sync_file_range flags (include/uapi/linux/fs.h).
const syncFileRangeAll = 1 | 2 | 4

// sysSyncFileRange implements sync_file_range(2): Linux's checks, and no
// writeback to start (tmpfs holds memory; ext4 data reaches the disk at
// the next commit or fsync).
func sysSyncFileRange(t *Thread, a *[6]uint64) (int64, bool) {
	off, n, flags := int64(a[1]), int64(a[2]), a[3]
	f, err := t.file(int(int32(a[0])))
	if err != nil {
		return errno(err), false
	}
	defer f.DecRef()
	if f.IsPath() {
		return -eBADF, false
	}
	end := uint64(off) + uint64(n)
	if flags&^syncFileRangeAll != 0 || off < 0 || int64(end) < 0 || end < uint64(off) {
		return -eINVAL, false
	}
	switch at := f.Attr(); at.Type() {
	case linux.S_IFREG, linux.S_IFBLK, linux.S_IFDIR, linux.S_IFLNK:
		return 0, false
	}
	return -int64(linux.ESPIPE), false
}

// posix_fadvise advice values (include/uapi/linux/fadvise.h, x86-64).
const fadvNoreuse = 5

// sysFadvise64 implements fadvise64(2): advice is accepted and changes
// nothing, as Linux ignores it for files without a backing device
// (tmpfs); pipes are ESPIPE, unknown advice and negative lengths EINVAL.
func sysFadvise64(t *Thread, a *[6]uint64) (int64, bool) {
	n, advice := int64(a[2]), a[3]
	f, err := t.file(int(int32(a[0])))
	if err != nil {
		return errno(err), false
	}
	defer f.DecRef()
	if f.IsPath() {
		return -eBADF, false
	}
	if at := f.Attr(); at.Type() == linux.S_IFIFO {
		return -int64(linux.ESPIPE), false
	}
	if n < 0 || advice > fadvNoreuse {
		return -eINVAL, false
	}
	return 0, false
}

// sysReadahead implements readahead(2): a descriptor open for reading
// (EBADF) on a regular file (EINVAL); there is nothing to read ahead of
// memory, and ext4 reads what is asked when it is asked.
func sysReadahead(t *Thread, a *[6]uint64) (int64, bool) {
	f, err := t.file(int(int32(a[0])))
	if err != nil {
		return errno(err), false
	}
	defer f.DecRef()
	if !canRead(f) {
		return -eBADF, false
	}
	if at := f.Attr(); at.Type() != linux.S_IFREG || int64(a[2]) < 0 {
		return -eINVAL, false
	}
	return 0, false
}
