/*
 * t_errors: the errors Linux documents for calls Shortbread has, where an
 * earlier version gave another answer (issue 22's sample): the check that
 * fails first, with the errno Linux returns. One check per condition.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <sys/ioctl.h>
#define FUTEX_WAKE 1
#define FUTEX_CMP_REQUEUE 4
#include <signal.h>
#include <sys/epoll.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <grp.h>

#include "check.h"

static void *unmapped(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(p, 4096);
	return p;
}

static void on_usr1(int s, siginfo_t *i, void *c) { (void)s; (void)i; (void)c; }
static void on_alarm_quiet(int s) { (void)s; }

/* A running program's file cannot be written or truncated (ETXTBSY), and
 * a file open for writing cannot be run. */
static void test_text_busy(void)
{
	const char *tb = "/tmp/t_errors_tb";
	int in = open("/proc/self/exe", O_RDONLY), out = open(tb, O_CREAT | O_WRONLY | O_TRUNC, 0755);
	char buf[65536];
	for (ssize_t n; (n = read(in, buf, sizeof buf)) > 0;)
		write(out, buf, n);
	close(in);
	/* open for writing: it cannot be run */
	pid_t c = fork();
	if (c == 0) {
		execl(tb, tb, "--exit", (char *)NULL);
		_exit(errno == ETXTBSY ? 0 : 1);
	}
	int st;
	waitpid(c, &st, 0);
	CHECK_EQ("txtbsy.exec_open_for_writing", st, 0);
	close(out);
	/* running: it cannot be opened for writing or truncated */
	int p[2];
	pipe(p);
	c = fork();
	if (c == 0) {
		dup2(p[1], 1);
		execl(tb, tb, "--pause", (char *)NULL);
		_exit(1);
	}
	close(p[1]);
	char ch = 0;
	CHECK_EQ("txtbsy.child_running", read(p[0], &ch, 1), 1);
	CHECK_ERR("txtbsy.open_wronly", open(tb, O_WRONLY), ETXTBSY);
	CHECK_ERR("txtbsy.open_rdwr", open(tb, O_RDWR), ETXTBSY);
	CHECK_ERR("txtbsy.truncate", truncate(tb, 0), ETXTBSY);
	int r = open(tb, O_RDONLY);
	CHECK_SYS("txtbsy.open_rdonly_ok", r);
	close(r);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	close(p[0]);
	r = open(tb, O_WRONLY);
	CHECK_SYS("txtbsy.writable_after_exit", r);
	close(r);
	unlink(tb);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--exit") == 0)
		return 0;
	if (argc > 1 && strcmp(argv[1], "--pause") == 0) {
		write(1, "r", 1);
		pause();
		return 0;
	}
	check_start(argv[0]);
	void *bad = unmapped();

	/* descriptors of the wrong kind */
	int p[2];
	CHECK_SYS("setup.pipe", pipe(p));
	struct iovec iov = {"x", 1};
	CHECK_ERR("pwritev2.pipe_espipe", syscall(SYS_pwritev2, p[1], &iov, 1, 0, 0, 0), ESPIPE);
	CHECK_ERR("preadv2.pipe_espipe", syscall(SYS_preadv2, p[0], &iov, 1, 0, 0, 0), ESPIPE);
	int closed = dup(p[0]);
	close(closed);
	CHECK_ERR("mmap.closed_fd_ebadf", (long)mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, closed, 0) == -1 ? -1 : 0, EBADF);
	int op = open("/tmp", O_PATH);
	CHECK_ERR("ioctl.opath_ebadf", ioctl(op, FIONREAD, &(int){0}), EBADF);
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN};
	CHECK_ERR("epoll_ctl.opath_ebadf", epoll_ctl(ep, EPOLL_CTL_ADD, op, &ev), EBADF);
	/* epoll: an instance cannot watch itself, nor close a cycle */
	CHECK_ERR("epoll_ctl.self_einval", epoll_ctl(ep, EPOLL_CTL_ADD, ep, &ev), EINVAL);
	int ep2 = epoll_create1(0);
	CHECK_SYS("epoll_ctl.nest", epoll_ctl(ep, EPOLL_CTL_ADD, ep2, &ev));
	CHECK_ERR("epoll_ctl.cycle_eloop", epoll_ctl(ep2, EPOLL_CTL_ADD, ep, &ev), ELOOP);
	/* nesting deeper than 5 levels: ELOOP */
	int chain[7];
	chain[0] = epoll_create1(0);
	int depth_err = 0;
	for (int i = 1; i < 7; i++) {
		chain[i] = epoll_create1(0);
		if (epoll_ctl(chain[i], EPOLL_CTL_ADD, chain[i - 1], &ev) != 0) {
			depth_err = errno;
			break;
		}
	}
	CHECK_EQ("epoll_ctl.too_deep_eloop", depth_err, ELOOP);

	/* bad pointers */
	CHECK_ERR("gettimeofday.efault", syscall(SYS_gettimeofday, bad, NULL), EFAULT);
	CHECK_ERR("futex.wake_unmapped_efault", syscall(SYS_futex, bad, FUTEX_WAKE, 1, NULL, NULL, 0), EFAULT);
	int word = 0;
	CHECK_ERR("futex.requeue_unmapped_efault", syscall(SYS_futex, &word, FUTEX_CMP_REQUEUE, 1, (void *)1, bad, 0), EFAULT);
	CHECK_ERR("msync.unmapped_enomem", msync(bad, 4096, MS_SYNC), ENOMEM);

	/* processes and ids */
	CHECK_ERR("waitpid.int_min_esrch", waitpid(INT_MIN, NULL, WNOHANG), ESRCH);
	uid_t fsu = setfsuid(-1);
	CHECK_EQ("setfsuid.returns_previous", fsu, geteuid());
	CHECK_EQ("setfsuid.again", setfsuid(-1), geteuid());
	gid_t fsg = setfsgid(-1);
	CHECK_EQ("setfsgid.returns_previous", fsg, getegid());
	gid_t want[3] = {5, 6, 7}, got[8] = {0};
	CHECK_SYS("setgroups.set", setgroups(3, want));
	CHECK_EQ("getgroups.count", getgroups(0, NULL), 3);
	CHECK_EQ("getgroups.list", getgroups(8, got), 3);
	CHECK("getgroups.values", got[0] == 5 && got[1] == 6 && got[2] == 7);
	CHECK_ERR("getgroups.too_small_einval", getgroups(1, got), EINVAL);
	CHECK_SYS("setgroups.clear", setgroups(0, NULL));

	/* signals */
	struct sigaction sa = {.sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO | SA_RESETHAND}, old;
	CHECK_SYS("sigaction.set", sigaction(SIGUSR1, &sa, NULL));
	CHECK_SYS("sigaction.get", sigaction(SIGUSR1, NULL, &old));
	CHECK("sigaction.resethand_keeps_siginfo", (old.sa_flags & (SA_SIGINFO | SA_RESETHAND)) == (SA_SIGINFO | SA_RESETHAND));
	signal(SIGUSR1, SIG_DFL);

	/* prctl and arch_prctl options Linux accepts */
	CHECK_SYS("prctl.set_timerslack", prctl(PR_SET_TIMERSLACK, 50000, 0, 0, 0));
	CHECK_EQ("prctl.get_timerslack", prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0), 50000);
	CHECK_SYS("prctl.set_tsc", prctl(PR_SET_TSC, PR_TSC_ENABLE, 0, 0, 0));
	int tsc = 0;
	CHECK_SYS("prctl.get_tsc", prctl(PR_GET_TSC, &tsc, 0, 0, 0));
	CHECK_EQ("prctl.tsc_enabled", tsc, PR_TSC_ENABLE);

	/* arch_prctl: CPUID faulting is not available in QEMU's CPU model */
	CHECK_EQ("arch_prctl.get_cpuid", syscall(SYS_arch_prctl, 0x1011, 0), 1);
	CHECK_ERR("arch_prctl.set_cpuid_enodev", syscall(SYS_arch_prctl, 0x1012, 0), ENODEV);

	/* O_NOATIME on another user's file needs ownership */
	int rootfile = open("/tmp/t_errors_noatime", O_CREAT | O_WRONLY, 0644);
	close(rootfile);
	pid_t c = fork();
	if (c == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(2);
		int r = open("/tmp/t_errors_noatime", O_RDONLY | O_NOATIME);
		_exit(r == -1 && errno == EPERM ? 0 : 1);
	}
	int st;
	waitpid(c, &st, 0);
	CHECK_EQ("open.noatime_other_eperm", st, 0);
	int own = open("/tmp/t_errors_noatime", O_RDONLY | O_NOATIME);
	CHECK_SYS("open.noatime_owner_ok", own);
	close(own);
	unlink("/tmp/t_errors_noatime");

	test_text_busy();

	/* sendfile needs a source it can splice from, and stops for a signal */
	int efd = eventfd(1000000, EFD_SEMAPHORE);
	int devnull = open("/dev/null", O_WRONLY), devzero = open("/dev/zero", O_RDONLY);
	CHECK_ERR("sendfile.from_eventfd_einval", sendfile(devnull, efd, NULL, 1 << 20), EINVAL);
	int sp[2];
	pipe(sp);
	write(sp[1], "abc", 3);
	CHECK_ERR("sendfile.from_pipe_einval", sendfile(devnull, sp[0], NULL, 3), EINVAL);
	/* from a 1 TiB sparse file: one call moves at most MAX_RW_COUNT
	 * (2 GiB - 4 KiB), and a signal ends it early with what it moved */
	int sparse = open("/tmp/t_errors_sparse", O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK_SYS("sendfile.sparse", ftruncate(sparse, (off_t)1 << 40));
	struct sigaction alrm = {.sa_handler = on_alarm_quiet};
	sigaction(SIGALRM, &alrm, NULL);
	alarm(1);
	ssize_t sent = sendfile(devnull, sparse, NULL, (size_t)1 << 40);
	alarm(0);
	CHECK("sendfile.bounded_or_interrupted", sent > 0 && sent <= 0x7ffff000);
	close(sparse);
	unlink("/tmp/t_errors_sparse");
	close(efd);
	close(sp[0]);
	close(sp[1]);
	close(devnull);
	close(devzero);

	/* RLIMIT_SIGPENDING bounds what tgkill and sigqueue may queue (EAGAIN);
	 * kill's signals pass it, as on Linux */
	c = fork();
	if (c == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(10);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGRTMIN);
		sigprocmask(SIG_BLOCK, &set, NULL);
		struct rlimit rl = {4, 4};
		if (setrlimit(RLIMIT_SIGPENDING, &rl))
			_exit(11);
		for (int i = 0; i < 4; i++)
			if (syscall(SYS_tgkill, getpid(), gettid(), SIGRTMIN))
				_exit(12);
		if (syscall(SYS_tgkill, getpid(), gettid(), SIGRTMIN) != -1 || errno != EAGAIN)
			_exit(13);
		if (sigqueue(getpid(), SIGRTMIN, (union sigval){0}) != -1 || errno != EAGAIN)
			_exit(14);
		if (kill(getpid(), SIGRTMIN) != 0)
			_exit(15);
		_exit(0);
	}
	waitpid(c, &st, 0);
	CHECK_EQ("sigpending.tgkill_eagain_kill_passes", st, 0);

	/* clocks one cannot sleep on */
	struct timespec ts = {0, 1000};
	CHECK_EQ("clock_nanosleep.thread_cputime_einval", clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &ts, NULL), EINVAL);
	CHECK_EQ("clock_nanosleep.bad_clock_einval", clock_nanosleep(1234, 0, &ts, NULL), EINVAL);
	CHECK_EQ("clock_nanosleep.monotonic_raw_eopnotsupp", clock_nanosleep(CLOCK_MONOTONIC_RAW, 0, &ts, NULL), EOPNOTSUPP);
	return check_done();
}
