package proc

// Pending signals with their siginfo. A standard signal (1-31) is pending
// at most once: a second one sent while it waits is merged into it, and
// the first sender's siginfo is kept. A real-time signal (32-64) queues:
// each one sent is delivered, lowest number first and in the order sent
// for one number, each with its own siginfo (sigqueue's value).

import (
	"encoding/binary"
	"sync/atomic"
	"time"

	"shortbread/kernel/vfs"
)

const (
	sigRTMin = 32
	// maxQueued bounds the queued signals of one thread or process
	// whatever the sender: RLIMIT_SIGPENDING bounds those a program may
	// queue (see add), and kill's and the kernel's signals pass it, as on
	// Linux; this keeps even those bounded.
	maxQueued = 1 << 16

	// si_code values a sender can give.
	siQueue = -1
)

// sigInfo is what a handler's siginfo_t says about one signal.
type sigInfo struct {
	signo  int
	code   int32
	pid    int32
	uid    uint32
	status int32       // SIGCHLD: exit status or signal
	addr   uint64      // faults: the address
	value  uint64      // sigqueue: sival; SIGCHLD: utime (ticks)
	stime  uint64      // SIGCHLD: stime (ticks)
	raw    []byte      // the user's own siginfo for rt_sigqueueinfo (128 bytes)
	timer  *posixTimer // the POSIX timer that sent it: told at delivery
}

// isFault reports whether the info describes a synchronous fault, whose
// siginfo carries si_addr.
func (i *sigInfo) isFault() bool {
	switch i.signo {
	case sigSEGV, sigBUS, sigILL, sigFPE, sigTRAP:
		return i.code > 0 && i.code != siKernel
	}
	return false
}

// encode writes a siginfo_t (x86-64 layout: signo, errno, code at 0, 4,
// 8; the union from 16).
func (i *sigInfo) encode(b []byte) {
	le := binary.LittleEndian
	if i.raw != nil {
		copy(b, i.raw)
	}
	le.PutUint32(b[0:], uint32(i.signo))
	le.PutUint32(b[8:], uint32(i.code))
	if i.raw != nil {
		return
	}
	if i.isFault() {
		le.PutUint64(b[16:], i.addr)
		return
	}
	le.PutUint32(b[16:], uint32(i.pid))
	le.PutUint32(b[20:], i.uid)
	if i.signo == sigCHLD {
		le.PutUint32(b[24:], uint32(i.status))
		le.PutUint64(b[32:], i.value)
		le.PutUint64(b[40:], i.stime)
		return
	}
	le.PutUint64(b[24:], i.value)
}

// pendingSet is the signals pending for one thread or one process,
// guarded by Process.mu. mask is also stored atomically, so a thread on its
// way back to user mode can see that nothing is pending (the common case)
// without taking the lock its sibling threads contend for.
type pendingSet struct {
	mask  uint64
	infos []sigInfo  // in arrival order; at least one per bit in mask
	q     *vfs.Queue // notified when a signal is added (the process's sigQ)
}

func (ps *pendingSet) setMask(m uint64) { atomic.StoreUint64(&ps.mask, m) }

// unlocked is the pending mask read without Process.mu: a signal queued
// after the read kicks the thread out of user mode again.
func (ps *pendingSet) unlocked() uint64 { return atomic.LoadUint64(&ps.mask) }

// add makes info's signal pending. It reports false if the signal was
// dropped: a standard signal already pending (merged), or no room: full
// (the process is at RLIMIT_SIGPENDING, see Process.sigQueueFull) for a
// signal a program queued with a negative si_code (tgkill, sigqueue), or
// maxQueued in this set for one sent by kill or the kernel. A fault
// replaces the siginfo of a pending signal of the same number.
func (ps *pendingSet) add(info sigInfo, full bool) bool {
	b := bit(info.signo)
	if info.signo < sigRTMin && ps.mask&b != 0 {
		if info.isFault() {
			for k := range ps.infos {
				if ps.infos[k].signo == info.signo {
					ps.infos[k] = info
				}
			}
		}
		return false
	}
	if len(ps.infos) >= maxQueued || full && info.code < 0 {
		return false
	}
	ps.setMask(ps.mask | b)
	ps.infos = append(ps.infos, info)
	if ps.q != nil {
		ps.q.Notify() // signalfd readers and pollers
	}
	return true
}

// take removes the lowest-numbered pending signal not in blocked and
// returns its oldest siginfo.
func (ps *pendingSet) take(blocked uint64) (sigInfo, bool) {
	ready := ps.mask &^ blocked
	if ready == 0 {
		return sigInfo{}, false
	}
	sig := lowestSignal(ready)
	var info sigInfo
	found, more := false, false
	for k := 0; k < len(ps.infos); k++ {
		if ps.infos[k].signo != sig {
			continue
		}
		if !found {
			info, found = ps.infos[k], true
			if info.timer != nil {
				info.timer.delivered(&info)
			}
			ps.infos = append(ps.infos[:k], ps.infos[k+1:]...)
			k--
			continue
		}
		more = true
		break
	}
	if !more {
		ps.setMask(ps.mask &^ bit(sig))
	}
	return info, true
}

// discard drops every pending instance of sig.
func (ps *pendingSet) discard(sig int) {
	if ps.mask&bit(sig) == 0 {
		return
	}
	ps.setMask(ps.mask &^ bit(sig))
	kept := ps.infos[:0]
	for _, in := range ps.infos {
		if in.signo != sig {
			kept = append(kept, in)
		}
	}
	ps.infos = kept
}

func lowestSignal(set uint64) int {
	sig := 1
	for set&1 == 0 {
		set >>= 1
		sig++
	}
	return sig
}

// sysRtSigtimedwait takes a pending signal from set (normally blocked)
// without running its handler: sigwait, sigwaitinfo, sigtimedwait.
func sysRtSigtimedwait(t *Thread, a *[6]uint64) (int64, bool) {
	if a[3] != 8 {
		return -eINVAL, false
	}
	s := t.Proc.Space()
	var b [16]byte
	if err := s.CopyIn(uintptr(a[0]), b[:8]); err != nil {
		return errno(err), false
	}
	set := binary.LittleEndian.Uint64(b[:]) &^ unblockable
	var timer <-chan time.Time
	poll := false // a zero timeout: look once, never wait (EAGAIN)
	if a[2] != 0 {
		if err := s.CopyIn(uintptr(a[2]), b[:]); err != nil {
			return errno(err), false
		}
		sec, nsec := int64(binary.LittleEndian.Uint64(b[:])), int64(binary.LittleEndian.Uint64(b[8:]))
		if sec < 0 || nsec < 0 || nsec >= 1e9 {
			return -eINVAL, false
		}
		poll = sec == 0 && nsec == 0
		tm := time.NewTimer(time.Duration(sec)*time.Second + time.Duration(nsec))
		defer tm.Stop()
		timer = tm.C
	}
	p := t.Proc
	p.mu.Lock()
	t.sigWaitSet = set
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		t.sigWaitSet = 0
		p.mu.Unlock()
	}()
	for {
		p.mu.Lock()
		info, ok := t.pending.take(^set)
		if !ok {
			info, ok = p.pending.take(^set)
		}
		p.mu.Unlock()
		if ok {
			if a[1] != 0 {
				out := make([]byte, siSize)
				info.encode(out)
				if err := s.CopyOut(uintptr(a[1]), out); err != nil {
					return errno(err), false
				}
			}
			return int64(info.signo), false
		}
		if poll { // Linux's do_sigtimedwait sleeps only with time to wait
			return -eAGAIN, false
		}
		if t.interrupted() {
			return -eINTR, false
		}
		t.waitBegin()
		select {
		case <-t.sigWake:
		case <-timer:
			timer = nil
			t.sleepEnd()
			return -eAGAIN, false
		}
		t.sleepEnd()
	}
}

// sigQueueFull reports whether p has as many signals queued, process-wide
// and in its threads, as RLIMIT_SIGPENDING allows (Linux counts them per
// user). Caller holds p.mu.
func (p *Process) sigQueueFull() bool {
	n := uint64(len(p.pending.infos))
	for _, t := range p.threads {
		n += uint64(len(t.pending.infos))
	}
	return n >= p.rlimits()[rlimitSigpending].cur
}
