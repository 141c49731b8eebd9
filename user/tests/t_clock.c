/*
 * t_clock: setting the wall clock. clock_settime(CLOCK_REALTIME) and
 * settimeofday move what clock_gettime, gettimeofday, time and new file
 * timestamps say, and not the monotonic clock; root only; the checks in
 * Linux's order. The clock is put back at the end.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
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
