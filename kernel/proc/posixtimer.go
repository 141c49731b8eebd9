package proc

// POSIX per-process timers (timer_create(2) and friends): each is an
// interval timer (package timer) whose expiry queues a signal to the
// process or to one of its threads (SIGEV_SIGNAL, SIGEV_THREAD_ID), or
// nothing (SIGEV_NONE: read with timer_gettime). As on Linux, a timer
// has at most one signal queued: expiries while it waits count as
// overruns, which the delivered siginfo carries (si_overrun) and
// timer_getoverrun reports. Timers are not inherited by fork and end at
// exec and exit.

import (
	"encoding/binary"
	"math"
	"sync"
	"time"

	"shortbread/kernel/timer"
)

// sigevent notification kinds (include/uapi/asm-generic/siginfo.h).
const (
	sigevSignal   = 0
	sigevNone     = 1
	sigevThread   = 2 // the C library's business: the kernel signals
	sigevThreadID = 4

	siTimer = -2 // si_code of a timer's signal

	maxPosixTimers = 1 << 12 // per process, so a program cannot exhaust memory
)

type posixTimer struct {
	id     int32
	clock  int32
	p      *Process
	target *Thread // SIGEV_THREAD_ID; nil: the process
	notify int32
	sig    int
	value  uint64       // sigev_value, the siginfo's si_value
	tm     *timer.Timer // on the other clocks
	cw     *cpuWatch    // on a CPU-time clock (cputimer.go)

	mu       sync.Mutex
	queued   bool  // its signal is pending, not delivered yet; protected by mu
	overrun  int64 // expiries since it was queued; protected by mu
	reported int64 // overruns of the last delivered signal; protected by mu
}

// expired runs at each expiry with the periods that passed.
func (pt *posixTimer) expired(n uint64) {
	if pt.notify == sigevNone {
		return
	}
	pt.mu.Lock()
	if pt.queued {
		pt.overrun += int64(n)
		pt.mu.Unlock()
		return
	}
	pt.queued, pt.overrun = true, int64(n)-1
	pt.mu.Unlock()
	// siginfo's _timer: si_tid (the timer id) at 16, si_overrun at 20
	// (filled at delivery), si_value at 24.
	raw := make([]byte, siSize)
	binary.LittleEndian.PutUint32(raw[16:], uint32(pt.id))
	binary.LittleEndian.PutUint64(raw[24:], pt.value)
	info := sigInfo{signo: pt.sig, code: siTimer, raw: raw, timer: pt}
	p := pt.p
	p.mu.Lock()
	var wake *Thread
	ok := p.state == procRunning && !p.discardsLocked(pt.sig, pt.target)
	if ok && pt.target != nil {
		ok = pt.target.pending.add(info, false)
		wake = pt.target
	} else if ok {
		ok = p.pending.add(info, false)
		if ok {
			wake = p.signalTargetLocked(pt.sig)
		}
	}
	p.mu.Unlock()
	if !ok {
		pt.mu.Lock()
		pt.queued = false
		pt.mu.Unlock()
		return
	}
	if wake != nil {
		wake.wake()
	}
}

// delivered records the overruns of the signal being taken from the
// queue and puts them in its siginfo. Preconditions: p.mu is held.
func (pt *posixTimer) delivered(info *sigInfo) {
	pt.mu.Lock()
	pt.reported = min(pt.overrun, math.MaxInt32)
	pt.queued, pt.overrun = false, 0
	binary.LittleEndian.PutUint32(info.raw[20:], uint32(pt.reported))
	pt.mu.Unlock()
}

// addTimer records a new timer and returns its id.
func (p *Process) addTimer(pt *posixTimer) (int32, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ptimers == nil {
		p.ptimers = map[int32]*posixTimer{}
	}
	if len(p.ptimers) >= maxPosixTimers {
		return 0, -eAGAIN
	}
	for {
		id := p.nextTimerID
		p.nextTimerID = (p.nextTimerID + 1) & math.MaxInt32
		if p.ptimers[id] == nil {
			pt.id = id
			p.ptimers[id] = pt
			return id, 0
		}
	}
}

func (p *Process) timerByID(id int32) *posixTimer {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ptimers[id]
}

// deleteTimer removes and stops timer id (false: no such timer).
func (p *Process) deleteTimer(id int32) bool {
	p.mu.Lock()
	pt := p.ptimers[id]
	delete(p.ptimers, id)
	p.mu.Unlock()
	if pt == nil {
		return false
	}
	pt.stop()
	return true
}

// deleteTimers stops every timer (exec, exit).
func (p *Process) deleteTimers() {
	p.mu.Lock()
	ts := p.ptimers
	p.ptimers = nil
	p.mu.Unlock()
	for _, pt := range ts {
		pt.stop()
	}
}

// stop disarms the timer for good.
func (pt *posixTimer) stop() {
	if pt.cw == nil {
		pt.tm.Stop()
		return
	}
	pt.cw.set(nil, 0, 0, false)
	pt.cw.clock.owner().removeWatch(pt.cw)
}

func (pt *posixTimer) get() (left, interval time.Duration) {
	if pt.cw != nil {
		return pt.cw.get()
	}
	return pt.tm.Get()
}
