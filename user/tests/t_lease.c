/*
 * t_lease: file leases (fcntl F_SETLEASE, F_GETLEASE): who may take
 * which lease, the break when another open (or truncate) conflicts — the
 * holder's signal with POLL_MSG and si_fd, the opener blocked until the
 * holder downgrades or removes the lease, O_NONBLOCK's EWOULDBLOCK, the
 * lease-break-time timeout, EINTR — and release on close.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "probe.h"

#define SIG (SIGRTMIN + 2)

static char path[512];

static int wait_sig(int sig, siginfo_t *si, int ms)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	memset(si, 0, sizeof *si);
	return sigtimedwait(&s, si, &ts);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int break_time(int secs)
{
	int fd = open("/proc/sys/fs/lease-break-time", O_WRONLY);
	if (fd < 0)
		return -1;
	char b[16];
	int n = snprintf(b, sizeof b, "%d\n", secs);
	int r = write(fd, b, n) == n ? 0 : -1;
	close(fd);
	return r;
}

/* forks a child that opens the file with flags (or truncates it, flags
 * -1) and reports through the returned pipe: 'y' opened, 'w'
 * EWOULDBLOCK, 'i' EINTR, 'n' other errors */
static pid_t opener(int flags, int *rd)
{
	int p[2];
	if (pipe(p))
		return -1;
	pid_t c = fork();
	if (c == 0) {
		close(p[0]);
		int r = flags == -1 ? truncate(path, 3) : open(path, flags);
		char ch = r >= 0 ? 'y' : errno == EWOULDBLOCK ? 'w' : errno == EINTR ? 'i' : 'n';
		if (write(p[1], &ch, 1) != 1)
			_exit(2);
		_exit(0);
	}
	close(p[1]);
	*rd = p[0];
	return c;
}

static void on_alarm(int s) { (void)s; }

static void test_rules(void)
{
	int rd = open(path, O_RDONLY);
	CHECK_EQ("get.none", fcntl(rd, F_GETLEASE), F_UNLCK);
	CHECK_SYS("set.read", fcntl(rd, F_SETLEASE, F_RDLCK));
	CHECK_EQ("get.read", fcntl(rd, F_GETLEASE), F_RDLCK);
	int rd2 = open(path, O_RDONLY); /* a reader does not break a read lease */
	CHECK_SYS("read.reader_opens", rd2);
	CHECK_SYS("read.second_read_lease", fcntl(rd2, F_SETLEASE, F_RDLCK));
	CHECK_ERR("write.other_lease_blocks", fcntl(rd, F_SETLEASE, F_WRLCK), EAGAIN);
	CHECK_SYS("unlock.second", fcntl(rd2, F_SETLEASE, F_UNLCK));
	CHECK_ERR("write.other_open_blocks", fcntl(rd, F_SETLEASE, F_WRLCK), EAGAIN);
	close(rd2);
	CHECK_SYS("write.sole_open_upgrade", fcntl(rd, F_SETLEASE, F_WRLCK));
	CHECK_EQ("get.write", fcntl(rd, F_GETLEASE), F_WRLCK);
	CHECK_SYS("unlock", fcntl(rd, F_SETLEASE, F_UNLCK));
	CHECK_EQ("get.after_unlock", fcntl(rd, F_GETLEASE), F_UNLCK);
	CHECK_ERR("unlock.none", fcntl(rd, F_SETLEASE, F_UNLCK), EAGAIN);
	CHECK_ERR("bad.type", fcntl(rd, F_SETLEASE, 7), EINVAL);
	int rw = open(path, O_RDWR);
	CHECK_ERR("read.open_for_write_blocks", fcntl(rd, F_SETLEASE, F_RDLCK), EAGAIN);
	CHECK_ERR("read.own_rdwr_blocks", fcntl(rw, F_SETLEASE, F_RDLCK), EAGAIN);
	close(rd);
	CHECK_SYS("write.sole_rdwr", fcntl(rw, F_SETLEASE, F_WRLCK));
	close(rw);
	int p[2];
	CHECK_SYS("bad.pipe_create", pipe(p));
	CHECK_ERR("bad.pipe", fcntl(p[0], F_SETLEASE, F_RDLCK), EINVAL);
	close(p[0]);
	close(p[1]);
	int o = open(path, O_PATH);
	CHECK_ERR("bad.o_path", fcntl(o, F_SETLEASE, F_RDLCK), EBADF);
	close(o);
	int dir = open("/", O_RDONLY | O_DIRECTORY);
	CHECK_ERR("bad.directory", fcntl(dir, F_SETLEASE, F_RDLCK), EINVAL);
	close(dir);
}

static void nobody_lease(int fd)
{
	int f = open(path, O_RDONLY);
	put(fd, rc(f));
	put(fd, rc(fcntl(f, F_SETLEASE, F_RDLCK)));
}

static void test_not_owner(void)
{
	int res[2];
	CHECK_EQ("owner.probe", probe(nobody_lease, 1, res, 2), 2);
	CHECK_EQ("owner.nobody_opens", res[0], 0);
	CHECK_EQ("owner.nobody_eacces", res[1], EACCES);
}

static void test_breaks(void)
{
	siginfo_t si;
	char ch;
	int rd;
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIG);
	sigaddset(&s, SIGIO);
	sigprocmask(SIG_BLOCK, &s, NULL);

	/* a reader breaks a write lease: downgrade */
	int fd = open(path, O_RDONLY);
	CHECK_SYS("brk.setsig", fcntl(fd, F_SETSIG, SIG));
	CHECK_SYS("brk.write_lease", fcntl(fd, F_SETLEASE, F_WRLCK));
	CHECK_EQ("brk.owner_is_holder", fcntl(fd, F_GETOWN), getpid());
	pid_t c = opener(O_RDONLY | O_NONBLOCK, &rd);
	CHECK_EQ("brk.nonblock_reader_result", read(rd, &ch, 1), 1);
	CHECK_EQ("brk.nonblock_ewouldblock", ch, 'w');
	waitpid(c, NULL, 0);
	close(rd);
	CHECK_EQ("brk.holder_signalled", wait_sig(SIG, &si, 3000), SIG);
	CHECK_EQ("brk.si_code_poll_msg", si.si_code, POLL_MSG);
	CHECK_EQ("brk.si_fd", si.si_fd, fd);
	CHECK_EQ("brk.getlease_downgrade_pending", fcntl(fd, F_GETLEASE), F_RDLCK);
	c = opener(O_RDONLY, &rd);
	usleep(200000);
	fcntl(rd, F_SETFL, O_NONBLOCK);
	CHECK_ERR("brk.reader_waits", read(rd, &ch, 1), EAGAIN);
	CHECK_SYS("brk.downgrade", fcntl(fd, F_SETLEASE, F_RDLCK));
	fcntl(rd, F_SETFL, 0);
	CHECK_EQ("brk.reader_opened", read(rd, &ch, 1), 1);
	CHECK_EQ("brk.reader_result", ch, 'y');
	waitpid(c, NULL, 0);
	close(rd);
	CHECK_EQ("brk.read_lease_kept", fcntl(fd, F_GETLEASE), F_RDLCK);

	/* a writer breaks a read lease: unlock */
	while (wait_sig(SIG, &si, 0) > 0)
		;
	c = opener(O_WRONLY, &rd);
	CHECK_EQ("wbrk.holder_signalled", wait_sig(SIG, &si, 3000), SIG);
	CHECK_EQ("wbrk.getlease_unlock_pending", fcntl(fd, F_GETLEASE), F_UNLCK);
	usleep(100000);
	fcntl(rd, F_SETFL, O_NONBLOCK);
	CHECK_ERR("wbrk.writer_waits", read(rd, &ch, 1), EAGAIN);
	CHECK_SYS("wbrk.unlock", fcntl(fd, F_SETLEASE, F_UNLCK));
	/* as on Linux, a lease's end clears the owner and F_SETSIG */
	CHECK_EQ("unlock.clears_owner", fcntl(fd, F_GETOWN), 0);
	CHECK_EQ("unlock.clears_sig", fcntl(fd, F_GETSIG), 0);
	fcntl(rd, F_SETFL, 0);
	CHECK_EQ("wbrk.writer_opened", read(rd, &ch, 1), 1);
	CHECK_EQ("wbrk.writer_result", ch, 'y');
	waitpid(c, NULL, 0);
	close(rd);

	/* truncate breaks a lease too */
	fcntl(fd, F_SETSIG, SIG);
	CHECK_SYS("trunc.lease", fcntl(fd, F_SETLEASE, F_RDLCK));
	c = opener(-1, &rd);
	CHECK_EQ("trunc.holder_signalled", wait_sig(SIG, &si, 3000), SIG);
	CHECK_SYS("trunc.unlock", fcntl(fd, F_SETLEASE, F_UNLCK));
	CHECK_EQ("trunc.done", read(rd, &ch, 1), 1);
	CHECK_EQ("trunc.result", ch, 'y');
	waitpid(c, NULL, 0);
	close(rd);

	/* the holder does nothing: the kernel breaks the lease after
	 * lease-break-time (1 s here) */
	CHECK_SYS("timeout.set_break_time", break_time(1));
	CHECK_SYS("timeout.lease", fcntl(fd, F_SETLEASE, F_RDLCK));
	double t0 = now();
	c = opener(O_WRONLY, &rd);
	CHECK_EQ("timeout.writer_opened", read(rd, &ch, 1), 1);
	double took = now() - t0;
	CHECK_EQ("timeout.writer_result", ch, 'y');
	if (!CHECK("timeout.took_break_time", took > 0.5 && took < 10))
		printf("# took %.2f s\n", took);
	/* the wait was sleep, not CPU time */
	struct rusage ru;
	wait4(c, NULL, 0, &ru);
	double cpu = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6 + ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
	if (!CHECK("timeout.wait_was_sleep", cpu < 0.4))
		printf("# opener used %.2f s of CPU\n", cpu);
	close(rd);
	CHECK_EQ("timeout.lease_gone", fcntl(fd, F_GETLEASE), F_UNLCK);
	CHECK_EQ("timeout.clears_sig", fcntl(fd, F_GETSIG), 0);
	CHECK_SYS("timeout.restore_break_time", break_time(45));
	while (wait_sig(SIG, &si, 0) > 0)
		;

	/* a signal interrupts the opener's wait; without F_SETSIG the
	 * holder gets a plain SIGIO */
	CHECK_SYS("eintr.lease", fcntl(fd, F_SETLEASE, F_RDLCK));
	int p[2];
	pipe(p);
	c = fork();
	if (c == 0) {
		struct sigaction sa = {.sa_handler = on_alarm};
		sigaction(SIGALRM, &sa, NULL);
		alarm(1);
		int r = open(path, O_WRONLY);
		ch = r >= 0 ? 'y' : errno == EINTR ? 'i' : 'n';
		write(p[1], &ch, 1);
		_exit(0);
	}
	CHECK_EQ("eintr.result_read", read(p[0], &ch, 1), 1);
	CHECK_EQ("eintr.open_interrupted", ch, 'i');
	CHECK_EQ("eintr.holder_got_sigio", wait_sig(SIGIO, &si, 1000), SIGIO);
	waitpid(c, NULL, 0);
	close(p[0]);
	close(p[1]);
	fcntl(fd, F_SETLEASE, F_UNLCK);

	/* a lease goes with its open file description */
	CHECK_SYS("close.lease", fcntl(fd, F_SETLEASE, F_RDLCK));
	close(fd);
	c = opener(O_WRONLY | O_NONBLOCK, &rd);
	CHECK_EQ("close.writer_result_read", read(rd, &ch, 1), 1);
	CHECK_EQ("close.no_lease_left", ch, 'y');
	waitpid(c, NULL, 0);
	close(rd);
	while (wait_sig(SIG, &si, 0) > 0 || wait_sig(SIGIO, &si, 0) > 0)
		;
	sigprocmask(SIG_UNBLOCK, &s, NULL);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	const char *dir = check_mktmp();
	chmod(dir, 0755);
	snprintf(path, sizeof path, "%s/leasefile", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK_SYS("setup.open", fd);
	CHECK_SYS("setup.write", write(fd, "0123456789", 10));
	close(fd);
	test_rules();
	test_not_owner();
	test_breaks();
	unlink(path);
	CHECK_SYS("cleanup.rmdir", rmdir(dir));
	return check_done();
}
