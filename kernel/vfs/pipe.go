package vfs

import (
	"sync"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/kmem"
)

// pipe is the buffer shared by the ends of a pipe or FIFO, modelled on
// Linux's (fs/pipe.c) so that capacity and readiness match it exactly: a
// ring of page-sized slots, 16 by default. A write first tops up the last
// page with the part of it below a page (total % 4096) if that fits
// whole, then fills new pages; so writes of up to PIPE_BUF bytes are
// never split, and a pipe holds less than 64 KiB when writes are not
// page multiples. A page's slot is free again only once it is read out.
type pipe struct {
	// spliceMu keeps readers out while a splice moves bytes it has
	// peeked at and consumes only once written (splice.go). Lock order:
	// spliceMu, then mu.
	spliceMu sync.Mutex
	mu       sync.Mutex
	slots    []pipeBuf   // ring; len is the capacity in pages; protected by mu
	tail     int         // oldest slot in use; protected by mu
	used     int         // slots in use; protected by mu
	bytes    int         // bytes buffered; protected by mu
	spare    []*pipePage // pages read out, kept for the next writes; protected by mu
	readers  int         // open read ends; protected by mu
	writers  int         // open write ends; protected by mu
	rOpens   int         // read ends ever opened (FIFO rendezvous); protected by mu
	wOpens   int         // write ends ever opened; protected by mu

	rq Queue // readers' side: data added, writers came or went
	wq Queue // writers' side: room made, readers came or went

	onEmpty func() // called when the last end closes (a FIFO leaves its table)
}

type pipePage = [linux.PIPE_BUF]byte

type pipeBuf struct {
	page *pipePage
	off  int // first unread byte
	n    int // unread bytes
}

func newPipe() *pipe {
	return &pipe{slots: make([]pipeBuf, linux.PipeDefSize/linux.PIPE_BUF)}
}

// put stores as much of src as the rules allow and returns the count,
// and ENOMEM when it stopped because the kernel is short of memory for a
// new page (kmem.Low). Preconditions: p.mu is held.
func (p *pipe) put(src []byte, merge bool) (int, error) {
	done := 0
	if chars := len(src) % linux.PIPE_BUF; merge && chars > 0 && p.used > 0 {
		last := &p.slots[(p.tail+p.used-1)%len(p.slots)]
		if end := last.off + last.n; end+chars <= linux.PIPE_BUF {
			copy(last.page[end:], src[:chars])
			last.n += chars
			done = chars
		}
	}
	for done < len(src) && p.used < len(p.slots) {
		var pg *pipePage
		if n := len(p.spare); n > 0 {
			pg, p.spare = p.spare[n-1], p.spare[:n-1]
		} else {
			if kmem.Refuse() {
				p.bytes += done
				return done, linux.ENOMEM
			}
			pg = new(pipePage)
		}
		k := copy(pg[:], src[done:])
		p.slots[(p.tail+p.used)%len(p.slots)] = pipeBuf{page: pg, n: k}
		p.used++
		done += k
	}
	p.bytes += done
	return done, nil
}

// take reads up to len(dst) bytes, freeing the slots it empties.
// Preconditions: p.mu is held.
func (p *pipe) take(dst []byte) int {
	done := 0
	for done < len(dst) && p.used > 0 {
		b := &p.slots[p.tail]
		k := copy(dst[done:], b.page[b.off:b.off+b.n])
		b.off += k
		b.n -= k
		done += k
		if b.n == 0 {
			// Keep the page for the next write: a busy pipe then allocates
			// nothing, and pages in use and spare never pass the capacity.
			if len(p.spare)+p.used <= len(p.slots) {
				p.spare = append(p.spare, b.page)
			}
			*b = pipeBuf{}
			p.tail = (p.tail + 1) % len(p.slots)
			p.used--
		}
	}
	p.bytes -= done
	return done
}

// pipeEnd is the File of a pipe's read end, write end, or both (a FIFO
// opened O_RDWR).
type pipeEnd struct {
	p     *pipe
	read  bool
	write bool
	wSeen int // p.wOpens when a FIFO's read end opened without a writer: no POLLHUP until one comes
}

// ReadsExactly implements ExactReader: take copies every byte a read
// reports, from the buffer's start.
func (*pipeEnd) ReadsExactly() {}

func (e *pipeEnd) Read(b Blocking, dst []byte, _ int64) (int, error) {
	if len(dst) == 0 {
		return 0, nil
	}
	p := e.p
	var w waiter
	defer w.done()
	for {
		p.spliceMu.Lock()
		p.mu.Lock()
		if p.used > 0 {
			n := p.take(dst)
			p.mu.Unlock()
			p.spliceMu.Unlock()
			p.wq.Notify()
			return n, nil
		}
		p.spliceMu.Unlock()
		if p.writers == 0 {
			p.mu.Unlock()
			return 0, nil
		}
		if b.NonBlock {
			p.mu.Unlock()
			return 0, linux.EAGAIN
		}
		w.arm(&p.rq)
		p.mu.Unlock()
		if err := w.wait(b); err != nil {
			return 0, err
		}
	}
}

func (e *pipeEnd) Write(b Blocking, src []byte, _ int64) (int, error) {
	if len(src) == 0 {
		return 0, nil
	}
	p := e.p
	done, merge := 0, true
	var w waiter
	defer w.done()
	for {
		p.mu.Lock()
		if p.readers == 0 {
			p.mu.Unlock()
			return done, linux.EPIPE
		}
		n, err := p.put(src[done:], merge)
		done += n
		merge = false
		full := done < len(src)
		p.mu.Unlock()
		if n > 0 {
			p.rq.Notify()
		}
		if err != nil { // no memory for the buffer: as Linux's pipe_write
			if done > 0 {
				return done, nil
			}
			return 0, err
		}
		if !full {
			return done, nil
		}
		if b.NonBlock {
			if done > 0 {
				return done, nil
			}
			return 0, linux.EAGAIN
		}
		p.mu.Lock()
		w.arm(&p.wq)
		room := p.used < len(p.slots) || p.readers == 0
		p.mu.Unlock()
		if room {
			continue
		}
		if err := w.wait(b); err != nil {
			if done > 0 {
				return done, nil
			}
			return 0, err
		}
	}
}

func (e *pipeEnd) Release() {
	p := e.p
	p.mu.Lock()
	if e.read {
		p.readers--
	}
	if e.write {
		p.writers--
	}
	empty := p.readers == 0 && p.writers == 0
	p.mu.Unlock()
	p.rq.Notify()
	p.wq.Notify()
	if empty && p.onEmpty != nil {
		p.onEmpty()
	}
}

// Readiness follows pipe_poll: readable with data, hung up with no
// writer (once one has been seen), writable with a free slot, in error
// with no reader.
// AsyncIO: O_ASYNC signals readiness changes (vfs.AsyncIO).
func (*pipeEnd) AsyncIO() {}

func (e *pipeEnd) Readiness() uint32 {
	p := e.p
	p.mu.Lock()
	defer p.mu.Unlock()
	var m uint32
	if e.read {
		if p.used > 0 {
			m |= linux.POLLIN | linux.POLLRDNORM
		}
		if p.writers == 0 && p.wOpens != e.wSeen {
			m |= linux.POLLHUP
		}
	}
	if e.write {
		if p.used < len(p.slots) {
			m |= linux.POLLOUT | linux.POLLWRNORM
		}
		if p.readers == 0 {
			m |= linux.POLLERR
		}
	}
	return m
}

// Watch signals ch on changes that matter to this end.
func (e *pipeEnd) Watch(wake Wake) func() {
	switch {
	case e.read && e.write:
		c1, c2 := e.p.rq.Watch(wake), e.p.wq.Watch(wake)
		return func() { c1(); c2() }
	case e.read:
		return e.p.rq.Watch(wake)
	}
	return e.p.wq.Watch(wake)
}

// WatchQueues names the queues Watch registers on (QueueWatcher).
func (e *pipeEnd) WatchQueues() (*Queue, *Queue) {
	switch {
	case e.read && e.write:
		return &e.p.rq, &e.p.wq
	case e.read:
		return &e.p.rq, nil
	}
	return &e.p.wq, nil
}

// PipeBuffered returns the bytes waiting in the pipe behind f
// (FIONREAD), or ENOTTY when f is not a pipe.
func PipeBuffered(f *OpenFile) (int, error) {
	e, ok := f.file.(*pipeEnd)
	if !ok {
		return 0, linux.ENOTTY
	}
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	return e.p.bytes, nil
}

// NewPipe returns the read and write ends of a new pipe, as pipe2(2)
// makes them. flags may hold O_NONBLOCK, set on both ends, and
// O_CLOEXEC, which is for the caller to apply to both descriptors;
// anything else fails with EINVAL (O_DIRECT packet mode is not
// supported). owner owns the pipe's inode.
func NewPipe(flags uint32, owner Owner) (r, w *OpenFile, err error) {
	if flags&^(linux.O_NONBLOCK|linux.O_CLOEXEC) != 0 {
		return nil, nil, linux.EINVAL
	}
	if kmem.Refuse() {
		return nil, nil, linux.ENFILE
	}
	p := newPipe()
	p.readers, p.writers, p.rOpens, p.wOpens = 1, 1, 1, 1
	ino := NewAnonInode(linux.S_IFIFO|0o600, owner)
	status := flags & linux.O_NONBLOCK
	r = NewFile(ino, &pipeEnd{p: p, read: true}, linux.O_RDONLY|status)
	w = NewFile(ino, &pipeEnd{p: p, write: true}, linux.O_WRONLY|status)
	return r, w, nil
}

// PipeSize returns the capacity of the pipe behind f (F_GETPIPE_SZ), or
// EBADF when f is not a pipe.
func PipeSize(f *OpenFile) (int, error) {
	e, ok := f.file.(*pipeEnd)
	if !ok {
		return 0, linux.EBADF
	}
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	return len(e.p.slots) * linux.PIPE_BUF, nil
}

// SetPipeSize changes the capacity of the pipe behind f (F_SETPIPE_SZ):
// rounded up to a power of two of at least a page; EPERM above
// PipeMaxSize unless privileged; EBUSY when the pages in use would not
// fit. It returns the new capacity.
func SetPipeSize(f *OpenFile, size int, privileged bool) (int, error) {
	e, ok := f.file.(*pipeEnd)
	if !ok {
		return 0, linux.EBADF
	}
	if size < 0 || size > 1<<31 {
		return 0, linux.EINVAL
	}
	n := linux.PIPE_BUF
	for n < size {
		n <<= 1
	}
	if n > linux.PipeMaxSize && !privileged {
		return 0, linux.EPERM
	}
	p := e.p
	p.mu.Lock()
	if p.used > n/linux.PIPE_BUF {
		p.mu.Unlock()
		return 0, linux.EBUSY
	}
	slots := make([]pipeBuf, n/linux.PIPE_BUF)
	for i := range p.used {
		slots[i] = p.slots[(p.tail+i)%len(p.slots)]
	}
	p.slots, p.tail = slots, 0
	if extra := len(p.spare) + p.used - len(slots); extra > 0 {
		keep := len(p.spare) - extra
		clear(p.spare[keep:])
		p.spare = p.spare[:keep]
	}
	p.mu.Unlock()
	p.wq.Notify()
	return n, nil
}
