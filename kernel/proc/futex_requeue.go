package proc

import (
	"time"

	"shortbread/kernel/futex"
	"shortbread/kernel/mm"
)

// FUTEX_WAIT_REQUEUE_PI and FUTEX_CMP_REQUEUE_PI: a condition variable
// (a plain futex word) whose waiters are moved onto a PI mutex's word
// instead of being woken to fight for it, as Linux 6.1 has them. A
// waiter sleeps on the first word naming the mutex it will need; the
// requeue either takes the mutex for the first waiter at once (the word
// gets its TID) and wakes it, or queues it and the next ones behind the
// mutex's owner as FUTEX_LOCK_PI's waiters, to be handed the mutex by
// FUTEX_UNLOCK_PI or the owner's death (futex_pi.go). Either way the
// waiter returns owning the mutex.

// requeuePI is what a FUTEX_WAIT_REQUEUE_PI waiter carries while it
// waits on the first word.
type requeuePI struct {
	t     *Thread
	s     *mm.Space
	key2  futexKey // the PI futex it may be requeued to
	addr2 uintptr
	// Under futexes.mu: locked if the requeue took the mutex for it,
	// pw if it was queued behind the mutex's owner.
	locked bool
	pw     *piWaiter
}

// futexWaitRequeuePI is FUTEX_WAIT_REQUEUE_PI, its checks in Linux's
// order: the same address twice (EINVAL), the second word's key (EINVAL
// unaligned, EFAULT), the first word's value (EFAULT, EAGAIN if it
// changed), the same key twice (EINVAL: two mappings of one shared
// word). Waiting on the first word, a timeout is ETIMEDOUT and a signal
// restarts the call after the handler; once requeued, it is ETIMEDOUT
// or, for a signal, EAGAIN (Linux does not restart it: the condition
// variable's word has changed by then).
func (t *Thread) futexWaitRequeuePI(s *mm.Space, addr, addr2 uintptr, val uint32, shared bool, deadline time.Time) int64 {
	if addr == addr2 {
		return -eINVAL
	}
	key2, e := futexKeyFor(s, addr2, shared, true)
	if e != 0 {
		return e
	}
	key, e := futexKeyFor(s, addr, shared, false)
	if e != 0 {
		return e
	}
	rq := &requeuePI{t: t, s: s, key2: key2, addr2: addr2}
	w := &futexWaiter{key: key, bitset: ^uint32(0), woken: make(chan struct{}), rq: rq}
	futexes.mu.Lock()
	cur, err := loadWord(s, addr)
	if err != nil {
		futexes.mu.Unlock()
		return -eFAULT
	}
	if cur != val {
		futexes.mu.Unlock()
		return -eAGAIN
	}
	if key == key2 {
		futexes.mu.Unlock()
		return -eINVAL
	}
	if futexes.q == nil {
		futexes.q = make(map[futexKey][]*futexWaiter)
	}
	futexes.q[key] = append(futexes.q[key], w)
	futexes.mu.Unlock()

	end := t.futexSleep(w.woken, deadline)
	futexes.mu.Lock()
	defer futexes.mu.Unlock()
	switch {
	case rq.locked, rq.pw != nil && rq.pw.granted:
		return 0 // the mutex is ours, however the wait ended
	case end == sleepWoken:
		return 0 // not reached: the channel closes only with the above
	case rq.pw != nil:
		if ps := futexes.pi[key2]; ps != nil {
			ps.drop(rq.pw)
			if len(ps.waiters) == 0 {
				delete(futexes.pi, key2)
			}
		}
		if end == sleepTimedOut {
			return -eTIMEDOUT
		}
		return -eAGAIN
	}
	futexes.remove(w)
	if end == sleepTimedOut {
		return -eTIMEDOUT
	}
	return -eRESTARTNOINTR
}

// futexCmpRequeuePIOn is FUTEX_CMP_REQUEUE_PI: if the word at addr still
// holds val, the first waiter gets the PI futex at addr2 if it is free,
// and it and up to nrRequeue more (nrRequeue in all if the first took
// it) are queued behind its owner. The result is how many were woken or
// moved. Checks in Linux's order: negative counts, the same address,
// nrWake other than 1 (EINVAL); the keys (EINVAL, EFAULT); the same key
// (EINVAL); the value (EFAULT, EAGAIN); the mutex's word (EFAULT), the
// first waiter's kind and target (EINVAL), the mutex owned by that
// waiter (EDEADLK), a word that disagrees with the waiters the kernel
// has for it (EINVAL), an owner that does not exist (ESRCH).
func futexCmpRequeuePIOn(s *mm.Space, addr, addr2 uintptr, nrWake, nrRequeue int, val uint32, shared bool) int64 {
	if nrWake < 0 || nrRequeue < 0 || addr == addr2 || nrWake != 1 {
		return -eINVAL
	}
	key1, e := futexKeyFor(s, addr, shared, false)
	if e != 0 {
		return e
	}
	key2, e := futexKeyFor(s, addr2, shared, true)
	if e != 0 {
		return e
	}
	if key1 == key2 {
		return -eINVAL
	}
	futexes.mu.Lock()
	defer futexes.mu.Unlock()
	cur, err := loadWord(s, addr)
	if err != nil {
		return -eFAULT
	}
	if cur != val {
		return -eAGAIN
	}
	if _, err := loadWord(s, addr2); err != nil {
		return -eFAULT
	}
	ws := futexes.q[key1]
	if len(ws) == 0 {
		return 0
	}
	top := ws[0]
	if top.rq == nil || top.rq.key2 != key2 {
		return -eINVAL
	}
	ps, took, e := proxyLockPI(s, addr2, key2, top.rq.t, nrRequeue > 0)
	if e != 0 {
		return e
	}
	count := 0
	if took {
		top.rq.locked = true
		close(top.woken)
		futexes.q[key1] = ws[1:]
		count = 1
	}
	for len(futexes.q[key1]) > 0 && count-1 < nrRequeue {
		w := futexes.q[key1][0]
		if w.rq == nil || w.rq.key2 != key2 {
			e = -eINVAL
			break
		}
		if w.rq.t == ps.owner {
			e = -eDEADLK // it would wait for itself
			break
		}
		w.rq.pw = ps.enqueue(w.rq.t, w.rq.s, w.rq.addr2)
		w.rq.pw.woken = w.woken // the waiter sleeps on this channel already
		futexes.q[key1] = futexes.q[key1][1:]
		count++
	}
	if len(futexes.q[key1]) == 0 {
		delete(futexes.q, key1)
	}
	if ps != nil && len(ps.waiters) == 0 && futexes.pi[key2] == ps {
		delete(futexes.pi, key2)
	}
	if e != 0 {
		return e
	}
	return int64(count)
}

// proxyLockPI tries to take the PI futex at addr for t, as Linux's
// futex_lock_pi_atomic on a waiter's behalf. Free, it becomes t's (with
// futex.Waiters and a piState if setWaiters: others will queue behind
// t) and took is true; owned by another, the word gets futex.Waiters and
// ps is the piState its waiters join. Preconditions: futexes.mu is held.
func proxyLockPI(s *mm.Space, addr uintptr, key futexKey, t *Thread, setWaiters bool) (ps *piState, took bool, e int64) {
	tid := uint32(t.TID)
	for {
		uval, err := loadWord(s, addr)
		if err != nil {
			return nil, false, -eFAULT
		}
		if uval&futex.TIDMask == tid {
			return nil, false, -eDEADLK
		}
		if ps := futexes.pi[key]; ps != nil {
			if e := attachCheck(uval, ps); e != 0 {
				return nil, false, e
			}
			return ps, false, 0
		}
		if uval&futex.TIDMask == 0 {
			next := futex.Acquired(uval, tid)
			if setWaiters {
				next |= futex.Waiters
			}
			if cur, err := casWord(s, addr, uval, next); err != nil {
				return nil, false, -eFAULT
			} else if cur != uval {
				continue
			}
			if setWaiters {
				ps = newPIState(key, t)
			}
			return ps, true, 0
		}
		want := uval | futex.Waiters
		if cur, err := casWord(s, addr, uval, want); err != nil {
			return nil, false, -eFAULT
		} else if cur != uval {
			continue
		}
		owner := lookupThread(int(uval & futex.TIDMask))
		if owner == nil || owner.futexGone {
			cur, err := loadWord(s, addr)
			if err != nil {
				return nil, false, -eFAULT
			}
			if cur != want {
				continue
			}
			return nil, false, -eSRCH
		}
		return newPIState(key, owner), false, 0
	}
}

// newPIState records that waiters wait at key for owner. Preconditions:
// futexes.mu is held.
func newPIState(key futexKey, owner *Thread) *piState {
	ps := &piState{owner: owner}
	if futexes.pi == nil {
		futexes.pi = make(map[futexKey]*piState)
	}
	futexes.pi[key] = ps
	return ps
}

// attachCheck is Linux's attach_to_pi_state: with waiters in the kernel,
// the word must name their owner, or have no owner and OwnerDied (the
// owner died and the kernel is handing the lock on); else the program
// broke the word (EINVAL).
func attachCheck(uval uint32, ps *piState) int64 {
	pid := uval & futex.TIDMask
	if uval&futex.OwnerDied != 0 && pid == 0 {
		return 0
	}
	if pid != uint32(ps.owner.TID) {
		return -eINVAL
	}
	return 0
}
