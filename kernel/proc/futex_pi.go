package proc

import (
	"time"

	"shortbread/kernel/futex"
	"shortbread/kernel/mm"
)

// Priority-inheritance futexes (FUTEX_LOCK_PI, FUTEX_LOCK_PI2,
// FUTEX_TRYLOCK_PI, FUTEX_UNLOCK_PI). The word holds its owner's TID with
// futex.Waiters and futex.OwnerDied; the C library takes and releases an
// uncontended lock by compare-and-swap alone and enters the kernel only
// to wait or to release a lock with waiters, as on Linux.
//
// What is done: ownership by TID, EDEADLK for the owner, ESRCH for a TID
// that names no live thread, EPERM for an unlock by another thread, FIFO
// handoff (an unlock writes the first waiter's TID into the word and
// wakes it, so the lock is never free in between), timeouts, and the
// death of an owner: its robust list marks the word OwnerDied and the
// first waiter gets the lock with the bit kept. What is not: priority
// boosting. Real-time priorities act only while a thread runs its
// program (sys_sched.go), where an owner holds no kernel lock, and a
// policy belongs to a whole process, so nothing is lent to an owner;
// waiters are served in arrival order rather than by priority.

// piState exists while a PI futex has waiters in the kernel.
type piState struct {
	owner   *Thread // the thread the waiters wait for
	waiters []*piWaiter
}

type piWaiter struct {
	t       *Thread
	s       *mm.Space // the waiter's view of the word, for a handoff at the owner's death
	addr    uintptr
	granted bool // the lock was handed to it; under futexes.mu
	woken   chan struct{}
}

// futexLockPI is FUTEX_LOCK_PI(2), and FUTEX_TRYLOCK_PI with try. Taken
// at once it returns 0; contended, it waits (EAGAIN for a trylock) until
// an unlock or the owner's death hands the lock over, the deadline
// passes (ETIMEDOUT), or a signal is taken: then the call is restarted
// after the handler, never EINTR, as Linux does.
func (t *Thread) futexLockPI(s *mm.Space, addr uintptr, shared bool, deadline time.Time, try bool) int64 {
	key, e := futexKeyFor(s, addr, shared, true)
	if e != 0 {
		return e
	}
	tid := uint32(t.TID)
	futexes.mu.Lock()
	var w *piWaiter
	for w == nil {
		uval, err := loadWord(s, addr)
		if err != nil {
			futexes.mu.Unlock()
			return -eFAULT
		}
		if uval&futex.TIDMask == tid {
			futexes.mu.Unlock()
			return -eDEADLK
		}
		if ps := futexes.pi[key]; ps != nil {
			if e := attachCheck(uval, ps); e != 0 {
				futexes.mu.Unlock()
				return e
			}
			// Others wait already: the word must say so before we join.
			if uval&futex.Waiters == 0 {
				if cur, err := casWord(s, addr, uval, uval|futex.Waiters); err != nil || cur != uval {
					if err != nil {
						futexes.mu.Unlock()
						return -eFAULT
					}
					continue
				}
			}
			if try {
				futexes.mu.Unlock()
				return -eAGAIN
			}
			w = ps.enqueue(t, s, addr)
			break
		}
		if uval&futex.TIDMask == 0 {
			// No owner (perhaps a dead one's, with OwnerDied): take it.
			cur, err := casWord(s, addr, uval, futex.Acquired(uval, tid))
			if err != nil {
				futexes.mu.Unlock()
				return -eFAULT
			}
			if cur == uval {
				futexes.mu.Unlock()
				return 0
			}
			continue
		}
		// Owned: mark the word contended, then find its owner.
		want := uval | futex.Waiters
		if cur, err := casWord(s, addr, uval, want); err != nil || cur != uval {
			if err != nil {
				futexes.mu.Unlock()
				return -eFAULT
			}
			continue
		}
		owner := lookupThread(int(uval & futex.TIDMask))
		if owner == nil || owner.futexGone {
			// Linux's handle_exit_race: a word that changed meanwhile
			// is looked at again; else the TID is bogus or its thread
			// died without a robust list naming the lock.
			cur, err := loadWord(s, addr)
			if err != nil {
				futexes.mu.Unlock()
				return -eFAULT
			}
			if cur != want {
				continue
			}
			futexes.mu.Unlock()
			return -eSRCH
		}
		if try {
			futexes.mu.Unlock()
			return -eAGAIN
		}
		w = newPIState(key, owner).enqueue(t, s, addr)
	}
	futexes.mu.Unlock()

	end := t.futexSleep(w.woken, deadline)
	if end == sleepWoken {
		return 0
	}
	futexes.mu.Lock()
	defer futexes.mu.Unlock()
	if w.granted {
		return 0 // the lock came as the wait ended: it is ours
	}
	if ps := futexes.pi[key]; ps != nil {
		ps.drop(w)
		if len(ps.waiters) == 0 {
			delete(futexes.pi, key)
		}
	}
	if end == sleepTimedOut {
		return -eTIMEDOUT
	}
	return -eRESTARTNOINTR
}

func (ps *piState) enqueue(t *Thread, s *mm.Space, addr uintptr) *piWaiter {
	w := &piWaiter{t: t, s: s, addr: addr, woken: make(chan struct{})}
	ps.waiters = append(ps.waiters, w)
	return w
}

func (ps *piState) drop(w *piWaiter) {
	for i, x := range ps.waiters {
		if x == w {
			ps.waiters = append(ps.waiters[:i:i], ps.waiters[i+1:]...)
			return
		}
	}
}

// grantLocked hands the lock at key to its first waiter, whose TID is in
// the word already. Preconditions: futexes.mu is held.
func grantLocked(key futexKey, ps *piState) {
	w := ps.waiters[0]
	ps.waiters = ps.waiters[1:]
	ps.owner = w.t
	w.granted = true
	close(w.woken)
	if len(ps.waiters) == 0 {
		delete(futexes.pi, key)
	}
}

// futexUnlockPI is FUTEX_UNLOCK_PI: the word is read first (EFAULT) and
// must name the caller (EPERM), then it is keyed (EINVAL, EFAULT), in
// Linux's order. With waiters the first one gets the lock, the word
// holding its TID and futex.Waiters (OwnerDied is dropped); without, the
// word becomes 0.
func (t *Thread) futexUnlockPI(s *mm.Space, addr uintptr, shared bool) int64 {
	tid := uint32(t.TID)
	uval, err := loadWord(s, addr)
	if err != nil {
		return -eFAULT
	}
	if uval&futex.TIDMask != tid {
		return -ePERM
	}
	key, e := futexKeyFor(s, addr, shared, true)
	if e != 0 {
		return e
	}
	futexes.mu.Lock()
	defer futexes.mu.Unlock()
	for {
		uval, err := loadWord(s, addr)
		if err != nil {
			return -eFAULT
		}
		if uval&futex.TIDMask != tid {
			return -ePERM
		}
		next := uint32(0)
		ps := futexes.pi[key]
		if ps != nil {
			next = uint32(ps.waiters[0].t.TID) | futex.Waiters
		}
		cur, err := casWord(s, addr, uval, next)
		if err != nil {
			return -eFAULT
		}
		if cur != uval {
			continue // the program changed the word meanwhile
		}
		if ps != nil {
			grantLocked(key, ps)
		}
		return 0
	}
}

// futexExitPI runs when t exits, after its robust list: t can own no lock
// any more, and each PI futex whose waiters wait for it goes to its first
// waiter, with OwnerDied kept if the robust list set it (Linux's
// exit_pi_state_list). A later FUTEX_LOCK_PI naming t gets ESRCH.
func (t *Thread) futexExitPI() {
	futexes.mu.Lock()
	defer futexes.mu.Unlock()
	t.futexGone = true
	for key, ps := range futexes.pi {
		if ps.owner != t {
			continue
		}
		w := ps.waiters[0]
		tid := uint32(w.t.TID)
		w.s.UpdateWord(w.addr, func(v uint32) (uint32, bool) { return futex.HandedOff(v, tid), true })
		grantLocked(key, ps)
	}
}
