package proc

// Process file descriptors (pidfd_open(2), clone's CLONE_PIDFD): a file
// that names one process, stable across PID reuse, through which it can
// be signalled (pidfd_send_signal), waited for (waitid P_PIDFD) and
// polled: readable once the process has exited.

import (
	"encoding/binary"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// pidFile is the File behind a pidfd. It holds the Process (not its
// number), so a reaped and reused PID is never confused with it.
type pidFile struct{ p *Process }

func (*pidFile) Read(vfs.Blocking, []byte, int64) (int, error)  { return 0, linux.EINVAL }
func (*pidFile) Write(vfs.Blocking, []byte, int64) (int, error) { return 0, linux.EINVAL }
func (*pidFile) Release()                                       {}

// Readiness is POLLIN once the whole process has exited (zombie or
// reaped), as Linux's pidfd_poll.
func (f *pidFile) Readiness() uint32 {
	select {
	case <-f.p.done:
		return linux.POLLIN | linux.POLLRDNORM
	default:
		return 0
	}
}

func (f *pidFile) Watch(wake vfs.Wake) func() { return f.p.exitQ.Watch(wake) }

// newPidfd installs a pidfd for p in t's table, always close-on-exec.
func (t *Thread) newPidfd(p *Process, nonblock bool) (int, error) {
	flags := uint32(linux.O_RDWR)
	if nonblock {
		flags |= linux.O_NONBLOCK
	}
	f := vfs.NewFile(vfs.NewAnonInode(0o600, vfs.Owner{}), &pidFile{p}, flags)
	defer f.DecRef()
	return t.Proc.files.Install(f, true)
}

// pidfdProcess returns the process behind descriptor fd, EBADF if fd is
// not a pidfd.
func (t *Thread) pidfdProcess(fd int) (*Process, error) {
	p, _, err := t.pidfdOf(fd)
	return p, err
}

// pidfdOf is pidfdProcess, also reporting whether the pidfd is
// non-blocking (PIDFD_NONBLOCK).
func (t *Thread) pidfdOf(fd int) (*Process, bool, error) {
	f, err := t.file(fd)
	if err != nil {
		return nil, false, err
	}
	defer f.DecRef()
	pf, ok := f.Impl().(*pidFile)
	if !ok {
		return nil, false, linux.EBADF
	}
	return pf.p, f.Flags()&linux.O_NONBLOCK != 0, nil
}

// sysPidfdOpen implements pidfd_open(2): only a thread-group leader that
// has not been reaped (EINVAL for another thread, ESRCH for no process);
// the only flag is PIDFD_NONBLOCK (O_NONBLOCK).
func sysPidfdOpen(t *Thread, a *[6]uint64) (int64, bool) {
	pid, flags := int(int32(a[0])), a[1]
	if flags&^linux.O_NONBLOCK != 0 || pid <= 0 {
		return -eINVAL, false
	}
	th := lookupThread(pid)
	p := lookup(pid)
	if p == nil {
		if th != nil {
			return -eINVAL, false
		}
		return -eSRCH, false
	}
	p.mu.Lock()
	reaped := p.state == procReaped
	p.mu.Unlock()
	if reaped {
		return -eSRCH, false
	}
	fd, err := t.newPidfd(p, flags != 0)
	return fdResult(fd, err), false
}

// sysPidfdSendSignal implements pidfd_send_signal(2): kill(2) through a
// pidfd, or rt_sigqueueinfo(2) when info is given.
func sysPidfdSendSignal(t *Thread, a *[6]uint64) (int64, bool) {
	sig, at, flags := int(int32(a[1])), uintptr(a[2]), a[3]
	if flags != 0 {
		return -eINVAL, false
	}
	p, err := t.pidfdProcess(int(int32(a[0])))
	if err != nil {
		return errno(err), false
	}
	info := t.senderInfo(sig, siUser)
	if at != 0 {
		raw := make([]byte, siSize)
		if err := t.Proc.Space().CopyIn(at, raw); err != nil {
			return errno(err), false
		}
		le := binary.LittleEndian
		if int(int32(le.Uint32(raw[0:]))) != sig {
			return -eINVAL, false
		}
		code := int32(le.Uint32(raw[8:]))
		if p != t.Proc && (code >= 0 || code == siTkill) {
			return -ePERM, false
		}
		info = sigInfo{signo: sig, code: code, raw: raw}
	}
	p.mu.Lock()
	reaped := p.state == procReaped
	p.mu.Unlock()
	switch {
	case reaped:
		return -eSRCH, false
	case sig < 0 || sig > nSig:
		return -eINVAL, false
	case !t.mayKill(p, sig):
		return -ePERM, false
	case sig == 0 || p.shielded(sig):
		return 0, false
	}
	return p.sendSignal(info), false
}

// mayAttach is ptrace's attach check with the caller's real ids
// (PTRACE_MODE_ATTACH_REALCREDS): itself, root, or a caller whose real
// uid and gid equal all of the target's, the target dumpable.
func (t *Thread) mayAttach(p *Process) bool {
	c := t.creds()
	if p == t.Proc || c.privileged() {
		return true
	}
	p.mu.Lock()
	pc := p.cred
	p.mu.Unlock()
	return c.ruid == pc.ruid && c.ruid == pc.euid && c.ruid == pc.suid &&
		c.rgid == pc.rgid && c.rgid == pc.egid && c.rgid == pc.sgid && !p.nonDumpable.Load()
}

// sysPidfdGetfd implements pidfd_getfd(2): a duplicate, close-on-exec,
// of another process's descriptor, for a caller that may attach to it
// (EPERM); ESRCH once it has exited, EBADF for a descriptor it does not
// have.
func sysPidfdGetfd(t *Thread, a *[6]uint64) (int64, bool) {
	if a[2] != 0 {
		return -eINVAL, false
	}
	p, err := t.pidfdProcess(int(int32(a[0])))
	if err != nil {
		return errno(err), false
	}
	p.mu.Lock()
	exited, files := p.state != procRunning, p.files
	p.mu.Unlock()
	switch {
	case exited:
		return -eSRCH, false
	case !t.mayAttach(p):
		return -ePERM, false
	}
	f, err := files.Get(int(int32(a[1])))
	if err != nil {
		return errno(err), false
	}
	defer f.DecRef()
	fd, err := t.Proc.files.Install(f, true)
	return fdResult(fd, err), false
}
