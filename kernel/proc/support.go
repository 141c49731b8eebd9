package proc

// supportNotes qualifies the system-call table for the calls that are
// not supported in full: "partial" says what is missing, "unsupported"
// why a call answers ENOSYS on purpose (every number missing from the
// table answers ENOSYS too, logged once). A call in the table and not
// here, or here as supported, is supported as Linux documents it; a
// supported note names the documented errors the suite cannot make
// happen, and why. tools/systable reads this
// map and the table to write docs/syscalls.md; its test fails when one
// names a call the other lacks, or when the document is stale.
var supportNotes = map[string]supportNote{
	"sched_setaffinity":  {partial, "the mask is per thread, inherited by fork and clone, and holds while the thread runs its program: the machine layer moves it to an allowed CPU before it enters user mode, and no other CPU takes it while it is there (a thread in user mode is kicked back first); its system calls run as kernel goroutines on any CPU, and getcpu reports the CPU the call was made on. Untested: EPERM (another user's thread without root)"},
	"sched_setscheduler": {partial, "policies and priorities are per process, not per thread. While a thread runs its program, the machine layer's run queue puts SCHED_FIFO/RR before every lower priority and the kernel's own threads (priority order, then arrival; an IPI takes a CPU running a lower priority; FIFO keeps the CPU, RR rotates every 100 ms), with RT throttling as Linux's default (950 ms of each second per CPU); nice sets SCHED_OTHER's time slice (10 ms at nice 0, x0.8 per step, at most 100 ms). In the kernel a thread is a goroutine of priority 0 (the Go scheduler has none)"},
	"capset":             {partial, "capabilities are not kept per process (they follow the user IDs, less what an execve under a reduced bounding set or SECURE_NOROOT left out): only the sets already held are accepted, so dropping them is EPERM"},
	"socket":             {supported, "AF_UNIX (stream, datagram, seqpacket), AF_INET and AF_INET6 (TCP, UDP, and raw ICMP/ICMPv6 for root as ping uses; other raw protocols EPROTONOSUPPORT; ping sockets EACCES, as Linux's default net.ipv4.ping_group_range allows no group), AF_NETLINK (NETLINK_ROUTE); other families EAFNOSUPPORT"},
	"setxattr":           {partial, "no file system stores extended attributes: EOPNOTSUPP after Linux's checks (also lsetxattr, fsetxattr)"},
	"lsetxattr":          {partial, "as setxattr"},
	"fsetxattr":          {partial, "as setxattr"},
	"mount":              {partial, "tmpfs, proc, devtmpfs, devpts, mqueue, ext2/3/4 (options discard, commit=, data=ordered, errors=) and remounts; a second mount of a mounted device shares its file system, as Linux shares the superblock (EBUSY for another type or read-only state), but a remount changes only its own mount's read-only state, where Linux's changes the superblock's; MS_MOVE with the mounts inside (switch_root; t_mount, tools/roottest.sh); no bind mounts; propagation flags accepted and ignored; MS_NOSUID, MS_NODEV, MS_NOEXEC and the access-time flags enforced per mount (t_mntflags); tmpfs size= enforced (default half of memory, as Linux), nr_inodes= accepted"},
	"adjtimex":           {partial, "frequency, tick length, one-shot slews (adjtime) and ADJ_SETOFFSET move the clock, and every field is kept and reported as Linux does; no phase-locked loop: an ADJ_OFFSET under STA_PLL is remembered, not chased, and no PPS"},
	"clock_adjtime":      {partial, "as adjtimex, for CLOCK_REALTIME; the other clocks are EOPNOTSUPP"},
	"rseq":               {partial, "registration, unregistration and their errors as Linux 6.1 (the 32-byte area only); cpu_id written on return to user mode on another CPU; a critical section aborts on preemption or migration in user mode and on signal delivery (the signature checked; SIGSEGV for a bad descriptor), and also on any other kick out of user mode (CPU timers), which rseq allows; a switch while the thread blocks in a system call is not an event (Linux clears rseq_cs then); no node_id/mm_cid (6.3); membarrier's RSEQ command aborts the sections of the process's other threads (t_rseq), with MEMBARRIER_CMD_FLAG_CPU all of them still (Linux: only the one on that CPU; more aborts, which rseq allows)"},
	"clone3":             {partial, "one PID namespace (set_tid names at most one ID) and no cgroups: CLONE_INTO_CGROUP is range-checked and ignored, as by a Linux without CONFIG_CGROUPS; the namespace flags are EINVAL as for clone"},
	"execve":             {partial, "static and dynamically linked programs (PT_INTERP's loader, e.g. glibc's ld.so, at a random base); AT_HWCAP2 (HWCAP2_FSGSBASE where the CPU has FSGSBASE, which the machine layer turns on) and AT_MINSIGSTKSZ as Linux 6.1 passes them; a vDSO (AT_SYSINFO_EHDR) serves clock_gettime, gettimeofday, time and clock_getres without entering the kernel, and getcpu by RDPID or RDTSCP (IA32_TSC_AUX holds each CPU's index) where the CPU has RDTSCP, by the system call otherwise. EAGAIN after a set*uid to a user past RLIMIT_NPROC, while the user still is (Linux's deferred check; tasks are counted as Linux counts them, each thread under the real user ID of its own last set*uid, t_secure); root's execve gives the capability bounding set as the permitted set, none under SECURE_NOROOT, and clears SECURE_KEEP_CAPS (as reported: permission checks go by the effective user ID); untested: EIO, ENOMEM, EMFILE/ENFILE, EISDIR for a loader that is a directory, EPERM for tracing (no ptrace); on a nosuid mount set-user-ID bits are ignored, as on Linux (t_mntflags)"},

	// Issue 22's audit of the error tables (t_efile, t_emem and the tests
	// they name). A supported call's note lists the errors its man page
	// documents that the suite cannot make happen, and why.
	"open":       {partial, "O_TMPFILE is EOPNOTSUPP (no file system here makes unnamed files), after Linux's checks of the directory (ENOENT, ENOTDIR, EROFS, EACCES); untested: EDQUOT (no quotas), ENOSPC and ENOMEM (tmpfs has no size limit to fill: it takes memory until none is left), ENFILE (bounded only by memory: t_kmem), EFBIG and EOVERFLOW (32-bit only: O_LARGEFILE is always set on x86-64), EBUSY for O_EXCL of a block device in use and EINVAL for O_DIRECT (not checked)"},
	"openat":     {partial, "as open"},
	"creat":      {supported, "untested: as open's"},
	"mincore":    {supported, "untested: EAGAIN (the answer is built a page of the vector at a time on the stack: nothing to run out of)"},
	"read":       {supported, "O_DIRECT's EINVAL (offset, lengths or buffers out of a block device's alignment) is in t_blk; untested: EIO (a device's failure: t_blkerr covers the block devices)"},
	"pread64":    {supported, "untested: as read's"},
	"readv":      {supported, "untested: as read's; the man page's EINVAL for iov_len values whose sum overflows ssize_t is not what Linux 6.1 does (it shortens the transfer to MAX_RW_COUNT), so neither kernel is held to it"},
	"preadv":     {supported, "untested: as readv's"},
	"preadv2":    {supported, "untested: as readv's"},
	"write":      {supported, "O_DIRECT's EINVAL on block devices is in t_blk; untested: EDQUOT and ENOSPC (as open's), EIO; RLIMIT_FSIZE's EFBIG is in t_falloc and t_misc"},
	"pwrite64":   {supported, "untested: as write's"},
	"writev":     {supported, "untested: as write's, and readv's note on the iov_len sum"},
	"pwritev":    {supported, "untested: as writev's"},
	"pwritev2":   {supported, "untested: as writev's"},
	"truncate":   {supported, "untested: EPERM for append-only or immutable files (no file system here keeps those flags), EFBIG past the file system's largest size (tmpfs's is the largest off_t; RLIMIT_FSIZE's EFBIG is t_falloc's), EIO"},
	"ftruncate":  {supported, "untested: as truncate's"},
	"fallocate":  {supported, "untested: ENOSPC (as open's), EIO, ETXTBSY (no swap files), EPERM for append-only or immutable files"},
	"link":       {supported, "untested: EMLINK (tmpfs has no link limit, as on Linux), EDQUOT, ENOSPC, EIO, EPERM from fs.protected_hardlinks (not checked)"},
	"linkat":     {supported, "untested: as link's"},
	"unlink":     {supported, "untested: EPERM for append-only or immutable files, EIO"},
	"unlinkat":   {supported, "untested: as unlink's"},
	"rmdir":      {supported, "untested: as unlink's"},
	"rename":     {supported, "untested: EMLINK, EDQUOT, ENOSPC, EIO, EPERM for append-only or immutable files"},
	"renameat":   {supported, "untested: as rename's"},
	"renameat2":  {supported, "untested: as rename's"},
	"mkdir":      {supported, "untested: EMLINK, EDQUOT, ENOSPC, ENOMEM (as open's)"},
	"mkdirat":    {supported, "untested: as mkdir's"},
	"mknod":      {supported, "untested: EDQUOT, ENOSPC, ENOMEM (as open's)"},
	"mknodat":    {supported, "untested: as mknod's"},
	"symlink":    {supported, "untested: EDQUOT, ENOSPC, ENOMEM (as open's), EIO"},
	"symlinkat":  {supported, "untested: as symlink's"},
	"chmod":      {supported, "untested: EIO, EPERM for immutable files"},
	"fchmod":     {supported, "untested: as chmod's"},
	"fchmodat":   {supported, "untested: as chmod's"},
	"chown":      {supported, "untested: as chmod's"},
	"fchown":     {supported, "untested: as chmod's"},
	"lchown":     {supported, "untested: as chmod's"},
	"fchownat":   {supported, "untested: as chmod's"},
	"utimensat":  {supported, "untested: EPERM for append-only or immutable files"},
	"access":     {supported, "untested: EIO, EPERM for immutable files; the man page's ETXTBSY for W_OK on a running program is not what Linux 6.1 does (faccessat does not look), so neither kernel is held to it"},
	"faccessat":  {supported, "untested: as access's"},
	"faccessat2": {supported, "untested: as access's"},
	"stat":       {supported, "untested: EOVERFLOW (32-bit only), ENOMEM"},
	"lstat":      {supported, "untested: as stat's"},
	"fstat":      {supported, "untested: as stat's"},
	"newfstatat": {supported, "untested: as stat's"},
	"statx":      {supported, "untested: ENOMEM"},
	"dup2":       {supported, "untested: EBUSY (Linux's race of dup2 with an open that is installing the same descriptor: a timing window), EINTR"},
	"dup3":       {supported, "untested: as dup2's"},
	"fcntl":      {partial, "F_NOTIFY (dnotify) is EINVAL for a directory, as in a Linux built without CONFIG_DNOTIFY, after Linux's own checks (an empty mask succeeds, a file is ENOTDIR); untested: ENOLCK (the lock table is bounded only by memory)"},
	"mmap":       {partial, "MAP_POPULATE and MAP_HUGETLB are accepted and ignored (pages come on demand, 4 KiB each); files of tmpfs and ext4 (through the page cache) mapped shared and private; EPERM for PROT_EXEC on a noexec mount (t_mntflags); untested: ENOMEM past vm.max_map_count (65,530 mappings), ENFILE, ETXTBSY (MAP_DENYWRITE is ignored, as on Linux)"},
	"mprotect":   {supported, "EACCES for PROT_EXEC on a noexec mount (t_mntflags)"},
	"mremap":     {partial, "MREMAP_DONTUNMAP is EINVAL (not supported)"},

	// Processes and signals (t_eproc, with t_proc, t_signal, t_pidfd,
	// t_clone3, t_execveat, t_badinput, t_security and t_errors).
	"clone":             {partial, "one namespace of each kind: the CLONE_NEW* flags are EINVAL (Linux: EPERM unprivileged, else a new namespace); RLIMIT_NPROC's EAGAIN counts tasks by real user ID as Linux does, a thread under its own last set*uid's (credentials are otherwise per process here); untested: ENOMEM (t_kmem exhausts memory with pipes), EAGAIN past threads-max or pid_max (tens of thousands of tasks), ERESTARTNOINTR (never reaches user space)"},
	"fork":              {supported, "untested: as clone's"},
	"vfork":             {supported, "untested: as clone's"},
	"wait4":             {supported, "untested: none (EINTR in t_signal, EFAULT in t_badinput)"},
	"waitid":            {supported, "untested: none"},
	"kill":              {supported, "untested: none"},
	"tkill":             {supported, "untested: EAGAIN past RLIMIT_SIGPENDING is tgkill's (t_errors), made the same way"},
	"rt_tgsigqueueinfo": {supported, "untested: EAGAIN past RLIMIT_SIGPENDING (rt_sigqueueinfo's is in t_errors)"},
	"rt_sigsuspend":     {supported, "untested: none (EINTR in t_signal)"},
	"rt_sigtimedwait":   {supported, "untested: none"},
	"sigaltstack":       {supported, "untested: none; the smallest stack is Linux's MINSIGSTKSZ (2048), as Linux 6.1 checks it on a CPU without AMX"},
	"setpgid":           {supported, "untested: none"},
	"pidfd_open":        {supported, "untested: EMFILE and ENFILE (as open's), ENODEV (pidfs is always there), ENOMEM"},
	"pidfd_send_signal": {supported, "untested: none"},
	"prctl":             {partial, "PR_SET/GET_NAME, DUMPABLE, PDEATHSIG, TIMERSLACK, TSC (PR_TSC_ENABLE only), CHILD_SUBREAPER, NO_NEW_PRIVS (execve then ignores set-ID bits), THP_DISABLE (kept; no huge pages), PR_GET_TID_ADDRESS, CAPBSET_READ and CAPBSET_DROP (a per-process bounding set, inherited, applied by execve to root's permitted set and shown as CapBnd; capabilities are reported by capget and /proc but permission checks go by the effective user ID), KEEPCAPS and GET/SET_SECUREBITS (per thread, with Linux's locks and EPERM rules; SECURE_NOROOT honoured by execve as far as the reported sets go; SECURE_NO_SETUID_FIXUP has nothing to act on), GET/SET_SECCOMP (strict and filter modes: see seccomp), GET/SET_SPECULATION_CTRL (what Linux answers on QEMU's -cpu max: speculation enabled, not switchable; the L1D flush force-disabled), SET_MM (Linux's checks in its order; MAP_SIZE answers 104 and AUXV is accepted (no /proc/PID/auxv to show it), but a layout field that passes the checks is EINVAL: the layout is not kept as settable values, and EXE_FILE is EBUSY as Linux's while the old program is mapped), GET/SET_TIMING (statistical only), TASK_PERF_EVENTS_DISABLE/ENABLE (no perf events), MCE_KILL and MCE_KILL_GET (the policy kept; no machine-check recovery) and CAP_AMBIENT (the ambient set stays empty: RAISE is EPERM, as the inheritable set cannot be raised); every other option is EINVAL, among them SET_VMA and the I/O flusher"},
	"seccomp":           {partial, "strict mode (read, write, exit and rt_sigreturn only; any other call ends the thread as SIGKILL) and filter mode: classic BPF checked as Linux checks a seccomp filter and run over seccomp_data, filters stacked (the most urgent answer wins, the newest of equals), KILL_PROCESS/KILL_THREAD (SIGSYS), TRAP (SIGSYS with si_syscall, si_arch, si_errno; RAX back to the number), ERRNO (capped at 4095), LOG, ALLOW, TRACE and USER_NOTIF as ENOSYS (no tracer or listener can exist), EACCES without no_new_privs or privilege, TSYNC (with no_new_privs) and TSYNC_ESRCH, SECCOMP_GET_ACTION_AVAIL, SECCOMP_GET_NOTIF_SIZES, /proc/PID/status Seccomp and Seccomp_filters (t_seccomp); missing: SECCOMP_FILTER_FLAG_NEW_LISTENER (user notification: EINVAL) and the allow cache (speed only)"},

	// Time (t_etime, with t_time, t_clock, t_ptimer, t_timerfd,
	// t_adjtimex, t_vdso and t_errors).
	"clock_gettime":   {supported, "CLOCK_REALTIME_COARSE and CLOCK_MONOTONIC_COARSE read the time at the last 4 ms tick (Debian's HZ=250), computed from the counter: this kernel has no periodic tick; untested: none"},
	"clock_getres":    {supported, "the coarse clocks report the 4 ms tick, the others 1 ns; untested: none"},
	"clock_settime":   {supported, "untested: none"},
	"clock_nanosleep": {supported, "a sleep on a CPU-time clock (a process's, or another thread's of the caller's) is woken by the CPU-time accounting once the clock reaches its end, as a timer on that clock would be (t_cputimer); it also looks every second of real time, to end when the clock's process or thread is gone, as Linux's does; untested: none"},
	"nanosleep":       {supported, "untested: none"},
	"timer_create":    {supported, "also on the CPU-time clocks (CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID, clock_getcpuclockid's and pthread_getcpuclockid's): such a timer is checked whenever the clock's process is charged time, and a thread running user code is kicked out of it when the nearest one could expire, so it fires after the time was used and at most one accounting step late (t_cputimer); untested: EAGAIN (no bound but memory)"},
	"timer_settime":   {supported, "untested: none"},
	"setitimer":       {supported, "untested: none"},
	"timerfd_create":  {supported, "untested: EMFILE, ENFILE, ENODEV and ENOMEM (as open's)"},
	"timerfd_settime": {supported, "untested: ECANCELED is read's (t_clock)"},

	// Ids (t_eids, with t_security, t_misc and t_errors).
	"setuid":    {supported, "untested: EAGAIN (Linux 6.1 no longer fails setuid for RLIMIT_NPROC; see execve), and the user-namespace EINVAL (one namespace)"},
	"setgid":    {supported, "untested: the user-namespace EINVAL (one namespace)"},
	"setreuid":  {supported, "untested: as setuid's"},
	"setregid":  {supported, "untested: as setgid's"},
	"setresuid": {supported, "untested: as setuid's"},
	"setresgid": {supported, "untested: as setgid's"},
	"setgroups": {supported, "untested: ENOMEM"},

	// epoll and futex (t_epollf, with t_poll, t_thread, t_badinput and
	// t_errors).
	"epoll_create":    {supported, "untested: EMFILE, ENFILE and ENOMEM (as open's)"},
	"epoll_create1":   {supported, "untested: as epoll_create's"},
	"epoll_ctl":       {supported, "EPOLLEXCLUSIVE is accepted with Linux's rules and wakes every waiter, as a wake-up may; EPOLLWAKEUP is accepted and means nothing (no suspend); untested: ENOMEM (t_kmem), ENOSPC past max_user_watches (bounded only by memory here)"},
	"epoll_wait":      {supported, "untested: none (EINTR in t_poll)"},
	"epoll_pwait":     {supported, "untested: as epoll_wait's"},
	"epoll_pwait2":    {supported, "untested: as epoll_wait's"},
	"futex":           {partial, "FUTEX_WAIT(_BITSET), FUTEX_WAKE(_BITSET), FUTEX_REQUEUE, FUTEX_CMP_REQUEUE, FUTEX_WAKE_OP, and the priority-inheritance locks (FUTEX_LOCK_PI, FUTEX_LOCK_PI2, FUTEX_TRYLOCK_PI, FUTEX_UNLOCK_PI) with ownership by TID, handoff to the first waiter and the robust list's owner death (t_futexpi); FUTEX_WAIT_REQUEUE_PI and FUTEX_CMP_REQUEUE_PI (PI condition variables: the first waiter takes a free mutex or waits behind its owner with up to nr_requeue more, Linux 6.1's errors and order, EINVAL for FUTEX_WAKE/REQUEUE meeting such a waiter and for a mutex word that disagrees with its waiters, t_futexrq); FUTEX_FD is ENOSYS (gone from Linux too). A PI lock does not boost its owner: real-time priorities act only in user mode (sched_setscheduler), and none is lent, and waiters get the lock in arrival order rather than by priority; untested: ENOMEM (no bound but memory)"},
	"get_robust_list": {supported, "untested: none"},
	"madvise":         {partial, "MADV_REMOVE answers Linux's EINVAL (locked, private or anonymous) and EACCES (not writable), then EOPNOTSUPP; the hints are accepted and change nothing; MADV_HWPOISON and MADV_SOFT_OFFLINE are EINVAL (no memory-failure handling: Linux says EPERM to a user)"},
}

type supportLevel int

const (
	partial supportLevel = iota + 1
	unsupported
	// supported marks a call supported as Linux documents it whose note
	// says which documented errors the suite cannot make happen, and why.
	supported
)

type supportNote struct {
	level supportLevel
	note  string
}
