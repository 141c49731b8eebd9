/* t_proc: processes: fork (copy-on-write), vfork, clone, posix_spawn,
 * execve (argv/envp, inherited state), wait4/waitid status decoding, exit
 * codes, pids and tids, process groups and sessions, reparenting. */
#define _GNU_SOURCE
#include "check.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

static char helper[300];
static int global_value = 1;

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int wait_status(pid_t pid)
{
	int st = -1;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}

static void test_ids(void)
{
	pid_t pid = getpid();
	CHECK("getpid.positive", pid > 0);
	CHECK_EQ("getpid.stable", getpid(), pid);
	CHECK("getppid.positive", getppid() > 0);
	CHECK_EQ("gettid.main_is_pid", syscall(SYS_gettid), pid);
	CHECK("getppid.not_self", getppid() != pid);
}

static void test_fork_cow(void)
{
	int stack_value = 10;
	int *heap = malloc(sizeof(int));
	*heap = 100;
	size_t bigsz = 1 << 20;
	unsigned char *big = malloc(bigsz);
	for (size_t i = 0; i < bigsz; i++)
		big[i] = (unsigned char)(i * 7);
	int p[2];
	pipe(p);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		/* report what the child sees, then modify everything */
		int32_t rep[6];
		rep[0] = getpid();
		rep[1] = getppid();
		rep[2] = global_value == 1 && stack_value == 10 && *heap == 100;
		int bigok = 1;
		for (size_t i = 0; i < bigsz; i += 4099)
			bigok &= big[i] == (unsigned char)(i * 7);
		rep[3] = bigok;
		global_value = 2;
		stack_value = 20;
		*heap = 200;
		memset(big, 0xee, bigsz);
		rep[4] = global_value == 2 && stack_value == 20 && *heap == 200 && big[12345] == 0xee;
		rep[5] = parent;
		write(p[1], rep, sizeof rep);
		_exit(42);
	}
	close(p[1]);
	CHECK("fork.returns_pid", pid > 0 && pid != getpid());
	int32_t rep[6] = { 0 };
	CHECK_EQ("fork.child_report", read(p[0], rep, sizeof rep), (long)sizeof rep);
	close(p[0]);
	struct rusage ru;
	int st = 0;
	CHECK_EQ("wait4.returns_pid", wait4(pid, &st, 0, &ru), pid);
	CHECK("wait4.exited", WIFEXITED(st));
	CHECK_EQ("wait4.exit_code", WEXITSTATUS(st), 42);
	CHECK("wait4.not_signaled", !WIFSIGNALED(st) && !WIFSTOPPED(st));
	CHECK_EQ("fork.child_getpid", rep[0], pid);
	CHECK_EQ("fork.child_getppid", rep[1], getpid());
	CHECK("fork.child_saw_parent_values", rep[2]);
	CHECK("fork.child_saw_big_buffer", rep[3]);
	CHECK("fork.child_own_writes", rep[4]);
	CHECK_EQ("cow.global_unchanged", global_value, 1);
	CHECK_EQ("cow.stack_unchanged", stack_value, 10);
	CHECK_EQ("cow.heap_unchanged", *heap, 100);
	int bigok = 1;
	for (size_t i = 0; i < bigsz; i++)
		bigok &= big[i] == (unsigned char)(i * 7);
	CHECK("cow.big_unchanged", bigok);
	/* and the other way round: the parent writes after fork */
	pid = fork();
	if (pid == 0) {
		msleep(50);
		_exit(global_value == 1 && *heap == 100 ? 0 : 1);
	}
	global_value = 3;
	*heap = 300;
	CHECK_EQ("cow.parent_write_invisible", WEXITSTATUS(wait_status(pid)), 0);
	global_value = 1;
	free(heap);
	free(big);
}

static void test_exit_codes(void)
{
	int codes[] = { 0, 1, 77, 255, 256 + 3 };
	int want[] = { 0, 1, 77, 255, 3 };
	for (int i = 0; i < 5; i++) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(codes[i]);
		int st = wait_status(pid);
		char name[64];
		snprintf(name, sizeof name, "exit.code_%d", codes[i]);
		CHECK(name, WIFEXITED(st) && WEXITSTATUS(st) == want[i]);
	}
	/* exit() from a child (atexit, stdio) behaves the same */
	pid_t pid = fork();
	if (pid == 0)
		exit(9);
	CHECK_EQ("exit.libc_exit", WEXITSTATUS(wait_status(pid)), 9);

	/* deaths by signal */
	pid = fork();
	if (pid == 0) {
		for (;;)
			pause();
	}
	kill(pid, SIGKILL);
	int st = wait_status(pid);
	CHECK("wait.sigkill", WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && !WIFEXITED(st));
	pid = fork();
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		volatile int *volatile np = NULL;
		*np = 1;
		_exit(0);
	}
	st = wait_status(pid);
	CHECK("wait.sigsegv", WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
	pid = fork();
	if (pid == 0)
		abort();
	st = wait_status(pid);
	CHECK("wait.sigabrt", WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	pid = fork();
	if (pid == 0) {
		raise(SIGTERM);
		_exit(0);
	}
	st = wait_status(pid);
	CHECK("wait.sigterm", WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
}

static void test_wait_variants(void)
{
	/* stopped and continued; the child waits for a byte before exiting,
	 * so that its exit cannot overtake the "continued" report */
	int go[2];
	pipe(go);
	pid_t pid = fork();
	if (pid == 0) {
		close(go[1]);
		raise(SIGSTOP);
		char b;
		_exit(read(go[0], &b, 1) == 1 ? 5 : 6);
	}
	close(go[0]);
	int st = 0;
	CHECK_EQ("waitpid.untraced", waitpid(pid, &st, WUNTRACED), pid);
	CHECK("waitpid.stopped", WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
	CHECK_EQ("waitpid.nohang_stopped", waitpid(pid, &st, WNOHANG), 0);
	kill(pid, SIGCONT);
	CHECK_EQ("waitpid.continued_ret", waitpid(pid, &st, WCONTINUED), pid);
	CHECK("waitpid.continued", WIFCONTINUED(st));
	write(go[1], "g", 1);
	close(go[1]);
	st = wait_status(pid);
	CHECK("waitpid.after_continue_exit", WIFEXITED(st) && WEXITSTATUS(st) == 5);

	/* WNOHANG on a running child, then a blocking wait */
	int p[2];
	pipe(p);
	pid = fork();
	if (pid == 0) {
		close(p[1]);
		char c;
		read(p[0], &c, 1);
		_exit(6);
	}
	close(p[0]);
	CHECK_EQ("waitpid.nohang_running", waitpid(pid, &st, WNOHANG), 0);
	siginfo_t si;
	memset(&si, 0xff, sizeof si);
	CHECK_EQ("waitid.nohang_running", waitid(P_PID, pid, &si, WEXITED | WNOHANG), 0);
	CHECK_EQ("waitid.nohang_si_pid_zero", si.si_pid, 0);
	close(p[1]);
	/* WNOWAIT leaves the child waitable */
	memset(&si, 0, sizeof si);
	CHECK_EQ("waitid.nowait", waitid(P_PID, pid, &si, WEXITED | WNOWAIT), 0);
	CHECK_EQ("waitid.si_signo", si.si_signo, SIGCHLD);
	CHECK_EQ("waitid.si_code_exited", si.si_code, CLD_EXITED);
	CHECK_EQ("waitid.si_status", si.si_status, 6);
	CHECK_EQ("waitid.si_pid", si.si_pid, pid);
	CHECK_EQ("waitid.si_uid", si.si_uid, getuid());
	CHECK_EQ("kill.zombie_exists", kill(pid, 0), 0);
	memset(&si, 0, sizeof si);
	CHECK_EQ("waitid.reap", waitid(P_ALL, 0, &si, WEXITED), 0);
	CHECK_EQ("waitid.reap_pid", si.si_pid, pid);
	CHECK_ERR("kill.reaped_esrch", kill(pid, 0), ESRCH);

	pid = fork();
	if (pid == 0) {
		for (;;)
			pause();
	}
	kill(pid, SIGUSR1);
	memset(&si, 0, sizeof si);
	CHECK_EQ("waitid.killed", waitid(P_PID, pid, &si, WEXITED), 0);
	CHECK_EQ("waitid.si_code_killed", si.si_code, CLD_KILLED);
	CHECK_EQ("waitid.si_status_signal", si.si_status, SIGUSR1);

	CHECK_ERR("wait.no_children", wait(&st), ECHILD);
	CHECK_ERR("waitpid.not_child", waitpid(getppid(), &st, 0), ECHILD);
	CHECK_ERR("waitid.bad_options", waitid(P_ALL, 0, &si, 0), EINVAL);

	/* many children, reaped in any order */
	int sum = 0, n = 0;
	for (int i = 1; i <= 20; i++)
		if (fork() == 0)
			_exit(i);
	pid_t r;
	while ((r = wait(&st)) > 0) {
		n++;
		sum += WEXITSTATUS(st);
	}
	CHECK_EQ("wait.many_count", n, 20);
	CHECK_EQ("wait.many_sum", sum, 210);
	CHECK_EQ("wait.many_then_echild", errno, ECHILD);
}

static void test_vfork_clone_spawn(void)
{
	static volatile int shared_flag;
	shared_flag = 0;
	pid_t pid = vfork();
	if (pid == 0) {
		/* vfork shares memory with the suspended parent */
		shared_flag = 77;
		_exit(4);
	}
	CHECK("vfork.returns_pid", pid > 0);
	CHECK_EQ("vfork.memory_shared", shared_flag, 77);
	CHECK_EQ("vfork.exit_status", WEXITSTATUS(wait_status(pid)), 4);

	char *args[] = { helper, "exit", "7", NULL };
	char *env[] = { NULL };
	pid = vfork();
	if (pid == 0) {
		execve(helper, args, env);
		_exit(127);
	}
	CHECK_EQ("vfork.execve", WEXITSTATUS(wait_status(pid)), 7);

	/* clone with just SIGCHLD is fork */
	long c = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (c == 0)
		_exit(global_value == 1 ? 12 : 13);
	CHECK("clone.sigchld", c > 0);
	CHECK_EQ("clone.child_status", WEXITSTATUS(wait_status(c)), 12);

	/* posix_spawn (musl: clone with CLONE_VM|CLONE_VFORK) */
	char *sargs[] = { helper, "exit", "8", NULL };
	pid_t sp;
	CHECK_EQ("posix_spawn", posix_spawn(&sp, helper, NULL, NULL, sargs, env), 0);
	CHECK_EQ("posix_spawn.status", WEXITSTATUS(wait_status(sp)), 8);
	char *bad[] = { "/nonexistent/binary", NULL };
	CHECK_EQ("posix_spawn.enoent", posix_spawn(&sp, bad[0], NULL, NULL, bad, env), ENOENT);
}

static void test_execve(const char *tmp)
{
	char *args[] = { helper, "args", "beta gamma", "", NULL };
	char *env[] = { "SB_A=1", "SB_B=two words", NULL };
	pid_t pid = fork();
	if (pid == 0) {
		execve(helper, args, env);
		_exit(127);
	}
	int st = wait_status(pid);
	CHECK("execve.argv_envp", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		printf("# h_exec args: status %#x\n", st);

	/* what survives exec: pid, fds without FD_CLOEXEC, ignored signals,
	 * the signal mask; what does not: FD_CLOEXEC fds, handlers */
	int p[2], q[2];
	pipe(p);
	pipe2(q, O_CLOEXEC);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		char keep[16], gone[16], me[16];
		snprintf(keep, sizeof keep, "%d", p[1]);
		snprintf(gone, sizeof gone, "%d", q[1]);
		snprintf(me, sizeof me, "%d", getpid());
		signal(SIGUSR1, SIG_IGN);
		struct sigaction sa = { 0 };
		sa.sa_handler = (void (*)(int))msleep;
		sigaction(SIGUSR2, &sa, NULL);
		sigset_t m;
		sigemptyset(&m);
		sigaddset(&m, SIGHUP);
		sigprocmask(SIG_BLOCK, &m, NULL);
		char *a[] = { helper, "state", keep, gone, me, NULL };
		execve(helper, a, env);
		_exit(127);
	}
	close(p[1]);
	close(q[1]);
	char buf[16] = { 0 };
	read(p[0], buf, sizeof buf - 1);
	st = wait_status(pid);
	CHECK("execve.inherited_state", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		printf("# h_exec state: status %#x\n", st);
	CHECK_STR("execve.kept_fd_writes", buf, "exec-ok");
	char c;
	CHECK_EQ("execve.cloexec_closed", read(q[0], &c, 1), 0);
	close(p[0]);
	close(q[0]);

	/* a CLOEXEC pipe tells the parent when exec succeeded */
	pipe2(p, O_CLOEXEC);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		char *a[] = { helper, "exit", "3", NULL };
		execve(helper, a, env);
		int e = errno;
		write(p[1], &e, sizeof e);
		_exit(127);
	}
	close(p[1]);
	CHECK_EQ("execve.cloexec_eof_on_success", read(p[0], &c, 1), 0);
	close(p[0]);
	CHECK_EQ("execve.exit_status", WEXITSTATUS(wait_status(pid)), 3);

	/* failures return to the caller */
	char *a0[] = { "x", NULL };
	CHECK_ERR("execve.enoent", execve("/nonexistent", a0, env), ENOENT);
	CHECK_ERR("execve.directory", execve(tmp, a0, env), EACCES);
	char path[300];
	snprintf(path, sizeof path, "%s/noexec", tmp);
	int fd = open(path, O_CREAT | O_WRONLY, 0644);
	write(fd, "#!/bin/sh\n", 10);
	close(fd);
	CHECK_ERR("execve.not_executable", execve(path, a0, env), EACCES);
	snprintf(path, sizeof path, "%s/noexec/x", tmp);
	CHECK_ERR("execve.enotdir", execve(path, a0, env), ENOTDIR);
	snprintf(path, sizeof path, "%s/noexec", tmp);
	unlink(path);
}

static void test_groups(void)
{
	pid_t me = getpid();
	CHECK_EQ("getpgid.self", getpgid(0), getpgrp());
	CHECK_EQ("getpgid.by_pid", getpgid(me), getpgrp());
	CHECK_EQ("getsid.self", getsid(0), getsid(me));
	CHECK_ERR("getpgid.esrch", getpgid(999999), ESRCH);
	CHECK_ERR("setpgid.negative", setpgid(0, -1), EINVAL);
	if (getpgrp() == me)
		CHECK_ERR("setsid.group_leader", setsid(), EPERM);

	/* two children in a new group; a signal to the group reaches both */
	int p[2];
	pipe(p);
	pid_t a = fork();
	if (a == 0) {
		setpgid(0, 0);
		close(p[0]);
		write(p[1], "a", 1);
		for (;;)
			pause();
	}
	setpgid(a, a); /* both sides, to win the race */
	pid_t b = fork();
	if (b == 0) {
		setpgid(0, a);
		close(p[0]);
		write(p[1], "b", 1);
		for (;;)
			pause();
	}
	setpgid(b, a);
	char buf[2];
	read(p[0], buf, 1);
	read(p[0], buf + 1, 1);
	close(p[0]);
	close(p[1]);
	CHECK_EQ("setpgid.new_group", getpgid(a), a);
	CHECK_EQ("setpgid.join_group", getpgid(b), a);
	CHECK("setpgid.parent_unchanged", getpgrp() != a);
	CHECK_SYS("kill.group", kill(-a, SIGTERM));
	int sa = wait_status(a), sb = wait_status(b);
	CHECK("kill.group_a", WIFSIGNALED(sa) && WTERMSIG(sa) == SIGTERM);
	CHECK("kill.group_b", WIFSIGNALED(sb) && WTERMSIG(sb) == SIGTERM);
	CHECK_ERR("kill.group_gone", kill(-a, 0), ESRCH);

	/* setsid in a child: new session and group led by the child */
	pipe(p);
	pid_t c = fork();
	if (c == 0) {
		close(p[0]);
		int32_t r[5];
		r[0] = setsid();
		r[1] = getsid(0);
		r[2] = getpgrp();
		errno = 0;
		r[3] = setsid();
		r[4] = errno;
		write(p[1], r, sizeof r);
		_exit(0);
	}
	close(p[1]);
	int32_t r[5] = { 0 };
	read(p[0], r, sizeof r);
	close(p[0]);
	wait_status(c);
	CHECK_EQ("setsid.returns_pid", r[0], c);
	CHECK_EQ("setsid.getsid", r[1], c);
	CHECK_EQ("setsid.getpgrp", r[2], c);
	CHECK("setsid.again_eperm", r[3] == -1 && r[4] == EPERM);

	/* setpgid on a child that has exec'ed: EACCES */
	int in[2], done[2];
	pipe(in);
	pipe2(done, O_CLOEXEC);
	c = fork();
	if (c == 0) {
		dup2(in[0], 0);
		close(in[1]);
		close(done[0]);
		char *a2[] = { helper, "wait", NULL };
		char *env[] = { NULL };
		execve(helper, a2, env);
		_exit(127);
	}
	close(in[0]);
	close(done[1]);
	char ch;
	read(done[0], &ch, 1); /* EOF: exec happened */
	close(done[0]);
	CHECK_ERR("setpgid.after_exec", setpgid(c, c), EACCES);
	close(in[1]);
	CHECK_EQ("setpgid.after_exec_child", WEXITSTATUS(wait_status(c)), 0);
}

static void test_orphan(void)
{
	int p[2], ready[2];
	pipe(p);
	pipe(ready);
	pid_t c = fork();
	if (c == 0) {
		pid_t g = fork();
		if (g == 0) {
			pid_t first = getppid();
			write(ready[1], "r", 1);
			/* wait until the middle process is gone */
			for (int i = 0; i < 2000 && getppid() == first; i++)
				msleep(5);
			int32_t r[2] = { first, getppid() };
			write(p[1], r, sizeof r);
			_exit(0);
		}
		char ch;
		read(ready[0], &ch, 1);
		_exit(0);
	}
	close(ready[0]);
	close(ready[1]);
	close(p[1]);
	wait_status(c);
	int32_t r[2] = { 0, 0 };
	CHECK_EQ("orphan.report", read(p[0], r, sizeof r), 8);
	close(p[0]);
	CHECK_EQ("orphan.first_parent", r[0], c);
	CHECK("orphan.reparented", r[1] != c && r[1] > 0);
}

/* programs with large, aligned and TLS segments load and see their bytes */
static void test_layouts(const char *dir)
{
	const char *names[] = {"h_layout", "h_layout64k"};
	for (unsigned i = 0; i < 2; i++) {
		char path[512], name[64];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		pid_t c = fork();
		if (c == 0) {
			execl(path, names[i], (char *)NULL);
			_exit(100 + errno);
		}
		int st = wait_status(c);
		snprintf(name, sizeof name, "layout.%s", names[i]);
		CHECK_EQ(name, st, 0);
	}
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	snprintf(helper, sizeof helper, "%s/h_exec", check_testdir(argv[0]));
	CHECK_SYS("helper.present", access(helper, X_OK));
	const char *tmp = check_mktmp();
	test_ids();
	test_fork_cow();
	test_exit_codes();
	test_wait_variants();
	test_vfork_clone_spawn();
	test_execve(tmp);
	test_groups();
	test_orphan();
	test_layouts(check_testdir(argv[0]));
	CHECK_SYS("cleanup.rmdir", rmdir(tmp));
	return check_done();
}
