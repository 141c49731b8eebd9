/* AF_INET and AF_INET6: TCP and UDP over loopback (127.0.0.1 and ::1). */
#define _GNU_SOURCE
#include "check.h"
#include "sock.h"
#include "probe.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/route.h>

static struct sockaddr_in lo4(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* A listening TCP socket on 127.0.0.1 with a kernel-chosen port. */
static int listener4(struct sockaddr_in *a)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	*a = lo4(0);
	socklen_t len = sizeof *a;
	if (l < 0 || bind(l, (void *)a, sizeof *a) < 0 || listen(l, 8) < 0 ||
	    getsockname(l, (void *)a, &len) < 0)
		return -1;
	return l;
}

static int connect4(const struct sockaddr_in *a)
{
	int c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (const void *)a, sizeof *a) < 0)
		return -1;
	return c;
}

static unsigned char pat(size_t i) { return (unsigned char)(i * 7 + (i >> 11)); }

/* Sends n pattern bytes on fd and returns their hash. */
static unsigned long send_pattern(int fd, size_t n)
{
	static unsigned char buf[65536];
	unsigned long h = 14695981039346656037UL;
	for (size_t off = 0; off < n;) {
		size_t k = n - off < sizeof buf ? n - off : sizeof buf;
		for (size_t i = 0; i < k; i++)
			buf[i] = pat(off + i);
		ssize_t w = write(fd, buf, k);
		if (w <= 0)
			return 0;
		h = fnv(h, buf, w);
		off += w;
	}
	return h;
}

/* Reads until EOF and returns the hash and count. */
static unsigned long recv_all(int fd, size_t *n)
{
	static unsigned char buf[65536];
	unsigned long h = 14695981039346656037UL;
	*n = 0;
	for (;;) {
		ssize_t r = read(fd, buf, sizeof buf);
		if (r <= 0)
			return r < 0 ? 0 : h;
		h = fnv(h, buf, r);
		*n += r;
	}
}

static volatile int sigpipes;
static void on_pipe(int s) { (void)s; sigpipes++; }

static void test_basics(void)
{
	CHECK_ERR("socket.bad_family", socket(100, SOCK_STREAM, 0), EAFNOSUPPORT);
	CHECK_ERR("socket.tcp_udp_proto", socket(AF_INET, SOCK_STREAM, IPPROTO_UDP), EPROTONOSUPPORT);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	CHECK_SYS("socket.inet_stream", s);
	int v = -1;
	socklen_t vl = sizeof v;
	CHECK_SYS("so_type.get", getsockopt(s, SOL_SOCKET, SO_TYPE, &v, &vl));
	CHECK_EQ("so_type.stream", v, SOCK_STREAM);

	struct sockaddr_in a = lo4(0);
	CHECK_ERR("bind.short_len", bind(s, (void *)&a, 8), EINVAL);
	CHECK_ERR("bind.efault", bind(s, BAD_PTR, sizeof a), EFAULT);
	struct sockaddr_in bad = a;
	bad.sin_family = AF_INET6;
	CHECK_ERR("bind.wrong_family", bind(s, (void *)&bad, sizeof bad), EAFNOSUPPORT);
	bad = lo4(0);
	bad.sin_addr.s_addr = htonl(0x0a010203);
	CHECK_ERR("bind.addrnotavail", bind(s, (void *)&bad, sizeof bad), EADDRNOTAVAIL);
	CHECK_SYS("bind.ephemeral", bind(s, (void *)&a, sizeof a));
	socklen_t len = sizeof a + 10;
	CHECK_SYS("getsockname", getsockname(s, (void *)&a, &len));
	CHECK_EQ("getsockname.len", len, sizeof(struct sockaddr_in));
	CHECK("getsockname.port", a.sin_port != 0);
	CHECK_EQ("getsockname.addr", a.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	FILE *pr = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	int lo = 0, hi = 0;
	CHECK("port_range.open", pr != NULL);
	if (pr) {
		CHECK_EQ("port_range.fields", fscanf(pr, "%d %d", &lo, &hi), 2);
		fclose(pr);
	}
	CHECK("port_range.ephemeral_in_range", ntohs(a.sin_port) >= lo && ntohs(a.sin_port) <= hi);
	CHECK_ERR("getpeername.enotconn", getpeername(s, (void *)&a, &len), ENOTCONN);
	char c;
	CHECK_ERR("recv.enotconn", recv(s, &c, 1, 0), ENOTCONN);
	CHECK_ERR("accept.not_listening", accept(s, NULL, NULL), EINVAL);
	int s2 = socket(AF_INET, SOCK_STREAM, 0);
	CHECK_ERR("bind.addrinuse", bind(s2, (void *)&a, sizeof a), EADDRINUSE);
	close(s2);
	close(s);

	int u = socket(AF_INET, SOCK_DGRAM, 0);
	CHECK_ERR("listen.udp", listen(u, 1), EOPNOTSUPP);
	close(u);

	/* SO_REUSEADDR lets a second listener take the port of a closed one
	 * whose connection is in TIME_WAIT. */
	s = socket(AF_INET, SOCK_STREAM, 0);
	v = 1;
	CHECK_SYS("so_reuseaddr.set", setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &v, sizeof v));
	v = 0;
	vl = sizeof v;
	CHECK_SYS("so_reuseaddr.get", getsockopt(s, SOL_SOCKET, SO_REUSEADDR, &v, &vl));
	CHECK_EQ("so_reuseaddr.value", v, 1);
	v = 1;
	CHECK_SYS("so_keepalive.set", setsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof v));
	/* Nagle's algorithm is on until a program turns it off */
	v = -1;
	vl = sizeof v;
	CHECK_SYS("tcp_nodelay.default", getsockopt(s, IPPROTO_TCP, TCP_NODELAY, &v, &vl));
	CHECK_EQ("tcp_nodelay.default_value", v, 0);
	v = 1;
	CHECK_SYS("tcp_nodelay.set", setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &v, sizeof v));
	v = 0;
	vl = sizeof v;
	CHECK_SYS("tcp_nodelay.get", getsockopt(s, IPPROTO_TCP, TCP_NODELAY, &v, &vl));
	CHECK_EQ("tcp_nodelay.value", v, 1);
	v = 0;
	CHECK_SYS("tcp_nodelay.clear", setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &v, sizeof v));
	v = -1;
	vl = sizeof v;
	CHECK("tcp_nodelay.cleared", getsockopt(s, IPPROTO_TCP, TCP_NODELAY, &v, &vl) == 0 && v == 0);
	close(s);

	/* a connection accepted from a listener with TCP_NODELAY set has it
	 * set too: the child socket is a copy of the listener's */
	struct sockaddr_in la;
	int l = listener4(&la);
	v = 1;
	CHECK_SYS("tcp_nodelay.listener", setsockopt(l, IPPROTO_TCP, TCP_NODELAY, &v, sizeof v));
	v = 1;
	CHECK_SYS("so_keepalive.listener", setsockopt(l, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof v));
	struct timeval tv = {.tv_sec = 7};
	CHECK_SYS("so_rcvtimeo.listener", setsockopt(l, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
	int cl = connect4(&la);
	int ac = accept(l, NULL, NULL);
	v = -1;
	vl = sizeof v;
	CHECK("tcp_nodelay.inherited", ac >= 0 && getsockopt(ac, IPPROTO_TCP, TCP_NODELAY, &v, &vl) == 0 && v == 1);
	v = -1;
	vl = sizeof v;
	CHECK("so_keepalive.inherited", getsockopt(ac, SOL_SOCKET, SO_KEEPALIVE, &v, &vl) == 0 && v == 1);
	tv = (struct timeval){0};
	vl = sizeof tv;
	CHECK("so_rcvtimeo.inherited", getsockopt(ac, SOL_SOCKET, SO_RCVTIMEO, &tv, &vl) == 0 && tv.tv_sec == 7);
	v = -1;
	vl = sizeof v;
	CHECK("so_keepalive.not_on_client", getsockopt(cl, SOL_SOCKET, SO_KEEPALIVE, &v, &vl) == 0 && v == 0);
	close(ac);
	close(cl);
	close(l);
}

static void test_stream(void)
{
	struct sockaddr_in la;
	int l = listener4(&la);
	CHECK_SYS("listen", l);
	int v = 0;
	socklen_t vl = sizeof v;
	CHECK_SYS("so_acceptconn", getsockopt(l, SOL_SOCKET, SO_ACCEPTCONN, &v, &vl));
	CHECK_EQ("so_acceptconn.value", v, 1);
	struct pollfd p = {.fd = l, .events = POLLIN};
	CHECK_EQ("poll.listener_idle", poll(&p, 1, 0), 0);
	int c = connect4(&la);
	CHECK_SYS("connect", c);
	CHECK_EQ("poll.listener_pending", poll(&p, 1, 5000), 1);
	CHECK("poll.listener_pollin", p.revents & POLLIN);
	struct sockaddr_in pa;
	socklen_t pl = sizeof pa;
	int a = accept(l, (void *)&pa, &pl);
	CHECK_SYS("accept", a);
	CHECK_EQ("accept.addrlen", pl, sizeof(struct sockaddr_in));
	struct sockaddr_in ca;
	socklen_t cl = sizeof ca;
	CHECK_SYS("client.getsockname", getsockname(c, (void *)&ca, &cl));
	CHECK("accept.peer_is_client", pa.sin_port == ca.sin_port && pa.sin_addr.s_addr == ca.sin_addr.s_addr);
	cl = sizeof ca;
	CHECK_SYS("client.getpeername", getpeername(c, (void *)&ca, &cl));
	CHECK("client.peer_is_server", ca.sin_port == la.sin_port);
	CHECK_ERR("connect.eisconn", connect(c, (void *)&la, sizeof la), EISCONN);
	v = -1;
	vl = sizeof v;
	CHECK("accept.nodelay_default", getsockopt(a, IPPROTO_TCP, TCP_NODELAY, &v, &vl) == 0 && v == 0);
	v = -1;
	vl = sizeof v;
	CHECK("connect.nodelay_default", getsockopt(c, IPPROTO_TCP, TCP_NODELAY, &v, &vl) == 0 && v == 0);

	char buf[4096];
	CHECK_ERR("recv.dontwait_empty", recv(a, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
	p = (struct pollfd){.fd = c, .events = POLLOUT | POLLIN};
	CHECK_EQ("poll.connected_writable", poll(&p, 1, 0), 1);
	CHECK_EQ("poll.connected_revents", p.revents, POLLOUT);
	CHECK_EQ("send", send(c, "hello", 5, 0), 5);
	p = (struct pollfd){.fd = a, .events = POLLIN};
	CHECK_EQ("poll.data", poll(&p, 1, 5000), 1);
	int n = -1;
	CHECK_SYS("fionread", ioctl(a, FIONREAD, &n));
	CHECK_EQ("fionread.value", n, 5);
	CHECK_EQ("recv.peek", recv(a, buf, sizeof buf, MSG_PEEK), 5);
	CHECK_EQ("recv", recv(a, buf, sizeof buf, 0), 5);
	CHECK("recv.data", memcmp(buf, "hello", 5) == 0);

	/* MSG_WAITALL gathers two sends into one receive. */
	CHECK_EQ("waitall.send1", send(c, buf, 1000, 0), 1000);
	CHECK_EQ("waitall.send2", send(c, buf, 1000, 0), 1000);
	CHECK_EQ("recv.waitall", recv(a, buf, 2000, MSG_WAITALL), 2000);

	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.fd = a};
	CHECK_SYS("epoll_ctl", epoll_ctl(ep, EPOLL_CTL_ADD, a, &ev));
	CHECK_EQ("epoll.idle", epoll_wait(ep, &ev, 1, 0), 0);

	/* Half-close: the server sees EOF and can still answer. */
	CHECK_SYS("shutdown.wr", shutdown(c, SHUT_WR));
	CHECK_EQ("epoll.rdhup", epoll_wait(ep, &ev, 1, 5000), 1);
	CHECK_EQ("epoll.rdhup_events", ev.events & (EPOLLIN | EPOLLRDHUP), EPOLLIN | EPOLLRDHUP);
	CHECK_EQ("halfclose.eof", read(a, buf, sizeof buf), 0);
	CHECK_EQ("halfclose.reply", write(a, "back", 4), 4);
	CHECK_EQ("halfclose.reply_read", read(c, buf, sizeof buf), 4);
	CHECK_ERR("send.after_shutdown_nosignal", send(c, "x", 1, MSG_NOSIGNAL), EPIPE);
	signal(SIGPIPE, on_pipe);
	CHECK_ERR("send.after_shutdown_epipe", send(c, "x", 1, 0), EPIPE);
	CHECK_EQ("send.sigpipe", sigpipes, 1);
	signal(SIGPIPE, SIG_DFL);

	struct tcp_info ti;
	socklen_t tl = sizeof ti;
	CHECK_SYS("tcp_info", getsockopt(a, IPPROTO_TCP, TCP_INFO, &ti, &tl));
	CHECK_EQ("tcp_info.state", ti.tcpi_state, TCP_CLOSE_WAIT);
	close(ep);
	close(a);
	close(c);

	/* Connection refused: the listener is gone. */
	close(l);
	c = socket(AF_INET, SOCK_STREAM, 0);
	CHECK_ERR("connect.refused", connect(c, (void *)&la, sizeof la), ECONNREFUSED);
	close(c);
}

static void test_nonblock_connect(void)
{
	struct sockaddr_in la;
	int l = listener4(&la);
	int c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	CHECK_ERR("nbconnect.einprogress", connect(c, (void *)&la, sizeof la), EINPROGRESS);
	struct pollfd p = {.fd = c, .events = POLLOUT};
	CHECK_EQ("nbconnect.poll", poll(&p, 1, 5000), 1);
	int e = -1;
	socklen_t el = sizeof e;
	CHECK_SYS("nbconnect.so_error", getsockopt(c, SOL_SOCKET, SO_ERROR, &e, &el));
	CHECK_EQ("nbconnect.so_error_value", e, 0);
	int a = accept(l, NULL, NULL);
	CHECK_SYS("nbconnect.accept", a);
	close(a);
	close(c);
	close(l);

	c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	int r = connect(c, (void *)&la, sizeof la);
	CHECK("nbconnect.refused_start", r == -1 && (errno == EINPROGRESS || errno == ECONNREFUSED));
	if (r == -1 && errno == EINPROGRESS) {
		p = (struct pollfd){.fd = c, .events = POLLOUT};
		poll(&p, 1, 5000);
		el = sizeof e;
		getsockopt(c, SOL_SOCKET, SO_ERROR, &e, &el);
		CHECK_EQ("nbconnect.refused_so_error", e, ECONNREFUSED);
	}
	close(c);
}

/* 4 MiB each way between two processes, one direction after the other:
 * the parent sends and half-closes, the child reads to EOF, then sends
 * its 4 MiB back. test_transfer_both sends both ways at once. */
static void test_transfer(void)
{
	const size_t n = 4 << 20;
	struct sockaddr_in la;
	int l = listener4(&la);
	int fds[2];
	if (pipe(fds) < 0)
		return;
	/* Diagnosis of a stall: after 25 s, the kernel's goroutine stacks
	 * (Shortbread only). */
	pid_t wd = fork();
	if (wd == 0) {
		sleep(25);
		char b[4096];
		int f = open("/proc/shortbread/goroutines", O_RDONLY);
		if (f < 0)
			_exit(0);
		printf("# transfer stalled; goroutines:\n");
		fflush(stdout);
		ssize_t k;
		while ((k = read(f, b, sizeof b)) > 0)
			write(1, b, k);
		_exit(0);
	}
	pid_t pid = fork();
	if (pid == 0) {
		int c = connect4(&la);
		if (c < 0)
			_exit(1);
		size_t got;
		unsigned long h = recv_all(c, &got);
		unsigned long sent = send_pattern(c, n);
		shutdown(c, SHUT_WR);
		write(fds[1], &h, sizeof h);
		write(fds[1], &got, sizeof got);
		write(fds[1], &sent, sizeof sent);
		_exit(0);
	}
	int a = accept(l, NULL, NULL);
	CHECK_SYS("transfer.accept", a);
	size_t got;
	unsigned long sent = send_pattern(a, n);
	CHECK_SYS("transfer.shutdown", shutdown(a, SHUT_WR));
	unsigned long h = recv_all(a, &got);
	CHECK_EQ("transfer.to_server_bytes", got, n);
	unsigned long child_h = 0, child_sent = 0;
	size_t child_got = 0;
	read(fds[0], &child_h, sizeof child_h);
	read(fds[0], &child_got, sizeof child_got);
	read(fds[0], &child_sent, sizeof child_sent);
	int st;
	waitpid(pid, &st, 0);
	CHECK_EQ("transfer.to_client_bytes", child_got, n);
	CHECK("transfer.to_client_hash", sent == child_h);
	CHECK("transfer.to_server_hash", h == child_sent);
	kill(wd, SIGKILL);
	waitpid(wd, NULL, 0);
	close(a);
	close(l);
	close(fds[0]);
	close(fds[1]);
}

/* Both directions at once, five rounds of 4 MiB each way: the parent
 * writes everything before it reads, so its receive buffer fills and its
 * window closes while the child, reading and writing in two processes,
 * keeps sending into it. The parent's writes finish only if it takes the
 * child's ACKs whose sequence number is at the window edge it last
 * offered (netstack once dropped them once the window rounded to zero
 * under window scaling, and both directions stalled:
 * netstack-patches/tcp-acceptable-edge.diff). A stall fails the checks
 * after 20 s by the parent's socket timeouts. */
static void test_transfer_both(void)
{
	const size_t n = 4 << 20;
	const int rounds = 5;
	struct sockaddr_in la;
	int l = listener4(&la);
	int ok = 0;
	for (int r = 0; r < rounds; r++) {
		int fds[2];
		if (pipe(fds) < 0)
			return;
		pid_t pid = fork();
		if (pid == 0) {
			int c = connect4(&la);
			if (c < 0)
				_exit(1);
			pid_t w = fork();
			if (w == 0) {
				unsigned long sent = send_pattern(c, n);
				shutdown(c, SHUT_WR);
				write(fds[1], &sent, sizeof sent);
				_exit(0);
			}
			size_t got;
			unsigned long h = recv_all(c, &got);
			waitpid(w, NULL, 0);
			write(fds[1], &h, sizeof h);
			write(fds[1], &got, sizeof got);
			_exit(0);
		}
		int a = accept(l, NULL, NULL);
		struct timeval tv = {.tv_sec = 20};
		setsockopt(a, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		setsockopt(a, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		unsigned long sent = send_pattern(a, n);
		shutdown(a, SHUT_WR);
		size_t got;
		unsigned long h = recv_all(a, &got);
		unsigned long child_sent = 0, child_h = 0;
		size_t child_got = 0;
		read(fds[0], &child_sent, sizeof child_sent);
		read(fds[0], &child_h, sizeof child_h);
		read(fds[0], &child_got, sizeof child_got);
		waitpid(pid, NULL, 0);
		if (sent != 0 && got == n && child_got == n && h == child_sent && child_h == sent)
			ok++;
		else
			printf("# both ways round %d: sent %s, got %zu of %zu, child got %zu\n",
			       r, sent ? "all" : "short", got, n, child_got);
		close(a);
		close(fds[0]);
		close(fds[1]);
	}
	CHECK_EQ("transfer.both_ways_rounds", ok, rounds);
	close(l);
}

static void test_udp(void)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0), r = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in ra = lo4(0), sa = lo4(0), from;
	socklen_t len = sizeof ra;
	CHECK_SYS("udp.bind", bind(r, (void *)&ra, sizeof ra));
	getsockname(r, (void *)&ra, &len);
	CHECK_EQ("udp.sendto", sendto(s, "datagram", 8, 0, (void *)&ra, sizeof ra), 8);
	char buf[64];
	len = sizeof from;
	CHECK_EQ("udp.recvfrom", recvfrom(r, buf, sizeof buf, 0, (void *)&from, &len), 8);
	CHECK_EQ("udp.from_len", len, sizeof from);
	len = sizeof sa;
	getsockname(s, (void *)&sa, &len);
	CHECK("udp.from_addr", from.sin_port == sa.sin_port && from.sin_addr.s_addr == htonl(INADDR_LOOPBACK));
	CHECK_SYS("udp.connect", connect(s, (void *)&ra, sizeof ra));
	CHECK_EQ("udp.send_connected", send(s, "0123456789", 10, 0), 10);
	CHECK_EQ("udp.msg_trunc", recv(r, buf, 4, MSG_TRUNC), 10);
	CHECK_EQ("udp.send_again", send(s, "0123456789", 10, 0), 10);
	struct iovec iov = {buf, 4};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	CHECK_EQ("udp.recvmsg_trunc", recvmsg(r, &m, 0), 4);
	CHECK("udp.recvmsg_flags", m.msg_flags & MSG_TRUNC);
	CHECK_ERR("udp.dontwait_empty", recv(r, buf, sizeof buf, MSG_DONTWAIT), EAGAIN);
	close(s);
	close(r);
}

static void test_inet6(void)
{
	int l = socket(AF_INET6, SOCK_STREAM, 0);
	CHECK_SYS("inet6.socket", l);
	int v = -1;
	socklen_t vl = sizeof v;
	CHECK_SYS("ipv6_v6only.get", getsockopt(l, IPPROTO_IPV6, IPV6_V6ONLY, &v, &vl));
	CHECK_EQ("ipv6_v6only.default", v, 0);
	struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	CHECK_ERR("inet6.bind_short", bind(l, (void *)&a, 20), EINVAL);
	CHECK_SYS("inet6.bind", bind(l, (void *)&a, sizeof a));
	socklen_t len = sizeof a;
	CHECK_SYS("inet6.getsockname", getsockname(l, (void *)&a, &len));
	CHECK_EQ("inet6.getsockname_len", len, sizeof(struct sockaddr_in6));
	CHECK_SYS("inet6.listen", listen(l, 4));
	int c = socket(AF_INET6, SOCK_STREAM, 0);
	CHECK_SYS("inet6.connect", connect(c, (void *)&a, sizeof a));
	int s = accept(l, NULL, NULL);
	CHECK_SYS("inet6.accept", s);
	char buf[8];
	CHECK_EQ("inet6.send", send(c, "six", 3, 0), 3);
	CHECK_EQ("inet6.recv", recv(s, buf, sizeof buf, 0), 3);
	close(s);
	close(c);
	close(l);
}

static void ifreq_lo(struct ifreq *r)
{
	memset(r, 0, sizeof *r);
	strcpy(r->ifr_name, "lo");
}

/* what nobody may do to an interface: read it, not change it */
static void if_unprivileged(int out)
{
	struct ifreq r;
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	ifreq_lo(&r);
	put(out, rc(ioctl(s, SIOCGIFFLAGS, &r)));
	put(out, rc(ioctl(s, SIOCSIFFLAGS, &r)));
	ifreq_lo(&r);
	r.ifr_mtu = 1500;
	put(out, rc(ioctl(s, SIOCSIFMTU, &r)));
	close(s);
}

/* The interface ioctls ifconfig and busybox ip use, on lo (up by now). */
static void test_ifioctl(void)
{
	struct ifreq r;
	int s = socket(AF_INET, SOCK_DGRAM, 0), u = socket(AF_UNIX, SOCK_STREAM, 0);
	ifreq_lo(&r);
	CHECK_SYS("ifflags", ioctl(s, SIOCGIFFLAGS, &r));
	CHECK_EQ("ifflags.lo", r.ifr_flags & (IFF_UP | IFF_LOOPBACK | IFF_RUNNING), IFF_UP | IFF_LOOPBACK | IFF_RUNNING);
	ifreq_lo(&r);
	CHECK_SYS("ifflags.unix_socket", ioctl(u, SIOCGIFFLAGS, &r));
	ifreq_lo(&r);
	CHECK_SYS("ifaddr", ioctl(s, SIOCGIFADDR, &r));
	struct sockaddr_in *in = (struct sockaddr_in *)&r.ifr_addr;
	CHECK_EQ("ifaddr.family", in->sin_family, AF_INET);
	CHECK_EQ("ifaddr.addr", ntohl(in->sin_addr.s_addr), 0x7f000001);
	ifreq_lo(&r);
	CHECK_SYS("ifnetmask", ioctl(s, SIOCGIFNETMASK, &r));
	CHECK_EQ("ifnetmask.mask", ntohl(((struct sockaddr_in *)&r.ifr_netmask)->sin_addr.s_addr), 0xff000000);
	ifreq_lo(&r);
	CHECK_SYS("ifindex", ioctl(s, SIOCGIFINDEX, &r));
	CHECK_EQ("ifindex.lo", r.ifr_ifindex, 1);
	CHECK_EQ("if_nametoindex", if_nametoindex("lo"), 1);
	memset(&r, 0, sizeof r);
	r.ifr_ifindex = 1;
	CHECK_SYS("ifname", ioctl(s, SIOCGIFNAME, &r));
	CHECK("ifname.lo", strcmp(r.ifr_name, "lo") == 0);
	r.ifr_ifindex = 999;
	CHECK_ERR("ifname.unknown_index", ioctl(s, SIOCGIFNAME, &r), ENODEV);
	ifreq_lo(&r);
	CHECK_SYS("ifmtu", ioctl(s, SIOCGIFMTU, &r));
	CHECK_EQ("ifmtu.lo", r.ifr_mtu, 65536);
	ifreq_lo(&r);
	CHECK_SYS("ifhwaddr", ioctl(s, SIOCGIFHWADDR, &r));
	CHECK_EQ("ifhwaddr.loopback", r.ifr_hwaddr.sa_family, 772 /* ARPHRD_LOOPBACK */);
	memset(&r, 0, sizeof r);
	strcpy(r.ifr_name, "nosuch0");
	CHECK_ERR("ifflags.unknown_name", ioctl(s, SIOCGIFFLAGS, &r), ENODEV);
	CHECK_ERR("ifaddr.efault", ioctl(s, SIOCGIFADDR, (void *)8), EFAULT);

	/* SIOCGIFCONF: a NULL buffer asks for the size; lo is listed */
	struct ifconf ic = {.ifc_len = 0, .ifc_buf = NULL};
	CHECK_SYS("ifconf.size", ioctl(s, SIOCGIFCONF, &ic));
	CHECK("ifconf.size_whole_ifreqs", ic.ifc_len >= (int)sizeof r && ic.ifc_len % (int)sizeof r == 0);
	struct ifreq list[8];
	ic.ifc_len = sizeof list;
	ic.ifc_req = list;
	CHECK_SYS("ifconf", ioctl(s, SIOCGIFCONF, &ic));
	int found = 0;
	for (int i = 0; i < ic.ifc_len / (int)sizeof r; i++)
		if (strcmp(list[i].ifr_name, "lo") == 0 &&
		    ntohl(((struct sockaddr_in *)&list[i].ifr_addr)->sin_addr.s_addr) == 0x7f000001)
			found = 1;
	CHECK("ifconf.lo", found);
	ic.ifc_len = sizeof r - 1; /* room for no whole ifreq */
	CHECK_SYS("ifconf.short", ioctl(s, SIOCGIFCONF, &ic));
	CHECK_EQ("ifconf.short_len", ic.ifc_len, 0);

	/* down and up again, as ifconfig lo down/up does */
	ifreq_lo(&r);
	ioctl(s, SIOCGIFFLAGS, &r);
	r.ifr_flags &= ~IFF_UP;
	CHECK_SYS("ifflags.down", ioctl(s, SIOCSIFFLAGS, &r));
	ifreq_lo(&r);
	ioctl(s, SIOCGIFFLAGS, &r);
	CHECK_EQ("ifflags.down_read_back", r.ifr_flags & (IFF_UP | IFF_RUNNING), 0);
	r.ifr_flags |= IFF_UP;
	CHECK_SYS("ifflags.up", ioctl(s, SIOCSIFFLAGS, &r));
	ifreq_lo(&r);
	ioctl(s, SIOCGIFFLAGS, &r);
	CHECK_EQ("ifflags.up_read_back", r.ifr_flags & (IFF_UP | IFF_RUNNING), IFF_UP | IFF_RUNNING);

	/* MTU round trip, as root */
	ifreq_lo(&r);
	r.ifr_mtu = 16384;
	CHECK_SYS("ifmtu.set", ioctl(s, SIOCSIFMTU, &r));
	ifreq_lo(&r);
	ioctl(s, SIOCGIFMTU, &r);
	CHECK_EQ("ifmtu.set_read_back", r.ifr_mtu, 16384);
	ifreq_lo(&r);
	r.ifr_mtu = 65536;
	CHECK_SYS("ifmtu.restore", ioctl(s, SIOCSIFMTU, &r));

	int res[3];
	CHECK_EQ("ifioctl.nobody_probe", probe(if_unprivileged, 1, res, 3), 3);
	CHECK_EQ("ifflags.nobody_reads", res[0], 0);
	CHECK_EQ("ifflags.nobody_set_eperm", res[1], EPERM);
	CHECK_EQ("ifmtu.nobody_set_eperm", res[2], EPERM);
	close(s);
	close(u);
}

/* finds the line of /proc/net/FILE whose local address is want (as the
 * file prints it, "0100007F:1F90") and copies it to line */
static int procnet_line(const char *file, const char *want, char *line, size_t n)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/net/%s", file);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	int found = 0;
	char l[512], local[64];
	while (!found && fgets(l, sizeof l, f))
		if (sscanf(l, " %*d: %63s", local) == 1 && strcmp(local, want) == 0) {
			snprintf(line, n, "%s", l);
			found = 1;
		}
	fclose(f);
	return found;
}

/* finds the state and inode of the /proc/net/FILE line with local
 * address local and remote address remote; 0 when there is none */
static int procnet_pair(const char *file, const char *local, const char *remote, unsigned *state, unsigned long *ino)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/net/%s", file);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	int found = 0;
	char l[512], lo[64], re[64];
	while (!found && fgets(l, sizeof l, f))
		if (sscanf(l, " %*d: %63s %63s %x %*s %*s %*s %*u %*d %lu", lo, re, state, ino) == 4 &&
		    strcmp(lo, local) == 0 && strcmp(re, remote) == 0)
			found = 1;
	fclose(f);
	return found;
}

/* procnet_port_rows counts the rows of /proc/net/FILE with port as their
 * local or remote port in any state but TIME_WAIT. */
static int procnet_port_rows(const char *file, int port)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/net/%s", file);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int n = 0;
	char l[512], lo[64], re[64];
	unsigned st;
	while (fgets(l, sizeof l, f))
		if (sscanf(l, " %*d: %63s %63s %x", lo, re, &st) == 3 && st != 6 &&
		    (strtol(strrchr(lo, ':') + 1, NULL, 16) == port || strtol(strrchr(re, ':') + 1, NULL, 16) == port))
			n++;
	fclose(f);
	return n;
}

/* 1,000 connections from four processes at once over IPv4 and over IPv6
 * (sock.h's connection_storm), with nothing left behind: no descriptor,
 * and once the last ACKs are in, no row of the listener's port in
 * /proc/net/tcp or tcp6 but TIME_WAIT ones. */
static void test_storm(void)
{
	for (int v6 = 0; v6 <= 1; v6++) {
		const char *prefix = v6 ? "storm6" : "storm4";
		struct sockaddr_storage a = {0};
		socklen_t len = v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
		a.ss_family = v6 ? AF_INET6 : AF_INET;
		if (v6)
			((struct sockaddr_in6 *)&a)->sin6_addr = in6addr_loopback;
		else
			((struct sockaddr_in *)&a)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		int l = socket(a.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0);
		char name[64];
		snprintf(name, sizeof name, "%s.bind", prefix);
		if (!CHECK_SYS(name, bind(l, (void *)&a, len)) || getsockname(l, (void *)&a, &len) != 0)
			continue;
		int port = ntohs(v6 ? ((struct sockaddr_in6 *)&a)->sin6_port : ((struct sockaddr_in *)&a)->sin_port);
		connection_storm(prefix, a.ss_family, (void *)&a, len, l);
		close(l);
		int left = -1;
		for (int i = 0; i < 1000 && left != 0; i++) {
			left = procnet_port_rows(v6 ? "tcp6" : "tcp", port);
			if (left != 0)
				usleep(10000);
		}
		snprintf(name, sizeof name, "%s.procnet_only_time_wait", prefix);
		CHECK_EQ(name, left, 0);
	}
}

/* /proc/net/tcp and udp: what netstat and ss read */
static void test_procnet(void)
{
	struct sockaddr_in la;
	int l = listener4(&la);
	struct stat st;
	fstat(l, &st);
	char want[64], line[512];
	snprintf(want, sizeof want, "0100007F:%04X", ntohs(la.sin_port));
	CHECK("procnet.tcp_listener", procnet_line("tcp", want, line, sizeof line));
	unsigned state = 0, uid = 99;
	unsigned long ino = 0;
	char rem[64];
	sscanf(line, " %*d: %*s %63s %x %*s %*s %*s %u %*d %lu", rem, &state, &uid, &ino);
	CHECK("procnet.tcp_listener_remote", strcmp(rem, "00000000:0000") == 0);
	CHECK_EQ("procnet.tcp_listener_state", state, 0x0A);
	CHECK_EQ("procnet.tcp_listener_uid", uid, 0);
	CHECK_EQ("procnet.tcp_listener_inode", ino, st.st_ino);
	int c = connect4(&la);
	int a = accept(l, NULL, NULL);
	struct sockaddr_in ca;
	socklen_t len = sizeof ca;
	getsockname(c, (void *)&ca, &len);
	snprintf(want, sizeof want, "0100007F:%04X", ntohs(ca.sin_port));
	CHECK("procnet.tcp_client", procnet_line("tcp", want, line, sizeof line));
	sscanf(line, " %*d: %*s %63s %x", rem, &state);
	char peer[32];
	snprintf(peer, sizeof peer, "0100007F:%04X", ntohs(la.sin_port));
	CHECK("procnet.tcp_client_remote", strcmp(rem, peer) == 0);
	CHECK_EQ("procnet.tcp_client_state", state, 1);
	/* The side that closes first ends in TIME_WAIT, listed with no
	 * owner (inode 0) once its socket is gone. */
	close(a);
	char b;
	CHECK_EQ("procnet.peer_sees_eof", read(c, &b, 1), 0);
	close(c);
	unsigned long tw_ino = 99;
	unsigned tw_state = 0;
	int tw = 0;
	/* Up to 10 s: the closing end is FIN_WAIT2 (5) until the peer's FIN
	 * is through, which a 2-CPU Linux guest on a loaded 2-core TCG host
	 * once took more than the 1 s this waited before */
	for (int i = 0; i < 1000 && !(tw && tw_state == 6); i++) {
		tw = procnet_pair("tcp", peer, want, &tw_state, &tw_ino);
		if (!(tw && tw_state == 6))
			usleep(10000);
	}
	CHECK("procnet.time_wait_listed", tw);
	CHECK_EQ("procnet.time_wait_state", tw_state, 6);
	CHECK_EQ("procnet.time_wait_no_inode", tw_ino, 0);
	close(l);
	/* the accepted end may linger in TIME_WAIT on the same local port
	 * (Linux lists it); the listener itself is gone */
	snprintf(want, sizeof want, "0100007F:%04X", ntohs(la.sin_port));
	state = 0;
	if (procnet_line("tcp", want, line, sizeof line))
		sscanf(line, " %*d: %*s %*s %x", &state);
	CHECK("procnet.tcp_closed_listener_gone", state != 0x0A);

	int u = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in ua = lo4(0);
	len = sizeof ua;
	bind(u, (void *)&ua, sizeof ua);
	getsockname(u, (void *)&ua, &len);
	snprintf(want, sizeof want, "0100007F:%04X", ntohs(ua.sin_port));
	CHECK("procnet.udp_bound", procnet_line("udp", want, line, sizeof line));
	sscanf(line, " %*d: %*s %*s %x", &state);
	CHECK_EQ("procnet.udp_state", state, 7);
	close(u);

	int s6 = socket(AF_INET6, SOCK_STREAM, 0);
	struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
	len = sizeof a6;
	bind(s6, (void *)&a6, sizeof a6);
	listen(s6, 1);
	getsockname(s6, (void *)&a6, &len);
	snprintf(want, sizeof want, "00000000000000000000000001000000:%04X", ntohs(a6.sin6_port));
	CHECK("procnet.tcp6_listener", procnet_line("tcp6", want, line, sizeof line));
	close(s6);
}

/* The /proc/net/route line for destination dst (hex, as printed), its
 * fields decoded; 0 when none. */
static int route_line(const char *dst, char *iface, unsigned *gw, unsigned *flags, unsigned *mask)
{
	FILE *f = fopen("/proc/net/route", "r");
	char line[256], d[16];
	int found = 0;
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof line, f))
		found = sscanf(line, "%15s %15s %x %x %*d %*d %*d %x", iface, d, gw, flags, mask) == 5 &&
		        strcmp(d, dst) == 0;
	fclose(f);
	return found;
}

static struct rtentry rt4(const char *dst, const char *gw, const char *mask, int flags, char *dev)
{
	struct rtentry rt = {.rt_flags = flags, .rt_dev = dev};
	struct sockaddr_in *d = (void *)&rt.rt_dst, *g = (void *)&rt.rt_gateway, *m = (void *)&rt.rt_genmask;
	d->sin_family = AF_INET;
	inet_pton(AF_INET, dst, &d->sin_addr);
	if (gw) {
		g->sin_family = AF_INET;
		inet_pton(AF_INET, gw, &g->sin_addr);
	}
	if (mask) {
		m->sin_family = AF_INET;
		inet_pton(AF_INET, mask, &m->sin_addr);
	}
	return rt;
}

/* The routing ioctls busybox route uses (SIOCADDRT, SIOCDELRT with
 * struct rtentry) and /proc/net/route, which it lists: routes through lo,
 * so that a guest without a card has an interface to route through. */
static void test_route(void)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	char lo[] = "lo", eth9[] = "eth9", iface[16];
	unsigned gw, flags, mask;
	struct rtentry net = rt4("10.99.0.0", NULL, "255.255.0.0", RTF_UP, lo);
	CHECK_SYS("route.add_net", ioctl(s, SIOCADDRT, &net));
	CHECK("route.net_listed", route_line("0000630A", iface, &gw, &flags, &mask));
	CHECK_STR("route.net_iface", iface, "lo");
	CHECK_EQ("route.net_gateway", gw, 0);
	CHECK_EQ("route.net_flags", flags, RTF_UP);
	CHECK_EQ("route.net_mask", mask, 0x0000FFFF);
	CHECK_ERR("route.add_twice", ioctl(s, SIOCADDRT, &net), EEXIST);
	struct rtentry host = rt4("10.97.1.2", NULL, NULL, RTF_UP | RTF_HOST, lo);
	CHECK_SYS("route.add_host", ioctl(s, SIOCADDRT, &host));
	CHECK("route.host_listed", route_line("0201610A", iface, &gw, &flags, &mask));
	CHECK_EQ("route.host_flags", flags, RTF_UP | RTF_HOST);
	CHECK_EQ("route.host_mask", mask, 0xFFFFFFFF);
	struct rtentry via = rt4("10.98.0.0", "127.0.0.2", "255.255.0.0", RTF_UP | RTF_GATEWAY, NULL);
	CHECK_SYS("route.add_via", ioctl(s, SIOCADDRT, &via));
	CHECK("route.via_listed", route_line("0000620A", iface, &gw, &flags, &mask));
	CHECK_STR("route.via_iface", iface, "lo");
	CHECK_EQ("route.via_gateway", gw, 0x0200007F);
	CHECK_EQ("route.via_flags", flags, RTF_UP | RTF_GATEWAY);
	CHECK_SYS("route.del_net", ioctl(s, SIOCDELRT, &net));
	CHECK_SYS("route.del_host", ioctl(s, SIOCDELRT, &host));
	CHECK_SYS("route.del_via", ioctl(s, SIOCDELRT, &via));
	CHECK("route.net_gone", !route_line("0000630A", iface, &gw, &flags, &mask));
	CHECK_ERR("route.del_twice", ioctl(s, SIOCDELRT, &net), ESRCH);

	struct rtentry holes = rt4("10.99.1.0", NULL, "255.255.0.0", RTF_UP, lo);
	CHECK_ERR("route.host_bits", ioctl(s, SIOCADDRT, &holes), EINVAL);
	struct rtentry nogw = rt4("10.99.0.0", NULL, "255.255.0.0", RTF_UP | RTF_GATEWAY, lo);
	CHECK_ERR("route.gateway_flag_alone", ioctl(s, SIOCADDRT, &nogw), EINVAL);
	struct rtentry nodev = rt4("10.99.0.0", NULL, "255.255.0.0", RTF_UP, eth9);
	CHECK_ERR("route.no_such_device", ioctl(s, SIOCADDRT, &nodev), ENODEV);
	struct rtentry v6 = net;
	v6.rt_dst.sa_family = AF_INET6;
	CHECK_ERR("route.not_inet", ioctl(s, SIOCADDRT, &v6), EAFNOSUPPORT);
	CHECK_ERR("route.bad_pointer", ioctl(s, SIOCADDRT, (void *)16), EFAULT);
	pid_t pid = fork();
	if (pid == 0) {
		if (setuid(65534) < 0)
			_exit(2);
		_exit(ioctl(s, SIOCADDRT, &net) < 0 && errno == EPERM ? 0 : 1);
	}
	int st = -1;
	waitpid(pid, &st, 0);
	CHECK("route.unprivileged_eperm", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(s);

	/* busybox route itself: add, list, delete */
	CHECK_EQ("route.busybox_add", system("route add -net 10.96.0.0 netmask 255.255.0.0 dev lo"), 0);
	FILE *p = popen("route -n", "r");
	char line[256];
	int listed = 0;
	while (p && fgets(line, sizeof line, p))
		listed |= strncmp(line, "10.96.0.0 ", 10) == 0 && strstr(line, "255.255.0.0") && strstr(line, " lo");
	if (p)
		pclose(p);
	CHECK("route.busybox_lists", listed);
	CHECK_EQ("route.busybox_del", system("route del -net 10.96.0.0 netmask 255.255.0.0 dev lo"), 0);
}

/* linux/sockios.h's names, which musl leaves out */
#ifndef SIOCINQ
#define SIOCINQ FIONREAD
#endif
#ifndef SIOCOUTQ
#define SIOCOUTQ TIOCOUTQ
#endif

static int ioq(int fd, unsigned long cmd)
{
	int v = -1;
	return ioctl(fd, cmd, &v) < 0 ? -1 : v;
}

/* SIOCINQ and SIOCOUTQ on TCP, as Linux's tcp_ioctl answers them, and
 * /proc/net/tcp's tx_queue and rx_queue, which are the same counts:
 * EINVAL on a listening socket; on a connection, INQ is what the reader
 * can read and OUTQ what the writer wrote that is not yet acknowledged
 * (sent or not). With the reader not reading, the writer fills the
 * reader's buffer and then its own: once the ACKs are through, what the
 * writer still holds and what the reader holds add up to every byte
 * written, and both are zero again when the reader has read it all. */
static void test_queues(void)
{
	struct sockaddr_in la;
	int l = listener4(&la);
	int v;
	CHECK_ERR("queues.listen_inq", ioctl(l, SIOCINQ, &v), EINVAL);
	CHECK_ERR("queues.listen_outq", ioctl(l, SIOCOUTQ, &v), EINVAL);
	int c = connect4(&la);
	int a = accept(l, NULL, NULL);
	CHECK_SYS("queues.accept", a);
	if (c < 0 || a < 0)
		return;
	fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK);
	static unsigned char buf[65536];
	long written = 0;
	for (int i = 0; written < (64L << 20); i++) {
		ssize_t w = write(c, buf, sizeof buf);
		if (w < 0) {
			/* full, unless the stack still moves data: try again a
			 * few times before taking it as full */
			if (errno != EAGAIN || i > 1000)
				break;
			usleep(2000);
			struct pollfd pf = {.fd = c, .events = POLLOUT};
			if (poll(&pf, 1, 50) == 0)
				break;
			continue;
		}
		written += w;
	}
	CHECK("queues.filled", written > 0 && written < (64L << 20));
	int out = -1, in = -1;
	for (int i = 0; i < 500; i++) {
		out = ioq(c, SIOCOUTQ);
		in = ioq(a, SIOCINQ);
		if (out >= 0 && in >= 0 && out + (long)in == written)
			break;
		usleep(10000);
	}
	printf("# queues: %ld written, %d in the writer, %d in the reader\n", written, out, in);
	CHECK("queues.outq_holds_unacked", out > 0);
	CHECK("queues.inq_holds_unread", in > 0);
	CHECK_EQ("queues.outq_plus_inq", out + (long)in, written);
	/* /proc/net/tcp: the writer's tx_queue is the same count */
	struct sockaddr_in ca;
	socklen_t len = sizeof ca;
	getsockname(c, (void *)&ca, &len);
	char want[64], line[512];
	snprintf(want, sizeof want, "0100007F:%04X", ntohs(ca.sin_port));
	unsigned txq = 0, rxq = 0;
	if (procnet_line("tcp", want, line, sizeof line))
		sscanf(line, " %*d: %*s %*s %*x %x:%x", &txq, &rxq);
	CHECK_EQ("queues.procnet_tx_queue", txq, out);
	long got = 0;
	for (int i = 0; got < written && i < 100000; i++) {
		ssize_t r = read(a, buf, sizeof buf);
		if (r <= 0)
			break;
		got += r;
	}
	CHECK_EQ("queues.read_all", got, written);
	for (int i = 0; i < 500 && (out = ioq(c, SIOCOUTQ)) != 0; i++)
		usleep(10000);
	CHECK_EQ("queues.outq_drained", out, 0);
	CHECK_EQ("queues.inq_drained", ioq(a, SIOCINQ), 0);
	close(c);
	close(a);
	close(l);
}

static int sockopt_int(int fd, int name)
{
	int v = -1;
	socklen_t len = sizeof v;
	getsockopt(fd, SOL_SOCKET, name, &v, &len);
	return v;
}

/* n bytes one way from a child to the parent, checked by hash; the
 * sender's SO_SNDBUF and the receiver's SO_RCVBUF are set when nonzero.
 * Checks are named PREFIX.bytes and PREFIX.hash. */
static void one_way(const char *prefix, size_t n, int sndbuf, int rcvbuf)
{
	struct sockaddr_in la;
	int l = listener4(&la);
	int fds[2];
	if (l < 0 || pipe(fds) < 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		int c = socket(AF_INET, SOCK_STREAM, 0);
		if (sndbuf)
			setsockopt(c, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
		unsigned long h = connect(c, (void *)&la, sizeof la) < 0 ? 0 : send_pattern(c, n);
		write(fds[1], &h, sizeof h);
		_exit(0);
	}
	int a = accept(l, NULL, NULL);
	char name[64];
	snprintf(name, sizeof name, "%s.accept", prefix);
	CHECK_SYS(name, a);
	if (rcvbuf) {
		snprintf(name, sizeof name, "%s.set_rcvbuf", prefix);
		CHECK_SYS(name, setsockopt(a, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf));
	}
	size_t got;
	unsigned long h = recv_all(a, &got), sent = 0;
	read(fds[0], &sent, sizeof sent);
	waitpid(pid, NULL, 0);
	snprintf(name, sizeof name, "%s.bytes", prefix);
	CHECK_EQ(name, got, n);
	snprintf(name, sizeof name, "%s.hash", prefix);
	CHECK(name, sent != 0 && h == sent);
	close(a);
	close(l);
	close(fds[0]);
	close(fds[1]);
}

/* SO_SNDBUF and SO_RCVBUF: TCP's own defaults, doubled when set, and a
 * transfer through small fixed buffers still moves every byte (256 KiB:
 * small windows are slow on Linux under TCG) */
static void test_bufs(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	CHECK_EQ("bufs.tcp_sndbuf_default", sockopt_int(s, SO_SNDBUF), 16384);
	CHECK_EQ("bufs.tcp_rcvbuf_default", sockopt_int(s, SO_RCVBUF), 131072);
	int v = 65536;
	CHECK_SYS("bufs.set_rcvbuf", setsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, sizeof v));
	CHECK_EQ("bufs.rcvbuf_doubled", sockopt_int(s, SO_RCVBUF), 131072);
	close(s);
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	CHECK_EQ("bufs.udp_rcvbuf_default", sockopt_int(u, SO_RCVBUF), 212992);
	close(u);
	one_way("bufs.small", 256 << 10, 16384, 16384);
}

/* Many connections open at once to one listener, each carrying a byte
 * both ways: 1,000 where the descriptor limit allows (two per
 * connection). */
static void test_many(void)
{
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	int n = 1000;
	if ((rlim_t)(2 * n + 64) > rl.rlim_cur)
		n = (int)(rl.rlim_cur - 64) / 2;
	printf("# many: %d connections\n", n);
	struct sockaddr_in la;
	int l = socket(AF_INET, SOCK_STREAM, 0);
	la = lo4(0);
	socklen_t len = sizeof la;
	bind(l, (void *)&la, sizeof la);
	CHECK_SYS("many.listen", listen(l, 4096));
	getsockname(l, (void *)&la, &len);
	int *c = calloc(n, sizeof *c), *a = calloc(n, sizeof *a);
	int connected = 0, echoed = 0;
	for (int i = 0; i < n; i++) {
		c[i] = connect4(&la);
		a[i] = accept(l, NULL, NULL);
		if (c[i] < 0 || a[i] < 0)
			break;
		connected++;
	}
	CHECK_EQ("many.connected", connected, n);
	for (int i = 0; i < connected; i++) {
		char x = (char)i, y = 0, z = 0;
		if (write(c[i], &x, 1) == 1 && read(a[i], &y, 1) == 1 && write(a[i], &y, 1) == 1 &&
		    read(c[i], &z, 1) == 1 && z == x)
			echoed++;
	}
	CHECK_EQ("many.echoed", echoed, n);
	/* every port distinct */
	int distinct = 1;
	unsigned char *seen = calloc(65536, 1);
	for (int i = 0; i < connected; i++) {
		struct sockaddr_in ca;
		len = sizeof ca;
		getsockname(c[i], (void *)&ca, &len);
		if (seen[ntohs(ca.sin_port)]++)
			distinct = 0;
	}
	CHECK("many.distinct_ports", distinct);
	for (int i = 0; i < connected; i++) {
		close(c[i]);
		close(a[i]);
	}
	free(seen);
	free(c);
	free(a);
	close(l);
}

int main(int argc, char **argv)
{
	check_start(argv[0]);
	lo_up();
	test_ifioctl();
	test_procnet();
	test_queues();
	test_route();
	test_basics();
	test_stream();
	test_nonblock_connect();
	test_transfer();
	test_transfer_both();
	test_bufs();
	test_many();
	test_storm();
	test_udp();
	test_inet6();
	return check_done();
}
