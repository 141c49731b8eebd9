/* t_poll: poll, ppoll, select, pselect and epoll on pipes and eventfd. */
#define _GNU_SOURCE
#include "check.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* forks a child that writes one byte to fd after ms milliseconds */
static pid_t write_later(int fd, int ms)
{
	pid_t pid = fork();
	if (pid == 0) {
		msleep(ms);
		uint64_t one = 1;
		_exit(write(fd, &one, 8) > 0 ? 0 : 1);
	}
	return pid;
}

static int reap(pid_t pid)
{
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static volatile sig_atomic_t got_usr1;
static void on_usr1(int sig) { (void)sig; got_usr1++; }

static void test_poll(void)
{
	int p[2];
	pipe(p);
	struct pollfd fds[2] = { { p[0], POLLIN, 0 }, { p[1], POLLOUT, 0 } };
	CHECK_EQ("poll.writer_ready", poll(fds, 2, 0), 1);
	CHECK_EQ("poll.revents_none", fds[0].revents, 0);
	CHECK_EQ("poll.revents_pollout", fds[1].revents, POLLOUT);
	long long t0 = now_ms();
	CHECK_EQ("poll.timeout", poll(fds, 1, 50), 0);
	CHECK("poll.timeout_waited", now_ms() - t0 >= 49);
	write(p[1], "x", 1);
	CHECK_EQ("poll.readable", poll(fds, 2, 0), 2);
	CHECK_EQ("poll.revents_pollin", fds[0].revents, POLLIN);
	/* a negative fd is ignored, a closed fd reports POLLNVAL */
	struct pollfd odd[2] = { { -1, POLLIN, 0 }, { 987, POLLIN, 0 } };
	CHECK_EQ("poll.nval_counted", poll(odd, 2, 0), 1);
	CHECK_EQ("poll.negative_ignored", odd[0].revents, 0);
	CHECK_EQ("poll.pollnval", odd[1].revents, POLLNVAL);
	/* writer closed: POLLHUP (with POLLIN while data remains) */
	close(p[1]);
	CHECK_EQ("poll.hup", poll(fds, 1, 0), 1);
	CHECK_EQ("poll.hup_revents", fds[0].revents, POLLIN | POLLHUP);
	char c;
	read(p[0], &c, 1);
	poll(fds, 1, 0);
	CHECK_EQ("poll.hup_only", fds[0].revents, POLLHUP);
	close(p[0]);
	/* reader closed: POLLERR on the write end */
	pipe(p);
	close(p[0]);
	struct pollfd w = { p[1], POLLOUT, 0 };
	poll(&w, 1, 0);
	CHECK("poll.pollerr", w.revents & POLLERR);
	close(p[1]);

	/* blocking poll woken by another process */
	int efd = eventfd(0, 0);
	pid_t pid = write_later(efd, 100);
	struct pollfd e = { efd, POLLIN, 0 };
	t0 = now_ms();
	CHECK_EQ("poll.blocking_wakes", poll(&e, 1, 20000), 1);
	CHECK("poll.blocking_not_timeout", now_ms() - t0 < 19000);
	CHECK_EQ("poll.eventfd_pollin", e.revents, POLLIN);
	CHECK("poll.writer", reap(pid));

	/* ppoll: timeout as timespec, and an atomically installed signal mask */
	struct timespec ts = { 0, 30 * 1000000 };
	uint64_t v;
	read(efd, &v, 8);
	t0 = now_ms();
	CHECK_EQ("ppoll.timeout", ppoll(&e, 1, &ts, NULL), 0);
	CHECK("ppoll.waited", now_ms() - t0 >= 29);
	sigset_t block, empty;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigemptyset(&empty);
	signal(SIGUSR1, on_usr1);
	sigprocmask(SIG_BLOCK, &block, NULL);
	kill(getpid(), SIGUSR1);
	CHECK_EQ("ppoll.blocked_not_delivered", got_usr1, 0);
	ts.tv_sec = 20;
	ts.tv_nsec = 0;
	CHECK_ERR("ppoll.sigmask_eintr", ppoll(&e, 1, &ts, &empty), EINTR);
	CHECK_EQ("ppoll.handler_ran", got_usr1, 1);
	sigset_t cur;
	sigprocmask(SIG_BLOCK, NULL, &cur);
	CHECK("ppoll.mask_restored", sigismember(&cur, SIGUSR1));
	sigprocmask(SIG_UNBLOCK, &block, NULL);
	CHECK_ERR("poll.einval_nfds", poll(&e, 1u << 30, 0), EINVAL);
	close(efd);
}

static void test_select(void)
{
	int p[2];
	pipe(p);
	fd_set r, w;
	FD_ZERO(&r);
	FD_ZERO(&w);
	FD_SET(p[0], &r);
	FD_SET(p[1], &w);
	struct timeval tv = { 0, 0 };
	int maxfd = (p[0] > p[1] ? p[0] : p[1]) + 1;
	CHECK_EQ("select.writer_ready", select(maxfd, &r, &w, NULL, &tv), 1);
	CHECK("select.r_cleared", !FD_ISSET(p[0], &r));
	CHECK("select.w_set", FD_ISSET(p[1], &w));
	FD_ZERO(&r);
	FD_SET(p[0], &r);
	tv.tv_sec = 0;
	tv.tv_usec = 50000;
	long long t0 = now_ms();
	/* raw: Linux updates the timeval with the time not slept (musl's
	 * wrapper passes a copy) */
	CHECK_EQ("select.timeout", syscall(SYS_select, maxfd, &r, NULL, NULL, &tv), 0);
	CHECK("select.timeout_waited", now_ms() - t0 >= 49);
	CHECK("select.timeval_updated", tv.tv_sec == 0 && tv.tv_usec == 0);
	write(p[1], "x", 1);
	FD_ZERO(&r);
	FD_SET(p[0], &r);
	tv.tv_sec = 5;
	tv.tv_usec = 0;
	CHECK_EQ("select.readable", select(maxfd, &r, NULL, NULL, &tv), 1);
	CHECK("select.r_set", FD_ISSET(p[0], &r));
	int closed = dup(p[0]);
	close(closed);
	FD_ZERO(&r);
	FD_SET(closed, &r);
	tv.tv_sec = 0;
	CHECK_ERR("select.ebadf", select(closed + 1, &r, NULL, NULL, &tv), EBADF);
	CHECK_ERR("select.einval", select(-1, NULL, NULL, NULL, &tv), EINVAL);

	struct timespec ts = { 0, 20 * 1000000 };
	FD_ZERO(&r);
	char c;
	read(p[0], &c, 1);
	FD_SET(p[0], &r);
	t0 = now_ms();
	CHECK_EQ("pselect.timeout", pselect(maxfd, &r, NULL, NULL, &ts, NULL), 0);
	CHECK("pselect.waited", now_ms() - t0 >= 19);

	/* blocking select woken by another process */
	int efd = eventfd(0, 0);
	pid_t pid = write_later(efd, 100);
	FD_ZERO(&r);
	FD_SET(efd, &r);
	CHECK_EQ("select.blocking_wakes", select(efd + 1, &r, NULL, NULL, NULL), 1);
	CHECK("select.writer", reap(pid));
	close(efd);
	close(p[0]);
	close(p[1]);
}

static void test_epoll(void)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK_SYS("epoll_create1", ep);
	CHECK_EQ("epoll.cloexec", fcntl(ep, F_GETFD), FD_CLOEXEC);
	CHECK_ERR("epoll_create1.bad_flags", epoll_create1(1), EINVAL);
	CHECK_ERR("epoll_create.zero", syscall(SYS_epoll_create, 0), EINVAL);
	int p[2];
	pipe(p);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0x1122334455667788ULL };
	CHECK_SYS("epoll_ctl.add", epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
	CHECK_ERR("epoll_ctl.add_twice", epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), EEXIST);
	CHECK_ERR("epoll_ctl.mod_missing", epoll_ctl(ep, EPOLL_CTL_MOD, p[1], &ev), ENOENT);
	CHECK_ERR("epoll_ctl.del_missing", epoll_ctl(ep, EPOLL_CTL_DEL, p[1], &ev), ENOENT);
	CHECK_ERR("epoll_ctl.self", epoll_ctl(ep, EPOLL_CTL_ADD, ep, &ev), EINVAL);
	CHECK_ERR("epoll_ctl.badfd", epoll_ctl(ep, EPOLL_CTL_ADD, 950, &ev), EBADF);

	struct epoll_event out[4];
	CHECK_EQ("epoll_wait.empty", epoll_wait(ep, out, 4, 0), 0);
	long long t0 = now_ms();
	CHECK_EQ("epoll_wait.timeout", epoll_wait(ep, out, 4, 50), 0);
	CHECK("epoll_wait.timeout_waited", now_ms() - t0 >= 49);
	write(p[1], "ab", 2);
	memset(out, 0, sizeof out);
	CHECK_EQ("epoll_wait.ready", epoll_wait(ep, out, 4, 1000), 1);
	CHECK_EQ("epoll_wait.events", out[0].events, EPOLLIN);
	CHECK("epoll_wait.data", out[0].data.u64 == 0x1122334455667788ULL);
	/* level-triggered: still ready while unread */
	CHECK_EQ("epoll.level_again", epoll_wait(ep, out, 4, 0), 1);

	/* edge-triggered: reported once per new arrival */
	ev.events = EPOLLIN | EPOLLET;
	ev.data.u32 = 7;
	CHECK_SYS("epoll_ctl.mod_et", epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev));
	CHECK_EQ("epoll.et_first", epoll_wait(ep, out, 4, 0), 1);
	CHECK_EQ("epoll.et_mod_data", out[0].data.u32, 7);
	CHECK_EQ("epoll.et_not_again", epoll_wait(ep, out, 4, 0), 0);
	write(p[1], "c", 1);
	CHECK_EQ("epoll.et_new_data", epoll_wait(ep, out, 4, 0), 1);
	char buf[8];
	read(p[0], buf, sizeof buf);

	/* EPOLLONESHOT: disabled after one event until re-armed */
	ev.events = EPOLLIN | EPOLLONESHOT;
	epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev);
	write(p[1], "d", 1);
	CHECK_EQ("epoll.oneshot_first", epoll_wait(ep, out, 4, 0), 1);
	CHECK_EQ("epoll.oneshot_disabled", epoll_wait(ep, out, 4, 0), 0);
	epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev);
	CHECK_EQ("epoll.oneshot_rearmed", epoll_wait(ep, out, 4, 0), 1);
	read(p[0], buf, sizeof buf);
	ev.events = EPOLLIN;
	epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev);

	/* eventfd and the pipe's write end in the same set */
	int efd = eventfd(0, EFD_NONBLOCK);
	struct epoll_event ee = { .events = EPOLLIN, .data.fd = efd };
	CHECK_SYS("epoll_ctl.add_eventfd", epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ee));
	struct epoll_event we = { .events = EPOLLOUT, .data.fd = p[1] };
	CHECK_SYS("epoll_ctl.add_writer", epoll_ctl(ep, EPOLL_CTL_ADD, p[1], &we));
	uint64_t one = 1;
	write(efd, &one, 8);
	int n = epoll_wait(ep, out, 4, 0);
	int seen_e = 0, seen_w = 0;
	for (int i = 0; i < n; i++) {
		if (out[i].data.fd == efd && out[i].events == EPOLLIN)
			seen_e = 1;
		if (out[i].data.fd == p[1] && out[i].events == EPOLLOUT)
			seen_w = 1;
	}
	CHECK_EQ("epoll.two_ready", n, 2);
	CHECK("epoll.eventfd_in", seen_e);
	CHECK("epoll.writer_out", seen_w);
	CHECK_EQ("epoll.maxevents_1", epoll_wait(ep, out, 1, 0), 1);
	CHECK_ERR("epoll_wait.maxevents_0", epoll_wait(ep, out, 0, 0), EINVAL);
	CHECK_SYS("epoll_ctl.del_writer", epoll_ctl(ep, EPOLL_CTL_DEL, p[1], NULL));
	read(efd, &one, 8);
	CHECK_EQ("epoll.after_del", epoll_wait(ep, out, 4, 0), 0);

	/* blocking epoll_wait woken by another process writing the eventfd */
	pid_t pid = write_later(efd, 100);
	t0 = now_ms();
	CHECK_EQ("epoll_wait.blocking_wakes", epoll_wait(ep, out, 4, 20000), 1);
	CHECK("epoll_wait.blocking_not_timeout", now_ms() - t0 < 19000);
	CHECK_EQ("epoll_wait.blocking_fd", out[0].data.fd, efd);
	CHECK("epoll_wait.writer", reap(pid));
	read(efd, &one, 8);

	/* epoll_pwait with a signal mask */
	sigset_t block, empty;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigemptyset(&empty);
	signal(SIGUSR1, on_usr1);
	got_usr1 = 0;
	sigprocmask(SIG_BLOCK, &block, NULL);
	kill(getpid(), SIGUSR1);
	CHECK_ERR("epoll_pwait.eintr", epoll_pwait(ep, out, 4, 20000, &empty), EINTR);
	CHECK_EQ("epoll_pwait.handler", got_usr1, 1);
	sigprocmask(SIG_UNBLOCK, &block, NULL);

	/* closing the writer: EPOLLHUP on the reader */
	close(p[1]);
	n = epoll_wait(ep, out, 4, 0);
	CHECK_EQ("epoll.hup_count", n, 1);
	CHECK("epoll.hup", n == 1 && (out[0].events & EPOLLHUP));
	/* closing a registered fd removes it from the set */
	close(p[0]);
	CHECK_EQ("epoll.closed_fd_gone", epoll_wait(ep, out, 4, 0), 0);
	close(efd);

	/* an epoll fd is itself pollable, and nests */
	int inner = epoll_create1(0), e2 = eventfd(1, 0);
	struct epoll_event ie = { .events = EPOLLIN, .data.fd = e2 };
	epoll_ctl(inner, EPOLL_CTL_ADD, e2, &ie);
	struct pollfd pf = { inner, POLLIN, 0 };
	CHECK_EQ("epoll.fd_pollable", poll(&pf, 1, 0), 1);
	struct epoll_event oe = { .events = EPOLLIN, .data.fd = inner };
	CHECK_SYS("epoll.nested_add", epoll_ctl(ep, EPOLL_CTL_ADD, inner, &oe));
	CHECK_EQ("epoll.nested_ready", epoll_wait(ep, out, 4, 0), 1);
	CHECK_EQ("epoll.nested_fd", out[0].data.fd, inner);
	close(e2);
	close(inner);
	close(ep);
}

/* An interest lives as long as its open file, not its descriptor (Linux
 * forgets it when the file is released); and an epoll fd whose only
 * interest was reported and then drained is not readable. */
static void test_epoll_dup(void)
{
	int q[2];
	pipe(q);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 77 };
	CHECK_SYS("epoll_dup.add", epoll_ctl(ep, EPOLL_CTL_ADD, q[0], &ev));
	int qdup = dup(q[0]);
	close(q[0]);
	write(q[1], "x", 1);
	struct epoll_event out[4];
	memset(out, 0, sizeof out);
	CHECK_EQ("epoll_dup.interest_kept", epoll_wait(ep, out, 4, 0), 1);
	CHECK("epoll_dup.data", out[0].data.u64 == 77);
	CHECK_ERR("epoll_dup.del_closed_fd", epoll_ctl(ep, EPOLL_CTL_DEL, q[0], NULL), EBADF);
	struct pollfd pe = { ep, POLLIN, 0 };
	CHECK_EQ("epoll_dup.fd_readable", poll(&pe, 1, 0), 1);
	char buf[8];
	read(qdup, buf, sizeof buf);
	pe.revents = 0;
	CHECK_EQ("epoll_dup.fd_not_readable_drained", poll(&pe, 1, 0), 0);
	CHECK_EQ("epoll_dup.nothing_drained", epoll_wait(ep, out, 4, 0), 0);
	write(q[1], "y", 1);
	CHECK_EQ("epoll_dup.readable_again", poll(&pe, 1, 0), 1);
	close(qdup);
	close(q[1]);
	close(ep);
}

static void test_epoll_regular_file(void)
{
	char path[300];
	snprintf(path, sizeof path, "%s/file", check_mktmp());
	int fd = open(path, O_CREAT | O_RDWR, 0600);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN };
	CHECK_ERR("epoll_ctl.regular_file", epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), EPERM);
	/* poll on a regular file: always readable and writable */
	struct pollfd pf = { fd, POLLIN | POLLOUT, 0 };
	CHECK_EQ("poll.regular_file", poll(&pf, 1, 0), 1);
	CHECK_EQ("poll.regular_file_revents", pf.revents, POLLIN | POLLOUT);
	close(ep);
	close(fd);
	CHECK_SYS("cleanup.unlink", unlink(path));
	CHECK_SYS("cleanup.rmdir", rmdir(check_tmpdir));
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	signal(SIGPIPE, SIG_IGN);
	test_poll();
	test_select();
	test_epoll();
	test_epoll_dup();
	test_epoll_regular_file();
	return check_done();
}
