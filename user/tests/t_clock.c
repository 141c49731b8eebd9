/*
 * t_clock: setting the wall clock. clock_settime(CLOCK_REALTIME) and
 * settimeofday move what clock_gettime, gettimeofday, time and new file
 * timestamps say, and not the monotonic clock; root only; the checks in
 * Linux's order. The clock is put back at the end.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>

#include "probe.h"

static double ts(struct timespec t) { return t.tv_sec + t.tv_nsec / 1e9; }

static double clock_now(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return ts(t);
}

static void nobody_sets(int fd)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	put(fd, rc(clock_settime(CLOCK_REALTIME, &now)));
	put(fd, rc(clock_settime(CLOCK_REALTIME, (void *)8)));
	struct timespec bad = {0, 1000000000};
	put(fd, rc(clock_settime(CLOCK_REALTIME, &bad)));
	struct timeval tv = {now.tv_sec, 0};
	put(fd, rc(settimeofday(&tv, NULL)));
}

static long jumped; /* seconds the tests below moved the clock forward */

static int jump(long sec)
{
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	now.tv_sec += sec;
	jumped += sec;
	return clock_settime(CLOCK_REALTIME, &now);
}

static struct itimerspec at_wall(long ahead)
{
	struct itimerspec s = {0};
	clock_gettime(CLOCK_REALTIME, &s.it_value);
	s.it_value.tv_sec += ahead;
	return s;
}

/* timers and sleeps set for a time of day follow the clock */
static void test_followers(void)
{
	uint64_t n;
	/* TFD_TIMER_CANCEL_ON_SET: a set clock fails the next read */
	int c = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK);
	struct itimerspec s = at_wall(100000);
	CHECK_SYS("cancel.set", timerfd_settime(c, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &s, NULL));
	CHECK_ERR("cancel.nothing_yet", read(c, &n, 8), EAGAIN);
	CHECK_SYS("cancel.jump", jump(10));
	struct pollfd p = {.fd = c, .events = POLLIN};
	CHECK_EQ("cancel.poll_ready", poll(&p, 1, 2000), 1);
	CHECK_ERR("cancel.ecanceled", read(c, &n, 8), ECANCELED);
	CHECK_ERR("cancel.once", read(c, &n, 8), EAGAIN);
	close(c);

	/* an absolute wall-clock timerfd fires when the clock is moved past it */
	int w = timerfd_create(CLOCK_REALTIME, 0);
	s = at_wall(5000);
	CHECK_SYS("wall.set", timerfd_settime(w, TFD_TIMER_ABSTIME, &s, NULL));
	p.fd = w;
	CHECK_EQ("wall.not_yet", poll(&p, 1, 100), 0);
	CHECK_SYS("wall.jump", jump(5001));
	CHECK_EQ("wall.fires_after_jump", poll(&p, 1, 3000), 1);
	CHECK_EQ("wall.read", read(w, &n, 8), 8);
	/* a relative one does not move */
	s = (struct itimerspec){.it_value = {3, 0}};
	timerfd_settime(w, 0, &s, NULL);
	CHECK_SYS("rel.jump", jump(10000));
	CHECK_EQ("rel.not_moved", poll(&p, 1, 300), 0);
	close(w);

	/* a POSIX timer for a time of day */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN + 6);
	sigprocmask(SIG_BLOCK, &set, NULL);
	timer_t tm;
	struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN + 6};
	CHECK_SYS("ptimer.create", timer_create(CLOCK_REALTIME, &ev, &tm));
	s = at_wall(3000);
	CHECK_SYS("ptimer.set", timer_settime(tm, TIMER_ABSTIME, &s, NULL));
	CHECK_SYS("ptimer.jump", jump(3001));
	struct timespec two = {2, 0};
	CHECK_EQ("ptimer.fires_after_jump", sigtimedwait(&set, NULL, &two), SIGRTMIN + 6);
	timer_delete(tm);

	/* clock_nanosleep until a time of day wakes when the clock gets there */
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2000;
	pid_t child = fork();
	if (child == 0)
		_exit(clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &until, NULL) == 0 ? 0 : 1);
	usleep(300000);
	CHECK_SYS("sleep.jump", jump(2001));
	int st = -1;
	for (int i = 0; i < 50 && waitpid(child, &st, WNOHANG) == 0; i++)
		usleep(100000);
	CHECK_EQ("sleep.woke_at_the_new_time", st, 0);
	if (st == -1) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	CHECK_SYS("followers.restore", jump(-jumped));
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	const char *dir = check_mktmp();
	double real0 = clock_now(CLOCK_REALTIME), mono0 = clock_now(CLOCK_MONOTONIC);

	struct timespec target;
	clock_gettime(CLOCK_REALTIME, &target);
	target.tv_sec += 100000;
	CHECK_SYS("settime.forward", clock_settime(CLOCK_REALTIME, &target));
	double real1 = clock_now(CLOCK_REALTIME), mono1 = clock_now(CLOCK_MONOTONIC);
	CHECK("settime.realtime_moved", real1 - real0 > 99990 && real1 - real0 < 100010);
	CHECK("settime.monotonic_not_moved", mono1 - mono0 >= 0 && mono1 - mono0 < 10);
	struct timeval tv;
	gettimeofday(&tv, NULL);
	CHECK("settime.gettimeofday_agrees", tv.tv_sec >= target.tv_sec && tv.tv_sec < target.tv_sec + 10);
	time_t tt = time(NULL);
	CHECK("settime.time_agrees", tt >= target.tv_sec && tt < target.tv_sec + 10);
	char path[512];
	snprintf(path, sizeof path, "%s/f", dir);
	int fd = open(path, O_RDWR | O_CREAT, 0644);
	struct stat st;
	fstat(fd, &st);
	CHECK("settime.new_file_mtime", st.st_mtime >= target.tv_sec && st.st_mtime < target.tv_sec + 10);
	close(fd);
	unlink(path);

	/* settimeofday back to where we were */
	gettimeofday(&tv, NULL);
	tv.tv_sec -= 100000;
	CHECK_SYS("settimeofday.back", settimeofday(&tv, NULL));
	double real2 = clock_now(CLOCK_REALTIME);
	CHECK("settimeofday.restored", real2 - real0 >= 0 && real2 - real0 < 30);

	test_followers();
	CHECK("followers.clock_back", clock_now(CLOCK_REALTIME) - real0 < 60);

	/* checks */
	CHECK_ERR("bad.monotonic", clock_settime(CLOCK_MONOTONIC, &target), EINVAL);
	CHECK_ERR("bad.clock_before_fault", clock_settime(CLOCK_MONOTONIC, (void *)8), EINVAL);
	CHECK_ERR("bad.fault", clock_settime(CLOCK_REALTIME, (void *)8), EFAULT);
	struct timespec bad = {target.tv_sec, 1000000000};
	CHECK_ERR("bad.nsec", clock_settime(CLOCK_REALTIME, &bad), EINVAL);
	bad = (struct timespec){-1, 0};
	CHECK_ERR("bad.negative", clock_settime(CLOCK_REALTIME, &bad), EINVAL);
	struct timeval btv = {tv.tv_sec, 1000000};
	CHECK_ERR("bad.usec", settimeofday(&btv, NULL), EINVAL);
	struct timezone tz = {.tz_minuteswest = 16 * 60};
	CHECK_ERR("bad.timezone", syscall(SYS_settimeofday, NULL, &tz), EINVAL); /* musl ignores tz */

	int res[4];
	CHECK_EQ("nobody.probe", probe(nobody_sets, 1, res, 4), 4);
	CHECK_EQ("nobody.eperm", res[0], EPERM);
	CHECK_EQ("nobody.efault_first", res[1], EFAULT);
	CHECK_EQ("nobody.einval_first", res[2], EINVAL);
	CHECK_EQ("nobody.settimeofday_eperm", res[3], EPERM);
	CHECK_SYS("cleanup.rmdir", rmdir(dir));
	return check_done();
}
