package proc

import (
	"encoding/binary"
	"sync"
	"time"

	"shortbread/kernel/futex"
	"shortbread/kernel/mm"
	"shortbread/kernel/wallclock"
)

// Futexes (futex(2)). A waiter is keyed by where the word lives: the
// memory object and offset for shared memory (so processes mapping it
// meet), else the address space and address. FUTEX_PRIVATE_FLAG only
// decides whether an unmapped word is an error for the calls that do not
// read it. The priority-inheritance operations are in futex_pi.go, their
// condition-variable requeue in futex_requeue.go, the robust list in
// futex_robust.go, the word arithmetic in package futex.

const (
	futexWait          = 0
	futexWakeOpc       = 1
	futexRequeueOpc    = 3
	futexCmpRequeue    = 4
	futexWakeOp        = 5
	futexLockPI        = 6
	futexUnlockPI      = 7
	futexTrylockPI     = 8
	futexWaitBitset    = 9
	futexWakeBitset    = 10
	futexWaitRequeuePI = 11
	futexCmpRequeuePI  = 12
	futexLockPI2       = 13
	futexPrivateFlag   = 128
	futexClockRealtime = 256
	futexCmdMask       = ^(futexPrivateFlag | futexClockRealtime)

	eAGAIN    = 11
	eINTR     = 4
	eTIMEDOUT = 110
	eDEADLK   = 35
)

// futexKey is where waiters meet: an address space and address, or a
// shared memory object and offset (mm.Space.FutexKey).
type futexKey struct {
	obj  any
	addr uintptr
}

func keyOf(s *mm.Space, addr uintptr) (futexKey, error) {
	obj, off, err := s.FutexKey(addr)
	return futexKey{obj, off}, err
}

// futexKeyFor is Linux's get_futex_key: EINVAL for a word that is not
// aligned, EFAULT for one outside user memory, and for a shared futex
// (no FUTEX_PRIVATE_FLAG) one that cannot be read, or written if write
// (Linux finds a shared word's page by faulting it in); a private futex
// is only an address.
func futexKeyFor(s *mm.Space, addr uintptr, shared, write bool) (futexKey, int64) {
	if addr&3 != 0 {
		return futexKey{}, -eINVAL
	}
	if addr >= mm.UserTop {
		return futexKey{}, -eFAULT
	}
	k, err := keyOf(s, addr)
	if err != nil {
		if shared {
			return futexKey{}, -eFAULT
		}
		return futexKey{s, addr}, 0
	}
	if shared {
		if write {
			_, err = s.UpdateWord(addr, func(uint32) (uint32, bool) { return 0, false })
		} else {
			_, err = loadWord(s, addr)
		}
		if err != nil {
			return futexKey{}, -eFAULT
		}
	}
	return k, 0
}

type futexWaiter struct {
	key    futexKey
	bitset uint32
	woken  chan struct{}
	rq     *requeuePI // FUTEX_WAIT_REQUEUE_PI's waiter (futex_requeue.go), else nil
}

// futexTable holds every waiter. One lock serializes the kernel's side of
// all futex operations; the program's own atomic instructions race with
// it, which the compare-and-swap updates of the words (mm.UpdateWord)
// allow for.
type futexTable struct {
	mu sync.Mutex
	q  map[futexKey][]*futexWaiter
	pi map[futexKey]*piState // futex_pi.go
}

var futexes futexTable

func loadWord(s *mm.Space, addr uintptr) (uint32, error) {
	var b [4]byte
	if err := s.CopyIn(addr, b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

// casWord stores new at addr if it holds old, and returns what it held.
func casWord(s *mm.Space, addr uintptr, old, new uint32) (uint32, error) {
	return s.UpdateWord(addr, func(v uint32) (uint32, bool) { return new, v == old })
}

// futexWaitOn blocks while *addr == val until woken, the deadline passes
// (zero: none) or a signal arrives.
func (t *Thread) futexWaitOn(s *mm.Space, addr uintptr, val, bitset uint32, deadline time.Time) int64 {
	if addr&3 != 0 {
		return -eINVAL
	}
	if bitset == 0 {
		return -eINVAL
	}
	key, err := keyOf(s, addr)
	if err != nil {
		return errno(err)
	}
	w := &futexWaiter{key: key, bitset: bitset, woken: make(chan struct{})}
	futexes.mu.Lock()
	cur, err := loadWord(s, addr)
	if err != nil {
		futexes.mu.Unlock()
		return errno(err)
	}
	if cur != val {
		futexes.mu.Unlock()
		return -eAGAIN
	}
	if futexes.q == nil {
		futexes.q = make(map[futexKey][]*futexWaiter)
	}
	futexes.q[key] = append(futexes.q[key], w)
	futexes.mu.Unlock()

	switch t.futexSleep(w.woken, deadline) {
	case sleepWoken:
		return 0
	case sleepTimedOut:
		return t.futexLeave(w, -eTIMEDOUT)
	}
	// Interrupted: restarted if no handler runs, or one with SA_RESTART
	// (a stop and SIGCONT included); a wait with a timeout goes on to
	// the same deadline through restart_syscall, as Linux's
	// futex_wait_restart, which looks at the word again.
	e := int64(-eRESTARTSYS)
	if !deadline.IsZero() {
		e = -eRESTARTBLOCK
		t.restartFn = func(t *Thread) int64 { return t.futexWaitOn(s, addr, val, bitset, deadline) }
	}
	if r := t.futexLeave(w, e); r != e {
		t.restartFn = nil
		return r
	}
	return e
}

// futexLeave takes a waiter that timed out or was interrupted out of its
// queue and returns e, or 0 if a wake got there first.
func (t *Thread) futexLeave(w *futexWaiter, e int64) int64 {
	futexes.mu.Lock()
	defer futexes.mu.Unlock()
	select {
	case <-w.woken:
		return 0
	default:
	}
	futexes.remove(w)
	return e
}

type sleepEnd int

const (
	sleepWoken sleepEnd = iota
	sleepTimedOut
	sleepInterrupted
)

// futexSleep waits until woken is closed, the deadline passes (zero:
// none) or a signal the thread takes arrives.
func (t *Thread) futexSleep(woken chan struct{}, deadline time.Time) sleepEnd {
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		tm := time.NewTimer(time.Until(deadline))
		defer tm.Stop()
		timeout = tm.C
	}
	select {
	case <-woken: // woken since it was queued: no wait
		return sleepWoken
	default:
	}
	t.waitBegin()
	defer t.sleepEnd()
	for {
		select {
		case <-woken:
			return sleepWoken
		case <-timeout:
			return sleepTimedOut
		case <-t.sigWake:
			// Only a signal the thread takes interrupts the wait.
			if t.interrupted() {
				return sleepInterrupted
			}
		}
	}
}

func (f *futexTable) remove(w *futexWaiter) {
	ws := f.q[w.key]
	for i, x := range ws {
		if x == w {
			f.q[w.key] = append(ws[:i:i], ws[i+1:]...)
			break
		}
	}
	if len(f.q[w.key]) == 0 {
		delete(f.q, w.key)
	}
}

// futexWake wakes up to n waiters on addr whose bitset intersects: the
// count, or EINVAL (futexWakeLocked).
func futexWake(s *mm.Space, addr uintptr, n int, bitset uint32, _ bool) int64 {
	key, err := keyOf(s, addr)
	if err != nil {
		return 0
	}
	futexes.mu.Lock()
	defer futexes.mu.Unlock()
	woken, e := futexWakeLocked(key, n, bitset)
	if e != 0 {
		return e
	}
	return int64(woken)
}

// futexWakeLocked wakes up to n waiters on key whose bitset intersects.
// As Linux's futex_wake, meeting a FUTEX_WAIT_REQUEUE_PI waiter before
// the count is reached is EINVAL (that waiter may only be requeued),
// those woken before it staying woken.
func futexWakeLocked(key futexKey, n int, bitset uint32) (int, int64) {
	woken := 0
	ws := futexes.q[key]
	var keep []*futexWaiter
	var e int64
	for i, w := range ws {
		if woken >= n || e != 0 {
			keep = append(keep, ws[i:]...)
			break
		}
		if w.rq != nil {
			e = -eINVAL
			keep = append(keep, w)
			continue
		}
		if w.bitset&bitset != 0 {
			close(w.woken)
			woken++
			continue
		}
		keep = append(keep, w)
	}
	if len(keep) == 0 {
		delete(futexes.q, key)
	} else {
		futexes.q[key] = keep
	}
	return woken, e
}

// futexRequeue wakes n waiters on addr and moves up to m others to addr2;
// with cmp, only if *addr still holds val.
func futexRequeue(s *mm.Space, addr, addr2 uintptr, n, m int, cmp bool, val uint32) int64 {
	futexes.mu.Lock()
	defer futexes.mu.Unlock()
	from, err := keyOf(s, addr)
	if err != nil {
		return errno(err)
	}
	to, err := keyOf(s, addr2)
	if err != nil {
		return errno(err)
	}
	if cmp {
		cur, err := loadWord(s, addr)
		if err != nil {
			return errno(err)
		}
		if cur != val {
			return -eAGAIN
		}
	}
	woken, e := futexWakeLocked(from, n, ^uint32(0))
	if e != 0 {
		return e
	}
	moved := 0
	var keep []*futexWaiter
	for _, w := range futexes.q[from] {
		if moved < m {
			if w.rq != nil {
				// Only FUTEX_CMP_REQUEUE_PI may move it (Linux: EINVAL).
				e = -eINVAL
				m = moved
				keep = append(keep, w)
				continue
			}
			w.key = to
			futexes.q[to] = append(futexes.q[to], w)
			moved++
			continue
		}
		keep = append(keep, w)
	}
	if len(keep) == 0 {
		delete(futexes.q, from)
	} else {
		futexes.q[from] = keep
	}
	if e != 0 {
		return e
	}
	return int64(woken + moved)
}

// futexWakeOpOn is FUTEX_WAKE_OP: update the word at addr2 by the encoded
// operation, wake up to n waiters on addr and, if the word's old value
// passed the operation's comparison, up to n2 on addr2. As on Linux, an
// unknown operation fails before the word is touched, an unknown
// comparison after it was updated, and a count of 0 still wakes one.
func futexWakeOpOn(s *mm.Space, addr, addr2 uintptr, n, n2 int, op futex.Op, shared bool) int64 {
	k1, e := futexKeyFor(s, addr, shared, false)
	if e != 0 {
		return e
	}
	k2, e := futexKeyFor(s, addr2, shared, true)
	if e != 0 {
		return e
	}
	if !op.ValidOp() {
		return -eNOSYS
	}
	futexes.mu.Lock()
	defer futexes.mu.Unlock()
	old, err := s.UpdateWord(addr2, func(v uint32) (uint32, bool) { return op.Apply(v), true })
	if err != nil {
		return -eFAULT
	}
	hit, ok := op.Compare(old)
	if !ok {
		return -eNOSYS
	}
	woken, e := futexWakeLocked(k1, max(n, 1), ^uint32(0))
	if e != 0 {
		return e
	}
	if hit {
		w2, e := futexWakeLocked(k2, max(n2, 1), ^uint32(0))
		if e != 0 {
			return e
		}
		woken += w2
	}
	return int64(woken)
}

// futexTimeout reads a futex call's timeout, as Linux's futex_init_timeout
// reads it: relative for FUTEX_WAIT, absolute on CLOCK_REALTIME for
// FUTEX_LOCK_PI and with FUTEX_CLOCK_REALTIME, else absolute on
// CLOCK_MONOTONIC. It returns the deadline on Go's clock (zero: none).
func (t *Thread) futexTimeout(at uintptr, cmd, op int) (time.Time, int64) {
	if at == 0 {
		return time.Time{}, 0
	}
	var b [16]byte
	if err := t.Proc.Space().CopyIn(at, b[:]); err != nil {
		return time.Time{}, errno(err)
	}
	sec, nsec := int64(binary.LittleEndian.Uint64(b[:])), int64(binary.LittleEndian.Uint64(b[8:]))
	if sec < 0 || nsec < 0 || nsec >= 1e9 {
		return time.Time{}, -eINVAL
	}
	d := time.Duration(sec)*time.Second + time.Duration(nsec)
	switch {
	case cmd == futexWait:
		return time.Now().Add(d), 0
	case cmd == futexLockPI || op&futexClockRealtime != 0:
		return time.Now().Add(time.Unix(sec, nsec).Sub(wallclock.Now())), 0
	}
	return time.Now().Add(d - time.Duration(monotonicNow())), 0
}

func sysFutex(t *Thread, a *[6]uint64) (int64, bool) {
	s := t.Proc.Space()
	addr, op, val := uintptr(a[0]), int(a[1]), uint32(a[2])
	cmd := op & futexCmdMask
	shared := op&futexPrivateFlag == 0
	var deadline time.Time
	switch cmd {
	case futexWait, futexWaitBitset, futexLockPI, futexLockPI2, futexWaitRequeuePI:
		var e int64
		if deadline, e = t.futexTimeout(uintptr(a[3]), cmd, op); e != 0 {
			return e, false
		}
	}
	// FUTEX_CLOCK_REALTIME means something only to these (Linux 6.1).
	if op&futexClockRealtime != 0 && cmd != futexWaitBitset && cmd != futexLockPI2 && cmd != futexWaitRequeuePI {
		return -eNOSYS, false
	}
	switch cmd {
	case futexWait, futexWaitBitset:
		bitset := ^uint32(0)
		if cmd == futexWaitBitset {
			bitset = uint32(a[5])
		}
		return t.futexWaitOn(s, addr, val, bitset, deadline), false
	case futexWakeOpc, futexWakeBitset:
		if cmd == futexWakeBitset && a[5] == 0 || addr&3 != 0 {
			return -eINVAL, false
		}
		// A shared futex is found through the memory that holds it, so
		// an unmapped word is EFAULT; a private one is only an address,
		// and waking nobody there succeeds (as on Linux).
		if _, e := futexKeyFor(s, addr, shared, false); e != 0 {
			return e, false
		}
		bitset := ^uint32(0)
		if cmd == futexWakeBitset {
			bitset = uint32(a[5])
		}
		// Linux wakes one even when asked for none.
		return futexWake(s, addr, max(int(int32(val)), 1), bitset, false), false
	case futexRequeueOpc, futexCmpRequeue:
		// Both counts are C ints (the second comes in the timeout's
		// place); both words must be aligned.
		n, m := int(int32(val)), int(int32(a[3]))
		if n < 0 || m < 0 || addr&3 != 0 || a[4]&3 != 0 {
			return -eINVAL, false
		}
		return futexRequeue(s, addr, uintptr(a[4]), n, m, cmd == futexCmpRequeue, uint32(a[5])), false
	case futexWakeOp:
		// The second count comes in the timeout's place.
		return futexWakeOpOn(s, addr, uintptr(a[4]), int(int32(val)), int(int32(a[3])), futex.Op(a[5]), shared), false
	case futexLockPI, futexLockPI2:
		return t.futexLockPI(s, addr, shared, deadline, false), false
	case futexTrylockPI:
		return t.futexLockPI(s, addr, shared, time.Time{}, true), false
	case futexUnlockPI:
		return t.futexUnlockPI(s, addr, shared), false
	case futexWaitRequeuePI:
		return t.futexWaitRequeuePI(s, addr, uintptr(a[4]), val, shared, deadline), false
	case futexCmpRequeuePI:
		// nr_requeue comes in the timeout's place, as a C int.
		return futexCmpRequeuePIOn(s, addr, uintptr(a[4]), int(int32(val)), int(int32(a[3])), uint32(a[5]), shared), false
	}
	return -eNOSYS, false
}
