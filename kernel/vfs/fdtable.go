package vfs

import (
	"sync"
	"sync/atomic"

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
//
// Looking a descriptor up (Get: every read, write, fstat, ...) takes no
// lock, so that threads of one process using files on several CPUs do
// not meet on mu. Everything that changes the table (open, dup, close,
// exec's close-on-exec, fork's copy) does so under mu, and stores each
// slot atomically; when the table must grow it publishes a larger copy
// of the slots, and the old array, which some Get may still be reading,
// is never written again. Get takes its reference to the file it found
// with a compare-and-swap that fails once the file's count reached zero
// (its last descriptor closed, its release begun), then checks that the
// slot still holds that file: so a Get that succeeds returns a file the
// descriptor named at that moment, and a file is never handed out again
// once it was taken out of every table and its count went to zero. A
// close racing a call on another thread thus either wins (the call fails
// with EBADF) or lets the call finish with its own reference, and the
// file's last release runs after it.
type FDTable struct {
	mu      sync.Mutex
	files   atomic.Pointer[fdArray] // read without mu; slots and the pointer written under mu
	cloexec []bool                  // FD_CLOEXEC per slot of files; protected by mu
	limit   atomic.Int32            // RLIMIT_NOFILE soft limit; written under mu
	low     int                     // every slot below low is in use; protected by mu
}

// fdArray is the table's slots. A slot holding a file holds one of its
// references.
type fdArray struct {
	slots []atomic.Pointer[OpenFile]
}

// minSlots is the first array's size: most processes never open more
// (Linux's NR_OPEN_DEFAULT is 64 too).
const minSlots = 64

// NewFDTable returns an empty table with the given descriptor limit.
func NewFDTable(limit int) *FDTable {
	t := &FDTable{cloexec: make([]bool, minSlots)}
	t.files.Store(&fdArray{slots: make([]atomic.Pointer[OpenFile], minSlots)})
	t.limit.Store(int32(limit))
	return t
}

// Limit returns the descriptor limit (RLIMIT_NOFILE's soft value).
func (t *FDTable) Limit() int {
	return int(t.limit.Load())
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
	t.limit.Store(int32(n))
	t.mu.Unlock()
	return nil
}

// slots returns the current slots.
// Preconditions: t.mu is held (the array may be replaced otherwise).
func (t *FDTable) slots() []atomic.Pointer[OpenFile] {
	return t.files.Load().slots
}

// alloc returns the lowest free descriptor at or above min.
// Preconditions: t.mu is held.
func (t *FDTable) alloc(min int) (int, error) {
	s := t.slots()
	i := max(min, t.low)
	for ; i < len(s); i++ {
		if s[i].Load() == nil {
			break
		}
	}
	if i >= t.Limit() {
		return 0, linux.EMFILE
	}
	return i, nil
}

// grow makes the table hold at least n slots, publishing a larger copy
// if it does not. Get may go on reading the old array: its files are
// found again in the new one.
// Preconditions: t.mu is held.
func (t *FDTable) grow(n int) {
	old := t.slots()
	if n <= len(old) {
		return
	}
	size := max(len(old), minSlots)
	for size < n {
		size *= 2
	}
	a := &fdArray{slots: make([]atomic.Pointer[OpenFile], size)}
	for i := range old {
		a.slots[i].Store(old[i].Load())
	}
	cloexec := make([]bool, size)
	copy(cloexec, t.cloexec)
	t.cloexec = cloexec
	t.files.Store(a)
}

// set puts f in slot fd, taking a reference, and returns the file the
// slot held before, whose reference the caller drops after unlocking.
// Preconditions: t.mu is held.
func (t *FDTable) set(fd int, f *OpenFile, cloexec bool) *OpenFile {
	if f == nil && fd >= len(t.slots()) {
		return nil
	}
	t.grow(fd + 1)
	s := t.slots()
	if f != nil {
		f.IncRef() // before Get can find it there
	}
	old := s[fd].Swap(f)
	t.cloexec[fd] = cloexec && f != nil
	switch {
	case f == nil && fd < t.low:
		t.low = fd
	case f != nil && fd == t.low:
		for t.low < len(s) && s[t.low].Load() != nil {
			t.low++
		}
	}
	return old
}

// get returns the file at fd.
// Preconditions: t.mu is held.
func (t *FDTable) get(fd int) *OpenFile {
	return load(t.slots(), fd)
}

// load returns the file in slot fd of s, or nil.
func load(s []atomic.Pointer[OpenFile], fd int) *OpenFile {
	if fd < 0 || fd >= len(s) {
		return nil
	}
	return s[fd].Load()
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
	if fd < 0 || fd >= t.Limit() {
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
// DecRef when done, or EBADF. It takes no lock (see FDTable).
func (t *FDTable) Get(fd int) (*OpenFile, error) {
	for {
		f := load(t.files.Load().slots, fd)
		if f == nil {
			return nil, linux.EBADF
		}
		if getHook != nil {
			getHook(fd)
		}
		if !f.tryIncRef() {
			continue // closed since: look again, the slot has changed
		}
		// The slot may have changed between the load and the reference
		// (a close, a dup2 onto fd, and f still alive through another
		// descriptor): a call must not go on with a file its descriptor
		// no longer names, or the unix sockets' collector, which counts
		// references, could see one it cannot account for.
		if load(t.files.Load().slots, fd) == f {
			return f, nil
		}
		f.DecRef()
	}
}

// getHook, set only by tests, runs in Get between finding a file and
// taking its reference, so that tests can close or replace the
// descriptor in that window.
var getHook func(fd int)

// FDFlags returns the descriptor flags of fd (F_GETFD): FD_CLOEXEC or 0.
func (t *FDTable) FDFlags(fd int) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.get(fd) == nil {
		return 0, linux.EBADF
	}
	if t.cloexec[fd] {
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
	t.cloexec[fd] = flags&linux.FD_CLOEXEC != 0
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
	if min < 0 || min >= t.Limit() {
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
		if load(t.files.Load().slots, oldfd) == nil {
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
	if newfd < 0 || newfd >= t.Limit() {
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
	s := t.slots()
	for fd := max(first, 0); fd <= last && fd < len(s); fd++ {
		if s[fd].Load() == nil {
			continue
		}
		if cloexecOnly {
			t.cloexec[fd] = true
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
	s := t.slots()
	for fd := range s {
		if t.cloexec[fd] && s[fd].Load() != nil {
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
	s := t.slots()
	n := &FDTable{cloexec: make([]bool, len(s)), low: t.low}
	a := &fdArray{slots: make([]atomic.Pointer[OpenFile], len(s))}
	for fd := range s {
		if f := s[fd].Load(); f != nil {
			f.IncRef()
			a.slots[fd].Store(f)
		}
	}
	copy(n.cloexec, t.cloexec)
	n.files.Store(a)
	n.limit.Store(t.limit.Load())
	return n
}

// FDs returns the open descriptors in increasing order (/proc/self/fd).
func (t *FDTable) FDs() []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []int
	for fd := range t.slots() {
		if t.get(fd) != nil {
			out = append(out, fd)
		}
	}
	return out
}
