package proc

// fcntl(2) and flock(2): descriptor flags, status flags, record locks,
// flock locks, owners and signals for O_ASYNC, and leases. The locks and
// leases themselves live in vfs (lock.go, flock.go, lease.go).

import (
	"encoding/binary"
	"errors"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

func sysFcntl(t *Thread, a *[6]uint64) (int64, bool) {
	fd, cmd, arg := int(int32(a[0])), int(a[1]), a[2]
	files := t.Proc.files
	switch cmd {
	case linux.F_DUPFD, linux.F_DUPFD_CLOEXEC:
		nfd, err := files.DupFD(fd, int(int32(arg)), cmd == linux.F_DUPFD_CLOEXEC)
		return fdResult(nfd, err), false
	case linux.F_GETFD:
		fl, err := files.FDFlags(fd)
		return fdResult(fl, err), false
	case linux.F_SETFD:
		return errno(files.SetFDFlags(fd, int(arg))), false
	}
	f, err := t.file(fd)
	if err != nil {
		return errno(err), false
	}
	defer f.DecRef()
	switch cmd {
	case linux.F_GETFL:
		return int64(f.Flags()), false
	case linux.F_SETFL:
		f.SetFlags(uint32(arg))
		return 0, false
	case linux.F_GETPIPE_SZ:
		n, err := vfs.PipeSize(f)
		return fdResult(n, err), false
	case linux.F_SETPIPE_SZ:
		n, err := vfs.SetPipeSize(f, int(arg), true)
		return fdResult(n, err), false
	case linux.F_GETLK, linux.F_SETLK, linux.F_SETLKW, linux.F_OFD_GETLK, linux.F_OFD_SETLK, linux.F_OFD_SETLKW:
		return t.recordLock(fd, cmd, uintptr(arg)), false
	}
	return -eINVAL, false
}

// recordLock serves fcntl's lock commands. struct flock on x86-64:
// l_type and l_whence (16 bits each), l_start and l_len (64 bits, at 8
// and 16), l_pid (32 bits, at 24); 32 bytes.
func (t *Thread) recordLock(fd, cmd int, arg uintptr) int64 {
	f, err := t.file(fd)
	if err != nil {
		return errno(err)
	}
	defer f.DecRef()
	var b [32]byte
	s := t.Proc.Space()
	if err := s.CopyIn(arg, b[:]); err != nil {
		return errno(err)
	}
	le := binary.LittleEndian
	typ, whence := int16(le.Uint16(b[0:])), int16(le.Uint16(b[2:]))
	start, end, err := f.LockRange(whence, int64(le.Uint64(b[8:])), int64(le.Uint64(b[16:])))
	if err != nil {
		return errno(err)
	}
	ofd := cmd == linux.F_OFD_GETLK || cmd == linux.F_OFD_SETLK || cmd == linux.F_OFD_SETLKW
	if ofd && le.Uint32(b[24:]) != 0 {
		return -eINVAL // an OFD lock has no pid: l_pid must be 0
	}
	owner := t.Proc.files
	if ofd {
		owner = nil
	}
	switch cmd {
	case linux.F_GETLK, linux.F_OFD_GETLK:
		l, err := f.GetLock(owner, typ, start, end)
		if err != nil {
			return errno(err)
		}
		le.PutUint16(b[0:], uint16(l.Type))
		if l.Type != linux.F_UNLCK {
			length := l.End - l.Start + 1
			if l.End == vfs.MaxOffset {
				length = 0
			}
			le.PutUint16(b[2:], linux.SEEK_SET)
			le.PutUint64(b[8:], uint64(l.Start))
			le.PutUint64(b[16:], uint64(length))
			le.PutUint32(b[24:], uint32(l.PID))
		}
		return errno(s.CopyOut(arg, b[:]))
	}
	wait := cmd == linux.F_SETLKW || cmd == linux.F_OFD_SETLKW
	if wait {
		t.sleepBegin()
		defer t.sleepEnd()
	}
	err = f.SetLock(owner, int32(t.Proc.PID), typ, start, end, wait, t.sigWake)
	if errors.Is(err, linux.EINTR) {
		return t.restartOrEINTR()
	}
	return errno(err)
}

// sysFlock implements flock(2). The operation is checked before the
// descriptor, as Linux does; LOCK_MAND requests are ignored (Linux 5.15
// and later).
func sysFlock(t *Thread, a *[6]uint64) (int64, bool) {
	cmd := uint32(a[1])
	if cmd&linux.LOCK_MAND != 0 {
		return 0, false
	}
	var typ int16
	switch cmd &^ linux.LOCK_NB {
	case linux.LOCK_SH:
		typ = linux.F_RDLCK
	case linux.LOCK_EX:
		typ = linux.F_WRLCK
	case linux.LOCK_UN:
		typ = linux.F_UNLCK
	default:
		return -eINVAL, false
	}
	f, err := t.file(int(int32(a[0])))
	if err != nil {
		return errno(err), false
	}
	defer f.DecRef()
	nonblock := cmd&linux.LOCK_NB != 0
	if !nonblock {
		t.sleepBegin()
		defer t.sleepEnd()
	}
	err = f.Flock(typ, nonblock, t.sigWake)
	if errors.Is(err, linux.EINTR) {
		return t.restartOrEINTR(), false
	}
	return errno(err), false
}
