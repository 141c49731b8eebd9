/*
 * t_adjtimex: the clock's discipline, adjtimex(2) and clock_adjtime(2).
 * Reading: the state after boot (TIME_ERROR while unsynchronized,
 * STA_UNSYNC, tick 10000, tolerance 500 ppm, precision, time constant,
 * the time itself); EPERM for changes without CAP_SYS_TIME, reading
 * allowed; EINVAL for a tick out of range, adjtime's flag alone and a
 * bad ADJ_SETOFFSET; EFAULT. Changing: ADJ_SETOFFSET steps the wall
 * clock (seen against CLOCK_MONOTONIC) and back; adjtime(3)'s one-shot
 * slew reports what is left, moves, and hands back its rest when
 * replaced; ADJ_FREQUENCY reads back (clamped to 500 ppm); ADJ_STATUS
 * makes the state TIME_OK and back; ADJ_MAXERROR grows from its value;
 * ADJ_TIMECONST clamps and adds 4 in microsecond mode, not in
 * nanosecond mode; ADJ_NANO and ADJ_MICRO switch STA_NANO. clock_adjtime works on
 * CLOCK_REALTIME only (EOPNOTSUPP, EINVAL). Everything is put back.
 */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <sys/timex.h>
#include <time.h>

#include "probe.h"

static double wall_minus_mono(void)
{
	struct timespec r, m;
	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	return (r.tv_sec - m.tv_sec) + (r.tv_nsec - m.tv_nsec) / 1e9;
}

static long adj(struct timex *tx)
{
	return syscall(SYS_adjtimex, tx);
}

static void unprivileged(int fd)
{
	struct timex tx = {.modes = ADJ_FREQUENCY, .freq = 0};
	put(fd, rc(adj(&tx)));
	struct timex rd = {0};
	put(fd, rc(adj(&rd)));
	struct timex ss = {.modes = ADJ_OFFSET_SS_READ};
	put(fd, rc(adj(&ss)));
	struct timex set = {.modes = ADJ_OFFSET_SINGLESHOT, .offset = 1000};
	put(fd, rc(adj(&set)));
	struct timex step = {.modes = ADJ_SETOFFSET, .time = {.tv_sec = 1}};
	put(fd, rc(adj(&step)));
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);

	struct timex tx = {0};
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	long r = adj(&tx);
	CHECK_EQ("read.state_unsynced", r, TIME_ERROR);
	CHECK("read.sta_unsync", tx.status & STA_UNSYNC);
	CHECK_EQ("read.tick", tx.tick, 10000);
	CHECK_EQ("read.tolerance", tx.tolerance, 500L << 16);
	CHECK_EQ("read.precision", tx.precision, 1);
	CHECK_EQ("read.constant", tx.constant, 2);
	CHECK_EQ("read.freq", tx.freq, 0);
	CHECK("read.maxerror", tx.maxerror >= 0 && tx.maxerror <= 16000000);
	CHECK_EQ("read.esterror", tx.esterror, 16000000);
	CHECK("read.time", tx.time.tv_sec >= now.tv_sec && tx.time.tv_sec <= now.tv_sec + 2);
	CHECK("read.time_usec", tx.time.tv_usec >= 0 && tx.time.tv_usec < 1000000);
	CHECK_ERR("read.efault", adj((struct timex *)8), EFAULT);

	int res[5];
	int n = probe(unprivileged, 1, res, 5);
	CHECK_EQ("perm.probe", n, 5);
	if (n == 5) {
		CHECK_EQ("perm.set_freq", res[0], EPERM);
		CHECK_EQ("perm.read", res[1], 0);
		CHECK_EQ("perm.adjtime_read", res[2], 0);
		CHECK_EQ("perm.adjtime_set", res[3], EPERM);
		CHECK_EQ("perm.setoffset", res[4], EPERM);
	}

	struct timex bad = {.modes = ADJ_TICK, .tick = 8000};
	CHECK_ERR("inval.tick_low", adj(&bad), EINVAL);
	bad.tick = 12000;
	CHECK_ERR("inval.tick_high", adj(&bad), EINVAL);
	struct timex half = {.modes = 0x8000};
	CHECK_ERR("inval.adjtime_flag_alone", adj(&half), EINVAL);
	struct timex so = {.modes = ADJ_SETOFFSET, .time = {.tv_sec = 0, .tv_usec = 1000000}};
	CHECK_ERR("inval.setoffset_usec", adj(&so), EINVAL);
	so.time.tv_usec = -1;
	CHECK_ERR("inval.setoffset_negative", adj(&so), EINVAL);

	/* a step of 5 s and back, seen as realtime less monotonic */
	double before = wall_minus_mono();
	struct timex step = {.modes = ADJ_SETOFFSET, .time = {.tv_sec = 5}};
	CHECK("step.forward", adj(&step) >= 0);
	double moved = wall_minus_mono() - before;
	CHECK("step.moved", moved > 4.5 && moved < 5.5);
	struct timex back = {.modes = ADJ_SETOFFSET | ADJ_NANO, .time = {.tv_sec = -5, .tv_usec = 0}};
	CHECK("step.back", adj(&back) >= 0);
	moved = wall_minus_mono() - before;
	CHECK("step.restored", moved > -0.5 && moved < 0.5);
	CHECK("nano.set_by_adj_nano", back.status & STA_NANO);
	struct timex mi = {.modes = ADJ_MICRO};
	adj(&mi);
	CHECK("nano.cleared_by_adj_micro", !(mi.status & STA_NANO));

	/* adjtime: a 200 ms slew */
	struct timex ss = {.modes = ADJ_OFFSET_SINGLESHOT, .offset = 200000};
	CHECK("adjtime.start", adj(&ss) >= 0);
	CHECK_EQ("adjtime.none_before", ss.offset, 0);
	struct timex rd = {.modes = ADJ_OFFSET_SS_READ};
	adj(&rd);
	CHECK("adjtime.left", rd.offset > 0 && rd.offset <= 200000);
	long first = rd.offset;
	struct timespec sl = {1, 0};
	nanosleep(&sl, NULL);
	adj(&rd);
	CHECK("adjtime.moving", rd.offset > 0 && rd.offset < first);
	struct timex cancel = {.modes = ADJ_OFFSET_SINGLESHOT, .offset = 0};
	adj(&cancel);
	CHECK("adjtime.rest_returned", cancel.offset > 0 && cancel.offset <= rd.offset);
	adj(&rd);
	CHECK_EQ("adjtime.cancelled", rd.offset, 0);

	/* frequency: 100 ppm, then beyond the limit, then back */
	struct timex fq = {.modes = ADJ_FREQUENCY, .freq = 100L << 16};
	adj(&fq);
	CHECK_EQ("freq.set", fq.freq, 100L << 16);
	fq.freq = 1000L << 16;
	adj(&fq);
	CHECK_EQ("freq.clamped", fq.freq, 500L << 16);
	fq.freq = 0;
	adj(&fq);
	CHECK_EQ("freq.restored", fq.freq, 0);

	/* status: synchronized, then not */
	struct timex st = {.modes = ADJ_STATUS, .status = 0};
	CHECK_EQ("status.synced", adj(&st), TIME_OK);
	st.status = STA_UNSYNC;
	CHECK_EQ("status.unsynced", adj(&st), TIME_ERROR);

	struct timex me = {.modes = ADJ_MAXERROR, .maxerror = 1000};
	adj(&me);
	CHECK("maxerror.set", me.maxerror >= 1000 && me.maxerror < 3000);
	me.maxerror = 16000000;
	adj(&me);

	struct timex tc = {.modes = ADJ_TIMECONST, .constant = 3};
	adj(&tc);
	CHECK_EQ("timeconst.micro_plus_4", tc.constant, 7);
	tc.constant = -2; /* clamped to 0 first, then 4 added */
	adj(&tc);
	CHECK_EQ("timeconst.negative_clamped", tc.constant, 4);
	struct timex tn = {.modes = ADJ_TIMECONST | ADJ_NANO, .constant = 2};
	adj(&tn);
	CHECK_EQ("timeconst.nano_as_given", tn.constant, 2);
	tn.modes = ADJ_MICRO;
	adj(&tn);

	struct timex ca = {0};
	CHECK_EQ("clock_adjtime.realtime", syscall(SYS_clock_adjtime, CLOCK_REALTIME, &ca), TIME_ERROR);
	CHECK_ERR("clock_adjtime.monotonic", syscall(SYS_clock_adjtime, CLOCK_MONOTONIC, &ca), EOPNOTSUPP);
	CHECK_ERR("clock_adjtime.unknown", syscall(SYS_clock_adjtime, 100, &ca), EINVAL);
	CHECK_ERR("clock_adjtime.efault", syscall(SYS_clock_adjtime, CLOCK_REALTIME, (void *)8), EFAULT);
	return check_done();
}
