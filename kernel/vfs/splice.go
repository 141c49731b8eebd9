package vfs

// Moving data between a pipe and another file (splice, tee, vmsplice)
// and between regular files (copy_file_range). Linux moves references
// to pages; here the bytes are copied through a kernel buffer, which a
// program can tell only by speed. What programs can tell is kept: a
// splice into a pipe takes no more than the pipe has room for (so data
// read from a socket is never lost), a splice out of a pipe consumes only
// what was written (the pipe's splice lock keeps other readers out
// meanwhile, as Linux holds the pipe's mutex), and tee consumes nothing.

import (
	"shortbread/kernel/abi/linux"
)

// IsPipe reports whether f is an end of a pipe or FIFO.
func IsPipe(f *OpenFile) bool {
	_, ok := f.file.(*pipeEnd)
	return ok
}

// SamePipe reports whether a and b are ends of one pipe.
func SamePipe(a, b *OpenFile) bool {
	ea, ok1 := a.file.(*pipeEnd)
	eb, ok2 := b.file.(*pipeEnd)
	return ok1 && ok2 && ea.p == eb.p
}

// spliceMax bounds the bytes one call moves through its buffer.
const spliceMax = 1 << 20

// waitData waits until p holds data (true) or has no writer left
// (false: end of file). Preconditions: none of p's locks is held.
func (p *pipe) waitData(b Blocking) (bool, error) {
	var w waiter
	defer w.done()
	for {
		p.mu.Lock()
		used, writers := p.used, p.writers
		if used == 0 && writers > 0 && !b.NonBlock {
			w.arm(&p.rq)
			used, writers = p.used, p.writers
		}
		p.mu.Unlock()
		switch {
		case used > 0:
			return true, nil
		case writers == 0:
			return false, nil
		case b.NonBlock:
			return false, linux.EAGAIN
		}
		if err := w.wait(b); err != nil {
			return false, err
		}
	}
}

// waitRoom waits until p has a free slot and returns the bytes the free
// slots hold; EPIPE when it has no reader.
func (p *pipe) waitRoom(b Blocking) (int, error) {
	var w waiter
	defer w.done()
	for {
		p.mu.Lock()
		free, readers := len(p.slots)-p.used, p.readers
		if free == 0 && readers > 0 && !b.NonBlock {
			w.arm(&p.wq)
			free, readers = len(p.slots)-p.used, p.readers
		}
		p.mu.Unlock()
		switch {
		case readers == 0:
			return 0, linux.EPIPE
		case free > 0:
			return free * linux.PIPE_BUF, nil
		case b.NonBlock:
			return 0, linux.EAGAIN
		}
		if err := w.wait(b); err != nil {
			return 0, err
		}
	}
}

// peek copies up to len(dst) buffered bytes without consuming them.
// Preconditions: p.mu is held.
func (p *pipe) peek(dst []byte) int {
	done := 0
	for i := 0; i < p.used && done < len(dst); i++ {
		b := &p.slots[(p.tail+i)%len(p.slots)]
		done += copy(dst[done:], b.page[b.off:b.off+b.n])
	}
	return done
}

// putAll adds src to p in fresh slots (a splice never merges into the
// last page) and wakes readers.
func (p *pipe) putAll(src []byte) (int, error) {
	p.mu.Lock()
	n, err := p.put(src, false)
	p.mu.Unlock()
	if n > 0 {
		p.rq.Notify()
	}
	return n, err
}

// consume drops n bytes from the front of p and wakes writers.
func (p *pipe) consume(n int) {
	var sink [linux.PIPE_BUF]byte
	p.mu.Lock()
	for n > 0 {
		k := p.take(sink[:min(n, len(sink))])
		if k == 0 {
			break
		}
		n -= k
	}
	p.mu.Unlock()
	p.wq.Notify()
}

// SpliceToPipe moves up to n bytes from in into the pipe out, reading in
// at *off (advanced) or, with off nil, at its position; it waits for room
// in the pipe unless nonblock (EAGAIN). It returns 0 at in's end.
func SpliceToPipe(in *OpenFile, off *int64, out *OpenFile, n int, nonblock bool, intr <-chan struct{}) (int, error) {
	p := out.file.(*pipeEnd).p
	room, err := p.waitRoom(Blocking{NonBlock: nonblock, Intr: intr})
	if err != nil {
		return 0, err
	}
	buf := make([]byte, min(n, room, spliceMax))
	var k int
	if off != nil {
		k, err = in.Pread(buf, *off, intr)
	} else {
		k, err = in.Read(buf, intr)
	}
	if k == 0 {
		return 0, err
	}
	put, perr := p.putAll(buf[:k])
	// Another writer may have taken the room meanwhile: what did not fit
	// is left in a file that has a position, and lost from a stream (as
	// no single reader of a stream can give bytes back).
	if off != nil {
		*off += int64(put)
	} else if in.seekable && put < k {
		in.Seek(int64(put-k), linux.SEEK_CUR)
	}
	if put == 0 {
		return 0, perr
	}
	return put, nil
}

// SpliceFromPipe moves up to n bytes from the pipe in to out, writing at
// *off (advanced) or, with off nil, at out's position; it waits for data
// unless nonblock (EAGAIN) and returns 0 when the pipe is empty with no
// writer. Only the bytes written leave the pipe.
func SpliceFromPipe(in *OpenFile, out *OpenFile, off *int64, n int, nonblock bool, intr <-chan struct{}) (int, error) {
	p := in.file.(*pipeEnd).p
	buf := make([]byte, min(n, spliceMax))
	for {
		// Waiting is done without the splice lock, which a reader with
		// O_NONBLOCK must never wait for long.
		if ok, err := p.waitData(Blocking{NonBlock: nonblock, Intr: intr}); !ok {
			return 0, err
		}
		p.spliceMu.Lock()
		p.mu.Lock()
		k := p.peek(buf)
		p.mu.Unlock()
		if k == 0 { // another reader was first
			p.spliceMu.Unlock()
			continue
		}
		var w int
		var err error
		if off != nil {
			w, err = out.Pwrite(buf[:k], *off, intr)
			if w > 0 {
				*off += int64(w)
			}
		} else {
			w, err = out.Write(buf[:k], intr)
		}
		if w > 0 {
			p.consume(w)
		}
		p.spliceMu.Unlock()
		if w > 0 {
			return w, nil
		}
		return 0, err
	}
}

// SplicePipes moves up to n bytes from pipe in to pipe out (different
// pipes), waiting for data and then room unless nonblock.
func SplicePipes(in, out *OpenFile, n int, nonblock bool, intr <-chan struct{}) (int, error) {
	return pipeToPipe(in, out, n, nonblock, intr, true)
}

// Tee copies up to n bytes from pipe in to pipe out without consuming
// them (tee(2)).
func Tee(in, out *OpenFile, n int, nonblock bool, intr <-chan struct{}) (int, error) {
	return pipeToPipe(in, out, n, nonblock, intr, false)
}

func pipeToPipe(in, out *OpenFile, n int, nonblock bool, intr <-chan struct{}, move bool) (int, error) {
	ip, op := in.file.(*pipeEnd).p, out.file.(*pipeEnd).p
	b := Blocking{NonBlock: nonblock, Intr: intr}
	for {
		if ok, err := ip.waitData(b); !ok {
			return 0, err
		}
		room, err := op.waitRoom(b)
		if err != nil {
			return 0, err
		}
		buf := make([]byte, min(n, room, spliceMax))
		ip.spliceMu.Lock()
		ip.mu.Lock()
		k := ip.peek(buf)
		ip.mu.Unlock()
		if k == 0 { // another reader was first
			ip.spliceMu.Unlock()
			continue
		}
		put, err := op.putAll(buf[:k])
		if move && put > 0 {
			ip.consume(put)
		}
		ip.spliceMu.Unlock()
		if put == 0 {
			return 0, err
		}
		return put, nil
	}
}

// PipeIO reads or writes the pipe behind f as vmsplice(2) does, waiting
// unless nonblock whatever f's O_NONBLOCK says.
func PipeIO(f *OpenFile, p []byte, write, nonblock bool, intr <-chan struct{}) (int, error) {
	e := f.file.(*pipeEnd)
	b := Blocking{NonBlock: nonblock || f.Flags()&linux.O_NONBLOCK != 0, Intr: intr}
	if write {
		return e.Write(b, p, 0)
	}
	return e.Read(b, p, 0)
}

// CopyFileRange copies up to n bytes of regular file in, from *inOff, to
// regular file out at *outOff, advancing both (copy_file_range(2)), with
// Linux's checks in its order (generic_copy_file_checks): directories
// EISDIR, other non-regular files EINVAL, descriptors not open for
// reading and writing (or out with O_APPEND) EBADF, offsets that would
// wrap EOVERFLOW (as unsigned numbers: -1 wraps), negative ones EINVAL,
// and a copy within one file whose ranges overlap
// EINVAL. The copy stops at in's end.
func CopyFileRange(in *OpenFile, inOff *int64, out *OpenFile, outOff *int64, n int64, intr <-chan struct{}) (int64, error) {
	ia, oa := in.Attr(), out.Attr()
	switch {
	case ia.Type() == linux.S_IFDIR || oa.Type() == linux.S_IFDIR:
		return 0, linux.EISDIR
	case ia.Type() != linux.S_IFREG || oa.Type() != linux.S_IFREG:
		return 0, linux.EINVAL
	case !in.readable() || !out.writable() || out.Flags()&linux.O_APPEND != 0:
		return 0, linux.EBADF
	case wraps(*inOff, n) || wraps(*outOff, n):
		return 0, linux.EOVERFLOW
	case *inOff < 0 || *outOff < 0:
		return 0, linux.EINVAL
	}
	n = min(n, max(ia.Size-*inOff, 0))
	if in.inode == out.inode && *outOff+n > *inOff && *outOff < *inOff+n {
		return 0, linux.EINVAL
	}
	buf := make([]byte, min(n, spliceMax))
	var done int64
	for done < n {
		chunk := buf[:min(int64(len(buf)), n-done)]
		k, err := in.Pread(chunk, *inOff, intr)
		if k == 0 {
			if done > 0 {
				return done, nil
			}
			return 0, err
		}
		w, err := out.Pwrite(chunk[:k], *outOff, intr)
		*inOff += int64(w)
		*outOff += int64(w)
		done += int64(w)
		if err != nil || w < k {
			if done > 0 {
				return done, nil
			}
			return 0, err
		}
	}
	return done, nil
}

// wraps reports whether off+n passes 2^64 in unsigned arithmetic, as
// Linux's check of copy offsets computes it.
func wraps(off, n int64) bool { return uint64(off)+uint64(n) < uint64(off) }
