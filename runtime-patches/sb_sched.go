//go:build shortbread

// Shortbread machine layer: threads (the runtime's Ms).
//
// A thread that is not running keeps its registers in an sbFrame, and a
// switch copies frames, after which the trap exit path returns into the
// new thread. Blocking (futex, sleep) is therefore never a wait
// inside a handler: the handler records why the thread waits and switches
// away.
//
// Lock order: sbSched.mu, then sbAS.mu, then sbFrames.mu, then
// sbConsoleLock. sbSched.mu guards every thread's state and wait fields
// and the run queue.

package runtime

import (
	"internal/runtime/atomic"
	"unsafe"
)

const (
	sbThFree = iota
	sbThRunnable
	sbThRunning
	sbThBlocked
)

type sbThread struct {
	frame sbFrame
	tid   int32
	state uint32
	cpu   int32 // CPU running it, or -1
	next  int32 // run queue link, -1 at the tail
	// waitAddr is the futex word a blocked thread waits on, or 0
	// (nanosleep).
	waitAddr   uintptr
	deadline   int64 // wake at this time (ns since boot); 0 = never
	timerCPU   int32 // the CPU whose timer is armed for deadline
	timeoutRet int64 // the syscall result if the deadline passes first
	isIdle     bool
	// The user program's scheduling class, set by sbRunUser and reset by
	// sbUserExit (sbSetClass): the CPUs the thread may run on (bit i for
	// CPU i, 0 for any), its real-time priority (0: none, else 1-99) and
	// its time slice. They change only while the thread runs, never while
	// it is queued.
	affinity uint64
	prio     int32
	slice    int64
	ran      int64 // how long it last ran before it was switched out (sbWakePreemptAt)

	sigPending uint64 // atomic: set by any CPU, cleared by the thread's own
	sigMask    uint64
	altSP      uintptr
	altSize    uintptr
	altFlags   int32
	// For the pending synchronous fault signal.
	faultCode int32
	faultAddr uintptr
	faultSig  int32
	// User mode (sb_user.go): while inUser, the thread runs a user
	// program in address space cr3, and kframe is the kernel frame that
	// RunUser returns to; user points at the caller's UserRegs.
	inUser   bool
	switched uint64 // times switched out while inUser (sbUserKicked, sbUserExit)
	// outAt is the TSC when the thread was last switched out in user
	// mode (0 while it runs); away adds up those stretches in this
	// RunUser, which are not the program's CPU time (sbUserExit).
	outAt, away uint64
	userGS      uint64
	cr3         uintptr
	user        uintptr
	kframe      sbGPRs
	// userChecked are the last two UserRegs pointers found present
	// (sbRunUser), good while sbAS.zaps is checkedZaps.
	userChecked [2]uintptr
	checkedZaps uint64
	// The registers of this thread's last fault, for crash reports.
	lastFault sbRegs
	hasFault  bool
}

type sbScheduler struct {
	mu         sbSpin
	head, tail int32 // run queue of thread indices
	nrunnable  int32
	nrt        int32 // real-time threads in the run queue
	nextTID    int32
	nthreads   int32
	nslots     int32  // slots ever used: scans stop here, not at sbMaxThreads
	ipis       uint64 // CPUs sbKickLocked chose, sent to by unlock
}

// unlock releases mu, then sends the IPIs chosen under it: an ICR write is
// an exit (under QEMU TCG it takes the global lock) others would spin on.
func (s *sbScheduler) unlock() {
	m := s.ipis
	s.ipis = 0
	s.mu.unlock()
	for j := int32(0); m != 0; j, m = j+1, m>>1 {
		if m&1 != 0 {
			sbSendIPI(sbCPUs[j].apicID, sbVecResched)
		}
	}
}

var (
	sbThreads      [sbMaxThreads]sbThread
	sbNextDeadline int64 // earliest pending deadline, 0 if none; guarded by sbSched.mu
	sbSched        = sbScheduler{head: -1, tail: -1, nextTID: 1}
)

// sbNewThreadLocked claims a free slot. Returns -1 if there is none.
func sbNewThreadLocked() int32 {
	for i := range sbThreads {
		t := &sbThreads[i]
		if t.state == sbThFree {
			sbSched.nslots = max(sbSched.nslots, int32(i)+1)
			*t = sbThread{}
			t.state, t.cpu, t.next = sbThBlocked, -1, -1
			t.slice, t.tid = sbTimeSlice, sbSched.nextTID
			sbSched.nextTID++
			sbSched.nthreads++
			return int32(i)
		}
	}
	return -1
}

// sbEnqueueLocked queues thread i behind every thread of its priority or
// higher.
func sbEnqueueLocked(i int32) {
	t := &sbThreads[i]
	t.state = sbThRunnable
	t.next = -1
	sbSched.nrunnable++
	prev := sbSched.tail
	if t.prio > 0 {
		sbSched.nrt++
		prev = -1
		for j := sbSched.head; j >= 0 && sbThreads[j].prio >= t.prio; j = sbThreads[j].next {
			prev = j
		}
	}
	if prev < 0 {
		t.next = sbSched.head
		sbSched.head = i
	} else {
		t.next = sbThreads[prev].next
		sbThreads[prev].next = i
	}
	if t.next < 0 {
		sbSched.tail = i
	}
}

// sbEffPrio is t's priority on c: none while c's real-time time is used
// up.
func sbEffPrio(c *sbCPU, t *sbThread) int32 {
	if c.rtUsed >= sbRTRuntime {
		return 0
	}
	return t.prio
}

// sbPickLocked takes from the run queue the thread c should run next if
// its priority on c is at least least, or returns -1: the first thread c
// may run, which is the highest priority waiting longest, except that a
// throttled c takes one that is not real-time if there is one.
func sbPickLocked(c *sbCPU, least int32) int32 {
	bit := uint64(1) << uint32(c.id)
	throttled := c.rtUsed >= sbRTRuntime
	pick, pickPrev := int32(-1), int32(-1)
	for i, prev := sbSched.head, int32(-1); i >= 0; prev, i = i, sbThreads[i].next {
		t := &sbThreads[i]
		if t.affinity != 0 && t.affinity&bit == 0 {
			continue
		}
		if pick < 0 || !throttled || t.prio == 0 {
			pick, pickPrev = i, prev
		}
		if !throttled || t.prio == 0 {
			break
		}
	}
	if pick < 0 || sbEffPrio(c, &sbThreads[pick]) < least {
		return -1
	}
	t := &sbThreads[pick]
	if pickPrev < 0 {
		sbSched.head = t.next
	} else {
		sbThreads[pickPrev].next = t.next
	}
	if sbSched.tail == pick {
		sbSched.tail = pickPrev
	}
	sbSched.nrunnable--
	if t.prio > 0 {
		sbSched.nrt--
	}
	return pick
}

// Why a blocked thread is woken.
const (
	sbWakeEvent   = iota // what it waited for happened
	sbWakeTimeout        // its deadline passed
	sbWakeSignal         // a signal interrupts the wait
)

// sbWakeLocked makes a blocked thread runnable and sets the result of its
// syscall: 0 for an event, timeoutRet for a timeout, EINTR for a signal.
func sbWakeLocked(i int32, why int) {
	t := &sbThreads[i]
	if t.state != sbThBlocked {
		return
	}
	switch {
	case why == sbWakeTimeout:
		t.frame.rax = uint64(t.timeoutRet)
	case why == sbWakeSignal:
		t.frame.rax = sbNeg(sbEINTR)
	default:
		t.frame.rax = 0
	}
	t.waitAddr = 0
	t.deadline = 0
	sbEnqueueLocked(i)
	// One woken for some CPUs (sbFutexWake) goes to an idle one now, else
	// anywhere: it must not wait for a busy CPU (with a P the GC needs).
	if t.affinity == 0 || !sbKickLocked(0, t.affinity, true, -1) {
		t.affinity = 0
		sbKickLocked(0, 0, false, -1)
	}
}

// sbSwitchLocked saves the running thread's frame (unless it is gone) and
// loads thread next, or this CPU's idle thread if next is -1, into f.
func sbSwitchLocked(c *sbCPU, f *sbFrame, save bool, next int32) {
	if save {
		sbThreads[c.cur].frame = *f
	}
	if old := &sbThreads[c.cur]; old.inUser {
		// A user thread's GS base waits in KERNEL_GS_BASE for the SWAPGS
		// on its way back to ring 3.
		old.userGS = sbRdmsr(0xC0000102)
		c.userGS = old.userGS
		old.switched++
		old.outAt = sbRdtsc()
		// Live CPU clocks: while out, Away reads as the time away so
		// far less the TSC it went out at (negative).
		(*sbUserRegs)(unsafe.Pointer(old.user)).away = old.away - old.outAt
	}
	if next < 0 {
		next = c.idle
	}
	now := sbNanotime()
	sbThreads[c.cur].ran = now - c.sliceStart
	if sbSched.nrunnable == 0 {
		c.kickAt = 0 // this CPU took the thread it would have kicked for
	}
	if idle, was := next == c.idle, c.idleClock < 0; idle != was {
		if idle {
			atomic.Storeint64(&c.idleClock, -1-(now-c.idleClock))
		} else {
			atomic.Storeint64(&c.idleClock, now-(-1-c.idleClock))
		}
	}
	sbRTCharge(c, now)
	t := &sbThreads[next]
	t.state, t.cpu = sbThRunning, c.id
	if !t.inUser {
		t.affinity = 0 // sbFutexWake's, or RunUser's, which sets it again
	}
	c.cur = next
	c.sliceStart = now
	c.sliceEnd = sbSliceEnd(c, t, now)
	// A kernel thread or the idle one keeps the user space loaded (every
	// space holds the kernel half), as Linux's lazy TLB mode does:
	// shootdowns pass a CPU out of ring 3 by (sbShootdown), and only the
	// release of the space itself interrupts it (sbReleaseCR3).
	if t.cr3 != 0 {
		sbLoadCR3(c, t.cr3)
	}
	if t.inUser {
		sbSetUserGS(c, t.userGS)
		if t.outAt != 0 {
			if d := sbRdtsc() - t.outAt; int64(d) > 0 { // (another CPU's TSC may lag a hair)
				t.away += d
			}
			(*sbUserRegs)(unsafe.Pointer(t.user)).away = t.away
			t.outAt = 0
		}
	}
	*f = t.frame
}

// Real-time throttling, as Linux's default sched_rt_runtime_us and
// sched_rt_period_us: real-time threads get at most sbRTRuntime of each
// sbRTPeriod on a CPU; the rest of the period they rank as priority 0
// there, so the kernel's goroutines (and other programs) get 5%.
const (
	sbRTPeriod  = 1_000_000_000
	sbRTRuntime = 950_000_000
)

// sbRTCharge adds to c's real-time time the time since the last charge
// if its running thread is real-time, and starts a new period when one
// has passed. Time used beyond sbRTRuntime counts against the new period:
// a late timer interrupt (a vCPU the host did not run) must not let a
// spinning thread's overrun vanish with the period it ran past. Every
// change of the running thread or its class is charged first.
func sbRTCharge(c *sbCPU, now int64) {
	if sbThreads[c.cur].prio > 0 {
		c.rtUsed += now - c.rtSince
	}
	c.rtSince = now
	if now-c.rtPeriod >= sbRTPeriod {
		c.rtPeriod, c.rtUsed = now, max(c.rtUsed-sbRTRuntime, 0)
	}
}

// sbSliceEnd is when t's time on c ends: its slice from when it came to
// c; for a real-time thread no later than when c's real-time time runs
// out or its period ends (then the time is charged to the period it was
// used in). A throttled real-time thread gets the default slice at most.
func sbSliceEnd(c *sbCPU, t *sbThread, now int64) int64 {
	end := c.sliceStart + t.slice
	if t.prio == 0 {
		return end
	}
	left := sbRTRuntime - c.rtUsed
	if left <= 0 {
		left = sbTimeSlice
	}
	return min(end, now+left, c.rtPeriod+sbRTPeriod)
}

// sbSetClass gives the thread running on c the scheduling class of the
// program it enters (sbRunUser) or leaves (sbUserExit: all zero). A
// slice of 0 is the default.
func sbSetClass(c *sbCPU, t *sbThread, affinity uint64, prio int32, slice int64) {
	now := int64(0)
	if prio > 0 || t.prio > 0 {
		now = sbNanotime()
		sbRTCharge(c, now)
	}
	if slice == 0 {
		slice = sbTimeSlice
	}
	t.affinity, t.prio, t.slice = affinity, prio, slice
	c.sliceEnd = sbSliceEnd(c, t, now)
}

// sbBlockLocked parks the running thread with the wait fields already set
// by the caller (under sbSched.mu, which it releases).
func sbBlockLocked(c *sbCPU, f *sbFrame) {
	t := &sbThreads[c.cur]
	t.state, t.cpu = sbThBlocked, -1
	sbSwitchLocked(c, f, true, sbPickLocked(c, 0))
	sbSched.unlock()
}

// sbYield switches to the first queued thread that outranks the running
// one on c: the same priority or higher once its slice ended (a real-time
// thread whose own slice has not ended keeps its CPU against its own
// priority), higher before; anything, for the idle thread or a thread
// that may not run on c (which is queued for a CPU it may use). A thread
// nothing outranks starts a new slice when its slice ended.
func sbYield(c *sbCPU, f *sbFrame) {
	sbSched.mu.lock()
	now := sbNanotime()
	sbRTCharge(c, now)
	cur := &sbThreads[c.cur]
	expired := now >= c.sliceEnd
	stay := !cur.isIdle && (cur.affinity == 0 || cur.affinity&(1<<uint32(c.id)) != 0)
	least := int32(0)
	if stay {
		least = sbEffPrio(c, cur)
		if !expired || least > 0 && now < c.sliceStart+cur.slice {
			least++
		}
	}
	next := int32(-1)
	if sbSched.nrunnable > 0 {
		next = sbPickLocked(c, least)
	}
	switch {
	case !cur.isIdle && (next >= 0 || !stay):
		cur.frame = *f
		cur.cpu = -1
		cur.ran = now - c.sliceStart
		sbEnqueueLocked(c.cur)
		if cur.prio > 0 || !stay {
			sbKickLocked(cur.prio, cur.affinity, true, c.cur)
		}
		sbSwitchLocked(c, f, false, next)
	case next >= 0:
		sbSwitchLocked(c, f, false, next)
	case expired && !cur.isIdle:
		// Nothing else wants the CPU: the thread starts a new slice.
		// Left expired, the slice's end would be the timer deadline at
		// every trap exit, an interrupt a microsecond later, and again.
		c.sliceStart = now
		c.sliceEnd = sbSliceEnd(c, cur, now)
	}
	sbSched.unlock()
}

// sbExitThread frees the running thread's slot and runs something else.
func sbExitThread(c *sbCPU, f *sbFrame) {
	sbSched.mu.lock()
	t := &sbThreads[c.cur]
	t.state = sbThFree
	sbSched.nthreads--
	sbSwitchLocked(c, f, false, sbPickLocked(c, 0))
	sbSched.unlock()
}

// sbExpireTimers wakes threads whose deadline passed and returns the next
// deadline this CPU's timer must interrupt it for (0 if none). A deadline
// is armed only on the CPU its thread blocked on: a sleep must not wake
// every halted CPU (vCPU thread). sbNextDeadline, the earliest of all,
// lets the common case, no deadline due, skip the scan.
func sbExpireTimers(c *sbCPU) int64 {
	now := sbNanotime()
	nd, mine := sbNextDeadline, c.nextDeadline
	if (nd == 0 || now < nd-sbTimerSlack) && (mine == 0 || now < mine-sbTimerSlack) {
		return mine
	}
	// Built aside and stored whole: other CPUs read their own word
	// without the lock.
	var perCPU [sbMaxCPU]int64
	next := int64(0)
	sbSched.mu.lock()
	for i := range sbThreads[:sbSched.nslots] {
		t := &sbThreads[i]
		if t.state != sbThBlocked || t.deadline == 0 {
			continue
		}
		if t.deadline-sbTimerSlack <= now {
			sbWakeLocked(int32(i), sbWakeTimeout)
			continue
		}
		if next == 0 || t.deadline < next {
			next = t.deadline
		}
		if d := &perCPU[t.timerCPU]; *d == 0 || t.deadline < *d {
			*d = t.deadline
		}
	}
	for i := int32(0); i < sbNCPU; i++ {
		atomic.Storeint64(&sbCPUs[i].nextDeadline, perCPU[i])
	}
	sbNextDeadline = next
	sbSched.unlock()
	return c.nextDeadline
}

// sbTimerSlack is how late a timed wait may end, as Linux's default for
// normal threads (timer_slack_ns, 50 µs): the timer is armed for deadline
// plus slack, and a timer interrupt within the slack ends the wait early.
// The runtime's sysmon sleeps 20 µs at a time while a processor is busy;
// without slack, each sleep cost a wake-up from HLT.
const sbTimerSlack = 50_000

// sbSetDeadlineLocked records when the thread running on c must be woken
// (plus sbTimerSlack); c's timer will interrupt it then.
func sbSetDeadlineLocked(c *sbCPU, t *sbThread, deadline int64) {
	t.deadline = 0
	if deadline == 0 {
		return
	}
	deadline += sbTimerSlack
	t.deadline, t.timerCPU = deadline, c.id
	if sbNextDeadline == 0 || deadline < sbNextDeadline {
		sbNextDeadline = deadline
	}
	if c.nextDeadline == 0 || deadline < c.nextDeadline {
		atomic.Storeint64(&c.nextDeadline, deadline)
	}
}

// sbFutexWait implements FUTEX_WAIT: block if *addr still holds val.
func sbFutexWait(c *sbCPU, f *sbFrame, addr uintptr, val uint32, deadline int64) {
	if addr&3 != 0 || !sbAS.touch(addr, 4, false) {
		f.rax = sbNeg(sbEFAULT)
		return
	}
	sbSched.mu.lock()
	if sbLoad32(addr) != val {
		sbSched.unlock()
		f.rax = sbNeg(sbEAGAIN)
		return
	}
	t := &sbThreads[c.cur]
	t.waitAddr = addr
	sbSetDeadlineLocked(c, t, deadline)
	t.timeoutRet = -sbETIMEDOUT
	sbBlockLocked(c, f)
}

// sbFutexWake wakes up to n threads waiting on addr, on the CPUs cpus
// names until they first run (0: any).
func sbFutexWake(addr uintptr, n int64, cpus uint64) int64 {
	woken := int64(0)
	sbSched.mu.lock()
	for i := int32(0); i < sbSched.nslots && woken < n; i++ {
		if t := &sbThreads[i]; t.state == sbThBlocked && t.waitAddr == addr {
			t.affinity = cpus
			sbWakeLocked(i, sbWakeEvent)
			woken++
		}
	}
	sbSched.unlock()
	return woken
}

// sbSleep blocks the running thread until deadline.
func sbSleep(c *sbCPU, f *sbFrame, deadline int64) {
	sbSched.mu.lock()
	t := &sbThreads[c.cur]
	sbSetDeadlineLocked(c, t, deadline)
	t.timeoutRet = 0
	sbBlockLocked(c, f)
}

// sbClone starts a thread that shares everything with its parent, as
// the runtime's newosproc asks. It returns the child's TID or an errno.
func sbClone(c *sbCPU, f *sbFrame, flags, stk, tls uintptr) int64 {
	const cloneVM, cloneThread, cloneSetTLS = 0x100, 0x10000, 0x80000
	if flags&(cloneVM|cloneThread) != cloneVM|cloneThread {
		return -sbEINVAL // processes come with user programs
	}
	sbSched.mu.lock()
	i := sbNewThreadLocked()
	if i < 0 {
		sbSched.unlock()
		return -sbEAGAIN
	}
	t := &sbThreads[i]
	t.frame = *f
	t.frame.rsp = uint64(stk)
	if flags&cloneSetTLS != 0 {
		t.frame.fsbase = uint64(tls)
	}
	t.sigMask = sbThreads[c.cur].sigMask
	tid := t.tid
	sbWakeLocked(i, sbWakeEvent) // the child's clone returns 0
	sbSched.unlock()
	return int64(tid)
}

// sbFindTIDLocked returns the slot of a live thread, or -1.
func sbFindTIDLocked(tid int32) int32 {
	for i := range sbThreads[:sbSched.nslots] {
		if sbThreads[i].state != sbThFree && sbThreads[i].tid == tid && !sbThreads[i].isIdle {
			return int32(i)
		}
	}
	return -1
}

// sbWakeDelayNs is how long a busy CPU that wakes a thread waits for its own
// to block before it sends an idle CPU an IPI (README.md; wake_delay=).
var sbWakeDelayNs int64 = 150_000

// sbKickLocked makes another CPU look at the run queue for a thread just
// queued with priority prio and CPU mask affinity: an IPI (sent by
// sbSched.unlock) to a CPU the thread may use that runs a lower priority,
// an idle one first; only an idle one for a thread that is not real-time,
// and then, unless now is set or this CPU is idle, only once this CPU's
// wake delay passed without its thread blocking (sbKickLate). None if this
// CPU is idle and the thread is the only one queued: an interrupt woke it,
// and sbTrapExit runs it here. A thread w that waits for its CPUs
// (sbYield) may instead end the slice of one running a thread that is
// not real-time (sbWakePreemptAt). It reports whether it chose a CPU.
// Preconditions: sbSched.mu is held.
func sbKickLocked(prio int32, affinity uint64, now bool, w int32) bool {
	self := sbThisCPU()
	selfIdle := sbThreads[self.cur].isIdle
	if selfIdle && sbSched.nrunnable <= 1 {
		return false
	}
	var best, pre *sbCPU
	bestPrio, preAt := prio, int64(0)
	for j := int32(0); j < sbNCPU; j++ {
		c := &sbCPUs[j]
		if c.online == 0 || c == self || affinity != 0 && affinity&(1<<uint32(j)) == 0 {
			continue
		}
		p := int32(-1)
		if cur := &sbThreads[c.cur]; !cur.isIdle {
			p = sbEffPrio(c, cur) // another CPU's: a hint, read without its lock
		}
		if p < bestPrio {
			best, bestPrio = c, p
		}
		if at := sbWakePreemptAt(c, w); at != 0 && (pre == nil || at < preAt) {
			pre, preAt = c, at
		}
	}
	if best == nil && pre != nil {
		// Its slice ends at preAt instead; the IPI makes it arm its
		// timer for that, or yield now if preAt has passed.
		pre.sliceEnd = min(pre.sliceEnd, preAt)
		best = pre
	} else if best == nil {
		return false
	}
	if prio == 0 && !now && !selfIdle && sbWakeDelayNs > 0 && best != pre {
		if self.kickAt == 0 {
			self.kickAt = sbNanotime() + sbWakeDelayNs
		}
		return true
	}
	sbSched.ipis |= 1 << uint32(best.id)
	return true
}

// sbWakeGran is the least a thread runs before a woken one preempts it.
const sbWakeGran = 250_000 // ns

// sbWakePreemptAt is when CPU c's running thread gives way to queued
// thread w, as Linux preempts for its normal threads on a wake-up: a
// thread that ran briefly (one end of a hand-off, a server answering a
// request) need not wait for a CPU-bound thread's slice to end, which
// keeps at least two thirds of its CPU against it. 0 (never) for no w,
// a real-time one, or a running thread that is real-time or not in user
// mode: the kernel's Go code holds a P, which no other M may use while
// its M waits. Another CPU's fields are read under sbSched.mu, which
// every switch holds, but its thread enters and leaves user mode (and
// sbSetClass sets the slice end) without it: a hint, as sbKickLocked's
// look at their priorities is.
func sbWakePreemptAt(c *sbCPU, w int32) int64 {
	if w < 0 {
		return 0
	}
	cur, t := &sbThreads[c.cur], &sbThreads[w]
	if !cur.inUser || t.prio != 0 || sbEffPrio(c, cur) != 0 {
		return 0
	}
	return c.sliceStart + max(sbWakeGran, 2*t.ran)
}

// sbKickLate sends the IPI sbKickLocked put off, once its time has come
// (c's timer fired), if a thread still waits for a CPU.
func sbKickLate(c *sbCPU) {
	if c.timerAt != 0 || sbNanotime() < c.kickAt {
		return
	}
	c.kickAt = 0
	sbSched.mu.lock()
	if sbSched.nrunnable > 0 {
		sbKickLocked(0, 0, true, -1)
	}
	sbSched.unlock()
}

// sbCPUQ holds goroutines readied for a user thread that may run on one
// CPU only, when no P was idle and that CPU was busy (readyAway,
// proc.diff): as Linux queues such a task on its CPU's run queue, the
// goroutine waits for an M on that CPU to look for work, instead of
// running on the waker's P up to RunUser and then moving there with the
// P. An M elsewhere takes it only once it has waited sbCPUQWait or its
// CPU went idle, and an M about to give up its P while any is queued
// looks again instead (findRunnable, handoffp): no P is idle while a
// goroutine waits here. Guarded by sched.lock; n is read without it.
var sbCPUQ struct {
	n     atomic.Int32
	q     [32]gQueue
	since [32]int64 // when each queue's head was queued
}

const sbCPUQWait = 500_000 // ns

// sbCPUIdle reports whether CPU i runs its idle thread, or is not
// online (a hint: read without the machine layer's lock).
func sbCPUIdle(i int32) bool {
	return i >= sbNCPU || sbThreads[atomic.Loadint32(&sbCPUs[i].cur)].isIdle
}

// sbCPUQPut queues gp for CPU i. sched.lock must be held.
func sbCPUQPut(gp *g, i int32) {
	if sbCPUQ.q[i].empty() {
		sbCPUQ.since[i] = nanotime()
	}
	sbCPUQ.q[i].pushBack(gp)
	sbCPUQ.n.Add(1)
}

// sbCPUQTake returns a queued goroutine for this M to run: one for its
// CPU, else one that waited long enough or whose CPU went idle; nil if
// none. sched.lock must be held.
func sbCPUQTake() *g {
	now := nanotime()
	own := sbThisCPU().id
	for i := int32(-1); i < int32(len(sbCPUQ.q)) && i < sbNCPU; i++ {
		j := i
		if j < 0 {
			if j = own; j >= int32(len(sbCPUQ.q)) {
				continue
			}
		} else if j == own || sbCPUQ.q[j].empty() || now-sbCPUQ.since[j] < sbCPUQWait && !sbCPUIdle(j) {
			continue
		}
		if gp := sbCPUQ.q[j].pop(); gp != nil {
			sbCPUQ.since[j] = now
			sbCPUQ.n.Add(-1)
			return gp
		}
	}
	return nil
}
