package proc

// epoll(7) over the VFS's readiness: an epoll instance is itself an open
// file (so it can be polled and nested); it Watches every registered file
// on one channel and rescans readiness when woken. Level-triggered
// interests report whenever ready; edge-triggered ones (EPOLLET) report
// when readiness gains bits since their last report or when their file
// signalled a change since then (new data on an already-readable pipe is
// an edge too); EPOLLONESHOT interests disarm after one report.
//
// Each interest registers two watches on its file, in order: its own
// edge channel, which only collect drains (so a signal waits there,
// buffered, for the next epoll_wait, even one with a zero timeout), then
// the instance's shared wake-up channel. Queues notify in registration
// order, so a waiter that wakes always finds the edge that woke it.

import (
	"encoding/binary"
	"sync"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/kmem"
	"shortbread/kernel/mm"
	"shortbread/kernel/vfs"
)

const (
	epollCtlAdd = 1
	epollCtlDel = 2
	epollCtlMod = 3

	epollET      = 1 << 31
	epollOneshot = 1 << 30
	epollExcl    = 1 << 28
	epollCloexec = linux.O_CLOEXEC
)

type epollKey struct {
	fd   int
	file *vfs.OpenFile
}

type epollEntry struct {
	f      *vfs.OpenFile
	events uint32
	data   uint64
	last   uint32        // readiness at the last report (edge-triggered)
	edge   chan struct{} // holds a signal when the file changed since the last report
	cancel func()
}

// epollMaxNests is how deep epoll instances may watch one another
// (Linux's EP_MAX_NESTS).
const epollMaxNests = 4

// depth returns how many levels of epoll instances e watches below it,
// and whether it reaches stop (adding e to stop would close a cycle).
func (e *epollFile) depth(stop *epollFile, level int) (int, bool) {
	if e == stop {
		return 0, true
	}
	if level > epollMaxNests { // deep enough to refuse; do not walk on
		return level, false
	}
	e.mu.Lock()
	var inner []*epollFile
	for _, en := range e.entries {
		if x, ok := en.f.Impl().(*epollFile); ok {
			inner = append(inner, x)
		}
	}
	e.mu.Unlock()
	most := 0
	for _, x := range inner {
		d, loop := x.depth(stop, level+1)
		if loop {
			return 0, true
		}
		most = max(most, d+1)
	}
	return most, false
}

type epollFile struct {
	mu      sync.Mutex
	entries map[epollKey]*epollEntry
	in      chan struct{} // signalled by every watched file
	wake    chan struct{} // signalled by forward for epoll_wait
	q       vfs.Queue     // pollers of the epoll fd itself
}

func (e *epollFile) Read(vfs.Blocking, []byte, int64) (int, error)  { return 0, linux.EINVAL }
func (e *epollFile) Write(vfs.Blocking, []byte, int64) (int, error) { return 0, linux.EINVAL }

func (e *epollFile) Release() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, en := range e.entries {
		en.cancel()
		en.f.DecRef()
		delete(e.entries, k)
	}
	close(e.in)
}

// Readiness: an epoll fd is readable when some interest is ready.
func (e *epollFile) Readiness() uint32 {
	if len(e.collect(1, false)) > 0 {
		return linux.POLLIN
	}
	return 0
}

func (e *epollFile) Watch(ch chan<- struct{}) func() { return e.q.Watch(ch) }

// forward passes each readiness change of a watched file to a waiting
// epoll_wait and to pollers of the epoll fd itself (nested epoll, poll).
func (e *epollFile) forward() {
	for range e.in {
		select {
		case e.wake <- struct{}{}:
		default:
		}
		e.q.Notify()
	}
}

type epollEvent struct {
	events uint32
	data   uint64
}

// collect gathers up to max ready events; with consume, edge and
// one-shot state advance as for a real report.
func (e *epollFile) collect(max int, consume bool) []epollEvent {
	return e.collectIn(nil, max, consume, nil)
}

// collectIn is collect that also drops interests whose fd no longer names
// their file in files (Linux forgets an interest when its file is closed).
// The events are appended to dst[:0].
func (e *epollFile) collectIn(files *vfs.FDTable, max int, consume bool, dst []epollEvent) []epollEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := dst[:0]
	for k, en := range e.entries {
		if files != nil {
			f, err := files.Get(k.fd)
			if err == nil {
				f.DecRef()
			}
			if err != nil || f != k.file {
				en.cancel()
				en.f.DecRef()
				delete(e.entries, k)
				continue
			}
		}
		if len(out) >= max {
			break
		}
		mask := en.events&(linux.POLLIN|linux.POLLOUT|linux.POLLPRI|linux.POLLRDHUP) | linux.POLLERR | linux.POLLHUP
		if en.events&^(epollET|epollOneshot|epollExcl) == 0 && en.events&epollOneshot != 0 {
			continue // a fired one-shot interest, disarmed
		}
		// Take the edge before sampling readiness: a signal that lands in
		// between is kept and reported next time.
		signalled := len(en.edge) > 0
		if consume {
			select {
			case <-en.edge:
				signalled = true
			default:
				signalled = false
			}
		}
		r := en.f.Readiness() & mask
		if en.events&epollET != 0 {
			fresh := r&^en.last != 0 || signalled
			if consume {
				en.last = r
			}
			if !fresh {
				continue
			}
		}
		if r == 0 {
			continue
		}
		out = append(out, epollEvent{r, en.data})
		if consume && en.events&epollOneshot != 0 {
			en.events &= epollET | epollOneshot
		}
	}
	return out
}

func sysEpollCreate(t *Thread, a *[6]uint64) (int64, bool) {
	if int32(a[0]) <= 0 {
		return -eINVAL, false
	}
	return t.epollCreate(0), false
}

func sysEpollCreate1(t *Thread, a *[6]uint64) (int64, bool) {
	if a[0]&^uint64(epollCloexec) != 0 {
		return -eINVAL, false
	}
	return t.epollCreate(uint32(a[0])), false
}

func (t *Thread) epollCreate(flags uint32) int64 {
	ep := &epollFile{entries: map[epollKey]*epollEntry{}, in: make(chan struct{}, 1), wake: make(chan struct{}, 1)}
	go ep.forward()
	f := vfs.NewFile(vfs.NewAnonInode(linux.S_IFREG|0o600, vfs.Owner{}), ep, linux.O_RDWR)
	defer f.DecRef()
	fd, err := t.Proc.files.Install(f, flags&epollCloexec != 0)
	return fdResult(fd, err)
}

// epollOf returns the epoll instance behind fd.
func (t *Thread) epollOf(fd int) (*epollFile, *vfs.OpenFile, int64) {
	f, err := t.file(fd)
	if err != nil {
		return nil, nil, errno(err)
	}
	ep, ok := f.Impl().(*epollFile)
	if !ok {
		f.DecRef()
		return nil, nil, -eINVAL
	}
	return ep, f, 0
}

// epollExclOK are the events EPOLLEXCLUSIVE may come with (Linux's
// EPOLLEXCLUSIVE_OK_BITS: in, out, error, hang-up, wake-up, edge).
const epollExclOK = linux.POLLIN | linux.POLLOUT | linux.POLLERR | linux.POLLHUP | 1<<29 | epollET | epollExcl

// sysEpollCtl checks in Linux's order: the event is read first (EFAULT),
// then both descriptors (EBADF), the target's support for polling
// (EPERM), the instance (EINVAL: itself, or not an epoll file),
// EPOLLEXCLUSIVE's rules (EINVAL), cycles and depth (ELOOP), then the
// operation (EEXIST, ENOENT, EINVAL).
func sysEpollCtl(t *Thread, a *[6]uint64) (int64, bool) {
	op, fd := int(a[1]), int(int32(a[2]))
	var ev epollEvent
	if op != epollCtlDel {
		var b [12]byte
		if err := t.Proc.Space().CopyIn(uintptr(a[3]), b[:]); err != nil {
			return errno(err), false
		}
		ev = epollEvent{binary.LittleEndian.Uint32(b[:]), binary.LittleEndian.Uint64(b[4:])}
	}
	epf, err := t.file(int(int32(a[0])))
	if err != nil {
		return errno(err), false
	}
	defer epf.DecRef()
	if epf.IsPath() {
		return -eBADF, false
	}
	target, err := t.file(fd)
	if err != nil {
		return errno(err), false
	}
	defer target.DecRef()
	if target.IsPath() {
		return -eBADF, false
	}
	if !target.Pollable() {
		return -ePERM, false // regular files and directories: always ready
	}
	ep, isEpoll := epf.Impl().(*epollFile)
	if target == epf || !isEpoll {
		return -eINVAL, false
	}
	inner, targetIsEpoll := target.Impl().(*epollFile)
	if op != epollCtlDel && ev.events&epollExcl != 0 {
		if op == epollCtlMod || op == epollCtlAdd && (targetIsEpoll || ev.events&^epollExclOK != 0) {
			return -eINVAL, false
		}
	}
	if targetIsEpoll && op == epollCtlAdd {
		// Linux refuses what would make epoll instances watch one
		// another in a cycle, or nest deeper than EP_MAX_NESTS.
		if d, loop := inner.depth(ep, 0); loop || d+1 > epollMaxNests {
			return -int64(linux.ELOOP), false
		}
	}
	key := epollKey{fd, target}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	en, exists := ep.entries[key]
	switch op {
	case epollCtlAdd:
		if exists {
			return -int64(linux.EEXIST), false
		}
		if kmem.Refuse() { // no memory for another watch (Linux: ENOMEM)
			return -int64(linux.ENOMEM), false
		}
		target.IncRef()
		en = &epollEntry{f: target, events: ev.events, data: ev.data, edge: make(chan struct{}, 1)}
		stopEdge := target.Watch(en.edge) // first: see the package comment
		stopWake := target.Watch(ep.in)
		en.cancel = func() { stopWake(); stopEdge() }
		ep.entries[key] = en
	case epollCtlMod:
		if !exists {
			return -int64(linux.ENOENT), false
		}
		if en.events&epollExcl != 0 {
			return -eINVAL, false // an exclusive watch cannot be changed
		}
		en.events, en.data, en.last = ev.events, ev.data, 0
		select {
		case <-en.edge:
		default:
		}
	case epollCtlDel:
		if !exists {
			return -int64(linux.ENOENT), false
		}
		en.cancel()
		en.f.DecRef()
		delete(ep.entries, key)
	default:
		return -eINVAL, false
	}
	select {
	case ep.wake <- struct{}{}:
	default:
	}
	ep.q.Notify()
	return 0, false
}

func sysEpollWait(t *Thread, a *[6]uint64) (int64, bool) {
	return t.epollWait(a, msTimeout(a[3]), 0, 0), false
}

func sysEpollPwait(t *Thread, a *[6]uint64) (int64, bool) {
	return t.epollWait(a, msTimeout(a[3]), uintptr(a[4]), a[5]), false
}

// sysEpollPwait2 is epoll_pwait with a timespec timeout (NULL: none),
// read and checked first.
func sysEpollPwait2(t *Thread, a *[6]uint64) (int64, bool) {
	timeout := time.Duration(-1)
	if a[3] != 0 {
		var b [16]byte
		if err := t.Proc.Space().CopyIn(uintptr(a[3]), b[:]); err != nil {
			return errno(err), false
		}
		sec, nsec := int64(binary.LittleEndian.Uint64(b[:])), int64(binary.LittleEndian.Uint64(b[8:]))
		if sec < 0 || nsec < 0 || nsec >= 1e9 {
			return -eINVAL, false
		}
		timeout = time.Duration(min(sec, 1<<32))*time.Second + time.Duration(nsec)
	}
	return t.epollWait(a, timeout, uintptr(a[4]), a[5]), false
}

// msTimeout is epoll_wait's timeout in milliseconds (negative: none).
func msTimeout(arg uint64) time.Duration {
	if ms := int32(arg); ms >= 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return -1
}

// epollMaxEvents is Linux's EP_MAX_EVENTS: as many events as fit in
// INT_MAX bytes.
const epollMaxEvents = (1<<31 - 1) / 12

func (t *Thread) epollWait(a *[6]uint64, timeout time.Duration, maskAt uintptr, maskSize uint64) int64 {
	max := int(int32(a[2]))
	if max <= 0 || max > epollMaxEvents {
		return -eINVAL
	}
	// A buffer that is not in user space at all is EFAULT before the
	// descriptor is looked at (Linux's access_ok).
	if end := uint64(a[1]) + 12*uint64(max); end < a[1] || end > uint64(mm.UserTop) {
		return -eFAULT
	}
	ep, epf, e := t.epollOf(int(int32(a[0])))
	if e != 0 {
		return e
	}
	defer epf.DecRef()
	wait := func() int64 {
		return t.waitReady(ep.wake, timeout, func() (int64, bool) {
			evs := ep.collectIn(t.Proc.files, max, true, t.epollEvs[:0])
			if len(evs) == 0 {
				return 0, false
			}
			var buf []byte
			if len(evs) <= len(t.epollEvs) {
				buf = t.epollRaw[:12*len(evs)]
			} else {
				buf = make([]byte, 12*len(evs))
			}
			for i, ev := range evs {
				binary.LittleEndian.PutUint32(buf[12*i:], ev.events)
				binary.LittleEndian.PutUint64(buf[12*i+4:], ev.data)
			}
			if err := t.Proc.Space().CopyOut(uintptr(a[1]), buf); err != nil {
				return errno(err), true
			}
			return int64(len(evs)), true
		})
	}
	return t.withMask(maskAt, maskSize, wait)
}
