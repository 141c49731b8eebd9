package proc

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"runtime"
	"runtime/trace"
	"shortbread/kernel/iobuf"
	"sync"
	"time"

	"shortbread/kernel/elf"
	"shortbread/kernel/klog"
	"shortbread/kernel/mm"
	"shortbread/kernel/wallclock"
)

// Log is where the process layer reports; the kernel sets it.
var Log *klog.Logger

// Linux errno values (include/uapi/asm-generic/errno-base.h, errno.h).
const (
	ePERM        = 1
	eNOENT       = 2
	e2BIG        = 7
	eBADF        = 9
	eNOMEM       = 12
	eFAULT       = 14
	eEXIST       = 17
	eINVAL       = 22
	eNOTTY       = 25
	eNOSYS       = 38
	eNOEXEC      = 8
	eNAMETOOLONG = 36
	eNODEV       = 19
	eOPNOTSUPP   = 95
	eLIBBAD      = 80
	eOVERFLOW    = 75
	eBUSY        = 16
	eNXIO        = 6
	eRANGE       = 34
)

// errno maps kernel errors to Linux errno values.
func errno(err error) int64 {
	if err == nil { // first: errnoOf's errors.As would allocate its target
		return 0
	}
	if e, ok := errnoOf(err); ok {
		return e
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, mm.ErrFault):
		return -eFAULT
	case errors.Is(err, mm.ErrNoMem):
		return -eNOMEM
	case errors.Is(err, mm.ErrInval):
		return -eINVAL
	case errors.Is(err, mm.ErrExists):
		return -eEXIST
	case errors.Is(err, mm.ErrDenied):
		return -eACCES
	case errors.Is(err, elf.ErrBadInterp):
		return -eLIBBAD
	case errors.Is(err, elf.ErrNoExec):
		return -eNOEXEC
	case errors.Is(err, mm.ErrNameTooLong):
		return -eNAMETOOLONG
	case errors.Is(err, errArgTooLong):
		return -7 // E2BIG
	}
	return -eINVAL
}

// handler implements one system call. It returns the value for RAX; exit
// is true when the thread has ended.
type handler func(t *Thread, a *[6]uint64) (ret int64, exit bool)

// Entry describes a system call number in the table.
type Entry struct {
	Name string
	Fn   handler
}

// syscalls is the system call table, indexed by Linux x86-64 number
// (arch/x86/entry/syscalls/syscall_64.tbl); a number without a name is
// ENOSYS.
var syscalls [nSyscalls]Entry

// nSyscalls bounds the numbers in the table (Linux is at 463).
const nSyscalls = 512

// The table is filled in init: clone's handler starts threads that run
// system calls, which would make a package-level initializer a cycle.
func init() {
	for no, e := range map[uint64]Entry{
		0:   {"read", sysRead},
		1:   {"write", sysWrite},
		2:   {"open", sysOpen},
		3:   {"close", sysClose},
		436: {"close_range", sysCloseRange},
		4:   {"stat", sysStat},
		5:   {"fstat", sysFstat},
		6:   {"lstat", sysLstat},
		7:   {"poll", sysPoll},
		8:   {"lseek", sysLseek},
		17:  {"pread64", sysPread},
		18:  {"pwrite64", sysPwrite},
		19:  {"readv", sysReadv},
		21:  {"access", sysAccess},
		22:  {"pipe", sysPipe},
		23:  {"select", sysSelect},
		32:  {"dup", sysDup},
		33:  {"dup2", sysDup2},
		40:  {"sendfile", sysSendfile},
		72:  {"fcntl", sysFcntl}, // sys_fcntl.go
		73:  {"flock", sysFlock},
		76:  {"truncate", sysTruncate},
		77:  {"ftruncate", sysFtruncate},
		285: {"fallocate", sysFallocate},
		79:  {"getcwd", sysGetcwd},
		80:  {"chdir", sysChdir},
		81:  {"fchdir", sysFchdir},
		161: {"chroot", sysChroot},
		82:  {"rename", sysRename},
		83:  {"mkdir", sysMkdir},
		84:  {"rmdir", sysRmdir},
		85:  {"creat", sysCreat},
		86:  {"link", sysLink},
		87:  {"unlink", sysUnlink},
		88:  {"symlink", sysSymlink},
		89:  {"readlink", sysReadlink},
		90:  {"chmod", sysChmod},
		91:  {"fchmod", sysFchmod},
		92:  {"chown", sysChown},
		93:  {"fchown", sysFchown},
		94:  {"lchown", sysLchown},
		95:  {"umask", sysUmask},
		133: {"mknod", sysMknod},
		213: {"epoll_create", sysEpollCreate},
		217: {"getdents64", sysGetdents64},
		232: {"epoll_wait", sysEpollWait},
		233: {"epoll_ctl", sysEpollCtl},
		257: {"openat", sysOpenat},
		258: {"mkdirat", sysMkdirat},
		259: {"mknodat", sysMknodat},
		260: {"fchownat", sysFchownat},
		262: {"newfstatat", sysNewfstatat},
		263: {"unlinkat", sysUnlinkat},
		264: {"renameat", sysRenameat},
		265: {"linkat", sysLinkat},
		266: {"symlinkat", sysSymlinkat},
		267: {"readlinkat", sysReadlinkat},
		268: {"fchmodat", sysFchmodat},
		269: {"faccessat", sysFaccessat},
		270: {"pselect6", sysPselect6},
		271: {"ppoll", sysPpoll},
		280: {"utimensat", sysUtimensat},
		281: {"epoll_pwait", sysEpollPwait},
		441: {"epoll_pwait2", sysEpollPwait2},
		284: {"eventfd", sysEventfd},
		290: {"eventfd2", sysEventfd2},
		291: {"epoll_create1", sysEpollCreate1},
		292: {"dup3", sysDup3},
		293: {"pipe2", sysPipe2},
		295: {"preadv", sysPreadv},
		296: {"pwritev", sysPwritev},
		327: {"preadv2", sysPreadv2},
		328: {"pwritev2", sysPwritev2},
		316: {"renameat2", sysRenameat2},
		332: {"statx", sysStatx},
		439: {"faccessat2", sysFaccessat2},
		9:   {"mmap", sysMmap},
		10:  {"mprotect", sysMprotect},
		11:  {"munmap", sysMunmap},
		12:  {"brk", sysBrk},
		25:  {"mremap", sysMremap},
		26:  {"msync", sysMsync},
		74:  {"fsync", sysFsync},
		75:  {"fdatasync", sysFsync},
		162: {"sync", sysSync},
		165: {"mount", sysMount},
		166: {"umount2", sysUmount2},
		306: {"syncfs", sysSyncfs},
		28:  {"madvise", sysMadvise},
		27:  {"mincore", sysMincore},
		13:  {"rt_sigaction", sysRtSigaction},
		14:  {"rt_sigprocmask", sysRtSigprocmask},
		15:  {"rt_sigreturn", nil}, // handled in syscall: it restores RAX too
		16:  {"ioctl", sysIoctl},
		20:  {"writev", sysWritev},
		24:  {"sched_yield", sysSchedYield},
		34:  {"pause", sysPause},
		35:  {"nanosleep", sysNanosleep},
		36:  {"getitimer", sysGetitimer},
		37:  {"alarm", sysAlarm},
		38:  {"setitimer", sysSetitimer},
		39:  {"getpid", sysGetpid},
		56:  {"clone", sysClone},
		57:  {"fork", sysFork},
		58:  {"vfork", sysVfork},
		59:  {"execve", sysExecve},
		322: {"execveat", sysExecveat},
		60:  {"exit", sysExitThread},
		61:  {"wait4", sysWait4},
		62:  {"kill", sysKill},
		63:  {"uname", sysUname},
		96:  {"gettimeofday", sysGettimeofday},
		97:  {"getrlimit", sysGetrlimit},
		99:  {"sysinfo", sysSysinfo},
		157: {"prctl", sysPrctl},
		160: {"setrlimit", sysSetrlimit},
		302: {"prlimit64", sysPrlimit64},
		102: {"getuid", sysGetuid},
		104: {"getgid", sysGetgid},
		105: {"setuid", sysSetuid},
		106: {"setgid", sysSetgid},
		107: {"geteuid", sysGeteuid},
		108: {"getegid", sysGetegid},
		113: {"setreuid", sysSetreuid},
		114: {"setregid", sysSetregid},
		115: {"getgroups", sysGetgroups},
		116: {"setgroups", sysSetgroups},
		117: {"setresuid", sysSetresuid},
		118: {"getresuid", sysGetresuid},
		119: {"setresgid", sysSetresgid},
		120: {"getresgid", sysGetresgid},
		122: {"setfsuid", sysSetfsuid},
		123: {"setfsgid", sysSetfsgid},
		109: {"setpgid", sysSetpgid},
		110: {"getppid", sysGetppid},
		111: {"getpgrp", sysGetpgrp},
		112: {"setsid", sysSetsid},
		121: {"getpgid", sysGetpgid},
		124: {"getsid", sysGetsid},
		127: {"rt_sigpending", sysRtSigpending},
		130: {"rt_sigsuspend", sysRtSigsuspend},
		131: {"sigaltstack", sysSigaltstack},
		158: {"arch_prctl", sysArchPrctl},
		186: {"gettid", sysGettid},
		200: {"tkill", sysTkill},
		201: {"time", sysTime},
		202: {"futex", sysFutex},
		218: {"set_tid_address", sysSetTidAddress},
		219: {"restart_syscall", sysRestartSyscall},
		228: {"clock_gettime", sysClockGettime},
		229: {"clock_getres", sysClockGetres},
		230: {"clock_nanosleep", sysClockNanosleep},
		227: {"clock_settime", sysClockSettime},
		159: {"adjtimex", sysAdjtimex},
		305: {"clock_adjtime", sysClockAdjtime},
		164: {"settimeofday", sysSettimeofday},
		98:  {"getrusage", sysGetrusage},
		100: {"times", sysTimes},
		128: {"rt_sigtimedwait", sysRtSigtimedwait},
		129: {"rt_sigqueueinfo", sysRtSigqueueinfo},
		247: {"waitid", sysWaitid},
		297: {"rt_tgsigqueueinfo", sysRtTgsigqueueinfo},
		203: {"sched_setaffinity", sysSchedSetaffinity},
		204: {"sched_getaffinity", sysSchedGetaffinity},
		309: {"getcpu", sysGetcpu},
		231: {"exit_group", sysExitGroup},
		234: {"tgkill", sysTgkill},
		169: {"reboot", sysReboot},
		273: {"set_robust_list", sysSetRobustList},
		274: {"get_robust_list", sysGetRobustList},
		317: {"seccomp", sysSeccomp},
		318: {"getrandom", sysGetrandom},
		137: {"statfs", sysStatfs}, // sys_fs.go
		138: {"fstatfs", sysFstatfs},
		103: {"syslog", sysSyslog}, // sys_syslog.go
		// sys_sched.go
		140: {"getpriority", sysGetpriority},
		141: {"setpriority", sysSetpriority},
		142: {"sched_setparam", sysSchedSetparam},
		143: {"sched_getparam", sysSchedGetparam},
		144: {"sched_setscheduler", sysSchedSetscheduler},
		145: {"sched_getscheduler", sysSchedGetscheduler},
		146: {"sched_get_priority_max", sysSchedGetPriorityMax},
		147: {"sched_get_priority_min", sysSchedGetPriorityMin},
		148: {"sched_rr_get_interval", sysSchedRrGetInterval},
		170: {"sethostname", sysSethostname},
		171: {"setdomainname", sysSetdomainname},
		251: {"ioprio_set", sysIoprioSet},
		252: {"ioprio_get", sysIoprioGet},
		434: {"pidfd_open", sysPidfdOpen},         // pidfd.go
		283: {"timerfd_create", sysTimerfdCreate}, // sys_timer.go
		286: {"timerfd_settime", sysTimerfdSettime},
		287: {"timerfd_gettime", sysTimerfdGettime},
		282: {"signalfd", sysSignalfd}, // signalfd.go
		289: {"signalfd4", sysSignalfd4},
		222: {"timer_create", sysTimerCreate},
		223: {"timer_settime", sysTimerSettime},
		224: {"timer_gettime", sysTimerGettime},
		225: {"timer_getoverrun", sysTimerGetoverrun},
		226: {"timer_delete", sysTimerDelete},
		424: {"pidfd_send_signal", sysPidfdSendSignal},
		438: {"pidfd_getfd", sysPidfdGetfd},
		319: {"memfd_create", sysMemfdCreate}, // sys_memfd.go
		275: {"splice", sysSplice},            // sys_splice.go
		276: {"tee", sysTee},
		278: {"vmsplice", sysVmsplice},
		326: {"copy_file_range", sysCopyFileRange},
		277: {"sync_file_range", sysSyncFileRange},
		221: {"fadvise64", sysFadvise64},
		187: {"readahead", sysReadahead},
		149: {"mlock", sysMlock}, // sys_mlock.go
		150: {"munlock", sysMunlock},
		151: {"mlockall", sysMlockall},
		152: {"munlockall", sysMunlockall},
		325: {"mlock2", sysMlock2},
		188: {"setxattr", sysSetxattr}, // sys_xattr.go
		189: {"lsetxattr", sysLsetxattr},
		190: {"fsetxattr", sysFsetxattr},
		191: {"getxattr", sysGetxattr},
		192: {"lgetxattr", sysLgetxattr},
		193: {"fgetxattr", sysFgetxattr},
		194: {"listxattr", sysListxattr},
		195: {"llistxattr", sysLlistxattr},
		196: {"flistxattr", sysFlistxattr},
		197: {"removexattr", sysRemovexattr},
		198: {"lremovexattr", sysLremovexattr},
		199: {"fremovexattr", sysFremovexattr},
		125: {"capget", sysCapget}, // sys_cap.go
		126: {"capset", sysCapset},
		135: {"personality", sysPersonality},
		324: {"membarrier", sysMembarrier}, // sys_membarrier.go
		334: {"rseq", sysRseq},
		435: {"clone3", sysClone3},
	} {
		syscalls[no] = e
	}
}

var enosysSeen sync.Map

// Trace logs every system call with its first arguments and result
// (strace on the kernel command line).
var Trace bool

// syscall handles the system call in t.regs and reports whether the thread
// has exited.
func (t *Thread) syscall() bool {
	r := &t.regs
	no := r.RAX
	// The arguments live in the thread: handlers take their address, and
	// a local array would be allocated on every system call.
	// (Element by element: a composite literal is built on the stack
	// and copied.)
	a := &t.args
	a[0], a[1], a[2], a[3], a[4], a[5] = r.RDI, r.RSI, r.RDX, r.R10, r.R8, r.R9
	if t.seccompMode.Load() != 0 {
		if done, exit := t.seccompCheck(no); done {
			return exit
		}
	}
	var e Entry
	if no < nSyscalls {
		e = syscalls[no]
	}
	if e.Name == "" {
		if _, seen := enosysSeen.LoadOrStore(no, true); !seen {
			Log.Warnf("proc: %v: unimplemented system call %d", t.Proc, no)
		}
		e = Entry{"nosys", func(*Thread, *[6]uint64) (int64, bool) { return -eNOSYS, false }}
	}
	if no == 15 { // rt_sigreturn
		if err := t.sigreturn(); err != nil {
			t.fatalSignal(sigSEGV)
			return true
		}
		return false
	}
	t.syscallNo = no
	t.kseq.Add(1)
	var ret int64
	var exit bool
	if AllocStat {
		ret, exit = t.countAllocs(no, e.Fn)
	} else {
		ret, exit = e.Fn(t, a)
	}
	t.kseq.Add(1)
	if SysStat || Trace || trace.IsEnabled() {
		t.syscallDone(no, e.Name, ret)
	}
	switch ret {
	case -eRESTARTSYS, -eRESTARTNOINTR, -eRESTARTNOHAND, -eRESTARTBLOCK:
		// Back onto the SYSCALL instruction, to be made again unless
		// a handler runs first that says otherwise (restartForHandler):
		// as Linux's handle_signal, the choice waits for the signal
		// actually delivered, after any stop the thread takes first
		// (a SIGCONT handler then ends the call with EINTR).
		r.RIP -= 2
		r.RAX = no
		if ret == -eRESTARTBLOCK {
			r.RAX = 219 // restart_syscall: t.restartFn finishes it
		}
		t.restarting = ret
		return exit
	}
	r.RAX = uint64(ret)
	return exit
}

// syscallDone counts, traces and logs a system call that returned ret,
// as the kernel's options ask; kept out of syscall, whose frame would
// otherwise hold the log call's arguments on every call.
func (t *Thread) syscallDone(no uint64, name string, ret int64) {
	if SysStat {
		countResult(no, ret)
	}
	if trace.IsEnabled() {
		t.markRequest(no, ret)
	}
	if Trace {
		a := &t.args
		Log.Infof("strace: %d %s(%#x, %#x, %#x, %#x) = %d", t.TID, name, a[0], a[1], a[2], a[3], ret)
	}
}

func sysGetpid(t *Thread, a *[6]uint64) (int64, bool) { return int64(t.Proc.PID), false }
func sysGettid(t *Thread, a *[6]uint64) (int64, bool) { return int64(t.TID), false }

func sysSchedYield(t *Thread, a *[6]uint64) (int64, bool) {
	runtime.Gosched()
	return 0, false
}

const maxIO = iobuf.Max // bytes one read or write moves at a time

func sysArchPrctl(t *Thread, a *[6]uint64) (int64, bool) {
	const setFS, getFS, getCPUID, setCPUID = 0x1002, 0x1003, 0x1011, 0x1012
	switch a[0] {
	case getCPUID:
		return 1, false // CPUID is never made to fault
	case setCPUID:
		return -eNODEV, false // no CPUID faulting to turn on, as on CPUs without it
	case setFS:
		if a[1] >= mm.UserTop {
			return -ePERM, false
		}
		t.regs.FSBase = a[1]
	case getFS:
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], t.regs.FSBase)
		return errno(t.Proc.Space().CopyOut(uintptr(a[1]), b[:])), false
	default:
		return -eINVAL, false
	}
	return 0, false
}

func sysSetTidAddress(t *Thread, a *[6]uint64) (int64, bool) {
	t.clearTID, t.clearSpace = uintptr(a[0]), t.Proc.Space()
	return int64(t.TID), false
}

func sysUname(t *Thread, a *[6]uint64) (int64, bool) {
	var u [6 * 65]byte
	host, domain := utsName()
	for i, s := range []string{"Linux", host, "6.1.0-shortbread", "#1 SMP Shortbread", "x86_64", domain} {
		copy(u[i*65:], s)
	}
	return errno(t.Proc.Space().CopyOut(uintptr(a[0]), u[:])), false
}

// putTimespec writes ns as a timespec (or, with usec, a timeval) at at:
// whole seconds rounded down and a fraction that is never negative, as
// the vDSO writes it.
func putTimespec(t *Thread, at uintptr, ns int64, usec bool) int64 {
	var b [16]byte
	sec, frac := ns/1e9, ns%1e9
	if frac < 0 {
		sec, frac = sec-1, frac+1e9
	}
	binary.LittleEndian.PutUint64(b[:], uint64(sec))
	if usec {
		frac /= 1000
	}
	binary.LittleEndian.PutUint64(b[8:], uint64(frac))
	return errno(t.Proc.Space().CopyOut(at, b[:]))
}

// monotonicNow is CLOCK_MONOTONIC as programs see it, in nanoseconds:
// the TSC scaled as the vDSO scales it (kernel/wallclock).
func monotonicNow() int64 { return wallclock.Monotonic() }

// sysGettimeofday fills the time and, when asked, the time zone: zero
// west of Greenwich and no DST, Linux's sys_tz until settimeofday sets it.
func sysGettimeofday(t *Thread, a *[6]uint64) (int64, bool) {
	if a[0] != 0 {
		if r := putTimespec(t, uintptr(a[0]), wallclock.Realtime(), true); r != 0 {
			return r, false
		}
	}
	if a[1] != 0 {
		var tz [8]byte
		return errno(t.Proc.Space().CopyOut(uintptr(a[1]), tz[:])), false
	}
	return 0, false
}

func sysTime(t *Thread, a *[6]uint64) (int64, bool) {
	now := wallclock.Now().Unix()
	if a[0] != 0 {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(now))
		if err := t.Proc.Space().CopyOut(uintptr(a[0]), b[:]); err != nil {
			return errno(err), false
		}
	}
	return now, false
}

func sysNanosleep(t *Thread, a *[6]uint64) (int64, bool) {
	var b [16]byte
	if err := t.Proc.Space().CopyIn(uintptr(a[0]), b[:]); err != nil {
		return errno(err), false
	}
	sec, nsec := int64(binary.LittleEndian.Uint64(b[:])), int64(binary.LittleEndian.Uint64(b[8:]))
	if sec < 0 || nsec < 0 || nsec >= 1e9 {
		return -eINVAL, false
	}
	return t.relativeSleep(time.Now().Add(time.Duration(sec)*time.Second+time.Duration(nsec)), uintptr(a[1])), false
}

// relativeSleep sleeps until end (Go's monotonic clock), the deadline of
// a relative nanosleep or clock_nanosleep. Interrupted, it writes what
// is left to remAt (if not 0) and returns eRESTARTBLOCK: after a stop
// and SIGCONT, or a signal that runs no handler, the sleep goes on to
// the same deadline (time stopped counts, as on Linux); a handler makes
// it EINTR.
func (t *Thread) relativeSleep(end time.Time, remAt uintptr) int64 {
	left, intr := t.sleep(max(time.Until(end), 0))
	if !intr {
		return 0
	}
	if remAt != 0 {
		// Linux reports a rest it cannot write as EFAULT.
		if e := putTimespec(t, remAt, int64(left), false); e != 0 {
			return e
		}
	}
	t.restartFn = func(t *Thread) int64 { return t.relativeSleep(end, remAt) }
	return -eRESTARTBLOCK
}

// sysGetrandom fills from math/rand/v2's global generator: ChaCha8, seeded
// by the runtime from the machine layer's RDRAND (a weak time-based seed
// on CPUs without it: runtime-patches/sb_syscall.go). (crypto/rand would pull
// in a 32 MiB FIPS DRBG buffer the kernel image would have to carry.)
func sysGetrandom(t *Thread, a *[6]uint64) (int64, bool) {
	if a[2]&^7 != 0 { // GRND_NONBLOCK, GRND_RANDOM, GRND_INSECURE
		return -eINVAL, false
	}
	buf := make([]byte, min(a[1], 1<<16))
	for i := 0; i < len(buf); i += 8 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], rand.Uint64())
		copy(buf[i:], w[:])
	}
	if err := t.Proc.Space().CopyOut(uintptr(a[0]), buf); err != nil {
		return errno(err), false
	}
	return int64(len(buf)), false
}
