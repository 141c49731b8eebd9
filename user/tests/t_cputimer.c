/*
 * t_cputimer: POSIX timers and sleeps on CPU-time clocks. timer_create on
 * CLOCK_PROCESS_CPUTIME_ID and CLOCK_THREAD_CPUTIME_ID (the signal comes
 * once the time has been used, not while the process sleeps; periodic
 * with overruns; absolute, and absolute in the past firing at once;
 * timer_gettime), on another process's clock (clock_getcpuclockid) and
 * another thread's (pthread_getcpuclockid), EINVAL and EOPNOTSUPP for
 * clocks one cannot have timers on; clock_nanosleep on a spinning
 * thread's and on the process's clock. The kernel calls are made
 * directly; bounds are lower bounds on CPU time, never on how soon.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"
#include "ktimer.h"

static double ts_sec(struct timespec ts) { return ts.tv_sec + ts.tv_nsec / 1e9; }

static double clock_sec(clockid_t c)
{
	struct timespec ts;
	if (clock_gettime(c, &ts) != 0)
		return -1;
	return ts_sec(ts);
}

static struct itimerspec its(double value, double interval)
{
	struct itimerspec v = {
		{ (time_t)interval, (long)((interval - (time_t)interval) * 1e9) },
		{ (time_t)value, (long)((value - (time_t)value) * 1e9) },
	};
	return v;
}

static atomic_int fired, overruns;

static void on_sig(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)uc;
	fired++;
	overruns += si->si_overrun;
}

/* spins until *flag is set or clock c passes limit (seconds), for at
 * most 60 s of real time; returns the clock's reading once it saw the
 * flag (read again: the one in the loop may be from before the signal) */
static double spin(clockid_t c, atomic_int *flag, double limit)
{
	double start = clock_sec(CLOCK_MONOTONIC), now;
	volatile unsigned long x = 0;
	do {
		for (int i = 0; i < 100000; i++)
			x++;
		now = clock_sec(c);
	} while (!*flag && now < limit && clock_sec(CLOCK_MONOTONIC) - start < 60);
	return clock_sec(c);
}

static int new_timer(clockid_t c, int sig)
{
	struct ksigevent ev = { .signo = sig, .notify = SIGEV_SIGNAL };
	int id = -1;
	if (ktimer_create(c, &ev, &id) != 0)
		return -1;
	return id;
}

static void test_process_clock(void)
{
	int id = new_timer(CLOCK_PROCESS_CPUTIME_ID, SIGUSR1);
	CHECK("process.create", id >= 0);
	if (id < 0)
		return;
	struct itimerspec v = its(0.2, 0), cur;
	double start = clock_sec(CLOCK_PROCESS_CPUTIME_ID);
	fired = 0;
	CHECK_SYS("process.settime", ktimer_settime(id, 0, &v, NULL));
	CHECK_SYS("process.gettime", syscall(SYS_timer_gettime, id, &cur));
	CHECK("process.gettime_left", ts_sec(cur.it_value) > 0 && ts_sec(cur.it_value) <= 0.2);
	CHECK_EQ("process.gettime_interval", cur.it_interval.tv_sec + cur.it_interval.tv_nsec, 0);

	/* sleeping uses no CPU time: nothing fires unless the clock itself
	 * reached the time (Linux charges the current task for a stretch
	 * in which the host did not run the guest's vCPU, which a loaded
	 * host can make longer than the 0.2 s here) */
	struct timespec second = { 1, 0 };
	nanosleep(&second, NULL);
	double slept = clock_sec(CLOCK_PROCESS_CPUTIME_ID) - start;
	check_report("process.not_while_sleeping", fired == 0 || slept >= 0.2, "fired %d with %.3f s of CPU time used", (int)fired, slept);

	double end = spin(CLOCK_PROCESS_CPUTIME_ID, &fired, start + 30);
	CHECK_EQ("process.fired_once", fired, 1);
	check_report("process.after_the_time_used", end - start >= 0.2, "used %.3f s", end - start);
	CHECK_SYS("process.gettime_after", syscall(SYS_timer_gettime, id, &cur));
	CHECK_EQ("process.disarmed_after", cur.it_value.tv_sec + cur.it_value.tv_nsec, 0);

	/* periodic: every 50 ms of CPU time for 0.5 s of it */
	fired = overruns = 0;
	v = its(0.05, 0.05);
	start = clock_sec(CLOCK_PROCESS_CPUTIME_ID);
	ktimer_settime(id, 0, &v, NULL);
	atomic_int never = 0;
	end = spin(CLOCK_PROCESS_CPUTIME_ID, &never, start + 0.5);
	v = its(0, 0);
	ktimer_settime(id, 0, &v, NULL);
	int total = fired + overruns;
	CHECK("process.periodic_count", total >= 5 && total <= (end - start) / 0.05 + 1);

	/* absolute: at a reading of the clock; one already past fires at once */
	sigset_t usr1, old;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, &old);
	v = its(0.01, 0);
	CHECK_SYS("process.absolute_past", ktimer_settime(id, TIMER_ABSTIME, &v, NULL));
	struct timespec wait = { 10, 0 };
	siginfo_t si;
	CHECK_EQ("process.absolute_past_fires", sigtimedwait(&usr1, &si, &wait), SIGUSR1);
	CHECK_EQ("process.si_timerid", si.si_timerid, id);
	sigprocmask(SIG_SETMASK, &old, NULL);
	fired = 0;
	start = clock_sec(CLOCK_PROCESS_CPUTIME_ID);
	v = its(start + 0.15, 0);
	CHECK_SYS("process.absolute", ktimer_settime(id, TIMER_ABSTIME, &v, NULL));
	end = spin(CLOCK_PROCESS_CPUTIME_ID, &fired, start + 30);
	check_report("process.absolute_fired", fired == 1 && end >= start + 0.15, "fired %d, used %.3f s", (int)fired, end - start);
	CHECK_SYS("process.delete", syscall(SYS_timer_delete, id));
}

static void test_thread_clock(void)
{
	struct ksigevent ev = { .signo = SIGUSR1, .notify = SIGEV_SIGNAL | SIGEV_THREAD_ID, .tid = (int)syscall(SYS_gettid) };
	int id = -1;
	CHECK_SYS("thread.create", ktimer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &id));
	struct itimerspec v = its(0.2, 0);
	double start = clock_sec(CLOCK_THREAD_CPUTIME_ID);
	fired = 0;
	CHECK_SYS("thread.settime", ktimer_settime(id, 0, &v, NULL));
	double end = spin(CLOCK_THREAD_CPUTIME_ID, &fired, start + 30);
	CHECK_EQ("thread.fired", fired, 1);
	check_report("thread.after_the_time_used", end - start >= 0.2, "used %.3f s", end - start);
	syscall(SYS_timer_delete, id);
}

static atomic_int stop_spinner;

static void *spinner(void *arg)
{
	(void)arg;
	volatile unsigned long x = 0;
	while (!stop_spinner)
		x++;
	return NULL;
}

static void test_other_clocks(void)
{
	sigset_t usr2, old;
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	sigprocmask(SIG_BLOCK, &usr2, &old);
	struct timespec wait = { 30, 0 };
	siginfo_t si;

	/* another process's clock: the child spins, we wait */
	pid_t pid = fork();
	if (pid == 0) {
		atomic_int never = 0;
		spin(CLOCK_PROCESS_CPUTIME_ID, &never, 60);
		_exit(0);
	}
	clockid_t cc;
	CHECK_EQ("getcpuclockid.child", clock_getcpuclockid(pid, &cc), 0);
	int id = new_timer(cc, SIGUSR2);
	CHECK("child_clock.create", id >= 0);
	struct itimerspec v = its(0.2, 0);
	ktimer_settime(id, 0, &v, NULL);
	double mine = clock_sec(CLOCK_PROCESS_CPUTIME_ID);
	CHECK_EQ("child_clock.fires", sigtimedwait(&usr2, &si, &wait), SIGUSR2);
	CHECK("child_clock.child_used_it", clock_sec(cc) >= 0.2);
	CHECK("child_clock.not_our_time", clock_sec(CLOCK_PROCESS_CPUTIME_ID) - mine < 0.2);
	syscall(SYS_timer_delete, id);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);

	/* another thread's clock: it spins, we wait */
	pthread_t th;
	stop_spinner = 0;
	pthread_create(&th, NULL, spinner, NULL);
	clockid_t tc;
	CHECK_EQ("getcpuclockid.thread", pthread_getcpuclockid(th, &tc), 0);
	id = new_timer(tc, SIGUSR2);
	CHECK("thread_clock.create", id >= 0);
	double tstart = clock_sec(tc);
	ktimer_settime(id, 0, &v, NULL);
	CHECK_EQ("thread_clock.fires", sigtimedwait(&usr2, &si, &wait), SIGUSR2);
	CHECK("thread_clock.thread_used_it", clock_sec(tc) - tstart >= 0.2);

	/* clock_nanosleep on the spinning thread's clock, then on the
	 * process's, which the spinner moves too */
	struct timespec d = { 0, 300000000 };
	tstart = clock_sec(tc);
	CHECK_EQ("nanosleep.thread_clock", clock_nanosleep(tc, 0, &d, NULL), 0);
	CHECK("nanosleep.thread_clock_used", clock_sec(tc) - tstart >= 0.3);
	double pstart = clock_sec(CLOCK_PROCESS_CPUTIME_ID);
	CHECK_EQ("nanosleep.process_clock", clock_nanosleep(CLOCK_PROCESS_CPUTIME_ID, 0, &d, NULL), 0);
	CHECK("nanosleep.process_clock_used", clock_sec(CLOCK_PROCESS_CPUTIME_ID) - pstart >= 0.3);
	struct timespec abs;
	clock_gettime(tc, &abs);
	abs.tv_sec += 0, abs.tv_nsec += 200000000;
	if (abs.tv_nsec >= 1000000000)
		abs.tv_sec++, abs.tv_nsec -= 1000000000;
	CHECK_EQ("nanosleep.thread_clock_absolute", clock_nanosleep(tc, TIMER_ABSTIME, &abs, NULL), 0);
	CHECK("nanosleep.thread_clock_absolute_reached", clock_sec(tc) >= ts_sec(abs));
	stop_spinner = 1;
	pthread_join(th, NULL);
	syscall(SYS_timer_delete, id);
	sigprocmask(SIG_SETMASK, &old, NULL);

	/* clocks one cannot have a timer on */
	pid = fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	clockid_t other_thread = (clockid_t)((~(unsigned)pid << 3) | 4 | 2); /* another process's thread */
	clockid_t no_thread = (clockid_t)((~0x3ffffff0u << 3) | 4 | 2);
	clockid_t bad_kind = (clockid_t)((~0u << 3) | 4 | 3);
	clockid_t clockfd = (clockid_t)((~3u << 3) | 3);
	int bad;
	CHECK_ERR("create.other_process_thread_einval", ktimer_create(other_thread, NULL, &bad), EINVAL);
	CHECK_ERR("create.no_such_thread_einval", ktimer_create(no_thread, NULL, &bad), EINVAL);
	CHECK_ERR("create.bad_kind_einval", ktimer_create(bad_kind, NULL, &bad), EINVAL);
	CHECK_ERR("create.clockfd_eopnotsupp", ktimer_create(clockfd, NULL, &bad), EOPNOTSUPP);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	struct sigaction sa = { .sa_sigaction = on_sig, .sa_flags = SA_SIGINFO | SA_RESTART };
	sigaction(SIGUSR1, &sa, NULL);
	test_process_clock();
	test_thread_clock();
	test_other_clocks();
	return check_done();
}
