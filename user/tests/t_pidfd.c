/*
 * t_pidfd: process file descriptors. pidfd_open (flags, close-on-exec,
 * which pids), poll and epoll on one (readable when the process exits),
 * pidfd_send_signal (with and without siginfo, after the reap),
 * waitid(P_PIDFD), clone(CLONE_PIDFD), and bad input.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "probe.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x1000
#endif

static int pidfd_open(pid_t pid, unsigned flags) { return (int)syscall(SYS_pidfd_open, pid, flags); }

static int pidfd_send_signal(int fd, int sig, siginfo_t *info, unsigned flags)
{
	return (int)syscall(SYS_pidfd_send_signal, fd, sig, info, flags);
}

static int readable(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int r = poll(&p, 1, ms);
	return r == 1 && (p.revents & POLLIN) ? 1 : r;
}

static pid_t sleeper(void)
{
	pid_t c = fork();
	if (c == 0) {
		for (;;)
			pause();
	}
	return c;
}

static volatile int thread_tid;

static void *thread_fn(void *arg)
{
	(void)arg;
	thread_tid = (int)syscall(SYS_gettid);
	usleep(300000);
	return NULL;
}

static void test_open(void)
{
	int fd = pidfd_open(getpid(), 0);
	CHECK_SYS("open.self", fd);
	CHECK_EQ("open.cloexec", fcntl(fd, F_GETFD), FD_CLOEXEC);
	CHECK_EQ("open.rdwr", fcntl(fd, F_GETFL) & O_ACCMODE, O_RDWR);
	char b[8];
	CHECK_ERR("open.read_einval", read(fd, b, sizeof b), EINVAL);
	CHECK_EQ("open.self_not_exited", readable(fd, 0), 0);
	CHECK_SYS("signal.zero_to_self", pidfd_send_signal(fd, 0, NULL, 0));
	close(fd);
	fd = pidfd_open(getpid(), O_NONBLOCK);
	CHECK_SYS("open.nonblock", fd);
	CHECK("open.nonblock_flag", fcntl(fd, F_GETFL) & O_NONBLOCK);
	close(fd);
	CHECK_ERR("open.bad_flags", pidfd_open(getpid(), 1), EINVAL);
	CHECK_ERR("open.pid_zero", pidfd_open(0, 0), EINVAL);
	CHECK_ERR("open.pid_negative", pidfd_open(-1, 0), EINVAL);
	CHECK_ERR("open.no_such_pid", pidfd_open(999999, 0), ESRCH);
	pthread_t th;
	pthread_create(&th, NULL, thread_fn, NULL);
	while (!thread_tid)
		usleep(1000);
	CHECK_ERR("open.not_a_leader", pidfd_open(thread_tid, 0), EINVAL);
	pthread_join(th, NULL);
}

static void test_exit_and_wait(void)
{
	pid_t c = sleeper();
	int fd = pidfd_open(c, 0);
	CHECK_SYS("wait.open_child", fd);
	CHECK_EQ("wait.not_readable_while_alive", readable(fd, 100), 0);
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 7};
	CHECK_SYS("epoll.add", epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
	CHECK_SYS("signal.term", pidfd_send_signal(fd, SIGTERM, NULL, 0));
	CHECK_EQ("wait.readable_after_exit", readable(fd, 3000), 1);
	struct epoll_event got = {0};
	CHECK_EQ("epoll.ready", epoll_wait(ep, &got, 1, 3000), 1);
	CHECK_EQ("epoll.data", got.data.u32, 7);
	close(ep);
	siginfo_t si = {0};
	CHECK_SYS("wait.waitid_pidfd", waitid(P_PIDFD, fd, &si, WEXITED));
	CHECK_EQ("wait.si_pid", si.si_pid, c);
	CHECK_EQ("wait.si_code_killed", si.si_code, CLD_KILLED);
	CHECK_EQ("wait.si_status", si.si_status, SIGTERM);
	/* reaped: signals fail, the file stays readable */
	CHECK_ERR("signal.after_reap_esrch", pidfd_send_signal(fd, SIGTERM, NULL, 0), ESRCH);
	CHECK_EQ("wait.still_readable", readable(fd, 0), 1);
	CHECK_ERR("wait.reaped_echild", waitid(P_PIDFD, fd, &si, WEXITED | WNOHANG), ECHILD);
	close(fd);
	CHECK_ERR("open.reaped_esrch", pidfd_open(c, 0), ESRCH);

	/* a zombie can still be opened, and is readable at once */
	c = fork();
	if (c == 0)
		_exit(3);
	usleep(200000);
	fd = pidfd_open(c, 0);
	CHECK_SYS("zombie.open", fd);
	CHECK_EQ("zombie.readable", readable(fd, 0), 1);
	CHECK_SYS("zombie.signal_ok", pidfd_send_signal(fd, SIGTERM, NULL, 0));
	si.si_status = -1;
	CHECK_SYS("zombie.waitid", waitid(P_PIDFD, fd, &si, WEXITED));
	CHECK_EQ("zombie.status", si.si_status, 3);
	close(fd);

	int self = pidfd_open(getpid(), 0);
	CHECK_ERR("wait.not_our_child", waitid(P_PIDFD, self, &si, WEXITED | WNOHANG), ECHILD);
	int p[2];
	pipe(p);
	CHECK_ERR("wait.not_a_pidfd", waitid(P_PIDFD, p[0], &si, WEXITED | WNOHANG), EBADF);
	CHECK_ERR("signal.not_a_pidfd", pidfd_send_signal(p[0], 0, NULL, 0), EBADF);
	CHECK_ERR("signal.bad_fd", pidfd_send_signal(-1, 0, NULL, 0), EBADF);
	CHECK_ERR("signal.flags", pidfd_send_signal(self, 0, NULL, 1), EINVAL);
	CHECK_ERR("signal.bad_sig", pidfd_send_signal(self, 65, NULL, 0), EINVAL);
	close(p[0]);
	close(p[1]);

	/* with siginfo: to oneself any code; the value arrives */
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGRTMIN);
	sigprocmask(SIG_BLOCK, &s, NULL);
	siginfo_t info = {.si_signo = SIGRTMIN, .si_code = SI_QUEUE};
	info.si_value.sival_int = 1234;
	CHECK_SYS("info.to_self", pidfd_send_signal(self, SIGRTMIN, &info, 0));
	struct timespec ts = {3, 0};
	siginfo_t rcv = {0};
	CHECK_EQ("info.received", sigtimedwait(&s, &rcv, &ts), SIGRTMIN);
	CHECK_EQ("info.value", rcv.si_value.sival_int, 1234);
	CHECK_EQ("info.code", rcv.si_code, SI_QUEUE);
	info.si_signo = SIGUSR1;
	CHECK_ERR("info.signo_mismatch", pidfd_send_signal(self, SIGRTMIN, &info, 0), EINVAL);
	CHECK_ERR("info.fault", pidfd_send_signal(self, SIGRTMIN, (siginfo_t *)8, 0), EFAULT);
	c = sleeper();
	int cf = pidfd_open(c, 0);
	info.si_signo = SIGTERM;
	info.si_code = SI_USER;
	CHECK_ERR("info.kernel_code_to_other_eperm", pidfd_send_signal(cf, SIGTERM, &info, 0), EPERM);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	close(cf);
	sigprocmask(SIG_UNBLOCK, &s, NULL);
	close(self);
}

static void test_clone_pidfd(void)
{
	int pidfd = -1;
	long c = syscall(SYS_clone, SIGCHLD | CLONE_PIDFD, 0, &pidfd, 0, 0);
	if (c == 0)
		_exit(7);
	CHECK_SYS("clone.pidfd", c);
	CHECK("clone.pidfd_set", pidfd >= 0);
	CHECK_EQ("clone.pidfd_cloexec", fcntl(pidfd, F_GETFD), FD_CLOEXEC);
	CHECK_EQ("clone.readable_at_exit", readable(pidfd, 3000), 1);
	siginfo_t si = {0};
	CHECK_SYS("clone.waitid", waitid(P_PIDFD, pidfd, &si, WEXITED));
	CHECK_EQ("clone.pid", si.si_pid, c);
	CHECK_EQ("clone.status", si.si_status, 7);
	close(pidfd);
	int x = -1;
	CHECK_ERR("clone.with_parent_settid", syscall(SYS_clone, SIGCHLD | CLONE_PIDFD | CLONE_PARENT_SETTID, 0, &x, 0, 0),
		  EINVAL);
}

static int pidfd_getfd(int pidfd, int fd, unsigned flags) { return (int)syscall(SYS_pidfd_getfd, pidfd, fd, flags); }

static void nobody_getfd(int out)
{
	int fd = pidfd_open(getppid(), 0); /* root's process */
	put(out, fd >= 0);
	put(out, rc(pidfd_getfd(fd, 0, 0)));
}

static void test_getfd(void)
{
	/* the child keeps a pipe with data in it at a descriptor it reports */
	int rep[2], go[2];
	pipe(rep);
	pipe(go);
	pid_t c = fork();
	if (c == 0) {
		int p[2];
		if (pipe(p) || write(p[1], "hello", 5) != 5 || write(rep[1], &p[0], sizeof p[0]) != sizeof p[0])
			_exit(1);
		char ch;
		read(go[0], &ch, 1); /* until the parent is done */
		_exit(0);
	}
	int theirs = -1;
	CHECK_EQ("getfd.child_reports", read(rep[0], &theirs, sizeof theirs), sizeof theirs);
	int pf = pidfd_open(c, 0);
	int mine = pidfd_getfd(pf, theirs, 0);
	CHECK_SYS("getfd.dup", mine);
	CHECK_EQ("getfd.cloexec", fcntl(mine, F_GETFD), FD_CLOEXEC);
	char buf[8] = {0};
	CHECK_EQ("getfd.same_pipe", read(mine, buf, sizeof buf), 5);
	CHECK_STR("getfd.data", buf, "hello");
	CHECK_ERR("getfd.flags", pidfd_getfd(pf, theirs, 1), EINVAL);
	CHECK_ERR("getfd.no_such_fd", pidfd_getfd(pf, 999, 0), EBADF);
	CHECK_ERR("getfd.not_a_pidfd", pidfd_getfd(rep[0], 0, 0), EBADF);
	write(go[1], "x", 1);
	usleep(200000);
	CHECK_ERR("getfd.zombie_esrch", pidfd_getfd(pf, theirs, 0), ESRCH);
	waitpid(c, NULL, 0);
	CHECK_ERR("getfd.reaped_esrch", pidfd_getfd(pf, theirs, 0), ESRCH);
	close(pf);
	close(mine);
	close(rep[0]);
	close(rep[1]);
	close(go[0]);
	close(go[1]);
	int res[2];
	CHECK_EQ("getfd.nobody_probe", probe(nobody_getfd, 1, res, 2), 2);
	CHECK("getfd.nobody_opens_pidfd", res[0]);
	CHECK_EQ("getfd.nobody_eperm", res[1], EPERM);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	test_open();
	test_exit_and_wait();
	test_clone_pidfd();
	test_getfd();
	return check_done();
}
