/*
 * t_klog: syslog(2), the kernel log as dmesg reads it: the buffer size,
 * READ_ALL (whole "<N>[time] text" lines, the newest that fit), CLEAR and
 * READ_CLEAR, SIZE_UNREAD, CONSOLE_LEVEL's range, bad arguments, and root
 * only (Debian's dmesg_restrict=1: even READ_ALL is EPERM for others).
 */
#define _GNU_SOURCE
#include <sys/klog.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "check.h"

#define NOBODY 65534

static char buf[1 << 20];

static void as_nobody(int fd)
{
	int r[3];
	errno = 0;
	r[0] = klogctl(3, buf, sizeof buf) < 0 ? errno : 0;
	r[1] = klogctl(10, NULL, 0) < 0 ? errno : 0;
	r[2] = klogctl(42, NULL, 0) < 0 ? errno : 0;
	if (write(fd, r, sizeof r) != sizeof r)
		_exit(99);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	int size = klogctl(10, NULL, 0);
	CHECK("syslog.size_buffer", size >= 4096);
	CHECK_SYS("syslog.open", klogctl(1, NULL, 0));
	CHECK_SYS("syslog.close", klogctl(0, NULL, 0));
	CHECK("syslog.size_unread", klogctl(9, NULL, 0) >= 0);

	int n = klogctl(3, buf, sizeof buf);
	CHECK("syslog.read_all", n > 0 && n <= size);
	if (n > 0) {
		CHECK("syslog.prefix", buf[0] == '<' && buf[1] >= '0' && buf[1] <= '7' && buf[2] == '>');
		CHECK("syslog.timestamp", buf[3] == '[');
		CHECK("syslog.whole_lines", buf[n - 1] == '\n');
	}
	int small = klogctl(3, buf, 200);
	CHECK("syslog.read_all_small", small >= 0 && small <= 200);
	if (small > 0)
		CHECK("syslog.small_whole_lines", buf[0] == '<' && buf[small - 1] == '\n');
	CHECK_EQ("syslog.read_all_0", klogctl(3, buf, 0), 0);
	CHECK_ERR("syslog.read_all_null", klogctl(3, NULL, 10), EINVAL);
	CHECK_ERR("syslog.read_all_negative", klogctl(3, buf, -1), EINVAL);
	CHECK_ERR("syslog.read_all_efault", klogctl(3, (char *)8, 4096), EFAULT);
	CHECK_ERR("syslog.bad_action", klogctl(42, NULL, 0), EINVAL);
	CHECK_ERR("syslog.bad_action_negative", klogctl(-1, NULL, 0), EINVAL);
	CHECK_ERR("syslog.console_level_0", klogctl(8, NULL, 0), EINVAL);
	CHECK_ERR("syslog.console_level_9", klogctl(8, NULL, 9), EINVAL);
	CHECK_ERR("syslog.read_null", klogctl(2, NULL, 10), EINVAL);
	CHECK_EQ("syslog.read_0", klogctl(2, buf, 0), 0);

	/* after CLEAR, READ_ALL starts at the lines that came later */
	CHECK_SYS("syslog.clear", klogctl(5, NULL, 0));
	int after = klogctl(3, buf, sizeof buf);
	CHECK("syslog.cleared", after >= 0 && after < n);
	CHECK("syslog.read_clear", klogctl(4, buf, sizeof buf) >= 0);
	CHECK_EQ("syslog.size_unchanged", klogctl(10, NULL, 0), size);

	int p[2];
	if (pipe(p))
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY))
			_exit(98);
		as_nobody(p[1]);
		_exit(0);
	}
	close(p[1]);
	int r[3] = { -1, -1, -1 };
	CHECK_EQ("nobody.report", read(p[0], r, sizeof r), sizeof r);
	waitpid(pid, NULL, 0);
	CHECK_EQ("nobody.read_all_eperm", r[0], EPERM);
	CHECK_EQ("nobody.size_buffer_eperm", r[1], EPERM);
	CHECK_EQ("nobody.bad_action_eperm", r[2], EPERM);
	return check_done();
}
