package pagecache

import "sync"

// Write-back failures reach every open description of a file once, as
// Linux's errseq_t (lib/errseq.c) makes them: the file keeps a count of
// failures, the last one and whether any description has reported it
// yet; each description keeps a cursor into that count, taken when it
// was opened. A Sync through a cursor reports a failure recorded since
// the cursor's value, once, and moves the cursor on. So when a
// write-back fails, every description open at the time hears of it from
// its next fsync, and one opened later does not, unless nobody has
// reported the failure yet: then the new description reports it too
// (Linux's errseq_sample gives it a cursor of 0), so that a failure is
// never lost because whoever caused it had closed the file.

// ErrCursor is one description's place in its file's failures.
type ErrCursor uint64

// errSeq is a file's record of write-back failures.
type errSeq struct {
	mu   sync.Mutex
	val  uint64 // count<<2 | seen<<1 | failed; 0: never failed
	last error  // the last failure
}

const (
	errFailed = 1 << 0 // a failure was recorded
	errSeen   = 1 << 1 // some description reported the last one
	errOne    = 1 << 2 // one in the count
)

// set records err. A failure nobody has reported yet only replaces the
// last one: the descriptions that will report it are the same.
func (e *errSeq) set(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.val&errSeen != 0 {
		e.val += errOne
	}
	e.val = e.val&^errSeen | errFailed
	e.last = err
}

// sample returns a new description's cursor: the present value once a
// failure was reported, else 0, so that an unreported one is reported
// through it too.
func (e *errSeq) sample() ErrCursor {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.val&errSeen == 0 {
		return 0
	}
	return ErrCursor(e.val)
}

// check returns the failure recorded since *c, if any, marking it
// reported and moving *c to it.
func (e *errSeq) check(c *ErrCursor) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ErrCursor(e.val) == *c {
		return nil
	}
	e.val |= errSeen
	*c = ErrCursor(e.val)
	return e.last
}

// unseen returns the failure no description has reported yet, or nil.
func (e *errSeq) unseen() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.val&(errFailed|errSeen) != errFailed {
		return nil
	}
	return e.last
}

// SampleErr returns the cursor of a new open description of f: Syncs
// through it report the write-back failures from now on, and one that
// no description has reported yet.
func (f *File) SampleErr() ErrCursor { return f.wbErr.sample() }

// SyncFrom writes f's dirty pages back and then flushes the backing's
// cache, as fsync does for the description whose cursor is c: it
// returns a write-back failure recorded since *c (this write-back's
// own, or an earlier one's that this description has not reported),
// then moves *c on. As Linux's blkdev_fsync it does not flush the
// backing after a failure.
func (f *File) SyncFrom(c *ErrCursor) error {
	f.writeback() // recorded in f.wbErr
	if err := f.wbErr.check(c); err != nil {
		return err
	}
	return f.b.Flush()
}

// UnseenErr returns a write-back failure of f that no description has
// reported, or nil: what a later File of the same backing must still
// report when f is released (Linux keeps a block device's record in its
// inode, which outlives the device's opens).
func (f *File) UnseenErr() error { return f.wbErr.unseen() }

// RecordErr records err as a write-back failure of f, one that no
// description has reported (see UnseenErr).
func (f *File) RecordErr(err error) {
	if err != nil {
		f.wbErr.set(err)
	}
}
