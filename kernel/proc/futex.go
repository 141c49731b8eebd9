package proc

import (
	"encoding/binary"
	"sync"
	"time"

	"shortbread/kernel/mm"
)

// Futexes (futex(2)). A waiter is keyed by its address space and virtual
// address. FUTEX_PRIVATE_FLAG and shared futexes behave alike here:
// shared memory between processes does not exist yet, so a futex word is
// only ever reached through one address space.

const (
	futexWait          = 0
	futexWakeOpc       = 1
	futexRequeueOpc    = 3
	futexCmpRequeue    = 4
	futexWakeOp        = 5
	futexWaitBitset    = 9
	futexWakeBitset    = 10
	futexPrivateFlag   = 128
	futexClockRealtime = 256
	futexCmdMask       = ^(futexPrivateFlag | futexClockRealtime)

	eAGAIN    = 11
	eINTR     = 4
	eTIMEDOUT = 110
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

type futexWaiter struct {
	key    futexKey
	bitset uint32
	woken  chan struct{}
}

type futexTable struct {
	mu sync.Mutex
	q  map[futexKey][]*futexWaiter
}

var futexes futexTable

func loadWord(s *mm.Space, addr uintptr) (uint32, error) {
	var b [4]byte
	if err := s.CopyIn(addr, b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b[:]), nil
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

	var timeout <-chan time.Time
	if !deadline.IsZero() {
		tm := time.NewTimer(time.Until(deadline))
		defer tm.Stop()
		timeout = tm.C
	}
	timedOut := false
	t.sleepBegin()
	defer t.sleepEnd()
	for done := false; !done; {
		select {
		case <-w.woken:
			return 0
		case <-timeout:
			timedOut, done = true, true
		case <-t.sigWake:
			// Only a signal the thread takes interrupts the wait.
			done = t.interrupted()
		}
	}
	// Leave the queue, unless a wake got there first.
	futexes.mu.Lock()
	defer futexes.mu.Unlock()
	select {
	case <-w.woken:
		return 0
	default:
	}
	futexes.remove(w)
	if timedOut {
		return -eTIMEDOUT
	}
	return -eINTR
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

// futexWake wakes up to n waiters on addr whose bitset intersects.
func futexWake(s *mm.Space, addr uintptr, n int, bitset uint32, _ bool) int {
	key, err := keyOf(s, addr)
	if err != nil {
		return 0
	}
	futexes.mu.Lock()
	defer futexes.mu.Unlock()
	return futexWakeLocked(key, n, bitset)
}

func futexWakeLocked(key futexKey, n int, bitset uint32) int {
	woken := 0
	ws := futexes.q[key]
	var keep []*futexWaiter
	for _, w := range ws {
		if woken < n && w.bitset&bitset != 0 {
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
	return woken
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
	woken := futexWakeLocked(from, n, ^uint32(0))
	moved := 0
	var keep []*futexWaiter
	for _, w := range futexes.q[from] {
		if moved < m {
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
	return int64(woken + moved)
}

func sysFutex(t *Thread, a *[6]uint64) (int64, bool) {
	s := t.Proc.Space()
	addr, op, val := uintptr(a[0]), int(a[1]), uint32(a[2])
	cmd := op & futexCmdMask
	// FUTEX_CLOCK_REALTIME only means something to a wait.
	if op&futexClockRealtime != 0 && cmd != futexWait && cmd != futexWaitBitset {
		return -eNOSYS, false
	}
	switch cmd {
	case futexWait, futexWaitBitset:
		bitset := ^uint32(0)
		if op&futexCmdMask == futexWaitBitset {
			bitset = uint32(a[5])
		}
		var deadline time.Time
		if a[3] != 0 {
			var b [16]byte
			if err := s.CopyIn(uintptr(a[3]), b[:]); err != nil {
				return errno(err), false
			}
			sec, nsec := int64(binary.LittleEndian.Uint64(b[:])), int64(binary.LittleEndian.Uint64(b[8:]))
			if sec < 0 || nsec < 0 || nsec >= 1e9 {
				return -eINVAL, false
			}
			d := time.Duration(sec)*time.Second + time.Duration(nsec)
			switch {
			case op&futexCmdMask == futexWait:
				deadline = time.Now().Add(d) // relative
			case op&futexClockRealtime != 0:
				deadline = time.Unix(sec, nsec)
			default:
				deadline = time.Now().Add(d - time.Duration(monotonicNow()))
			}
		}
		return t.futexWaitOn(s, addr, val, bitset, deadline), false
	case futexWakeOpc, futexWakeBitset:
		if op&futexCmdMask == futexWakeBitset && a[5] == 0 || addr&3 != 0 {
			return -eINVAL, false
		}
		// A shared futex is found through the memory that holds it, so
		// an unmapped word is EFAULT; a private one is only an address,
		// and waking nobody there succeeds (as on Linux).
		if op&futexPrivateFlag == 0 {
			if _, _, err := s.FutexKey(addr); err != nil {
				return -eFAULT, false
			}
		}
		if op&futexCmdMask == futexWakeOpc {
			return int64(futexWake(s, addr, int(val), ^uint32(0), false)), false
		}
		return int64(futexWake(s, addr, int(val), uint32(a[5]), false)), false
	case futexRequeueOpc, futexCmpRequeue:
		// Both counts are C ints (the second comes in the timeout's
		// place); both words must be aligned.
		n, m := int(int32(val)), int(int32(a[3]))
		if n < 0 || m < 0 || addr&3 != 0 || a[4]&3 != 0 {
			return -eINVAL, false
		}
		return futexRequeue(s, addr, uintptr(a[4]), n, m, cmd == futexCmpRequeue, uint32(a[5])), false
	}
	return -eNOSYS, false
}
