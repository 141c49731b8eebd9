/* t_socket: the socket calls and AF_UNIX (stream, datagram, seqpacket):
 * creation and bad input, options, stream/datagram/seqpacket semantics,
 * names, the backlog, readiness, timeouts and signals, the multiple-message
 * calls, /proc/net/unix. Moving data in bulk, descriptor and credential
 * passing are t_socket_data. */
#define _GNU_SOURCE
#include "check.h"
#include "sock.h"

static void test_create_and_bad_input(void)
{
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK("socket.stream", s >= 0);
	struct stat st;
	CHECK("socket.fstat_is_sock", fstat(s, &st) == 0 && S_ISSOCK(st.st_mode));
	int v = -1;
	socklen_t len = sizeof v;
	CHECK("socket.so_type", getsockopt(s, SOL_SOCKET, SO_TYPE, &v, &len) == 0 && v == SOCK_STREAM && len == sizeof v);
	CHECK("socket.so_domain", getsockopt(s, SOL_SOCKET, SO_DOMAIN, &v, &len) == 0 && v == AF_UNIX);
	CHECK("socket.so_error_zero", getsockopt(s, SOL_SOCKET, SO_ERROR, &v, &len) == 0 && v == 0);
	CHECK_EQ("socket.rdwr", fcntl(s, F_GETFL) & O_ACCMODE, O_RDWR);
	CHECK_EQ("socket.no_cloexec", fcntl(s, F_GETFD), 0);
	CHECK_ERR("socket.lseek_espipe", lseek(s, 0, SEEK_CUR), ESPIPE);
	close(s);

	s = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	CHECK("socket.flags_nonblock", s >= 0 && (fcntl(s, F_GETFL) & O_NONBLOCK));
	CHECK_EQ("socket.flags_cloexec", fcntl(s, F_GETFD), FD_CLOEXEC);
	close(s);
	s = socket(AF_UNIX, SOCK_RAW, 0);
	len = sizeof v;
	CHECK("socket.raw_is_dgram", s >= 0 && getsockopt(s, SOL_SOCKET, SO_TYPE, &v, &len) == 0 && v == SOCK_DGRAM);
	close(s);

	CHECK_ERR("socket.bad_family", socket(1000, SOCK_STREAM, 0), EAFNOSUPPORT);
	CHECK_ERR("socket.family_max", socket(46, SOCK_STREAM, 0), EAFNOSUPPORT);
	CHECK_ERR("socket.bad_type", socket(AF_UNIX, 11, 0), EINVAL);
	CHECK_ERR("socket.bad_flags", socket(AF_UNIX, SOCK_STREAM | 0x100000, 0), EINVAL);
	CHECK_ERR("socket.unix_rdm", socket(AF_UNIX, SOCK_RDM, 0), ESOCKTNOSUPPORT);
	CHECK_ERR("socket.unix_type0", socket(AF_UNIX, 0, 0), ESOCKTNOSUPPORT);
	CHECK_ERR("socket.bad_protocol", socket(AF_UNIX, SOCK_STREAM, 99), EPROTONOSUPPORT);
	CHECK_ERR("socketpair.bad_family", socketpair(1000, SOCK_STREAM, 0, (int[2]){ 0 }), EAFNOSUPPORT);
	CHECK_ERR("socketpair.efault", syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, BAD_PTR), EFAULT);

	/* socket calls on a descriptor that is not a socket */
	int p[2];
	pipe(p);
	struct sockaddr_un a;
	socklen_t alen = path_addr(&a, "/tmp/x");
	CHECK_ERR("enotsock.bind", bind(p[0], (struct sockaddr *)&a, alen), ENOTSOCK);
	CHECK_ERR("enotsock.listen", listen(p[0], 1), ENOTSOCK);
	CHECK_ERR("enotsock.accept", accept(p[0], NULL, NULL), ENOTSOCK);
	CHECK_ERR("enotsock.connect", connect(p[0], (struct sockaddr *)&a, alen), ENOTSOCK);
	CHECK_ERR("enotsock.send", send(p[1], "x", 1, 0), ENOTSOCK);
	CHECK_ERR("enotsock.recv", recv(p[0], &v, 1, 0), ENOTSOCK);
	len = sizeof v;
	CHECK_ERR("enotsock.getsockopt", getsockopt(p[0], SOL_SOCKET, SO_TYPE, &v, &len), ENOTSOCK);
	CHECK_ERR("enotsock.shutdown", shutdown(p[0], SHUT_RD), ENOTSOCK);
	alen = sizeof a;
	CHECK_ERR("enotsock.getsockname", getsockname(p[0], (struct sockaddr *)&a, &alen), ENOTSOCK);
	CHECK_ERR("ebadf.bind", bind(-1, (struct sockaddr *)&a, 4), EBADF);
	CHECK_ERR("ebadf.sendmsg", sendmsg(999, &(struct msghdr){ 0 }, 0), EBADF);
	close(p[0]);
	close(p[1]);

	s = socket(AF_UNIX, SOCK_STREAM, 0);
	alen = path_addr(&a, "/tmp/x");
	CHECK_ERR("bind.len_too_short", bind(s, (struct sockaddr *)&a, 1), EINVAL);
	CHECK_ERR("bind.len_over_sockaddr_un", bind(s, (struct sockaddr *)&a, sizeof a + 1), EINVAL);
	CHECK_ERR("bind.len_over_storage", bind(s, (struct sockaddr *)&a, 200), EINVAL);
	CHECK_ERR("bind.len_negative", bind(s, (struct sockaddr *)&a, -1), EINVAL);
	CHECK_ERR("bind.efault", bind(s, BAD_PTR, alen), EFAULT);
	a.sun_family = AF_INET;
	CHECK_ERR("bind.wrong_family", bind(s, (struct sockaddr *)&a, alen), EINVAL);
	CHECK_ERR("connect.len_family_only", connect(s, (struct sockaddr *)&a, 2), EINVAL);
	CHECK_ERR("connect.efault", connect(s, BAD_PTR, alen), EFAULT);
	len = sizeof v;
	CHECK_ERR("getsockopt.efault_len", getsockopt(s, SOL_SOCKET, SO_TYPE, &v, BAD_PTR), EFAULT);
	CHECK_ERR("getsockopt.efault_val", getsockopt(s, SOL_SOCKET, SO_TYPE, BAD_PTR, &len), EFAULT);
	len = (socklen_t)-1;
	CHECK_ERR("getsockopt.negative_len", getsockopt(s, SOL_SOCKET, SO_TYPE, &v, &len), EINVAL);
	len = sizeof v;
	CHECK_ERR("getsockopt.unknown", getsockopt(s, SOL_SOCKET, 9999, &v, &len), ENOPROTOOPT);
	v = 1;
	CHECK_ERR("setsockopt.short", setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &v, 2), EINVAL);
	CHECK_ERR("setsockopt.unknown", setsockopt(s, SOL_SOCKET, 9999, &v, sizeof v), ENOPROTOOPT);
	CHECK_ERR("setsockopt.so_type_readonly", setsockopt(s, SOL_SOCKET, SO_TYPE, &v, sizeof v), ENOPROTOOPT);
	CHECK_SYS("setsockopt.reuseaddr", setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &v, sizeof v));
	v = 0;
	len = sizeof v;
	CHECK("getsockopt.reuseaddr", getsockopt(s, SOL_SOCKET, SO_REUSEADDR, &v, &len) == 0 && v == 1);
	alen = 1000;
	CHECK_ERR("getpeername.unconnected", getpeername(s, (struct sockaddr *)&a, &alen), ENOTCONN);
	CHECK_ERR("listen.unbound", listen(s, 1), EINVAL);
	CHECK_ERR("accept.not_listening", accept(s, NULL, NULL), EINVAL);
	CHECK_ERR("send.not_connected", send(s, "x", 1, 0), ENOTCONN);
	CHECK_ERR("recv.not_connected", recv(s, &v, 1, 0), EINVAL);
	CHECK_ERR("shutdown.bad_how", shutdown(s, 7), EINVAL);
	CHECK_ERR("accept4.bad_flags", accept4(s, NULL, NULL, 0x1234), EINVAL);
	close(s);

	s = socket(AF_UNIX, SOCK_DGRAM, 0);
	CHECK_ERR("listen.dgram", listen(s, 1), EOPNOTSUPP);
	CHECK_ERR("send.dgram_no_destination", send(s, "x", 1, 0), ENOTCONN);
	close(s);
}

static void test_buffer_options(void)
{
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	int v = 8192;
	socklen_t len = sizeof v;
	CHECK_SYS("sockopt.set_sndbuf", setsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, sizeof v));
	CHECK("sockopt.sndbuf_doubled", getsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, &len) == 0 && v == 16384);
	v = 1;
	CHECK_SYS("sockopt.set_rcvbuf_small", setsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, sizeof v));
	CHECK("sockopt.rcvbuf_minimum", getsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, &len) == 0 && v == 2304);
	/* compared as unsigned, -1 asks for the most allowed (the
	 * net.core.wmem_max sysctl), doubled */
	long wmem_max = 0;
	FILE *f = fopen("/proc/sys/net/core/wmem_max", "r");
	CHECK("sockopt.wmem_max_sysctl", f && fscanf(f, "%ld", &wmem_max) == 1 && wmem_max > 0);
	if (f)
		fclose(f);
	v = -1;
	CHECK_SYS("sockopt.set_sndbuf_negative", setsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, sizeof v));
	CHECK("sockopt.sndbuf_negative_max", getsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, &len) == 0 && v == 2 * wmem_max);
	struct timeval tv = { 2, 500000 }, got = { 0 };
	len = sizeof got;
	CHECK_SYS("sockopt.set_rcvtimeo", setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
	CHECK("sockopt.get_rcvtimeo", getsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &got, &len) == 0 && got.tv_sec == 2 && got.tv_usec == 500000 && len == sizeof got);
	tv.tv_usec = 1000000;
	CHECK_ERR("sockopt.rcvtimeo_bad_usec", setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), EDOM);
	CHECK_ERR("sockopt.rcvtimeo_short", setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, 8), EINVAL);
	/* a short length gets the start of the value and the length stored */
	char c = 0x55;
	len = 1;
	CHECK("sockopt.short_get", getsockopt(s, SOL_SOCKET, SO_TYPE, &c, &len) == 0 && len == 1 && c == SOCK_STREAM);
	close(s);
}

static void test_pair_stream(void)
{
	int sv[2];
	CHECK_SYS("pair.stream", socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	CHECK_EQ("pair.poll_fresh", poll1(sv[0], POLLIN | POLLOUT, 0), POLLOUT);
	CHECK_EQ("pair.write", write(sv[0], "hello", 5), 5);
	CHECK_EQ("pair.send", send(sv[0], " world", 6, 0), 6);
	int n = -1;
	CHECK("pair.fionread", ioctl(sv[1], FIONREAD, &n) == 0 && n == 11);
	CHECK_EQ("pair.poll_readable", poll1(sv[1], POLLIN | POLLOUT, 0), POLLIN | POLLOUT);
	char buf[64] = { 0 };
	CHECK_EQ("pair.peek", recv(sv[1], buf, 5, MSG_PEEK), 5);
	CHECK("pair.peek_data", memcmp(buf, "hello", 5) == 0);
	memset(buf, 0, sizeof buf);
	/* a stream read crosses writes */
	CHECK_EQ("pair.read_across_writes", read(sv[1], buf, sizeof buf), 11);
	CHECK_STR("pair.data", buf, "hello world");
	CHECK_ERR("pair.dontwait_empty", recv(sv[1], buf, 1, MSG_DONTWAIT), EAGAIN);
	struct iovec wv[3] = { { "ab", 2 }, { "cde", 3 }, { "f", 1 } };
	CHECK_EQ("pair.writev", writev(sv[1], wv, 3), 6);
	char x[2], y[10] = { 0 };
	struct iovec rv[2] = { { x, 2 }, { y, sizeof y } };
	CHECK_EQ("pair.readv", readv(sv[0], rv, 2), 6);
	CHECK("pair.readv_data", memcmp(x, "ab", 2) == 0 && strcmp(y, "cdef") == 0);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	CHECK_ERR("pair.o_nonblock_empty", read(sv[0], buf, 1), EAGAIN);
	int on = 0;
	ioctl(sv[0], FIONBIO, &on);
	CHECK_EQ("pair.fionbio_clears", fcntl(sv[0], F_GETFL) & O_NONBLOCK, 0);
	/* MSG_WAITALL collects several writes */
	CHECK_EQ("pair.waitall_w1", write(sv[1], "123", 3), 3);
	CHECK_EQ("pair.waitall_w2", write(sv[1], "4567", 4), 4);
	CHECK_EQ("pair.waitall", recv(sv[0], buf, 7, MSG_WAITALL), 7);
	struct sockaddr_un a;
	socklen_t alen = sizeof a;
	CHECK("pair.getsockname_unnamed", getsockname(sv[0], (struct sockaddr *)&a, &alen) == 0 && alen == sizeof(sa_family_t) && a.sun_family == AF_UNIX);
	alen = sizeof a;
	CHECK("pair.getpeername_unnamed", getpeername(sv[0], (struct sockaddr *)&a, &alen) == 0 && alen == sizeof(sa_family_t));
	CHECK_ERR("pair.sendto_connected", sendto(sv[0], "x", 1, 0, (struct sockaddr *)&a, path_addr(&a, "/tmp/y")), EISCONN);

	/* shutdown: the peer reads end of file and sees POLLRDHUP */
	CHECK_SYS("pair.shutdown_wr", shutdown(sv[0], SHUT_WR));
	CHECK_EQ("pair.poll_rdhup", poll1(sv[1], POLLIN | POLLRDHUP, 0), POLLIN | POLLRDHUP);
	CHECK_EQ("pair.eof_after_shutdown", read(sv[1], buf, sizeof buf), 0);
	CHECK_ERR("pair.write_after_shutdown", send(sv[0], "x", 1, MSG_NOSIGNAL), EPIPE);
	CHECK_EQ("pair.reverse_still_works", write(sv[1], "r", 1), 1);
	CHECK_EQ("pair.reverse_read", read(sv[0], buf, 1), 1);
	/* shutting down reading: end of file here, EPIPE for the peer */
	CHECK_SYS("pair.shutdown_rd", shutdown(sv[0], SHUT_RD));
	CHECK_EQ("pair.eof_after_shut_rd", read(sv[0], buf, 1), 0);
	CHECK_ERR("pair.peer_write_after_shut_rd", send(sv[1], "x", 1, MSG_NOSIGNAL), EPIPE);
	close(sv[0]);
	CHECK_EQ("pair.poll_peer_closed", poll1(sv[1], POLLIN | POLLOUT | POLLRDHUP, 0) & (POLLIN | POLLHUP | POLLRDHUP), POLLIN | POLLHUP | POLLRDHUP);
	close(sv[1]);
}

static volatile sig_atomic_t got_sigpipe, got_alarm;
static void on_sigpipe(int sig) { (void)sig; got_sigpipe++; }
static void on_alarm(int sig) { (void)sig; got_alarm++; }

static void test_sigpipe(void)
{
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	struct sigaction sa = { 0 }, old;
	sa.sa_handler = on_sigpipe;
	sigaction(SIGPIPE, &sa, &old);
	close(sv[1]);
	got_sigpipe = 0;
	CHECK_ERR("sigpipe.write_epipe", write(sv[0], "x", 1), EPIPE);
	CHECK_EQ("sigpipe.raised", got_sigpipe, 1);
	CHECK_ERR("sigpipe.nosignal_epipe", send(sv[0], "x", 1, MSG_NOSIGNAL), EPIPE);
	CHECK_EQ("sigpipe.nosignal_quiet", got_sigpipe, 1);
	CHECK_ERR("sigpipe.send_epipe", send(sv[0], "x", 1, 0), EPIPE);
	CHECK_EQ("sigpipe.send_raised", got_sigpipe, 2);
	sigaction(SIGPIPE, &old, NULL);
	close(sv[0]);

	/* unread data when the peer closes: ECONNRESET once, then end of file */
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	write(sv[0], "unread", 6);
	close(sv[1]);
	CHECK_EQ("reset.poll_err", poll1(sv[0], POLLIN, 0) & (POLLERR | POLLHUP), POLLERR | POLLHUP);
	char b[8];
	CHECK_ERR("reset.read_econnreset", read(sv[0], b, sizeof b), ECONNRESET);
	CHECK_EQ("reset.then_eof", read(sv[0], b, sizeof b), 0);
	close(sv[0]);
}

static void test_dgram_seqpacket(void)
{
	int sv[2];
	CHECK_SYS("dgram.pair", socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
	CHECK_EQ("dgram.send1", send(sv[0], "one", 3, 0), 3);
	CHECK_EQ("dgram.send2", send(sv[0], "second", 6, 0), 6);
	CHECK_EQ("dgram.send_empty", send(sv[0], "", 0, 0), 0);
	int n = -1;
	CHECK("dgram.fionread_first", ioctl(sv[1], FIONREAD, &n) == 0 && n == 3);
	char buf[64];
	CHECK_EQ("dgram.boundary", recv(sv[1], buf, sizeof buf, 0), 3);
	struct iovec iov = { buf, 2 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	CHECK_EQ("dgram.truncated", recvmsg(sv[1], &m, 0), 2);
	CHECK("dgram.msg_trunc_flag", m.msg_flags & MSG_TRUNC);
	CHECK_EQ("dgram.empty_datagram", recv(sv[1], buf, sizeof buf, 0), 0);
	send(sv[0], "abcdef", 6, 0);
	CHECK_EQ("dgram.recv_msg_trunc_len", recv(sv[1], buf, 2, MSG_TRUNC), 6);
	char big[300000];
	CHECK_ERR("dgram.emsgsize", send(sv[0], big, sizeof big, 0), EMSGSIZE);
	close(sv[0]);
	close(sv[1]);

	/* named datagram sockets: recvfrom names the sender */
	int r = socket(AF_UNIX, SOCK_DGRAM, 0), w = socket(AF_UNIX, SOCK_DGRAM, 0);
	struct sockaddr_un ra, wa, from;
	socklen_t ralen = abstract_addr(&ra, "dgram-r"), walen = abstract_addr(&wa, "dgram-w");
	CHECK_SYS("dgram.bind_r", bind(r, (struct sockaddr *)&ra, ralen));
	CHECK_SYS("dgram.bind_w", bind(w, (struct sockaddr *)&wa, walen));
	CHECK_EQ("dgram.sendto", sendto(w, "hi", 2, 0, (struct sockaddr *)&ra, ralen), 2);
	socklen_t flen = sizeof from;
	CHECK_EQ("dgram.recvfrom", recvfrom(r, buf, sizeof buf, 0, (struct sockaddr *)&from, &flen), 2);
	CHECK("dgram.recvfrom_addr", flen == walen && memcmp(&from, &wa, walen) == 0);
	int u = socket(AF_UNIX, SOCK_DGRAM, 0);
	sendto(u, "anon", 4, 0, (struct sockaddr *)&ra, ralen);
	flen = sizeof from;
	CHECK("dgram.recvfrom_unnamed", recvfrom(r, buf, sizeof buf, 0, (struct sockaddr *)&from, &flen) == 4 && flen == 0);
	/* a socket connected elsewhere refuses others' datagrams */
	CHECK_SYS("dgram.connect", connect(r, (struct sockaddr *)&wa, walen));
	CHECK_ERR("dgram.eperm_connected_elsewhere", sendto(u, "x", 1, 0, (struct sockaddr *)&ra, ralen), EPERM);
	CHECK_EQ("dgram.send_connected", send(r, "back", 4, 0), 4);
	CHECK_EQ("dgram.recv_connected", recv(w, buf, sizeof buf, 0), 4);
	struct sockaddr_un unspec = { .sun_family = AF_UNSPEC };
	CHECK_SYS("dgram.disconnect", connect(r, (struct sockaddr *)&unspec, sizeof unspec.sun_family));
	CHECK_ERR("dgram.disconnected", send(r, "x", 1, 0), ENOTCONN);
	/* eleven datagrams may wait for an unconnected sender (net.unix.max_dgram_qlen
	 * is 10 and Linux compares with >), then EAGAIN */
	int i, ok = 1;
	for (i = 0; i < 11; i++)
		ok &= sendto(u, "q", 1, MSG_DONTWAIT, (struct sockaddr *)&ra, ralen) == 1;
	CHECK("dgram.queue_eleven", ok);
	CHECK_ERR("dgram.queue_full", sendto(u, "q", 1, MSG_DONTWAIT, (struct sockaddr *)&ra, ralen), EAGAIN);
	/* another sender blocks on the full queue and goes on once the
	 * receiver reads, though it read someone else's datagram */
	pid_t pid = fork();
	if (pid == 0)
		_exit(sendto(w, "b", 1, 0, (struct sockaddr *)&ra, ralen) == 1 ? 0 : 1);
	msleep(50);
	CHECK_EQ("dgram.read_makes_room", recv(r, buf, sizeof buf, 0), 1);
	int status = -1;
	for (int t = 0; t < 500 && waitpid(pid, &status, WNOHANG) == 0; t++)
		msleep(10);
	if (status == -1) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	CHECK("dgram.blocked_sender_woken", WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* a closed destination */
	CHECK_SYS("dgram.connect_w", connect(w, (struct sockaddr *)&ra, ralen));
	close(r);
	CHECK_ERR("dgram.send_to_closed", send(w, "x", 1, 0), ECONNREFUSED);
	CHECK_ERR("dgram.sendto_gone", sendto(u, "x", 1, 0, (struct sockaddr *)&ra, ralen), ECONNREFUSED);
	close(w);
	close(u);

	CHECK_SYS("seqpacket.pair", socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv));
	send(sv[0], "rec1", 4, 0);
	send(sv[0], "record2", 7, 0);
	CHECK_EQ("seqpacket.boundary", recv(sv[1], buf, sizeof buf, 0), 4);
	iov.iov_len = 3;
	m.msg_flags = 0;
	CHECK_EQ("seqpacket.truncated", recvmsg(sv[1], &m, 0), 3);
	CHECK("seqpacket.msg_trunc_flag", m.msg_flags & MSG_TRUNC);
	close(sv[0]);
	CHECK_EQ("seqpacket.eof", recv(sv[1], buf, sizeof buf, 0), 0);
	CHECK("seqpacket.pollhup", poll1(sv[1], POLLIN, 0) & POLLHUP);
	close(sv[1]);
	int sp = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	CHECK_ERR("seqpacket.recv_unconnected", recv(sp, buf, 1, MSG_DONTWAIT), ENOTCONN);
	CHECK_ERR("seqpacket.send_unconnected", send(sp, buf, 1, 0), ENOTCONN);
	close(sp);
}

static void test_names(void)
{
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a, got;
	socklen_t alen = path_addr(&a, "srv.sock");
	mode_t old = umask(022);
	CHECK_SYS("fsname.bind", bind(s, (struct sockaddr *)&a, alen));
	umask(old);
	struct stat st;
	CHECK("fsname.node_is_socket", stat("srv.sock", &st) == 0 && S_ISSOCK(st.st_mode));
	CHECK_EQ("fsname.node_mode", st.st_mode & 07777, 0755);
	socklen_t glen = sizeof got;
	CHECK("fsname.getsockname", getsockname(s, (struct sockaddr *)&got, &glen) == 0 && glen == alen && strcmp(got.sun_path, "srv.sock") == 0);
	/* a short buffer gets a prefix and the full length */
	glen = 4;
	memset(&got, 0x7f, sizeof got);
	CHECK("fsname.getsockname_short", getsockname(s, (struct sockaddr *)&got, &glen) == 0 && glen == alen && got.sun_path[1] == 'r' && got.sun_path[2] == 0x7f);
	glen = (socklen_t)-1;
	CHECK_ERR("fsname.getsockname_negative", getsockname(s, (struct sockaddr *)&got, &glen), EINVAL);
	glen = sizeof got;
	CHECK_ERR("fsname.getsockname_efault", getsockname(s, BAD_PTR, &glen), EFAULT);
	CHECK_ERR("fsname.bind_twice_same_path", bind(s, (struct sockaddr *)&a, alen), EADDRINUSE);
	struct sockaddr_un oa;
	socklen_t oalen = path_addr(&oa, "other.sock");
	CHECK_ERR("fsname.bind_twice", bind(s, (struct sockaddr *)&oa, oalen), EINVAL);
	CHECK_ERR("fsname.bind_twice_no_node", access("other.sock", F_OK), ENOENT);
	int s2 = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK_ERR("fsname.eaddrinuse", bind(s2, (struct sockaddr *)&a, alen), EADDRINUSE);
	int c = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK_ERR("fsname.connect_not_listening", connect(c, (struct sockaddr *)&a, alen), ECONNREFUSED);
	CHECK_SYS("fsname.listen", listen(s, 4));
	int v = 0;
	socklen_t vlen = sizeof v;
	CHECK("fsname.acceptconn", getsockopt(s, SOL_SOCKET, SO_ACCEPTCONN, &v, &vlen) == 0 && v == 1);
	CHECK_EQ("fsname.poll_listener_idle", poll1(s, POLLIN | POLLOUT, 0), 0);
	int d = socket(AF_UNIX, SOCK_DGRAM, 0);
	CHECK_ERR("fsname.connect_wrong_type", connect(d, (struct sockaddr *)&a, alen), EPROTOTYPE);
	close(d);
	/* through a symlink, and relative to the cwd */
	symlink("srv.sock", "link.sock");
	struct sockaddr_un la;
	socklen_t lalen = path_addr(&la, "link.sock");
	CHECK_SYS("fsname.connect_via_symlink", connect(c, (struct sockaddr *)&la, lalen));
	CHECK_EQ("fsname.poll_listener_pending", poll1(s, POLLIN, 0), POLLIN);
	CHECK_ERR("fsname.connect_twice", connect(c, (struct sockaddr *)&a, alen), EISCONN);
	glen = sizeof got;
	CHECK("fsname.client_getpeername", getpeername(c, (struct sockaddr *)&got, &glen) == 0 && glen == alen && strcmp(got.sun_path, "srv.sock") == 0);
	glen = sizeof got;
	int acc = accept(s, (struct sockaddr *)&got, &glen);
	CHECK("fsname.accept", acc >= 0);
	CHECK_EQ("fsname.accept_peer_unnamed", glen, sizeof(sa_family_t));
	glen = sizeof got;
	CHECK("fsname.accepted_getsockname", getsockname(acc, (struct sockaddr *)&got, &glen) == 0 && glen == alen && strcmp(got.sun_path, "srv.sock") == 0);
	close(acc);
	close(c);
	/* connect needs write permission on the node */
	chmod("srv.sock", 0555);
	pid_t pid = fork();
	if (pid == 0) {
		if (setuid(65534) != 0)
			_exit(2);
		int cc = socket(AF_UNIX, SOCK_STREAM, 0);
		_exit(connect(cc, (struct sockaddr *)&a, alen) == -1 && errno == EACCES ? 0 : 1);
	}
	int status;
	waitpid(pid, &status, 0);
	CHECK("fsname.connect_eacces", WIFEXITED(status) && WEXITSTATUS(status) == 0);
	chmod("srv.sock", 0755);
	CHECK_SYS("fsname.unlink", unlink("srv.sock"));
	c = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK_ERR("fsname.connect_unlinked", connect(c, (struct sockaddr *)&a, alen), ENOENT);
	CHECK_SYS("fsname.rebind_after_unlink", bind(s2, (struct sockaddr *)&a, alen));
	int f = open("plain", O_CREAT | O_WRONLY, 0644);
	close(f);
	struct sockaddr_un pa;
	socklen_t palen = path_addr(&pa, "plain");
	CHECK_ERR("fsname.connect_not_socket", connect(c, (struct sockaddr *)&pa, palen), ECONNREFUSED);
	CHECK_ERR("fsname.open_socket_enxio", open("srv.sock", O_RDWR), ENXIO);
	palen = path_addr(&pa, "nodir/x.sock");
	CHECK_ERR("fsname.bind_missing_dir", bind(c, (struct sockaddr *)&pa, palen), ENOENT);
	unlink("srv.sock");
	unlink("link.sock");
	unlink("plain");
	close(s);
	close(s2);
	close(c);

	/* abstract names and autobind */
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	alen = abstract_addr(&a, "abs");
	CHECK_SYS("abstract.bind", bind(s, (struct sockaddr *)&a, alen));
	glen = sizeof got;
	CHECK("abstract.getsockname", getsockname(s, (struct sockaddr *)&got, &glen) == 0 && glen == alen && memcmp(&got, &a, alen) == 0);
	s2 = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK_ERR("abstract.eaddrinuse", bind(s2, (struct sockaddr *)&a, alen), EADDRINUSE);
	c = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un na;
	socklen_t nalen = abstract_addr(&na, "nobody");
	CHECK_ERR("abstract.connect_missing", connect(c, (struct sockaddr *)&na, nalen), ECONNREFUSED);
	listen(s, 0);
	CHECK_SYS("abstract.connect", connect(c, (struct sockaddr *)&a, alen));
	close(s);
	char b;
	CHECK_ERR("abstract.listener_closed_resets", read(c, &b, 1), ECONNRESET);
	close(c);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK_SYS("abstract.name_free_after_close", bind(s, (struct sockaddr *)&a, alen));
	close(s);
	sa_family_t fam = AF_UNIX;
	CHECK_SYS("autobind.bind", bind(s2, (struct sockaddr *)&fam, sizeof fam));
	glen = sizeof got;
	CHECK("autobind.name", getsockname(s2, (struct sockaddr *)&got, &glen) == 0 && glen == 8 && got.sun_path[0] == 0);
	close(s2);
}

static void test_backlog(void)
{
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a;
	socklen_t alen = abstract_addr(&a, "backlog");
	bind(l, (struct sockaddr *)&a, alen);
	listen(l, 1);
	int c[3], ok = 1;
	for (int i = 0; i < 3; i++)
		c[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	ok &= connect(c[0], (struct sockaddr *)&a, alen) == 0;
	ok &= connect(c[1], (struct sockaddr *)&a, alen) == 0;
	CHECK("backlog.two_pending", ok);
	CHECK_ERR("backlog.full_eagain", connect(c[2], (struct sockaddr *)&a, alen), EAGAIN);
	int s = accept4(l, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	CHECK("accept4.flags", s >= 0 && (fcntl(s, F_GETFL) & O_NONBLOCK) && fcntl(s, F_GETFD) == FD_CLOEXEC);
	CHECK_SYS("backlog.room_after_accept", connect(c[2], (struct sockaddr *)&a, alen));
	close(s);
	for (int i = 0; i < 3; i++)
		close(c[i]);
	close(l);
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	bind(l, (struct sockaddr *)&a, alen);
	listen(l, 5);
	CHECK_ERR("accept.nonblock_empty", accept(l, NULL, NULL), EAGAIN);
	close(l);
}

static void test_poll_epoll(void)
{
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK_EQ("poll.unconnected_stream", poll1(s, POLLIN | POLLOUT, 0), POLLOUT | POLLHUP);
	close(s);
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.u32 = 7 }, out[2];
	CHECK_SYS("epoll.add_socket", epoll_ctl(ep, EPOLL_CTL_ADD, sv[1], &ev));
	CHECK_EQ("epoll.nothing_yet", epoll_wait(ep, out, 2, 0), 0);
	write(sv[0], "a", 1);
	CHECK("epoll.readable", epoll_wait(ep, out, 2, 0) == 1 && out[0].events == EPOLLIN && out[0].data.u32 == 7);
	CHECK_EQ("epoll.edge_once", epoll_wait(ep, out, 2, 0), 0);
	write(sv[0], "b", 1);
	CHECK_EQ("epoll.edge_again", epoll_wait(ep, out, 2, 0), 1);
	shutdown(sv[0], SHUT_WR);
	CHECK("epoll.rdhup", epoll_wait(ep, out, 2, 0) == 1 && (out[0].events & (EPOLLIN | EPOLLRDHUP)) == (EPOLLIN | EPOLLRDHUP));
	/* a blocked epoll_wait wakes when a forked child writes */
	int sv2[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv2);
	ev.events = EPOLLIN;
	ev.data.u32 = 9;
	epoll_ctl(ep, EPOLL_CTL_ADD, sv2[0], &ev);
	pid_t pid = fork();
	if (pid == 0) {
		msleep(50);
		write(sv2[1], "w", 1);
		_exit(0);
	}
	int n, found = 0;
	double t0 = now();
	while (!found && now() - t0 < 10) {
		n = epoll_wait(ep, out, 2, 10000);
		for (int i = 0; i < n; i++)
			found |= out[i].data.u32 == 9;
	}
	CHECK("epoll.wakes_on_write", found);
	waitpid(pid, NULL, 0);
	fd_set rd;
	FD_ZERO(&rd);
	FD_SET(sv2[0], &rd);
	struct timeval tv = { 0, 0 };
	CHECK("select.readable", select(sv2[0] + 1, &rd, NULL, NULL, &tv) == 1 && FD_ISSET(sv2[0], &rd));
	close(ep);
	close(sv[0]);
	close(sv[1]);
	close(sv2[0]);
	close(sv2[1]);
}

static void test_timeouts_and_signals(void)
{
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	struct timeval tv = { 0, 100000 };
	setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	char b;
	double t0 = now();
	CHECK_ERR("rcvtimeo.eagain", recv(sv[0], &b, 1, 0), EAGAIN);
	CHECK("rcvtimeo.waited", now() - t0 >= 0.05); /* Linux under TCG has given up in under 90 ms */
	tv.tv_usec = 0;
	setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);

	/* A signal without SA_RESTART interrupts a blocked recv. The timer is
	 * periodic, so a signal that comes before the call blocks (a slow,
	 * shared guest) is followed by one that finds it blocked. */
	struct sigaction sa = { 0 }, old;
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, &old);
	struct itimerval it = { { 0, 50000 }, { 0, 50000 } }, off = { { 0, 0 }, { 0, 0 } };
	got_alarm = 0;
	setitimer(ITIMER_REAL, &it, NULL);
	CHECK_ERR("eintr.recv", recv(sv[0], &b, 1, 0), EINTR);
	setitimer(ITIMER_REAL, &off, NULL);
	CHECK("eintr.handler_ran", got_alarm >= 1);
	/* With SA_RESTART the recv goes on through the signals and gets the
	 * data a child sends after several of them. */
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	got_alarm = 0;
	setitimer(ITIMER_REAL, &it, NULL);
	pid_t pid = fork();
	if (pid == 0) {
		setitimer(ITIMER_REAL, &off, NULL);
		msleep(300);
		write(sv[1], "R", 1);
		_exit(0);
	}
	CHECK_EQ("restart.recv", recv(sv[0], &b, 1, 0), 1);
	setitimer(ITIMER_REAL, &off, NULL);
	CHECK("restart.handler_ran", got_alarm >= 1 && b == 'R');
	waitpid(pid, NULL, 0);
	/* with SO_RCVTIMEO set, Linux never restarts: EINTR */
	tv.tv_sec = 5;
	setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setitimer(ITIMER_REAL, &it, NULL);
	CHECK_ERR("restart.not_with_timeout", recv(sv[0], &b, 1, 0), EINTR);
	CHECK_ERR("restart.read_not_with_timeout", read(sv[0], &b, 1), EINTR);
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old, NULL);
	close(sv[0]);
	close(sv[1]);
}

static void test_mmsg(void)
{
	int sv[2];
	socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
	struct iovec iov[3] = { { "a", 1 }, { "bb", 2 }, { "ccc", 3 } };
	struct mmsghdr mm[3];
	memset(mm, 0, sizeof mm);
	for (int i = 0; i < 3; i++) {
		mm[i].msg_hdr.msg_iov = &iov[i];
		mm[i].msg_hdr.msg_iovlen = 1;
	}
	CHECK_EQ("sendmmsg.count", sendmmsg(sv[0], mm, 3, 0), 3);
	CHECK("sendmmsg.lengths", mm[0].msg_len == 1 && mm[1].msg_len == 2 && mm[2].msg_len == 3);
	char bufs[4][8];
	struct iovec riov[4];
	struct mmsghdr rm[4];
	memset(rm, 0, sizeof rm);
	for (int i = 0; i < 4; i++) {
		riov[i] = (struct iovec){ bufs[i], sizeof bufs[i] };
		rm[i].msg_hdr.msg_iov = &riov[i];
		rm[i].msg_hdr.msg_iovlen = 1;
	}
	CHECK_EQ("recvmmsg.waitforone", recvmmsg(sv[1], rm, 4, MSG_WAITFORONE, NULL), 3);
	CHECK("recvmmsg.lengths", rm[0].msg_len == 1 && rm[1].msg_len == 2 && rm[2].msg_len == 3 && memcmp(bufs[2], "ccc", 3) == 0);
	CHECK_ERR("recvmmsg.dontwait_empty", recvmmsg(sv[1], rm, 4, MSG_DONTWAIT, NULL), EAGAIN);
	close(sv[0]);
	close(sv[1]);
}

/* Find the /proc/net/unix line of the socket with inode ino: its flags,
 * type, state and path ("" for none). Returns 1 if found. */
static int procnet_find(unsigned long ino, unsigned *flags, unsigned *type, unsigned *st, char *path, size_t plen)
{
	FILE *f = fopen("/proc/net/unix", "r");
	if (!f)
		return 0;
	char line[512];
	int found = 0;
	if (!fgets(line, sizeof line, f) || strncmp(line, "Num", 3) != 0) {
		fclose(f);
		return 0;
	}
	while (!found && fgets(line, sizeof line, f)) {
		unsigned refs, proto;
		unsigned long i;
		int n = 0;
		if (sscanf(line, "%*[0-9a-f]: %x %x %x %x %x %lu%n", &refs, &proto, flags, type, st, &i, &n) < 6 || i != ino)
			continue;
		found = 1;
		const char *p = line + n;
		while (*p == ' ')
			p++;
		snprintf(path, plen, "%s", p);
		path[strcspn(path, "\n")] = 0;
	}
	fclose(f);
	return found;
}

static void test_proc_net_unix(void)
{
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a;
	socklen_t alen = abstract_addr(&a, "procnet");
	bind(l, (struct sockaddr *)&a, alen);
	listen(l, 1);
	struct stat st;
	fstat(l, &st);
	unsigned flags = 0, type = 0, state = 0;
	char path[256], want[128];
	snprintf(want, sizeof want, "@t_socket-%d-procnet", (int)getpid());
	CHECK("procnet.listener_listed", procnet_find(st.st_ino, &flags, &type, &state, path, sizeof path));
	CHECK("procnet.listener_fields", flags == 0x10000 && type == SOCK_STREAM && state == 1);
	CHECK_STR("procnet.abstract_name", path, want);
	int d = socket(AF_UNIX, SOCK_DGRAM, 0);
	alen = path_addr(&a, "procnet.sock");
	bind(d, (struct sockaddr *)&a, alen);
	fstat(d, &st);
	CHECK("procnet.path_listed", procnet_find(st.st_ino, &flags, &type, &state, path, sizeof path) && type == SOCK_DGRAM);
	CHECK_STR("procnet.path_name", path, "procnet.sock");
	int sv[2];
	socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv);
	fstat(sv[0], &st);
	CHECK("procnet.pair_connected", procnet_find(st.st_ino, &flags, &type, &state, path, sizeof path) && type == SOCK_SEQPACKET && state == 3 && path[0] == 0);
	close(sv[0]);
	CHECK("procnet.closed_gone", !procnet_find(st.st_ino, &flags, &type, &state, path, sizeof path));
	close(sv[1]);
	close(l);
	close(d);
	unlink("procnet.sock");
}


int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	const char *dir = check_mktmp();
	if (!dir || chdir(dir) != 0) {
		printf("not ok setup: no temporary directory\n");
		return 1;
	}
	test_create_and_bad_input();
	test_buffer_options();
	test_pair_stream();
	test_sigpipe();
	test_dgram_seqpacket();
	test_names();
	test_backlog();
	test_poll_epoll();
	test_timeouts_and_signals();
	test_mmsg();
	test_proc_net_unix();
	chdir("/");
	CHECK_SYS("cleanup.rmdir", rmdir(dir));
	return check_done();
}
