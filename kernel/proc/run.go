package proc

import (
	"cmp"
	"errors"
	"fmt"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"shortbread/kernel/epoll"
	"shortbread/kernel/klog"
	"shortbread/kernel/machine"
	"shortbread/kernel/mm"
	"shortbread/kernel/net/socket"
	"shortbread/kernel/seccomp"
	"shortbread/kernel/vfs"
)

// Thread is one user thread: a goroutine that runs the program until its
// next system call or fault and handles that in Go.
type Thread struct {
	TID  int
	Proc *Process
	// restartFn finishes a call that returned eRESTARTBLOCK, when the
	// thread makes restart_syscall (Linux's restart_block).
	restartFn func(t *Thread) int64
	// restarting is the restart code (eRESTARTSYS...) of the
	// interrupted call the registers point back at, until the thread
	// goes back to user mode or a handler settles it (restartForHandler).
	restarting int64

	regs machine.UserRegs
	// affinity is the CPUs the thread's program may run on
	// (sched_setaffinity; bit i for CPU i, 0 for all), passed to the
	// machine layer at each RunUser.
	affinity atomic.Uint64
	args     [6]uint64 // the current system call's arguments
	// allocSamples reads the heap's allocation counters around each
	// system call when AllocStat is on (allocstat.go).
	allocSamples [2]metrics.Sample
	// iovRaw and iovFast hold the current call's iovec array when it is
	// short (iovecs), and vctx its VFS context (ctx): neither is
	// allocated per call.
	iovRaw  [16 * fastIOV]byte
	iovFast [fastIOV][2]uint64
	vctx    vfs.Ctx
	// ioSmall is the buffer of reads and writes of up to smallIO bytes
	// (ioBuffer): a pipe's or socket's short messages take none from
	// iobuf's pools.
	ioSmall [smallIO]byte
	// pinned holds the kernel's view of a read's user buffers while a
	// cached read copies straight into them (readCached); its array
	// is kept from call to call.
	pinned [][]byte
	// The same for poll's and epoll_wait's arrays when they are short.
	pollRaw   [8 * fastPoll]byte
	pollReqs  [fastPoll]pollReq
	pollFiles [fastPoll]*vfs.OpenFile
	epollRaw  [12 * fastPoll]byte
	epollEvs  [fastPoll]epoll.Event
	// A send's and a receive's message structures (sendMsg, recvMsg).
	smsg socket.SendMsg
	rmsg socket.RecvMsg
	// clearTID is set_tid_address's (or CLONE_CHILD_CLEARTID's) pointer:
	// on exit the kernel writes 0 there and wakes a futex waiter, in
	// clearSpace, the address space it was set in: a thread that another
	// thread's exec ends must not write into the new program.
	clearTID   uintptr
	clearSpace *mm.Space

	// Signal state (signal.go). sigMask is the thread's blocked set; the
	// thread alone changes it. pending is guarded by Proc.mu.
	sigMask uint64
	pending pendingSet
	// sigWaitSet is what rt_sigtimedwait waits for (guarded by Proc.mu).
	sigWaitSet uint64
	altStack   stackT
	// sigWake is signalled when a signal arrives, so a blocking system
	// call can return EINTR; intr also wakes a wait that sleeps on its
	// own channel (vfs.Waiter.Sleep), registered while the thread runs.
	sigWake chan struct{}
	intr    *vfs.Interrupter
	// syscallNo is the number of the system call in progress, for
	// SA_RESTART.
	syscallNo uint64
	// requests are the sockets whose read began a request that no
	// write has answered yet, while the kernel is traced (reqtrace.go).
	requests map[int32]struct{}

	cpu      cpuClock
	sleeping atomic.Bool // blocked in a system call (state S in /proc)
	// rt_sigsuspend's saved mask, restored once a handler frame saved it.
	suspendOld uint64
	inSuspend  bool
	// stopCounted says the thread has parked (or ended) for the stop in
	// progress (jobctl.go); under Proc.mu.
	stopCounted bool
	// robustList is set_robust_list's head, in the space it was set in
	// (robustSpace): a thread that exec ends must not walk its old list
	// in the new program's memory.
	robustList  uintptr
	robustSpace *mm.Space
	// futexGone says the thread has exited as far as PI futexes go
	// (futexExitPI); under futexes.mu.
	futexGone bool
	// comm is the name PR_SET_NAME gave the thread (nil: the program's).
	comm atomic.Pointer[string] // read by /proc from other goroutines
	// timerslack is PR_SET_TIMERSLACK's value in ns (0: the default).
	timerslack uint64
	// noNewPrivs is PR_SET_NO_NEW_PRIVS's flag: set once, never
	// cleared, inherited by the threads and processes this one makes;
	// execve then ignores set-user-ID and set-group-ID bits.
	noNewPrivs atomic.Bool
	// securebits are PR_SET_SECUREBITS's bits and locks, with
	// PR_SET_KEEPCAPS's SECURE_KEEP_CAPS (cleared by execve); mceKill is
	// PR_MCE_KILL's policy (sys_prctl.go).
	securebits uint32
	mceKill    mceKill
	// seccompMode is the seccomp mode, and seccompFilter the filters
	// in filter mode (sys_seccomp.go); another thread's
	// SECCOMP_FILTER_FLAG_TSYNC may set them.
	seccompMode   atomic.Uint32
	seccompFilter atomic.Pointer[seccomp.Filter]
	// nprocExceeded: a set*uid made this thread's user one past
	// RLIMIT_NPROC; execve fails with EAGAIN while it is (flagNproc).
	nprocExceeded bool
	// nprocUID is the real user ID RLIMIT_NPROC counts the thread
	// under: its creator's, then its own set*uid's (fork.go).
	nprocUID atomic.Uint32
	// kseq counts entries to and exits from system calls: odd while the
	// thread is in one (the hung-task detector's view, hung.go).
	kseq atomic.Uint64
	// rseq is the thread's restartable-sequence registration (rseq.go).
	rseq rseqState
	// rseqRestart is set by another thread's RSEQ membarrier: the
	// section this thread is in must abort (sys_membarrier.go).
	rseqRestart atomic.Bool

	dying   atomic.Bool   // the process is exiting: stop at the next chance
	leaving bool          // the thread called exit: takes no more process signals (under Proc.mu)
	stopped chan struct{} // closed when the goroutine has ended
}

func newThread(p *Process, tid int) *Thread {
	t := &Thread{TID: tid, Proc: p, sigWake: make(chan struct{}, 1), stopped: make(chan struct{})}
	t.intr = vfs.NewInterrupter(t.sigWake, t.noteWait)
	t.pending.q = &p.sigQ
	return t
}

// start runs the thread's goroutine.
func (t *Thread) start() { go t.run() }

// kill makes the thread stop at its next return to the kernel.
func (t *Thread) kill() {
	t.dying.Store(true)
	t.wake()
}

// wake interrupts a blocking system call or user-mode execution so the
// thread notices a signal or its death.
func (t *Thread) wake() {
	select {
	case t.sigWake <- struct{}{}:
	default:
	}
	t.intr.Interrupted()
	machine.Kick(&t.regs)
}

// run is the thread's goroutine.
func (t *Thread) run() {
	defer close(t.stopped)
	t.intr.Register()
	defer t.intr.Unregister()
	p := t.Proc
	kstart := cycles()
	// The mask a fork copied into regs (the loop below sets it only when
	// the affinity changes); 0 would mark a kernel goroutine.
	machine.SetThreadCPUs(cmp.Or(t.regs.Affinity, machine.AnyCPU))
	for {
		// Cleared before signals and stops are checked (unlocked): one
		// that arrives after the check kicks the thread out of RunUser.
		atomic.StoreUint64(&t.regs.Kick, 0)
		if t.dying.Load() {
			t.exitThread()
			return
		}
		// Each check below looks at one word first, so a system call
		// that left nothing to do pays no calls for them.
		if t.signalsReady() && !t.deliverSignals() {
			t.exitThread()
			return
		}
		if p.jobStopped.Load() && t.waitWhileStopped() {
			continue // stopped and continued: signals may be pending
		}
		if t.inSuspend { // no handler ran: the old mask comes back now
			t.setSigMask(t.suspendOld)
			t.inSuspend = false
		}
		if t.dying.Load() {
			t.exitThread()
			return
		}
		space := p.Space()
		if space == nil {
			t.exitThread()
			return
		}
		if t.rseq.reg.Addr != 0 && !t.rseqBeforeUser() {
			continue // SIGSEGV is pending (or the thread is dying)
		}
		if aff := t.affinity.Load(); aff != t.regs.Affinity {
			machine.SetThreadCPUs(cmp.Or(aff, machine.AnyCPU))
			t.regs.Affinity = aff
		}
		t.regs.Prio, t.regs.Slice = p.classPrio.Load(), p.classSlice.Load()
		var kick *time.Timer
		if p.cpuCounting.Load() != 0 {
			kick = t.cpuTimerKick()
		}
		t.restarting = 0 // no handler ran: the call is made again
		var err error
		if r := &t.regs; r.RIP+1<<47 >= 1<<48 {
			// Not canonical (a signal frame can set it): an
			// Intel CPU's IRETQ would fault in ring 0, after SWAPGS.
			// The program gets the #GP an AMD CPU raises in ring 3.
			r.Trap, r.ErrCode, r.Addr = 13, 0, 0
		} else {
			ustart := cycles()
			t.chargeSys(kstart, ustart)
			t.enterUser(ustart)
			err = machine.RunUser(r, space.Root())
			kstart = cycles()
			t.leaveUser(ustart, kstart)
		}
		if kick != nil {
			kick.Stop()
		}
		if err != nil {
			Log.Errorf("proc: %v: RunUser: %v", p, err)
			p.exitGroup(sigSEGV, t)
			t.exitThread()
			return
		}
		switch r := &t.regs; r.Trap {
		case machine.TrapSyscall:
			if t.syscall() {
				t.exitThread()
				return
			}
		case machine.TrapInterrupt:
			t.rseqEvent() // switched out or moved in user mode (or kicked)
		case machine.TrapPageFault:
			write := r.ErrCode&2 != 0
			exec := r.ErrCode&16 != 0
			t.cpu.faults.Add(1)
			thisCPUStat().faults.Add(1)
			if err := space.Fault(uintptr(r.Addr), write, exec); err != nil {
				if errors.Is(err, mm.ErrNoMem) {
					if outOfMemory(t) {
						p.exitGroup(sigKILL, t)
						t.exitThread()
						return
					}
					break // memory was made: fault again
				}
				if errors.Is(err, mm.ErrBus) {
					t.faultSignal(sigBUS, busAdrErr, r.Addr)
					break
				}
				code := int32(segvMapErr)
				if errors.Is(err, mm.ErrAccess) {
					code = segvAccErr
				}
				t.faultSignal(sigSEGV, code, r.Addr)
			}
		default:
			sig, code := sigSEGV, int32(siKernel)
			switch r.Trap {
			case 0:
				sig, code = sigFPE, fpeIntDiv
			case 16, 19:
				sig, code = sigFPE, 0
			case 6:
				sig, code = sigILL, illIllOpn
			case 1, 3:
				sig, code = sigTRAP, trapBrkpt
			case 17:
				sig, code = sigBUS, busAdrAln
			}
			t.faultSignal(sig, code, r.RIP)
		}
	}
}

// exitThread ends this thread: clear_child_tid, then leave the process.
func (t *Thread) exitThread() {
	p := t.Proc
	t.futexExit()
	t.clearChildTID()
	unregisterThread(t)
	p.threadExited(t, p.exitStatus())
}

// clearChildTID is CLONE_CHILD_CLEARTID's (set_tid_address's) work at
// the thread's end: zero the word and wake one waiter on it, while the
// memory is still the process's. The thread that ends a whole group
// does it before the memory goes (exitGroup): another process sharing
// it (CLONE_VM) may wait on the word, as Linux's mm_release serves.
func (t *Thread) clearChildTID() {
	if t.clearTID == 0 {
		return
	}
	if s := t.Proc.Space(); s != nil && s == t.clearSpace {
		var zero [4]byte
		if s.CopyOut(t.clearTID, zero[:]) == nil {
			futexWake(s, t.clearTID, 1, ^uint32(0), false)
		}
	}
	t.clearTID = 0
}

// exitStatus is the status the process exits with if this is its last
// thread and nothing set one.
func (p *Process) exitStatus() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status
}

// fatalSignal ends the whole process for a signal the program does not
// handle (wait status: the signal). The core bit (WCOREDUMP) stays clear:
// Linux sets it only when a core file was written, and none is here.
func (t *Thread) fatalSignal(sig int) {
	r := &t.regs
	status := sig
	// Init's death ends the machine, so it is an error (Linux's
	// "Attempted to kill init!"), told with what a core dump holds.
	level, dump := klog.Info, klog.Debug
	if t.Proc.PID == 1 {
		level, dump = klog.Error, klog.Error
	}
	Log.Logf(level, "proc: %v killed by signal %d at rip=%#x addr=%#x (trap %d)", t.Proc, sig, r.RIP, r.Addr, r.Trap)
	if coreSignal(sig) {
		// What a core dump would hold, in brief: the registers and the
		// top of the stack.
		Log.Logf(dump, "proc: %v tid %d: rax=%#x rbx=%#x rcx=%#x rdx=%#x rsi=%#x rdi=%#x rbp=%#x rsp=%#x r8=%#x r9=%#x r10=%#x r11=%#x r12=%#x r13=%#x r14=%#x r15=%#x fs=%#x",
			t.Proc, t.TID, r.RAX, r.RBX, r.RCX, r.RDX, r.RSI, r.RDI, r.RBP, r.RSP, r.R8, r.R9, r.R10, r.R11, r.R12, r.R13, r.R14, r.R15, r.FSBase)
		if s := t.Proc.Space(); s != nil {
			var b [64]byte
			if s.CopyIn(uintptr(r.RSP), b[:]) == nil {
				Log.Logf(dump, "proc: stack at %#x: % x", r.RSP, b[:])
			}
		}
	}
	t.Proc.exitGroup(status, t)
	t.kill()
}

func (t *Thread) String() string { return fmt.Sprintf("%v tid %d", t.Proc, t.TID) }
