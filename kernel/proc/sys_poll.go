package proc

// poll, ppoll, select and pselect6 over the VFS's readiness: every file is
// Watched on one channel, readiness is checked, and the thread sleeps on
// the channel, the timeout and its signal channel until something is
// ready.

import (
	"encoding/binary"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/vfs"
)

// fastPoll is how many descriptors poll, and events epoll_wait, handle in
// the thread's own arrays.
const fastPoll = 16

type pollReq struct {
	fd      int
	events  uint32
	revents uint32
}

// pollWait fills revents and returns how many are non-zero, waiting up to
// timeout (negative: forever). It returns -EINTR if a signal came first.
func (t *Thread) pollWait(reqs []pollReq, timeout time.Duration) int64 {
	var files []*vfs.OpenFile
	if len(reqs) <= len(t.pollFiles) {
		files = t.pollFiles[:len(reqs)]
	} else {
		files = make([]*vfs.OpenFile, len(reqs))
	}
	for i := range reqs {
		files[i] = nil
		if reqs[i].fd < 0 {
			continue
		}
		if f, err := t.file(reqs[i].fd); err == nil {
			files[i] = f
		}
	}
	defer func() {
		for i, f := range files {
			if f != nil {
				f.DecRef()
				files[i] = nil
			}
		}
	}()
	check := func() (int64, bool) {
		n := int64(0)
		for i := range reqs {
			r := &reqs[i]
			r.revents = 0
			switch {
			case r.fd < 0:
			case files[i] == nil:
				r.revents = linux.POLLNVAL
			default:
				r.revents = files[i].Readiness() & (r.events | linux.POLLERR | linux.POLLHUP)
			}
			if r.revents != 0 {
				n++
			}
		}
		return n, n > 0
	}
	// A descriptor ready at once, or a poll that does not wait, needs no
	// watches: the common case allocates nothing.
	if n, done := check(); done || timeout == 0 {
		return n
	}
	ch := make(chan struct{}, 1)
	var cancels []func()
	for _, f := range files {
		if f != nil && f.Pollable() {
			cancels = append(cancels, f.Watch(vfs.WakeChan(ch)))
		}
	}
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	return t.waitReady(ch, timeout, check)
}

// waitReady is the loop behind poll, select and epoll_wait: it runs check
// until check says it is done, sleeping on wake in between. A zero
// timeout checks once; a negative one never expires; when the timeout
// passes, check runs a last time and its result stands. A signal the
// thread takes ends the wait with EINTR, but only a wait: what is ready
// is reported first, as Linux's do_poll and ep_poll look at signals only
// before they would sleep.
func (t *Thread) waitReady(wake <-chan struct{}, timeout time.Duration, check func() (int64, bool)) int64 {
	var timer <-chan time.Time
	if timeout > 0 {
		tm := time.NewTimer(timeout)
		defer tm.Stop()
		timer = tm.C
	}
	for {
		n, done := check()
		if done || timeout == 0 {
			return n
		}
		if t.interrupted() {
			return -eINTR
		}
		t.waitBegin()
		select {
		case <-wake:
		case <-timer:
			timeout = 0
		case <-t.sigWake:
		}
		t.sleepEnd()
	}
}

func (t *Thread) readPollfds(at uintptr, nfds uint64) ([]pollReq, []byte, int64) {
	t.Proc.mu.Lock()
	limit := uint64(t.Proc.files.Limit())
	t.Proc.mu.Unlock()
	if nfds > limit && nfds > 16 {
		return nil, nil, -eINVAL
	}
	var raw []byte
	var reqs []pollReq
	if nfds <= uint64(len(t.pollReqs)) { // the thread's own arrays: no allocation
		raw, reqs = t.pollRaw[:8*nfds], t.pollReqs[:nfds]
	} else {
		raw, reqs = make([]byte, 8*nfds), make([]pollReq, nfds)
	}
	if err := t.Proc.Space().CopyIn(at, raw); err != nil {
		return nil, nil, errno(err)
	}
	for i := range reqs {
		reqs[i] = pollReq{fd: int(int32(binary.LittleEndian.Uint32(raw[8*i:]))), events: uint32(binary.LittleEndian.Uint16(raw[8*i+4:]))}
	}
	return reqs, raw, 0
}

func (t *Thread) writeRevents(at uintptr, reqs []pollReq, raw []byte) int64 {
	for i, r := range reqs {
		binary.LittleEndian.PutUint16(raw[8*i+6:], uint16(r.revents))
	}
	return errno(t.Proc.Space().CopyOut(at, raw))
}

func sysPoll(t *Thread, a *[6]uint64) (int64, bool) {
	var end time.Time // zero: no timeout
	if ms := int32(a[2]); ms >= 0 {
		end = time.Now().Add(time.Duration(ms) * time.Millisecond)
	}
	return t.poll(uintptr(a[0]), a[1], end), false
}

// poll is poll(2) until end (zero: forever). Interrupted, it goes on to
// the same end through restart_syscall unless a handler runs (Linux's
// do_restart_poll): poll has no timeout argument to write back.
func (t *Thread) poll(at uintptr, nfds uint64, end time.Time) int64 {
	reqs, raw, e := t.readPollfds(at, nfds)
	if e != 0 {
		return e
	}
	timeout := time.Duration(-1)
	if !end.IsZero() {
		timeout = max(time.Until(end), 0)
	}
	n := t.pollWait(reqs, timeout)
	if n == -eINTR {
		t.restartFn = func(t *Thread) int64 { return t.poll(at, nfds, end) }
		return -eRESTARTBLOCK
	}
	if n < 0 {
		return n
	}
	if e := t.writeRevents(at, reqs, raw); e != 0 {
		return e
	}
	return n
}

// readTimeout reads a struct timespec timeout (NULL: forever).
func (t *Thread) readTimeout(at uintptr) (time.Duration, int64) {
	if at == 0 {
		return -1, 0
	}
	var b [16]byte
	if err := t.Proc.Space().CopyIn(at, b[:]); err != nil {
		return 0, errno(err)
	}
	sec, nsec := int64(binary.LittleEndian.Uint64(b[:])), int64(binary.LittleEndian.Uint64(b[8:]))
	if sec < 0 || nsec < 0 || nsec >= 1e9 {
		return 0, -eINVAL
	}
	return time.Duration(sec)*time.Second + time.Duration(nsec), 0
}

// withMask runs wait with the signal mask replaced (ppoll, pselect6); if it
// is interrupted, the old mask comes back when the handler returns, as
// with sigsuspend.
func (t *Thread) withMask(maskAt uintptr, size uint64, wait func() int64) int64 {
	if maskAt == 0 {
		return wait()
	}
	if size != 8 {
		return -eINVAL
	}
	var b [8]byte
	if err := t.Proc.Space().CopyIn(maskAt, b[:]); err != nil {
		return errno(err)
	}
	old := t.sigMask
	t.setSigMask(binary.LittleEndian.Uint64(b[:]))
	n := wait()
	if n == -eINTR || n == -eRESTARTNOHAND {
		t.suspendOld, t.inSuspend = old, true
	} else {
		t.setSigMask(old)
	}
	return n
}

// noHandRestart makes an interrupted ppoll, select or pselect6 restart
// unless a handler runs (Linux's ERESTARTNOHAND): each has written what
// is left of its timeout back, so the restart waits that long.
func noHandRestart(n int64) int64 {
	if n == -eINTR {
		return -eRESTARTNOHAND
	}
	return n
}

func sysPpoll(t *Thread, a *[6]uint64) (int64, bool) {
	reqs, raw, e := t.readPollfds(uintptr(a[0]), a[1])
	if e != 0 {
		return e, false
	}
	timeout, e := t.readTimeout(uintptr(a[2]))
	if e != 0 {
		return e, false
	}
	start := time.Now()
	n := t.withMask(uintptr(a[3]), a[4], func() int64 { return noHandRestart(t.pollWait(reqs, timeout)) })
	t.writeUnslept(uintptr(a[2]), start, timeout, false)
	if n < 0 {
		return n, false
	}
	if e := t.writeRevents(uintptr(a[0]), reqs, raw); e != 0 {
		return e, false
	}
	return n, false
}

// select: fd_set bitmaps of nfds bits for read, write and exceptional
// conditions.
func (t *Thread) selectCommon(nfds int, sets [3]uintptr, timeout time.Duration, maskAt uintptr, maskSize uint64) int64 {
	if nfds < 0 || nfds > 1<<20 {
		return -eINVAL
	}
	words := (nfds + 63) / 64
	var in [3][]uint64
	s := t.Proc.Space()
	for k, at := range sets {
		if at == 0 {
			continue
		}
		raw := make([]byte, 8*words)
		if err := s.CopyIn(at, raw); err != nil {
			return errno(err)
		}
		in[k] = make([]uint64, words)
		for i := range in[k] {
			in[k][i] = binary.LittleEndian.Uint64(raw[8*i:])
		}
	}
	masks := [3]uint32{linux.POLLIN | linux.POLLHUP | linux.POLLERR, linux.POLLOUT | linux.POLLERR, linux.POLLPRI}
	var reqs []pollReq
	for fd := 0; fd < nfds; fd++ {
		ev := uint32(0)
		for k := range in {
			if in[k] != nil && in[k][fd/64]&(1<<(fd%64)) != 0 {
				ev |= masks[k]
			}
		}
		if ev != 0 {
			reqs = append(reqs, pollReq{fd: fd, events: ev})
		}
	}
	n := t.withMask(maskAt, maskSize, func() int64 { return noHandRestart(t.pollWait(reqs, timeout)) })
	if n < 0 {
		return n
	}
	for _, r := range reqs {
		if r.revents&linux.POLLNVAL != 0 {
			return -int64(linux.EBADF)
		}
	}
	var out [3][]uint64
	count := int64(0)
	for k := range in {
		if in[k] == nil {
			continue
		}
		out[k] = make([]uint64, words)
		for _, r := range reqs {
			if in[k][r.fd/64]&(1<<(r.fd%64)) != 0 && r.revents&masks[k] != 0 {
				out[k][r.fd/64] |= 1 << (r.fd % 64)
				count++
			}
		}
		raw := make([]byte, 8*words)
		for i, w := range out[k] {
			binary.LittleEndian.PutUint64(raw[8*i:], w)
		}
		if err := s.CopyOut(sets[k], raw); err != nil {
			return errno(err)
		}
	}
	return count
}

func sysSelect(t *Thread, a *[6]uint64) (int64, bool) {
	timeout := time.Duration(-1)
	if a[4] != 0 {
		var b [16]byte
		if err := t.Proc.Space().CopyIn(uintptr(a[4]), b[:]); err != nil {
			return errno(err), false
		}
		d, ok := readTimeval(b[:])
		if !ok {
			return -eINVAL, false
		}
		timeout = d
	}
	start := time.Now()
	n := t.selectCommon(int(int32(a[0])), [3]uintptr{uintptr(a[1]), uintptr(a[2]), uintptr(a[3])}, timeout, 0, 0)
	t.writeUnslept(uintptr(a[4]), start, timeout, true)
	return n, false
}

func sysPselect6(t *Thread, a *[6]uint64) (int64, bool) {
	timeout, e := t.readTimeout(uintptr(a[4]))
	if e != 0 {
		return e, false
	}
	var maskAt uintptr
	var maskSize uint64
	if a[5] != 0 {
		var b [16]byte
		if err := t.Proc.Space().CopyIn(uintptr(a[5]), b[:]); err != nil {
			return errno(err), false
		}
		maskAt, maskSize = uintptr(binary.LittleEndian.Uint64(b[:])), binary.LittleEndian.Uint64(b[8:])
	}
	start := time.Now()
	n := t.selectCommon(int(int32(a[0])), [3]uintptr{uintptr(a[1]), uintptr(a[2]), uintptr(a[3])}, timeout, maskAt, maskSize)
	t.writeUnslept(uintptr(a[4]), start, timeout, false)
	return n, false
}

// writeUnslept stores the part of a select/ppoll timeout not slept back
// into the caller's timeval (usec) or timespec, as Linux does so a loop
// restarting after EINTR does not wait longer than asked. A fault here
// is ignored, as on Linux: the wait already happened and its result
// must not be lost.
func (t *Thread) writeUnslept(at uintptr, start time.Time, timeout time.Duration, usec bool) {
	if at == 0 || timeout < 0 {
		return
	}
	left := timeout - time.Since(start)
	if left < 0 {
		left = 0
	}
	putTimespec(t, at, int64(left), usec)
}
