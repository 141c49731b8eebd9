/* t_seccomp: seccomp(2) and PR_SET_SECCOMP. Strict mode through prctl
 * and seccomp(2) (argument checks, read/write/exit allowed, anything else
 * and exit_group killing with SIGKILL, PR_GET_SECCOMP among them,
 * Seccomp: 1 in /proc/PID/status); filter mode (the flags, program and
 * length checks, EACCES without no_new_privs, the actions ERRNO (capped,
 * 0), TRAP (SIGSYS's fields, RAX), TRACE and USER_NOTIF (ENOSYS), LOG,
 * KILL_THREAD of one thread, KILL_PROCESS, KILL_THREAD alone and an
 * unknown action (SIGSYS), argument tests, stacked filters, fork, TSYNC
 * (with no_new_privs) and its failure, GET_ACTION_AVAIL,
 * GET_NOTIF_SIZES, Seccomp: 2 and Seccomp_filters). */
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

static int gettid_(void) { return (int)syscall(SYS_gettid); }

/* --- seccomp strict -------------------------------------------------- */

static void test_seccomp(void)
{
	CHECK_EQ("seccomp.get_0", prctl(PR_GET_SECCOMP_, 0, 0, 0, 0), 0);
	CHECK_ERR("seccomp.prctl_bad_mode", prctl(PR_SET_SECCOMP_, 3, 0, 0, 0), EINVAL);
	CHECK_ERR("seccomp.strict_flags", syscall(SYS_seccomp, 0, 1, NULL), EINVAL);
	CHECK_ERR("seccomp.strict_args", syscall(SYS_seccomp, 0, 0, &check_prog), EINVAL);
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
	CHECK("seccomp.status_1", check_file_has(path, "\nSeccomp:\t1\n"));
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
	if (!check_file_has("/proc/self/status", "\nSeccomp:\t2\nSeccomp_filters:\t1\n"))
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
	if (!check_file_has("/proc/self/status", "\nSeccomp_filters:\t2\n"))
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

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	if (geteuid() != 0) {
		check_report("root", 0, "t_seccomp runs as root");
		return check_done();
	}
	test_seccomp();
	test_seccomp_filter();
	return check_done();
}
