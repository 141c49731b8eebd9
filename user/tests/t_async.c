/*
 * t_async: signal-driven I/O. fcntl F_SETOWN, F_GETOWN, F_SETOWN_EX,
 * F_GETOWN_EX, F_SETSIG, F_GETSIG and O_ASYNC: who is signalled and with
 * what (plain SIGIO, or the F_SETSIG signal with si_code, si_band and
 * si_fd) when a pipe or socket becomes readable or writable, a thread
 * owner, a process-group owner, the permission rule, and bad input.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "probe.h"

#define SIG (SIGRTMIN + 1)

static int gettid_(void) { return (int)syscall(SYS_gettid); }

/* waits up to ms for sig (blocked), fills si; returns the signal or -1 */
static int wait_sig(int sig, siginfo_t *si, int ms)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	memset(si, 0, sizeof *si);
	return sigtimedwait(&s, si, &ts);
}

/* takes the signals still coming for closed files: Linux sends some at
 * close (a pipe's other end going), and Shortbread's follow their events
 * a little later than Linux's */
static void drain(void)
{
	siginfo_t si;
	while (wait_sig(SIG, &si, 150) > 0 || wait_sig(SIGIO, &si, 0) > 0)
		;
}

static void block(int sig)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	sigprocmask(SIG_BLOCK, &s, NULL);
}

static void test_owner_values(void)
{
	int p[2];
	CHECK_SYS("own.pipe", pipe(p));
	CHECK_EQ("own.default_getown", fcntl(p[0], F_GETOWN), 0);
	CHECK_EQ("own.default_getsig", fcntl(p[0], F_GETSIG), 0);
	struct f_owner_ex ex = {.type = 99, .pid = 99};
	CHECK_SYS("own.default_getown_ex", fcntl(p[0], F_GETOWN_EX, &ex));
	CHECK_EQ("own.default_ex_pid", ex.pid, 0);
	CHECK_EQ("own.default_ex_type_tid", ex.type, F_OWNER_TID);
	CHECK_SYS("own.setown_pid", fcntl(p[0], F_SETOWN, getpid()));
	CHECK_EQ("own.getown_pid", fcntl(p[0], F_GETOWN), getpid());
	CHECK_SYS("own.getown_ex_pid", fcntl(p[0], F_GETOWN_EX, &ex));
	CHECK_EQ("own.ex_type_pid", ex.type, F_OWNER_PID);
	CHECK_EQ("own.ex_pid", ex.pid, getpid());
	CHECK_SYS("own.setown_pgrp", fcntl(p[0], F_SETOWN, -getpgrp()));
	CHECK_EQ("own.getown_pgrp_negative", fcntl(p[0], F_GETOWN), -getpgrp());
	CHECK_SYS("own.getown_ex_pgrp", fcntl(p[0], F_GETOWN_EX, &ex));
	CHECK_EQ("own.ex_type_pgrp", ex.type, F_OWNER_PGRP);
	CHECK_EQ("own.ex_pgrp_positive", ex.pid, getpgrp());
	ex = (struct f_owner_ex){.type = F_OWNER_TID, .pid = gettid_()};
	CHECK_SYS("own.setown_ex_tid", fcntl(p[0], F_SETOWN_EX, &ex));
	CHECK_EQ("own.getown_tid", fcntl(p[0], F_GETOWN), gettid_());
	CHECK_SYS("own.getown_ex_tid", fcntl(p[0], F_GETOWN_EX, &ex));
	CHECK_EQ("own.ex_type_tid", ex.type, F_OWNER_TID);
	/* the owner belongs to the open file description: a dup sees it */
	int d = dup(p[0]);
	CHECK_EQ("own.shared_by_dup", fcntl(d, F_GETOWN), gettid_());
	close(d);
	CHECK_SYS("own.setown_zero_clears", fcntl(p[0], F_SETOWN, 0));
	CHECK_EQ("own.cleared", fcntl(p[0], F_GETOWN), 0);
	CHECK_SYS("sig.set", fcntl(p[0], F_SETSIG, SIG));
	CHECK_EQ("sig.get", fcntl(p[0], F_GETSIG), SIG);
	CHECK_SYS("sig.set_zero", fcntl(p[0], F_SETSIG, 0));

	/* bad input */
	CHECK_ERR("bad.setown_no_such_pid", fcntl(p[0], F_SETOWN, 999999), ESRCH);
	CHECK_ERR("bad.setown_no_such_pgrp", fcntl(p[0], F_SETOWN, -999999), ESRCH);
	CHECK_ERR("bad.setown_int_min", fcntl(p[0], F_SETOWN, INT_MIN), EINVAL);
	ex = (struct f_owner_ex){.type = 3, .pid = getpid()};
	CHECK_ERR("bad.setown_ex_type", fcntl(p[0], F_SETOWN_EX, &ex), EINVAL);
	ex = (struct f_owner_ex){.type = F_OWNER_PID, .pid = 999999};
	CHECK_ERR("bad.setown_ex_no_such_pid", fcntl(p[0], F_SETOWN_EX, &ex), ESRCH);
	CHECK_ERR("bad.setown_ex_fault", fcntl(p[0], F_SETOWN_EX, (void *)8), EFAULT);
	CHECK_ERR("bad.getown_ex_fault", fcntl(p[0], F_GETOWN_EX, (void *)8), EFAULT);
	CHECK_ERR("bad.setsig_65", fcntl(p[0], F_SETSIG, 65), EINVAL);
	CHECK_ERR("bad.setsig_negative", fcntl(p[0], F_SETSIG, -1), EINVAL);
	CHECK_EQ("bad.sig_unchanged", fcntl(p[0], F_GETSIG), 0);
	int o = open("/", O_PATH);
	CHECK_ERR("bad.o_path_setown", fcntl(o, F_SETOWN, getpid()), EBADF);
	CHECK_ERR("bad.o_path_setsig", fcntl(o, F_SETSIG, SIG), EBADF);
	close(o);
	CHECK_ERR("bad.fd", fcntl(-1, F_GETOWN), EBADF);
	close(p[0]);
	close(p[1]);
}

static void test_pipe_signals(void)
{
	int p[2];
	siginfo_t si;
	char buf[4096];
	block(SIGIO);
	block(SIG);
	CHECK_SYS("pipe.create", pipe2(p, O_NONBLOCK));
	/* owner set, O_ASYNC off: nothing */
	fcntl(p[0], F_SETOWN, getpid());
	write(p[1], "a", 1);
	CHECK_EQ("pipe.no_signal_without_o_async", wait_sig(SIGIO, &si, 200), -1);
	read(p[0], buf, sizeof buf);
	/* O_ASYNC on, no F_SETSIG: a plain SIGIO (SI_KERNEL) on data */
	CHECK_SYS("pipe.o_async_on", fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK));
	CHECK("pipe.getfl_o_async", fcntl(p[0], F_GETFL) & O_ASYNC);
	CHECK_EQ("pipe.quiet_until_data", wait_sig(SIGIO, &si, 200), -1);
	write(p[1], "b", 1);
	CHECK_EQ("pipe.sigio_on_data", wait_sig(SIGIO, &si, 3000), SIGIO);
	CHECK_EQ("pipe.sigio_code_si_kernel", si.si_code, SI_KERNEL);
	read(p[0], buf, sizeof buf);
	/* F_SETSIG: that signal, with POLL_IN, the band and the descriptor */
	CHECK_SYS("pipe.setsig", fcntl(p[0], F_SETSIG, SIG));
	write(p[1], "c", 1);
	CHECK_EQ("pipe.setsig_delivered", wait_sig(SIG, &si, 3000), SIG);
	CHECK_EQ("pipe.si_code_poll_in", si.si_code, POLL_IN);
	CHECK_EQ("pipe.si_fd", si.si_fd, p[0]);
	CHECK("pipe.si_band_pollin", si.si_band & POLLIN);
	CHECK_EQ("pipe.no_sigio_with_setsig", wait_sig(SIGIO, &si, 100), -1);
	read(p[0], buf, sizeof buf);
	/* O_ASYNC off again: quiet */
	CHECK_SYS("pipe.o_async_off", fcntl(p[0], F_SETFL, O_NONBLOCK));
	write(p[1], "d", 1);
	CHECK_EQ("pipe.quiet_after_off", wait_sig(SIG, &si, 200), -1);
	read(p[0], buf, sizeof buf);

	/* the write end: POLL_OUT when a full pipe gets room */
	CHECK_SYS("pipe.w_setown", fcntl(p[1], F_SETOWN, getpid()));
	CHECK_SYS("pipe.w_setsig", fcntl(p[1], F_SETSIG, SIG));
	memset(buf, 'x', sizeof buf);
	while (write(p[1], buf, sizeof buf) > 0)
		;
	CHECK_SYS("pipe.w_o_async", fcntl(p[1], F_SETFL, O_ASYNC | O_NONBLOCK));
	CHECK_EQ("pipe.w_quiet_while_full", wait_sig(SIG, &si, 200), -1);
	CHECK_EQ("pipe.read_a_page", read(p[0], buf, sizeof buf), sizeof buf);
	CHECK_EQ("pipe.w_signal_on_room", wait_sig(SIG, &si, 3000), SIG);
	CHECK_EQ("pipe.w_si_code_poll_out", si.si_code, POLL_OUT);
	CHECK_EQ("pipe.w_si_fd", si.si_fd, p[1]);
	CHECK("pipe.w_si_band_pollout", si.si_band & POLLOUT);
	close(p[0]);
	close(p[1]);
	drain();
}

static void test_socket_signal(void)
{
	int sv[2];
	siginfo_t si;
	CHECK_SYS("sock.pair", socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	CHECK_SYS("sock.setown", fcntl(sv[0], F_SETOWN, getpid()));
	CHECK_SYS("sock.setsig", fcntl(sv[0], F_SETSIG, SIG));
	CHECK_SYS("sock.o_async", fcntl(sv[0], F_SETFL, O_ASYNC));
	CHECK_EQ("sock.send", write(sv[1], "hi", 2), 2);
	CHECK_EQ("sock.signal_on_data", wait_sig(SIG, &si, 3000), SIG);
	CHECK_EQ("sock.si_code_poll_in", si.si_code, POLL_IN);
	CHECK_EQ("sock.si_fd", si.si_fd, sv[0]);
	close(sv[0]);
	close(sv[1]);
	drain();
}

/* eventfd has no fasync on Linux: O_ASYNC does not stick and no
 * signal comes when it becomes readable */
static void test_eventfd_no_signal(void)
{
	siginfo_t si;
	int e = eventfd(0, EFD_NONBLOCK);
	CHECK_SYS("eventfd.create", e);
	CHECK_SYS("eventfd.setown", fcntl(e, F_SETOWN, getpid()));
	CHECK_SYS("eventfd.setsig", fcntl(e, F_SETSIG, SIG));
	CHECK_SYS("eventfd.o_async", fcntl(e, F_SETFL, O_ASYNC | O_NONBLOCK));
	/* Linux leaves the bit to the file's fasync, which eventfd has not */
	CHECK("eventfd.o_async_not_shown", !(fcntl(e, F_GETFL) & O_ASYNC));
	int on = 1;
	CHECK_ERR("eventfd.fioasync_enotty", ioctl(e, FIOASYNC, &on), ENOTTY);
	uint64_t one = 1;
	CHECK_EQ("eventfd.write", write(e, &one, sizeof one), (ssize_t)sizeof one);
	CHECK_EQ("eventfd.no_signal", wait_sig(SIG, &si, 500), -1);
	close(e);
	drain();
}

static volatile int other_got = -2;

static void *other_thread(void *arg)
{
	(void)arg;
	siginfo_t si;
	other_got = wait_sig(SIG, &si, 700);
	return NULL;
}

/* a thread owner (F_OWNER_TID) gets the signal itself: another thread
 * waiting for it does not */
static void test_thread_owner(void)
{
	int p[2];
	siginfo_t si;
	CHECK_SYS("tid.pipe", pipe2(p, O_NONBLOCK));
	struct f_owner_ex ex = {.type = F_OWNER_TID, .pid = gettid_()};
	CHECK_SYS("tid.setown_ex", fcntl(p[0], F_SETOWN_EX, &ex));
	fcntl(p[0], F_SETSIG, SIG);
	fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK);
	pthread_t th;
	pthread_create(&th, NULL, other_thread, NULL);
	usleep(100000);
	write(p[1], "t", 1);
	pthread_join(th, NULL);
	CHECK_EQ("tid.other_thread_not_signalled", other_got, -1);
	sigset_t pend;
	sigpending(&pend);
	CHECK("tid.pending_for_owner_thread", sigismember(&pend, SIG));
	CHECK_EQ("tid.owner_takes_it", wait_sig(SIG, &si, 1000), SIG);
	CHECK_EQ("tid.si_fd", si.si_fd, p[0]);
	close(p[0]);
	close(p[1]);
}

/* a process-group owner: every member is signalled (in a group of our own) */
static void test_pgrp_owner(void)
{
	pid_t c = fork();
	if (c == 0) {
		setpgid(0, 0);
		int p[2];
		siginfo_t si;
		if (pipe2(p, O_NONBLOCK) || fcntl(p[0], F_SETOWN, -getpgrp()) || fcntl(p[0], F_SETSIG, SIG) ||
		    fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK))
			_exit(2);
		write(p[1], "g", 1);
		_exit(wait_sig(SIG, &si, 3000) == SIG && si.si_fd == p[0] ? 0 : 1);
	}
	int st;
	waitpid(c, &st, 0);
	CHECK_EQ("pgrp.member_signalled", st, 0);
}

/* nobody's file may not signal root: the owner's setter lacks the right */
static void test_permission(void)
{
	siginfo_t si;
	int ready[2];
	CHECK_SYS("perm.pipe", pipe(ready));
	pid_t parent = getpid();
	pid_t c = fork();
	if (c == 0) {
		if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY))
			_exit(2);
		int p[2];
		if (pipe2(p, O_NONBLOCK) || fcntl(p[0], F_SETOWN, parent) || fcntl(p[0], F_SETSIG, SIG) ||
		    fcntl(p[0], F_SETFL, O_ASYNC | O_NONBLOCK))
			_exit(3);
		write(p[1], "n", 1);
		write(ready[1], "r", 1);
		usleep(300000);
		_exit(0);
	}
	char ch;
	read(ready[0], &ch, 1);
	CHECK_EQ("perm.root_not_signalled_by_nobody", wait_sig(SIG, &si, 300), -1);
	int st;
	waitpid(c, &st, 0);
	CHECK_EQ("perm.child_ok", st, 0);
	close(ready[0]);
	close(ready[1]);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	test_owner_values();
	test_pipe_signals();
	test_socket_signal();
	test_eventfd_no_signal();
	test_thread_owner();
	test_pgrp_owner();
	test_permission();
	return check_done();
}
