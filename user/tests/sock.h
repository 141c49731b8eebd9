/* sock.h: helpers shared by the socket tests (t_socket, t_socket_data,
 * t_inet, t_snmp, t_scale): the loopback interface up, addresses, polling
 * one descriptor, a data pattern and checksum, descriptor passing, and
 * a storm of connections from several processes. Include after check.h. */
#ifndef SHORTBREAD_SOCK_H
#define SHORTBREAD_SOCK_H

#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <net/if.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#define BAD_PTR ((void *)8)

/* lo_up brings the loopback interface up: Linux's lo starts down and
 * nothing in the test image brings it up; Shortbread's is up from boot. */
__attribute__((unused)) static void lo_up(void)
{
	struct ifreq ifr = {0};
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0 && !(ifr.ifr_flags & IFF_UP)) {
		ifr.ifr_flags |= IFF_UP;
		ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	close(s);
}

__attribute__((unused)) static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

__attribute__((unused)) static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* An address for a path name and its length as bind takes it. */
__attribute__((unused)) static socklen_t path_addr(struct sockaddr_un *a, const char *path)
{
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	strcpy(a->sun_path, path);
	return offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1;
}

/* An abstract name unique to this run (the host's namespace is shared). */
__attribute__((unused)) static socklen_t abstract_addr(struct sockaddr_un *a, const char *name)
{
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "t_socket-%d-%s", (int)getpid(), name);
	return offsetof(struct sockaddr_un, sun_path) + 1 + n;
}

__attribute__((unused)) static short poll1(int fd, short events, int ms)
{
	struct pollfd p = { fd, events, 0 };
	if (poll(&p, 1, ms) < 0)
		return -1;
	return p.revents;
}

/* A data pattern both sides can compute, and a checksum over a stream. */
__attribute__((unused)) static unsigned char pattern(uint64_t i, unsigned seed)
{
	return (unsigned char)((i * 2654435761u + seed) >> 7);
}

__attribute__((unused)) static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

__attribute__((unused)) static int write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= k;
	}
	return 0;
}


/* Send descriptors in an SCM_RIGHTS message. */
__attribute__((unused)) static ssize_t send_fds(int s, const int *fds, int n, const char *data)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 4)] = { 0 };
	struct iovec iov = { (void *)data, strlen(data) };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = CMSG_SPACE(sizeof(int) * n) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * n);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
	return sendmsg(s, &m, 0);
}

/* Receive up to max descriptors; returns how many came (-1: error). */
__attribute__((unused)) static int recv_fds(int s, int *fds, int max, size_t cspace, int flags, int *msg_flags)
{
	char cbuf[256] __attribute__((aligned(8)));
	char data[16];
	struct iovec iov = { data, sizeof data };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = cspace };
	if (recvmsg(s, &m, flags) < 0)
		return -1;
	if (msg_flags)
		*msg_flags = m.msg_flags;
	int n = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int) && n < max; i++)
				memcpy(&fds[n++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
	return n;
}

__attribute__((unused)) static int lowest_free_fd(void)
{
	int fd = dup(0);
	close(fd);
	return fd;
}


/* connection_storm makes 1,000 connections from four processes at once to
 * the bound, non-blocking stream listener l (family, address a), which
 * this process serves through epoll: each client sends its number and
 * gets it back doubled. Nothing is left behind: every descriptor is
 * closed. Checks are named PREFIX.*; l stays open. */
__attribute__((unused)) static void connection_storm(const char *prefix, int family, const struct sockaddr *a, socklen_t alen, int l)
{
	enum { PROCS = 4, EACH = 250 };
	char name[64];
	snprintf(name, sizeof name, "%s.listen", prefix);
	CHECK_SYS(name, listen(l, 64));
	int before = lowest_free_fd();
	pid_t pids[PROCS];
	for (int p = 0; p < PROCS; p++) {
		pids[p] = fork();
		if (pids[p] == 0) {
			close(l);
			for (int i = 0; i < EACH; i++) {
				int c = socket(family, SOCK_STREAM, 0);
				if (connect(c, a, alen) != 0)
					_exit(1);
				int v = p * EACH + i, r = -1;
				if (write(c, &v, sizeof v) != sizeof v || read(c, &r, sizeof r) != sizeof r || r != 2 * v)
					_exit(2);
				close(c);
			}
			_exit(0);
		}
	}
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = l }, out[16];
	epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev);
	int served = 0, open_conns = 0, bad = 0;
	double t0 = now();
	while ((served < PROCS * EACH || open_conns > 0) && now() - t0 < 60) {
		int n = epoll_wait(ep, out, 16, 1000);
		for (int i = 0; i < n; i++) {
			int fd = out[i].data.fd;
			if (fd == l) {
				int c;
				while ((c = accept4(l, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					ev.events = EPOLLIN | EPOLLRDHUP;
					ev.data.fd = c;
					epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
					open_conns++;
				}
				continue;
			}
			int v;
			ssize_t k = read(fd, &v, sizeof v);
			if (k == sizeof v) {
				v *= 2;
				bad |= write(fd, &v, sizeof v) != sizeof v;
				served++;
			} else if (k == 0 || (k < 0 && errno != EAGAIN)) {
				epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
				close(fd);
				open_conns--;
			}
		}
	}
	snprintf(name, sizeof name, "%s.served", prefix);
	CHECK_EQ(name, served, PROCS * EACH);
	snprintf(name, sizeof name, "%s.replies", prefix);
	CHECK(name, !bad);
	int ok = 1;
	for (int p = 0; p < PROCS; p++) {
		int status;
		waitpid(pids[p], &status, 0);
		ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
	}
	snprintf(name, sizeof name, "%s.clients", prefix);
	CHECK(name, ok);
	close(ep);
	snprintf(name, sizeof name, "%s.no_fds_left", prefix);
	CHECK_EQ(name, lowest_free_fd(), before);
}

#endif
