/*
 * t_ptimer: POSIX per-process timers. timer_create with no sigevent,
 * SIGEV_SIGNAL, SIGEV_NONE, SIGEV_THREAD_ID and (through the C library)
 * SIGEV_THREAD; the signal's siginfo (SI_TIMER, si_timerid, si_value,
 * si_overrun); overruns while the signal waits and timer_getoverrun;
 * timer_settime/gettime (absolute, periodic, disarm); timer_delete; no
 * inheritance across fork; bad input. The kernel calls are made directly
 * (the C library's timer_t is its own business), except for SIGEV_THREAD.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"
#include "ktimer.h"

static struct itimerspec its(long value_ms, long interval_ms)
{
	struct itimerspec s = {
		.it_value = {value_ms / 1000, (value_ms % 1000) * 1000000L},
		.it_interval = {interval_ms / 1000, (interval_ms % 1000) * 1000000L},
	};
	return s;
}

static int wait_sig(int sig, siginfo_t *si, int ms)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	memset(si, 0, sizeof *si);
	return sigtimedwait(&s, si, &ts);
}

static void block(int sig)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	sigprocmask(SIG_BLOCK, &s, NULL);
}

static volatile int other_got = -2;

static void *other_thread(void *arg)
{
	(void)arg;
	siginfo_t si;
	other_got = wait_sig(SIGRTMIN + 4, &si, 700);
	return NULL;
}

static volatile int thread_notified;

static void notified(union sigval v)
{
	thread_notified = v.sival_int;
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	siginfo_t si;
	struct itimerspec s, cur, old;
	block(SIGALRM);
	block(SIGRTMIN + 3);
	block(SIGRTMIN + 4);

	/* no sigevent: SIGALRM, si_value = the timer id */
	int id = -1;
	CHECK_SYS("create.default", ktimer_create(CLOCK_MONOTONIC, NULL, &id));
	CHECK("create.id", id >= 0);
	s = its(50, 0);
	CHECK_SYS("default.set", ktimer_settime(id, 0, &s, &old));
	CHECK("default.old_disarmed", old.it_value.tv_sec == 0 && old.it_value.tv_nsec == 0);
	CHECK_EQ("default.sigalrm", wait_sig(SIGALRM, &si, 3000), SIGALRM);
	CHECK_EQ("default.si_code", si.si_code, SI_TIMER);
	CHECK_EQ("default.si_value_is_id", si.si_value.sival_int, id);
	CHECK_EQ("default.si_timerid", si.si_timerid, id);
	CHECK_EQ("default.si_overrun", si.si_overrun, 0);
	CHECK_SYS("default.gettime", ktimer_gettime(id, &cur));
	CHECK("default.disarmed_after", cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0);
	int id2 = -1;
	CHECK_SYS("create.second", ktimer_create(CLOCK_REALTIME, NULL, &id2));
	CHECK("create.second_id_differs", id2 >= 0 && id2 != id);
	CHECK_SYS("delete.first", ktimer_delete(id));
	CHECK_ERR("delete.again", ktimer_delete(id), EINVAL);
	CHECK_ERR("deleted.settime", ktimer_settime(id, 0, &s, NULL), EINVAL);
	CHECK_ERR("deleted.gettime", ktimer_gettime(id, &cur), EINVAL);
	CHECK_ERR("deleted.getoverrun", ktimer_getoverrun(id), EINVAL);

	/* absolute time in the past on the wall clock: at once */
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	s = (struct itimerspec){.it_value = {wall.tv_sec - 5, 0}};
	CHECK_SYS("abs.past", ktimer_settime(id2, TIMER_ABSTIME, &s, NULL));
	CHECK_EQ("abs.past_fires", wait_sig(SIGALRM, &si, 2000), SIGALRM);
	ktimer_delete(id2);

	/* SIGEV_SIGNAL, periodic, the signal blocked: one signal, overruns */
	struct ksigevent ev = {.signo = SIGRTMIN + 3, .notify = SIGEV_SIGNAL};
	ev.value.sival_int = 4242;
	CHECK_SYS("periodic.create", ktimer_create(CLOCK_MONOTONIC, &ev, &id));
	s = its(10, 10);
	CHECK_SYS("periodic.set", ktimer_settime(id, 0, &s, NULL));
	usleep(250000);
	CHECK_EQ("periodic.signal", wait_sig(SIGRTMIN + 3, &si, 1000), SIGRTMIN + 3);
	CHECK_EQ("periodic.si_value", si.si_value.sival_int, 4242);
	if (!CHECK("periodic.si_overrun", si.si_overrun >= 8))
		printf("# si_overrun %d\n", si.si_overrun);
	CHECK_EQ("periodic.getoverrun", ktimer_getoverrun(id), si.si_overrun);
	CHECK_SYS("periodic.gettime", ktimer_gettime(id, &cur));
	CHECK_EQ("periodic.interval", cur.it_interval.tv_nsec, 10000000);
	s = its(0, 0);
	CHECK_SYS("periodic.disarm", ktimer_settime(id, 0, &s, &old));
	CHECK_EQ("periodic.old_interval", old.it_interval.tv_nsec, 10000000);
	while (wait_sig(SIGRTMIN + 3, &si, 50) > 0)
		;
	CHECK_EQ("periodic.quiet_after_disarm", wait_sig(SIGRTMIN + 3, &si, 100), -1);
	ktimer_delete(id);

	/* SIGEV_NONE: nothing is sent, the time can be read */
	ev = (struct ksigevent){.notify = SIGEV_NONE};
	CHECK_SYS("none.create", ktimer_create(CLOCK_MONOTONIC, &ev, &id));
	s = its(2000, 0);
	CHECK_SYS("none.set", ktimer_settime(id, 0, &s, NULL));
	CHECK_SYS("none.gettime", ktimer_gettime(id, &cur));
	CHECK("none.left", (cur.it_value.tv_sec > 0 || cur.it_value.tv_nsec > 0) && cur.it_value.tv_sec <= 2); /* armed for 2 s; a loaded host may pass a second */
	ktimer_delete(id);

	/* SIGEV_THREAD_ID: this thread gets it, another waiting one does not */
	ev = (struct ksigevent){.signo = SIGRTMIN + 4, .notify = SIGEV_SIGNAL | SIGEV_THREAD_ID,
				.tid = (int)syscall(SYS_gettid)};
	CHECK_SYS("tid.create", ktimer_create(CLOCK_MONOTONIC, &ev, &id));
	pthread_t th;
	pthread_create(&th, NULL, other_thread, NULL);
	s = its(100, 0);
	ktimer_settime(id, 0, &s, NULL);
	pthread_join(th, NULL);
	CHECK_EQ("tid.other_thread_not_signalled", other_got, -1);
	sigset_t pend;
	sigpending(&pend);
	CHECK("tid.pending_for_target", sigismember(&pend, SIGRTMIN + 4));
	CHECK_EQ("tid.target_takes_it", wait_sig(SIGRTMIN + 4, &si, 1000), SIGRTMIN + 4);
	ktimer_delete(id);

	/* SIGEV_THREAD through the C library (a helper thread and SIGEV_THREAD_ID) */
	timer_t lt;
	struct sigevent lev = {.sigev_notify = SIGEV_THREAD, .sigev_notify_function = notified};
	lev.sigev_value.sival_int = 77;
	CHECK_SYS("thread.create", timer_create(CLOCK_MONOTONIC, &lev, &lt));
	s = its(50, 0);
	CHECK_SYS("thread.set", timer_settime(lt, 0, &s, NULL));
	for (int i = 0; i < 300 && !thread_notified; i++)
		usleep(10000);
	CHECK_EQ("thread.function_ran", thread_notified, 77);
	timer_delete(lt);

	/* not inherited across fork */
	CHECK_SYS("fork.create", ktimer_create(CLOCK_MONOTONIC, NULL, &id));
	pid_t c = fork();
	if (c == 0)
		_exit(ktimer_gettime(id, &cur) == -1 && errno == EINVAL ? 0 : 1);
	int st;
	waitpid(c, &st, 0);
	CHECK_EQ("fork.not_inherited", st, 0);

	/* bad input */
	int bad;
	CHECK_ERR("bad.clock", ktimer_create(99, NULL, &bad), EINVAL);
	CHECK_ERR("bad.clock_raw", ktimer_create(CLOCK_MONOTONIC_RAW, NULL, &bad), EOPNOTSUPP);
	ev = (struct ksigevent){.signo = SIGUSR1, .notify = 99};
	CHECK_ERR("bad.notify", ktimer_create(CLOCK_MONOTONIC, &ev, &bad), EINVAL);
	ev = (struct ksigevent){.signo = 0, .notify = SIGEV_SIGNAL};
	CHECK_ERR("bad.signo_zero", ktimer_create(CLOCK_MONOTONIC, &ev, &bad), EINVAL);
	ev.signo = 65;
	CHECK_ERR("bad.signo_65", ktimer_create(CLOCK_MONOTONIC, &ev, &bad), EINVAL);
	ev = (struct ksigevent){.signo = SIGUSR1, .notify = SIGEV_SIGNAL | SIGEV_THREAD_ID, .tid = 1};
	CHECK_ERR("bad.tid_other_process", ktimer_create(CLOCK_MONOTONIC, &ev, &bad), EINVAL);
	CHECK_ERR("bad.sigevent_fault", ktimer_create(CLOCK_MONOTONIC, (void *)8, &bad), EFAULT);
	CHECK_ERR("bad.id_fault", ktimer_create(CLOCK_MONOTONIC, NULL, (void *)8), EFAULT);
	CHECK_ERR("bad.settime_null", ktimer_settime(id, 0, NULL, NULL), EINVAL);
	s = its(10, 0);
	s.it_value.tv_nsec = 1000000000;
	CHECK_ERR("bad.nsec", ktimer_settime(id, 0, &s, NULL), EINVAL);
	CHECK_ERR("bad.settime_fault", ktimer_settime(id, 0, (void *)8, NULL), EFAULT);
	CHECK_ERR("bad.gettime_fault", ktimer_gettime(id, (void *)8), EFAULT);
	CHECK_ERR("bad.no_such_timer", ktimer_gettime(123456, &cur), EINVAL);
	ktimer_delete(id);
	return check_done();
}
