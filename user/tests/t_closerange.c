/*
 * t_closerange: close_range(2): a range closed, or marked close-on-exec
 * (CLOSE_RANGE_CLOEXEC) and kept open, ranges past the table's end, and
 * EINVAL for bad flags and an inverted range.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <sys/syscall.h>

#include "check.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC 4
#endif

static long close_range_(unsigned first, unsigned last, unsigned flags)
{
	return syscall(SYS_close_range, first, last, flags);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	int fds[6];
	for (int i = 0; i < 6; i++)
		fds[i] = dup2(0, 40 + i); /* 40..45 */
	CHECK_EQ("setup.fds", fds[5], 45);
	CHECK_SYS("close.middle", close_range_(41, 43, 0));
	CHECK_SYS("close.kept_below", fcntl(40, F_GETFD));
	CHECK_ERR("close.closed_41", fcntl(41, F_GETFD), EBADF);
	CHECK_ERR("close.closed_43", fcntl(43, F_GETFD), EBADF);
	CHECK_SYS("close.kept_above", fcntl(44, F_GETFD));
	CHECK_SYS("cloexec.mark", close_range_(44, 45, CLOSE_RANGE_CLOEXEC));
	CHECK_EQ("cloexec.set_44", fcntl(44, F_GETFD), FD_CLOEXEC);
	CHECK_EQ("cloexec.set_45", fcntl(45, F_GETFD), FD_CLOEXEC);
	CHECK_EQ("cloexec.not_40", fcntl(40, F_GETFD), 0);
	CHECK_SYS("close.to_the_end", close_range_(40, UINT_MAX, 0));
	CHECK_ERR("close.end_40", fcntl(40, F_GETFD), EBADF);
	CHECK_ERR("close.end_45", fcntl(45, F_GETFD), EBADF);
	CHECK_SYS("close.nothing_there", close_range_(1000, 2000, 0));
	CHECK_SYS("stdio.still_open", fcntl(0, F_GETFD));
	CHECK_ERR("bad.inverted", close_range_(10, 5, 0), EINVAL);
	CHECK_ERR("bad.flags", close_range_(40, 50, 1), EINVAL);
	return check_done();
}
