/*
 * t_stopcont: sleeps and waits across a stop (SIGSTOP) and SIGCONT, where
 * no handler runs: Linux goes on with them as if nothing happened
 * (nanosleep and relative clock_nanosleep to their first deadline, the
 * time stopped included, through restart_syscall; absolute
 * clock_nanosleep, pause and sigsuspend as they were; poll, ppoll,
 * select and a futex wait with a timeout to their first deadline too),
 * and only a handler ends them with EINTR, SA_RESTART or not. Each sleeper is a
 * child stopped and continued by the parent; it reports through its
 * exit status.
 *
 * A stop is complete, and reported to the parent, only once every thread
 * has stopped: a thread blocked in a futex wait or a read leaves the wait
 * (to make the call again after SIGCONT), so once waitpid has seen the
 * stop, a FUTEX_WAKE finds no waiter and data written to the pipe stays
 * unread.
 *
 * Also across a stop: a relative sleep on the process's CPU clock goes on
 * (restart_syscall), msgrcv goes on, and semop ends with EINTR, as
 * signal(7) says Linux's does.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>

#include "check.h"

#define FUTEX_WAIT 0
#define FUTEX_WAKE 1

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile sig_atomic_t handled;
static void on_usr1(int s)
{
	(void)s;
	handled++;
}

enum { NANOSLEEP, CLOCK_REL, CLOCK_ABS, POLL, PPOLL, SELECT, FUTEX, CPU_REL, PAUSE, SUSPEND };

/* The spinner blocks SIGUSR1, as a worker thread in a portable program
 * does: POSIX lets a process-directed signal go to any thread that does
 * not block it. Linux wakes the sleeping main thread for it; on
 * Shortbread the first thread to look takes it, and the spinner comes
 * into the kernel every few milliseconds to have its CPU time counted. */
static void *spin(void *arg)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	for (volatile unsigned long n = 0;; n++)
		(void)arg;
	return NULL;
}

/* the state letter of pid's main thread in /proc, or 0 */
static char proc_state(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	return check_stat_state(path);
}

/* the child: sleeps 1 s (or waits for SIGUSR1) by kind; exit 0 if the
 * call ended as Linux ends it, else a code saying how it did not */
static void sleeper(int kind, int with_handler)
{
	struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = SA_RESTART};
	sigaction(SIGUSR1, &sa, NULL);
	double t0 = now();
	struct timespec d = {1, 0}, rem = {9, 9}, abs;
	int r = 0, e = 0;
	switch (kind) {
	case NANOSLEEP:
		r = nanosleep(&d, &rem);
		e = errno;
		break;
	case CLOCK_REL:
		e = clock_nanosleep(CLOCK_MONOTONIC, 0, &d, &rem);
		r = e ? -1 : 0;
		break;
	case CLOCK_ABS:
		clock_gettime(CLOCK_MONOTONIC, &abs);
		abs.tv_sec += 1;
		e = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &abs, NULL);
		r = e ? -1 : 0;
		break;
	case POLL:
	case PPOLL:
	case SELECT: {
		int p[2];
		pipe(p); /* never readable: the call sleeps its whole timeout */
		struct pollfd pf = {.fd = p[0], .events = POLLIN};
		if (kind == POLL) {
			r = poll(&pf, 1, 1000);
		} else if (kind == PPOLL) {
			r = ppoll(&pf, 1, &d, NULL);
		} else {
			fd_set rd;
			FD_ZERO(&rd);
			FD_SET(p[0], &rd);
			struct timeval tv = {1, 0};
			r = select(p[0] + 1, &rd, NULL, NULL, &tv);
		}
		e = errno;
		break;
	}
	case FUTEX: {
		static int word;
		r = (int)syscall(SYS_futex, &word, 0 /* FUTEX_WAIT */, 0, &d, NULL, 0);
		e = errno;
		if (r == -1 && e == ETIMEDOUT)
			r = 0; /* the end it should have */
		break;
	}
	case CPU_REL: {
		/* 1 s of the process's CPU time, which a spinning thread
		 * spends: restarted through restart_syscall after a stop */
		pthread_t th;
		pthread_create(&th, NULL, spin, NULL);
		e = clock_nanosleep(CLOCK_PROCESS_CPUTIME_ID, 0, &d, &rem);
		r = e ? -1 : 0;
		break;
	}
	case PAUSE:
		r = pause();
		e = errno;
		break;
	case SUSPEND: {
		sigset_t none;
		sigemptyset(&none);
		r = sigsuspend(&none);
		e = errno;
		break;
	}
	}
	double slept = now() - t0;
	if (with_handler) {
		/* ended by the handler: EINTR, early, with what was left */
		if (r != -1 || e != EINTR || handled != 1)
			_exit(10);
		if ((kind == NANOSLEEP || kind == CLOCK_REL || kind == CPU_REL) && (rem.tv_sec != 0 || rem.tv_nsec == 0 || rem.tv_nsec == 9))
			_exit(11);
		_exit(kind < PAUSE && slept > 0.9 ? 12 : 0);
	}
	if (kind >= PAUSE) /* ended only by the SIGUSR1 after the SIGCONT */
		_exit(r == -1 && e == EINTR && handled == 1 ? 0 : 13);
	if (r != 0)
		_exit(14); /* EINTR for a stop: Linux goes on */
	if (slept < 0.95 || slept > 5)
		_exit(15); /* the first deadline, stopped time counted */
	_exit(0);
}

static int run(int kind, int with_handler)
{
	pid_t c = fork();
	if (c == 0)
		sleeper(kind, with_handler);
	usleep(150000);
	/* the sleep has begun (a slow fork and thread creation under load
	 * took longer than 150 ms at times) */
	for (int i = 0; i < 200 && proc_state(c) != 'S'; i++)
		usleep(10000);
	if (with_handler) {
		kill(c, SIGUSR1);
	} else {
		kill(c, SIGSTOP);
		usleep(150000);
		kill(c, SIGCONT);
		if (kind >= PAUSE) {
			usleep(300000);
			kill(c, SIGUSR1);
		}
	}
	int st;
	waitpid(c, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

/* the number of the threads of pid whose /proc state is T */
static int threads_stopped(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char sp[384];
		snprintf(sp, sizeof sp, "%s/%s/stat", path, e->d_name);
		if (check_stat_state(sp) == 'T')
			n++;
	}
	closedir(d);
	return n;
}

static int reader_in, reader_out;
static int *futex_word;

static void *reader(void *arg)
{
	(void)arg;
	char b[8];
	ssize_t n = read(reader_in, b, sizeof b);
	write(reader_out, &n, sizeof n);
	return NULL;
}

/* a child of two threads, one blocked in read on a pipe, the main one in
 * FUTEX_WAIT on a shared word, stopped and then continued */
static void group_stop(void)
{
	int in[2], out[2];
	if (pipe(in) || pipe(out))
		return;
	futex_word = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	*futex_word = 0;
	pid_t c = fork();
	if (c == 0) {
		close(in[1]);
		close(out[0]);
		reader_in = in[0], reader_out = out[1];
		pthread_t th;
		pthread_create(&th, NULL, reader, NULL);
		while (*futex_word == 0)
			syscall(SYS_futex, futex_word, FUTEX_WAIT, 0, NULL, NULL, 0);
		pthread_join(th, NULL);
		_exit(0);
	}
	close(out[1]);
	usleep(200000); /* both threads blocked */
	kill(c, SIGSTOP);
	int st = 0;
	CHECK("group_stop.waitpid_reports_stop", waitpid(c, &st, WUNTRACED) == c && WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP);
	CHECK_EQ("group_stop.every_thread_T", threads_stopped(c), 2);
	/* the futex waiter left its wait to stop: nobody to wake */
	CHECK_EQ("group_stop.futex_waiter_left_wait", syscall(SYS_futex, futex_word, FUTEX_WAKE, 1, NULL, NULL, 0), 0);
	CHECK_SYS("group_stop.write", write(in[1], "hello", 5));
	usleep(100000);
	int avail = -1;
	ioctl(in[0], FIONREAD, &avail);
	CHECK_EQ("group_stop.reader_reads_nothing_while_stopped", avail, 5);
	kill(c, SIGCONT);
	ssize_t n = -1;
	read(out[0], &n, sizeof n);
	CHECK_EQ("group_stop.read_made_again_after_cont", n, 5);
	__atomic_store_n(futex_word, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, futex_word, FUTEX_WAKE, 1, NULL, NULL, 0);
	st = -1;
	waitpid(c, &st, 0);
	CHECK_EQ("group_stop.child_exits_0", st, 0);
	close(in[0]);
	close(in[1]);
	close(out[0]);
}

/* System V waits across a stop: msgrcv goes on (Linux's ERESTARTNOHAND),
 * semop ends with EINTR (signal(7) lists it among the calls a stop
 * interrupts). Returns the child's exit code: 0 as Linux does. */
static void on_alarm(int s)
{
	(void)s;
}

static volatile sig_atomic_t conts;
static void on_cont(int s)
{
	(void)s;
	conts++;
}

/* A call interrupted by a stop, and the handler of the SIGCONT that ends
 * the stop: the restart is decided by that handler, as Linux decides it
 * after the stop (EINTR, unless SA_RESTART for a call that allows it).
 * kind: 0 pause, 1 read of a pipe, 2 nanosleep. Returns the child's exit
 * code, 0 as on Linux. */
static int cont_handler(int kind, int sa_restart)
{
	struct sigaction al = {.sa_handler = on_alarm};
	sigaction(SIGALRM, &al, NULL);
	signal(SIGPIPE, SIG_IGN); /* the child may be gone when the byte goes */
	int p[2];
	if (pipe(p))
		return 99;
	pid_t c = fork();
	if (c == 0) {
		close(p[1]);
		struct sigaction sa = {.sa_handler = on_cont, .sa_flags = sa_restart ? SA_RESTART : 0};
		sigaction(SIGCONT, &sa, NULL);
		char b;
		struct timespec d = {2, 0};
		int r = kind == 0 ? pause() : kind == 1 ? (int)read(p[0], &b, 1) : nanosleep(&d, NULL);
		int e = errno;
		if (conts != 1)
			_exit(30);
		if (sa_restart) /* the read made again, and the byte came */
			_exit(r == 1 ? 0 : r < 0 && e == EINTR ? 31 : 32);
		_exit(r == -1 && e == EINTR ? 0 : 33);
	}
	close(p[0]);
	usleep(150000);
	kill(c, SIGSTOP);
	usleep(150000);
	kill(c, SIGCONT);
	usleep(150000);
	(void)!write(p[1], "x", 1);
	int st = 0;
	alarm(10);
	pid_t w = waitpid(c, &st, 0);
	alarm(0);
	if (w != c) { /* the call was made again: the child waits on */
		kill(c, SIGKILL);
		waitpid(c, &st, 0);
		close(p[1]);
		return 40;
	}
	close(p[1]);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

static int sysv_stop(int sem)
{
	struct sigaction sa = {.sa_handler = on_alarm}; /* ends a waitpid that hangs */
	sigaction(SIGALRM, &sa, NULL);
	int q = msgget(IPC_PRIVATE, 0600), s = semget(IPC_PRIVATE, 1, 0600);
	if (q < 0 || s < 0)
		return 99;
	pid_t c = fork();
	if (c == 0) {
		if (sem) {
			struct sembuf op = {0, -1, 0};
			int r = semop(s, &op, 1);
			_exit(r == -1 && errno == EINTR ? 0 : 20 + (r == 0));
		}
		struct {
			long type;
			char text[8];
		} m;
		ssize_t r = msgrcv(q, &m, sizeof m.text, 0, 0);
		_exit(r == 5 && memcmp(m.text, "hello", 5) == 0 ? 0 : r < 0 && errno == EINTR ? 14 : 15);
	}
	usleep(150000);
	kill(c, SIGSTOP);
	usleep(150000);
	kill(c, SIGCONT);
	usleep(150000);
	struct {
		long type;
		char text[8];
	} m = {1, "hello"};
	if (!sem)
		msgsnd(q, &m, 5, 0);
	int st;
	alarm(10);
	pid_t w = waitpid(c, &st, 0);
	alarm(0);
	if (w != c) {
		kill(c, SIGKILL);
		waitpid(c, &st, 0);
	}
	msgctl(q, IPC_RMID, NULL);
	semctl(s, 0, IPC_RMID);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

int main(void)
{
	check_prog = "t_stopcont";
	CHECK_EQ("nanosleep.goes_on_after_stop", run(NANOSLEEP, 0), 0);
	CHECK_EQ("clock_nanosleep.relative.goes_on_after_stop", run(CLOCK_REL, 0), 0);
	CHECK_EQ("clock_nanosleep.absolute.goes_on_after_stop", run(CLOCK_ABS, 0), 0);
	CHECK_EQ("poll.goes_on_after_stop", run(POLL, 0), 0);
	CHECK_EQ("ppoll.goes_on_after_stop", run(PPOLL, 0), 0);
	CHECK_EQ("select.goes_on_after_stop", run(SELECT, 0), 0);
	CHECK_EQ("futex_wait.timed.goes_on_after_stop", run(FUTEX, 0), 0);
	CHECK_EQ("clock_nanosleep.cpu_clock.goes_on_after_stop", run(CPU_REL, 0), 0);
	CHECK_EQ("pause.goes_on_after_stop", run(PAUSE, 0), 0);
	CHECK_EQ("sigsuspend.goes_on_after_stop", run(SUSPEND, 0), 0);
	CHECK_EQ("nanosleep.handler_eintr_rem", run(NANOSLEEP, 1), 0);
	CHECK_EQ("clock_nanosleep.relative.handler_eintr_rem", run(CLOCK_REL, 1), 0);
	CHECK_EQ("clock_nanosleep.absolute.handler_eintr", run(CLOCK_ABS, 1), 0);
	CHECK_EQ("poll.handler_eintr", run(POLL, 1), 0);
	CHECK_EQ("ppoll.handler_eintr", run(PPOLL, 1), 0);
	CHECK_EQ("select.handler_eintr", run(SELECT, 1), 0);
	CHECK_EQ("futex_wait.timed.handler_eintr", run(FUTEX, 1), 0);
	CHECK_EQ("clock_nanosleep.cpu_clock.handler_eintr_rem", run(CPU_REL, 1), 0);
	CHECK_EQ("pause.handler_eintr", run(PAUSE, 1), 0);
	CHECK_EQ("sigsuspend.handler_eintr", run(SUSPEND, 1), 0);
	group_stop();
	CHECK_EQ("msgrcv.goes_on_after_stop", sysv_stop(0), 0);
	CHECK_EQ("pause.sigcont_handler_eintr", cont_handler(0, 0), 0);
	CHECK_EQ("read.sigcont_handler_eintr", cont_handler(1, 0), 0);
	CHECK_EQ("read.sigcont_handler_sa_restart_goes_on", cont_handler(1, 1), 0);
	CHECK_EQ("nanosleep.sigcont_handler_eintr", cont_handler(2, 0), 0);
	CHECK_EQ("semop.eintr_after_stop", sysv_stop(1), 0);
	/* restart_syscall with nothing to finish: EINTR */
	errno = 0;
	CHECK_ERR("restart_syscall.nothing_eintr", syscall(219), EINTR);
	return check_done();
}
