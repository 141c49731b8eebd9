package proc

import (
	"encoding/binary"

	"shortbread/kernel/futex"
	"shortbread/kernel/mm"
)

// Robust futexes (set_robust_list(2), get_robust_list(2)): a thread
// registers a list of the locks it holds, in its own memory, and when it
// exits the kernel marks each lock it still owns futex.OwnerDied and
// wakes a waiter, so the next locker learns of the death (EOWNERDEAD)
// instead of waiting forever. The list is struct robust_list_head: the
// first entry (each entry's first word points at the next, bit 0 saying
// the lock is a PI one), the offset from an entry to its lock word, and
// the entry being taken or released when the thread died
// (list_op_pending).

const (
	robustHeadSize  = 24
	robustListLimit = 2048 // entries walked at most: the list may be a loop (ROBUST_LIST_LIMIT)
)

func sysSetRobustList(t *Thread, a *[6]uint64) (int64, bool) {
	if a[1] != robustHeadSize {
		return -eINVAL, false
	}
	t.robustList, t.robustSpace = uintptr(a[0]), t.Proc.Space()
	return 0, false
}

// sysGetRobustList reports a thread's list head (pid 0: the caller's):
// ESRCH for no such thread, EPERM unless the caller may inspect it
// (ptrace's read check with real IDs), then EFAULT, the length written
// first.
func sysGetRobustList(t *Thread, a *[6]uint64) (int64, bool) {
	tt := t
	if pid := int(int32(a[0])); pid != 0 {
		if tt = lookupThread(pid); tt == nil {
			return -eSRCH, false
		}
	}
	if !t.mayAttach(tt.Proc) {
		return -ePERM, false
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], robustHeadSize)
	if err := t.Proc.Space().CopyOut(uintptr(a[2]), b[:]); err != nil {
		return -eFAULT, false
	}
	binary.LittleEndian.PutUint64(b[:], uint64(tt.robustList))
	return errno(t.Proc.Space().CopyOut(uintptr(a[1]), b[:])), false
}

// futexExit releases what an exiting thread holds of futexes: its robust
// list's locks, then its PI locks' waiters. It runs while the process's
// memory is still there, and may run twice (exit_group, then the thread's
// own exit): the second time finds nothing.
func (t *Thread) futexExit() {
	t.exitRobustList()
	t.futexExitPI()
}

// futexExecRelease is futexExit for a thread that execs (Linux's
// futex_exec_release): the old program's robust list is walked and its
// PI locks handed on, and the thread goes on, able to own locks again.
func (t *Thread) futexExecRelease() {
	t.futexExit()
	futexes.mu.Lock()
	t.futexGone = false
	futexes.mu.Unlock()
}

// exitRobustList walks the exiting thread's robust list as Linux's
// exit_robust_list does: every entry but the pending one, then the
// pending one; a fault while reading ends the walk (before the pending
// entry, as on Linux).
func (t *Thread) exitRobustList() {
	head, s := t.robustList, t.robustSpace
	t.robustList, t.robustSpace = 0, nil
	if head == 0 || s == nil || s != t.Proc.Space() {
		return
	}
	var b [robustHeadSize]byte
	if s.CopyIn(head, b[:]) != nil {
		return
	}
	le := binary.LittleEndian
	entry := uintptr(le.Uint64(b[0:]))
	off := uintptr(le.Uint64(b[8:])) // signed; wraps as Linux's pointer sum does
	pending := uintptr(le.Uint64(b[16:]))
	pi, pendingPI := entry&1 != 0, pending&1 != 0
	entry, pending = entry&^1, pending&^1
	for n := 0; entry != head && n < robustListLimit; n++ {
		var nb [8]byte
		err := s.CopyIn(entry, nb[:])
		if entry != pending {
			t.futexOwnerDied(s, entry+off, pi, false)
		}
		if err != nil {
			return
		}
		next := uintptr(le.Uint64(nb[:]))
		entry, pi = next&^1, next&1 != 0
	}
	if pending != 0 {
		t.futexOwnerDied(s, pending+off, pendingPI, true)
	}
}

// futexOwnerDied is Linux's handle_futex_death for one lock word: if the
// exiting thread owns it, the word gets OwnerDied (Waiters kept, the TID
// cleared) and, for a plain futex with waiters, one waiter is woken; a
// PI lock's waiters get it from futexExitPI. A pending plain lock whose
// word is 0 was being released: its waiter may not have been woken yet,
// so one is.
func (t *Thread) futexOwnerDied(s *mm.Space, addr uintptr, pi, pending bool) {
	if addr&3 != 0 {
		return
	}
	uval, err := loadWord(s, addr)
	if err != nil {
		return
	}
	if pending && !pi && uval == 0 {
		futexWake(s, addr, 1, ^uint32(0), false)
		return
	}
	tid := uint32(t.TID)
	owned := false
	old, err := s.UpdateWord(addr, func(v uint32) (uint32, bool) {
		owned = v&futex.TIDMask == tid
		return futex.Died(v), owned
	})
	if err != nil || !owned {
		return
	}
	if !pi && old&futex.Waiters != 0 {
		futexWake(s, addr, 1, ^uint32(0), false)
	}
}
