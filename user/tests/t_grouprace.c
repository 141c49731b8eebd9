/*
 * t_grouprace: whole-process events racing each other, where the kernel
 * must order what a waiter can see after the state it implies (Linux
 * orders all of these under tasklist_lock or the signal lock):
 *   - execve in one thread while another calls exit_group, takes a fatal
 *     signal, or execs too: the process ends or runs the new program,
 *     never hangs (each side used to wait for the other's thread to stop,
 *     for ever); the new program's one thread has the process's ID as
 *     its thread ID, whichever thread called execve;
 *   - a parent and its child killed together under a child subreaper:
 *     the orphan is adopted before the subreaper can see its death (a
 *     SIGCHLD handler's WNOHANG loop finds it; with SIGCHLD ignored, wait
 *     ends with ECHILD, never blocks on a child already reaped);
 *   - a pidfd is readable as soon as its process can be reaped;
 *   - a process group killed while a member forks leaves no member
 *     alive: the child of a fork the kill met gets the signal too;
 *   - a process sharing its memory (CLONE_VM) that ends with exit_group
 *     still clears its CLONE_CHILD_CLEARTID word and wakes its waiter.
 * Each case repeats many times: the windows are small, and a hang is
 * caught by an alarm in the process that waits.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#define FUTEX_WAIT 0
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>

#include "check.h"

static char self[256];

/* re-executed as "t_grouprace exit": ends at once, with 0 if its one
 * thread has the process's ID (Linux's de_thread gives a thread that
 * execs the leader's), else 5 */
static void exec_self(void)
{
	char *argv[] = {self, "exit", NULL};
	execv(self, argv);
}

static atomic_int go;

static void spin(unsigned n)
{
	for (volatile unsigned i = 0; i < n; i++)
		;
}

static unsigned delay;

static void *exit_group_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&go))
		;
	spin(delay);
	syscall(SYS_exit_group, 7);
	return NULL;
}

static void *signal_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&go))
		;
	spin(delay);
	pthread_kill(pthread_self(), SIGTERM); /* fatal to the whole group */
	return NULL;
}

static void *exec_thread(void *arg)
{
	(void)arg;
	while (!atomic_load(&go))
		;
	spin(delay);
	exec_self();
	return NULL;
}

/* One child per round: its main thread execs while a second thread does
 * what kind asks. Returns the number of rounds whose status was not one
 * of ok1/ok2 (WIFEXITED codes, or -SIG for a signal); a hang fails the
 * whole case by the alarm. */
static int exec_race(void *(*fn)(void *), int rounds, int ok1, int ok2, int *hung)
{
	int bad = 0;
	*hung = 0;
	for (int i = 0; i < rounds; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			delay = (unsigned)(i * 7919) % 200000;
			pthread_t th;
			if (pthread_create(&th, NULL, fn, NULL) != 0)
				_exit(90);
			atomic_store(&go, 1);
			exec_self();
			_exit(91);
		}
		if (pid < 0)
			return rounds;
		alarm(20);
		int st;
		pid_t w = waitpid(pid, &st, 0);
		alarm(0);
		if (w != pid) {
			/* the alarm: the child hangs, both threads waiting */
			*hung = 1;
			kill(pid, SIGKILL);
			alarm(10);
			if (waitpid(pid, &st, 0) != pid)
				printf("# round %d: the child hangs and SIGKILL does not end it\n", i);
			alarm(0);
			return bad + 1;
		}
		int got = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? -WTERMSIG(st) : 999;
		if (got != ok1 && got != ok2) {
			printf("# round %d: status %d\n", i, got);
			bad++;
		}
	}
	return bad;
}

static volatile sig_atomic_t timed_out;
static void on_alarm(int s)
{
	(void)s;
	timed_out = 1;
}

/* the parent's side of a new process group g (a fork that called
 * setpgid(0, 0)): makes it a group on this side too, so the kill cannot
 * come first, and waits until g says its members are there */
static void await_group(pid_t g, int ready[2])
{
	if (g < 0)
		_exit(2);
	setpgid(g, g);
	close(ready[1]);
	char c;
	if (read(ready[0], &c, 1) != 1)
		_exit(2);
	close(ready[0]);
}

/* The subreaper's side of the adoption race. A child P (a group of its
 * own) forks C; both are killed with one kill(-P, SIGKILL). mode 0:
 * SIGCHLD ignored, so wait must end with ECHILD once both are gone;
 * mode 1: a SIGCHLD handler reaps with WNOHANG and the subreaper
 * sleeps in sigsuspend until both are reaped. Exits 0 on success, 1 if
 * a round did not end (the alarm), 2 on a set-up failure. */
static volatile sig_atomic_t reaped;
static void on_chld(int s)
{
	(void)s;
	int saved = errno;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		reaped++;
	errno = saved;
}

static void subreaper(int mode, int rounds)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
		_exit(2);
	struct sigaction sa = {.sa_handler = on_alarm};
	sigaction(SIGALRM, &sa, NULL);
	sigset_t chld, old;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (mode == 0) {
		signal(SIGCHLD, SIG_IGN);
	} else {
		struct sigaction sc = {.sa_handler = on_chld};
		sigaction(SIGCHLD, &sc, NULL);
		sigprocmask(SIG_BLOCK, &chld, &old);
	}
	for (int i = 0; i < rounds; i++) {
		int ready[2];
		if (pipe(ready) != 0)
			_exit(2);
		reaped = 0;
		pid_t p = fork();
		if (p == 0) {
			setpgid(0, 0);
			if (fork() == 0) {
				close(ready[0]);
				write(ready[1], "c", 1);
				for (;;)
					pause();
			}
			for (;;)
				pause();
		}
		await_group(p, ready);
		kill(-p, SIGKILL);
		alarm(10);
		if (mode == 0) {
			/* blocks until both are gone, then ECHILD */
			errno = 0;
			if (wait(NULL) != -1 || errno != ECHILD) {
				printf("# round %d: wait did not end with ECHILD (errno %d)\n", i, errno);
				_exit(1);
			}
		} else {
			timed_out = 0;
			while (reaped < 2 && !timed_out)
				sigsuspend(&old);
			if (reaped < 2) {
				printf("# round %d: %d of 2 reaped\n", i, (int)reaped);
				_exit(1);
			}
		}
		alarm(0);
	}
	_exit(0);
}

static int run_subreaper(int mode, int rounds)
{
	pid_t s = fork();
	if (s == 0)
		subreaper(mode, rounds);
	int st;
	if (s < 0 || waitpid(s, &st, 0) != s)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

/* kill(-G, SIGKILL) while G's leader forks in a loop: every member must
 * die, the children its forks were making included. The caller of this
 * is a subreaper, so a survivor would stay its child; exits 0 if every
 * round's wait ended with ECHILD, 1 if a member survived. */
static void group_kill(int rounds)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
		_exit(2);
	struct sigaction sa = {.sa_handler = on_alarm};
	sigaction(SIGALRM, &sa, NULL);
	for (int i = 0; i < rounds; i++) {
		int ready[2];
		if (pipe(ready) != 0)
			_exit(2);
		pid_t g = fork();
		if (g == 0) {
			setpgid(0, 0);
			close(ready[0]);
			write(ready[1], "g", 1);
			close(ready[1]);
			for (int n = 0; n < 300; n++)
				if (fork() == 0)
					for (;;)
						pause();
			for (;;)
				pause();
		}
		await_group(g, ready);
		usleep((unsigned)(i * 137) % 2000);
		kill(-g, SIGKILL);
		timed_out = 0;
		alarm(10);
		while (wait(NULL) > 0)
			;
		int err = errno;
		alarm(0);
		if (err != ECHILD) {
			printf("# round %d: a member of the killed group is alive (errno %d)\n", i, err);
			kill(-g, SIGKILL);
			_exit(1);
		}
	}
	_exit(0);
}

static volatile int cleartid_word;
static char clone_stack[64 << 10] __attribute__((aligned(16)));

static int clone_vm_child(void *arg)
{
	(void)arg;
	syscall(SYS_exit_group, 0);
	return 0;
}

/* clone(CLONE_VM | CLONE_CHILD_CLEARTID) and a futex wait on the word:
 * 1 if it was cleared and the waiter woken within 5 s */
static int cleartid_by_exit_group(void)
{
	cleartid_word = 12345;
	pid_t c = clone(clone_vm_child, clone_stack + sizeof clone_stack, CLONE_VM | CLONE_CHILD_CLEARTID | SIGCHLD,
			NULL, NULL, NULL, &cleartid_word);
	if (c < 0)
		return 0;
	struct timespec end, now;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += 5;
	for (;;) {
		int v = cleartid_word;
		if (v == 0)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
			break;
		struct timespec ts = {0, 100 * 1000 * 1000};
		syscall(SYS_futex, &cleartid_word, FUTEX_WAIT, v, &ts, NULL, 0);
	}
	waitpid(c, NULL, 0);
	return cleartid_word == 0;
}

/* the entries of /proc/self/task, each checked to be this process's ID */
static int threads_of_self(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n += atoi(e->d_name) == getpid() ? 1 : 100;
	closedir(d);
	return n;
}

static void *exec_now(void *arg)
{
	(void)arg;
	exec_self();
	return NULL;
}

/* a thread other than the main one execs: the process keeps its ID, and
 * the program runs as its one thread (exit status 0 from "exit") */
static int exec_from_thread(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		pthread_t th;
		if (pthread_create(&th, NULL, exec_now, NULL) != 0)
			_exit(90);
		for (;;)
			pause();
	}
	int st;
	alarm(20);
	pid_t w = waitpid(pid, &st, 0);
	alarm(0);
	if (w != pid) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return -1;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "exit") == 0)
		return syscall(SYS_gettid) == getpid() && threads_of_self() == 1 ? 0 : 5;
	check_prog = "t_grouprace";
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0) {
		printf("not ok setup: readlink /proc/self/exe\n");
		return 1;
	}
	self[n] = 0;
	struct sigaction sa = {.sa_handler = on_alarm}; /* interrupts waitpid */
	sigaction(SIGALRM, &sa, NULL);

	int hung;
	int bad = exec_race(exit_group_thread, 60, 0, 7, &hung);
	CHECK("exec.vs_exit_group.no_hang", !hung);
	CHECK_EQ("exec.vs_exit_group.status", bad, 0);
	bad = exec_race(signal_thread, 60, 0, -SIGTERM, &hung);
	CHECK("exec.vs_fatal_signal.no_hang", !hung);
	CHECK_EQ("exec.vs_fatal_signal.status", bad, 0);
	bad = exec_race(exec_thread, 60, 0, 0, &hung);
	CHECK("exec.vs_exec.no_hang", !hung);
	CHECK_EQ("exec.vs_exec.status", bad, 0);
	CHECK_EQ("exec.from_thread.takes_pid", exec_from_thread(), 0);

	CHECK_EQ("reparent.ignored_sigchld.echild", run_subreaper(0, 150), 0);
	CHECK_EQ("reparent.handler_reaps_both", run_subreaper(1, 150), 0);

	/* a pidfd is readable once its process can be reaped: after the
	 * reap, poll with no timeout says so */
	int unready = 0;
	for (int i = 0; i < 200; i++) {
		pid_t c = fork();
		if (c == 0)
			_exit(0);
		int fd = (int)syscall(SYS_pidfd_open, c, 0);
		int st;
		waitpid(c, &st, 0);
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (fd < 0 || poll(&p, 1, 0) != 1 || !(p.revents & POLLIN))
			unready++;
		close(fd);
	}
	CHECK_EQ("pidfd.readable_after_reap", unready, 0);

	CHECK("exit_group.clone_vm_cleartid", cleartid_by_exit_group());

	pid_t k = fork();
	if (k == 0)
		group_kill(30);
	int kst = 0;
	waitpid(k, &kst, 0);
	CHECK_EQ("group_kill.during_fork.no_survivor", WIFEXITED(kst) ? WEXITSTATUS(kst) : 100 + WTERMSIG(kst), 0);
	return check_done();
}
