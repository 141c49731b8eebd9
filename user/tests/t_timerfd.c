/*
 * t_timerfd: timers read through files. timerfd_create (clocks, flags),
 * timerfd_settime and timerfd_gettime (one-shot, periodic with the count
 * of missed periods, absolute times, disarming, the old setting), read
 * (count, blocking, O_NONBLOCK, reset by a new setting), poll and epoll,
 * and bad input.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>

#include "probe.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct itimerspec its(long value_ms, long interval_ms)
{
	struct itimerspec s = {
		.it_value = {value_ms / 1000, (value_ms % 1000) * 1000000L},
		.it_interval = {interval_ms / 1000, (interval_ms % 1000) * 1000000L},
	};
	return s;
}

static long ms(struct timespec ts) { return ts.tv_sec * 1000 + ts.tv_nsec / 1000000; }

static void nobody_alarm(int fd)
{
	put(fd, rc(timerfd_create(CLOCK_BOOTTIME_ALARM, 0)));
	put(fd, rc(timerfd_create(CLOCK_REALTIME_ALARM, 0)));
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	uint64_t n = 0;

	int fd = timerfd_create(CLOCK_MONOTONIC, 0);
	CHECK_SYS("create.monotonic", fd);
	CHECK_EQ("create.not_cloexec", fcntl(fd, F_GETFD), 0);
	struct itimerspec cur;
	CHECK_SYS("get.disarmed", timerfd_gettime(fd, &cur));
	CHECK("get.disarmed_zero", cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0);

	/* one shot: armed for 3 s, it is not ready at once and has at most
	 * that left (3 s leave room for a loaded host between the calls);
	 * set again for 100 ms, a read waits for it */
	struct itimerspec s = its(3000, 0), old;
	CHECK_SYS("oneshot.set", timerfd_settime(fd, 0, &s, &old));
	CHECK("oneshot.old_was_disarmed", old.it_value.tv_sec == 0 && old.it_value.tv_nsec == 0);
	CHECK_SYS("oneshot.get", timerfd_gettime(fd, &cur));
	CHECK("oneshot.get_left", ms(cur.it_value) > 0 && ms(cur.it_value) <= 3000);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	CHECK_EQ("oneshot.not_ready_early", poll(&p, 1, 0), 0);
	s = its(100, 0);
	double t0 = now();
	CHECK_SYS("oneshot.set_100ms", timerfd_settime(fd, 0, &s, &old));
	CHECK("oneshot.old_left", ms(old.it_value) > 0 && ms(old.it_value) <= 3000);
	CHECK_EQ("oneshot.read_blocks_then_8", read(fd, &n, 8), 8);
	double took = now() - t0;
	CHECK_EQ("oneshot.count", n, 1);
	if (!CHECK("oneshot.waited", took >= 0.09))
		printf("# took %.3f s\n", took);
	CHECK_SYS("oneshot.get_after", timerfd_gettime(fd, &cur));
	CHECK("oneshot.disarmed_after", cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0);

	/* periodic: a late read gets every period that passed, counted
	 * from the time that really passed (a loaded host oversleeps) */
	s = its(20, 20);
	double p0 = now();
	CHECK_SYS("periodic.set", timerfd_settime(fd, 0, &s, NULL));
	usleep(210000);
	double p1 = now();
	CHECK_EQ("periodic.read", read(fd, &n, 8), 8);
	double p2 = now();
	long lo = (long)((p1 - p0) / 0.020) - 3, hi = (long)((p2 - p0) / 0.020) + 1;
	if (!CHECK("periodic.count_missed", (long)n >= lo && (long)n <= hi && n >= 7))
		printf("# count %llu, expected %ld..%ld\n", (unsigned long long)n, lo, hi);
	CHECK_SYS("periodic.get", timerfd_gettime(fd, &cur));
	CHECK_EQ("periodic.interval", ms(cur.it_interval), 20);
	CHECK("periodic.next", ms(cur.it_value) <= 20);
	/* a new setting forgets the unread count */
	usleep(50000);
	s = its(100000, 0);
	CHECK_SYS("reset.set", timerfd_settime(fd, 0, &s, &old));
	CHECK_EQ("reset.old_interval", ms(old.it_interval), 20);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	CHECK_ERR("reset.count_forgotten", read(fd, &n, 8), EAGAIN);
	/* disarm */
	s = its(0, 0);
	CHECK_SYS("disarm.set", timerfd_settime(fd, 0, &s, &old));
	CHECK("disarm.old_left", ms(old.it_value) > 90000);
	CHECK_SYS("disarm.get", timerfd_gettime(fd, &cur));
	CHECK("disarm.zero", cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0);
	fcntl(fd, F_SETFL, 0);

	/* absolute times: ahead on the monotonic clock, past on the wall clock */
	struct timespec mono;
	clock_gettime(CLOCK_MONOTONIC, &mono);
	mono.tv_nsec += 80000000;
	if (mono.tv_nsec >= 1000000000) {
		mono.tv_sec++;
		mono.tv_nsec -= 1000000000;
	}
	s = (struct itimerspec){.it_value = mono};
	t0 = now();
	CHECK_SYS("abs.set", timerfd_settime(fd, TFD_TIMER_ABSTIME, &s, NULL));
	CHECK_EQ("abs.read", read(fd, &n, 8), 8);
	took = now() - t0;
	if (!CHECK("abs.waited", took >= 0.06 && took < 5))
		printf("# took %.3f s\n", took);
	int rt = timerfd_create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC);
	CHECK_SYS("create.realtime_flags", rt);
	CHECK_EQ("create.cloexec", fcntl(rt, F_GETFD), FD_CLOEXEC);
	CHECK("create.nonblock", fcntl(rt, F_GETFL) & O_NONBLOCK);
	CHECK_ERR("nonblock.eagain", read(rt, &n, 8), EAGAIN);
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	s = (struct itimerspec){.it_value = {wall.tv_sec - 10, 0}};
	CHECK_SYS("abs.past", timerfd_settime(rt, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &s, NULL));
	p.fd = rt;
	CHECK_EQ("abs.past_ready", poll(&p, 1, 2000), 1);
	CHECK_EQ("abs.past_count", read(rt, &n, 8), 8);

	/* epoll */
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 5};
	CHECK_SYS("epoll.add", epoll_ctl(ep, EPOLL_CTL_ADD, rt, &ev));
	s = its(30, 0);
	timerfd_settime(rt, 0, &s, NULL);
	struct epoll_event got = {0};
	CHECK_EQ("epoll.wait", epoll_wait(ep, &got, 1, 3000), 1);
	CHECK_EQ("epoll.data", got.data.u32, 5);
	close(ep);

	/* bad input */
	char small[4];
	CHECK_ERR("bad.short_read", read(rt, small, 4), EINVAL);
	CHECK_ERR("bad.write", write(rt, &n, 8), EINVAL);
	CHECK_ERR("bad.clock", timerfd_create(CLOCK_PROCESS_CPUTIME_ID, 0), EINVAL);
	CHECK_ERR("bad.clock_99", timerfd_create(99, 0), EINVAL);
	CHECK_ERR("bad.create_flags", timerfd_create(CLOCK_MONOTONIC, 1), EINVAL);
	s = its(10, 0);
	CHECK_ERR("bad.set_flags", timerfd_settime(fd, 4, &s, NULL), EINVAL);
	s.it_value.tv_nsec = 1000000000;
	CHECK_ERR("bad.nsec", timerfd_settime(fd, 0, &s, NULL), EINVAL);
	s.it_value.tv_nsec = 0;
	s.it_interval.tv_sec = -1;
	CHECK_ERR("bad.negative_interval", timerfd_settime(fd, 0, &s, NULL), EINVAL);
	CHECK_ERR("bad.fault", timerfd_settime(fd, 0, (void *)8, NULL), EFAULT);
	CHECK_ERR("bad.get_fault", timerfd_gettime(fd, (void *)8), EFAULT);
	int pp[2];
	pipe(pp);
	s = its(10, 0);
	CHECK_ERR("bad.not_timerfd_set", timerfd_settime(pp[0], 0, &s, NULL), EINVAL);
	CHECK_ERR("bad.not_timerfd_get", timerfd_gettime(pp[0], &cur), EINVAL);
	CHECK_ERR("bad.fd", timerfd_gettime(-1, &cur), EBADF);
	close(pp[0]);
	close(pp[1]);
	int res[2];
	CHECK_EQ("alarm.probe", probe(nobody_alarm, 1, res, 2), 2);
	CHECK_EQ("alarm.nobody_boottime_eperm", res[0], EPERM);
	CHECK_EQ("alarm.nobody_realtime_eperm", res[1], EPERM);
	close(rt);
	close(fd);
	return check_done();
}
