/* Helpers shared by the mailbench programs (common.h). */
#include "common.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

const char *prog = "mailbench";

static void vreport(const char *fmt, va_list ap)
{
	int err = errno;
	size_t len = strlen(fmt);

	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	if (len > 0 && fmt[len - 1] == ':')
		fprintf(stderr, " %s", strerror(err));
	fputc('\n', stderr);
}

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
	exit(1);
}

void warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
}

void write_all(int fd, const void *buf, size_t n, const char *what)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			die("write %s:", what);
		}
		p += w;
		n -= (size_t)w;
	}
}

size_t read_full(int fd, void *buf, size_t n, const char *what)
{
	char *p = buf;
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, p + got, n - got);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			die("read %s:", what);
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return got;
}

void copy_fd(int from, int to, const char *fromname, const char *toname)
{
	char buf[65536];
	size_t n;

	while ((n = read_full(from, buf, sizeof buf, fromname)) > 0)
		write_all(to, buf, n, toname);
}

void path_fmt(char *buf, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, PATH_MAX, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= PATH_MAX)
		die("path too long (format %s)", fmt);
}

long parse_count(const char *text, const char *name, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (errno != 0 || end == text || *end != '\0' || v <= 0 || v > max)
		die("%s: '%s' is not a number from 1 to %ld", name, text, max);
	return v;
}

void notify_qman(const char *spool, const char *msg)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if ((size_t)snprintf(sa.sun_path, sizeof sa.sun_path, "%s/%s", spool, QMAN_SOCK) >= sizeof sa.sun_path)
		die("socket path %s/%s is longer than %zu bytes", spool, QMAN_SOCK, sizeof sa.sun_path - 1);
	int sock = socket(AF_UNIX, SOCK_DGRAM, 0);
	if (sock < 0)
		die("socket:");
	/* A full receive queue blocks the sender until mail-qman catches up,
	 * which is the back-pressure the benchmark wants. */
	if (sendto(sock, msg, strlen(msg), 0, (struct sockaddr *)&sa, sizeof sa) < 0)
		die("send to %s:", sa.sun_path);
	close(sock);
}
