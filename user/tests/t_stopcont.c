/*
 * t_stopcont: sleeps and waits across a stop (SIGSTOP) and SIGCONT, where
 * no handler runs: Linux goes on with them as if nothing happened
 * (nanosleep and relative clock_nanosleep to their first deadline, the
 * time stopped included, through restart_syscall; absolute
 * clock_nanosleep, pause and sigsuspend as they were), and only a
 * handler ends them with EINTR, SA_RESTART or not. Each sleeper is a
 * child stopped and continued by the parent; it reports through its
 * exit status.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <time.h>

#include "check.h"

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

enum { NANOSLEEP, CLOCK_REL, CLOCK_ABS, PAUSE, SUSPEND };

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
		if ((kind == NANOSLEEP || kind == CLOCK_REL) && (rem.tv_sec != 0 || rem.tv_nsec == 0 || rem.tv_nsec == 9))
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

int main(void)
{
	check_prog = "t_stopcont";
	CHECK_EQ("nanosleep.goes_on_after_stop", run(NANOSLEEP, 0), 0);
	CHECK_EQ("clock_nanosleep.relative.goes_on_after_stop", run(CLOCK_REL, 0), 0);
	CHECK_EQ("clock_nanosleep.absolute.goes_on_after_stop", run(CLOCK_ABS, 0), 0);
	CHECK_EQ("pause.goes_on_after_stop", run(PAUSE, 0), 0);
	CHECK_EQ("sigsuspend.goes_on_after_stop", run(SUSPEND, 0), 0);
	CHECK_EQ("nanosleep.handler_eintr_rem", run(NANOSLEEP, 1), 0);
	CHECK_EQ("clock_nanosleep.relative.handler_eintr_rem", run(CLOCK_REL, 1), 0);
	CHECK_EQ("clock_nanosleep.absolute.handler_eintr", run(CLOCK_ABS, 1), 0);
	CHECK_EQ("pause.handler_eintr", run(PAUSE, 1), 0);
	CHECK_EQ("sigsuspend.handler_eintr", run(SUSPEND, 1), 0);
	/* restart_syscall with nothing to finish: EINTR */
	errno = 0;
	CHECK_ERR("restart_syscall.nothing_eintr", syscall(219), EINTR);
	return check_done();
}
