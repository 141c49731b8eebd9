/*
 * t_eproc: the error table of the process and signal calls (issue 22's
 * audit, processes and signals): clone, fork, execve, wait4/waitid,
 * kill/tkill/tgkill, rt_sigqueueinfo/rt_tgsigqueueinfo, rt_sigaction,
 * rt_sigprocmask, rt_sigpending, rt_sigsuspend, sigaltstack,
 * rt_sigtimedwait, setpgid/setsid/getsid/getpgid, prctl's common options
 * and pidfd_open/pidfd_send_signal. Each check is one condition the Linux
 * man page documents, with the errno Linux 6.1 returns; where Linux tests
 * one argument before another (the sigset size before the pointers, the
 * pointers before the signal number, the path before argv, the options
 * before the children), a check with both wrong pins which one wins.
 * t_proc, t_signal, t_pidfd, t_clone3, t_execveat, t_badinput, t_security
 * and t_errors hold the conditions checked before this audit; this program
 * does not repeat them. Runs as root; the permission conditions run in a
 * child dropped to uid/gid 65534 (probe.h).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>

#include "probe.h"

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x1000
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef PIDFD_NONBLOCK
#define PIDFD_NONBLOCK O_NONBLOCK
#endif
#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1U << 31)
#endif
#define SA_UNSUPPORTED_ 0x00000400
#define SA_RESTORER_ 0x04000000

/* the kernel's struct sigaction on x86-64 */
struct ksigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

static const char *self_exe;
static char dir[256];

static void *unmapped(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(p, 4096);
	return p;
}

static void *kernel_half = (void *)0xffff800000000000UL;

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, mode);
	if (fd >= 0) {
		if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
			printf("# write %s failed\n", path);
		close(fd);
	}
	chmod(path, mode);
}

/* a child that waits to be killed */
static pid_t sleeper(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		for (;;)
			pause();
	}
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, __WALL);
}

/* a raw clone(2) that must fail; a child it makes anyway exits at once */
static long tryclone(unsigned long flags, void *ptid)
{
	long r = syscall(SYS_clone, flags, NULL, ptid, NULL, 0);
	if (r == 0)
		_exit(0);
	if (r > 0)
		waitpid((pid_t)r, NULL, __WALL);
	return r;
}

/* clone, fork */
/* as nobody, the only process of its user: the new child counts, so a
 * soft limit of 1 refuses the fork and 2 allows it */
static void nproc_child(int out)
{
	struct rlimit lim;
	getrlimit(RLIMIT_NPROC, &lim);
	for (rlim_t n = 1; n <= 2; n++) {
		lim.rlim_cur = n;
		put(out, rc(setrlimit(RLIMIT_NPROC, &lim)));
		pid_t pid = fork();
		if (pid == 0)
			_exit(0);
		put(out, rc(pid));
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
}

static void test_clone(void)
{
	int pidfd = -1;
	CHECK_ERR("clone.sighand_without_vm", tryclone(CLONE_SIGHAND | SIGCHLD, NULL), EINVAL);
	CHECK_ERR("clone.thread_without_sighand", tryclone(CLONE_THREAD | SIGCHLD, NULL), EINVAL);
	CHECK_ERR("clone.newns_with_fs", tryclone(CLONE_NEWNS | CLONE_FS | SIGCHLD, NULL), EINVAL);
	CHECK_ERR("clone.pidfd_detached", tryclone(CLONE_PIDFD | CLONE_DETACHED | SIGCHLD, &pidfd), EINVAL);
	/* the legacy call takes any exit signal (clone3 refuses one past _NSIG);
	 * the parent is sent none, and only __WALL waits see the child */
	CHECK_SYS("clone.exit_signal_65_accepted", tryclone(65, NULL));
	/* CLONE_PARENT_SETTID's and CLONE_CHILD_SETTID's copies of the ID go
	 * to bad addresses: Linux loses the copies, not the clone */
	long bad = syscall(SYS_clone, CLONE_PARENT_SETTID | CLONE_CHILD_SETTID | SIGCHLD, NULL, (void *)8, (void *)8, 0);
	if (bad == 0)
		_exit(7);
	int st = 0;
	CHECK("clone.settid_bad_address_still_clones", bad > 0 && waitpid((pid_t)bad, &st, 0) == bad &&
							   WIFEXITED(st) && WEXITSTATUS(st) == 7);

	int res[4];
	CHECK_EQ("fork.nproc_results", probe(nproc_child, 1, res, 4), 4);
	CHECK("fork.nproc_setrlimit", res[0] == 0 && res[2] == 0);
	CHECK_EQ("fork.nproc_over_limit_eagain", res[1], EAGAIN);
	CHECK_EQ("fork.nproc_within_limit_ok", res[3], 0);
}

/* execve: each attempt in a child, which sends back the errno (or exits
 * 0 with nothing sent when the program really ran) */
static const char *x_path;
static char **x_argv, **x_envp;

static void exec_child(int out)
{
	struct rlimit stack = { 8 << 20, 8 << 20 };
	setrlimit(RLIMIT_STACK, &stack);
	put(out, rc(execve(x_path, x_argv, x_envp)));
}

/* errno of the execve, 0 if the program ran, -1 if neither */
static int exec_as(int drop, const char *path, char **argv, char **envp)
{
	x_path = path;
	x_argv = argv;
	x_envp = envp;
	int e = -1;
	int got = probe(exec_child, drop, &e, 1);
	if (got == 0)
		return 0;
	return got == 1 ? e : -1;
}

static int exec_err(const char *path, char **argv)
{
	char *envp[] = { NULL };
	return exec_as(0, path, argv, envp);
}

/* execve's EAGAIN after set*uid to a user past RLIMIT_NPROC (Linux
 * defers the failure from setuid to the next execve): a child holds a
 * process as nobody; another, with RLIMIT_NPROC 0, becomes nobody (which
 * succeeds), then execve fails with EAGAIN (before ENOENT) until the
 * limit is raised, and then fails with ENOENT as any other. */
static void test_execve_nproc(void)
{
	if (geteuid() != 0)
		return;
	int ready[2], hold[2];
	if (pipe(ready) || pipe(hold)) {
		check_report("execve.nproc_setup", 0, "pipe: %s", strerror(errno));
		return;
	}
	pid_t holder = fork();
	if (holder == 0) {
		char c = 0;
		close(ready[0]);
		close(hold[1]);
		if (setuid(65534) != 0)
			_exit(1);
		write(ready[1], "x", 1);
		read(hold[0], &c, 1);
		_exit(0);
	}
	close(ready[1]);
	close(hold[0]);
	char c;
	read(ready[0], &c, 1);
	pid_t pid = fork();
	if (pid == 0) {
		struct rlimit r = {0, RLIM_INFINITY};
		char *argv[] = {"x", NULL};
		if (setrlimit(RLIMIT_NPROC, &r) != 0)
			_exit(10);
		if (setuid(65534) != 0)
			_exit(11);
		execve("/nonexistent/x", argv, NULL);
		if (errno != EAGAIN)
			_exit(20 + errno);
		execve("/nonexistent/x", argv, NULL);
		if (errno != EAGAIN)
			_exit(40);
		r.rlim_cur = RLIM_INFINITY;
		setrlimit(RLIMIT_NPROC, &r);
		execve("/nonexistent/x", argv, NULL);
		_exit(errno == ENOENT ? 0 : 41);
	}
	int st = -1;
	waitpid(pid, &st, 0);
	close(hold[1]);
	waitpid(holder, NULL, 0);
	close(ready[0]);
	check_report("execve.eagain_after_setuid_past_nproc", WIFEXITED(st) && WEXITSTATUS(st) == 0,
		     "wait status %#x (10/11: setup, 20+errno: the first execve, 40: the second, 41: after raising the limit)",
		     st);
}

static void test_execve(void)
{
	char *argv_ok[] = { (char *)self_exe, "exit0", NULL };
	CHECK_EQ("execve.self_runs", exec_err(self_exe, argv_ok), 0);

	/* E2BIG: one string past MAX_ARG_STRLEN, the total past a quarter
	 * of RLIMIT_STACK (8 MiB here) */
	size_t n = 32 * 4096;
	char *big = malloc(n + 1);
	memset(big, 'a', n);
	big[n] = 0;
	char *argv_big[] = { (char *)self_exe, "exit0", big, NULL };
	CHECK_EQ("execve.e2big_one_string", exec_err(self_exe, argv_big), E2BIG);
	big[n - 1] = 0;
	CHECK_EQ("execve.longest_string_ok", exec_err(self_exe, argv_big), 0);
	char *argv_many[24] = { (char *)self_exe, "exit0" };
	for (int i = 2; i < 23; i++)
		argv_many[i] = big;
	argv_many[23] = NULL;
	CHECK_EQ("execve.e2big_total", exec_err(self_exe, argv_many), E2BIG);
	char *argv_some[] = { (char *)self_exe, "exit0", big, big, big, big, NULL };
	CHECK_EQ("execve.half_mib_ok", exec_err(self_exe, argv_some), 0);
	CHECK_EQ("execve.e2big_before_enoent", exec_err("missing", argv_many), E2BIG);
	free(big);

	char *argv_bad[] = { "x", unmapped(), NULL };
	CHECK_EQ("execve.argv_string_efault", exec_err(self_exe, argv_bad), EFAULT);
	CHECK_EQ("execve.argv_array_efault", exec_err(self_exe, unmapped()), EFAULT);
	CHECK_EQ("execve.argv_efault_before_enoent", exec_err("missing", unmapped()), EFAULT);
	CHECK_EQ("execve.envp_array_efault", exec_as(0, self_exe, argv_ok, kernel_half), EFAULT);
	CHECK_EQ("execve.empty_path", exec_err("", argv_ok), ENOENT);

	/* scripts */
	char path[512], text[600];
	write_file("empty_interp", "#!\n", 0755);
	CHECK_EQ("execve.shebang_empty_enoexec", exec_err("empty_interp", argv_ok), ENOEXEC);
	write_file("blank_interp", "#!   \t \n", 0755);
	CHECK_EQ("execve.shebang_blank_enoexec", exec_err("blank_interp", argv_ok), ENOEXEC);
	memset(text, 'a', sizeof text);
	memcpy(text, "#!/", 3);
	text[sizeof text - 1] = 0;
	write_file("long_interp", text, 0755);
	CHECK_EQ("execve.shebang_past_buffer_enoexec", exec_err("long_interp", argv_ok), ENOEXEC);
	write_file("missing_interp", "#!/nonexistent/interp\n", 0755);
	CHECK_EQ("execve.shebang_missing_enoent", exec_err("missing_interp", argv_ok), ENOENT);
	snprintf(path, sizeof path, "%s/self_interp", dir);
	snprintf(text, sizeof text, "#!%s\n", path);
	write_file("self_interp", text, 0755);
	CHECK_EQ("execve.shebang_recursion_eloop", exec_err("self_interp", argv_ok), ELOOP);
	snprintf(text, sizeof text, "#!%s exit0\n", self_exe);
	write_file("good_script", text, 0755);
	CHECK_EQ("execve.script_runs", exec_err("good_script", argv_ok), 0);
	int wfd = open("good_script", O_WRONLY);
	CHECK_EQ("execve.script_open_for_write_etxtbsy", exec_err("good_script", argv_ok), ETXTBSY);
	close(wfd);
	CHECK_EQ("execve.script_after_close_runs", exec_err("good_script", argv_ok), 0);
	write_file("interp_not_exec", "#!/dev/null\n", 0755);
	CHECK_EQ("execve.shebang_interp_not_regular_eacces", exec_err("interp_not_exec", argv_ok), EACCES);

	/* names */
	symlink("loop2", "loop1");
	symlink("loop1", "loop2");
	CHECK_EQ("execve.symlink_loop_eloop", exec_err("loop1", argv_ok), ELOOP);
	char longname[300];
	memset(longname, 'n', 299);
	longname[299] = 0;
	CHECK_EQ("execve.component_enametoolong", exec_err(longname, argv_ok), ENAMETOOLONG);
	char *longpath = malloc(PATH_MAX + 10);
	for (int i = 0; i < PATH_MAX + 8; i += 2)
		memcpy(longpath + i, "./", 2);
	longpath[PATH_MAX + 8] = 0;
	CHECK_EQ("execve.path_enametoolong", exec_err(longpath, argv_ok), ENAMETOOLONG);
	free(longpath);

	/* what may not be run */
	CHECK_SYS("execve.mkfifo", mkfifo("fifo", 0777));
	chmod("fifo", 0777);
	CHECK_EQ("execve.fifo_eacces", exec_err("fifo", argv_ok), EACCES);
	CHECK_SYS("execve.mknod", mknod("null", S_IFCHR | 0777, makedev(1, 3)));
	chmod("null", 0777);
	CHECK_EQ("execve.char_device_eacces", exec_err("null", argv_ok), EACCES);
	write_file("noexec_script", "#!/bin/sh\n", 0644);
	CHECK_EQ("execve.root_without_x_eacces", exec_err("noexec_script", argv_ok), EACCES);
	snprintf(text, sizeof text, "#!%s exit0\n", self_exe);
	write_file("owner_x", text, 0744);
	CHECK_EQ("execve.root_with_owner_x_runs", exec_err("owner_x", argv_ok), 0);
	char *envp[] = { NULL };
	CHECK_EQ("execve.nobody_without_x_eacces", exec_as(1, "owner_x", argv_ok, envp), EACCES);
	mkdir("private", 0700);
	write_file("private/prog", text, 0755);
	CHECK_EQ("execve.nobody_search_denied_eacces", exec_as(1, "private/prog", argv_ok, envp), EACCES);
	write_file("world_x", text, 0755);
	CHECK_EQ("execve.nobody_world_x_runs", exec_as(1, "world_x", argv_ok, envp), 0);
}

/* wait4, waitid */
static void test_wait(void)
{
	siginfo_t si;
	CHECK_ERR("wait4.wnowait_einval", wait4(-1, NULL, WNOWAIT, NULL), EINVAL);
	CHECK_ERR("wait4.wexited_einval", wait4(-1, NULL, WEXITED, NULL), EINVAL);
	CHECK_ERR("wait4.unknown_bit_einval", wait4(-1, NULL, 0x80, NULL), EINVAL);
	CHECK_ERR("wait4.no_children_echild", wait4(-1, NULL, WNOHANG, NULL), ECHILD);
	CHECK_ERR("waitid.no_event_einval", waitid(P_ALL, 0, &si, WNOHANG), EINVAL);
	CHECK_ERR("waitid.bad_idtype", waitid(99, 0, &si, WEXITED), EINVAL);
	CHECK_ERR("waitid.pid_zero", waitid(P_PID, 0, &si, WEXITED), EINVAL);
	CHECK_ERR("waitid.pid_negative", waitid(P_PID, (id_t)-1, &si, WEXITED), EINVAL);
	CHECK_ERR("waitid.pgid_negative", waitid(P_PGID, (id_t)-1, &si, WEXITED), EINVAL);
	CHECK_ERR("waitid.unknown_bit_einval", waitid(P_ALL, 0, &si, WEXITED | 0x80), EINVAL);
	CHECK_ERR("waitid.no_children_echild", waitid(P_ALL, 0, &si, WEXITED), ECHILD);
	CHECK_ERR("waitid.einval_before_echild", waitid(P_PID, 0, &si, WEXITED), EINVAL);
	CHECK_ERR("waitpid.no_such_group_echild", waitpid(-99999, NULL, WNOHANG), ECHILD);

	pid_t kid = sleeper();
	memset(&si, 0x55, sizeof si);
	CHECK_SYS("waitid.wnohang_running", waitid(P_PID, kid, &si, WEXITED | WNOHANG));
	CHECK("waitid.wnohang_running_zeroes_info", si.si_signo == 0 && si.si_pid == 0);
	CHECK_EQ("wait4.wnohang_running_zero", wait4(kid, NULL, WNOHANG, NULL), 0);
	CHECK_ERR("waitid.infop_efault", (kill(kid, SIGKILL), waitid(P_PID, kid, unmapped(), WEXITED | WNOWAIT)), EFAULT);
	CHECK_SYS("waitid.null_infop_reaps", waitid(P_PID, kid, NULL, WEXITED));
	CHECK_ERR("waitid.reaped_echild", waitid(P_PID, kid, &si, WEXITED), ECHILD);

	/* a child in another process group: pid 0 does not see it */
	kid = fork();
	if (kid == 0) {
		setpgid(0, 0);
		for (;;)
			pause();
	}
	setpgid(kid, kid);
	CHECK_ERR("waitpid.own_group_excludes_other_group", waitpid(0, NULL, WNOHANG), ECHILD);
	CHECK_EQ("waitpid.child_group_by_pgid", waitpid(-kid, NULL, WNOHANG), 0);
	CHECK_ERR("waitid.pgid_zero_own_group", waitid(P_PGID, 0, &si, WEXITED | WNOHANG), ECHILD);
	reap(kid);

	/* a grandchild is not ours to wait for */
	int p[2];
	if (pipe(p))
		return;
	kid = fork();
	if (kid == 0) {
		pid_t g = sleeper();
		if (write(p[1], &g, sizeof g) != sizeof g)
			_exit(1);
		waitpid(g, NULL, 0);
		_exit(0);
	}
	pid_t grand = 0;
	if (read(p[0], &grand, sizeof grand) != sizeof grand)
		grand = 0;
	CHECK_ERR("wait4.grandchild_echild", wait4(grand, NULL, WNOHANG, NULL), ECHILD);
	CHECK_ERR("waitid.grandchild_echild", waitid(P_PID, grand, &si, WEXITED | WNOHANG), ECHILD);
	kill(grand, SIGKILL);
	waitpid(kid, NULL, 0);
	close(p[0]);
	close(p[1]);
}

/* kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo */
static int queueinfo(pid_t pid, int sig, int code)
{
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_signo = sig;
	si.si_code = code;
	si.si_pid = getpid();
	si.si_uid = getuid();
	return syscall(SYS_rt_sigqueueinfo, pid, sig, &si);
}

static int tgqueueinfo(pid_t tgid, pid_t tid, int sig, int code)
{
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_signo = sig;
	si.si_code = code;
	return syscall(SYS_rt_tgsigqueueinfo, tgid, tid, sig, &si);
}

static pid_t other_group;

static void nobody_signals(int out)
{
	pid_t root = getppid();
	put(out, rc(syscall(SYS_tkill, root, 0)));
	put(out, rc(syscall(SYS_tgkill, root, root, 0)));
	put(out, rc(queueinfo(root, 0, SI_QUEUE)));
	put(out, rc(kill(-1, 0)));
	put(out, rc(syscall(SYS_pidfd_send_signal, (int)syscall(SYS_pidfd_open, root, 0), 0, NULL, 0)));
	put(out, rc(kill(-other_group, 0)));
}

static void test_kill(void)
{
	pid_t me = getpid();
	CHECK_ERR("kill.negative_sig", kill(me, -1), EINVAL);
	CHECK_ERR("kill.esrch_before_bad_sig", kill(999999, 65), ESRCH);
	CHECK_ERR("kill.int_min_esrch", kill(INT_MIN, 0), ESRCH);
	pid_t kid = fork();
	if (kid == 0)
		_exit(0);
	siginfo_t si;
	waitid(P_PID, kid, &si, WEXITED | WNOWAIT);
	CHECK_SYS("kill.zombie_ok", kill(kid, 0));
	CHECK_SYS("tgkill.zombie_leader", syscall(SYS_tgkill, kid, kid, 0));
	waitpid(kid, NULL, 0);
	CHECK_ERR("kill.reaped_esrch", kill(kid, 0), ESRCH);

	CHECK_ERR("tkill.tid_zero", syscall(SYS_tkill, 0, 0), EINVAL);
	CHECK_ERR("tkill.tid_negative", syscall(SYS_tkill, -1, 0), EINVAL);
	CHECK_ERR("tkill.bad_sig", syscall(SYS_tkill, me, 65), EINVAL);
	CHECK_ERR("tkill.esrch", syscall(SYS_tkill, 999999, 0), ESRCH);
	CHECK_SYS("tkill.self_sig0", syscall(SYS_tkill, me, 0));
	CHECK_ERR("tgkill.tgid_zero", syscall(SYS_tgkill, 0, me, 0), EINVAL);
	CHECK_ERR("tgkill.tid_zero", syscall(SYS_tgkill, me, 0, 0), EINVAL);
	CHECK_ERR("tgkill.tgid_negative", syscall(SYS_tgkill, -1, me, 0), EINVAL);
	CHECK_ERR("tgkill.bad_sig", syscall(SYS_tgkill, me, me, 65), EINVAL);
	CHECK_ERR("tgkill.esrch_before_bad_sig", syscall(SYS_tgkill, me, 999999, 65), ESRCH);
	CHECK_ERR("tgkill.tid_zero_before_bad_sig", syscall(SYS_tgkill, me, 0, 65), EINVAL);
	CHECK_ERR("tgkill.esrch", syscall(SYS_tgkill, me, 999999, 0), ESRCH);

	kid = sleeper();
	CHECK_ERR("sigqueueinfo.si_user_to_other_eperm", queueinfo(kid, 0, SI_USER), EPERM);
	CHECK_ERR("sigqueueinfo.kernel_code_to_other_eperm", queueinfo(kid, 0, SI_KERNEL), EPERM);
	CHECK_ERR("sigqueueinfo.si_tkill_to_other_eperm", queueinfo(kid, 0, SI_TKILL), EPERM);
	CHECK_SYS("sigqueueinfo.si_queue_to_other_ok", queueinfo(kid, 0, SI_QUEUE));
	CHECK_SYS("sigqueueinfo.si_user_to_self_ok", queueinfo(me, 0, SI_USER));
	CHECK_ERR("sigqueueinfo.bad_sig", queueinfo(me, 65, SI_QUEUE), EINVAL);
	CHECK_ERR("sigqueueinfo.esrch", queueinfo(999999, 0, SI_QUEUE), ESRCH);
	CHECK_ERR("sigqueueinfo.eperm_before_esrch", queueinfo(999999, 0, SI_USER), EPERM);
	CHECK_ERR("sigqueueinfo.efault", syscall(SYS_rt_sigqueueinfo, kid, 0, unmapped()), EFAULT);
	CHECK_ERR("sigqueueinfo.efault_before_bad_sig", syscall(SYS_rt_sigqueueinfo, kid, 65, unmapped()), EFAULT);
	CHECK_ERR("tgsigqueueinfo.tgid_zero", tgqueueinfo(0, me, 0, SI_QUEUE), EINVAL);
	CHECK_ERR("tgsigqueueinfo.tid_zero", tgqueueinfo(me, 0, 0, SI_QUEUE), EINVAL);
	CHECK_ERR("tgsigqueueinfo.si_user_to_other_eperm", tgqueueinfo(kid, kid, 0, SI_USER), EPERM);
	CHECK_SYS("tgsigqueueinfo.si_queue_to_other_ok", tgqueueinfo(kid, kid, 0, SI_QUEUE));
	CHECK_SYS("tgsigqueueinfo.si_user_to_self_ok", tgqueueinfo(me, me, 0, SI_USER));
	CHECK_ERR("tgsigqueueinfo.wrong_tgid_esrch", tgqueueinfo(kid, me, 0, SI_QUEUE), ESRCH);
	reap(kid);

	/* a group of root's that the nobody child is not in */
	other_group = sleeper();
	setpgid(other_group, other_group);
	int res[6];
	CHECK_EQ("nobody.results", probe(nobody_signals, 1, res, 6), 6);
	reap(other_group);
	CHECK_EQ("tkill.nobody_to_root_eperm", res[0], EPERM);
	CHECK_EQ("tgkill.nobody_to_root_eperm", res[1], EPERM);
	CHECK_EQ("sigqueueinfo.nobody_to_root_eperm", res[2], EPERM);
	CHECK_EQ("kill.minus1_all_eperm_is_ok", res[3], 0);
	CHECK_EQ("pidfd_send_signal.nobody_to_root_eperm", res[4], EPERM);
	CHECK_EQ("kill.nobody_to_root_group_eperm", res[5], EPERM);
}

/* rt_sigaction, rt_sigprocmask, rt_sigpending, rt_sigsuspend */
static void on_usr(int s) { (void)s; }

static void test_sigaction_mask(void)
{
	struct ksigaction ka, old;
	memset(&ka, 0, sizeof ka);
	ka.handler = SIG_DFL;
	CHECK_SYS("rt_sigaction.sigkill_query_ok", syscall(SYS_rt_sigaction, SIGKILL, NULL, &old, 8));
	CHECK_ERR("rt_sigaction.sigstop_dfl_einval", syscall(SYS_rt_sigaction, SIGSTOP, &ka, NULL, 8), EINVAL);
	CHECK_ERR("rt_sigaction.size_16", syscall(SYS_rt_sigaction, SIGUSR1, NULL, &old, 16), EINVAL);
	CHECK_ERR("rt_sigaction.size_before_efault", syscall(SYS_rt_sigaction, SIGUSR1, unmapped(), NULL, 4), EINVAL);
	CHECK_ERR("rt_sigaction.act_efault_before_bad_sig", syscall(SYS_rt_sigaction, 65, unmapped(), NULL, 8), EFAULT);
	CHECK_ERR("rt_sigaction.oldact_efault", syscall(SYS_rt_sigaction, SIGUSR1, NULL, unmapped(), 8), EFAULT);
	CHECK_ERR("rt_sigaction.oldact_kernel_efault", syscall(SYS_rt_sigaction, SIGUSR1, NULL, kernel_half, 8), EFAULT);
	CHECK_ERR("rt_sigaction.bad_sig_query", syscall(SYS_rt_sigaction, 0, NULL, &old, 8), EINVAL);
	CHECK_SYS("rt_sigaction.null_both_ok", syscall(SYS_rt_sigaction, SIGUSR1, NULL, NULL, 8));
	struct sigaction sa;
	sigaction(SIGUSR1, NULL, &sa);
	ka.handler = on_usr;
	ka.flags = SA_RESTORER_ | SA_RESTART | SA_UNSUPPORTED_;
	ka.restorer = (void (*)(void))sa.sa_restorer;
	ka.mask = (1ULL << (SIGKILL - 1)) | (1ULL << (SIGUSR2 - 1));
	CHECK_SYS("rt_sigaction.unknown_flag_accepted", syscall(SYS_rt_sigaction, SIGUSR1, &ka, NULL, 8));
	memset(&old, 0, sizeof old);
	syscall(SYS_rt_sigaction, SIGUSR1, NULL, &old, 8);
	CHECK("rt_sigaction.unknown_flag_cleared", !(old.flags & SA_UNSUPPORTED_) && (old.flags & SA_RESTART));
	CHECK_EQ("rt_sigaction.mask_kept_kill_dropped", old.mask, 1ULL << (SIGUSR2 - 1));
	signal(SIGUSR1, SIG_DFL);

	uint64_t set = ~0ULL, oset;
	CHECK_ERR("rt_sigprocmask.size_4", syscall(SYS_rt_sigprocmask, SIG_BLOCK, &set, NULL, 4), EINVAL);
	CHECK_ERR("rt_sigprocmask.size_16", syscall(SYS_rt_sigprocmask, SIG_BLOCK, &set, NULL, 16), EINVAL);
	CHECK_SYS("rt_sigprocmask.bad_how_without_set_ok", syscall(SYS_rt_sigprocmask, 99, NULL, &oset, 8));
	CHECK_ERR("rt_sigprocmask.set_efault_before_bad_how", syscall(SYS_rt_sigprocmask, 99, unmapped(), NULL, 8), EFAULT);
	CHECK_ERR("rt_sigprocmask.oldset_efault", syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, unmapped(), 8), EFAULT);
	CHECK_ERR("rt_sigprocmask.bad_how_leaves_oldset", (oset = 7, syscall(SYS_rt_sigprocmask, 99, &set, &oset, 8)), EINVAL);
	CHECK_EQ("rt_sigprocmask.bad_how_oldset_untouched", oset, 7);
	uint64_t saved;
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &saved, 8);
	CHECK_SYS("rt_sigprocmask.block_all", syscall(SYS_rt_sigprocmask, SIG_SETMASK, &set, NULL, 8));
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, NULL, &oset, 8);
	CHECK("rt_sigprocmask.kill_stop_never_blocked", !(oset & (1ULL << (SIGKILL - 1))) && !(oset & (1ULL << (SIGSTOP - 1))) &&
								 (oset & (1ULL << (SIGUSR1 - 1))));
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &saved, NULL, 8);

	CHECK_ERR("rt_sigpending.size_16", syscall(SYS_rt_sigpending, &oset, 16), EINVAL);
	CHECK_SYS("rt_sigpending.size_4_ok", syscall(SYS_rt_sigpending, &oset, 4));
	CHECK_ERR("rt_sigpending.efault", syscall(SYS_rt_sigpending, unmapped(), 8), EFAULT);
	CHECK_ERR("rt_sigsuspend.size_4", syscall(SYS_rt_sigsuspend, &set, 4), EINVAL);
	CHECK_ERR("rt_sigsuspend.efault", syscall(SYS_rt_sigsuspend, unmapped(), 8), EFAULT);
}

/* sigaltstack: the raw call (musl's wrapper checks the size and
 * SS_ONSTACK itself) */
static long xsigaltstack(const stack_t *ss, stack_t *old)
{
	return syscall(SYS_sigaltstack, ss, old);
}
static volatile int alt_eperm, alt_einval, alt_query_flags, alt_query_rc;

static void on_alt(int s)
{
	(void)s;
	stack_t ss = { .ss_size = 65536 }, old;
	ss.ss_sp = malloc(65536);
	errno = 0;
	alt_eperm = xsigaltstack(&ss, NULL) == -1 ? errno : 0;
	ss.ss_flags = 0x55;
	alt_einval = xsigaltstack(&ss, NULL) == -1 ? errno : 0;
	alt_query_rc = xsigaltstack(NULL, &old);
	alt_query_flags = old.ss_flags;
	free(ss.ss_sp);
}

static void test_sigaltstack(void)
{
	stack_t ss, old;
	char *mem = malloc(65536);
	ss.ss_sp = mem;
	ss.ss_size = 2048;
	ss.ss_flags = 0;
	CHECK_SYS("sigaltstack.minsigstksz_ok", xsigaltstack(&ss, NULL));
	ss.ss_size = 2047;
	CHECK_ERR("sigaltstack.below_minsigstksz", xsigaltstack(&ss, NULL), ENOMEM);
	ss.ss_flags = 0x55;
	CHECK_ERR("sigaltstack.bad_flags_before_size", xsigaltstack(&ss, NULL), EINVAL);
	ss.ss_flags = SS_ONSTACK;
	ss.ss_size = 65536;
	CHECK_SYS("sigaltstack.ss_onstack_as_zero", xsigaltstack(&ss, NULL));
	ss.ss_flags = SS_AUTODISARM;
	CHECK_SYS("sigaltstack.autodisarm_ok", xsigaltstack(&ss, NULL));
	xsigaltstack(NULL, &old);
	CHECK_EQ("sigaltstack.autodisarm_reported", (unsigned)old.ss_flags, SS_AUTODISARM);
	ss.ss_flags = SS_DISABLE;
	ss.ss_size = 1;
	ss.ss_sp = unmapped();
	CHECK_SYS("sigaltstack.disable_ignores_size", xsigaltstack(&ss, NULL));
	xsigaltstack(NULL, &old);
	CHECK("sigaltstack.disabled_reported", old.ss_flags == SS_DISABLE && old.ss_size == 0 && old.ss_sp == NULL);
	CHECK_ERR("sigaltstack.ss_efault", xsigaltstack(unmapped(), NULL), EFAULT);
	CHECK_ERR("sigaltstack.oss_efault", xsigaltstack(NULL, unmapped()), EFAULT);

	ss.ss_sp = mem;
	ss.ss_size = 65536;
	ss.ss_flags = 0;
	xsigaltstack(&ss, NULL);
	struct sigaction sa = { .sa_handler = on_alt, .sa_flags = SA_ONSTACK }, prev;
	sigaction(SIGUSR2, &sa, &prev);
	raise(SIGUSR2);
	sigaction(SIGUSR2, &prev, NULL);
	CHECK_EQ("sigaltstack.change_on_it_eperm", alt_eperm, EPERM);
	CHECK_EQ("sigaltstack.eperm_before_einval", alt_einval, EPERM);
	CHECK_EQ("sigaltstack.query_on_it_ok", alt_query_rc, 0);
	CHECK_EQ("sigaltstack.query_on_it_onstack", alt_query_flags, SS_ONSTACK);
	ss.ss_flags = SS_DISABLE;
	xsigaltstack(&ss, NULL);
	free(mem);
}

/* rt_sigtimedwait */
static void test_sigtimedwait(void)
{
	uint64_t set = 1ULL << (SIGUSR2 - 1), saved;
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &set, &saved, 8);
	struct timespec zero = { 0, 0 }, short_ = { 0, 20 * 1000 * 1000 }, big_ns = { 0, 1000000000 }, neg = { -1, 0 };
	siginfo_t si;
	CHECK_ERR("sigtimedwait.zero_timeout_eagain", syscall(SYS_rt_sigtimedwait, &set, &si, &zero, 8), EAGAIN);
	CHECK_ERR("sigtimedwait.short_timeout_eagain", syscall(SYS_rt_sigtimedwait, &set, &si, &short_, 8), EAGAIN);
	CHECK_ERR("sigtimedwait.nsec_einval", syscall(SYS_rt_sigtimedwait, &set, &si, &big_ns, 8), EINVAL);
	CHECK_ERR("sigtimedwait.negative_einval", syscall(SYS_rt_sigtimedwait, &set, &si, &neg, 8), EINVAL);
	CHECK_ERR("sigtimedwait.size_4", syscall(SYS_rt_sigtimedwait, &set, &si, &zero, 4), EINVAL);
	CHECK_ERR("sigtimedwait.size_before_efault", syscall(SYS_rt_sigtimedwait, unmapped(), &si, &zero, 4), EINVAL);
	CHECK_ERR("sigtimedwait.set_efault", syscall(SYS_rt_sigtimedwait, unmapped(), &si, &zero, 8), EFAULT);
	CHECK_ERR("sigtimedwait.timeout_efault", syscall(SYS_rt_sigtimedwait, &set, &si, unmapped(), 8), EFAULT);
	raise(SIGUSR2);
	CHECK_ERR("sigtimedwait.einval_before_pending", syscall(SYS_rt_sigtimedwait, &set, &si, &big_ns, 8), EINVAL);
	CHECK_EQ("sigtimedwait.pending_returned", syscall(SYS_rt_sigtimedwait, &set, &si, &zero, 8), SIGUSR2);
	raise(SIGUSR2);
	CHECK_ERR("sigtimedwait.info_efault_consumes", syscall(SYS_rt_sigtimedwait, &set, unmapped(), &zero, 8), EFAULT);
	CHECK_ERR("sigtimedwait.consumed", syscall(SYS_rt_sigtimedwait, &set, &si, &zero, 8), EAGAIN);
	/* a handled signal outside the set ends the wait, even with
	 * SA_RESTART */
	struct sigaction sa = { .sa_handler = on_usr, .sa_flags = SA_RESTART }, prev;
	sigaction(SIGALRM, &sa, &prev);
	struct timespec ten = { 10, 0 };
	alarm(1);
	CHECK_ERR("sigtimedwait.handler_eintr", syscall(SYS_rt_sigtimedwait, &set, &si, &ten, 8), EINTR);
	alarm(0);
	sigaction(SIGALRM, &prev, NULL);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &saved, NULL, 8);
}

/* setpgid, setsid, getsid, getpgid */
static void leader_child(int out)
{
	setsid();
	put(out, rc(setpgid(0, 0)));
	put(out, rc(setpgid(0, getppid())));
	put(out, rc(setsid()));
}

static void test_pgrp(void)
{
	CHECK_ERR("setpgid.pgid_negative", setpgid(0, -1), EINVAL);
	CHECK_ERR("setpgid.not_child_esrch", setpgid(1, 0), ESRCH);
	CHECK_ERR("setpgid.no_such_pid_esrch", setpgid(999999, 0), ESRCH);
	CHECK_ERR("setpgid.no_such_group_eperm", setpgid(0, 999999), EPERM);
	CHECK_ERR("getsid.esrch", getsid(999999), ESRCH);
	CHECK_ERR("getsid.negative_esrch", getsid(-1), ESRCH);
	CHECK_ERR("getpgid.negative_esrch", getpgid(-1), ESRCH);
	CHECK_EQ("getsid.zero_is_self", getsid(0), getsid(getpid()));

	/* a child in a session of its own */
	int p[2];
	if (pipe(p))
		return;
	pid_t kid = fork();
	if (kid == 0) {
		setsid();
		char c = 1;
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	char c;
	if (read(p[0], &c, 1) != 1)
		c = 0;
	CHECK_ERR("setpgid.child_other_session_eperm", setpgid(kid, getpgid(0)), EPERM);
	CHECK_ERR("setpgid.to_group_in_other_session_eperm", setpgid(0, kid), EPERM);
	CHECK_EQ("getsid.other_session", getsid(kid), kid);
	reap(kid);
	close(p[0]);
	close(p[1]);

	int res[3];
	CHECK_EQ("leader.results", probe(leader_child, 0, res, 3), 3);
	CHECK_EQ("setpgid.session_leader_eperm", res[0], EPERM);
	CHECK_EQ("setpgid.leader_to_other_group_eperm", res[1], EPERM);
	CHECK_EQ("setsid.leader_again_eperm", res[2], EPERM);
}

/* prctl: a child subreaper adopts its orphaned grandchild */
static void subreaper_child(int out)
{
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	int p[2];
	if (pipe(p))
		_exit(1);
	pid_t mid = fork();
	if (mid == 0) {
		pid_t me = getpid();
		if (fork() == 0) {
			/* wait (10 s at most) for the middle process to go */
			for (int i = 0; i < 1000 && getppid() == me; i++)
				usleep(10000);
			pid_t pp = getppid();
			if (write(p[1], &pp, sizeof pp) != sizeof pp)
				_exit(1);
			_exit(0);
		}
		_exit(0);
	}
	waitpid(mid, NULL, 0);
	pid_t adopted = 0;
	if (read(p[0], &adopted, sizeof adopted) != sizeof adopted)
		adopted = -1;
	put(out, adopted == getpid());
	put(out, waitpid(-1, NULL, 0) > 0);
}

/* a set-user-ID program under no_new_privs keeps the caller's IDs */
static void nnp_child(int out)
{
	char *argv[] = { "suid_prog", "euid", NULL }, *envp[] = { NULL };
	for (int i = 0; i < 2; i++) {
		if (i == 1)
			put(out, rc(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)));
		pid_t pid = fork();
		if (pid == 0) {
			execve("suid_prog", argv, envp);
			_exit(100);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		put(out, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
	put(out, (int)prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
}

/* copy_self copies this program to to, owned by owner, with mode. */
static int copy_self(const char *to, mode_t mode, uid_t owner) { return check_copy_file(self_exe, to, mode, owner); }

static void test_prctl(void)
{
	int v;
	CHECK_ERR("prctl.pdeathsig_65", prctl(PR_SET_PDEATHSIG, 65), EINVAL);
	CHECK_ERR("prctl.pdeathsig_negative", prctl(PR_SET_PDEATHSIG, -1), EINVAL);
	CHECK_ERR("prctl.get_pdeathsig_efault", prctl(PR_GET_PDEATHSIG, unmapped()), EFAULT);
	CHECK_ERR("prctl.dumpable_2", prctl(PR_SET_DUMPABLE, 2), EINVAL);
	CHECK_EQ("prctl.get_dumpable", prctl(PR_GET_DUMPABLE), 1);
	CHECK_ERR("prctl.no_new_privs_2", prctl(PR_SET_NO_NEW_PRIVS, 2, 0, 0, 0), EINVAL);
	CHECK_ERR("prctl.no_new_privs_arg3", prctl(PR_SET_NO_NEW_PRIVS, 1, 1, 0, 0), EINVAL);
	CHECK_ERR("prctl.get_no_new_privs_arg2", prctl(PR_GET_NO_NEW_PRIVS, 1, 0, 0, 0), EINVAL);
	CHECK_EQ("prctl.get_no_new_privs", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), 0);
	CHECK_ERR("prctl.keepcaps_2", prctl(PR_SET_KEEPCAPS, 2), EINVAL);
	CHECK_ERR("prctl.capbset_read_bad", prctl(PR_CAPBSET_READ, 200), EINVAL);
	CHECK_EQ("prctl.capbset_read_chown", prctl(PR_CAPBSET_READ, 0), 1);
	CHECK_ERR("prctl.get_child_subreaper_efault", prctl(PR_GET_CHILD_SUBREAPER, unmapped()), EFAULT);
	CHECK_SYS("prctl.set_child_subreaper", prctl(PR_SET_CHILD_SUBREAPER, 1));
	v = -1;
	prctl(PR_GET_CHILD_SUBREAPER, &v);
	CHECK_EQ("prctl.get_child_subreaper", v, 1);
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	CHECK_ERR("prctl.set_name_efault", prctl(PR_SET_NAME, unmapped()), EFAULT);
	CHECK_ERR("prctl.get_name_efault", prctl(PR_GET_NAME, unmapped()), EFAULT);
	CHECK_ERR("prctl.get_tid_address_efault", prctl(PR_GET_TID_ADDRESS, unmapped()), EFAULT);
	CHECK_ERR("prctl.thp_disable_arg3", prctl(PR_SET_THP_DISABLE, 1, 1, 0, 0), EINVAL);
	CHECK_SYS("prctl.thp_disable", prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0));
	CHECK_EQ("prctl.get_thp_disable", prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0), 1);
	prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
	CHECK_EQ("prctl.get_seccomp", prctl(PR_GET_SECCOMP), 0);
	CHECK_EQ("prctl.capbset_read_last", prctl(PR_CAPBSET_READ, 40), 1);
	CHECK_ERR("prctl.capbset_read_past_last", prctl(PR_CAPBSET_READ, 41), EINVAL);
	/* keepcaps and the securebits bit it sets; timing; perf events;
	 * the memory-error kill policy; the ambient capability set */
	CHECK_EQ("prctl.get_keepcaps", prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0), 0);
	CHECK_SYS("prctl.set_keepcaps", prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0));
	CHECK_EQ("prctl.get_keepcaps_set", prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0), 1);
	CHECK_EQ("prctl.securebits_keep_caps", prctl(PR_GET_SECUREBITS, 0, 0, 0, 0), 1 << 4);
	CHECK_SYS("prctl.clear_keepcaps", prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0));
	CHECK_EQ("prctl.securebits", prctl(PR_GET_SECUREBITS, 0, 0, 0, 0), 0);
	CHECK_EQ("prctl.get_timing", prctl(PR_GET_TIMING, 0, 0, 0, 0), PR_TIMING_STATISTICAL);
	CHECK_SYS("prctl.set_timing", prctl(PR_SET_TIMING, PR_TIMING_STATISTICAL, 0, 0, 0));
	CHECK_ERR("prctl.set_timing_timestamp", prctl(PR_SET_TIMING, PR_TIMING_TIMESTAMP, 0, 0, 0), EINVAL);
	CHECK_SYS("prctl.perf_disable", prctl(PR_TASK_PERF_EVENTS_DISABLE, 0, 0, 0, 0));
	CHECK_SYS("prctl.perf_enable", prctl(PR_TASK_PERF_EVENTS_ENABLE, 0, 0, 0, 0));
	CHECK_EQ("prctl.mce_kill_get", prctl(PR_MCE_KILL_GET, 0, 0, 0, 0), PR_MCE_KILL_DEFAULT);
	CHECK_SYS("prctl.mce_kill_early", prctl(PR_MCE_KILL, PR_MCE_KILL_SET, PR_MCE_KILL_EARLY, 0, 0));
	CHECK_EQ("prctl.mce_kill_get_early", prctl(PR_MCE_KILL_GET, 0, 0, 0, 0), PR_MCE_KILL_EARLY);
	CHECK_SYS("prctl.mce_kill_late", prctl(PR_MCE_KILL, PR_MCE_KILL_SET, PR_MCE_KILL_LATE, 0, 0));
	CHECK_EQ("prctl.mce_kill_get_late", prctl(PR_MCE_KILL_GET, 0, 0, 0, 0), PR_MCE_KILL_LATE);
	CHECK_ERR("prctl.mce_kill_bad_policy", prctl(PR_MCE_KILL, PR_MCE_KILL_SET, 3, 0, 0), EINVAL);
	CHECK_ERR("prctl.mce_kill_clear_arg3", prctl(PR_MCE_KILL, PR_MCE_KILL_CLEAR, 1, 0, 0), EINVAL);
	CHECK_ERR("prctl.mce_kill_arg4", prctl(PR_MCE_KILL, PR_MCE_KILL_CLEAR, 0, 1, 0), EINVAL);
	CHECK_ERR("prctl.mce_kill_bad_op", prctl(PR_MCE_KILL, 2, 0, 0, 0), EINVAL);
	CHECK_ERR("prctl.mce_kill_get_arg2", prctl(PR_MCE_KILL_GET, 1, 0, 0, 0), EINVAL);
	CHECK_SYS("prctl.mce_kill_clear", prctl(PR_MCE_KILL, PR_MCE_KILL_CLEAR, 0, 0, 0));
	CHECK_EQ("prctl.mce_kill_get_cleared", prctl(PR_MCE_KILL_GET, 0, 0, 0, 0), PR_MCE_KILL_DEFAULT);
	CHECK_EQ("prctl.ambient_is_set", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, 0, 0, 0), 0);
	CHECK_ERR("prctl.ambient_raise", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, 0, 0, 0), EPERM);
	CHECK_SYS("prctl.ambient_lower", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, 0, 0, 0));
	CHECK_SYS("prctl.ambient_clear_all", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0));
	CHECK_ERR("prctl.ambient_clear_all_arg3", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 1, 0, 0), EINVAL);
	CHECK_ERR("prctl.ambient_bad_cap", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, 41, 0, 0), EINVAL);
	CHECK_ERR("prctl.ambient_bad_op", prctl(PR_CAP_AMBIENT, 5, 0, 0, 0), EINVAL);
	uintptr_t tidaddr = 1;
	CHECK_SYS("prctl.get_tid_address", prctl(PR_GET_TID_ADDRESS, &tidaddr));
	CHECK("prctl.get_tid_address_set_by_libc", tidaddr != 1 && tidaddr != 0);

	int res[5];
	CHECK_EQ("prctl.subreaper_results", probe(subreaper_child, 0, res, 2), 2);
	CHECK_EQ("prctl.subreaper_adopts_orphan", res[0], 1);
	CHECK_EQ("prctl.subreaper_reaps_orphan", res[1], 1);
	CHECK_SYS("prctl.copy_suid_prog", copy_self("suid_prog", 04755, 1234));
	CHECK_EQ("prctl.nnp_results", probe(nnp_child, 1, res, 4), 4);
	CHECK_EQ("prctl.suid_exec_without_nnp", res[0], 1);
	CHECK_EQ("prctl.set_no_new_privs", res[1], 0);
	CHECK_EQ("prctl.suid_exec_ignored_under_nnp", res[2], 2);
	CHECK_EQ("prctl.get_no_new_privs_after_set", res[3], 1);
	unlink("suid_prog");
	CHECK_ERR("prctl.mce_kill_bad", prctl(PR_MCE_KILL, 5, 0, 0, 0), EINVAL);
}

/* pidfd_open, pidfd_send_signal */
static void test_pidfd(void)
{
	pid_t kid = sleeper();
	int fd = syscall(SYS_pidfd_open, kid, PIDFD_NONBLOCK);
	CHECK_SYS("pidfd_open.nonblock", fd);
	CHECK("pidfd_open.nonblock_flag", fd >= 0 && (fcntl(fd, F_GETFL) & O_NONBLOCK));
	CHECK_SYS("pidfd_send_signal.sig0", syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0));
	siginfo_t si;
	CHECK_ERR("waitid.pidfd_nonblock_eagain", syscall(SYS_waitid, P_PIDFD, fd, &si, WEXITED, NULL), EAGAIN);
	CHECK_ERR("pidfd_send_signal.efault", syscall(SYS_pidfd_send_signal, fd, SIGUSR1, unmapped(), 0), EFAULT);
	CHECK_ERR("pidfd_send_signal.flags_before_efault", syscall(SYS_pidfd_send_signal, fd, SIGUSR1, unmapped(), 1), EINVAL);
	CHECK_ERR("pidfd_send_signal.flags_before_ebadf", syscall(SYS_pidfd_send_signal, 9999, SIGUSR1, NULL, 1), EINVAL);
	CHECK_ERR("pidfd_send_signal.bad_sig", syscall(SYS_pidfd_send_signal, fd, 65, NULL, 0), EINVAL);
	int file = open("/", O_RDONLY | O_DIRECTORY);
	CHECK_ERR("pidfd_send_signal.not_pidfd", syscall(SYS_pidfd_send_signal, file, 0, NULL, 0), EBADF);
	close(file);
	reap(kid);
	CHECK_ERR("pidfd_send_signal.reaped_esrch", syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0), ESRCH);
	close(fd);
	CHECK_ERR("pidfd_open.pid_max", syscall(SYS_pidfd_open, INT_MAX, 0), ESRCH);
	CHECK_ERR("pidfd_open.flags_before_pid", syscall(SYS_pidfd_open, -1, 1), EINVAL);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "exit0") == 0)
		return 0;
	if (argc > 1 && strcmp(argv[1], "euid") == 0)
		return geteuid() == 1234 ? 1 : geteuid() == NOBODY ? 2 : 3;
	check_start(argv[0]);
	static char exe[300];
	snprintf(exe, sizeof exe, "%s/t_eproc", check_testdir(argv[0]));
	if (exe[0] != '/') {
		char cwd[200];
		if (getcwd(cwd, sizeof cwd))
			snprintf(exe, sizeof exe, "%s/%s/t_eproc", cwd, check_testdir(argv[0]));
	}
	self_exe = exe;
	snprintf(dir, sizeof dir, "%s", check_mktmp());
	chmod(dir, 0755);
	if (chdir(dir))
		return 1;

	test_clone();
	test_execve();
	test_execve_nproc();
	test_wait();
	test_kill();
	test_sigaction_mask();
	test_sigaltstack();
	test_sigtimedwait();
	test_pgrp();
	test_prctl();
	test_pidfd();

	const char *names[] = { "empty_interp", "blank_interp", "long_interp", "missing_interp", "self_interp",
				"good_script", "interp_not_exec", "loop1", "loop2", "fifo", "null", "noexec_script",
				"owner_x", "private/prog", "world_x" };
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		unlink(names[i]);
	rmdir("private");
	if (chdir("/") == 0)
		rmdir(dir);
	return check_done();
}
