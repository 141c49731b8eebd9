package proc

// The per-process part of /proc: /proc/<pid>/ with stat, status, maps,
// cmdline, environ, comm, the exe, cwd and root links, fd/ and task/<tid>/,
// and the /proc/self and /proc/thread-self links. Formats follow Linux's
// Documentation/filesystems/proc.rst, fields Shortbread does not keep
// (major faults, code and data bounds, wchan...) read 0.

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"shortbread/kernel/abi/linux"
	"shortbread/kernel/fs/procfs"
	"shortbread/kernel/machine"
	"shortbread/kernel/mm"
	"shortbread/kernel/numa"
	"shortbread/kernel/vfs"
)

// AddProcDirs makes fs serve the process directories.
func AddProcDirs(fs *procfs.FS) {
	fs.SetRootDyn(procfs.Dyn{
		List: func() []string {
			names := []string{"self", "thread-self"}
			for _, pid := range livePIDs() {
				names = append(names, strconv.Itoa(pid))
			}
			return names
		},
		Lookup: func(name string) vfs.Inode {
			switch name {
			case "self":
				return fs.Link(procIno("self"), func(c *vfs.Ctx) (string, error) {
					if c == nil || c.PID == 0 {
						return "", linux.ENOENT
					}
					return strconv.Itoa(c.PID), nil
				})
			case "thread-self":
				return fs.Link(procIno("thread-self"), func(c *vfs.Ctx) (string, error) {
					if c == nil || c.PID == 0 {
						return "", linux.ENOENT
					}
					return fmt.Sprintf("%d/task/%d", c.PID, c.TID), nil
				})
			}
			pid, err := strconv.Atoi(name)
			if err != nil || strconv.Itoa(pid) != name {
				return nil
			}
			p := lookup(pid)
			if p == nil {
				return nil
			}
			return procDir(fs, p)
		},
	})
}

// procIno gives a /proc entry a stable inode number from its path.
func procIno(path string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(path))
	return h.Sum64() | 1<<63
}

// livePIDs lists the processes not yet reaped, in order.
func livePIDs() []int {
	tableMu.Lock()
	pids := make([]int, 0, len(table))
	for pid := range table {
		pids = append(pids, pid)
	}
	tableMu.Unlock()
	sort.Ints(pids)
	return pids
}

// procDir is /proc/<pid>.
func procDir(fs *procfs.FS, p *Process) vfs.Inode {
	pre := strconv.Itoa(p.PID)
	// What only a caller that may inspect the process (mayInspect) reads:
	// its environment, memory map, program, directories and open files.
	owner := p.dumpOwner
	private := func(mode uint32) procfs.Perm {
		return procfs.Perm{Mode: mode, Owner: owner, Check: p.mayInspect}
	}
	entries := map[string]func() vfs.Inode{
		"stat": func() vfs.Inode { return fs.File(procIno(pre+"/stat"), func() []byte { return p.statLine(nil) }, nil) },
		"status": func() vfs.Inode {
			return fs.File(procIno(pre+"/status"), func() []byte { return p.statusText(nil) }, nil)
		},
		"maps":    func() vfs.Inode { return fs.Guard(fs.File(procIno(pre+"/maps"), p.mapsText, nil), private(0o444)) },
		"cmdline": func() vfs.Inode { return fs.File(procIno(pre+"/cmdline"), p.cmdline, nil) },
		"mounts":  func() vfs.Inode { return fs.File(procIno(pre+"/mounts"), mountsText, nil) },
		"mountinfo": func() vfs.Inode {
			return fs.File(procIno(pre+"/mountinfo"), func() []byte { return fsys.MountInfo() }, nil)
		},
		"environ": func() vfs.Inode { return fs.Guard(fs.File(procIno(pre+"/environ"), p.environ, nil), private(0o400)) },
		"comm": func() vfs.Inode {
			f := fs.File(procIno(pre+"/comm"), func() []byte { return []byte(p.mainComm() + "\n") }, p.writeComm)
			return fs.Guard(f, procfs.Perm{Mode: 0o644, Owner: owner})
		},
		"exe": func() vfs.Inode { return fs.Guard(fs.Link(procIno(pre+"/exe"), p.exeLink), private(0o777)) },
		"cwd": func() vfs.Inode { return fs.Guard(fs.Link(procIno(pre+"/cwd"), p.cwdLink), private(0o777)) },
		"root": func() vfs.Inode {
			l := fs.Link(procIno(pre+"/root"), p.rootLink)
			return fs.Guard(l, private(0o777))
		},
		"fd": func() vfs.Inode {
			// Mode 0500 for its owner, and the process itself may always
			// list its own descriptors (a program that dropped privileges
			// and is no longer dumpable still can).
			return fs.Guard(fdDir(fs, p, pre+"/fd"), procfs.Perm{Mode: 0o500, Owner: owner,
				Allow: func(c *vfs.Ctx) bool { return c.PID == p.PID }})
		},
		"task": func() vfs.Inode { return taskDir(fs, p, pre+"/task") },
	}
	return namedDir(fs, procIno(pre), entries)
}

// dumpOwner is who a process's /proc entries belong to: its effective
// IDs, or root when it is not dumpable (Linux's task_dump_owner).
func (p *Process) dumpOwner() (uid, gid uint32) {
	if p.nonDumpable.Load() {
		return 0, 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cred.euid, p.cred.egid
}

// mayInspect is Linux's ptrace access check in its read mode with
// file-system IDs (PTRACE_MODE_READ_FSCREDS), which guards what /proc
// shows of a process's memory, environment and files: the process
// itself and root pass; any other caller needs file-system IDs equal to
// each of the process's real, effective and saved IDs (so a set-user-ID
// program's state stays hidden from the user who started it), and the
// process must be dumpable.
func (p *Process) mayInspect(c *vfs.Ctx) error {
	if c.PID == p.PID || c.Cred.Superuser() {
		return nil
	}
	p.mu.Lock()
	pc := p.cred
	p.mu.Unlock()
	uid, gid := c.Cred.EUID, c.Cred.EGID // the caller's file-system IDs
	if uid != pc.ruid || uid != pc.euid || uid != pc.suid || gid != pc.rgid || gid != pc.egid || gid != pc.sgid {
		return linux.EACCES
	}
	if p.nonDumpable.Load() {
		return linux.EACCES
	}
	return nil
}

// namedDir is a directory of fixed names whose inodes are made on lookup.
func namedDir(fs *procfs.FS, ino uint64, entries map[string]func() vfs.Inode) vfs.Inode {
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	return fs.Dir(ino, procfs.Dyn{
		List: func() []string { return names },
		Lookup: func(name string) vfs.Inode {
			if f, ok := entries[name]; ok {
				return f()
			}
			return nil
		},
	})
}

func taskDir(fs *procfs.FS, p *Process, pre string) vfs.Inode {
	return fs.Dir(procIno(pre), procfs.Dyn{
		List: func() []string {
			var names []string
			for _, t := range p.threadList() {
				names = append(names, strconv.Itoa(t.TID))
			}
			return names
		},
		Lookup: func(name string) vfs.Inode {
			tid, err := strconv.Atoi(name)
			if err != nil {
				return nil
			}
			t := lookupThread(tid)
			if t == nil || t.Proc != p {
				return nil
			}
			tp := pre + "/" + name
			return namedDir(fs, procIno(tp), map[string]func() vfs.Inode{
				"stat":   func() vfs.Inode { return fs.File(procIno(tp+"/stat"), func() []byte { return p.statLine(t) }, nil) },
				"status": func() vfs.Inode { return fs.File(procIno(tp+"/status"), func() []byte { return p.statusText(t) }, nil) },
				"comm": func() vfs.Inode {
					return fs.File(procIno(tp+"/comm"), func() []byte { return []byte(t.commName() + "\n") }, func(b []byte) error {
						t.setComm(commFrom(b))
						return nil
					})
				},
			})
		},
	})
}

func fdDir(fs *procfs.FS, p *Process, pre string) vfs.Inode {
	return fs.Dir(procIno(pre), procfs.Dyn{
		List: func() []string {
			var names []string
			if files := p.fileTable(); files != nil {
				for _, fd := range files.FDs() {
					names = append(names, strconv.Itoa(fd))
				}
			}
			return names
		},
		Lookup: func(name string) vfs.Inode {
			fd, err := strconv.Atoi(name)
			if err != nil {
				return nil
			}
			files := p.fileTable()
			if files == nil {
				return nil
			}
			f, err := files.Get(fd)
			if err != nil {
				return nil
			}
			f.DecRef() // Get's reference: only the descriptor's existence matters here
			l := fs.Link(procIno(pre+"/"+name), func(*vfs.Ctx) (string, error) {
				f, err := files.Get(fd)
				if err != nil {
					return "", linux.ENOENT
				}
				defer f.DecRef()
				return filePath(f), nil
			})
			return fs.Guard(l, procfs.Perm{Mode: 0o700, Owner: p.dumpOwner, Check: p.mayInspect})
		},
	})
}

// filePath is what /proc/<pid>/fd shows for an open file: its path, or
// "pipe:[ino]" and the like for files without one.
func filePath(f *vfs.OpenFile) string {
	if d := f.Dentry(); d != nil && fsys != nil {
		return fsys.Path(&vfs.Ctx{}, d)
	}
	if name := f.Name(); name != "" {
		return name
	}
	a := f.Attr()
	switch a.Type() {
	case linux.S_IFIFO:
		return fmt.Sprintf("pipe:[%d]", a.Ino)
	case linux.S_IFSOCK:
		return fmt.Sprintf("socket:[%d]", a.Ino)
	}
	return "anon_inode:[" + fmt.Sprintf("%T", f.Impl()) + "]"
}

func (p *Process) fileTable() *vfs.FDTable {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.files
}

func (p *Process) threadList() []*Thread {
	p.mu.Lock()
	defer p.mu.Unlock()
	ts := make([]*Thread, 0, len(p.threads))
	for _, t := range p.threads {
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].TID < ts[j].TID })
	return ts
}

// mainComm is the name of the thread group leader (or the program's).
func (p *Process) mainComm() string {
	if t := lookupThread(p.PID); t != nil && t.Proc == p {
		return t.commName()
	}
	return baseName(p.name)
}

func (p *Process) writeComm(b []byte) error {
	t := lookupThread(p.PID)
	if t == nil || t.Proc != p {
		return linux.ESRCH
	}
	t.setComm(commFrom(b))
	return nil
}

// commFrom is a name written to comm: up to 15 bytes, without the newline.
func commFrom(b []byte) string {
	s := strings.TrimSuffix(string(b), "\n")
	if len(s) > 15 {
		s = s[:15]
	}
	return s
}

func baseName(n string) string {
	if i := strings.LastIndexByte(n, '/'); i >= 0 {
		n = n[i+1:]
	}
	if len(n) > 15 {
		n = n[:15]
	}
	return n
}

func (p *Process) exeLink(*vfs.Ctx) (string, error) {
	p.mu.Lock()
	exe := p.exe
	p.mu.Unlock()
	if exe == nil || fsys == nil {
		return "", linux.ENOENT
	}
	return fsys.Path(&vfs.Ctx{}, exe), nil
}

// rootLink is /proc/<pid>/root: the process's root (chroot) as the
// reader sees it.
func (p *Process) rootLink(c *vfs.Ctx) (string, error) {
	p.mu.Lock()
	root := p.root
	p.mu.Unlock()
	if root == nil || fsys == nil {
		return "/", nil
	}
	return fsys.Path(c, root), nil
}

func (p *Process) cwdLink(*vfs.Ctx) (string, error) {
	p.mu.Lock()
	cwd := p.cwd
	p.mu.Unlock()
	if cwd == nil || fsys == nil {
		return "/", nil
	}
	return fsys.Path(&vfs.Ctx{}, cwd), nil
}

func joinNUL(ss []string) []byte {
	var b bytes.Buffer
	for _, s := range ss {
		b.WriteString(s)
		b.WriteByte(0)
	}
	return b.Bytes()
}

func (p *Process) cmdline() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return joinNUL(p.argv)
}

func (p *Process) environ() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return joinNUL(p.envp)
}

// procState is the one-letter state: R running or runnable, S sleeping in
// a system call, T stopped, Z zombie. Of a thread, or (t nil) of the
// process, which is its main thread's, as on Linux (where /proc/PID/stat
// is the leader's task): a process whose main thread sleeps is S while
// another thread runs, and one whose main thread has ended is Z.
func (p *Process) procState(t *Thread) byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t == nil {
		t = p.threads[p.PID]
	}
	switch {
	case p.state != procRunning || t == nil:
		return 'Z'
	case p.job.stopped && t.stopCounted:
		return 'T' // parked
	case t.sleeping.Load():
		return 'S'
	}
	return 'R'
}

var stateNames = map[byte]string{'R': "running", 'S': "sleeping", 'T': "stopped", 'Z': "zombie"}

// memInfo is the address space's size and resident pages (0 once gone).
func (p *Process) memInfo() (vsize uint64, rss uint64) {
	s := p.Space()
	if s == nil {
		return 0, 0
	}
	return uint64(s.MappedBytes()), uint64(s.ResidentPages())
}

// statLine is /proc/<pid>/stat (t nil) or /proc/<pid>/task/<tid>/stat.
func (p *Process) statLine(t *Thread) []byte {
	state := p.procState(t)
	vsize, rss := p.memInfo()
	var times cpuTimes
	var faults int64
	comm := p.mainComm()
	if t != nil {
		times, faults, comm = t.threadTimes(), t.cpu.faults.Load(), t.commName()
	} else {
		times, faults = p.selfTimes()
	}
	ttyNr, tpgid := 0, -1
	if c := p.controllingTTY(); c != nil {
		ttyNr, tpgid = encodeTTYDev(c.Device()), c.Foreground()
	}
	p.mu.Lock()
	ppid := 0
	if p.parent != nil {
		ppid = p.parent.PID
	}
	ch := p.usage.children
	cfaults := p.usage.cfaults
	nthreads := len(p.threads)
	pending := p.pending.mask
	pgid, sid, start := p.pgid, p.sid, p.start
	rsslim := p.rlimits()[rlimitRSS].cur
	sched := p.sched
	exitSignal := p.exitSignal
	p.mu.Unlock()
	var blocked uint64
	lt := t // the thread whose CPU and exit signal the line shows
	if lt == nil {
		lt = lookupThread(p.PID)
	}
	if lt != nil {
		blocked = lt.sigMask
	}
	cpu := 0
	if lt != nil {
		// The CPU the thread last ran its program on (Linux's
		// task_cpu), not the reader's: written by the machine layer.
		cpu = int(atomic.LoadUint64(&lt.regs.ExitCPU))
	}
	if t != nil && t.TID != p.PID {
		exitSignal = -1 // a thread's, as Linux's CLONE_THREAD sets it
	}
	// priority as Linux's task_prio: 20 + nice for the normal policies,
	// -1 - the real-time priority for SCHED_FIFO and SCHED_RR.
	prio := 20 + sched.nice
	if rtPolicy(sched.policy) {
		prio = -1 - sched.rtprio
	}
	ign, cgt := p.sig.dispositions()
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d (%s) %c %d %d %d %d %d 0 %d %d 0 0 %d %d %d %d %d %d %d 0 %d %d %d %d",
		p.PID, comm, state, ppid, pgid, sid, ttyNr, tpgid,
		faults, cfaults,
		ticks(times.user), ticks(times.sys), ticks(ch.user), ticks(ch.sys),
		prio, sched.nice, nthreads, ticks(start), vsize, rss, rsslim)
	// startcode endcode startstack kstkesp kstkeip signal blocked
	// sigignore sigcatch wchan nswap cnswap exit_signal processor
	// rt_priority policy delayacct_blkio_ticks guest_time cguest_time
	// start_data end_data start_brk arg_start arg_end env_start env_end
	// exit_code
	fmt.Fprintf(&b, " 0 0 0 0 0 %d %d %d %d 0 0 0 %d %d %d %d 0 0 0 0 0 0 0 0 0 0 0\n",
		pending, blocked, ign, cgt, exitSignal, cpu, sched.rtprio, sched.policy)
	return b.Bytes()
}

// statusText is /proc/<pid>/status (t nil) or a thread's.
func (p *Process) statusText(t *Thread) []byte {
	state := p.procState(t)
	vsize, rss := p.memInfo()
	var locked, data, stk uint64
	if s := p.Space(); s != nil {
		locked, data, stk = uint64(s.LockedBytes()), uint64(s.DataBytes()), uint64(s.StackBytes())
	}
	comm := p.mainComm()
	tid := p.PID
	thread := t // nil for the process's file (t becomes its leader below)
	if t != nil {
		comm, tid = t.commName(), t.TID
	}
	p.mu.Lock()
	ppid := 0
	if p.parent != nil {
		ppid = p.parent.PID
	}
	c := p.cred
	umask := p.umask
	nthreads := len(p.threads)
	pending := p.pending.mask
	fdsize := 0
	if p.files != nil {
		fdsize = p.files.Limit()
	}
	maxRSS := max(p.maxRSS, int64(rss)*4)
	sigq := p.rlimits()[rlimitSigpending].cur
	p.mu.Unlock()
	var blocked, shdPending uint64
	var noNewPrivs, seccomp, filters int
	if t == nil {
		t = lookupThread(p.PID)
	}
	if t != nil {
		if t.noNewPrivs.Load() {
			noNewPrivs = 1
		}
		seccomp = int(t.seccompMode.Load())
		filters = t.seccompFilter.Load().Count()
		blocked = t.sigMask
		shdPending = pending
		p.mu.Lock()
		pending = t.pending.mask
		p.mu.Unlock()
	}
	ign, cgt := p.sig.dispositions()
	var groups []string
	for _, g := range c.groups {
		groups = append(groups, strconv.Itoa(int(g)))
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "Name:\t%s\nUmask:\t%04o\nState:\t%c (%s)\nTgid:\t%d\nNgid:\t0\nPid:\t%d\nPPid:\t%d\nTracerPid:\t0\n",
		comm, umask, state, stateNames[state], p.PID, tid, ppid)
	fmt.Fprintf(&b, "Uid:\t%d\t%d\t%d\t%d\nGid:\t%d\t%d\t%d\t%d\nFDSize:\t%d\nGroups:\t%s\n",
		c.ruid, c.euid, c.suid, c.fsuid, c.rgid, c.egid, c.sgid, c.fsgid, fdsize, strings.Join(groups, " "))
	fmt.Fprintf(&b, "VmPeak:\t%8d kB\nVmSize:\t%8d kB\nVmLck:\t%8d kB\nVmPin:\t%8d kB\nVmHWM:\t%8d kB\nVmRSS:\t%8d kB\n",
		vsize/1024, vsize/1024, locked/1024, 0, maxRSS, rss*4)
	fmt.Fprintf(&b, "VmData:\t%8d kB\nVmStk:\t%8d kB\n", data/1024, stk/1024)
	fmt.Fprintf(&b, "Threads:\t%d\nSigQ:\t%d/%d\nSigPnd:\t%016x\nShdPnd:\t%016x\nSigBlk:\t%016x\nSigIgn:\t%016x\nSigCgt:\t%016x\n",
		nthreads, 0, sigq, pending, shdPending, blocked, ign, cgt)
	eff, perm := capSets(c)
	bnd := capBounding(c)
	cap64 := func(s [2]uint32) uint64 { return uint64(s[1])<<32 | uint64(s[0]) }
	fmt.Fprintf(&b, "CapInh:\t%016x\nCapPrm:\t%016x\nCapEff:\t%016x\nCapBnd:\t%016x\nCapAmb:\t%016x\n",
		0, cap64(perm), cap64(eff), cap64(bnd), 0)
	fmt.Fprintf(&b, "NoNewPrivs:\t%d\nSeccomp:\t%d\nSeccomp_filters:\t%d\n", noNewPrivs, seccomp, filters)
	fmt.Fprintf(&b, "Speculation_Store_Bypass:\t%s\nSpeculationIndirectBranch:\t%s\n", specStatusSSB, specStatusIB)
	n := machine.NumCPU()
	// A thread's own switches; the process's file shows its leader's,
	// as Linux's does (getrusage adds the threads up).
	var sw switches
	if thread != nil {
		sw = thread.switches()
	} else {
		sw = p.leaderSwitches()
	}
	// The thread's CPU mask (sched_setaffinity; the leader's for the
	// process), as Linux prints a cpumask: hex, one digit per 4 CPUs,
	// a comma between each 32, then the list.
	all := uint64(1)<<min(n, 64) - 1
	if n >= 64 {
		all = ^uint64(0)
	}
	mask := all
	if t != nil {
		if a := t.affinity.Load(); a != 0 {
			mask = a & all
		}
	}
	var cpus []int
	for i := range min(n, 64) {
		if mask&(1<<i) != 0 {
			cpus = append(cpus, i)
		}
	}
	fmt.Fprintf(&b, "Cpus_allowed:\t%s\nCpus_allowed_list:\t%s\nvoluntary_ctxt_switches:\t%d\nnonvoluntary_ctxt_switches:\t%d\n",
		cpumaskHex(mask, n), numa.List(cpus), sw.vol, sw.invol)
	return b.Bytes()
}

// cpumaskHex formats a mask of n CPUs as Linux's %*pb: hex digits for
// n bits, zero-padded, in groups of 32 bits separated by commas.
func cpumaskHex(mask uint64, n int) string {
	digits := max((n+3)/4, 1)
	s := fmt.Sprintf("%0*x", digits, mask)
	if len(s) > digits { // n above 64: the mask holds the first 64 only
		s = s[len(s)-digits:]
	}
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%8 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// dispositions returns the ignored and caught signal sets. A process
// that clone has put in the table but not yet given its handlers has
// none (/proc may be read in that moment: ps under t_shell met it).
func (h *sigHandlers) dispositions() (ign, cgt uint64) {
	if h == nil {
		return 0, 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for sig := 1; sig <= nSig; sig++ {
		switch a := h.act[sig]; {
		case a.handler == sigIgn:
			ign |= bit(sig)
		case a.handler > sigIgn:
			cgt |= bit(sig)
		}
	}
	return ign, cgt
}

// mapsText is /proc/<pid>/maps.
func (p *Process) mapsText() []byte {
	s := p.Space()
	if s == nil {
		return nil
	}
	var b bytes.Buffer
	for _, v := range s.VMAs() {
		perm := []byte("---p")
		if v.Prot&mm.ProtRead != 0 {
			perm[0] = 'r'
		}
		if v.Prot&mm.ProtWrite != 0 {
			perm[1] = 'w'
		}
		if v.Prot&mm.ProtExec != 0 {
			perm[2] = 'x'
		}
		off := v.Off
		switch {
		case v.Name == "[vvar]" || v.Name == "[vdso]":
			off = 0 // Linux's special mappings: private, no offset
		case v.Shm != nil && !v.Private:
			perm[3] = 's'
		}
		line := fmt.Sprintf("%08x-%08x %s %08x 00:00 0 ", v.Start, v.End, perm, off)
		if v.Name != "" {
			line += strings.Repeat(" ", max(0, 73-len(line))) + v.Name
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}
