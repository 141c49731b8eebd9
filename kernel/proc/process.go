// Package proc runs user programs: processes, their threads (one kernel
// goroutine per user thread, entering user mode through the machine
// layer), exec of static ELF programs, fork and clone, wait, signals,
// futexes, and the system calls that reach them.
//
// Lock order: tableMu, then Process.mu (a parent's before its child's),
// then the futex table's lock, then an address space's lock (package mm).
package proc

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"unsafe"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/ipc/sysv"
	"shortbread/kernel/kmem"
	"shortbread/kernel/machine"
	"shortbread/kernel/mm"
	"shortbread/kernel/tty"
	"shortbread/kernel/vfs"
)

// Frames is physical memory as package mm needs it, from the machine
// layer's frame allocator and direct map: user memory, page tables and
// tmpfs data.
type Frames struct{}

// Alloc returns a frame, or 0 once free memory is down to the kernel's
// reserve, which the machine layer's allocator keeps back from user
// memory (see machine.AllocFrame): the Go heap grows from the same
// frames and the runtime cannot fail an allocation, so user memory and
// tmpfs files run out first, as ENOMEM, ENOSPC or an OOM kill, while
// the kernel still has room to work (Linux keeps min_free_kbytes back
// from user allocations for the same reason).
func (Frames) Alloc() uintptr { return machine.AllocFrame(userReserve()) }

// userReserve is the frames user memory leaves to the kernel.
var userReserve = sync.OnceValue(func() uint64 { return kmem.Reserve(machine.ReadMemStats().TotalFrames) })

func (Frames) Free(pa uintptr) { machine.FreeFrame(pa) }

// Available returns how many frames Alloc can still hand out: the free
// ones less the kernel's reserve.
func (Frames) Available() uint64 {
	free := machine.ReadMemStats().FreeFrames
	return free - min(free, userReserve())
}

// FileFrames is Frames for file data in memory (tmpfs, memfd): it stops
// at twice the kernel's reserve, above the mark where the kernel starts
// refusing new objects (kmem.Low, at one and a half), so that a full
// tmpfs (ENOSPC) leaves the kernel able to open files and make pipes.
// Program memory goes on down to the reserve, and then the OOM killer,
// which can free it; nothing frees a full tmpfs but its owner.
type FileFrames struct{ Frames }

// Alloc asks the page cache for frames when none is free: a full tmpfs
// must not be ENOSPC while clean cached pages could go.
func (FileFrames) Alloc() uintptr {
	if pa := machine.AllocFrame(2 * userReserve()); pa != 0 {
		return pa
	}
	if kmem.Reclaim(64) == 0 {
		return 0
	}
	return machine.AllocFrame(2 * userReserve())
}

// Available returns how many frames Alloc can still hand out.
func (FileFrames) Available() uint64 {
	free := machine.ReadMemStats().FreeFrames
	return free - min(free, 2*userReserve())
}

func (Frames) Page(pa uintptr) *[mm.PageSize]byte {
	return (*[mm.PageSize]byte)(machine.PhysPointer(pa))
}

// DirectMap makes Frames an mm.DirectPhys: every frame is in the
// machine's direct map, at its physical address from PhysPointer(0).
func (Frames) DirectMap() unsafe.Pointer { return machine.PhysPointer(0) }

func newSpace() (*mm.Space, error) {
	r := machine.KernelReserved()
	return mm.NewSpace(Frames{}, machine.InitAddressSpace, r[:],
		mm.TLB{Flush: machine.FlushSpaceTLB, FlushRange: machine.FlushSpaceRange, FlushOthers: machine.FlushOtherTLBs, Release: machine.ReleaseAddressSpace})
}

// FS is where exec finds programs.
type FS interface {
	// ReadFile returns the contents of a regular file.
	ReadFile(path string) ([]byte, error)
}

// Process states.
const (
	procRunning = iota
	procZombie  // exited, waiting for its parent to collect the status
	procReaped
)

// Process is a thread group: an address space, signal handlers and the
// threads that share them.
type Process struct {
	PID int

	mu       sync.Mutex
	parent   *Process
	children map[int]*Process
	pgid     int
	sid      int
	ctty     *tty.TTY // controlling terminal (terminal.go); valid while it is sid's
	// space changes under mu (exec, exit) but is read without it: every
	// return to user mode looks it up.
	space   atomic.Pointer[spaceRef]
	fs      FS
	stdin   any // an io.Reader
	stdout  io.Writer
	stderr  io.Writer
	threads map[int]*Thread
	// sigTarget is the thread signalTargetLocked picked last (under mu).
	sigTarget int
	state     int
	exiting   bool
	// execing is the thread past exec's point of no return, killing the
	// others (deThread) until the new image is in: a second exec, an
	// exit_group and a new thread then give way to it.
	execing *Thread
	// forks are the processes being forked by p's threads (see
	// forkWatch).
	forks   []*forkWatch
	status  int           // wait status once a zombie
	changed chan struct{} // closed and replaced when a child changes state
	done    chan struct{} // closed when the process has exited
	exitQ   vfs.Queue     // notified when done closes (pidfd pollers)
	sigQ    vfs.Queue     // notified when a signal becomes pending (signalfd)
	sig     *sigHandlers  // shared with CLONE_SIGHAND children
	// files is set before the process's first thread runs and never
	// replaced (exec and exit close descriptors in it), so its threads
	// read it without mu.
	files   *vfs.FDTable
	cwd     *vfs.Dentry
	root    *vfs.Dentry           // chroot(2); nil: the tree's root
	ptimers map[int32]*posixTimer // timer_create(2); protected by mu
	// cpuWatches count this process's or its threads' CPU time down for
	// timers and sleeps on CPU-time clocks (cputimer.go); protected by
	// mu. The countWatches bit of cpuCounting says there are any.
	cpuWatches  []*cpuWatch
	nextTimerID int32 // protected by mu
	umask       uint32
	limits      *[rlimNlimits]rlimit // nil until first read: the defaults
	pending     pendingSet           // process-directed signals
	name        string
	vforkDone   chan struct{} // closed when a vfork child execs or exits
	alarm       realTimer     // ITIMER_REAL
	// fsize is RLIMIT_FSIZE's soft value, a copy of limits' kept for
	// writes, which read it without mu; written under mu.
	fsize atomic.Uint64
	// CPU time (cputime.go): ITIMER_VIRTUAL and ITIMER_PROF, and usage.
	cpuTimers [2]cpuTimer
	// cpuLimitLeft is the CPU time (ns) until RLIMIT_CPU's next event
	// (its soft limit, then each second after); 0: no limit. Protected
	// by mu.
	cpuLimitLeft int64
	// cpuCounting says what counts the process's CPU time down
	// (countTimers, countWatches): the accounting loads this one word
	// per charge. Changed under mu.
	cpuCounting atomic.Uint32
	// niced says the nice value is above 0: the process's user time
	// goes to /proc/stat's nice column (setClassLocked).
	niced atomic.Bool
	// timerUser and timerSys are the user and system cycles charged to
	// the timers so far (cpuTimersTick); protected by mu.
	timerUser, timerSys int64
	// semUndo is the process's SEM_UNDO adjustments, applied at exit;
	// nil until its first semop. Protected by mu.
	semUndo     *sysv.Undo
	usage       processUsage
	maxRSS      int64 // KiB, largest resident size seen
	cred        creds
	sched       schedAttrs // nice, policy, I/O priority (sys_sched.go)
	persona     uint32     // personality(2); protected by mu
	membarriers uint32     // membarrier(2) registrations (sys_membarrier.go); protected by mu
	pdeathsig   int        // sent to this process when its parent exits
	// exitSignal is what the parent is sent when this process ends
	// (clone's CSIGNAL byte, clone3's exit_signal; 0: nothing). A child
	// with another signal than SIGCHLD is a "clone" child: a wait sees
	// it only with __WCLONE or __WALL. Protected by mu.
	exitSignal int
	job        jobState
	jobStopped atomic.Bool // job.stopped, for the unlocked check on the way to user mode
	execed     bool        // has called execve (setpgid by the parent: EACCES)
	// nonDumpable is Linux's "dumpable" flag of the address space, inverted
	// (the zero value is an ordinary process): set when the process's
	// effective or file-system IDs change or it runs a set-user-ID
	// program, cleared by exec of an ordinary one or PR_SET_DUMPABLE. A
	// non-dumpable process's /proc entries belong to root and only root
	// may inspect it, so a program that dropped privileges cannot have
	// what it held as root read by the user it became.
	nonDumpable atomic.Bool
	// thpDisable is PR_SET_THP_DISABLE's flag, kept and reported.
	thpDisable atomic.Bool
	// classPrio and classSlice are sched as the machine layer takes it
	// (machine.UserRegs' Prio and Slice), read at each RunUser without
	// mu; written by setClassLocked.
	classPrio, classSlice atomic.Uint64
	// subreaper is PR_SET_CHILD_SUBREAPER's: orphans below this process
	// come to it rather than to init. Protected by mu.
	subreaper bool
	finishing bool // finish has begun (it runs once)
	// What /proc shows of the program: its file, arguments, environment,
	// and when the process started (ns since boot).
	exe        *vfs.Dentry
	exeHold    func() // ends exe's text-busy hold (vfs.DenyWrite)
	argv, envp []string
	start      int64
}

// spaceRef counts the processes sharing an address space (CLONE_VM).
type spaceRef struct {
	s    *mm.Space
	refs atomic.Int32
}

func newSpaceRef(s *mm.Space) *spaceRef {
	r := &spaceRef{s: s}
	r.refs.Store(1)
	return r
}

func (r *spaceRef) get() *spaceRef { r.refs.Add(1); return r }

func (r *spaceRef) put() {
	if r.refs.Add(-1) == 0 {
		r.s.Destroy()
	}
}

// Space returns the process's address space (nil once it has exited).
func (p *Process) Space() *mm.Space {
	r := p.space.Load()
	if r == nil {
		return nil
	}
	return r.s
}

var (
	tableMu sync.Mutex
	table   = map[int]*Process{}
	// tableRoom is the most entries table has had since it was last
	// compacted (see compacted).
	tableRoom int
	lastPID   atomic.Int64
	// claimed holds the IDs handed out but not yet in table or tids
	// (a clone between claimPID and registering its task). Protected
	// by tableMu.
	claimed = map[int]bool{}
)

// maxPID bounds the IDs clone3's set_tid may ask for: Linux's
// PID_MAX_LIMIT on 64-bit machines.
const maxPID = 4 << 20

// claimPID hands out a process or thread ID: want (clone3's set_tid)
// if it is free, else EEXIST; with want 0 the next one after the last
// handed out that is free. release gives the claim up once the task is
// registered (or was never made).
func claimPID(want int) (id int, e int64) {
	tableMu.Lock()
	defer tableMu.Unlock()
	used := func(n int) bool { return table[n] != nil || tids[n] != nil || claimed[n] }
	if want != 0 {
		if used(want) {
			return 0, -eEXIST
		}
		claimed[want] = true
		return want, 0
	}
	for {
		if n := int(lastPID.Add(1)); !used(n) {
			claimed[n] = true
			return n, 0
		}
	}
}

// releasePID ends claimPID's claim on id.
func releasePID(id int) {
	tableMu.Lock()
	delete(claimed, id)
	tableMu.Unlock()
}

func lookup(pid int) *Process {
	tableMu.Lock()
	defer tableMu.Unlock()
	return table[pid]
}

// Options configure a process started by the kernel.
type Options struct {
	FS FS
	// Files are the first descriptors (0, 1, 2, ...) when the VFS is in
	// use; otherwise Stdin/Stdout/Stderr are wrapped into open files.
	Files []*vfs.OpenFile
	// Stdin is an io.Reader.
	Stdin  any
	Stdout io.Writer
	Stderr io.Writer
	// CTTY, if set, becomes the process's controlling terminal, with
	// the process (a session leader) in the foreground.
	CTTY *tty.TTY
}

// Start runs path with argv and envp in a new process with no parent
// process (the kernel collects it with Wait).
//
// Like clone, it publishes the process in the table only once it is
// whole: a /proc reader that found it earlier read p.files and the
// signal handlers while they were being set, without p.mu.
func Start(o Options, path string, argv, envp []string) (*Process, error) {
	pid, _ := claimPID(0) // without a wanted PID it cannot fail
	defer releasePID(pid)
	p := newProcessWithPID(nil, pid)
	p.pgid, p.sid = p.PID, p.PID
	p.fs, p.stdin, p.stdout, p.stderr = o.FS, o.Stdin, o.Stdout, o.Stderr
	p.sig = newSigHandlers()
	p.umask = 0o022
	p.files = vfs.NewFDTable(vfs.DefaultNOFILE)
	if o.CTTY != nil && o.CTTY.Control(p.sid, p.pgid, true) {
		p.ctty = o.CTTY
	}
	files := o.Files
	if files == nil {
		var in *vfs.OpenFile
		if fsys != nil {
			in, _ = fsys.Open(&vfs.Ctx{}, nil, "/dev/null", linux.O_RDONLY, 0)
		}
		files = []*vfs.OpenFile{in, writerOrNil(o.Stdout), writerOrNil(o.Stderr)}
	}
	for fd, f := range files {
		if f != nil {
			p.files.InstallAt(fd, f, false)
		}
	}
	t := newThread(p, p.PID)
	if err := t.exec(execPath(path), argv, envp); err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.threads[t.TID] = t
	p.mu.Unlock()
	publishProcess(p)
	registerThread(t)
	t.start()
	return p, nil
}

// Wait blocks until a process started with Start has exited and returns
// its wait status.
func (p *Process) Wait() int {
	<-p.done
	p.mu.Lock()
	p.state = procReaped
	left := p.threadsLocked()
	status := p.status
	p.mu.Unlock()
	tableMu.Lock()
	dropPID(p.PID)
	tableMu.Unlock()
	dropThreads(left)
	return status
}

// ExitCode decodes a wait status: the exit code, or 128+signal.
func ExitCode(status int) int {
	if status&0x7f != 0 {
		return 128 + status&0x7f
	}
	return status >> 8 & 0xff
}

// notifyLocked wakes waiters on p's children changing state.
func (p *Process) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// exitGroup ends every thread of the process with a wait status. The
// calling thread (if any) ends itself after this returns.
func (p *Process) exitGroup(status int, self *Thread) {
	p.mu.Lock()
	if p.exiting {
		p.mu.Unlock()
		return
	}
	if x := p.execing; x != nil && x != self && status&0x7f == 0 {
		// exit_group while another thread execs: the exec wins and only
		// the caller ends, as in Linux's do_group_exit. A fatal signal
		// (a status with a signal) ends the group, the exec with it:
		// the exec's wait for the other threads gives way when its own
		// thread is killed (deThread).
		p.mu.Unlock()
		return
	}
	p.exiting = true
	p.status = status
	p.mu.Unlock()
	p.stopOthers(self)
	if self != nil {
		// Its robust futexes and clear_child_tid need the memory
		// finish releases.
		self.futexExit()
		self.clearChildTID()
	}
	p.finish()
}

// stopOthers ends every thread of p but self and waits until they have.
// The group is exiting: no thread is added meanwhile (clone refuses).
func (p *Process) stopOthers(self *Thread) {
	p.mu.Lock()
	others := p.othersLocked(self)
	p.mu.Unlock()
	for _, t := range others {
		t.kill()
	}
	for _, t := range others {
		<-t.stopped
	}
}

func (p *Process) othersLocked(self *Thread) []*Thread {
	var others []*Thread
	for _, t := range p.threads {
		if t != self {
			others = append(others, t)
		}
	}
	return others
}

// deThread is exec's point of no return for the other threads (Linux's
// de_thread): they are killed and waited for, and t is left alone with
// p.execing set until the exec commits. It gives way, and the exec
// fails with this thread killed, when the group is already exiting or
// another thread execs (either kills t), and while it waits when t is
// killed (a fatal signal taken by another thread ends the group; that
// thread waits for t). Waiting for the others unconditionally, two
// threads in exec, or one in exec and one in exitGroup, would wait for
// each other for ever.
func (p *Process) deThread(t *Thread) error {
	p.mu.Lock()
	if p.exiting || p.execing != nil || t.dying.Load() {
		p.mu.Unlock()
		t.dying.Store(true)
		return linux.EAGAIN
	}
	p.execing = t
	others := p.othersLocked(t)
	p.mu.Unlock()
	for _, o := range others {
		o.kill()
	}
	woken := false
	defer func() {
		if woken { // the wake-ups taken here are the run loop's to see
			t.wake()
		}
	}()
	for _, o := range others {
		for stopped := false; !stopped; {
			select {
			case <-o.stopped:
				stopped = true
			case <-t.sigWake:
				woken = true
				if t.dying.Load() {
					p.mu.Lock()
					p.execing = nil
					p.mu.Unlock()
					return linux.EAGAIN
				}
			}
		}
	}
	return nil
}

// becomeLeader gives a thread that execs, the only one left (deThread),
// the process's ID as its thread ID, as Linux's de_thread takes over
// the leader's: the new program starts as a process whose one thread's
// TID is its PID (the C library's caches and tgkill(getpid(), gettid())
// rely on it), and the thread's old TID is free again.
func (t *Thread) becomeLeader() {
	p := t.Proc
	if t.TID == p.PID {
		return
	}
	tableMu.Lock() // tidMu; taken before p.mu, as groupInSession does
	p.mu.Lock()
	old := t.TID
	delete(p.threads, old)
	t.TID = p.PID
	p.threads[p.PID] = t
	p.mu.Unlock()
	if tids[old] == t {
		delete(tids, old)
	}
	tids[p.PID] = t
	tableMu.Unlock()
}

// threadExited removes a thread; the last one out finishes the process.
func (p *Process) threadExited(t *Thread, status int) {
	p.mu.Lock()
	delete(p.threads, t.TID)
	p.threadGoneLocked(t)
	last := len(p.threads) == 0
	if last && !p.exiting {
		p.exiting = true
		p.status = status
	}
	// A thread that ends during a stop no longer holds it up; the last
	// one out reports no stop, but its exit.
	stopDone := !last && t.parkedLocked()
	sig := p.job.stopSig
	// Process signals still pending may have been waiting for this
	// thread: another that takes them is woken.
	var buf [4]*Thread
	handoff := buf[:0]
	if !last {
		handoff = p.retargetLocked(p.pending.mask, t, handoff)
	}
	p.mu.Unlock()
	for _, w := range handoff {
		w.wake()
	}
	if stopDone {
		p.notifyParent(cldStopped, sig)
	}
	if last {
		p.finish()
	}
}

// reaper is who adopts p's orphans (Linux's find_new_reaper): the
// nearest ancestor that made itself a child subreaper and is not exiting,
// else init.
func (p *Process) reaper() *Process {
	p.mu.Lock()
	a := p.parent
	p.mu.Unlock()
	for a != nil {
		a.mu.Lock()
		found := a.subreaper && a.state == procRunning && !a.finishing
		next := a.parent
		a.mu.Unlock()
		if found {
			return a
		}
		a = next
	}
	return lookup(1)
}

// finish releases the process's resources, hands its children to their
// reaper (or reaps them), and turns it into a zombie for its parent.
func (p *Process) finish() {
	p.mu.Lock()
	if p.state != procRunning || p.finishing {
		p.mu.Unlock()
		return
	}
	p.finishing = true
	if p.exeHold != nil {
		p.exeHold()
		p.exeHold = nil
	}
	space := p.space.Swap(nil)
	if space != nil {
		p.maxRSS = max(p.maxRSS, int64(space.s.ResidentPages())*4)
	}
	if p.vforkDone != nil {
		close(p.vforkDone)
		p.vforkDone = nil
	}
	if p.alarm.timer != nil {
		p.alarm.timer.Stop()
		p.alarm = realTimer{gen: p.alarm.gen + 1}
	}
	ptimers := p.ptimers
	p.ptimers = nil
	undo := p.semUndo
	p.semUndo = nil
	orphans := p.children
	p.children = map[int]*Process{}
	p.mu.Unlock()
	if space != nil {
		space.put()
	}
	for _, pt := range ptimers {
		pt.stop()
	}
	sysvSem.Exit(undo, p.PID)
	if p.files != nil {
		p.files.CloseAll()
	}
	p.dropCTTY()
	for _, c := range orphans {
		c.reparent(p)
	}
	target, ignoring := p.becomeZombie()
	p.exitQ.Notify()
	if target != nil {
		target.wake()
	}
	if ignoring {
		p.reap()
	}
}

// reparent hands c, a child of the exiting p, to its reaper, as
// Linux's forget_original_parent does under tasklist_lock: c's new
// parent, its place in the reaper's children and, for a zombie, the
// SIGCHLD that says so change in one step under the reaper's lock and
// then c's (becomeZombie's order). A SIGCHLD handler's wait then always
// finds the child its signal names, and a reaper that ignores SIGCHLD
// reaps an adopted zombie at once. A subreaper found exiting under its
// lock is passed over (p.reaper skips it from then on): a child put in
// the children of one that has begun to finish would never be reaped.
// PR_SET_PDEATHSIG's signal comes last, so its handler's getppid sees
// the new parent.
func (c *Process) reparent(p *Process) {
	var info sigInfo
	haveInfo := false
	for {
		r := p.reaper()
		if r == nil || r == p {
			c.orphanNoReaper(p)
			return
		}
		r.mu.Lock()
		if r.finishing || r.state != procRunning {
			r.mu.Unlock()
			if r.PID != 1 {
				continue
			}
			c.orphanNoReaper(p) // init itself is ending
			return
		}
		c.mu.Lock()
		if c.parent != p {
			// Reaped by itself meanwhile (p ignored SIGCHLD):
			// becomeZombie left it no parent.
			c.mu.Unlock()
			r.mu.Unlock()
			return
		}
		zombie := c.state == procZombie
		if zombie && !haveInfo {
			// Its exit information is read under c.mu alone
			// (childInfo); a zombie stays one, as only its parent,
			// p, could reap it and p's threads are gone.
			c.mu.Unlock()
			r.mu.Unlock()
			info, haveInfo = c.childInfo(), true
			continue
		}
		c.parent = r
		c.exitSignal = sigCHLD // as Linux's reparent_leader: the new parent waits with no flags
		sig, running := c.pdeathsig, c.state == procRunning
		c.mu.Unlock()
		var target *Thread
		ignoring := false
		if zombie {
			info.signo = sigCHLD
			if ignoring = r.sig.ignoresChildren(); !ignoring {
				target, _ = r.queueLocked(info)
			}
		}
		if !ignoring {
			r.children[c.PID] = c
		}
		r.notifyLocked()
		r.mu.Unlock()
		if target != nil {
			target.wake()
		}
		if ignoring {
			c.reap()
		}
		if sig != 0 && running {
			c.signal(sig)
		}
		return
	}
}

// orphanNoReaper leaves c, a child of the exiting p, without a parent
// (no init to adopt it): a zombie is reaped at once.
func (c *Process) orphanNoReaper(p *Process) {
	c.mu.Lock()
	if c.parent != p { // reaped by itself meanwhile (becomeZombie)
		c.mu.Unlock()
		return
	}
	c.parent = nil
	var left []*Thread
	if c.state == procZombie {
		c.state = procReaped
		left = c.threadsLocked()
		tableMu.Lock()
		dropPID(c.PID)
		tableMu.Unlock()
	}
	sig, running := c.pdeathsig, c.state == procRunning
	c.mu.Unlock()
	dropThreads(left)
	if sig != 0 && running {
		c.signal(sig)
	}
}

// becomeZombie makes p a zombie and queues its SIGCHLD in one step under
// the parent's lock, which a wait holds while it looks at the children,
// as Linux's exit_notify does both under tasklist_lock: a wait that
// reaps the zombie finds the SIGCHLD already pending (a parent that
// reaps and then reads a signalfd, or installs a handler, must not get
// it late or miss it), and a SIGCHLD handler's wait finds the zombie.
// It comes after the files are closed, as Linux's exit_files comes
// before exit_notify: a parent that reaps may count on the pipe ends it
// held being gone (EOF, EPOLLHUP). A parent that ignores SIGCHLD (or set
// SA_NOCLDWAIT) keeps no zombie: ignoring says the caller reaps.
//
// done (a pidfd's readiness) closes in the same step: a parent that
// reaped the zombie finds its pidfd readable.
func (p *Process) becomeZombie() (target *Thread, ignoring bool) {
	info := p.childInfo()
	for {
		p.mu.Lock()
		parent := p.parent
		if parent == nil {
			p.state = procZombie
			close(p.done)
			p.mu.Unlock()
			return nil, false
		}
		p.mu.Unlock()
		parent.mu.Lock()
		p.mu.Lock()
		if p.parent != parent {
			// Reparented meanwhile (the parent exited).
			p.mu.Unlock()
			parent.mu.Unlock()
			continue
		}
		p.state = procZombie
		close(p.done)
		info.signo = p.exitSignal // a reparent made it SIGCHLD
		// Only SIGCHLD ignored reaps by itself (Linux's autoreap); an
		// exit signal of 0 leaves a zombie and sends nothing. A zombie
		// the caller reaps is nobody's child from here: the parent, if
		// it is exiting too, still has it in the list it hands to its
		// reaper, which must pass it over (reparent).
		ignoring = info.signo == sigCHLD && parent.sig.ignoresChildren()
		if ignoring {
			p.parent = nil
		}
		p.mu.Unlock()
		switch {
		case ignoring:
			delete(parent.children, p.PID)
		case info.signo > 0 && info.signo <= 64:
			target, _ = parent.queueLocked(info)
		}
		parent.notifyLocked()
		parent.mu.Unlock()
		return target, ignoring
	}
}

// childInfo is the SIGCHLD siginfo for p's exit.
func (p *Process) childInfo() sigInfo {
	self, _ := p.selfTimes() // with the exiting thread's, as addChildUsage
	p.mu.Lock()
	defer p.mu.Unlock()
	info := sigInfo{signo: p.exitSignal, pid: int32(p.PID), uid: p.cred.ruid}
	info.code, info.status = exitCode(p.status)
	info.value, info.stime = ticks(self.user), ticks(self.sys)
	return info
}

func writerOrNil(w io.Writer) *vfs.OpenFile {
	if w == nil {
		return nil
	}
	return WriterFile(w)
}

func (p *Process) String() string { return fmt.Sprintf("pid %d (%s)", p.PID, p.name) }
