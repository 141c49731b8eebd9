package vfs

import (
	"sync"

	"shortbread/kernel/abi/linux"
)

// DefaultNOFILE is the RLIMIT_NOFILE soft limit Linux starts init with
// (INR_OPEN_CUR).
const DefaultNOFILE = 1024

// FDTable maps file descriptors to open files: one per process, shared by
// threads created with CLONE_FILES and copied by fork. Each slot holds a
// reference to its OpenFile and the descriptor's FD_CLOEXEC flag.
// New descriptors are the lowest free numbers below the RLIMIT_NOFILE
// limit.
type FDTable struct {
	mu    sync.Mutex
	fds   []fdSlot // protected by mu
	limit int      // RLIMIT_NOFILE soft limit; protected by mu
	low   int      // every slot below low is in use; protected by mu
}

type fdSlot struct {
	f       *OpenFile
	cloexec bool
}

// NewFDTable returns an empty table with the given descriptor limit.
func NewFDTable(limit int) *FDTable {
	return &FDTable{limit: limit}
}

// Limit returns the descriptor limit (RLIMIT_NOFILE's soft value).
func (t *FDTable) Limit() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.limit
}

// SetLimit changes the descriptor limit, as setrlimit(RLIMIT_NOFILE)
// does: descriptors already above it stay open. Limits above NR_OPEN
// fail with EPERM.
func (t *FDTable) SetLimit(n int) error {
	if n < 0 {
		return linux.EINVAL
	}
	if n > linux.NR_OPEN {
		return linux.EPERM
	}
	t.mu.Lock()
	t.limit = n
	t.mu.Unlock()
	return nil
}

// alloc returns the lowest free descriptor at or above min.
// Preconditions: t.mu is held.
func (t *FDTable) alloc(min int) (int, error) {
	i := max(min, t.low)
	for ; i < len(t.fds); i++ {
		if t.fds[i].f == nil {
			break
		}
	}
	if i >= t.limit {
		return 0, linux.EMFILE
	}
	return i, nil
}

// set puts f in slot fd, taking a reference, and returns the file the
// slot held before, whose reference the caller drops after unlocking.
// Preconditions: t.mu is held.
func (t *FDTable) set(fd int, f *OpenFile, cloexec bool) *OpenFile {
	for fd >= len(t.fds) {
		t.fds = append(t.fds, fdSlot{})
	}
	old := t.fds[fd].f
	if f != nil {
		f.IncRef()
	}
	t.fds[fd] = fdSlot{f: f, cloexec: cloexec}
	switch {
	case f == nil && fd < t.low:
		t.low = fd
	case f != nil && fd == t.low:
		for t.low < len(t.fds) && t.fds[t.low].f != nil {
			t.low++
		}
	}
	return old
}

func (t *FDTable) get(fd int) *OpenFile {
	if fd < 0 || fd >= len(t.fds) {
		return nil
	}
	return t.fds[fd].f
}

// Room returns EMFILE when no descriptor below the limit is free. open
// asks before it looks the path up, because Linux takes the descriptor
// first (get_unused_fd_flags): at the limit, a missing file is EMFILE.
func (t *FDTable) Room() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, err := t.alloc(0)
	return err
}

// Install gives f the lowest free descriptor, taking a reference of its
// own; cloexec sets FD_CLOEXEC. The caller keeps its reference.
func (t *FDTable) Install(f *OpenFile, cloexec bool) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fd, err := t.alloc(0)
	if err != nil {
		return 0, err
	}
	t.set(fd, f, cloexec)
	return fd, nil
}

// InstallAt puts f at descriptor fd, closing what was there, like dup2
// does with a file not yet in the table.
func (t *FDTable) InstallAt(fd int, f *OpenFile, cloexec bool) error {
	t.mu.Lock()
	if fd < 0 || fd >= t.limit {
		t.mu.Unlock()
		return linux.EBADF
	}
	old := t.set(fd, f, cloexec)
	t.mu.Unlock()
	if old != nil {
		old.DecRef()
	}
	return nil
}

// Get returns the file at fd with a reference the caller must drop with
// DecRef when done, or EBADF.
func (t *FDTable) Get(fd int) (*OpenFile, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.get(fd)
	if f == nil {
		return nil, linux.EBADF
	}
	f.IncRef()
	return f, nil
}

// FDFlags returns the descriptor flags of fd (F_GETFD): FD_CLOEXEC or 0.
func (t *FDTable) FDFlags(fd int) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.get(fd) == nil {
		return 0, linux.EBADF
	}
	if t.fds[fd].cloexec {
		return linux.FD_CLOEXEC, nil
	}
	return 0, nil
}

// SetFDFlags sets the descriptor flags of fd (F_SETFD); only FD_CLOEXEC counts.
func (t *FDTable) SetFDFlags(fd int, flags int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.get(fd) == nil {
		return linux.EBADF
	}
	t.fds[fd].cloexec = flags&linux.FD_CLOEXEC != 0
	return nil
}

// Dup duplicates fd onto the lowest free descriptor (dup(2)); the copy
// does not have FD_CLOEXEC.
func (t *FDTable) Dup(fd int) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.get(fd)
	if f == nil {
		return 0, linux.EBADF
	}
	n, err := t.alloc(0)
	if err != nil {
		return 0, err
	}
	t.set(n, f, false)
	return n, nil
}

// DupFD duplicates fd onto the lowest free descriptor at or above min
// (F_DUPFD, F_DUPFD_CLOEXEC with cloexec).
func (t *FDTable) DupFD(fd, min int, cloexec bool) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.get(fd)
	if f == nil {
		return 0, linux.EBADF
	}
	if min < 0 || min >= t.limit {
		return 0, linux.EINVAL
	}
	n, err := t.alloc(min)
	if err != nil {
		return 0, err
	}
	t.set(n, f, cloexec)
	return n, nil
}

// Dup2 makes newfd refer to oldfd's file, closing what newfd held
// (dup2(2)). Equal descriptors are left alone if valid.
func (t *FDTable) Dup2(oldfd, newfd int) (int, error) {
	if oldfd == newfd {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.get(oldfd) == nil {
			return 0, linux.EBADF
		}
		return newfd, nil
	}
	return t.dup3(oldfd, newfd, false)
}

// Dup3 is Dup2 with flags (dup3(2)): O_CLOEXEC sets FD_CLOEXEC on newfd;
// equal descriptors and other flags fail with EINVAL.
func (t *FDTable) Dup3(oldfd, newfd int, flags int) (int, error) {
	if flags&^linux.O_CLOEXEC != 0 || oldfd == newfd {
		return 0, linux.EINVAL
	}
	return t.dup3(oldfd, newfd, flags&linux.O_CLOEXEC != 0)
}

func (t *FDTable) dup3(oldfd, newfd int, cloexec bool) (int, error) {
	t.mu.Lock()
	if newfd < 0 || newfd >= t.limit {
		t.mu.Unlock()
		return 0, linux.EBADF
	}
	f := t.get(oldfd)
	if f == nil {
		t.mu.Unlock()
		return 0, linux.EBADF
	}
	old := t.set(newfd, f, cloexec)
	t.mu.Unlock()
	if old != nil {
		t.closed(old)
	}
	return newfd, nil
}

// Close closes fd (close(2)). The file is released when no other
// descriptor or system call in progress holds it.
func (t *FDTable) Close(fd int) error {
	t.mu.Lock()
	if t.get(fd) == nil {
		t.mu.Unlock()
		return linux.EBADF
	}
	old := t.set(fd, nil, false)
	t.mu.Unlock()
	t.closed(old)
	return nil
}

// closed finishes taking f out of the table: as on Linux, closing any
// descriptor of a file drops the record locks the table's process holds
// on it, even if other descriptors still refer to the file.
func (t *FDTable) closed(f *OpenFile) {
	releaseLocks(f.inode, t)
	f.DecRef()
}

// CloseRange closes descriptors first to last inclusive, or with
// cloexecOnly sets FD_CLOEXEC on them instead (close_range(2) with
// CLOSE_RANGE_CLOEXEC).
func (t *FDTable) CloseRange(first, last int, cloexecOnly bool) {
	var closed []*OpenFile
	t.mu.Lock()
	for fd := max(first, 0); fd <= last && fd < len(t.fds); fd++ {
		if t.fds[fd].f == nil {
			continue
		}
		if cloexecOnly {
			t.fds[fd].cloexec = true
		} else {
			closed = append(closed, t.set(fd, nil, false))
		}
	}
	t.mu.Unlock()
	for _, f := range closed {
		t.closed(f)
	}
}

// CloseOnExec closes every descriptor with FD_CLOEXEC, as execve does.
func (t *FDTable) CloseOnExec() {
	var closed []*OpenFile
	t.mu.Lock()
	for fd := range t.fds {
		if t.fds[fd].f != nil && t.fds[fd].cloexec {
			closed = append(closed, t.set(fd, nil, false))
		}
	}
	t.mu.Unlock()
	for _, f := range closed {
		t.closed(f)
	}
}

// CloseAll closes every descriptor, as the exit of the last thread
// sharing the table does.
func (t *FDTable) CloseAll() {
	t.CloseRange(0, int(^uint(0)>>1), false)
}

// Fork returns a copy of the table for a child process: the same
// descriptors, flags and limit, sharing the open files (and so their
// positions and status flags).
func (t *FDTable) Fork() *FDTable {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := &FDTable{fds: make([]fdSlot, len(t.fds)), limit: t.limit, low: t.low}
	copy(n.fds, t.fds)
	for _, s := range n.fds {
		if s.f != nil {
			s.f.IncRef()
		}
	}
	return n
}

// FDs returns the open descriptors in increasing order (/proc/self/fd).
func (t *FDTable) FDs() []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []int
	for fd, s := range t.fds {
		if s.f != nil {
			out = append(out, fd)
		}
	}
	return out
}
