package proc

// signalfd(2): pending signals read as records through a file. A read
// takes the reading thread's pending signals in the file's mask (its own
// thread-directed ones first, then its process's), as Linux's
// signalfd_dequeue does with current, so a forked child reading an
// inherited signalfd gets its own signals. poll and epoll report the
// signals pending for the process that made the file (Linux asks the
// polling thread; the VFS's readiness has no caller).

import (
	"encoding/binary"
	"sync/atomic"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// ssiSize is sizeof(struct signalfd_siginfo).
const ssiSize = 128

type signalFile struct {
	p    *Process      // the maker: readiness
	mask atomic.Uint64 // the signals it reads
}

func (*signalFile) Write(vfs.Blocking, []byte, int64) (int, error) { return 0, linux.EINVAL }
func (*signalFile) Release()                                       {}

// Read without a thread (readv through the VFS) takes the maker's
// process-directed signals.
func (f *signalFile) Read(b vfs.Blocking, p []byte, _ int64) (int, error) {
	return f.read(f.p, nil, b, p)
}

func (f *signalFile) Readiness() uint32 {
	p := f.p
	mask := f.mask.Load()
	p.mu.Lock()
	pend := p.pending.mask
	for _, t := range p.threads {
		pend |= t.pending.mask
	}
	p.mu.Unlock()
	if pend&mask != 0 {
		return linux.POLLIN | linux.POLLRDNORM
	}
	return 0
}

func (f *signalFile) Watch(wake vfs.Wake) func() { return f.p.sigQ.Watch(wake) }

// read fills buf with as many records as fit, waiting for the first
// unless b says not to; t (nil: none) is the reading thread of p.
func (f *signalFile) read(p *Process, t *Thread, b vfs.Blocking, buf []byte) (int, error) {
	if len(buf) < ssiSize {
		return 0, linux.EINVAL
	}
	n := 0
	take := func() bool {
		blocked := ^f.mask.Load()
		p.mu.Lock()
		defer p.mu.Unlock()
		for n+ssiSize <= len(buf) {
			var info sigInfo
			ok := false
			if t != nil {
				info, ok = t.pending.take(blocked)
			}
			if !ok {
				info, ok = p.pending.take(blocked)
			}
			if !ok {
				break
			}
			info.signalfdRecord(buf[n : n+ssiSize])
			n += ssiSize
		}
		return n > 0
	}
	if err := vfs.WaitFor(&p.sigQ, b, take); err != nil {
		return 0, err
	}
	return n, nil
}

// signalfdRecord writes the struct signalfd_siginfo of info: the
// siginfo's union read by its layout, as Linux's signalfd_copyinfo.
func (i *sigInfo) signalfdRecord(out []byte) {
	var si [siSize]byte
	i.encode(si[:])
	le := binary.LittleEndian
	clear(out)
	copy(out[0:12], si[0:12]) // signo, errno, code
	code := int32(le.Uint32(si[8:]))
	pidUID := func() { copy(out[12:20], si[16:24]) }
	switch {
	case code == siTimer:
		le.PutUint32(out[24:], le.Uint32(si[16:])) // ssi_tid
		le.PutUint32(out[32:], le.Uint32(si[20:])) // ssi_overrun
		le.PutUint32(out[44:], le.Uint32(si[24:])) // ssi_int
		le.PutUint64(out[48:], le.Uint64(si[24:])) // ssi_ptr
	case code > 0 && code < siKernel && i.signo == sigCHLD:
		pidUID()
		le.PutUint32(out[40:], le.Uint32(si[24:])) // ssi_status
		le.PutUint64(out[56:], le.Uint64(si[32:])) // ssi_utime
		le.PutUint64(out[64:], le.Uint64(si[40:])) // ssi_stime
	case i.isFault():
		le.PutUint64(out[72:], le.Uint64(si[16:])) // ssi_addr
	case code > 0 && code <= linux.POLL_HUP && i.raw != nil:
		le.PutUint32(out[28:], le.Uint32(si[16:])) // ssi_band
		le.PutUint32(out[20:], le.Uint32(si[24:])) // ssi_fd
	case code < 0:
		pidUID()
		le.PutUint32(out[44:], le.Uint32(si[24:]))
		le.PutUint64(out[48:], le.Uint64(si[24:]))
	default:
		pidUID()
	}
}

// readSignalfd is read(2) on a signalfd by thread t.
func (t *Thread) readSignalfd(f *vfs.OpenFile, sf *signalFile, buf []byte) (int, error) {
	if f.Flags()&linux.O_NONBLOCK == 0 {
		t.sleepBegin()
		defer t.sleepEnd()
	}
	return sf.read(t.Proc, t, vfs.Blocking{NonBlock: f.Flags()&linux.O_NONBLOCK != 0, Intr: t.sigWake}, buf)
}

// sysSignalfd4 implements signalfd4(2) (and signalfd(2), flags 0): a new
// signalfd (fd -1) or a new mask for an existing one. SIGKILL and
// SIGSTOP are silently left out of the mask.
func sysSignalfd4(t *Thread, a *[6]uint64) (int64, bool) {
	fd, at, size, flags := int(int32(a[0])), uintptr(a[1]), a[2], a[3]
	if size != 8 || flags&^(linux.O_NONBLOCK|linux.O_CLOEXEC) != 0 {
		return -eINVAL, false
	}
	var b [8]byte
	if err := t.Proc.Space().CopyIn(at, b[:]); err != nil {
		return errno(err), false
	}
	mask := binary.LittleEndian.Uint64(b[:]) &^ unblockable
	if fd != -1 {
		f, err := t.file(fd)
		if err != nil {
			return errno(err), false
		}
		defer f.DecRef()
		sf, ok := f.Impl().(*signalFile)
		if !ok {
			return -eINVAL, false
		}
		sf.mask.Store(mask)
		t.Proc.sigQ.Notify() // pollers look again with the new mask
		return int64(fd), false
	}
	sf := &signalFile{p: t.Proc}
	sf.mask.Store(mask)
	f := vfs.NewFile(vfs.NewAnonInode(0o600, vfs.Owner{}), sf, linux.O_RDWR|uint32(flags)&linux.O_NONBLOCK)
	defer f.DecRef()
	nfd, err := t.Proc.files.Install(f, flags&linux.O_CLOEXEC != 0)
	return fdResult(nfd, err), false
}

func sysSignalfd(t *Thread, a *[6]uint64) (int64, bool) {
	b := [6]uint64{a[0], a[1], a[2], 0}
	return sysSignalfd4(t, &b)
}
