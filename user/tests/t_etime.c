/*
 * t_etime: the error table of the time calls (issue 22's audit, time):
 * clock_gettime/clock_getres/clock_settime on the CPU clocks of live, dead
 * and foreign processes and threads, clock_nanosleep and nanosleep,
 * timer_create/settime/gettime/getoverrun/delete, setitimer/getitimer,
 * timerfd, settimeofday and time. Each check is one condition the Linux
 * man page documents, with the errno Linux 6.1 returns; where Linux tests
 * one argument before another (the clock before the pointer, the value
 * before the privilege), a check with both wrong pins which one wins.
 * t_time, t_clock, t_ptimer, t_timerfd, t_adjtimex, t_vdso, t_signal and
 * t_errors hold the conditions checked before this audit; this program
 * does not repeat them. All calls are raw system calls: the C library and
 * the vDSO answer some of them without the kernel. Runs as root; the
 * permission conditions run in a child dropped to uid/gid 65534.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/times.h>
#include <time.h>

#include "probe.h"

#define CPUCLOCK_PROF 0
#define CPUCLOCK_VIRT 1
#define CPUCLOCK_SCHED 2
#define CPUCLOCK_PERTHREAD 4

/* Linux's encoding of a process's or thread's CPU clock */
static clockid_t process_clock(pid_t pid, int which) { return (clockid_t)((~(unsigned)pid << 3) | which); }
static clockid_t thread_clock(pid_t tid, int which) { return (clockid_t)((~(unsigned)tid << 3) | which | CPUCLOCK_PERTHREAD); }

static void *unmapped(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(p, 4096);
	return p;
}

static long gettime(clockid_t c, struct timespec *ts) { return syscall(SYS_clock_gettime, c, ts); }
static long getres(clockid_t c, struct timespec *ts) { return syscall(SYS_clock_getres, c, ts); }
static long settime(clockid_t c, const struct timespec *ts) { return syscall(SYS_clock_settime, c, ts); }
static long cnanosleep(clockid_t c, int flags, const struct timespec *req, struct timespec *rem)
{
	return syscall(SYS_clock_nanosleep, c, flags, req, rem);
}

static void on_alarm(int s) { (void)s; }

static pid_t dead_pid(void)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return pid;
}

static volatile pid_t other_tid;
static volatile int thread_go;

/* spends CPU time until told to stop */
static void *spin_thread(void *arg)
{
	(void)arg;
	other_tid = (pid_t)syscall(SYS_gettid);
	while (!thread_go)
		;
	return NULL;
}

/* the CPU clocks: whose may be read, set, slept on */
static void test_cpu_clocks(void)
{
	struct timespec ts;
	pid_t dead = dead_pid();
	CHECK_ERR("cpuclock.dead_process_gettime", gettime(process_clock(dead, CPUCLOCK_SCHED), &ts), EINVAL);
	CHECK_ERR("cpuclock.dead_process_getres", getres(process_clock(dead, CPUCLOCK_SCHED), &ts), EINVAL);
	CHECK_ERR("cpuclock.dead_thread_gettime", gettime(thread_clock(dead, CPUCLOCK_SCHED), &ts), EINVAL);
	CHECK_ERR("cpuclock.bad_which", gettime(process_clock(getpid(), 3), &ts), EINVAL);
	CHECK_SYS("cpuclock.self_process_by_pid", gettime(process_clock(getpid(), CPUCLOCK_SCHED), &ts));
	CHECK_SYS("cpuclock.self_thread_by_tid", gettime(thread_clock(getpid(), CPUCLOCK_PROF), &ts));
	CHECK_SYS("cpuclock.self_getres_null", getres(process_clock(0, CPUCLOCK_VIRT), NULL));

	pid_t kid = fork();
	if (kid == 0) {
		for (;;)
			pause();
	}
	CHECK_SYS("cpuclock.other_process_readable", gettime(process_clock(kid, CPUCLOCK_SCHED), &ts));
	CHECK_ERR("cpuclock.other_process_thread_einval", gettime(thread_clock(kid, CPUCLOCK_SCHED), &ts), EINVAL);
	CHECK_ERR("cpuclock.settime_own_eperm", settime(process_clock(0, CPUCLOCK_SCHED), &ts), EPERM);
	CHECK_ERR("cpuclock.settime_dead_einval", settime(process_clock(dead, CPUCLOCK_SCHED), &ts), EINVAL);
	struct timespec past = { 0, 1 };
	CHECK_ERR("cpuclock.nanosleep_own_thread_einval", cnanosleep(thread_clock(0, CPUCLOCK_SCHED), 0, &past, NULL), EINVAL);
	CHECK_ERR("cpuclock.nanosleep_own_tid_einval", cnanosleep(thread_clock(getpid(), CPUCLOCK_SCHED), 0, &past, NULL), EINVAL);
	CHECK_ERR("cpuclock.nanosleep_thread_cputime_id", cnanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &past, NULL), EOPNOTSUPP);
	CHECK_ERR("cpuclock.nanosleep_clockfd", cnanosleep(process_clock(getpid(), 3), 0, &past, NULL), EOPNOTSUPP);
	CHECK_ERR("cpuclock.nanosleep_dead_einval", cnanosleep(process_clock(dead, CPUCLOCK_SCHED), 0, &past, NULL), EINVAL);
	kill(kid, SIGKILL);
	siginfo_t si;
	waitid(P_PID, kid, &si, WEXITED | WNOWAIT);
	CHECK_SYS("cpuclock.zombie_readable", gettime(process_clock(kid, CPUCLOCK_SCHED), &ts));
	waitpid(kid, NULL, 0);
	CHECK_ERR("cpuclock.reaped_einval", gettime(process_clock(kid, CPUCLOCK_SCHED), &ts), EINVAL);

	/* another thread of this process: its thread clock, but not as a
	 * process clock */
	pthread_t th;
	thread_go = 0;
	other_tid = 0;
	pthread_create(&th, NULL, spin_thread, NULL);
	while (!other_tid)
		usleep(1000);
	CHECK_SYS("cpuclock.sibling_thread_readable", gettime(thread_clock(other_tid, CPUCLOCK_SCHED), &ts));
	CHECK_ERR("cpuclock.sibling_tid_as_process_einval", gettime(process_clock(other_tid, CPUCLOCK_SCHED), &ts), EINVAL);
	/* sleeps on CPU time the spinning thread spends */
	struct timespec ms20 = { 0, 20 * 1000 * 1000 }, t0, t1;
	gettime(thread_clock(other_tid, CPUCLOCK_SCHED), &t0);
	CHECK_SYS("clock_nanosleep.sibling_thread_clock", cnanosleep(thread_clock(other_tid, CPUCLOCK_SCHED), 0, &ms20, NULL));
	gettime(thread_clock(other_tid, CPUCLOCK_SCHED), &t1);
	CHECK("clock_nanosleep.sibling_thread_clock_advanced",
	      (t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) >= 20 * 1000 * 1000);
	gettime(process_clock(0, CPUCLOCK_SCHED), &t0);
	CHECK_SYS("clock_nanosleep.process_clock", cnanosleep(CLOCK_PROCESS_CPUTIME_ID, 0, &ms20, NULL));
	gettime(process_clock(0, CPUCLOCK_SCHED), &t1);
	CHECK("clock_nanosleep.process_clock_advanced",
	      (t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) >= 20 * 1000 * 1000);
	thread_go = 1;
	pthread_join(th, NULL);

	CHECK_ERR("clock_gettime.efault", gettime(CLOCK_MONOTONIC, unmapped()), EFAULT);
	CHECK_ERR("clock_gettime.bad_clock_before_efault", gettime(99, unmapped()), EINVAL);
	CHECK_ERR("clock_getres.efault", getres(CLOCK_MONOTONIC, unmapped()), EFAULT);
	CHECK_SYS("clock_getres.null_ok", getres(CLOCK_REALTIME, NULL));
	CHECK_ERR("clock_getres.bad_clock_null", getres(99, NULL), EINVAL);
}

static void nobody_settime(int out)
{
	struct timespec now, bad = { 0, 1000000000 };
	syscall(SYS_clock_gettime, CLOCK_REALTIME, &now);
	put(out, rc(settime(CLOCK_REALTIME, &now)));
	put(out, rc(settime(CLOCK_REALTIME, &bad)));
	put(out, rc(settime(CLOCK_MONOTONIC, &now)));
	struct timeval tv = { now.tv_sec, 0 };
	put(out, rc(syscall(SYS_settimeofday, &tv, NULL)));
	struct timezone tz = { 0, 0 };
	put(out, rc(syscall(SYS_settimeofday, NULL, &tz)));
}

static void test_settime(void)
{
	struct timespec now;
	gettime(CLOCK_REALTIME, &now);
	struct timespec neg = { -1, 0 };
	CHECK_ERR("clock_settime.negative_einval", settime(CLOCK_REALTIME, &neg), EINVAL);
	CHECK_ERR("clock_settime.boottime_einval", settime(CLOCK_BOOTTIME, &now), EINVAL);
	CHECK_ERR("clock_settime.coarse_einval", settime(CLOCK_REALTIME_COARSE, &now), EINVAL);
	CHECK_ERR("clock_settime.tai_einval", settime(CLOCK_TAI, &now), EINVAL);
	CHECK_ERR("clock_settime.bad_clock_before_efault", settime(CLOCK_MONOTONIC, unmapped()), EINVAL);
	struct timezone tz = { 16 * 60, 0 };
	CHECK_ERR("settimeofday.minuteswest_range", syscall(SYS_settimeofday, NULL, &tz), EINVAL);
	CHECK_ERR("settimeofday.tz_efault", syscall(SYS_settimeofday, NULL, unmapped()), EFAULT);
	CHECK_SYS("settimeofday.nothing_ok", syscall(SYS_settimeofday, NULL, NULL));
	int res[5];
	CHECK_EQ("nobody.results", probe(nobody_settime, 1, res, 5), 5);
	CHECK_EQ("clock_settime.nobody_eperm", res[0], EPERM);
	CHECK_EQ("clock_settime.nobody_einval_before_eperm", res[1], EINVAL);
	CHECK_EQ("clock_settime.nobody_monotonic_einval", res[2], EINVAL);
	CHECK_EQ("settimeofday.nobody_eperm", res[3], EPERM);
	CHECK_EQ("settimeofday.nobody_tz_eperm", res[4], EPERM);
}

/* nanosleep, clock_nanosleep */
static void test_sleep(void)
{
	struct timespec past = { 0, 0 }, neg = { -1, 0 }, big = { 0, 1000000000 }, tiny = { 0, 1000 };
	CHECK_SYS("clock_nanosleep.abstime_past_returns", cnanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &past, NULL));
	CHECK_ERR("clock_nanosleep.abstime_negative", cnanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &neg, NULL), EINVAL);
	CHECK_ERR("clock_nanosleep.relative_negative", cnanosleep(CLOCK_MONOTONIC, 0, &neg, NULL), EINVAL);
	CHECK_ERR("clock_nanosleep.abstime_nsec", cnanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &big, NULL), EINVAL);
	CHECK_ERR("clock_nanosleep.efault", cnanosleep(CLOCK_MONOTONIC, 0, unmapped(), NULL), EFAULT);
	CHECK_ERR("clock_nanosleep.bad_clock_before_efault", cnanosleep(99, 0, unmapped(), NULL), EINVAL);
	CHECK_SYS("clock_nanosleep.unknown_flags_ignored", cnanosleep(CLOCK_MONOTONIC, 0x100, &tiny, NULL));
	CHECK_SYS("clock_nanosleep.boottime", cnanosleep(CLOCK_BOOTTIME, 0, &tiny, NULL));
	CHECK_SYS("clock_nanosleep.tai", cnanosleep(CLOCK_TAI, 0, &tiny, NULL));
	/* a CPU clock the sleeper does not stop: only an absolute time already
	 * passed returns without another thread spending time */
	CHECK_SYS("clock_nanosleep.own_process_cpu_clock_past", cnanosleep(process_clock(0, CPUCLOCK_SCHED), TIMER_ABSTIME, &past, NULL));
	CHECK_ERR("nanosleep.efault", syscall(SYS_nanosleep, unmapped(), NULL), EFAULT);

	/* interrupted: the rest of a relative sleep is written back (EFAULT
	 * if it cannot be); an absolute sleep leaves rem alone */
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	sigaction(SIGALRM, &sa, &old);
	struct timespec ten = { 10, 0 }, rem = { 77, 77 };
	alarm(1);
	CHECK_ERR("clock_nanosleep.eintr", cnanosleep(CLOCK_MONOTONIC, 0, &ten, &rem), EINTR);
	CHECK("clock_nanosleep.eintr_rem", rem.tv_sec >= 0 && rem.tv_sec < 10 && rem.tv_nsec >= 0 && rem.tv_nsec < 1000000000);
	alarm(1);
	CHECK_ERR("nanosleep.eintr_rem_efault", syscall(SYS_nanosleep, &ten, unmapped()), EFAULT);
	struct timespec now;
	gettime(CLOCK_MONOTONIC, &now);
	now.tv_sec += 10;
	rem.tv_sec = 77;
	alarm(1);
	CHECK_ERR("clock_nanosleep.abstime_eintr", cnanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &now, &rem), EINTR);
	CHECK_EQ("clock_nanosleep.abstime_rem_untouched", rem.tv_sec, 77);
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
}

/* POSIX timers */
static void test_timers(void)
{
	struct sigevent sev = { .sigev_notify = SIGEV_NONE };
	timer_t id;
	pid_t dead = dead_pid();
	CHECK_ERR("timer_create.dead_cpu_clock", syscall(SYS_timer_create, process_clock(dead, CPUCLOCK_SCHED), &sev, &id), EINVAL);
	CHECK_ERR("timer_create.efault_before_bad_clock", syscall(SYS_timer_create, 99, unmapped(), &id), EFAULT);
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = SIGUSR1;
	CHECK_ERR("timer_create.sigev_signal_bad_notify_bits", (sev.sigev_notify = 77, syscall(SYS_timer_create, CLOCK_MONOTONIC, &sev, &id)), EINVAL);
	sev.sigev_notify = SIGEV_NONE;
	CHECK_SYS("timer_create.null_sigevent_ok", syscall(SYS_timer_create, CLOCK_MONOTONIC, NULL, &id));
	struct itimerspec its = { { 0, 0 }, { 100, 0 } }, got;
	CHECK_ERR("timer_settime.interval_nsec", (its.it_interval.tv_nsec = 1000000000, syscall(SYS_timer_settime, id, 0, &its, NULL)), EINVAL);
	its.it_interval.tv_nsec = 0;
	CHECK_ERR("timer_settime.negative_value", (its.it_value.tv_sec = -1, syscall(SYS_timer_settime, id, 0, &its, NULL)), EINVAL);
	its.it_value.tv_sec = 100;
	CHECK_SYS("timer_settime.unknown_flags_ignored", syscall(SYS_timer_settime, id, 0x100, &its, NULL));
	CHECK_ERR("timer_settime.old_efault_still_set", syscall(SYS_timer_settime, id, 0, &its, unmapped()), EFAULT);
	CHECK_SYS("timer_gettime.after_efault", syscall(SYS_timer_gettime, id, &got));
	CHECK("timer_gettime.armed_despite_efault", got.it_value.tv_sec > 90 && got.it_value.tv_sec <= 100);
	CHECK_ERR("timer_settime.efault_before_bad_id", syscall(SYS_timer_settime, (timer_t)(intptr_t)9999, 0, unmapped(), NULL), EFAULT);
	CHECK_ERR("timer_getoverrun.bad_id", syscall(SYS_timer_getoverrun, (timer_t)(intptr_t)9999), EINVAL);
	CHECK_ERR("timer_delete.bad_id", syscall(SYS_timer_delete, (timer_t)(intptr_t)9999), EINVAL);
	CHECK_ERR("timer_delete.negative_id", syscall(SYS_timer_delete, (timer_t)(intptr_t)-1), EINVAL);
	syscall(SYS_timer_delete, id);
	CHECK_ERR("timer_gettime.deleted_before_efault", syscall(SYS_timer_gettime, id, unmapped()), EINVAL);
}

/* setitimer, getitimer, alarm */
static void test_itimer(void)
{
	struct itimerval v = { { 0, 0 }, { 100, 0 } }, old;
	CHECK_ERR("getitimer.bad_which", syscall(SYS_getitimer, 3, &old), EINVAL);
	CHECK_ERR("getitimer.efault", syscall(SYS_getitimer, ITIMER_REAL, unmapped()), EFAULT);
	CHECK_ERR("getitimer.bad_which_before_efault", syscall(SYS_getitimer, 3, unmapped()), EINVAL);
	CHECK_ERR("setitimer.usec_range", (v.it_value.tv_usec = 1000000, syscall(SYS_setitimer, ITIMER_REAL, &v, NULL)), EINVAL);
	CHECK_ERR("setitimer.interval_usec_range", (v.it_value.tv_usec = 0, v.it_interval.tv_usec = -1, syscall(SYS_setitimer, ITIMER_REAL, &v, NULL)), EINVAL);
	v.it_interval.tv_usec = 0;
	CHECK_ERR("setitimer.negative_sec", (v.it_value.tv_sec = -1, syscall(SYS_setitimer, ITIMER_REAL, &v, NULL)), EINVAL);
	v.it_value.tv_sec = 100;
	CHECK_ERR("setitimer.new_efault", syscall(SYS_setitimer, ITIMER_REAL, unmapped(), NULL), EFAULT);
	CHECK_ERR("setitimer.efault_before_bad_which", syscall(SYS_setitimer, 5, unmapped(), NULL), EFAULT);
	CHECK_ERR("setitimer.old_efault_still_set", syscall(SYS_setitimer, ITIMER_REAL, &v, unmapped()), EFAULT);
	syscall(SYS_getitimer, ITIMER_REAL, &old);
	CHECK("setitimer.armed_despite_efault", old.it_value.tv_sec > 90 && old.it_value.tv_sec <= 100);
	CHECK_SYS("setitimer.null_new_disarms", syscall(SYS_setitimer, ITIMER_REAL, NULL, &old));
	CHECK("setitimer.null_new_old_value", old.it_value.tv_sec > 90);
	syscall(SYS_getitimer, ITIMER_REAL, &old);
	CHECK("setitimer.null_new_disarmed", old.it_value.tv_sec == 0 && old.it_value.tv_usec == 0);
	v.it_value.tv_sec = 0;
	v.it_value.tv_usec = 0;
	v.it_interval.tv_sec = 5;
	CHECK_SYS("setitimer.interval_without_value", syscall(SYS_setitimer, ITIMER_VIRTUAL, &v, NULL));
	syscall(SYS_getitimer, ITIMER_VIRTUAL, &old);
	CHECK("setitimer.interval_without_value_disarmed", old.it_value.tv_sec == 0 && old.it_value.tv_usec == 0);
	v.it_value.tv_usec = 1;
	v.it_interval.tv_sec = 0;
	v.it_value.tv_sec = 100;
	CHECK_SYS("setitimer.prof", syscall(SYS_setitimer, ITIMER_PROF, &v, NULL));
	v.it_value.tv_sec = 0;
	v.it_value.tv_usec = 0;
	syscall(SYS_setitimer, ITIMER_PROF, &v, NULL);
	CHECK_EQ("alarm.none", alarm(100), 0);
	CHECK("alarm.returns_rest", alarm(0) > 90);
}

/* timerfd */
static void test_timerfd(void)
{
	CHECK_ERR("timerfd_create.raw_clock", syscall(SYS_timerfd_create, CLOCK_MONOTONIC_RAW, 0), EINVAL);
	CHECK_ERR("timerfd_create.cpu_clock", syscall(SYS_timerfd_create, process_clock(0, CPUCLOCK_SCHED), 0), EINVAL);
	CHECK_ERR("timerfd_create.tai", syscall(SYS_timerfd_create, CLOCK_TAI, 0), EINVAL);
	int fd = syscall(SYS_timerfd_create, CLOCK_BOOTTIME, TFD_CLOEXEC);
	CHECK_SYS("timerfd_create.boottime", fd);
	struct itimerspec its = { { 0, 0 }, { 100, 0 } }, got;
	CHECK_SYS("timerfd_settime.cancel_on_set_relative_ok", syscall(SYS_timerfd_settime, fd, TFD_TIMER_CANCEL_ON_SET, &its, NULL));
	CHECK_ERR("timerfd_settime.old_efault_still_set", syscall(SYS_timerfd_settime, fd, 0, &its, unmapped()), EFAULT);
	syscall(SYS_timerfd_gettime, fd, &got);
	CHECK("timerfd_settime.armed_despite_efault", got.it_value.tv_sec > 90 && got.it_value.tv_sec <= 100);
	CHECK_ERR("timerfd_settime.new_efault", syscall(SYS_timerfd_settime, fd, 0, unmapped(), NULL), EFAULT);
	CHECK_ERR("timerfd_settime.efault_before_flags", syscall(SYS_timerfd_settime, fd, 0x100, unmapped(), NULL), EFAULT);
	CHECK_ERR("timerfd_settime.flags_before_ebadf", syscall(SYS_timerfd_settime, 9999, 0x100, &its, NULL), EINVAL);
	CHECK_ERR("timerfd_settime.bad_flags", syscall(SYS_timerfd_settime, fd, 0x100, &its, NULL), EINVAL);
	CHECK_ERR("timerfd_settime.ebadf", syscall(SYS_timerfd_settime, 9999, 0, &its, NULL), EBADF);
	CHECK_ERR("timerfd_settime.efault_before_ebadf", syscall(SYS_timerfd_settime, 9999, 0, unmapped(), NULL), EFAULT);
	CHECK_ERR("timerfd.read_efault", (its.it_value.tv_sec = 0, its.it_value.tv_nsec = 1000,
					   syscall(SYS_timerfd_settime, fd, 0, &its, NULL), usleep(20000),
					   read(fd, unmapped(), 8)), EFAULT);
	close(fd);
}

static void test_misc(void)
{
	CHECK_ERR("time.efault", syscall(SYS_time, unmapped()), EFAULT);
	CHECK("time.null_ok", syscall(SYS_time, NULL) > 0);
	CHECK_ERR("times.efault", syscall(SYS_times, unmapped()), EFAULT);
	CHECK_SYS("times.null_ok", syscall(SYS_times, NULL));
	CHECK_ERR("gettimeofday.tz_efault", syscall(SYS_gettimeofday, NULL, unmapped()), EFAULT);
	CHECK_SYS("gettimeofday.both_null_ok", syscall(SYS_gettimeofday, NULL, NULL));
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	test_cpu_clocks();
	test_settime();
	test_sleep();
	test_timers();
	test_itimer();
	test_timerfd();
	test_misc();
	return check_done();
}
