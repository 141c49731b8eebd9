/*
 * t_rtc: the real-time clock, /dev/rtc0. RTC_RD_TIME (fields in range,
 * agreeing with the system clock the kernel set from it at boot,
 * ticking), RTC_SET_TIME (root only:
 * EACCES otherwise; EINVAL for impossible dates; a set time reads back
 * and the clock is restored), and busybox hwclock -r.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"

/* include/uapi/linux/rtc.h (musl ships no Linux headers) */
struct rtc_time {
	int tm_sec, tm_min, tm_hour, tm_mday, tm_mon, tm_year, tm_wday, tm_yday, tm_isdst;
};
#define RTC_RD_TIME _IOR('p', 0x09, struct rtc_time)
#define RTC_SET_TIME _IOW('p', 0x0a, struct rtc_time)

static time_t rtc_seconds(const struct rtc_time *r)
{
	struct tm tm = {.tm_sec = r->tm_sec, .tm_min = r->tm_min, .tm_hour = r->tm_hour,
			.tm_mday = r->tm_mday, .tm_mon = r->tm_mon, .tm_year = r->tm_year};
	return timegm(&tm);
}

static int set_to(int fd, time_t t)
{
	struct tm tm;
	gmtime_r(&t, &tm);
	struct rtc_time r = {.tm_sec = tm.tm_sec, .tm_min = tm.tm_min, .tm_hour = tm.tm_hour,
			     .tm_mday = tm.tm_mday, .tm_mon = tm.tm_mon, .tm_year = tm.tm_year};
	return ioctl(fd, RTC_SET_TIME, &r);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	struct stat st;
	CHECK_SYS("stat", stat("/dev/rtc0", &st));
	CHECK("is_chr_0600", S_ISCHR(st.st_mode) && (st.st_mode & 07777) == 0600);
	int fd = open("/dev/rtc0", O_RDONLY);
	CHECK_SYS("open", fd);
	if (fd < 0)
		return check_done();

	struct rtc_time r;
	memset(&r, 0xff, sizeof r);
	CHECK_SYS("rd_time", ioctl(fd, RTC_RD_TIME, &r));
	CHECK("rd_time.fields", r.tm_sec >= 0 && r.tm_sec <= 59 && r.tm_min >= 0 && r.tm_min <= 59 && r.tm_hour >= 0 &&
					r.tm_hour <= 23 && r.tm_mday >= 1 && r.tm_mday <= 31 && r.tm_mon >= 0 && r.tm_mon <= 11 &&
					r.tm_year >= 120 && r.tm_year < 170);
	struct timespec m0;
	clock_gettime(CLOCK_MONOTONIC, &m0);
	/* The kernel set its clock from the RTC at boot, but the two part
	 * afterwards: earlier tests that set the wall clock put it back only
	 * to within 30 s (t_clock), and under QEMU's TCG on a loaded host a
	 * kernel's TSC-derived clock falls behind the RTC, which follows the
	 * host's (Shortbread's by 27 s and 276 s in two suite runs). So the
	 * RTC must only tell the same hour. */
	time_t rt = rtc_seconds(&r), now = time(NULL);
	CHECK("rd_time.near_system_clock", rt >= now - 3600 && rt <= now + 3600);
	printf("# rtc - system clock: %lld s\n", (long long)(rt - now));
	struct tm g;
	gmtime_r(&rt, &g);
	/* Linux's CMOS driver leaves the weekday and day of the year 0 */
	CHECK("rd_time.isdst_0", r.tm_isdst == 0);
	/* the clock ticks */
	usleep(1500000);
	struct rtc_time r2;
	CHECK_SYS("rd_time.again", ioctl(fd, RTC_RD_TIME, &r2));
	time_t d = rtc_seconds(&r2) - rt;
	CHECK("rd_time.ticks", d >= 1 && d <= 60); /* see above: the clocks part */
	printf("# rtc advanced %lld s in 1.5 s of CLOCK_MONOTONIC\n", (long long)d);
	CHECK_ERR("rd_time.efault", ioctl(fd, RTC_RD_TIME, (void *)8), EFAULT);

	/* an impossible date */
	struct rtc_time bad = r;
	bad.tm_mon = 12;
	CHECK_ERR("set_time.bad_month", ioctl(fd, RTC_SET_TIME, &bad), EINVAL);
	bad = r;
	bad.tm_mon = 1;
	bad.tm_mday = 30;
	CHECK_ERR("set_time.feb_30", ioctl(fd, RTC_SET_TIME, &bad), EINVAL);

	/* not root: EACCES */
	pid_t c = fork();
	if (c == 0) {
		if (setuid(65534) != 0)
			_exit(2);
		_exit(set_to(fd, time(NULL)) == -1 && errno == EACCES ? 0 : 1);
	}
	int ws;
	waitpid(c, &ws, 0);
	CHECK("set_time.unprivileged_eacces", WIFEXITED(ws) && WEXITSTATUS(ws) == 0);

	/* root: an hour ahead reads back, then the clock is put back where
	 * it would be (its first reading plus the time since) */
	CHECK_SYS("set_time.ahead", set_to(fd, time(NULL) + 3600));
	struct rtc_time r3;
	CHECK_SYS("set_time.read_back", ioctl(fd, RTC_RD_TIME, &r3));
	d = rtc_seconds(&r3) - time(NULL);
	CHECK("set_time.took", d >= 3595 && d <= 3610);
	struct timespec m1;
	clock_gettime(CLOCK_MONOTONIC, &m1);
	time_t back = rt + (m1.tv_sec - m0.tv_sec);
	CHECK_SYS("set_time.restore", set_to(fd, back));
	ioctl(fd, RTC_RD_TIME, &r3);
	d = rtc_seconds(&r3) - back;
	CHECK("set_time.restored", d >= 0 && d <= 5);
	close(fd);

	/* busybox hwclock reads it */
	FILE *p = popen("hwclock -r -u 2>&1; echo status=$?", "r");
	char out[256] = "", line[128];
	while (p && fgets(line, sizeof line, p))
		strncat(out, line, sizeof out - strlen(out) - 1);
	if (p)
		pclose(p);
	char year[16];
	snprintf(year, sizeof year, "%d", g.tm_year + 1900);
	CHECK("hwclock.reads", strstr(out, "status=0") && strstr(out, year));
	if (!strstr(out, "status=0"))
		printf("# hwclock said: %s\n", out);
	return check_done();
}
