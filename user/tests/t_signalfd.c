/*
 * t_signalfd: pending signals read through a file. signalfd and
 * signalfd4 (flags, mask update, SIGKILL left out), read (records and
 * their fields for kill, sigqueue, timers and SIGCHLD; several per read;
 * only masked signals; blocking; O_NONBLOCK), poll and epoll, a forked
 * child reading its own signals, and bad input.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"

static sigset_t set_of(int a, int b)
{
	sigset_t s;
	sigemptyset(&s);
	if (a)
		sigaddset(&s, a);
	if (b)
		sigaddset(&s, b);
	return s;
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	struct signalfd_siginfo r[4];
	sigset_t blk = set_of(SIGUSR1, SIGUSR2);
	sigaddset(&blk, SIGRTMIN);
	sigaddset(&blk, SIGCHLD);
	sigaddset(&blk, SIGALRM);
	sigprocmask(SIG_BLOCK, &blk, NULL);

	sigset_t m = set_of(SIGUSR1, 0);
	int fd = signalfd(-1, &m, SFD_NONBLOCK | SFD_CLOEXEC);
	CHECK_SYS("create", fd);
	CHECK_EQ("create.cloexec", fcntl(fd, F_GETFD), FD_CLOEXEC);
	CHECK("create.nonblock", fcntl(fd, F_GETFL) & O_NONBLOCK);
	CHECK_ERR("read.empty_eagain", read(fd, r, sizeof r), EAGAIN);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	CHECK_EQ("poll.not_ready", poll(&p, 1, 0), 0);

	/* kill: signo, code, pid, uid */
	CHECK_SYS("kill.self", kill(getpid(), SIGUSR1));
	CHECK_EQ("poll.ready", poll(&p, 1, 1000), 1);
	CHECK_EQ("kill.read", read(fd, r, sizeof r), sizeof r[0]);
	CHECK_EQ("kill.signo", r[0].ssi_signo, SIGUSR1);
	CHECK_EQ("kill.code", r[0].ssi_code, SI_USER);
	CHECK_EQ("kill.pid", r[0].ssi_pid, getpid());
	CHECK_EQ("kill.uid", r[0].ssi_uid, getuid());
	sigset_t pend;
	sigpending(&pend);
	CHECK("kill.taken_from_pending", !sigismember(&pend, SIGUSR1));

	/* a signal outside the mask stays pending; a short buffer is EINVAL */
	kill(getpid(), SIGUSR2);
	CHECK_ERR("mask.other_not_read", read(fd, r, sizeof r), EAGAIN);
	CHECK_ERR("read.short_buffer", read(fd, r, sizeof r[0] - 1), EINVAL);

	/* a new mask for the same file (SIGKILL silently left out) */
	m = set_of(SIGUSR2, SIGRTMIN);
	sigaddset(&m, SIGKILL);
	CHECK_EQ("mask.update_returns_fd", signalfd(fd, &m, 0), fd);
	CHECK_EQ("mask.now_read", read(fd, r, sizeof r), sizeof r[0]);
	CHECK_EQ("mask.signo", r[0].ssi_signo, SIGUSR2);

	/* sigqueue twice: two records in one read, with their values */
	union sigval v = {.sival_int = 11};
	sigqueue(getpid(), SIGRTMIN, v);
	v.sival_int = 22;
	sigqueue(getpid(), SIGRTMIN, v);
	CHECK_EQ("queue.two_records", read(fd, r, sizeof r), 2 * sizeof r[0]);
	CHECK_EQ("queue.code", r[0].ssi_code, SI_QUEUE);
	CHECK_EQ("queue.first_value", r[0].ssi_int, 11);
	CHECK_EQ("queue.second_value", r[1].ssi_int, 22);
	CHECK_EQ("queue.pid", r[1].ssi_pid, getpid());

	/* a blocking read waits for a signal a child sends */
	m = set_of(SIGUSR1, SIGCHLD);
	int bfd = signalfd(-1, &m, 0);
	CHECK_SYS("block.create", bfd);
	pid_t parent = getpid();
	pid_t c = fork();
	if (c == 0) {
		usleep(150000);
		kill(parent, SIGUSR1);
		_exit(5);
	}
	CHECK_EQ("block.read", read(bfd, r, sizeof r[0]), sizeof r[0]);
	CHECK("block.got_usr1_or_chld", r[0].ssi_signo == SIGUSR1 || r[0].ssi_signo == SIGCHLD);
	if (r[0].ssi_signo == SIGUSR1)
		CHECK_EQ("block.sender_pid", r[0].ssi_pid, c);
	waitpid(c, NULL, 0);
	/* SIGCHLD: pid, status, code (it may have come first, above) */
	struct signalfd_siginfo chld = r[0];
	fcntl(bfd, F_SETFL, O_NONBLOCK);
	ssize_t k = read(bfd, r, sizeof r);
	for (ssize_t i = 0; i < k / (ssize_t)sizeof r[0]; i++)
		if (r[i].ssi_signo == SIGCHLD)
			chld = r[i];
	CHECK_EQ("chld.signo", chld.ssi_signo, SIGCHLD);
	CHECK_EQ("chld.code_exited", chld.ssi_code, CLD_EXITED);
	CHECK_EQ("chld.pid", chld.ssi_pid, c);
	CHECK_EQ("chld.status", chld.ssi_status, 5);

	/* epoll */
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 9};
	CHECK_SYS("epoll.add", epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
	struct epoll_event got;
	CHECK_EQ("epoll.idle", epoll_wait(ep, &got, 1, 0), 0);
	kill(getpid(), SIGUSR2);
	CHECK_EQ("epoll.ready", epoll_wait(ep, &got, 1, 2000), 1);
	CHECK_EQ("epoll.data", got.data.u32, 9);
	read(fd, r, sizeof r);
	close(ep);

	/* a timer's signal: si_tid, si_overrun and the value */
	m = set_of(SIGALRM, 0);
	int tfd = signalfd(-1, &m, 0);
	timer_t tm;
	struct sigevent sev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM};
	sev.sigev_value.sival_int = 31;
	CHECK_SYS("timer.create", timer_create(CLOCK_MONOTONIC, &sev, &tm));
	struct itimerspec its = {.it_value = {0, 20000000}};
	timer_settime(tm, 0, &its, NULL);
	CHECK_EQ("timer.read", read(tfd, r, sizeof r[0]), sizeof r[0]);
	CHECK_EQ("timer.code", r[0].ssi_code, SI_TIMER);
	CHECK_EQ("timer.value", r[0].ssi_int, 31);
	CHECK_EQ("timer.overrun", r[0].ssi_overrun, 0);
	timer_delete(tm);
	close(tfd);

	/* a forked child reads its own signals, not its parent's */
	kill(getpid(), SIGUSR2);
	c = fork();
	if (c == 0) {
		struct signalfd_siginfo cr;
		if (read(fd, &cr, sizeof cr) != -1 || errno != EAGAIN)
			_exit(1); /* the parent's SIGUSR2 is not the child's */
		kill(getpid(), SIGUSR2);
		if (read(fd, &cr, sizeof cr) != sizeof cr || cr.ssi_pid != (unsigned)getpid())
			_exit(2);
		_exit(0);
	}
	int st;
	waitpid(c, &st, 0);
	CHECK_EQ("fork.child_reads_own", st, 0);
	CHECK_EQ("fork.parent_keeps_its_own", read(fd, r, sizeof r), sizeof r[0]);

	/* bad input */
	CHECK_ERR("bad.sizemask", syscall(SYS_signalfd4, -1, &m, 4, 0), EINVAL);
	CHECK_ERR("bad.flags", syscall(SYS_signalfd4, -1, &m, 8, 1), EINVAL);
	CHECK_ERR("bad.mask_fault", syscall(SYS_signalfd4, -1, (void *)8, 8, 0), EFAULT);
	int pp[2];
	pipe(pp);
	CHECK_ERR("bad.not_signalfd", signalfd(pp[0], &m, 0), EINVAL);
	CHECK_ERR("bad.fd", signalfd(1000, &m, 0), EBADF);
	CHECK_ERR("bad.write", write(fd, r, sizeof r[0]), EINVAL);
	close(pp[0]);
	close(pp[1]);
	CHECK_SYS("plain.signalfd", syscall(SYS_signalfd, -1, &m, 8));
	close(fd);
	close(bfd);
	return check_done();
}
