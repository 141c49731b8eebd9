package proc

// supportNotes qualifies the system-call table for the calls that are
// not supported in full: "partial" says what is missing, "unsupported"
// why a call answers ENOSYS on purpose (every number missing from the
// table answers ENOSYS too, logged once). A call in the table and not
// here is supported as Linux documents it. tools/systable reads this
// map and the table to write docs/syscalls.md; its test fails when one
// names a call the other lacks, or when the document is stale.
var supportNotes = map[string]supportNote{
	"sched_setaffinity":  {partial, "the mask is checked (EINVAL without an online CPU) and accepted, but threads are not pinned: the Go scheduler places kernel goroutines"},
	"sched_setscheduler": {partial, "policies and priorities are recorded and reported; the scheduler does not give SCHED_FIFO/RR threads precedence"},
	"capset":             {partial, "capabilities are not kept per process: only the sets already held are accepted, so dropping them is EPERM"},
	"setxattr":           {partial, "no file system stores extended attributes: EOPNOTSUPP after Linux's checks (also lsetxattr, fsetxattr)"},
	"lsetxattr":          {partial, "as setxattr"},
	"fsetxattr":          {partial, "as setxattr"},
	"mount":              {partial, "tmpfs, proc, devtmpfs, devpts, ext2/3/4 and remounts; no bind mounts and no second mount of a mounted device (EBUSY); propagation flags accepted and ignored; MS_NOSUID/NODEV/NOEXEC accepted, not enforced"},
	"mmap":               {partial, "MAP_LOCKED, MAP_POPULATE and MAP_HUGETLB are accepted and ignored (pages come on demand, 4 KiB each); MAP_SHARED_VALIDATE does not refuse unknown flags"},
	"mq_notify":          {partial, "SIGEV_SIGNAL, SIGEV_NONE and SIGEV_THREAD (a netlink cookie); no mqueue file system to mount"},
	"adjtimex":           {partial, "frequency, tick length, one-shot slews (adjtime) and ADJ_SETOFFSET move the clock, and every field is kept and reported as Linux does; no phase-locked loop: an ADJ_OFFSET under STA_PLL is remembered, not chased, and no PPS"},
	"clock_adjtime":      {partial, "as adjtimex, for CLOCK_REALTIME; the other clocks are EOPNOTSUPP"},
	"rseq":               {unsupported, "restartable sequences need the scheduler to keep cpu_id current and to abort critical sections on preemption; glibc runs without rseq on ENOSYS"},
	"clone3":             {partial, "one PID namespace (set_tid names at most one ID) and no cgroups: CLONE_INTO_CGROUP is range-checked and ignored, as by a Linux without CONFIG_CGROUPS; the namespace flags are EINVAL as for clone"},
	"execve":             {partial, "static and dynamically linked programs (PT_INTERP's loader, e.g. glibc's ld.so, at a random base); AT_HWCAP2 (no bits: CR4.FSGSBASE stays off) and AT_MINSIGSTKSZ as Linux 6.1 passes them; a vDSO (AT_SYSINFO_EHDR) serves clock_gettime, gettimeofday, time and clock_getres without entering the kernel; its getcpu makes the system call, as the kernel does not keep IA32_TSC_AUX for RDPID/RDTSCP"},
}

type supportLevel int

const (
	partial supportLevel = iota + 1
	unsupported
)

type supportNote struct {
	level supportLevel
	note  string
}
