/* t_socket_data: AF_UNIX moving data: back-pressure, a forked client and
 * server exchanging 8 MiB each way, descriptor passing (SCM_RIGHTS, with
 * nothing leaked), credentials (SCM_CREDENTIALS, SO_PEERCRED), sendfile
 * to a socket and 1,000 connections at once. */
#define _GNU_SOURCE
#include "check.h"
#include "sock.h"

/* A writer blocks on a full socket and wakes as the reader drains. */
static void test_backpressure(void)
{
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	static char chunk[4096];
	long total = 0;
	ssize_t k;
	while ((k = write(sv[0], chunk, sizeof chunk)) > 0)
		total += k;
	CHECK("backpressure.fills_eagain", k == -1 && errno == EAGAIN && total >= 4096);
	CHECK_EQ("backpressure.poll_not_writable", poll1(sv[0], POLLOUT, 0), 0);
	int outq = -1;
	CHECK("backpressure.siocoutq", ioctl(sv[0], TIOCOUTQ, &outq) == 0 && outq > 0);
	/* a blocking send to the full socket gives up after SO_SNDTIMEO */
	struct timeval tv = { 0, 100000 };
	setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	fcntl(sv[0], F_SETFL, 0);
	double t0 = now();
	CHECK_ERR("sndtimeo.eagain", send(sv[0], chunk, sizeof chunk, 0), EAGAIN);
	CHECK("sndtimeo.waited", now() - t0 >= 0.05); /* Linux under TCG has given up in under 90 ms */
	tv.tv_usec = 0;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	/* a child blocks writing 1 MiB more; we drain everything */
	pid_t pid = fork();
	if (pid == 0) {
		int fl = fcntl(sv[0], F_GETFL);
		fcntl(sv[0], F_SETFL, fl & ~O_NONBLOCK);
		static char more[1 << 20];
		_exit(write_all(sv[0], more, sizeof more) == 0 ? 0 : 1);
	}
	long want = total + (1 << 20), got = 0;
	static char buf[65536];
	while (got < want && (k = read(sv[1], buf, sizeof buf)) > 0)
		got += k;
	CHECK_EQ("backpressure.all_arrived", got, want);
	int status;
	waitpid(pid, &status, 0);
	CHECK("backpressure.writer_finished", WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_EQ("backpressure.writable_again", poll1(sv[0], POLLOUT, 0), POLLOUT);
	close(sv[0]);
	close(sv[1]);
}

/* A forked client and the server exchange 8 MiB each way, checked by
 * checksum; the server sees the client's credentials. */
static void test_client_server(void)
{
	enum { SIZE = 8 << 20 };
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un a;
	socklen_t alen = path_addr(&a, "cs.sock");
	CHECK_SYS("cs.bind", bind(l, (struct sockaddr *)&a, alen));
	CHECK_SYS("cs.listen", listen(l, 8));
	pid_t pid = fork();
	if (pid == 0) {
		close(l);
		int c = socket(AF_UNIX, SOCK_STREAM, 0);
		if (connect(c, (struct sockaddr *)&a, alen) != 0)
			_exit(10);
		struct ucred cr;
		socklen_t crlen = sizeof cr;
		if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) != 0 || cr.pid != getppid())
			_exit(11);
		static unsigned char buf[65536];
		for (uint64_t off = 0; off < SIZE; off += sizeof buf) {
			for (size_t i = 0; i < sizeof buf; i++)
				buf[i] = pattern(off + i, 1);
			if (write_all(c, buf, sizeof buf) != 0)
				_exit(12);
		}
		shutdown(c, SHUT_WR);
		uint64_t h = 14695981039346656037ull, want = 14695981039346656037ull, got = 0;
		ssize_t k;
		while ((k = read(c, buf, sizeof buf)) > 0) {
			h = fnv(h, buf, k);
			got += k;
		}
		for (uint64_t off = 0; off < SIZE; off += sizeof buf) {
			for (size_t i = 0; i < sizeof buf; i++)
				buf[i] = pattern(off + i, 2);
			want = fnv(want, buf, sizeof buf);
		}
		_exit(got != SIZE ? 13 : h != want ? 14 : 0);
	}
	int s = accept(l, NULL, NULL);
	CHECK("cs.accept", s >= 0);
	struct ucred cr;
	socklen_t crlen = sizeof cr;
	CHECK("cs.peercred", getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) == 0 && cr.pid == pid && cr.uid == getuid() && cr.gid == getgid());
	static unsigned char buf[65536];
	uint64_t h = 14695981039346656037ull, want = 14695981039346656037ull, got = 0;
	ssize_t k;
	while ((k = read(s, buf, sizeof buf)) > 0) {
		h = fnv(h, buf, k);
		got += k;
	}
	for (uint64_t off = 0; off < SIZE; off += sizeof buf) {
		for (size_t i = 0; i < sizeof buf; i++)
			buf[i] = pattern(off + i, 1);
		want = fnv(want, buf, sizeof buf);
	}
	CHECK_EQ("cs.upload_size", got, SIZE);
	CHECK("cs.upload_checksum", h == want);
	int ok = 1;
	for (uint64_t off = 0; off < SIZE && ok; off += sizeof buf) {
		for (size_t i = 0; i < sizeof buf; i++)
			buf[i] = pattern(off + i, 2);
		ok = write_all(s, buf, sizeof buf) == 0;
	}
	CHECK("cs.download_written", ok);
	close(s);
	int status;
	waitpid(pid, &status, 0);
	CHECK_EQ("cs.client_status", WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status), 0);
	close(l);
	unlink("cs.sock");
}

static void test_rights(void)
{
	int sv[2], p[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	pipe(p);
	CHECK_EQ("rights.send", send_fds(sv[0], &p[1], 1, "F"), 1);
	int got[4], mflags = 0;
	CHECK_EQ("rights.recv_count", recv_fds(sv[1], got, 4, CMSG_SPACE(sizeof(int)), 0, &mflags), 1);
	CHECK("rights.new_fd", got[0] != p[1] && fcntl(got[0], F_GETFD) == 0);
	CHECK_EQ("rights.same_file", write(got[0], "via", 3), 3);
	char b[8] = { 0 };
	CHECK("rights.read_through_pipe", read(p[0], b, sizeof b) == 3 && memcmp(b, "via", 3) == 0);
	close(got[0]);
	/* MSG_CMSG_CLOEXEC, two descriptors in one message */
	int two[2] = { p[0], p[1] };
	send_fds(sv[0], two, 2, "G");
	CHECK_EQ("rights.recv_two", recv_fds(sv[1], got, 4, CMSG_SPACE(2 * sizeof(int)), MSG_CMSG_CLOEXEC, NULL), 2);
	CHECK("rights.cmsg_cloexec", fcntl(got[0], F_GETFD) == FD_CLOEXEC && fcntl(got[1], F_GETFD) == FD_CLOEXEC);
	close(got[0]);
	close(got[1]);
	/* no room for the descriptor: MSG_CTRUNC, and it is not installed */
	int before = lowest_free_fd();
	send_fds(sv[0], &p[1], 1, "H");
	CHECK_EQ("rights.no_room", recv_fds(sv[1], got, 4, 0, 0, &mflags), 0);
	CHECK("rights.ctrunc", mflags & MSG_CTRUNC);
	CHECK_EQ("rights.nothing_installed", lowest_free_fd(), before);
	/* a control buffer that cannot be written: the data arrives, the
	 * descriptor does not (MSG_CTRUNC), and nothing is installed */
	send_fds(sv[0], &p[1], 1, "B");
	{
		char d[4];
		struct iovec biov = { d, sizeof d };
		struct msghdr bm = { .msg_iov = &biov, .msg_iovlen = 1, .msg_control = BAD_PTR, .msg_controllen = 64 };
		CHECK_EQ("rights.recv_bad_control", syscall(SYS_recvmsg, sv[1], &bm, 0), 1);
		CHECK("rights.recv_bad_control_ctrunc", bm.msg_flags & MSG_CTRUNC);
		CHECK_EQ("rights.recv_bad_control_no_fd", lowest_free_fd(), before);
	}
	int bad = 12345;
	CHECK_ERR("rights.ebadf", send_fds(sv[0], &bad, 1, "I"), EBADF);
	/* bad control messages */
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { "J", 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = sizeof cbuf + 8;
	CHECK_ERR("rights.cmsg_len_too_big", sendmsg(sv[0], &m, 0), EINVAL);
	c->cmsg_len = CMSG_LEN(sizeof(int));
	c->cmsg_type = 77;
	CHECK_ERR("rights.cmsg_bad_type", sendmsg(sv[0], &m, 0), EINVAL);
	m.msg_control = BAD_PTR;
	/* (musl's sendmsg copies the control buffer itself: the raw call) */
	CHECK_ERR("rights.control_efault", syscall(SYS_sendmsg, sv[0], &m, 0), EFAULT);
	/* a descriptor in a message nobody reads is released with the socket:
	 * the pipe's reader then sees end of file */
	send_fds(sv[0], &p[1], 1, "K");
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
	CHECK_EQ("rights.dropped_released", read(p[0], b, sizeof b), 0);
	close(p[0]);

	/* a cycle: two sockets sent to each other (a pipe's write end riding
	 * along), then closed. Only their own queues hold them; the collector,
	 * which runs when any AF_UNIX socket closes, frees them, and the
	 * pipe's reader sees end of file. */
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	pipe(p);
	int cyc[2] = { sv[0], p[1] };
	CHECK_EQ("rights.cycle_send_a", send_fds(sv[0], cyc, 2, "M"), 1);
	CHECK_EQ("rights.cycle_send_b", send_fds(sv[1], &sv[1], 1, "N"), 1);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
	close(socket(AF_UNIX, SOCK_DGRAM, 0));
	CHECK("rights.cycle_collected", poll1(p[0], POLLIN, 5000) & POLLHUP);
	CHECK_EQ("rights.cycle_eof", read(p[0], b, sizeof b), 0);
	close(p[0]);

	/* a descriptor passed to a forked process */
	socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv);
	pipe(p);
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		close(p[0]);
		close(p[1]);
		int fd;
		if (recv_fds(sv[1], &fd, 1, CMSG_SPACE(sizeof(int)), 0, NULL) != 1)
			_exit(1);
		_exit(write(fd, "child", 5) == 5 ? 0 : 2);
	}
	close(sv[1]);
	send_fds(sv[0], &p[1], 1, "L");
	close(p[1]);
	int status;
	waitpid(pid, &status, 0);
	CHECK("rights.fork_child", WIFEXITED(status) && WEXITSTATUS(status) == 0);
	memset(b, 0, sizeof b);
	CHECK("rights.fork_data", read(p[0], b, sizeof b) == 5 && memcmp(b, "child", 5) == 0);
	CHECK_EQ("rights.fork_eof", read(p[0], b, sizeof b), 0);
	close(p[0]);
	close(sv[0]);
}

static void test_credentials(void)
{
	int sv[2];
	socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
	struct ucred cr;
	socklen_t len = sizeof cr;
	CHECK("peercred.pair", getsockopt(sv[0], SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 && len == sizeof cr && cr.pid == getpid() && cr.uid == geteuid());
	int on = 1;
	CHECK_SYS("passcred.set", setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof on));
	send(sv[0], "c", 1, 0);
	char cbuf[CMSG_SPACE(sizeof cr)] __attribute__((aligned(8)));
	char data[4];
	struct iovec iov = { data, sizeof data };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
	CHECK_EQ("passcred.recv", recvmsg(sv[1], &m, 0), 1);
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	CHECK("passcred.cmsg", c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS && c->cmsg_len == CMSG_LEN(sizeof cr));
	if (c)
		memcpy(&cr, CMSG_DATA(c), sizeof cr);
	CHECK("passcred.values", c && cr.pid == getpid() && cr.uid == getuid() && cr.gid == getgid());
	/* credentials the sender states */
	struct ucred mine = { getpid(), getuid(), getgid() };
	char sbuf[CMSG_SPACE(sizeof mine)] __attribute__((aligned(8))) = { 0 };
	struct iovec siov = { "d", 1 };
	struct msghdr sm = { .msg_iov = &siov, .msg_iovlen = 1, .msg_control = sbuf, .msg_controllen = sizeof sbuf };
	c = CMSG_FIRSTHDR(&sm);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_CREDENTIALS;
	c->cmsg_len = CMSG_LEN(sizeof mine);
	memcpy(CMSG_DATA(c), &mine, sizeof mine);
	CHECK_EQ("passcred.send_own", sendmsg(sv[0], &sm, 0), 1);
	c->cmsg_len = CMSG_LEN(sizeof mine) - 4;
	CHECK_ERR("passcred.bad_len", sendmsg(sv[0], &sm, 0), EINVAL);
	m.msg_controllen = sizeof cbuf;
	CHECK_EQ("passcred.recv_own", recvmsg(sv[1], &m, 0), 1);
	/* an unprivileged sender cannot claim another pid */
	pid_t pid = fork();
	if (pid == 0) {
		if (setuid(65534) != 0)
			_exit(2);
		c->cmsg_len = CMSG_LEN(sizeof mine);
		struct ucred other = { 1, 65534, 65534 };
		memcpy(CMSG_DATA(c), &other, sizeof other);
		_exit(sendmsg(sv[0], &sm, 0) == -1 && errno == EPERM ? 0 : 1);
	}
	int status;
	waitpid(pid, &status, 0);
	CHECK("passcred.claim_eperm", WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* write(2) carries the writer's credentials too */
	write(sv[0], "w", 1);
	m.msg_controllen = sizeof cbuf;
	memset(cbuf, 0, sizeof cbuf);
	CHECK_EQ("passcred.recv_write", recvmsg(sv[1], &m, 0), 1);
	c = CMSG_FIRSTHDR(&m);
	if (c)
		memcpy(&cr, CMSG_DATA(c), sizeof cr);
	CHECK("passcred.write_values", c && c->cmsg_type == SCM_CREDENTIALS && cr.pid == getpid() && cr.uid == getuid());
	/* the credentials a message carries are the sender's real IDs
	 * (SO_PEERCRED reports effective ones) */
	pid = fork();
	if (pid == 0) {
		if (setreuid(1000, 0) != 0)
			_exit(2);
		_exit(write(sv[0], "r", 1) == 1 ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	m.msg_controllen = sizeof cbuf;
	memset(cbuf, 0, sizeof cbuf);
	CHECK_EQ("passcred.recv_real_ids", recvmsg(sv[1], &m, 0), 1);
	c = CMSG_FIRSTHDR(&m);
	if (c)
		memcpy(&cr, CMSG_DATA(c), sizeof cr);
	CHECK("passcred.real_uid", c && cr.pid == pid && cr.uid == 1000);
	/* no control buffer: MSG_CTRUNC */
	send(sv[0], "e", 1, 0);
	m.msg_control = NULL;
	m.msg_controllen = 0;
	CHECK("passcred.ctrunc", recvmsg(sv[1], &m, 0) == 1 && (m.msg_flags & MSG_CTRUNC));
	close(sv[0]);
	close(sv[1]);
}

/* sendfile from a file to a socket, as nginx serves files */
static void test_sendfile(void)
{
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	int f = open("sendfile.dat", O_CREAT | O_RDWR | O_TRUNC, 0644);
	static unsigned char data[100000], got[100000];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = pattern(i, 3);
	write_all(f, data, sizeof data);
	off_t off = 0;
	long sent = 0, n = 0;
	pid_t pid = fork();
	if (pid == 0) {
		while (sent < (long)sizeof data && (n = sendfile(sv[0], f, &off, sizeof data - sent)) > 0)
			sent += n;
		_exit(sent == sizeof data && off == sizeof data ? 0 : 1);
	}
	long k, have = 0;
	while (have < (long)sizeof got && (k = read(sv[1], got + have, sizeof got - have)) > 0)
		have += k;
	int status;
	waitpid(pid, &status, 0);
	CHECK("sendfile.to_socket", WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK("sendfile.data", have == sizeof got && memcmp(got, data, sizeof got) == 0);
	close(f);
	unlink("sendfile.dat");
	close(sv[0]);
	close(sv[1]);
}

/* 1,000 connections from four processes at once (sock.h's
 * connection_storm); the listener's name can be bound again once it is
 * closed. */
static void test_connection_storm(void)
{
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	struct sockaddr_un a;
	socklen_t alen = abstract_addr(&a, "storm");
	CHECK_SYS("storm.bind", bind(l, (struct sockaddr *)&a, alen));
	connection_storm("storm", AF_UNIX, (struct sockaddr *)&a, alen, l);
	close(l);
	l = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK_SYS("storm.name_free", bind(l, (struct sockaddr *)&a, alen));
	close(l);
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
	test_backpressure();
	test_client_server();
	test_rights();
	test_credentials();
	test_sendfile();
	test_connection_storm();
	chdir("/");
	CHECK_SYS("cleanup.rmdir", rmdir(dir));
	return check_done();
}
