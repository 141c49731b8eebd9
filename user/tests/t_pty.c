/*
 * t_pty: pseudo-terminals. /dev/ptmx and devpts (mount -t devpts),
 * posix_openpt/grantpt/unlockpt/ptsname (TIOCGPTN, TIOCSPTLCK), the
 * slave's device numbers, TIOCGPTPEER; the line discipline through a pty
 * (echo, erase and kill, ^D, raw mode with VMIN/VTIME, ONLCR); a child
 * with the slave as its controlling terminal running a shell command
 * whose output the parent reads from the master (and busybox script -c);
 * ^C as SIGINT to the foreground group; window size and SIGWINCH; job
 * control (SIGTTIN stops a background reader, TIOCSPGRP rules); hangup
 * (master closed: the slave reads end of file, writes fail with EIO, the
 * session leader gets SIGHUP; slave closed: master reads fail with EIO,
 * poll says POLLHUP); poll and epoll readiness; packet mode (TIOCPKT);
 * indices reused once both sides close.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/epoll.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>

#include "check.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif
#define DEVPTS_MAGIC 0x1cd1

/* devpts on /dev/pts: Linux's devtmpfs has none, and the runner's fresh
 * /dev hides the one Shortbread mounts at boot. */
static int ensure_devpts(void)
{
	struct statfs s;
	if (statfs("/dev/pts", &s) == 0 && s.f_type == DEVPTS_MAGIC)
		return 1;
	mkdir("/dev/pts", 0755);
	if (mount("devpts", "/dev/pts", "devpts", 0, "mode=0620,ptmxmode=0666") != 0)
		return 0;
	return statfs("/dev/pts", &s) == 0 && s.f_type == DEVPTS_MAGIC;
}

/* a new pair: master (O_NOCTTY) and the slave's name; -1 on failure */
static int open_pair(char *name, size_t len)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0)
		return -1;
	if (grantpt(m) || unlockpt(m) || ptsname_r(m, name, len)) {
		close(m);
		return -1;
	}
	return m;
}

/* reads from fd until want appears in what came, EOF/EIO, or ms pass;
 * returns the bytes read (NUL-terminated in buf) */
static int read_until(int fd, char *buf, int size, const char *want, int ms)
{
	int n = 0;
	buf[0] = 0;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (want && strstr(buf, want))
			return n;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		int left = ms - (int)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0 || n >= size - 1)
			return n;
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, left) <= 0)
			continue;
		int k = read(fd, buf + n, size - 1 - n);
		if (k <= 0)
			return n;
		n += k;
		buf[n] = 0;
	}
}

/* a child in a new session with slave name as its controlling terminal
 * on fds 0-2 (what forkpty does); it runs fn and exits with its result */
static pid_t spawn_on(const char *name, int master, int (*fn)(void))
{
	pid_t c = fork();
	if (c == 0) {
		close(master);
		alarm(30);
		if (setsid() < 0)
			_exit(100);
		int s = open(name, O_RDWR);
		if (s < 0)
			_exit(101);
		dup2(s, 0);
		dup2(s, 1);
		dup2(s, 2);
		if (s > 2)
			close(s);
		_exit(fn());
	}
	return c;
}

static int child_status(pid_t c)
{
	int st;
	if (waitpid(c, &st, 0) != c)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 200 + WTERMSIG(st);
}

/* ---- children (their exit status says what they saw) ---- */

static int ctty_child(void)
{
	if (ioctl(0, TIOCSCTTY, 0) != 0) /* already ours: succeeds */
		return 1;
	pid_t sid = 0;
	if (ioctl(0, TIOCGSID, &sid) != 0 || sid != getpid())
		return 2;
	if (tcgetpgrp(0) != getpid())
		return 3;
	int t = open("/dev/tty", O_RDWR);
	if (t < 0)
		return 4;
	close(t);
	/* /proc/self/stat: tty_nr is the slave's device, tpgid our group */
	char st[512] = "";
	FILE *f = fopen("/proc/self/stat", "r");
	if (!f || !fgets(st, sizeof st, f))
		return 6;
	fclose(f);
	char *rp = strrchr(st, ')');
	int ppid, pgrp, sess, ttynr, tpgid;
	char state;
	struct stat sb;
	if (!rp || sscanf(rp + 1, " %c %d %d %d %d %d", &state, &ppid, &pgrp, &sess, &ttynr, &tpgid) != 6 || fstat(0, &sb) != 0)
		return 7;
	if (ttynr != (int)(major(sb.st_rdev) << 8 | minor(sb.st_rdev)) || tpgid != getpid())
		return 8;
	execl("/bin/sh", "sh", "-c", "echo out-$((6*7)); tty", (char *)NULL);
	return 5;
}

static volatile sig_atomic_t got;
static void on_sig(int s) { got = s; }

static int sigint_child(void)
{
	struct sigaction sa = {0};
	sa.sa_handler = on_sig; /* no SA_RESTART: the read fails with EINTR */
	sigaction(SIGINT, &sa, NULL);
	write(1, "ready\n", 6);
	char b[64];
	int n = read(0, b, sizeof b);
	if (n != -1 || errno != EINTR || got != SIGINT)
		return 1;
	/* the partial line typed before ^C was discarded */
	n = read(0, b, sizeof b);
	if (n != 6 || memcmp(b, "after\n", 6) != 0)
		return 2;
	return 0;
}

static int winch_child(void)
{
	struct sigaction sa = {0};
	sa.sa_handler = on_sig;
	sigaction(SIGWINCH, &sa, NULL);
	struct winsize w;
	if (ioctl(0, TIOCGWINSZ, &w) != 0)
		return 1;
	write(1, "ready\n", 6);
	char b[16];
	read(0, b, sizeof b); /* interrupted by SIGWINCH, or the parent's line */
	for (int i = 0; i < 300 && got != SIGWINCH; i++)
		usleep(10000);
	if (got != SIGWINCH)
		return 2;
	if (ioctl(0, TIOCGWINSZ, &w) != 0 || w.ws_row != 33 || w.ws_col != 111)
		return 3;
	return 0;
}

static int hup_child(void)
{
	struct sigaction sa = {0};
	sa.sa_handler = on_sig;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGHUP, &sa, NULL);
	write(1, "ready\n", 6);
	char b[16];
	/* a read asleep when the master closes fails with EIO (n_tty_read
	 * sees TTY_OTHER_CLOSED); reads after the hangup return end of file.
	 * Linux wakes the reader before it hangs the slave up, so a read
	 * between the two still sees EIO: only SIGHUP, sent after the hangup
	 * has replaced the file's operations, says the hangup is complete. */
	int n = read(0, b, sizeof b);
	if (n != -1 || errno != EIO)
		return n == 0 ? 10 : n > 0 ? 11 : errno == EINTR ? 12 : 13;
	for (int i = 0; i < 300 && got != SIGHUP; i++)
		usleep(10000);
	if (got != SIGHUP)
		return 2;
	n = read(0, b, sizeof b);
	if (n != 0)
		return n > 0 ? 21 : errno == EIO ? 22 : 23;
	if (write(1, "x", 1) != -1 || errno != EIO)
		return 3;
	/* the session lost its controlling terminal */
	if (open("/dev/tty", O_RDWR) != -1 || errno != ENXIO)
		return 4;
	return 0;
}

static int jobctl_child(void)
{
	/* a background group reading its controlling terminal stops */
	pid_t g = fork();
	if (g == 0) {
		setpgid(0, 0);
		char b[4];
		read(0, b, sizeof b);
		_exit(0);
	}
	setpgid(g, g);
	int st;
	if (waitpid(g, &st, WUNTRACED) != g || !WIFSTOPPED(st) || WSTOPSIG(st) != SIGTTIN)
		return 1;
	/* another session's group: EPERM; the leader gives it the foreground */
	if (tcsetpgrp(0, 1) != -1 || errno != EPERM)
		return 3;
	if (tcsetpgrp(0, g) != 0 || tcgetpgrp(0) != g)
		return 2;
	/* now the leader is in the background: with SIGTTOU ignored it may
	 * take the foreground back */
	signal(SIGTTOU, SIG_IGN);
	if (tcsetpgrp(0, getpgrp()) != 0)
		return 4;
	kill(g, SIGKILL);
	waitpid(g, &st, 0);
	/* a background write: allowed, unless TOSTOP (then SIGTTOU) */
	signal(SIGTTOU, SIG_DFL);
	struct termios t;
	tcgetattr(0, &t);
	for (int tostop = 0; tostop < 2; tostop++) {
		if (tostop) {
			t.c_lflag |= TOSTOP;
			tcsetattr(0, TCSANOW, &t);
		}
		g = fork();
		if (g == 0) {
			setpgid(0, 0);
			_exit(write(1, "bg\n", 3) == 3 ? 0 : 1);
		}
		setpgid(g, g);
		if (waitpid(g, &st, WUNTRACED) != g)
			return 5;
		if (!tostop && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
			return 6;
		if (tostop && !(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTTOU))
			return 7;
	}
	kill(g, SIGKILL);
	waitpid(g, &st, 0);
	return 0;
}

/* ---- the checks ---- */

static void test_open(void)
{
	struct stat st;
	CHECK_SYS("ptmx.stat", stat("/dev/ptmx", &st));
	CHECK("ptmx.is_chr_5_2", S_ISCHR(st.st_mode) && major(st.st_rdev) == 5 && minor(st.st_rdev) == 2);
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	CHECK_SYS("posix_openpt", m);
	if (m < 0)
		return;
	unsigned n = 99;
	CHECK_SYS("tiocgptn", ioctl(m, TIOCGPTN, &n));
	char want[32];
	snprintf(want, sizeof want, "/dev/pts/%u", n);
	CHECK_STR("ptsname", ptsname(m), want);
	int lk = 0;
	CHECK("tiocgptlck.locked", ioctl(m, TIOCGPTLCK, &lk) == 0 && lk == 1);
	CHECK_ERR("open.locked_eio", open(want, O_RDWR | O_NOCTTY), EIO);
	CHECK_SYS("grantpt", grantpt(m));
	CHECK_SYS("unlockpt", unlockpt(m));
	CHECK("tiocgptlck.unlocked", ioctl(m, TIOCGPTLCK, &lk) == 0 && lk == 0);
	CHECK_SYS("slave.stat", stat(want, &st));
	CHECK("slave.is_chr_136_n", S_ISCHR(st.st_mode) && major(st.st_rdev) == 136 && minor(st.st_rdev) == n);
	CHECK_EQ("slave.owner", st.st_uid, getuid());
	int s = open(want, O_RDWR | O_NOCTTY);
	CHECK_SYS("slave.open", s);
	CHECK("slave.isatty", isatty(s) && isatty(m));
	char nm[64] = "";
	CHECK("slave.ttyname", ttyname_r(s, nm, sizeof nm) == 0 && strcmp(nm, want) == 0);
	/* the slave is listed in /dev/pts */
	CHECK("slave.listed", access(want, F_OK) == 0);
	int p = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY);
	CHECK_SYS("tiocgptpeer", p);
	if (p >= 0) {
		CHECK("tiocgptpeer.same_tty", fstat(p, &st) == 0 && major(st.st_rdev) == 136 && minor(st.st_rdev) == n);
		CHECK_EQ("tiocgptpeer.write", write(p, "peer\n", 5), 5);
		char b[32] = "";
		read_until(m, b, sizeof b, "\n", 3000);
		CHECK_STR("tiocgptpeer.master_reads", b, "peer\r\n");
		close(p);
	}
	CHECK_ERR("tiocgptn.on_slave", ioctl(s, TIOCGPTN, &n), ENOTTY);
	close(s);
	close(m);
	CHECK_ERR("slave.gone_after_master_close", access(want, F_OK), ENOENT);
}

static void test_ldisc(void)
{
	char name[64], b[256];
	int m = open_pair(name, sizeof name);
	int s = open(name, O_RDWR | O_NOCTTY);
	CHECK("ldisc.open", m >= 0 && s >= 0);
	if (m < 0 || s < 0)
		return;
	struct termios t;
	CHECK("ldisc.default_termios", tcgetattr(s, &t) == 0 && (t.c_lflag & (ICANON | ECHO | ISIG)) == (ICANON | ECHO | ISIG) &&
					       (t.c_oflag & ONLCR) && (t.c_iflag & ICRNL) && t.c_cc[VINTR] == 3);
	/* termios read through the master is the slave's */
	struct termios tm;
	CHECK("ldisc.master_termios", tcgetattr(m, &tm) == 0 && tm.c_lflag == t.c_lflag);

	/* poll: nothing to read on either side yet, both writable */
	struct pollfd p[2] = {{m, POLLIN | POLLOUT, 0}, {s, POLLIN | POLLOUT, 0}};
	CHECK("poll.initial", poll(p, 2, 0) == 2 && p[0].revents == POLLOUT && p[1].revents == POLLOUT);

	/* typing: erase (DEL) and kill (^U) edit the line; CR becomes NL */
	write(m, "abc\x7f", 4);
	p[1].revents = 0;
	CHECK("poll.slave_partial_line", poll(&p[1], 1, 50) == 1 && !(p[1].revents & POLLIN));
	write(m, "d\r", 2);
	CHECK("poll.slave_line", poll(&p[1], 1, 3000) == 1 && (p[1].revents & POLLIN));
	int n = read(s, b, sizeof b);
	CHECK("canon.erase", n == 4 && memcmp(b, "abd\n", 4) == 0);
	n = read_until(m, b, sizeof b, "\r\n", 3000);
	CHECK_STR("canon.echo", b, "abc\b \bd\r\n");
	write(m, "junk\x15ok\n", 8);
	n = read(s, b, sizeof b);
	CHECK("canon.kill", n == 3 && memcmp(b, "ok\n", 3) == 0);
	read_until(m, b, sizeof b, "ok\r\n", 3000);
	/* ^D: the pending text, then end of file on an empty line */
	write(m, "xy\x04", 3);
	n = read(s, b, sizeof b);
	CHECK("canon.eof_flushes", n == 2 && memcmp(b, "xy", 2) == 0);
	write(m, "\x04", 1);
	CHECK_EQ("canon.eof", read(s, b, sizeof b), 0);
	read_until(m, b, sizeof b, NULL, 100);

	/* output: ONLCR; poll and epoll on the master */
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = m};
	CHECK_SYS("epoll.add_master", epoll_ctl(ep, EPOLL_CTL_ADD, m, &ev));
	CHECK_EQ("epoll.master_idle", epoll_wait(ep, &ev, 1, 0), 0);
	write(s, "one\ntwo\n", 8);
	CHECK("epoll.master_readable", epoll_wait(ep, &ev, 1, 3000) == 1 && ev.data.fd == m && (ev.events & EPOLLIN));
	close(ep);
	p[0].revents = 0;
	CHECK("poll.master_readable", poll(&p[0], 1, 3000) == 1 && (p[0].revents & POLLIN));
	n = read_until(m, b, sizeof b, "two\r\n", 3000);
	CHECK_STR("output.onlcr", b, "one\r\ntwo\r\n");
	int avail = -1;
	CHECK("fionread.master_empty", ioctl(m, FIONREAD, &avail) == 0 && avail == 0);

	/* raw mode: bytes at once, no echo; VMIN 0 VTIME 2 times out */
	cfmakeraw(&t);
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 2;
	CHECK_SYS("raw.tcsetattr", tcsetattr(s, TCSANOW, &t));
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	n = read(s, b, sizeof b);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	CHECK("raw.vtime_timeout", n == 0 && ms >= 150 && ms < 3000);
	write(m, "q\x03\x7f", 3);
	n = read_until(s, b, sizeof b, NULL, 200);
	CHECK("raw.bytes", n == 3 && memcmp(b, "q\x03\x7f", 3) == 0);
	CHECK_EQ("raw.no_echo", read_until(m, b, sizeof b, NULL, 100), 0);
	/* VMIN 4 VTIME 0: poll waits for four bytes */
	t.c_cc[VMIN] = 4;
	t.c_cc[VTIME] = 0;
	tcsetattr(s, TCSANOW, &t);
	write(m, "12", 2);
	usleep(50000);
	p[1].events = POLLIN;
	p[1].revents = 0;
	CHECK("raw.vmin_poll_waits", poll(&p[1], 1, 0) == 0);
	write(m, "34", 2);
	n = read(s, b, sizeof b);
	CHECK("raw.vmin_read", n == 4 && memcmp(b, "1234", 4) == 0);
	write(s, "a\nb", 3);
	n = read_until(m, b, sizeof b, "b", 3000);
	CHECK_STR("raw.no_onlcr", b, "a\nb");

	/* the slave closes: master reads what is left, then EIO; POLLHUP */
	write(s, "last", 4);
	close(s);
	n = read(m, b, sizeof b);
	CHECK("slave_closed.drain", n == 4 && memcmp(b, "last", 4) == 0);
	CHECK_ERR("slave_closed.master_eio", read(m, b, sizeof b), EIO);
	p[0].events = POLLIN;
	p[0].revents = 0;
	CHECK("slave_closed.pollhup", poll(&p[0], 1, 0) == 1 && (p[0].revents & POLLHUP));
	close(m);
}

static void test_session(void)
{
	char name[64], b[512];
	int m = open_pair(name, sizeof name);
	CHECK("session.open", m >= 0);
	if (m < 0)
		return;
	/* the command's output, read from the master until the slave closes */
	pid_t c = spawn_on(name, m, ctty_child);
	int n = read_until(m, b, sizeof b, NULL, 20000);
	char want[128];
	snprintf(want, sizeof want, "out-42\r\n%s\r\n", name);
	CHECK("session.shell_output", n > 0 && strcmp(b, want) == 0);
	if (strcmp(b, want) != 0)
		printf("# got \"%s\"\n", b);
	CHECK_EQ("session.ctty_child", child_status(c), 0);
	close(m);

	/* ^C: SIGINT to the foreground group, the line discarded */
	m = open_pair(name, sizeof name);
	got = 0;
	c = spawn_on(name, m, sigint_child);
	read_until(m, b, sizeof b, "ready\r\n", 10000);
	usleep(100000); /* the child is in its read */
	write(m, "partial\x03", 8);
	usleep(100000);
	write(m, "after\n", 6);
	CHECK_EQ("sigint.child", child_status(c), 0);
	close(m);

	/* window size: set through the master, SIGWINCH to the foreground */
	m = open_pair(name, sizeof name);
	c = spawn_on(name, m, winch_child);
	read_until(m, b, sizeof b, "ready\r\n", 10000);
	struct winsize w = {.ws_row = 33, .ws_col = 111};
	CHECK_SYS("winsize.set_on_master", ioctl(m, TIOCSWINSZ, &w));
	struct winsize r;
	CHECK("winsize.get_on_master", ioctl(m, TIOCGWINSZ, &r) == 0 && r.ws_row == 33 && r.ws_col == 111);
	usleep(100000);
	write(m, "\n", 1);
	CHECK_EQ("winsize.sigwinch_child", child_status(c), 0);
	close(m);

	/* job control */
	m = open_pair(name, sizeof name);
	c = spawn_on(name, m, jobctl_child);
	CHECK_EQ("jobctl.child", child_status(c), 0);
	close(m);

	/* hangup: the master closes under a reading session leader */
	m = open_pair(name, sizeof name);
	c = spawn_on(name, m, hup_child);
	read_until(m, b, sizeof b, "ready\r\n", 10000);
	usleep(100000);
	close(m);
	CHECK_EQ("hangup.child", child_status(c), 0);

	/* TIOCSCTTY through the master makes the slave the controlling
	 * terminal; a second session cannot take it */
	m = open_pair(name, sizeof name);
	c = fork();
	if (c == 0) {
		alarm(30);
		if (setsid() < 0 || ioctl(m, TIOCSCTTY, 0) != 0)
			_exit(1);
		int t = open("/dev/tty", O_RDWR);
		int sl = open(name, O_RDWR | O_NOCTTY);
		pid_t sid = 0;
		if (t < 0 || sl < 0 || ioctl(sl, TIOCGSID, &sid) != 0 || sid != getpid())
			_exit(2);
		if (tcgetpgrp(t) != getpid())
			_exit(3);
		pid_t g = fork();
		if (g == 0) {
			setsid();
			_exit(ioctl(m, TIOCSCTTY, 0) == -1 && errno == EPERM ? 0 : 1);
		}
		int st2;
		waitpid(g, &st2, 0);
		_exit(WIFEXITED(st2) && WEXITSTATUS(st2) == 0 ? 0 : 4);
	}
	CHECK_EQ("tiocsctty.through_master", child_status(c), 0);
	close(m);

	/* TIOCSPGRP on a terminal that is not the caller's: ENOTTY */
	m = open_pair(name, sizeof name);
	int s = open(name, O_RDWR | O_NOCTTY);
	pid_t pg = getpgrp();
	CHECK_ERR("tiocspgrp.not_ctty", ioctl(s, TIOCSPGRP, &pg), ENOTTY);
	CHECK_ERR("tiocgpgrp.not_ctty", tcgetpgrp(s), ENOTTY);
	close(s);
	close(m);
}

static void test_script(void)
{
	/* busybox script runs the command on a pty and copies its output */
	int pfd[2];
	if (pipe(pfd) != 0)
		return;
	pid_t c = fork();
	if (c == 0) {
		alarm(30);
		int nul = open("/dev/null", O_RDONLY);
		dup2(nul, 0);
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		close(pfd[0]);
		execl("/bin/busybox", "script", "-q", "-c", "echo via-script; tty", "/tmp/t_pty.typescript", (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	char b[512];
	int n = read_until(pfd[0], b, sizeof b, NULL, 20000);
	close(pfd[0]);
	int st = child_status(c);
	CHECK("script.output", n > 0 && strstr(b, "via-script\r\n") && strstr(b, "/dev/pts/"));
	if (!strstr(b, "via-script"))
		printf("# script printed \"%s\" status %d\n", b, st);
	CHECK_EQ("script.status", st, 0);
	FILE *f = fopen("/tmp/t_pty.typescript", "r");
	char line[256] = "";
	int found = 0;
	while (f && fgets(line, sizeof line, f))
		found |= strstr(line, "via-script") != NULL;
	if (f)
		fclose(f);
	CHECK("script.typescript", found);
	unlink("/tmp/t_pty.typescript");
}

static void test_packet(void)
{
	char name[64], b[64];
	int m = open_pair(name, sizeof name);
	int s = open(name, O_RDWR | O_NOCTTY);
	CHECK("packet.open", m >= 0 && s >= 0);
	if (m < 0 || s < 0)
		return;
	int on = 1, got = 0;
	CHECK_SYS("packet.tiocpkt", ioctl(m, TIOCPKT, &on));
	CHECK("packet.tiocgpkt", ioctl(m, TIOCGPKT, &got) == 0 && got == 1);
	CHECK_ERR("packet.tiocpkt_on_slave", ioctl(s, TIOCPKT, &on), ENOTTY);
	/* data comes after a TIOCPKT_DATA byte */
	write(s, "hi", 2);
	int n = read_until(m, b, sizeof b, NULL, 300);
	CHECK("packet.data", n == 3 && b[0] == TIOCPKT_DATA && memcmp(b + 1, "hi", 2) == 0);
	/* a flush of the slave's input: one status byte, POLLPRI */
	tcflush(s, TCIFLUSH);
	struct pollfd p = {m, POLLIN | POLLPRI, 0};
	CHECK("packet.pollpri", poll(&p, 1, 3000) == 1 && (p.revents & POLLPRI));
	n = read(m, b, sizeof b);
	CHECK("packet.flushread", n == 1 && b[0] == TIOCPKT_FLUSHREAD);
	tcflush(s, TCOFLUSH);
	n = read(m, b, sizeof b);
	CHECK("packet.flushwrite", n == 1 && b[0] == TIOCPKT_FLUSHWRITE);
	/* ^S/^Q flow control turned off and on */
	struct termios t;
	tcgetattr(s, &t);
	t.c_iflag &= ~IXON;
	tcsetattr(s, TCSANOW, &t);
	n = read(m, b, sizeof b);
	CHECK("packet.nostop", n == 1 && b[0] == TIOCPKT_NOSTOP);
	t.c_iflag |= IXON;
	tcsetattr(s, TCSANOW, &t);
	n = read(m, b, sizeof b);
	CHECK("packet.dostop", n == 1 && b[0] == TIOCPKT_DOSTOP);
	on = 0;
	ioctl(m, TIOCPKT, &on);
	write(s, "x", 1);
	n = read_until(m, b, sizeof b, NULL, 300);
	CHECK("packet.off", n == 1 && b[0] == 'x');
	close(s);
	close(m);
}

static void test_reuse(void)
{
	/* both sides closed: the index is free again (the pair is gone) */
	char first[64] = "", name[64];
	int ok = 1;
	long files0 = check_proc_value("/proc/shortbread/kmem", "open_files");
	for (int i = 0; i < 300 && ok; i++) {
		int m = open_pair(name, sizeof name);
		int s = open(name, O_RDWR | O_NOCTTY);
		if (m < 0 || s < 0) {
			ok = 0;
			break;
		}
		write(m, "data\n", 5);
		write(s, "more\n", 5);
		if (i == 0)
			strcpy(first, name);
		else if (strcmp(first, name) != 0)
			ok = 0;
		close(s);
		close(m);
	}
	CHECK("reuse.index_freed", ok);
	if (files0 >= 0) /* Shortbread: the kernel's count of open files is back */
		CHECK("reuse.open_files_back", check_proc_value("/proc/shortbread/kmem", "open_files") <= files0);
	/* while the slave stays open, the index stays taken */
	int m = open_pair(name, sizeof name);
	int s = open(name, O_RDWR | O_NOCTTY);
	close(m);
	char other[64] = "";
	int m2 = open_pair(other, sizeof other);
	CHECK("reuse.held_by_slave", m2 >= 0 && strcmp(other, name) != 0);
	close(s);
	close(m2);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	alarm(120);
	if (!CHECK("devpts.mounted", ensure_devpts()))
		return check_done();
	test_open();
	test_ldisc();
	test_session();
	test_script();
	test_packet();
	test_reuse();
	return check_done();
}
