package proc

// Resource limits, process names, system information and usage.

import (
	"encoding/binary"

	"shortbread/kernel/machine"
	"shortbread/kernel/mm"
	"shortbread/kernel/vfs"
)

// Resource limits (include/uapi/asm-generic/resource.h).
const (
	rlimitCPU        = 0
	rlimitFsize      = 1
	rlimitData       = 2
	rlimitStack      = 3
	rlimitCore       = 4
	rlimitRSS        = 5
	rlimitNofile     = 7
	rlimitAS         = 9
	rlimitNproc      = 6
	rlimitMemlock    = 8
	rlimitSigpending = 11
	rlimitMsgqueue   = 12
	rlimitNice       = 13
	rlimitRtprio     = 14
	rlimNlimits      = 16
	rlimInfinity     = ^uint64(0)
	nrOpen           = 1 << 20 // fs.nr_open: the highest RLIMIT_NOFILE
	eMFILE           = 24
	eNFILE           = 23
	prSetName        = 15
	prGetName        = 16
	prSetDumpable    = 4
	prGetDumpable    = 3
	prSetPdeathsig   = 1
	prGetTSC         = 25
	prSetTSC         = 26
	prGetTimerslack  = 30
	prSetTimerslack  = 29
	prTSCEnable      = 1
	// defaultTimerslack is Linux's 50 us: how late a sleep may wake.
	defaultTimerslack   = 50000
	prGetPdeathsig      = 2
	prSetChildSubreaper = 36
	prGetChildSubreaper = 37
	prSetNoNewPrivs     = 38
	prGetNoNewPrivs     = 39
	prGetTIDAddress     = 40
	prSetTHPDisable     = 41
	prGetTHPDisable     = 42
)

type rlimit struct{ cur, max uint64 }

// defaultRlimits are what Linux gives init. RLIMIT_NPROC and
// RLIMIT_SIGPENDING are half of Linux's max_threads, which it sizes from
// memory (one thread per 32 pages, at least 20).
func defaultRlimits() [rlimNlimits]rlimit {
	var r [rlimNlimits]rlimit
	for i := range r {
		r[i] = rlimit{rlimInfinity, rlimInfinity}
	}
	r[rlimitStack] = rlimit{8 << 20, rlimInfinity}
	r[rlimitCore] = rlimit{0, rlimInfinity}
	r[rlimitNofile] = rlimit{vfs.DefaultNOFILE, 4096}
	tasks := max(machine.ReadMemStats().TotalFrames/32, 20) / 2
	r[rlimitNproc] = rlimit{tasks, tasks}
	r[rlimitSigpending] = rlimit{tasks, tasks}
	r[rlimitMemlock] = rlimit{8 << 20, 8 << 20}
	r[rlimitMsgqueue] = rlimit{819200, 819200}
	r[rlimitNice] = rlimit{0, 0} // raising priority is root's alone
	r[rlimitRtprio] = rlimit{0, 0}
	return r
}

// asLimit is RLIMIT_AS or RLIMIT_DATA as package mm takes it (0: none).
func asLimit(cur uint64) uintptr {
	if cur == rlimInfinity {
		return 0
	}
	return uintptr(max(cur, 1))
}

func (p *Process) rlimits() *[rlimNlimits]rlimit {
	if p.limits == nil {
		l := defaultRlimits()
		p.limits = &l
	}
	return p.limits
}

func sysPrlimit64(t *Thread, a *[6]uint64) (int64, bool) {
	pid, res, newp, oldp := int(int32(a[0])), a[1], uintptr(a[2]), uintptr(a[3])
	return t.prlimit(pid, res, newp, oldp), false
}

func sysGetrlimit(t *Thread, a *[6]uint64) (int64, bool) {
	return t.prlimit(0, a[0], 0, uintptr(a[1])), false
}

func sysSetrlimit(t *Thread, a *[6]uint64) (int64, bool) {
	return t.prlimit(0, a[0], uintptr(a[1]), 0), false
}

func (t *Thread) prlimit(pid int, res uint64, newp, oldp uintptr) int64 {
	if res >= rlimNlimits {
		return -eINVAL
	}
	target := t.Proc
	if pid != 0 && pid != t.Proc.PID {
		if target = lookup(pid); target == nil {
			return -eSRCH
		}
	}
	s := t.Proc.Space()
	var nl rlimit
	if newp != 0 {
		var b [16]byte
		if err := s.CopyIn(newp, b[:]); err != nil {
			return errno(err)
		}
		nl = rlimit{binary.LittleEndian.Uint64(b[:]), binary.LittleEndian.Uint64(b[8:])}
	}
	c := t.creds()
	priv := c.privileged()
	if target != t.Proc && !priv {
		// Another process's limits, read or written, need its real,
		// effective and saved IDs all to be the caller's real ones (or
		// CAP_SYS_RESOURCE), as Linux's check_prlimit_permission.
		target.mu.Lock()
		tc := target.cred
		target.mu.Unlock()
		if c.ruid != tc.ruid || c.ruid != tc.euid || c.ruid != tc.suid ||
			c.rgid != tc.rgid || c.rgid != tc.egid || c.rgid != tc.sgid {
			return -ePERM
		}
	}
	// The new values are checked after the permission, as on Linux.
	if newp != 0 {
		if nl.cur > nl.max {
			return -eINVAL
		}
		if res == rlimitNofile && nl.max != rlimInfinity && nl.max > nrOpen {
			return -ePERM
		}
	}
	target.mu.Lock()
	lim := target.rlimits()
	old := lim[res]
	if newp != 0 && nl.max > old.max && !priv {
		target.mu.Unlock()
		return -ePERM // only root raises a hard limit
	}
	if newp != 0 {
		lim[res] = nl
		if res == rlimitFsize {
			target.fsize.Store(nl.cur)
		}
	}
	files := target.files
	target.mu.Unlock()
	if newp != 0 && res == rlimitNofile && files != nil {
		n := nl.cur
		if n > nrOpen {
			n = nrOpen
		}
		files.SetLimit(int(n))
	}
	if newp != 0 && res == rlimitCPU {
		used, _ := target.selfTimes()
		target.mu.Lock()
		target.armCPULimitLocked(used.total())
		target.mu.Unlock()
	}
	if newp != 0 && res == rlimitAS {
		if s := target.Space(); s != nil {
			s.SetLimit(asLimit(nl.cur))
		}
	}
	if newp != 0 && res == rlimitData {
		if s := target.Space(); s != nil {
			s.SetDataLimit(asLimit(nl.cur))
		}
	}
	if oldp != 0 {
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:], old.cur)
		binary.LittleEndian.PutUint64(b[8:], old.max)
		if err := s.CopyOut(oldp, b[:]); err != nil {
			return errno(err)
		}
	}
	return 0
}

func sysPrctl(t *Thread, a *[6]uint64) (int64, bool) {
	p := t.Proc
	switch a[0] {
	case prSetName:
		name, err := p.Space().CopyInString(uintptr(a[1]), 4096)
		if err != nil && len(name) == 0 {
			// A name longer than the buffer limit still sets its head.
			var b [16]byte
			if cerr := p.Space().CopyIn(uintptr(a[1]), b[:15]); cerr != nil {
				return errno(cerr), false
			}
			name = string(b[:15])
		}
		if len(name) > 15 {
			name = name[:15]
		}
		t.setComm(name)
		return 0, false
	case prGetName:
		var b [16]byte
		copy(b[:15], t.commName())
		return errno(p.Space().CopyOut(uintptr(a[1]), b[:])), false
	case prSetDumpable:
		if a[1] > 1 {
			return -eINVAL, false
		}
		p.nonDumpable.Store(a[1] == 0)
		return 0, false
	case prGetDumpable:
		if p.nonDumpable.Load() {
			return 0, false
		}
		return 1, false
	case prSetPdeathsig:
		if a[1] > nSig {
			return -eINVAL, false
		}
		p.mu.Lock()
		p.pdeathsig = int(a[1])
		p.mu.Unlock()
		return 0, false
	case prGetPdeathsig:
		p.mu.Lock()
		sig := p.pdeathsig
		p.mu.Unlock()
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(sig))
		return errno(p.Space().CopyOut(uintptr(a[1]), b[:])), false
	case prSetTimerslack:
		// Kept and reported; the kernel's timers fire at their deadline,
		// which any slack allows.
		slack := a[1]
		if slack == 0 {
			slack = defaultTimerslack
		}
		t.timerslack = slack
		return 0, false
	case prGetTimerslack:
		if t.timerslack == 0 {
			return defaultTimerslack, false
		}
		return int64(t.timerslack), false
	case prSetTSC:
		// RDTSC always works in user mode: PR_TSC_SIGSEGV (trapping it)
		// is not supported.
		if a[1] != prTSCEnable {
			return -eINVAL, false
		}
		return 0, false
	case prGetTSC:
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], prTSCEnable)
		return errno(p.Space().CopyOut(uintptr(a[1]), b[:])), false
	case prSetChildSubreaper:
		p.mu.Lock()
		p.subreaper = a[1] != 0
		p.mu.Unlock()
		return 0, false
	case prGetChildSubreaper:
		p.mu.Lock()
		v := p.subreaper
		p.mu.Unlock()
		return putFlag(t, uintptr(a[1]), v), false
	case prSetNoNewPrivs:
		// For good: execve grants no set-user-ID or set-group-ID
		// privilege from now on, to this thread and those it makes.
		if a[1] != 1 || a[2] != 0 || a[3] != 0 || a[4] != 0 {
			return -eINVAL, false
		}
		t.noNewPrivs.Store(true)
		return 0, false
	case prGetNoNewPrivs:
		if a[1] != 0 || a[2] != 0 || a[3] != 0 || a[4] != 0 {
			return -eINVAL, false
		}
		if t.noNewPrivs.Load() {
			return 1, false
		}
		return 0, false
	case prGetTIDAddress:
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(t.clearTID))
		return errno(p.Space().CopyOut(uintptr(a[1]), b[:])), false
	case prSetTHPDisable:
		// Kept and reported (inherited by fork, kept by exec, as
		// Linux's MMF_DISABLE_THP); pages here are never huge.
		if a[2] != 0 || a[3] != 0 || a[4] != 0 {
			return -eINVAL, false
		}
		p.thpDisable.Store(a[1] != 0)
		return 0, false
	case prGetTHPDisable:
		if a[1] != 0 || a[2] != 0 || a[3] != 0 || a[4] != 0 {
			return -eINVAL, false
		}
		if p.thpDisable.Load() {
			return 1, false
		}
		return 0, false
	}
	if r, ok := prctlMore(t, a); ok {
		return r, false
	}
	return -eINVAL, false
}

// putFlag writes an int 0 or 1 at addr (prctl's GET options).
func putFlag(t *Thread, addr uintptr, v bool) int64 {
	var b [4]byte
	if v {
		b[0] = 1
	}
	return errno(t.Proc.Space().CopyOut(addr, b[:]))
}

// commName is the thread's name: set by PR_SET_NAME or /proc's comm,
// else the program's base name (as Linux sets comm at exec).
func (t *Thread) commName() string {
	if c := t.comm.Load(); c != nil {
		return *c
	}
	t.Proc.mu.Lock()
	defer t.Proc.mu.Unlock()
	return baseName(t.Proc.name)
}

func (t *Thread) setComm(name string) { t.comm.Store(&name) }

// sysSysinfo fills struct sysinfo (x86-64 layout, mem_unit 1).
func sysSysinfo(t *Thread, a *[6]uint64) (int64, bool) {
	ms := machine.ReadMemStats()
	var b [112]byte
	le := binary.LittleEndian
	le.PutUint64(b[0:], uint64(monotonicNow()/1e9))
	le.PutUint64(b[32:], ms.TotalFrames*4096)             // totalram
	le.PutUint64(b[40:], ms.FreeFrames*4096)              // freeram
	le.PutUint64(b[48:], uint64(mm.ReadStats().Shm)*4096) // sharedram: tmpfs and shared memory
	tableMu.Lock()
	procs := len(table)
	tableMu.Unlock()
	le.PutUint16(b[80:], uint16(procs))
	le.PutUint32(b[104:], 1) // mem_unit
	return errno(t.Proc.Space().CopyOut(uintptr(a[0]), b[:])), false
}

// cpuMaskBytes is the size of the kernel's CPU mask: a whole number of
// longs covering every CPU, as Linux sizes it from nr_cpu_ids.
func cpuMaskBytes() int { return (machine.NumCPU() + 63) / 64 * 8 }

// allCPUs is the mask of every CPU.
func allCPUs() uint64 { return 1<<machine.NumCPU() - 1 }

// affinityTarget is the thread a sched_*affinity call names (0: the
// caller), or nil.
func (t *Thread) affinityTarget(tid int) *Thread {
	if tid == 0 {
		return t
	}
	return lookupThread(tid)
}

// sysSchedGetaffinity reports the CPUs the thread may run its program on.
func sysSchedGetaffinity(t *Thread, a *[6]uint64) (int64, bool) {
	target := t.affinityTarget(int(int32(a[0])))
	if target == nil {
		return -eSRCH, false
	}
	n := cpuMaskBytes()
	if a[1] < uint64(n) || a[1]&7 != 0 {
		return -eINVAL, false
	}
	mask := target.affinity.Load()
	if mask == 0 {
		mask = allCPUs()
	}
	b := make([]byte, n)
	binary.LittleEndian.PutUint64(b, mask) // NumCPU <= 64: n is 8
	if err := t.Proc.Space().CopyOut(uintptr(a[2]), b); err != nil {
		return errno(err), false
	}
	return int64(n), false
}

// sysSchedSetaffinity sets the CPUs a thread may run its program on: the
// machine layer moves it to one of them at its next entry to user mode
// (machine.UserRegs.Affinity), and a thread in user mode now is kicked
// back to the kernel for that. Bits for CPUs that do not exist are
// ignored; a mask without any CPU is EINVAL. The caller must own the
// thread's process or be root, as Linux's check_same_owner.
func sysSchedSetaffinity(t *Thread, a *[6]uint64) (int64, bool) {
	var b [8]byte // cpuMaskBytes: NumCPU <= 64
	if err := t.Proc.Space().CopyIn(uintptr(a[2]), b[:min(a[1], uint64(cpuMaskBytes()))]); err != nil {
		return errno(err), false
	}
	target := t.affinityTarget(int(int32(a[0])))
	if target == nil {
		return -eSRCH, false
	}
	mask := binary.LittleEndian.Uint64(b[:]) & allCPUs()
	if c := t.creds(); !c.privileged() && !sameOwner(c, target.creds()) {
		return -ePERM, false
	}
	if mask == 0 {
		return -eINVAL, false
	}
	if mask == allCPUs() {
		mask = 0 // the machine layer need not look
	}
	target.affinity.Store(mask)
	if target != t {
		machine.Kick(&target.regs)
	}
	return 0, false
}

// CPUNode is the NUMA node of a CPU (getcpu); the kernel sets it at boot
// when the machine has more than one.
var CPUNode = func(cpu int) int { return 0 }

// sysGetcpu reports the CPU the calling thread's program made the call
// on (it may move at once, as on Linux) and that CPU's NUMA node.
func sysGetcpu(t *Thread, a *[6]uint64) (int64, bool) {
	s := t.Proc.Space()
	var b [4]byte
	cpu := int(t.regs.ExitCPU)
	if a[0] != 0 {
		binary.LittleEndian.PutUint32(b[:], uint32(cpu))
		if err := s.CopyOut(uintptr(a[0]), b[:]); err != nil {
			return errno(err), false
		}
	}
	if a[1] != 0 {
		binary.LittleEndian.PutUint32(b[:], uint32(CPUNode(cpu)))
		if err := s.CopyOut(uintptr(a[1]), b[:]); err != nil {
			return errno(err), false
		}
	}
	return 0, false
}
