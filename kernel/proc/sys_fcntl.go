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
	if f.IsPath() && cmd != linux.F_GETFL {
		return -eBADF, false // check_fcntl_cmd: an O_PATH descriptor allows no more
	}
	switch cmd {
	case linux.F_GETFL:
		return int64(f.Flags()), false
	case linux.F_SETFL:
		f.SetStatusFlags(uint32(arg), fd)
		return 0, false
	case linux.F_GETOWN:
		o := f.Owner()
		if o.Kind == linux.F_OWNER_PGRP {
			return -int64(o.ID), false
		}
		return int64(o.ID), false
	case linux.F_SETOWN:
		who := int32(arg)
		kind := int32(linux.F_OWNER_PID)
		if who < 0 {
			if who == -1<<31 {
				return -eINVAL, false
			}
			kind, who = linux.F_OWNER_PGRP, -who
		}
		return t.setOwner(f, kind, who), false
	case linux.F_GETOWN_EX:
		o := f.Owner()
		var b [8]byte
		binary.LittleEndian.PutUint32(b[0:], uint32(o.Kind))
		binary.LittleEndian.PutUint32(b[4:], uint32(o.ID))
		return errno(t.Proc.Space().CopyOut(uintptr(arg), b[:])), false
	case linux.F_SETOWN_EX:
		// struct f_owner_ex: int type; pid_t pid.
		var b [8]byte
		if err := t.Proc.Space().CopyIn(uintptr(arg), b[:]); err != nil {
			return errno(err), false
		}
		kind, who := int32(binary.LittleEndian.Uint32(b[0:])), int32(binary.LittleEndian.Uint32(b[4:]))
		if kind != linux.F_OWNER_TID && kind != linux.F_OWNER_PID && kind != linux.F_OWNER_PGRP {
			return -eINVAL, false
		}
		return t.setOwner(f, kind, who), false
	case linux.F_ADD_SEALS, linux.F_GET_SEALS:
		return fcntlSeals(f, cmd, arg), false // sys_memfd.go
	case linux.F_GETSIG:
		return int64(f.Sig()), false
	case linux.F_SETSIG:
		if sig := uint64(int64(int32(arg))); sig > nSig {
			return -eINVAL, false
		}
		f.SetSig(int(int32(arg)))
		return 0, false
	case linux.F_GETLEASE:
		return int64(f.Lease()), false
	case linux.F_SETLEASE:
		cr := t.creds()
		c := cr.vfsCred()
		return errno(f.SetLease(&c, int32(t.Proc.PID), fd, int16(int32(arg)))), false
	case linux.F_GETPIPE_SZ:
		n, err := vfs.PipeSize(f)
		return fdResult(n, err), false
	case linux.F_SETPIPE_SZ:
		n, err := vfs.SetPipeSize(f, int(arg), t.creds().privileged())
		return fdResult(n, err), false
	case linux.F_NOTIFY:
		// dnotify is not provided, as in a Linux built without
		// CONFIG_DNOTIFY (EINVAL); what fcntl_dirnotify checks before
		// its work still answers as Linux's: an empty mask removes
		// nothing and succeeds, and only a directory can be watched.
		const dnMultishot = 0x80000000
		if uint32(arg)&^dnMultishot == 0 {
			return 0, false
		}
		if a := f.Attr(); a.Type() != linux.S_IFDIR {
			return errno(linux.ENOTDIR), false
		}
		return -eINVAL, false
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

// setOwner is F_SETOWN and F_SETOWN_EX: the thread, process or group
// that receives the file's signals (who 0: nobody), recorded with the
// caller's user IDs for the permission check at each signal. A number
// that names nothing is ESRCH.
func (t *Thread) setOwner(f *vfs.OpenFile, kind, who int32) int64 {
	if who != 0 && !ownerExists(who) {
		return -eSRCH
	}
	c := t.creds()
	f.SetOwner(vfs.SigOwner{Kind: kind, ID: who, UID: c.ruid, EUID: c.euid})
	return 0
}
