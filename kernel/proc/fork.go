package proc

import (
	"encoding/binary"

	"shortbread/kernel/kmem"
	"shortbread/kernel/machine"
	"shortbread/kernel/vfs"
)

// clone flags (include/uapi/linux/sched.h).
const (
	cloneVM            = 0x00000100
	cloneFS            = 0x00000200
	cloneFiles         = 0x00000400
	cloneSighand       = 0x00000800
	clonePidfd         = 0x00001000
	clonePtrace        = 0x00002000
	cloneVfork         = 0x00004000
	cloneParent        = 0x00008000
	cloneThread        = 0x00010000
	cloneNewNS         = 0x00020000
	cloneSysvsem       = 0x00040000
	cloneSettls        = 0x00080000
	cloneParentSettid  = 0x00100000
	cloneChildCleartid = 0x00200000
	cloneDetached      = 0x00400000
	cloneChildSettid   = 0x01000000
	cloneNamespaces    = 0x7e020000 // CLONE_NEW* and friends: not supported
)

// clone3-only flags (include/uapi/linux/sched.h).
const (
	cloneClearSighand = 0x100000000 // the child's handlers start at SIG_DFL
	cloneIntoCgroup   = 0x200000000 // the child starts in cgroup args.cgroup
	cloneLegacyFlags  = 0xffffffff
	cloneSignalMask   = 0xff // CSIGNAL: clone's exit signal
)

// cloneArgs is what clone and clone3 ask for (struct clone_args).
type cloneArgs struct {
	flags      uint64
	stack      uint64 // the child's stack pointer; 0: the caller's
	pidfd      uint64 // where CLONE_PIDFD's descriptor goes
	ptid, ctid uint64 // CLONE_PARENT_SETTID's, CLONE_CHILD_SETTID's and CLONE_CHILD_CLEARTID's
	tls        uint64
	exitSignal int // sent to the parent at the child's exit; 0: none
	setTID     int // the child's ID (clone3's set_tid); 0: any
}

// cloneLegacy is clone(2)'s arguments: the exit signal in the flags'
// low byte, the pidfd through parent_tid.
func cloneLegacy(flags, newsp, ptid, ctid, tls uint64) cloneArgs {
	return cloneArgs{flags: flags &^ cloneSignalMask, stack: newsp, pidfd: ptid, ptid: ptid, ctid: ctid, tls: tls,
		exitSignal: int(flags & cloneSignalMask)}
}

// clone creates a thread (CLONE_THREAD) or a process. It returns the new
// TID/PID or a negative errno.
func (t *Thread) clone(args cloneArgs) int64 {
	p := t.Proc
	flags, newsp, ptid, ctid, tls := args.flags, args.stack, args.ptid, args.ctid, args.tls
	if flags&cloneNamespaces != 0 {
		return -eINVAL
	}
	// CLONE_PIDFD is not for a thread, nor (clone, where both go through
	// parent_tid) with CLONE_PARENT_SETTID writing the same place.
	if flags&clonePidfd != 0 && (flags&(cloneThread|cloneDetached) != 0 ||
		flags&cloneParentSettid != 0 && args.pidfd == ptid) {
		return -eINVAL
	}
	if flags&cloneThread != 0 && flags&(cloneVM|cloneSighand) != cloneVM|cloneSighand {
		return -eINVAL
	}
	if flags&cloneSighand != 0 && flags&cloneVM == 0 {
		return -eINVAL
	}
	space := p.Space()
	if space == nil {
		return -eINVAL
	}
	if e := t.checkNproc(); e != 0 {
		return e
	}
	if kmem.Refuse() { // no memory for another task
		return -eNOMEM
	}
	var watch *forkWatch
	if flags&cloneThread == 0 {
		watch = p.watchFork()
		defer p.unwatchFork(watch)
		if t.signalsReady() || p.jobStopped.Load() {
			// It came before the fork (a group's signal would not
			// reach the child): delivered first, or the stop taken,
			// then the fork again.
			return -eRESTARTNOINTR
		}
	}
	tid, e := claimPID(args.setTID)
	if e != 0 {
		return e
	}
	defer releasePID(tid)
	var child *Thread
	var cp *Process
	if flags&cloneThread != 0 {
		cp = p
		child = newThread(p, tid)
	} else {
		cp = newProcessWithPID(p, tid)
		cp.exitSignal = args.exitSignal
		p.mu.Lock()
		cp.fs, cp.stdin, cp.stdout, cp.stderr = p.fs, p.stdin, p.stdout, p.stderr
		cp.pgid, cp.sid, cp.ctty, cp.name = p.pgid, p.sid, p.ctty, p.name
		cp.cwd, cp.root, cp.umask = p.cwd, p.root, p.umask
		cp.cred = p.cred
		cp.persona = p.persona
		cp.sched = p.sched.forked()
		cp.setClassLocked(nil)
		cp.nonDumpable.Store(p.nonDumpable.Load())
		cp.thpDisable.Store(p.thpDisable.Load())
		cp.exe, cp.argv, cp.envp = p.exe, p.argv, p.envp
		if p.exe != nil && p.exeHold != nil {
			// The child runs the same file: it holds it too.
			cp.exeHold, _ = vfs.DenyWrite(p.exe)
		}
		cp.fsize.Store(p.fsize.Load())
		if p.limits != nil {
			l := *p.limits
			cp.limits = &l
			cp.armCPULimitLocked(0) // the child's CPU time starts at 0
		}
		// CLONE_FILES between processes is treated as a copy: posix_spawn
		// (the common user) wants the child's changes kept to itself.
		cp.files = p.files.Fork()
		if flags&cloneVM != 0 {
			cp.space.Store(p.space.Load().get())
		}
		p.mu.Unlock()
		if flags&cloneVM == 0 {
			s, err := space.Fork(machine.InitAddressSpace)
			if err != nil {
				dropProcess(cp)
				return errno(err)
			}
			cp.space.Store(newSpaceRef(s))
		}
		if flags&cloneSighand != 0 {
			cp.sig = p.sig
		} else {
			cp.sig = p.sig.clone()
			if flags&cloneClearSighand != 0 {
				cp.sig.resetForExec() // handlers to SIG_DFL; ignored stays ignored
			}
		}
		child = newThread(cp, tid)
	}
	child.regs = t.regs
	*child.regs.FPU() = *t.regs.FPU() // the image's place differs (UserRegs.FPU)
	child.regs.RAX = 0
	child.regs.Kick = 0
	child.regs.Preempts = 0 // the new thread's own count (Thread.switches)
	// A new process keeps the rseq registration (the area is at the same
	// address in its copy of the memory); a thread has none until it
	// registers its own.
	child.regs.CPU = 0
	if flags&cloneVM == 0 && t.rseq.reg.Addr != 0 {
		child.rseq = rseqState{reg: t.rseq.reg, resume: true}
	}
	child.affinity.Store(t.affinity.Load())
	child.comm.Store(t.comm.Load()) // PR_SET_NAME's name is copied, as Linux's dup_task_struct copies comm
	child.sigMask = t.sigMask
	child.nprocUID.Store(t.nprocUID.Load())
	child.noNewPrivs.Store(t.noNewPrivs.Load())
	child.securebits, child.mceKill = t.securebits, t.mceKill
	child.seccompFilter.Store(t.seccompFilter.Load())
	child.seccompMode.Store(t.seccompMode.Load())
	// The alternate signal stack is inherited, except by a thread that
	// shares the memory and gets its own stack (Linux clears it then).
	if flags&cloneVM == 0 || flags&cloneVfork != 0 {
		child.altStack = t.altStack
	}
	if newsp != 0 {
		child.regs.RSP = newsp
	}
	if flags&cloneSettls != 0 {
		child.regs.FSBase = tls
	}
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(tid))
	// The parent's and the child's copies of the new ID are written as
	// Linux writes them (kernel_clone's put_user, schedule_tail's):
	// a bad address loses the copy, not the clone.
	if flags&cloneParentSettid != 0 {
		space.CopyOut(uintptr(ptid), b[:])
	}
	if flags&clonePidfd != 0 {
		fd, err := t.newPidfd(cp, false)
		if err != nil {
			return errno(err)
		}
		binary.LittleEndian.PutUint32(b[:], uint32(fd))
		if err := space.CopyOut(uintptr(args.pidfd), b[:]); err != nil {
			t.Proc.files.Close(fd)
			return errno(err)
		}
		binary.LittleEndian.PutUint32(b[:], uint32(tid))
	}
	if flags&cloneChildSettid != 0 {
		cp.Space().CopyOut(uintptr(ctid), b[:])
	}
	if flags&cloneChildCleartid != 0 {
		child.clearTID, child.clearSpace = uintptr(ctid), cp.Space()
	}
	var vforkDone chan struct{}
	cp.mu.Lock()
	if cp == p && (p.exiting || p.execing != nil || p.job.stopped) {
		// The group is ending, or another thread is past exec's point
		// of no return, or the group is stopping: each has counted the
		// threads to kill or stop, and a thread added now would escape
		// the count (Linux's copy_process fails on the signal they leave
		// pending). A stop parks this thread; the clone is made again
		// once the group continues.
		cp.mu.Unlock()
		return -eRESTARTNOINTR
	}
	if flags&cloneVfork != 0 {
		vforkDone = make(chan struct{})
		cp.vforkDone = vforkDone
	}
	cp.threads[tid] = child
	cp.mu.Unlock()
	if cp != p {
		groupSendMu.Lock()
		publishProcess(cp)
		p.mu.Lock()
		p.children[cp.PID] = cp
		late := watch.sigs
		watch.sigs = nil
		// A fatal signal that reached the parent during the fork ends
		// the child too (Linux's copy_process gives up on one).
		if t.dying.Load() || (t.pending.unlocked()|p.pending.unlocked())&bit(sigKILL) != 0 {
			late = append(late, sigInfo{signo: sigKILL, code: siKernel})
		}
		p.mu.Unlock()
		groupSendMu.Unlock()
		for _, info := range late {
			if !cp.shielded(info.signo) {
				cp.sendSignal(info)
			}
		}
	}
	registerThread(child)
	child.start()
	if vforkDone != nil {
		// The parent sleeps until the child execs or exits. Signals wait
		// (as in Linux), but not the parent's own death: a killed
		// process must be able to finish.
		t.waitBegin()
		defer t.sleepEnd()
		for done := false; !done; {
			select {
			case <-vforkDone:
				done = true
			case <-t.sigWake:
				if t.dying.Load() {
					done = true
				}
			}
		}
	}
	return int64(tid)
}

// newProcessWithPID makes clone's new process. It is not in the process
// table yet: clone publishes it (publishProcess) once it is whole, so
// that nothing finds it half made (a /proc read of its status found no
// signal handlers), and a clone that fails on the way leaves no trace.
// Its PID stays claimed meanwhile (claimPID).
func newProcessWithPID(parent *Process, pid int) *Process {
	p := &Process{
		PID:      pid,
		parent:   parent,
		children: make(map[int]*Process),
		threads:  make(map[int]*Thread),
		changed:  make(chan struct{}),
		done:     make(chan struct{}),
		start:    monotonicNow(),
		// SIGCHLD unless clone says otherwise.
		exitSignal: sigCHLD,
	}
	p.pending.q = &p.sigQ
	p.fsize.Store(rlimInfinity)
	return p
}

// publishProcess puts a process clone has finished making in the table.
func publishProcess(p *Process) {
	tableMu.Lock()
	table[p.PID] = p
	tableRoom = max(tableRoom, len(table))
	tableMu.Unlock()
}

func dropProcess(p *Process) {
	tableMu.Lock()
	dropPID(p.PID)
	tableMu.Unlock()
}

// Threads by TID, for tgkill and tkill.
var (
	tidMu = &tableMu
	tids  = map[int]*Thread{}
	// threadsPeak is the most entries tids has had (see Stats);
	// tidsRoom the most since it was last compacted.
	threadsPeak, tidsRoom int
)

func registerThread(t *Thread) {
	tidMu.Lock()
	tids[t.TID] = t
	threadsPeak = max(threadsPeak, len(tids))
	tidsRoom = max(tidsRoom, len(tids))
	tidMu.Unlock()
}

func unregisterThread(t *Thread) {
	tidMu.Lock()
	// Only t's own entry: a reap may have dropped it already (dropThreads)
	// and a new thread may hold the TID by now.
	if tids[t.TID] == t {
		delete(tids, t.TID)
	}
	tids = compacted(tids, &tidsRoom)
	tidMu.Unlock()
}

// compacted returns m, or a copy of m sized for what it holds now once
// three quarters of the room it reached (*room, the most entries since
// the last copy) stand empty. Go's maps keep the room they grew to, and
// the task tables can grow to thousands in a burst of clones and fall
// back to a handful: without this, the peak's buckets would stay.
func compacted[K comparable, V any](m map[K]V, room *int) map[K]V {
	if *room < 256 || 4*len(m) > *room {
		return m
	}
	c := make(map[K]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	*room = len(m)
	return c
}

// dropPID removes pid from the process table. Preconditions: tableMu is
// held.
func dropPID(pid int) {
	delete(table, pid)
	table = compacted(table, &tableRoom)
}

func lookupThread(tid int) *Thread {
	tidMu.Lock()
	defer tidMu.Unlock()
	return tids[tid]
}

// RLIMIT_NPROC counts tasks (threads included) by real user ID, as
// Linux 6.1's ucounts do. Linux keeps credentials per task: a raw set*uid
// moves only the calling thread to the new user's count (the C
// libraries move each thread in turn), and a new task is counted under
// its creator's real user ID. Credentials here are per process, so each
// thread remembers the real user ID it is counted under (nprocUID),
// changed only by its own set*uid, and the counts follow Linux's.

// checkNproc applies RLIMIT_NPROC before a clone: the new task would be
// one more than the limit allows for the caller's user (Linux's
// is_ucounts_overlimit after copy_creds counted it); root's tasks and a
// privileged caller (CAP_SYS_RESOURCE, CAP_SYS_ADMIN) are exempt.
// EAGAIN otherwise.
func (t *Thread) checkNproc() int64 {
	p := t.Proc
	p.mu.Lock()
	c := p.cred
	limit := p.rlimits()[rlimitNproc].cur
	p.mu.Unlock()
	uid := t.nprocUID.Load()
	if limit == rlimInfinity || uid == 0 || c.privileged() {
		return 0
	}
	if userTasks(uid) >= limit {
		return -eAGAIN
	}
	return 0
}

// userTasks is the number of live tasks counted under real user ID uid,
// what RLIMIT_NPROC limits.
func userTasks(uid uint32) uint64 {
	n := uint64(0)
	for _, u := range allThreads() {
		if u.nprocUID.Load() == uid {
			n++
		}
	}
	return n
}

// flagNproc follows a successful set*uid, as Linux's
// flag_nproc_exceeded: if the thread's real user ID changed, set*uid
// does not fail when the new user already runs more tasks than
// RLIMIT_NPROC allows (programs that drop root seldom check), it marks
// the thread, and its next execve fails with EAGAIN while the user is
// still over the limit (checkExecNproc). The count is taken before the
// thread moves to its new user; root is never marked.
func (t *Thread) flagNproc() {
	p := t.Proc
	p.mu.Lock()
	uid := p.cred.ruid
	limit := p.rlimits()[rlimitNproc].cur
	p.mu.Unlock()
	if uid == t.nprocUID.Load() {
		return
	}
	t.nprocExceeded = uid != 0 && limit != rlimInfinity && userTasks(uid) > limit
	t.nprocUID.Store(uid)
}

// checkExecNproc is execve's first check: EAGAIN for a thread marked
// by flagNproc while its user runs more tasks than RLIMIT_NPROC; the
// mark goes once the user is within the limit.
func (t *Thread) checkExecNproc() int64 {
	if !t.nprocExceeded {
		return 0
	}
	p := t.Proc
	p.mu.Lock()
	limit := p.rlimits()[rlimitNproc].cur
	p.mu.Unlock()
	if limit != rlimInfinity && userTasks(t.nprocUID.Load()) > limit {
		return -eAGAIN
	}
	t.nprocExceeded = false
	return 0
}

// allThreads lists the live threads.
func allThreads() []*Thread {
	tidMu.Lock()
	defer tidMu.Unlock()
	out := make([]*Thread, 0, len(tids))
	for _, t := range tids {
		out = append(out, t)
	}
	return out
}

// Stats are the process layer's object counts (/proc/shortbread/kmem).
type Stats struct {
	Processes, Threads, FutexWaiters int
	// ThreadsPeak is the most threads there have been at once: the
	// runtime keeps a goroutine record (and the thread table its
	// buckets) for each at that high-water mark.
	ThreadsPeak int
}

// ReadStats returns the counts now.
func ReadStats() Stats {
	tableMu.Lock() // tidMu too
	s := Stats{Processes: len(table), Threads: len(tids), ThreadsPeak: threadsPeak}
	tableMu.Unlock()
	futexes.mu.Lock()
	for _, ws := range futexes.q {
		s.FutexWaiters += len(ws)
	}
	futexes.mu.Unlock()
	return s
}
