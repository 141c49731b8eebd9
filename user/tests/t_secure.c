/* t_secure: the prctl options with state of their own, and RLIMIT_NPROC
 * per thread. PR_CAPBSET_READ/DROP (EPERM before EINVAL, the bounding set
 * inherited by fork, CapBnd in /proc/PID/status, execve as root giving
 * the bounding set as the permitted set); PR_GET/SET_SECUREBITS (the
 * bits and their locks, EPERM for a locked bit, a cleared lock, an
 * unknown bit or no privilege, PR_SET_KEEPCAPS under its lock, execve
 * clearing SECURE_KEEP_CAPS only, SECURE_NOROOT leaving root no
 * capabilities after execve); seccomp strict mode through prctl and
 * seccomp(2) (argument checks, read/write/exit allowed, anything else
 * and exit_group killing with SIGKILL, PR_GET_SECCOMP among them,
 * Seccomp: 1 in /proc/PID/status, inherited by fork); seccomp filter
 * mode (the flags, program and length checks, EACCES without
 * no_new_privs, the actions ERRNO (capped, 0), TRAP (SIGSYS's fields,
 * RAX), TRACE and USER_NOTIF (ENOSYS), LOG, KILL_THREAD (a thread alone),
 * KILL_PROCESS and an unknown action (SIGSYS), argument tests, stacked
 * filters, fork, TSYNC (with no_new_privs) and its failure, GET_ACTION_AVAIL,
 * GET_NOTIF_SIZES, Seccomp: 2 and Seccomp_filters); the speculation
 * controls as Linux answers on QEMU's -cpu max (ENODEV, EINVAL, ENXIO,
 * EPERM, ERANGE and the /proc/PID/status lines); PR_SET_MM's checks in
 * Linux's order (EINVAL for extra arguments, MAP_SIZE and MAP before
 * EPERM, EBADF/EACCES/EBUSY for EXE_FILE, EINVAL for addresses);
 * RLIMIT_NPROC counting a thread under the user of its own last setuid,
 * not its process's. */
#define _GNU_SOURCE
#include "check.h"
#include "probe.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <ucontext.h>

#define PR_GET_SECCOMP_ 21
#define PR_SET_SECCOMP_ 22
#define PR_CAPBSET_READ_ 23
#define PR_CAPBSET_DROP_ 24
#define PR_GET_KEEPCAPS_ 7
#define PR_SET_KEEPCAPS_ 8
#define PR_GET_SECUREBITS_ 27
#define PR_SET_SECUREBITS_ 28
#define PR_SET_MM_ 35
#define PR_GET_SPEC_ 52
#define PR_SET_SPEC_ 53
#define SPEC_ENABLE 2
#define SPEC_DISABLE 4
#define SPEC_FORCE_DISABLE 8
#define MM_START_CODE 1
#define MM_AUXV 12
#define MM_EXE_FILE 13
#define MM_MAP 14
#define MM_MAP_SIZE 15
#define CAP_NET_RAW_ 13
#define SECBIT_NOROOT 0x01
#define SECBIT_KEEP_CAPS 0x10
#define SECBIT_KEEP_CAPS_LOCKED 0x20

struct cap_header {
	uint32_t version;
	int pid;
};
struct cap_data {
	uint32_t effective, permitted, inheritable;
};

static const char *self_exe;

static int gettid_(void) { return (int)syscall(SYS_gettid); }

/* the value of a /proc/self/status line, as a hex number (or -1) */
static long long status_hex(const char *path, const char *key)
{
	char buf[4096];
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *p = strstr(buf, key);
	if (!p)
		return -1;
	return strtoll(p + strlen(key), NULL, 16);
}

static int status_has(const char *path, const char *line)
{
	char buf[4096];
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	return strstr(buf, line) != NULL;
}

static int capget_(struct cap_data d[2])
{
	struct cap_header h = { 0x20080522, 0 };
	return (int)syscall(SYS_capget, &h, d);
}

/* run as "t_secure caps13": after execve as root with CAP_NET_RAW out of
 * the bounding set: exit 0 iff it is out of the permitted and effective
 * sets and the bounding set, and the rest are in */
static int exec_caps13(void)
{
	struct cap_data d[2];
	if (capget_(d))
		return 10;
	if (d[0].permitted & (1u << CAP_NET_RAW_) || d[0].effective & (1u << CAP_NET_RAW_))
		return 11;
	if (!(d[0].permitted & 1) || !(d[0].effective & 1))
		return 12;
	if (prctl(PR_CAPBSET_READ_, CAP_NET_RAW_, 0, 0, 0) != 0)
		return 13;
	long long prm = status_hex("/proc/self/status", "CapPrm:\t");
	if (prm < 0 || prm & (1ll << CAP_NET_RAW_) || !(prm & 1))
		return 14;
	return 0;
}

/* run as "t_secure noroot": after execve as root under SECURE_NOROOT
 * (with SECURE_KEEP_CAPS set before): no capabilities, NOROOT kept,
 * KEEP_CAPS cleared */
static int exec_noroot(void)
{
	struct cap_data d[2];
	if (capget_(d))
		return 10;
	if (d[0].permitted | d[0].effective | d[1].permitted | d[1].effective)
		return 11;
	if (prctl(PR_GET_SECUREBITS_, 0, 0, 0, 0) != SECBIT_NOROOT)
		return 12;
	if (prctl(PR_GET_KEEPCAPS_, 0, 0, 0, 0) != 0)
		return 13;
	if (status_hex("/proc/self/status", "CapEff:\t") != 0)
		return 14;
	return 0;
}

static int run_self(const char *mode)
{
	int st;
	pid_t pid = fork();
	if (pid == 0) {
		execl(self_exe, self_exe, mode, (char *)NULL);
		_exit(99);
	}
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 200 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static void capbset_nobody(int out)
{
	put(out, rc(prctl(PR_CAPBSET_DROP_, 99, 0, 0, 0)));
	put(out, rc(prctl(PR_CAPBSET_DROP_, CAP_NET_RAW_, 0, 0, 0)));
	put(out, (int)prctl(PR_CAPBSET_READ_, CAP_NET_RAW_, 0, 0, 0));
	put(out, rc(prctl(PR_SET_SECUREBITS_, 0, 0, 0, 0)));
	put(out, rc(prctl(PR_SET_MM_, MM_START_CODE, 0x400000, 0, 0)));
	put(out, rc(prctl(PR_SET_MM_, 99, 0x400000, 0, 0)));
	unsigned size = 0;
	put(out, rc(prctl(PR_SET_MM_, MM_MAP_SIZE, (long)&size, 0, 0)));
	put(out, (int)size);
	put(out, rc(prctl(PR_SET_MM_, MM_MAP, 0, 104, 0)));
	put(out, rc(prctl(PR_SET_MM_, MM_EXE_FILE, 0, 0, 0)));
}

static void test_capbset(void)
{
	CHECK_EQ("capbset.read_last", prctl(PR_CAPBSET_READ_, 40, 0, 0, 0), 1);
	CHECK_ERR("capbset.read_past_last", prctl(PR_CAPBSET_READ_, 41, 0, 0, 0), EINVAL);
	CHECK_EQ("capbset.read_ignores_args", prctl(PR_CAPBSET_READ_, 0, 1, 2, 3), 1);
	CHECK_EQ("capbset.status_full", status_hex("/proc/self/status", "CapBnd:\t"), 0x1ffffffffffll);
	int res[10];
	CHECK_EQ("nobody.results", probe(capbset_nobody, 1, res, 10), 10);
	CHECK_EQ("capbset.nobody_eperm_before_einval", res[0], EPERM);
	CHECK_EQ("capbset.nobody_drop_eperm", res[1], EPERM);
	CHECK_EQ("capbset.nobody_still_reads_1", res[2], 1);
	CHECK_EQ("securebits.nobody_eperm", res[3], EPERM);
	CHECK_EQ("set_mm.nobody_eperm", res[4], EPERM);
	CHECK_EQ("set_mm.nobody_bad_option_eperm", res[5], EPERM);
	CHECK_EQ("set_mm.nobody_map_size", res[6], 0);
	CHECK_EQ("set_mm.map_size_104", res[7], 104);
	CHECK_EQ("set_mm.nobody_map_efault", res[8], EFAULT);
	CHECK_EQ("set_mm.nobody_exe_file_eperm", res[9], EPERM);

	/* in a child: drop CAP_NET_RAW, fork inherits, execve applies it */
	int p[2];
	if (pipe(p))
		return;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		int r[6];
		r[0] = rc(prctl(PR_CAPBSET_DROP_, 99, 0, 0, 0));
		r[1] = rc(prctl(PR_CAPBSET_DROP_, CAP_NET_RAW_, 0, 0, 0));
		r[2] = (int)prctl(PR_CAPBSET_READ_, CAP_NET_RAW_, 0, 0, 0);
		long long bnd = status_hex("/proc/self/status", "CapBnd:\t");
		long long prm = status_hex("/proc/self/status", "CapPrm:\t");
		r[3] = bnd == (0x1ffffffffffll & ~(1ll << CAP_NET_RAW_));
		r[4] = prm == 0x1ffffffffffll; /* the permitted set is cut at execve */
		r[5] = run_self("caps13");
		write(p[1], r, sizeof r);
		_exit(0);
	}
	close(p[1]);
	int r[6] = { -1, -1, -1, -1, -1, -1 };
	CHECK_EQ("capbset.child_reported", read(p[0], r, sizeof r), (long)sizeof r);
	close(p[0]);
	waitpid(pid, NULL, 0);
	CHECK_EQ("capbset.root_bad_cap_einval", r[0], EINVAL);
	CHECK_EQ("capbset.root_drop", r[1], 0);
	CHECK_EQ("capbset.dropped_reads_0", r[2], 0);
	CHECK_EQ("capbset.status_capbnd", r[3], 1);
	CHECK_EQ("capbset.permitted_until_execve", r[4], 1);
	CHECK_EQ("capbset.execve_applies", r[5], 0);
	CHECK_EQ("capbset.parent_untouched", prctl(PR_CAPBSET_READ_, CAP_NET_RAW_, 0, 0, 0), 1);
}

static void test_securebits(void)
{
	CHECK_EQ("securebits.initial", prctl(PR_GET_SECUREBITS_, 0, 0, 0, 0), 0);
	pid_t pid = fork();
	if (pid == 0) {
		/* each step's failure is its own exit code */
		if (prctl(PR_SET_SECUREBITS_, SECBIT_KEEP_CAPS, 0, 0, 0) != 0)
			_exit(1);
		if (prctl(PR_GET_SECUREBITS_, 0, 0, 0, 0) != SECBIT_KEEP_CAPS || prctl(PR_GET_KEEPCAPS_, 0, 0, 0, 0) != 1)
			_exit(2);
		if (prctl(PR_SET_SECUREBITS_, 0x100, 0, 0, 0) != -1 || errno != EPERM)
			_exit(3); /* no such bit */
		if (prctl(PR_SET_KEEPCAPS_, 0, 0, 0, 0) != 0 || prctl(PR_GET_SECUREBITS_, 0, 0, 0, 0) != 0)
			_exit(4);
		if (prctl(PR_SET_SECUREBITS_, SECBIT_KEEP_CAPS | SECBIT_KEEP_CAPS_LOCKED, 0, 0, 0) != 0)
			_exit(5);
		if (prctl(PR_SET_SECUREBITS_, SECBIT_KEEP_CAPS_LOCKED, 0, 0, 0) != -1 || errno != EPERM)
			_exit(6); /* a locked bit */
		if (prctl(PR_SET_SECUREBITS_, SECBIT_KEEP_CAPS, 0, 0, 0) != -1 || errno != EPERM)
			_exit(7); /* a lock cleared */
		if (prctl(PR_SET_KEEPCAPS_, 0, 0, 0, 0) != -1 || errno != EPERM)
			_exit(8);
		if (prctl(PR_SET_KEEPCAPS_, 2, 0, 0, 0) != -1 || errno != EINVAL)
			_exit(9); /* EINVAL first */
		if (prctl(PR_SET_SECUREBITS_, SECBIT_KEEP_CAPS | SECBIT_KEEP_CAPS_LOCKED | SECBIT_NOROOT, 0, 0, 0) != 0)
			_exit(10);
		pid_t c = fork();
		if (c == 0)
			_exit(prctl(PR_GET_SECUREBITS_, 0, 0, 0, 0) == (SECBIT_KEEP_CAPS | SECBIT_KEEP_CAPS_LOCKED | SECBIT_NOROOT) ? 0 : 1);
		int st;
		waitpid(c, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			_exit(11);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK("securebits.bits_and_locks", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		printf("# securebits child: status %#x\n", st);

	/* SECURE_NOROOT: root's execve gives no capabilities; KEEP_CAPS goes */
	pid = fork();
	if (pid == 0) {
		if (prctl(PR_SET_SECUREBITS_, SECBIT_NOROOT | SECBIT_KEEP_CAPS, 0, 0, 0) != 0)
			_exit(90);
		execl(self_exe, self_exe, "noroot", (char *)NULL);
		_exit(91);
	}
	waitpid(pid, &st, 0);
	check_report("securebits.noroot_execve", WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
}

/* --- seccomp strict -------------------------------------------------- */

static void test_seccomp(void)
{
	CHECK_EQ("seccomp.get_0", prctl(PR_GET_SECCOMP_, 0, 0, 0, 0), 0);
	CHECK_ERR("seccomp.prctl_bad_mode", prctl(PR_SET_SECCOMP_, 3, 0, 0, 0), EINVAL);
	CHECK_ERR("seccomp.strict_flags", syscall(SYS_seccomp, 0, 1, NULL), EINVAL);
	CHECK_ERR("seccomp.strict_args", syscall(SYS_seccomp, 0, 0, &self_exe), EINVAL);
	CHECK_ERR("seccomp.bad_op", syscall(SYS_seccomp, 99, 0, NULL), EINVAL);
	CHECK_EQ("seccomp.still_0", prctl(PR_GET_SECCOMP_, 0, 0, 0, 0), 0);

	/* prctl: read and write work, PR_GET_SECCOMP kills; /proc says 1 */
	int to[2], from[2], st;
	if (pipe(to) || pipe(from))
		return;
	pid_t pid = fork();
	if (pid == 0) {
		close(to[1]);
		close(from[0]);
		/* the filter argument is ignored in strict mode */
		if (prctl(PR_SET_SECCOMP_, 1, 12345, 0, 0) != 0)
			_exit(1);
		char c = 0;
		write(from[1], "s", 1);
		read(to[0], &c, 1);
		write(from[1], &c, 1);
		syscall(SYS_prctl, PR_GET_SECCOMP_, 0, 0, 0, 0);
		write(from[1], "!", 1); /* not reached */
		syscall(SYS_exit, 3);
	}
	close(to[0]);
	close(from[1]);
	char c = 0;
	CHECK_EQ("seccomp.write_allowed", read(from[0], &c, 1), 1);
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	CHECK("seccomp.status_1", status_has(path, "\nSeccomp:\t1\n"));
	write(to[1], "r", 1);
	CHECK_EQ("seccomp.read_allowed", read(from[0], &c, 1) == 1 ? c : 0, 'r');
	CHECK_EQ("seccomp.nothing_after_kill", read(from[0], &c, 1), 0);
	waitpid(pid, &st, 0);
	check_report("seccomp.prctl_get_killed", WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
	close(to[1]);
	close(from[0]);

	/* seccomp(2): exit is allowed, exit_group kills, and a fork child
	 * (forked before) is not affected while one forked after... cannot
	 * fork: clone kills too */
	pid = fork();
	if (pid == 0) {
		if (syscall(SYS_seccomp, 0, 0, NULL) != 0)
			_exit(1);
		syscall(SYS_exit, 7);
	}
	waitpid(pid, &st, 0);
	check_report("seccomp.exit_allowed", WIFEXITED(st) && WEXITSTATUS(st) == 7, "status %#x", st);
	pid = fork();
	if (pid == 0) {
		if (syscall(SYS_seccomp, 0, 0, NULL) != 0)
			_exit(1);
		syscall(SYS_exit_group, 7);
		syscall(SYS_exit, 8);
	}
	waitpid(pid, &st, 0);
	check_report("seccomp.exit_group_killed", WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
	pid = fork();
	if (pid == 0) {
		if (syscall(SYS_seccomp, 0, 0, NULL) != 0)
			_exit(1);
		syscall(SYS_getpid);
		syscall(SYS_exit, 8);
	}
	waitpid(pid, &st, 0);
	check_report("seccomp.getpid_killed", WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
	pid = fork();
	if (pid == 0) {
		if (syscall(SYS_seccomp, 0, 0, NULL) != 0)
			_exit(1);
		syscall(9999); /* even a number no call has */
		syscall(SYS_exit, 8);
	}
	waitpid(pid, &st, 0);
	check_report("seccomp.unknown_killed", WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
}

/* --- seccomp filter mode ---------------------------------------------- */

#define BPF_LD 0x00
#define BPF_W 0x00
#define BPF_ABS 0x20
#define BPF_JMP 0x05
#define BPF_JEQ 0x10
#define BPF_K 0x00
#define BPF_RET 0x06
#define RET_KILL_PROCESS 0x80000000u
#define RET_KILL_THREAD 0x00000000u
#define RET_TRAP 0x00030000u
#define RET_ERRNO 0x00050000u
#define RET_USER_NOTIF 0x7fc00000u
#define RET_TRACE 0x7ff00000u
#define RET_LOG 0x7ffc0000u
#define RET_ALLOW 0x7fff0000u
#define AUDIT_ARCH_X86_64 0xc000003eu
#define FLAG_TSYNC 1
#define FLAG_NEW_LISTENER 8
#define FLAG_TSYNC_ESRCH 16
#define FLAG_WAIT_KILLABLE_RECV 32

struct sock_filter_ {
	uint16_t code;
	uint8_t jt, jf;
	uint32_t k;
};
struct sock_fprog_ {
	unsigned short len;
	struct sock_filter_ *filter;
};

/* a program: for each (nr, first argument or -1, answer), the answer;
 * ALLOW for the rest */
struct rule {
	long nr, arg0;
	uint32_t ret;
};

static int build(struct sock_filter_ *f, const struct rule *r, int n)
{
	int i = 0;
	for (int k = 0; k < n; k++) {
		f[i++] = (struct sock_filter_){ BPF_LD | BPF_W | BPF_ABS, 0, 0, 0 };
		if (r[k].arg0 < 0) {
			f[i++] = (struct sock_filter_){ BPF_JMP | BPF_JEQ | BPF_K, 0, 1, (uint32_t)r[k].nr };
		} else {
			f[i++] = (struct sock_filter_){ BPF_JMP | BPF_JEQ | BPF_K, 0, 3, (uint32_t)r[k].nr };
			f[i++] = (struct sock_filter_){ BPF_LD | BPF_W | BPF_ABS, 0, 0, 16 };
			f[i++] = (struct sock_filter_){ BPF_JMP | BPF_JEQ | BPF_K, 0, 1, (uint32_t)r[k].arg0 };
		}
		f[i++] = (struct sock_filter_){ BPF_RET | BPF_K, 0, 0, r[k].ret };
	}
	f[i++] = (struct sock_filter_){ BPF_RET | BPF_K, 0, 0, RET_ALLOW };
	return i;
}

static long install(const struct rule *r, int n, unsigned flags)
{
	static struct sock_filter_ f[256];
	struct sock_fprog_ prog = { (unsigned short)build(f, r, n), f };
	return syscall(SYS_seccomp, 1, flags, &prog);
}

static volatile int trap_code, trap_errno, trap_nr;
static volatile unsigned trap_arch;
static volatile long trap_rax;

static void on_sigsys(int sig, siginfo_t *si, void *uc_)
{
	(void)sig;
	ucontext_t *uc = uc_;
	trap_code = si->si_code;
	trap_errno = si->si_errno;
	trap_nr = ((int *)si)[6];             /* si_syscall */
	trap_arch = ((unsigned *)si)[7];      /* si_arch */
	trap_rax = uc->uc_mcontext.gregs[REG_RAX];
}

static void filter_nobody(int out)
{
	struct rule r[] = { { SYS_getppid, -1, RET_ERRNO | 1 } };
	put(out, rc(install(r, 1, 0)));
	put(out, rc(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)));
	put(out, rc(install(r, 1, 0)));
	put(out, rc(syscall(SYS_getppid)));
}

static volatile int tsync_go, tsync_res, tsync_tid, tsync_nnp;
static void *tsync_thread(void *arg)
{
	tsync_tid = gettid_();
	if (arg) {
		struct rule r[] = { { SYS_getpgrp, -1, RET_ERRNO | 3 } };
		install(r, 1, 0);
	}
	while (!tsync_go)
		usleep(1000);
	tsync_res = syscall(SYS_getppid) == -1 ? errno : 0;
	tsync_nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
	return NULL;
}

/* a raw thread (not musl's: killed, it could not finish its own
 * bookkeeping) that makes the call KILL_THREAD answers */
static volatile int kt_tid, kt_survived;
static char kt_stack[65536] __attribute__((aligned(16)));
static int kt_fn(void *arg)
{
	(void)arg;
	syscall(SYS_sched_yield, 1);
	kt_survived = 1;
	syscall(SYS_exit, 0);
	return 0;
}

/* one fork per case, each returning its own code */
static int in_child(int (*fn)(void))
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(fn());
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static int filter_actions(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO };
	sigaction(SIGSYS, &sa, NULL);
	struct rule r[] = {
		{ SYS_getppid, -1, RET_ERRNO | 1234 },
		{ SYS_getuid, -1, RET_ERRNO | 5000 },
		{ SYS_getgid, -1, RET_TRAP | 0x42 },
		{ SYS_getegid, -1, RET_TRACE },
		{ SYS_geteuid, -1, RET_USER_NOTIF },
		{ SYS_getpriority, 77, RET_ERRNO | 9 },
		{ SYS_gettid, -1, RET_LOG },
		{ SYS_sched_yield, 1, RET_KILL_THREAD },
		{ SYS_sched_yield, 2, RET_KILL_PROCESS },
		{ SYS_sched_yield, 3, 0x00010000u },
		{ SYS_sched_yield, 4, RET_ERRNO | 0 },
	};
	if (install(r, sizeof r / sizeof *r, 0))
		return 1;
	if (syscall(SYS_getppid) != -1 || errno != 1234)
		return 2;
	if (syscall(SYS_getuid) != -1 || errno != 4095)
		return 3;
	long g = syscall(SYS_getgid);
	if (g != SYS_getgid || trap_code != 1 || trap_errno != 0x42 || trap_nr != SYS_getgid ||
	    trap_arch != AUDIT_ARCH_X86_64 || trap_rax != SYS_getgid)
		return 4;
	if (syscall(SYS_getegid) != -1 || errno != ENOSYS)
		return 5;
	if (syscall(SYS_geteuid) != -1 || errno != ENOSYS)
		return 6;
	if (syscall(SYS_getpriority, 77, 0) != -1 || errno != 9)
		return 7;
	errno = 0;
	if (syscall(SYS_getpriority, PRIO_PROCESS, 0) < 0 || errno)
		return 8; /* another first argument: allowed */
	if (syscall(SYS_gettid) != getpid())
		return 9;
	if (syscall(SYS_sched_yield, 4) != 0)
		return 10; /* ERRNO with 0: success without the call */
	if (prctl(PR_GET_SECCOMP_, 0, 0, 0, 0) != 2)
		return 11;
	if (!status_has("/proc/self/status", "\nSeccomp:\t2\nSeccomp_filters:\t1\n"))
		return 12;
	if (syscall(SYS_seccomp, 0, 0, NULL) != -1 || errno != EINVAL)
		return 13; /* no strict mode now */
	/* a thread killed alone; the process goes on */
	int ctid = clone(kt_fn, kt_stack + sizeof kt_stack,
			 CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
				 CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID,
			 NULL, &kt_tid, NULL, &kt_tid);
	if (ctid <= 0)
		return 14;
	for (int v; (v = kt_tid) != 0;)
		syscall(SYS_futex, &kt_tid, 0 /* FUTEX_WAIT */, v, NULL, NULL, 0);
	if (kt_survived)
		return 19;
	/* a second filter: equal actions go to the newest */
	struct rule r2[] = { { SYS_getppid, -1, RET_ERRNO | 7 } };
	if (install(r2, 1, 0))
		return 15;
	if (syscall(SYS_getppid) != -1 || errno != 7)
		return 16;
	if (!status_has("/proc/self/status", "\nSeccomp_filters:\t2\n"))
		return 17;
	pid_t c = fork();
	if (c == 0)
		_exit(syscall(SYS_getppid) == -1 && errno == 7 ? 0 : 1);
	int st;
	waitpid(c, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 18;
	/* the kill actions end the process with SIGSYS */
	for (long a = 1; a <= 3; a++) {
		c = fork();
		if (c == 0) {
			syscall(SYS_sched_yield, a);
			_exit(50);
		}
		waitpid(c, &st, 0);
		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSYS)
			return 20 + (int)a;
	}
	return 0;
}

static int filter_tsync(void)
{
	pthread_t th;
	tsync_go = 0;
	tsync_tid = 0;
	pthread_create(&th, NULL, tsync_thread, NULL);
	while (!tsync_tid)
		usleep(1000);
	struct rule r[] = { { SYS_getppid, -1, RET_ERRNO | 11 } };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return 5;
	if (install(r, 1, FLAG_TSYNC))
		return 1;
	tsync_go = 1;
	pthread_join(th, NULL);
	if (tsync_res != 11)
		return 2;
	if (tsync_nnp != 1)
		return 6; /* TSYNC passes no_new_privs on */
	/* a thread with a filter of its own cannot be synchronized */
	tsync_go = 0;
	tsync_tid = 0;
	pthread_create(&th, NULL, tsync_thread, (void *)1);
	while (!tsync_tid)
		usleep(1000);
	usleep(20000);
	long ret = 0;
	for (int i = 0; i < 2000; i++) {
		/* until the thread's own filter is in place */
		ret = install(r, 1, FLAG_TSYNC);
		if (ret != 0)
			break;
		usleep(1000);
	}
	if (ret != tsync_tid)
		return 3;
	if (install(r, 1, FLAG_TSYNC | FLAG_TSYNC_ESRCH) != -1 || errno != ESRCH)
		return 4;
	tsync_go = 1;
	pthread_join(th, NULL);
	return 0;
}

static void test_seccomp_filter(void)
{
	struct sock_filter_ ok[1] = { { BPF_RET | BPF_K, 0, 0, RET_ALLOW } };
	struct sock_filter_ noret[1] = { { BPF_LD | BPF_W | BPF_ABS, 0, 0, 0 } };
	struct sock_filter_ unaligned[2] = { { BPF_LD | BPF_W | BPF_ABS, 0, 0, 2 }, { BPF_RET | BPF_K, 0, 0, RET_ALLOW } };
	struct sock_fprog_ p;
	CHECK_ERR("filter.fprog_efault", syscall(SYS_seccomp, 1, 0, NULL), EFAULT);
	p = (struct sock_fprog_){ 1, ok };
	CHECK_ERR("filter.unknown_flag", syscall(SYS_seccomp, 1, 64, &p), EINVAL);
	CHECK_ERR("filter.tsync_listener", syscall(SYS_seccomp, 1, FLAG_TSYNC | FLAG_NEW_LISTENER, &p), EINVAL);
	CHECK_ERR("filter.killable_without_listener", syscall(SYS_seccomp, 1, FLAG_WAIT_KILLABLE_RECV, &p), EINVAL);
	p = (struct sock_fprog_){ 0, ok };
	CHECK_ERR("filter.empty", syscall(SYS_seccomp, 1, 0, &p), EINVAL);
	p = (struct sock_fprog_){ 4097, ok };
	CHECK_ERR("filter.too_long", syscall(SYS_seccomp, 1, 0, &p), EINVAL);
	p = (struct sock_fprog_){ 1, NULL };
	CHECK_ERR("filter.null_program", syscall(SYS_seccomp, 1, 0, &p), EINVAL);
	p = (struct sock_fprog_){ 1, (struct sock_filter_ *)8 };
	CHECK_ERR("filter.unmapped_program", syscall(SYS_seccomp, 1, 0, &p), EFAULT);
	p = (struct sock_fprog_){ 1, noret };
	CHECK_ERR("filter.no_return", syscall(SYS_seccomp, 1, 0, &p), EINVAL);
	p = (struct sock_fprog_){ 2, unaligned };
	CHECK_ERR("filter.unaligned_load", syscall(SYS_seccomp, 1, 0, &p), EINVAL);
	CHECK_EQ("filter.still_mode_0", prctl(PR_GET_SECCOMP_, 0, 0, 0, 0), 0);
	uint32_t acts[] = { RET_KILL_PROCESS, RET_KILL_THREAD, RET_TRAP, RET_ERRNO, RET_USER_NOTIF, RET_TRACE, RET_LOG, RET_ALLOW };
	int avail = 0;
	for (size_t i = 0; i < sizeof acts / sizeof *acts; i++)
		avail += syscall(SYS_seccomp, 2, 0, &acts[i]) == 0;
	CHECK_EQ("filter.actions_avail", avail, 8);
	uint32_t unknown = 0x00010000u;
	CHECK_ERR("filter.action_unknown", syscall(SYS_seccomp, 2, 0, &unknown), EOPNOTSUPP);
	CHECK_ERR("filter.action_efault", syscall(SYS_seccomp, 2, 0, NULL), EFAULT);
	CHECK_ERR("filter.action_flags", syscall(SYS_seccomp, 2, 1, &unknown), EINVAL);
	uint16_t sizes[3] = { 0 };
	CHECK_SYS("filter.notif_sizes", syscall(SYS_seccomp, 3, 0, sizes));
	CHECK("filter.notif_sizes_values", sizes[0] == 80 && sizes[1] == 24 && sizes[2] == 64);

	int res[4];
	CHECK_EQ("filter.nobody_results", probe(filter_nobody, 1, res, 4), 4);
	CHECK_EQ("filter.nobody_eacces", res[0], EACCES);
	CHECK_EQ("filter.nobody_no_new_privs", res[1], 0);
	CHECK_EQ("filter.nobody_installs", res[2], 0);
	CHECK_EQ("filter.nobody_filtered", res[3], 1);
	CHECK_EQ("filter.actions", in_child(filter_actions), 0);
	CHECK_EQ("filter.tsync", in_child(filter_tsync), 0);
}

/* --- speculation control, PR_SET_MM --------------------------------- */

static void test_spec(void)
{
	/* QEMU's -cpu max under TCG: affected, no per-task mitigation */
	CHECK_EQ("spec.get_store_bypass", prctl(PR_GET_SPEC_, 0, 0, 0, 0), SPEC_ENABLE);
	CHECK_EQ("spec.get_indirect_branch", prctl(PR_GET_SPEC_, 1, 0, 0, 0), SPEC_ENABLE);
	CHECK_EQ("spec.get_l1d_flush", prctl(PR_GET_SPEC_, 2, 0, 0, 0), SPEC_FORCE_DISABLE);
	CHECK_ERR("spec.get_unknown_enodev", prctl(PR_GET_SPEC_, 3, 0, 0, 0), ENODEV);
	CHECK_ERR("spec.get_arg3_einval_first", prctl(PR_GET_SPEC_, 9, 1, 0, 0), EINVAL);
	CHECK_ERR("spec.set_arg4_einval", prctl(PR_SET_SPEC_, 0, SPEC_DISABLE, 1, 0), EINVAL);
	CHECK_ERR("spec.set_store_bypass_enxio", prctl(PR_SET_SPEC_, 0, SPEC_DISABLE, 0, 0), ENXIO);
	CHECK_ERR("spec.set_store_bypass_bad_enxio", prctl(PR_SET_SPEC_, 0, 99, 0, 0), ENXIO);
	CHECK_EQ("spec.set_ib_enable", prctl(PR_SET_SPEC_, 1, SPEC_ENABLE, 0, 0), 0);
	CHECK_ERR("spec.set_ib_disable_eperm", prctl(PR_SET_SPEC_, 1, SPEC_DISABLE, 0, 0), EPERM);
	CHECK_ERR("spec.set_ib_force_eperm", prctl(PR_SET_SPEC_, 1, SPEC_FORCE_DISABLE, 0, 0), EPERM);
	CHECK_ERR("spec.set_ib_bad_erange", prctl(PR_SET_SPEC_, 1, 16, 0, 0), ERANGE);
	CHECK_ERR("spec.set_l1d_eperm", prctl(PR_SET_SPEC_, 2, SPEC_ENABLE, 0, 0), EPERM);
	CHECK_ERR("spec.set_unknown_enodev", prctl(PR_SET_SPEC_, 3, SPEC_ENABLE, 0, 0), ENODEV);
	CHECK_EQ("spec.unchanged", prctl(PR_GET_SPEC_, 1, 0, 0, 0), SPEC_ENABLE);
	CHECK("spec.status_ssb", status_has("/proc/self/status", "\nSpeculation_Store_Bypass:\tvulnerable\n"));
	CHECK("spec.status_ib", status_has("/proc/self/status", "\nSpeculationIndirectBranch:\talways enabled\n"));
}

static void test_set_mm(void)
{
	unsigned size = 0;
	char map[104] = { 0 };
	CHECK_SYS("set_mm.map_size", prctl(PR_SET_MM_, MM_MAP_SIZE, (long)&size, 0, 0));
	CHECK_EQ("set_mm.map_size_value", size, 104);
	CHECK_SYS("set_mm.map_size_arg4_allowed", prctl(PR_SET_MM_, MM_MAP_SIZE, (long)&size, 1, 0));
	CHECK_ERR("set_mm.map_size_arg5_einval", prctl(PR_SET_MM_, MM_MAP_SIZE, (long)&size, 0, 1), EINVAL);
	CHECK_ERR("set_mm.map_size_efault", prctl(PR_SET_MM_, MM_MAP_SIZE, 0, 0, 0), EFAULT);
	CHECK_ERR("set_mm.arg4_einval", prctl(PR_SET_MM_, MM_START_CODE, 0x400000, 1, 0), EINVAL);
	CHECK_ERR("set_mm.map_wrong_size_einval", prctl(PR_SET_MM_, MM_MAP, (long)map, 103, 0), EINVAL);
	CHECK_ERR("set_mm.map_efault", prctl(PR_SET_MM_, MM_MAP, 0, 104, 0), EFAULT);
	CHECK_ERR("set_mm.map_zero_einval", prctl(PR_SET_MM_, MM_MAP, (long)map, 104, 0), EINVAL);
	CHECK_ERR("set_mm.start_code_low_einval", prctl(PR_SET_MM_, MM_START_CODE, 4096, 0, 0), EINVAL);
	CHECK_ERR("set_mm.start_code_high_einval", prctl(PR_SET_MM_, MM_START_CODE, 1ul << 47, 0, 0), EINVAL);
	CHECK_ERR("set_mm.unknown_einval", prctl(PR_SET_MM_, 99, 0x400000, 0, 0), EINVAL);
	CHECK_SYS("set_mm.auxv_empty", prctl(PR_SET_MM_, MM_AUXV, (long)map, 0, 0));
	static char auxv[400];
	CHECK_SYS("set_mm.auxv_largest", prctl(PR_SET_MM_, MM_AUXV, (long)auxv, 384, 0));
	CHECK_ERR("set_mm.auxv_too_long_einval", prctl(PR_SET_MM_, MM_AUXV, (long)auxv, 385, 0), EINVAL);
	CHECK_ERR("set_mm.auxv_efault", prctl(PR_SET_MM_, MM_AUXV, 0, 384, 0), EFAULT);
	CHECK_ERR("set_mm.exe_file_ebadf", prctl(PR_SET_MM_, MM_EXE_FILE, 999, 0, 0), EBADF);
	int dir = open("/", O_RDONLY | O_DIRECTORY);
	CHECK_ERR("set_mm.exe_file_dir_eacces", prctl(PR_SET_MM_, MM_EXE_FILE, dir, 0, 0), EACCES);
	close(dir);
	int exe = open(self_exe, O_RDONLY);
	CHECK_ERR("set_mm.exe_file_still_mapped_ebusy", prctl(PR_SET_MM_, MM_EXE_FILE, exe, 0, 0), EBUSY);
	close(exe);
}

/* --- RLIMIT_NPROC per thread ----------------------------------------- */

static volatile int park_go;
static volatile int b_fork_req, b_fork_res;
static void *parked(void *arg)
{
	(void)arg;
	while (!park_go) {
		if (b_fork_req == 1) {
			pid_t c = fork();
			if (c == 0)
				_exit(0);
			b_fork_res = c > 0 ? 0 : errno;
			if (c > 0)
				waitpid(c, NULL, 0);
			b_fork_req = 2;
		}
		usleep(1000);
	}
	return NULL;
}

static void test_nproc_threads(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		/* root with two more threads; only the main thread becomes
		 * nobody (the raw call: Linux's credentials are per thread) */
		struct rlimit lim = { 2, RLIM_INFINITY };
		if (setrlimit(RLIMIT_NPROC, &lim))
			_exit(1);
		pthread_t th[2];
		pthread_create(&th[0], NULL, parked, NULL);
		pthread_create(&th[1], NULL, parked, NULL);
		if (syscall(SYS_setresuid, NOBODY, NOBODY, NOBODY) != 0)
			_exit(2);
		/* nobody runs one task (this thread): a fork makes two */
		pid_t c = fork();
		if (c == 0)
			_exit(0);
		if (c < 0)
			_exit(10 + errno % 100);
		waitpid(c, NULL, 0);
		lim.rlim_cur = 1;
		if (setrlimit(RLIMIT_NPROC, &lim))
			_exit(3);
		c = fork();
		if (c == 0)
			_exit(0);
		if (c > 0)
			_exit(4);
		if (errno != EAGAIN)
			_exit(5);
		/* a thread still counted as root is exempt */
		b_fork_req = 1;
		while (b_fork_req != 2)
			usleep(1000);
		if (b_fork_res != 0)
			_exit(120 + b_fork_res % 100);
		park_go = 1;
		syscall(SYS_exit_group, 0);
	}
	int st;
	waitpid(pid, &st, 0);
	check_report("nproc.counts_threads_by_own_uid", WIFEXITED(st) && WEXITSTATUS(st) == 0,
		     "status %#x (10+errno: a fork within the limit failed, 4/5: over the limit, 120+errno: the root thread's fork)",
		     st);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "caps13") == 0)
		return exec_caps13();
	if (argc > 1 && strcmp(argv[1], "noroot") == 0)
		return exec_noroot();
	check_start(argv[0]);
	static char exe[300];
	snprintf(exe, sizeof exe, "%s/t_secure", check_testdir(argv[0]));
	if (exe[0] != '/') {
		char cwd[200];
		if (getcwd(cwd, sizeof cwd))
			snprintf(exe, sizeof exe, "%s/%s/t_secure", cwd, check_testdir(argv[0]));
	}
	self_exe = exe;
	if (geteuid() != 0) {
		check_report("root", 0, "t_secure runs as root");
		return check_done();
	}
	test_capbset();
	test_securebits();
	test_seccomp();
	test_seccomp_filter();
	test_spec();
	test_set_mm();
	test_nproc_threads();
	return check_done();
}
