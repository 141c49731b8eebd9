package proc

// Timers read through files (timerfd_create(2) and friends); the timer
// and the file are package timer's.

import (
	"encoding/binary"
	"time"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/timer"
)

const (
	tfdTimerAbstime     = 1
	tfdTimerCancelOnSet = 2
)

// readItimerspec reads struct itimerspec (it_interval, then it_value,
// each a timespec) and checks both: EFAULT, then EINVAL.
func (t *Thread) readItimerspec(at uintptr) (interval, value time.Duration, e int64) {
	var b [32]byte
	if err := t.Proc.Space().CopyIn(at, b[:]); err != nil {
		return 0, 0, errno(err)
	}
	le := binary.LittleEndian
	var d [2]time.Duration
	for i := range d {
		sec, nsec := int64(le.Uint64(b[16*i:])), int64(le.Uint64(b[16*i+8:]))
		if sec < 0 || nsec < 0 || nsec >= 1e9 {
			return 0, 0, -eINVAL
		}
		d[i] = time.Duration(sec)*time.Second + time.Duration(nsec)
	}
	return d[0], d[1], 0
}

func (t *Thread) putItimerspec(at uintptr, interval, value time.Duration) int64 {
	var b [32]byte
	le := binary.LittleEndian
	for i, d := range []time.Duration{interval, value} {
		le.PutUint64(b[16*i:], uint64(d/time.Second))
		le.PutUint64(b[16*i+8:], uint64(d%time.Second))
	}
	return errno(t.Proc.Space().CopyOut(at, b[:]))
}

// timerClock checks a clock timerfd_create or timer_create may use; the
// alarm clocks need root (CAP_WAKE_ALARM).
func (t *Thread) timerClock(id int32) int64 {
	switch id {
	case clockRealtime, clockMonotonic, clockBoottime:
		return 0
	case clockRealtimeAlarm, clockBoottimeAlarm:
		if !t.creds().privileged() {
			return -ePERM
		}
		return 0
	}
	return -eINVAL
}

// untilClock turns an absolute time on clock id into a duration from now
// (at least a nanosecond: a time passed expires at once).
func (t *Thread) untilClock(id int32, abs time.Duration) time.Duration {
	now, _ := t.clockNow(id)
	return max(abs-time.Duration(now), 1)
}

func sysTimerfdCreate(t *Thread, a *[6]uint64) (int64, bool) {
	id, flags := int32(a[0]), a[1]
	if flags&^(linux.O_NONBLOCK|linux.O_CLOEXEC) != 0 {
		return -eINVAL, false
	}
	if e := t.timerClock(id); e != 0 {
		return e, false
	}
	f := timer.NewFD(flags&linux.O_NONBLOCK != 0, id)
	defer f.DecRef()
	fd, err := t.Proc.files.Install(f, flags&linux.O_CLOEXEC != 0)
	return fdResult(fd, err), false
}

// timerfd returns the timerfd behind fd: EBADF, or EINVAL for another file.
func (t *Thread) timerfd(fd int) (*timer.FD, func(), int64) {
	f, err := t.file(fd)
	if err != nil {
		return nil, nil, errno(err)
	}
	tf, ok := timer.FDOf(f)
	if !ok {
		f.DecRef()
		return nil, nil, -eINVAL
	}
	return tf, f.DecRef, 0
}

// isWallClock reports whether absolute times on clock id are times of
// day, which follow clock_settime.
func isWallClock(id int32) bool {
	return id == clockRealtime || id == clockRealtimeAlarm || id == clockTAI
}

// sysTimerfdSettime implements timerfd_settime(2). An absolute time on
// the wall clock follows changes of the clock; with
// TFD_TIMER_CANCEL_ON_SET such a change fails the next read (ECANCELED).
func sysTimerfdSettime(t *Thread, a *[6]uint64) (int64, bool) {
	flags := a[1]
	interval, value, e := t.readItimerspec(uintptr(a[2]))
	if e != 0 {
		return e, false
	}
	if flags&^(tfdTimerAbstime|tfdTimerCancelOnSet) != 0 {
		return -eINVAL, false
	}
	tf, done, e := t.timerfd(int(int32(a[0])))
	if e != 0 {
		return e, false
	}
	defer done()
	var oldLeft, oldInterval time.Duration
	switch {
	case value > 0 && flags&tfdTimerAbstime != 0 && isWallClock(tf.Clock()):
		oldLeft, oldInterval = tf.SetWall(time.Unix(0, int64(value)), interval, flags&tfdTimerCancelOnSet != 0)
	case value > 0 && flags&tfdTimerAbstime != 0:
		oldLeft, oldInterval = tf.Set(t.untilClock(tf.Clock(), value), interval)
	default:
		oldLeft, oldInterval = tf.Set(value, interval)
	}
	if a[3] != 0 {
		return t.putItimerspec(uintptr(a[3]), oldInterval, oldLeft), false
	}
	return 0, false
}

func sysTimerfdGettime(t *Thread, a *[6]uint64) (int64, bool) {
	tf, done, e := t.timerfd(int(int32(a[0])))
	if e != 0 {
		return e, false
	}
	defer done()
	left, interval := tf.Get()
	return t.putItimerspec(uintptr(a[1]), interval, left), false
}

// sysTimerCreate implements timer_create(2) on the wall, monotonic, boot
// and TAI clocks (and the alarm clocks, for root), and on the CPU-time
// clocks (cputimer.go): the process's, the calling thread's, another
// process's, or another thread's of the caller's process (EINVAL for one
// that does not exist or is another process's thread).
func sysTimerCreate(t *Thread, a *[6]uint64) (int64, bool) {
	id, evAt, idAt := int32(a[0]), uintptr(a[1]), uintptr(a[2])
	// struct sigevent: sigev_value at 0, sigev_signo at 8, sigev_notify
	// at 12, sigev_notify_thread_id at 16. Linux reads it before it looks
	// at the clock.
	var b [64]byte
	if evAt != 0 {
		if err := t.Proc.Space().CopyIn(evAt, b[:]); err != nil {
			return errno(err), false
		}
	}
	var cpu cpuClockRef
	isCPU := id == clockProcessCPU || id == clockThreadCPU || id < 0
	switch {
	case id == clockMonotonicRaw || id == clockRealtimeCoarse || id == clockMonoCoarse:
		return -eOPNOTSUPP, false
	case id < 0 && id&7 == 3:
		return -eOPNOTSUPP, false // a clock by descriptor (CLOCKFD): no timers
	case isCPU:
		var ok bool
		if cpu, ok = t.cpuClock(id); !ok {
			return -eINVAL, false
		}
	case id == clockTAI:
	default:
		if e := t.timerClock(id); e != 0 {
			return e, false
		}
	}
	pt := &posixTimer{clock: id, p: t.Proc, notify: sigevSignal, sig: sigALRM}
	fromID := evAt == 0 // no sigevent: si_value is the timer id
	if evAt != 0 {
		le := binary.LittleEndian
		pt.value = le.Uint64(b[0:])
		pt.sig = int(int32(le.Uint32(b[8:])))
		pt.notify = int32(le.Uint32(b[12:]))
		switch pt.notify {
		case sigevSignal | sigevThreadID:
			th := lookupThread(int(int32(le.Uint32(b[16:]))))
			if th == nil || th.Proc != t.Proc {
				return -eINVAL, false
			}
			pt.target = th
			fallthrough
		case sigevSignal, sigevThread:
			if pt.sig <= 0 || pt.sig > nSig {
				return -eINVAL, false
			}
		case sigevNone:
		default:
			return -eINVAL, false
		}
	}
	if isCPU {
		pt.cw = &cpuWatch{clock: cpu, fire: pt.expired}
	} else {
		pt.tm = timer.New(pt.expired)
	}
	tid, e := t.Proc.addTimer(pt)
	if e != 0 {
		return e, false
	}
	if isCPU {
		cpu.owner().addWatch(pt.cw)
	}
	if fromID {
		pt.value = uint64(tid)
	}
	var ib [4]byte
	binary.LittleEndian.PutUint32(ib[:], uint32(tid))
	if err := t.Proc.Space().CopyOut(idAt, ib[:]); err != nil {
		t.Proc.deleteTimer(tid)
		return errno(err), false
	}
	return 0, false
}

func sysTimerSettime(t *Thread, a *[6]uint64) (int64, bool) {
	if a[2] == 0 {
		return -eINVAL, false
	}
	interval, value, e := t.readItimerspec(uintptr(a[2]))
	if e != 0 {
		return e, false
	}
	pt := t.Proc.timerByID(int32(a[0]))
	if pt == nil {
		return -eINVAL, false
	}
	var oldLeft, oldInterval time.Duration
	switch {
	case pt.cw != nil:
		oldLeft, oldInterval = pt.cw.set(t, value, interval, a[1]&timerAbstime != 0)
	case value > 0 && a[1]&timerAbstime != 0 && isWallClock(pt.clock):
		oldLeft, oldInterval = pt.tm.SetWall(time.Unix(0, int64(value)), interval)
	case value > 0 && a[1]&timerAbstime != 0:
		oldLeft, oldInterval = pt.tm.Set(t.untilClock(pt.clock, value), interval)
	default:
		oldLeft, oldInterval = pt.tm.Set(value, interval)
	}
	if a[3] != 0 {
		return t.putItimerspec(uintptr(a[3]), oldInterval, oldLeft), false
	}
	return 0, false
}

func sysTimerGettime(t *Thread, a *[6]uint64) (int64, bool) {
	pt := t.Proc.timerByID(int32(a[0]))
	if pt == nil {
		return -eINVAL, false
	}
	left, interval := pt.get()
	return t.putItimerspec(uintptr(a[1]), interval, left), false
}

func sysTimerGetoverrun(t *Thread, a *[6]uint64) (int64, bool) {
	pt := t.Proc.timerByID(int32(a[0]))
	if pt == nil {
		return -eINVAL, false
	}
	pt.mu.Lock()
	defer pt.mu.Unlock()
	return pt.reported, false
}

func sysTimerDelete(t *Thread, a *[6]uint64) (int64, bool) {
	if !t.Proc.deleteTimer(int32(a[0])) {
		return -eINVAL, false
	}
	return 0, false
}
