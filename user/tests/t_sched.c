/*
 * t_sched: scheduling attributes and the host name, with Linux's rules.
 *
 * getpriority/setpriority (PRIO_PROCESS, PRIO_PGRP, PRIO_USER; clamping;
 * raising priority needs root or RLIMIT_NICE; other users' processes are
 * EPERM), the sched_* calls (policies, priorities, SCHED_RESET_ON_FORK,
 * the round-robin interval, RLIMIT_RTPRIO for the unprivileged),
 * ioprio_set/ioprio_get, and sethostname/setdomainname as uname reports
 * them. The unprivileged probes run in a child that dropped to uid 65534.
 * The sched_* calls go through syscall(): musl's wrappers of
 * sched_setscheduler and friends return ENOSYS without asking the kernel.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>

#include "probe.h"

#define RESET_ON_FORK 0x40000000
#define IOPRIO(class, data) (((class) << 13) | (data))

static long setsched(pid_t pid, int policy, int prio)
{
	struct sched_param p = { .sched_priority = prio };
	return syscall(SYS_sched_setscheduler, pid, policy, &p);
}

static long getsched(pid_t pid)
{
	return syscall(SYS_sched_getscheduler, pid);
}

static long getparam(pid_t pid)
{
	struct sched_param p = { .sched_priority = -1 };
	long r = syscall(SYS_sched_getparam, pid, &p);
	return r < 0 ? r : p.sched_priority;
}

/* getpriority's nice value, or 100 on error (-1 is a valid nice) */
static int nice_of(int which, int who)
{
	errno = 0;
	int n = getpriority(which, who);
	return n == -1 && errno ? 100 : n;
}

/* a child that waits until its pipe closes; returns its pid */
static pid_t sleeper(int *wfd)
{
	int p[2];
	if (pipe(p))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[1]);
		char c;
		(void)!read(p[0], &c, 1);
		_exit(0);
	}
	close(p[0]);
	*wfd = p[1];
	return pid;
}

static void reap(pid_t pid, int wfd)
{
	close(wfd);
	waitpid(pid, NULL, 0);
}

/* runs fn in a child, as nobody if drop; fills res[0..n) */
static void nice_as_nobody(int fd)
{
	put(fd, rc(setpriority(PRIO_PROCESS, 0, 12)));	/* 0: raising nice is free */
	put(fd, nice_of(PRIO_PROCESS, 0));		/* 12 */
	put(fd, rc(setpriority(PRIO_PROCESS, 0, 3)));	/* EACCES: lowering it needs RLIMIT_NICE */
	put(fd, rc(setpriority(PRIO_PROCESS, 1, 19)));	/* EPERM: init is root's */
	put(fd, nice_of(PRIO_PROCESS, 1) != 100);	/* reading anyone's is allowed */
	struct rlimit rl = { 30, 30 };
	put(fd, rc(setrlimit(RLIMIT_NICE, &rl)));	/* EPERM: raising a hard limit */
}

static void nice_rlimit(int fd)
{
	/* as root: RLIMIT_NICE 30 allows nice down to -10, then drop */
	struct rlimit rl = { 30, 30 };
	if (setrlimit(RLIMIT_NICE, &rl) || setpriority(PRIO_PROCESS, 0, 10))
		_exit(97);
	if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY))
		_exit(98);
	put(fd, rc(setpriority(PRIO_PROCESS, 0, -10)));	/* 0: within the limit */
	put(fd, nice_of(PRIO_PROCESS, 0));		/* -10 */
	put(fd, rc(setpriority(PRIO_PROCESS, 0, -11)));	/* EACCES: past it */
}

static void child_reports_nice(int fd)
{
	put(fd, nice_of(PRIO_PROCESS, 0));
	put(fd, (int)getsched(0));
}

static void child_reports_ioprio(int fd)
{
	put(fd, (int)syscall(SYS_ioprio_get, 1, 0));
}

static void sched_as_nobody(int fd)
{
	put(fd, rc(setsched(0, SCHED_FIFO, 1)));	/* EPERM: RLIMIT_RTPRIO is 0 */
	put(fd, rc(setsched(0, SCHED_RR, 1)));		/* EPERM */
	put(fd, rc(setsched(1, SCHED_OTHER, 0)));	/* EPERM: not the owner */
	put(fd, rc(setsched(0, SCHED_BATCH, 0)));	/* 0 */
	put(fd, (int)getsched(0));			/* SCHED_BATCH */
	put(fd, rc(setsched(0, SCHED_IDLE, 0)));	/* 0 */
	put(fd, rc(setsched(0, SCHED_OTHER, 0)));	/* EPERM: leaving IDLE needs RLIMIT_NICE */
	put(fd, (int)getsched(0));			/* still SCHED_IDLE */
	put(fd, rc(syscall(SYS_ioprio_set, 1, 0, IOPRIO(1, 0))));	/* EPERM: real-time class */
	put(fd, rc(syscall(SYS_ioprio_set, 1, 0, IOPRIO(2, 6))));	/* 0 */
	put(fd, rc(syscall(SYS_ioprio_set, 1, 1, IOPRIO(2, 6))));	/* EPERM: init's */
	put(fd, rc(sethostname("x", 1)));		/* EPERM */
	put(fd, rc(sethostname("x", 100)));		/* EPERM before EINVAL */
	put(fd, rc(setdomainname("x", 1)));		/* EPERM */
}

static void reset_on_fork(int fd)
{
	/* as root: FIFO with SCHED_RESET_ON_FORK and nice -5; the grandchild
	 * starts as SCHED_OTHER with nice 0 */
	if (setpriority(PRIO_PROCESS, 0, -5) || setsched(0, SCHED_FIFO | RESET_ON_FORK, 3))
		_exit(97);
	put(fd, (int)getsched(0));
	int p[2];
	if (pipe(p))
		_exit(96);
	pid_t pid = fork();
	if (pid == 0) {
		int v[2] = { (int)getsched(0), nice_of(PRIO_PROCESS, 0) };
		(void)!write(p[1], v, sizeof v);
		_exit(0);
	}
	int v[2] = { -9, -9 };
	(void)!read(p[0], v, sizeof v);
	waitpid(pid, NULL, 0);
	put(fd, v[0]);
	put(fd, v[1]);
	/* dropping the flag needs root; root may */
	put(fd, rc(setsched(0, SCHED_OTHER, 0)));
	put(fd, (int)getsched(0));
}

static void test_nice(void)
{
	CHECK_EQ("nice.initial", nice_of(PRIO_PROCESS, 0), 0);
	CHECK_EQ("nice.raw_is_20_minus_nice", syscall(SYS_getpriority, PRIO_PROCESS, 0), 20);
	int w, pid = sleeper(&w);
	CHECK_SYS("nice.set_child", setpriority(PRIO_PROCESS, pid, 5));
	CHECK_EQ("nice.get_child", nice_of(PRIO_PROCESS, pid), 5);
	CHECK_EQ("nice.raw_child", syscall(SYS_getpriority, PRIO_PROCESS, pid), 15);
	CHECK_SYS("nice.clamp_high", setpriority(PRIO_PROCESS, pid, 100));
	CHECK_EQ("nice.clamped_19", nice_of(PRIO_PROCESS, pid), 19);
	CHECK_SYS("nice.clamp_low", setpriority(PRIO_PROCESS, pid, -100));
	CHECK_EQ("nice.clamped_-20", nice_of(PRIO_PROCESS, pid), -20);
	CHECK_SYS("nice.setpgid", setpgid(pid, pid));
	CHECK_SYS("nice.set_pgrp", setpriority(PRIO_PGRP, pid, 7));
	CHECK_EQ("nice.pgrp_reached", nice_of(PRIO_PROCESS, pid), 7);
	CHECK_EQ("nice.get_pgrp", nice_of(PRIO_PGRP, pid), 7);
	CHECK_EQ("nice.self_untouched", nice_of(PRIO_PROCESS, 0), 0);
	/* PRIO_USER 0 is the caller's user: the best (lowest) nice of root's */
	CHECK("nice.get_user", nice_of(PRIO_USER, 0) <= 0);
	reap(pid, w);
	CHECK_ERR("nice.reaped_esrch", getpriority(PRIO_PROCESS, pid), ESRCH);
	CHECK_ERR("nice.no_such_pid", setpriority(PRIO_PROCESS, 999999, 0), ESRCH);
	CHECK_ERR("nice.no_such_pgrp", getpriority(PRIO_PGRP, 999999), ESRCH);
	CHECK_ERR("nice.bad_which_get", getpriority(7, 0), EINVAL);
	CHECK_ERR("nice.bad_which_set", setpriority(7, 0, 0), EINVAL);

	/* fork inherits the nice value */
	CHECK_SYS("nice.self_set", setpriority(PRIO_PROCESS, 0, 4));
	int r[2];
	CHECK_EQ("nice.fork_child", probe(child_reports_nice, 0, r, 2), 2);
	CHECK_EQ("nice.inherited", r[0], 4);
	CHECK_SYS("nice.root_lowers", setpriority(PRIO_PROCESS, 0, 0));
	CHECK_EQ("nice.back_to_0", nice_of(PRIO_PROCESS, 0), 0);

	int u[6];
	CHECK_EQ("nice.nobody_child", probe(nice_as_nobody, 1, u, 6), 6);
	CHECK_EQ("nice.nobody_raise", u[0], 0);
	CHECK_EQ("nice.nobody_raised_to", u[1], 12);
	CHECK_EQ("nice.nobody_lower_eacces", u[2], EACCES);
	CHECK_EQ("nice.nobody_other_eperm", u[3], EPERM);
	CHECK_EQ("nice.nobody_reads_init", u[4], 1);
	CHECK_EQ("nice.nobody_rlimit_eperm", u[5], EPERM);

	int l[3];
	CHECK_EQ("nice.rlimit_child", probe(nice_rlimit, 0, l, 3), 3);
	CHECK_EQ("nice.rlimit_allows", l[0], 0);
	CHECK_EQ("nice.rlimit_reached", l[1], -10);
	CHECK_EQ("nice.rlimit_past_eacces", l[2], EACCES);
}

static void test_sched(void)
{
	CHECK_EQ("sched.max_fifo", sched_get_priority_max(SCHED_FIFO), 99);
	CHECK_EQ("sched.min_fifo", sched_get_priority_min(SCHED_FIFO), 1);
	CHECK_EQ("sched.max_rr", sched_get_priority_max(SCHED_RR), 99);
	CHECK_EQ("sched.min_rr", sched_get_priority_min(SCHED_RR), 1);
	CHECK_EQ("sched.max_other", sched_get_priority_max(SCHED_OTHER), 0);
	CHECK_EQ("sched.min_batch", sched_get_priority_min(SCHED_BATCH), 0);
	CHECK_EQ("sched.max_idle", sched_get_priority_max(SCHED_IDLE), 0);
	CHECK_ERR("sched.max_bad", sched_get_priority_max(42), EINVAL);
	CHECK_ERR("sched.min_bad", sched_get_priority_min(-1), EINVAL);

	CHECK_EQ("sched.self_other", getsched(0), SCHED_OTHER);
	CHECK_EQ("sched.self_param", getparam(0), 0);
	CHECK_EQ("sched.getpid_same", getsched(getpid()), SCHED_OTHER);

	int w, pid = sleeper(&w);
	CHECK_SYS("sched.set_fifo", setsched(pid, SCHED_FIFO, 10));
	CHECK_EQ("sched.get_fifo", getsched(pid), SCHED_FIFO);
	CHECK_EQ("sched.param_fifo", getparam(pid), 10);
	struct timespec ts = { 9, 9 };
	CHECK_SYS("sched.rr_interval_fifo", syscall(SYS_sched_rr_get_interval, pid, &ts));
	CHECK("sched.fifo_no_slice", ts.tv_sec == 0 && ts.tv_nsec == 0);
	struct sched_param sp = { .sched_priority = 42 };
	CHECK_SYS("sched.setparam", syscall(SYS_sched_setparam, pid, &sp));
	CHECK_EQ("sched.setparam_kept_policy", getsched(pid), SCHED_FIFO);
	CHECK_EQ("sched.setparam_prio", getparam(pid), 42);
	CHECK_SYS("sched.set_rr", setsched(pid, SCHED_RR, 20));
	CHECK_EQ("sched.get_rr", getsched(pid), SCHED_RR);
	CHECK_SYS("sched.rr_interval", syscall(SYS_sched_rr_get_interval, pid, &ts));
	CHECK("sched.rr_100ms", ts.tv_sec == 0 && ts.tv_nsec == 100000000);
	CHECK_ERR("sched.rr_interval_efault", syscall(SYS_sched_rr_get_interval, pid, (void *)8), EFAULT);
	CHECK_ERR("sched.fifo_prio0", setsched(pid, SCHED_FIFO, 0), EINVAL);
	CHECK_ERR("sched.fifo_prio100", setsched(pid, SCHED_FIFO, 100), EINVAL);
	CHECK_ERR("sched.other_prio5", setsched(pid, SCHED_OTHER, 5), EINVAL);
	CHECK_ERR("sched.bad_policy", setsched(pid, 42, 0), EINVAL);
	CHECK_ERR("sched.deadline_needs_setattr", setsched(pid, 6, 0), EINVAL);
	sp.sched_priority = 0;
	CHECK_ERR("sched.setparam_rr_prio0", syscall(SYS_sched_setparam, pid, &sp), EINVAL);
	CHECK_EQ("sched.unchanged_after_errors", getparam(pid), 20);
	CHECK_SYS("sched.set_batch", setsched(pid, SCHED_BATCH, 0));
	CHECK_EQ("sched.get_batch", getsched(pid), SCHED_BATCH);
	CHECK_EQ("sched.batch_param", getparam(pid), 0);
	CHECK_SYS("sched.set_idle", setsched(pid, SCHED_IDLE, 0));
	CHECK_EQ("sched.get_idle", getsched(pid), SCHED_IDLE);
	CHECK_SYS("sched.set_other", setsched(pid, SCHED_OTHER, 0));
	CHECK_EQ("sched.get_other", getsched(pid), SCHED_OTHER);
	CHECK_SYS("sched.reset_flag", setsched(pid, SCHED_OTHER | RESET_ON_FORK, 0));
	CHECK_EQ("sched.reset_flag_reported", getsched(pid), SCHED_OTHER | RESET_ON_FORK);
	reap(pid, w);

	struct sched_param ok = { 0 };
	CHECK_ERR("sched.pid_negative", syscall(SYS_sched_setscheduler, -1, SCHED_OTHER, &ok), EINVAL);
	CHECK_ERR("sched.param_null", syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, NULL), EINVAL);
	CHECK_ERR("sched.param_efault", syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, (void *)8), EFAULT);
	CHECK_ERR("sched.no_such_pid", syscall(SYS_sched_setscheduler, 999999, SCHED_OTHER, &ok), ESRCH);
	CHECK_ERR("sched.get_negative", getsched(-1), EINVAL);
	CHECK_ERR("sched.get_no_such", getsched(999999), ESRCH);
	CHECK_ERR("sched.getparam_null", syscall(SYS_sched_getparam, 0, NULL), EINVAL);
	CHECK_ERR("sched.getparam_efault", syscall(SYS_sched_getparam, 0, (void *)8), EFAULT);
	CHECK_ERR("sched.rr_no_such", syscall(SYS_sched_rr_get_interval, 999999, &ts), ESRCH);

	int f[5];
	CHECK_EQ("sched.reset_child", probe(reset_on_fork, 0, f, 5), 5);
	CHECK_EQ("sched.reset_parent_policy", f[0], SCHED_FIFO | RESET_ON_FORK);
	CHECK_EQ("sched.reset_child_other", f[1], SCHED_OTHER);
	CHECK_EQ("sched.reset_child_nice0", f[2], 0);
	CHECK_EQ("sched.reset_root_clears", f[3], 0);
	CHECK_EQ("sched.reset_cleared", f[4], SCHED_OTHER);
}

static void test_ioprio(void)
{
	CHECK_SYS("ioprio.set_be", syscall(SYS_ioprio_set, 1, 0, IOPRIO(2, 3)));
	CHECK_EQ("ioprio.get_be", syscall(SYS_ioprio_get, 1, 0), IOPRIO(2, 3));
	CHECK_SYS("ioprio.set_idle", syscall(SYS_ioprio_set, 1, getpid(), IOPRIO(3, 0)));
	CHECK_EQ("ioprio.get_idle", syscall(SYS_ioprio_get, 1, getpid()), IOPRIO(3, 0));
	CHECK_SYS("ioprio.set_rt_root", syscall(SYS_ioprio_set, 1, 0, IOPRIO(1, 7)));
	CHECK_EQ("ioprio.get_rt", syscall(SYS_ioprio_get, 1, 0), IOPRIO(1, 7));
	int r[1];
	CHECK_EQ("ioprio.fork_child", probe(child_reports_ioprio, 0, r, 1), 1);
	CHECK_EQ("ioprio.inherited", r[0], IOPRIO(1, 7));
	CHECK_ERR("ioprio.class4", syscall(SYS_ioprio_set, 1, 0, IOPRIO(4, 0)), EINVAL);
	CHECK_ERR("ioprio.none_with_level", syscall(SYS_ioprio_set, 1, 0, IOPRIO(0, 1)), EINVAL);
	CHECK_ERR("ioprio.bad_which_set", syscall(SYS_ioprio_set, 0, 0, IOPRIO(2, 0)), EINVAL);
	CHECK_ERR("ioprio.bad_which_get", syscall(SYS_ioprio_get, 4, 0), EINVAL);
	CHECK_ERR("ioprio.no_such_pid", syscall(SYS_ioprio_get, 1, 999999), ESRCH);
	CHECK_ERR("ioprio.no_such_pgrp", syscall(SYS_ioprio_set, 2, 999999, IOPRIO(2, 0)), ESRCH);
	CHECK_EQ("ioprio.unchanged", syscall(SYS_ioprio_get, 1, 0), IOPRIO(1, 7));
	/* data 8 is level 0 plus a hint bit (the level is 3 bits): kept */
	CHECK_SYS("ioprio.be_hint", syscall(SYS_ioprio_set, 1, 0, IOPRIO(2, 8)));
	CHECK_EQ("ioprio.be_hint_kept", syscall(SYS_ioprio_get, 1, 0), IOPRIO(2, 8));
	CHECK_SYS("ioprio.back_to_be", syscall(SYS_ioprio_set, 1, 0, IOPRIO(2, 4)));
}

static void test_nobody_sched(void)
{
	int u[14];
	CHECK_EQ("nobody.child", probe(sched_as_nobody, 1, u, 14), 14);
	CHECK_EQ("nobody.fifo_eperm", u[0], EPERM);
	CHECK_EQ("nobody.rr_eperm", u[1], EPERM);
	CHECK_EQ("nobody.other_owner_eperm", u[2], EPERM);
	CHECK_EQ("nobody.batch_ok", u[3], 0);
	CHECK_EQ("nobody.batch_reported", u[4], SCHED_BATCH);
	CHECK_EQ("nobody.idle_ok", u[5], 0);
	CHECK_EQ("nobody.leave_idle_eperm", u[6], EPERM);
	CHECK_EQ("nobody.still_idle", u[7], SCHED_IDLE);
	CHECK_EQ("nobody.ioprio_rt_eperm", u[8], EPERM);
	CHECK_EQ("nobody.ioprio_be_ok", u[9], 0);
	CHECK_EQ("nobody.ioprio_init_eperm", u[10], EPERM);
	CHECK_EQ("nobody.sethostname_eperm", u[11], EPERM);
	CHECK_EQ("nobody.sethostname_eperm_first", u[12], EPERM);
	CHECK_EQ("nobody.setdomainname_eperm", u[13], EPERM);
}

static void test_names(void)
{
	struct utsname old, u;
	if (!CHECK_SYS("uts.uname", uname(&old)))
		return;
	CHECK_SYS("uts.sethostname", sethostname("sb-test-host", 12));
	CHECK_SYS("uts.uname_after", uname(&u));
	CHECK_STR("uts.nodename", u.nodename, "sb-test-host");
	char h[80];
	CHECK_SYS("uts.gethostname", gethostname(h, sizeof h));
	CHECK_STR("uts.gethostname_value", h, "sb-test-host");
	/* the length given is the name: no NUL needed */
	CHECK_SYS("uts.sethostname_len", sethostname("abcdef", 3));
	uname(&u);
	CHECK_STR("uts.nodename_len", u.nodename, "abc");
	char big[80];
	memset(big, 'n', sizeof big);
	CHECK_SYS("uts.sethostname_64", sethostname(big, 64));
	uname(&u);
	CHECK_EQ("uts.nodename_64", strlen(u.nodename), 64);
	CHECK_ERR("uts.sethostname_65", sethostname(big, 65), EINVAL);
	CHECK_ERR("uts.sethostname_negative", syscall(SYS_sethostname, big, -1), EINVAL);
	CHECK_ERR("uts.sethostname_efault", sethostname((char *)8, 5), EFAULT);
	uname(&u);
	CHECK_EQ("uts.unchanged_after_errors", strlen(u.nodename), 64);
	CHECK_SYS("uts.setdomainname", setdomainname("example.test", 12));
	uname(&u);
	CHECK_STR("uts.domainname", u.domainname, "example.test");
	CHECK_ERR("uts.setdomainname_65", setdomainname(big, 65), EINVAL);
	CHECK_SYS("uts.restore_host", sethostname(old.nodename, strlen(old.nodename)));
	CHECK_SYS("uts.restore_domain", setdomainname(old.domainname, strlen(old.domainname)));
	uname(&u);
	CHECK_STR("uts.restored", u.nodename, old.nodename);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	test_nice();
	test_sched();
	test_ioprio();
	test_nobody_sched();
	test_names();
	return check_done();
}
