/* t_time: clocks and sleeping: clock_gettime/clock_getres (the coarse
 * clocks at the tick's resolution), nanosleep,
 * clock_nanosleep, gettimeofday, time, times, getrusage. Only lower bounds
 * and generous plausibility bounds: the guest may be slow. */
#define _GNU_SOURCE
#include "check.h"

#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/times.h>
#include <sys/wait.h>
#include <time.h>

static long long ts_ns(const struct timespec *t)
{
	return t->tv_sec * 1000000000LL + t->tv_nsec;
}

static long long clock_ns(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return ts_ns(&t);
}

/* burns at least ms of this thread's CPU time */
static void burn_cpu(int ms)
{
	long long start = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	volatile unsigned long x = 0;
	while (clock_ns(CLOCK_THREAD_CPUTIME_ID) - start < ms * 1000000LL)
		for (int i = 0; i < 10000; i++)
			x += i;
}

static void test_clocks(void)
{
	struct timespec a, b;
	CHECK_SYS("clock_gettime.monotonic", clock_gettime(CLOCK_MONOTONIC, &a));
	int mono = 1;
	long long prev = ts_ns(&a);
	for (int i = 0; i < 20000; i++) {
		clock_gettime(CLOCK_MONOTONIC, &b);
		long long t = ts_ns(&b);
		mono &= t >= prev && b.tv_nsec >= 0 && b.tv_nsec < 1000000000;
		prev = t;
	}
	CHECK("clock.monotonic_never_back", mono);
	/* raw system call too (the vDSO may serve the libc call) */
	struct timespec r;
	CHECK_SYS("clock_gettime.raw", syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &r));
	CHECK("clock.raw_agrees", ts_ns(&r) >= ts_ns(&a) && ts_ns(&r) - ts_ns(&a) < 60LL * 1000000000);
	CHECK_SYS("clock_gettime.realtime", clock_gettime(CLOCK_REALTIME, &a));
	/* 2020-01-01 .. 2100-01-01 */
	CHECK("clock.realtime_plausible", a.tv_sec > 1577836800 && a.tv_sec < 4102444800LL);
	printf("# realtime %lld\n", (long long)a.tv_sec);
	struct timespec bt, mt;
	clock_gettime(CLOCK_MONOTONIC, &mt);
	CHECK_SYS("clock_gettime.boottime", clock_gettime(CLOCK_BOOTTIME, &bt));
	CHECK("clock.boottime_ge_monotonic", ts_ns(&bt) >= ts_ns(&mt));
	CHECK_SYS("clock_gettime.monotonic_coarse", clock_gettime(CLOCK_MONOTONIC_COARSE, &b));
	CHECK_SYS("clock_gettime.realtime_coarse", clock_gettime(CLOCK_REALTIME_COARSE, &b));
	CHECK_SYS("clock_gettime.monotonic_raw", clock_gettime(CLOCK_MONOTONIC_RAW, &b));
	CHECK_ERR("clock_gettime.bad_clock", clock_gettime((clockid_t)12345, &b), EINVAL);
	CHECK_ERR("clock_gettime.bad_clock_raw", syscall(SYS_clock_gettime, 12345, &b), EINVAL);

	struct timespec res;
	CHECK_SYS("clock_getres.monotonic", clock_getres(CLOCK_MONOTONIC, &res));
	CHECK("clock_getres.fine", res.tv_sec == 0 && res.tv_nsec > 0 && res.tv_nsec <= 10000000);
	CHECK_SYS("clock_getres.realtime", clock_getres(CLOCK_REALTIME, &res));
	CHECK_ERR("clock_getres.bad", clock_getres((clockid_t)12345, &res), EINVAL);

	struct timeval tv;
	CHECK_SYS("gettimeofday", gettimeofday(&tv, NULL));
	clock_gettime(CLOCK_REALTIME, &a);
	long long diff = ts_ns(&a) - (tv.tv_sec * 1000000000LL + tv.tv_usec * 1000LL);
	CHECK("gettimeofday.agrees_realtime", diff >= -1000000 && diff < 5000000000LL);
	CHECK("gettimeofday.usec_range", tv.tv_usec >= 0 && tv.tv_usec < 1000000);
	time_t t = time(NULL);
	CHECK("time.agrees", t >= tv.tv_sec && t - tv.tv_sec < 5);
	CHECK_EQ("time.raw", syscall(SYS_time, NULL) - t <= 5, 1);
}

/* clock c through the C library (the vDSO where there is one) or the
 * system call */
static long long read_ns(clockid_t c, int sys)
{
	struct timespec t = {0, 0};
	if (sys)
		syscall(SYS_clock_gettime, c, &t);
	else
		clock_gettime(c, &t);
	return ts_ns(&t);
}

/* The coarse clocks, as Linux keeps them: their resolution is the tick
 * (between 1 and 10 ms at HZ 1000..100), both say the same, and each
 * reads the time of the last tick: never ahead of its fine clock, and
 * stepping by about a tick at a time (not by the nanosecond). Behind the
 * fine clock by less than a second: a loaded host may hold a tick back
 * by far more than one. Through the vDSO and the system call. */
static void test_coarse(void)
{
	static const struct {
		clockid_t coarse, fine;
		const char *name;
	} cl[] = {
		{CLOCK_MONOTONIC_COARSE, CLOCK_MONOTONIC, "monotonic_coarse"},
		{CLOCK_REALTIME_COARSE, CLOCK_REALTIME, "realtime_coarse"},
	};
	struct timespec r0 = {-1, -1}, r1 = {-1, -1};
	CHECK_SYS("coarse.getres_monotonic", clock_getres(CLOCK_MONOTONIC_COARSE, &r0));
	CHECK_SYS("coarse.getres_realtime", syscall(SYS_clock_getres, CLOCK_REALTIME_COARSE, &r1));
	long long res = ts_ns(&r0);
	check_report("coarse.getres_tick", res >= 1000000 && res <= 10000000 && ts_ns(&r1) == res,
		     "monotonic_coarse %lld ns, realtime_coarse %lld ns", res, ts_ns(&r1));
	if (res <= 0)
		res = 1;
	for (int i = 0; i < 2; i++) {
		for (int sys = 0; sys < 2; sys++) {
			long long steps = 0, small = 0, ahead = 0, behind = 0, minstep = -1, worst = 0;
			long long start = clock_ns(CLOCK_MONOTONIC);
			long long prev = read_ns(cl[i].coarse, sys);
			while (steps < 6 && clock_ns(CLOCK_MONOTONIC) - start < 3000000000LL) {
				long long f1 = read_ns(cl[i].fine, 0);
				long long c = read_ns(cl[i].coarse, sys);
				long long f2 = read_ns(cl[i].fine, 0);
				if (c > f2) {
					ahead++;
					worst = c - f2;
				}
				if (f1 - c >= 1000000000LL)
					behind++;
				if (c != prev) {
					steps++;
					if (c - prev < res / 2)
						small++;
					if (minstep < 0 || c - prev < minstep)
						minstep = c - prev;
				}
				prev = c;
			}
			char n[64];
			snprintf(n, sizeof n, "coarse.%s%s", cl[i].name, sys ? "_syscall" : "");
			check_report(n, steps >= 3 && small == 0 && ahead == 0 && behind == 0,
				     "%lld steps (%lld under half the %lld ns tick, the least %lld ns), %lld readings ahead of "
				     "the fine clock (by %lld ns), %lld a second behind",
				     steps, small, res, minstep, ahead, worst, behind);
		}
	}
}

static void test_sleep(void)
{
	struct timespec req = { 0, 50 * 1000000 };
	long long t0 = clock_ns(CLOCK_MONOTONIC);
	CHECK_SYS("nanosleep", nanosleep(&req, NULL));
	long long el = clock_ns(CLOCK_MONOTONIC) - t0;
	CHECK("nanosleep.at_least", el >= 50 * 1000000LL);
	CHECK("nanosleep.not_forever", el < 30LL * 1000000000);
	printf("# nanosleep(50ms) took %lld us\n", el / 1000);
	req.tv_nsec = 0;
	CHECK_SYS("nanosleep.zero", nanosleep(&req, NULL));
	req.tv_nsec = 1000000000;
	CHECK_ERR("nanosleep.bad_nsec", nanosleep(&req, NULL), EINVAL);
	req.tv_sec = -1;
	req.tv_nsec = 0;
	CHECK_ERR("nanosleep.negative", nanosleep(&req, NULL), EINVAL);

	/* absolute deadline on the monotonic clock */
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_nsec += 30 * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	CHECK_EQ("clock_nanosleep.abstime", clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &dl, NULL), 0);
	CHECK("clock_nanosleep.abstime_reached", clock_ns(CLOCK_MONOTONIC) >= ts_ns(&dl));
	/* a deadline in the past returns at once (1 ns after boot: the
	 * monotonic clock may be only seconds old) */
	dl.tv_sec = 0;
	dl.tv_nsec = 1;
	t0 = clock_ns(CLOCK_MONOTONIC);
	CHECK_EQ("clock_nanosleep.past", clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &dl, NULL), 0);
	CHECK("clock_nanosleep.past_fast", clock_ns(CLOCK_MONOTONIC) - t0 < 5LL * 1000000000);
	struct timespec rel = { 0, 20 * 1000000 };
	t0 = clock_ns(CLOCK_REALTIME);
	CHECK_EQ("clock_nanosleep.realtime_rel", clock_nanosleep(CLOCK_REALTIME, 0, &rel, NULL), 0);
	CHECK("clock_nanosleep.realtime_waited", clock_ns(CLOCK_REALTIME) - t0 >= 19 * 1000000LL);
	CHECK_EQ("clock_nanosleep.bad_clock", clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &rel, NULL), EINVAL);
	/* usleep / sleep through the same path */
	t0 = clock_ns(CLOCK_MONOTONIC);
	usleep(20000);
	CHECK("usleep.at_least", clock_ns(CLOCK_MONOTONIC) - t0 >= 20 * 1000000LL);
}

static void test_cpu_time(void)
{
	long long p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	long long th0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	struct tms tm0;
	clock_t c0 = times(&tm0);
	CHECK("times.returns", c0 != (clock_t)-1);
	burn_cpu(200);
	long long p1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	long long th1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	CHECK("cputime.process_advances", p1 - p0 >= 200 * 1000000LL);
	CHECK("cputime.thread_advances", th1 - th0 >= 200 * 1000000LL);
	struct tms tm1;
	clock_t c1 = times(&tm1);
	long hz = sysconf(_SC_CLK_TCK);
	CHECK_EQ("sysconf.clk_tck", hz, 100);
	CHECK("times.elapsed_advances", c1 - c0 >= 1);
	CHECK("times.utime_stime_advance", (tm1.tms_utime + tm1.tms_stime) - (tm0.tms_utime + tm0.tms_stime) >= 1);
	printf("# times: %ld ticks elapsed, utime %ld stime %ld\n", (long)(c1 - c0), (long)tm1.tms_utime, (long)tm1.tms_stime);

	struct rusage ru;
	CHECK_SYS("getrusage.self", getrusage(RUSAGE_SELF, &ru));
	long long us = ru.ru_utime.tv_sec * 1000000LL + ru.ru_utime.tv_usec + ru.ru_stime.tv_sec * 1000000LL + ru.ru_stime.tv_usec;
	CHECK("getrusage.self_time", us >= 150000);
	/* 4 MiB were touched in main: well above the slack of per-CPU RSS
	 * counters */
	CHECK("getrusage.maxrss", ru.ru_maxrss >= 2048);
	CHECK("getrusage.usec_range", ru.ru_utime.tv_usec >= 0 && ru.ru_utime.tv_usec < 1000000);
	CHECK_SYS("getrusage.thread", getrusage(RUSAGE_THREAD, &ru));
	CHECK_ERR("getrusage.bad_who", getrusage(12345, &ru), EINVAL);

	/* a child's CPU time shows up for the parent after wait */
	struct rusage rc0;
	getrusage(RUSAGE_CHILDREN, &rc0);
	pid_t pid = fork();
	if (pid == 0) {
		burn_cpu(200);
		_exit(0);
	}
	struct rusage rw;
	int st;
	CHECK_EQ("wait4.rusage", wait4(pid, &st, 0, &rw), pid);
	long long cw = rw.ru_utime.tv_sec * 1000000LL + rw.ru_utime.tv_usec + rw.ru_stime.tv_sec * 1000000LL + rw.ru_stime.tv_usec;
	CHECK("wait4.rusage_time", cw >= 150000);
	struct rusage rc1;
	CHECK_SYS("getrusage.children", getrusage(RUSAGE_CHILDREN, &rc1));
	long long d = (rc1.ru_utime.tv_sec - rc0.ru_utime.tv_sec) * 1000000LL + (rc1.ru_utime.tv_usec - rc0.ru_utime.tv_usec) +
		      (rc1.ru_stime.tv_sec - rc0.ru_stime.tv_sec) * 1000000LL + (rc1.ru_stime.tv_usec - rc0.ru_stime.tv_usec);
	CHECK("getrusage.children_time", d >= 150000);
	struct tms tm2;
	times(&tm2);
	CHECK("times.children", tm2.tms_cutime + tm2.tms_cstime >= 10);
	/* sleeping costs no CPU */
	long long s0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	usleep(200000);
	long long s1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	CHECK("cputime.sleep_is_cheap", s1 - s0 < 150 * 1000000LL);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	size_t big = 4 << 20;
	volatile char *mem = malloc(big);
	for (size_t i = 0; i < big; i += 4096)
		mem[i] = 1;
	test_clocks();
	test_coarse();
	test_sleep();
	test_cpu_time();
	return check_done();
}
