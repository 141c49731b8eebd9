package vfs

import "shortbread/kernel/abi/linux"

// File is what one kind of open file does on read(2) and write(2). The
// VFS supplies the File of regular files and directories itself; device
// nodes (and any inode implementing Opener) supply theirs, and pipes,
// eventfds, epoll instances and sockets are Files with no path.
//
// A File that does not also implement Seeker is a stream (pipes,
// terminals, sockets): lseek, pread and pwrite fail with ESPIPE and the
// offset passed to Read and Write is meaningless.
//
// A File that implements Poller reports readiness for poll and epoll; one
// that does not is always ready for reading and writing, like a regular
// file, and epoll refuses it (EPERM).
type File interface {
	// Read reads into p at offset off. It may block as b allows and
	// returns EAGAIN or EINTR when it must not or was interrupted.
	Read(b Blocking, p []byte, off int64) (int, error)
	// Write writes p at offset off. A write cut short by an interrupt
	// returns the count written and no error. A write to a pipe or
	// socket with no reader fails with EPIPE, possibly after writing
	// some bytes; the caller raises SIGPIPE whenever the error is EPIPE.
	Write(b Blocking, p []byte, off int64) (int, error)
	// Release is called once, when the last reference to the open file
	// is dropped.
	Release()
}

// Seeker is implemented by Files that have a file position.
type Seeker interface {
	// Lseek returns the new position for lseek(off, whence) from the
	// current position pos; the VFS stores it. Negative results fail
	// with EINVAL.
	Lseek(pos, off int64, whence int) (int64, error)
}

// Poller is implemented by Files whose readiness changes: pipes,
// terminals, eventfds, sockets, epoll instances.
type Poller interface {
	// Readiness returns the poll bits (linux.POLLIN, POLLOUT, POLLHUP,
	// POLLERR, ...) that hold now.
	Readiness() uint32
	// Watch registers wake to be told whenever readiness may have
	// changed (see Queue.Watch), until cancel is called.
	Watch(wake Wake) (cancel func())
}

// DefaultReadiness is what poll reports for files that never block:
// DEFAULT_POLLMASK in include/linux/poll.h.
const DefaultReadiness = linux.POLLIN | linux.POLLOUT | linux.POLLRDNORM | linux.POLLWRNORM

// SeekStream is a Seeker for files whose position is always 0 and whose
// lseek succeeds, like /dev/null (null_lseek in drivers/char/mem.c).
type SeekStream struct{}

// Lseek returns 0.
func (SeekStream) Lseek(pos, off int64, whence int) (int64, error) { return 0, nil }

// SeekSized is Lseek for a file of a fixed size (a block device).
func SeekSized(pos, off int64, whence int, size int64) (int64, error) {
	return seekWithin(pos, off, whence, size)
}

// Syncer is implemented by files whose writes fsync must make durable
// (block devices: the disk's volatile cache is flushed).
type Syncer interface {
	Sync() error
}

// seekWithin computes an lseek result for a file of the given size.
func seekWithin(pos, off int64, whence int, size int64) (int64, error) {
	var base int64
	switch whence {
	case linux.SEEK_SET:
	case linux.SEEK_CUR:
		base = pos
	case linux.SEEK_END:
		base = size
	case linux.SEEK_DATA:
		// Without hole tracking the whole file is data (generic_file_llseek).
		if off < 0 || off >= size {
			return 0, linux.ENXIO
		}
		return off, nil
	case linux.SEEK_HOLE:
		if off < 0 || off >= size {
			return 0, linux.ENXIO
		}
		return size, nil
	default:
		return 0, linux.EINVAL
	}
	n := base + off
	if (off > 0 && n < base) || n < 0 {
		return 0, linux.EINVAL
	}
	return n, nil
}
