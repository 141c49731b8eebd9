/*
 * t_lock: POSIX record locks (fcntl F_SETLK, F_SETLKW, F_GETLK) between
 * processes, and open-file-description locks (F_OFD_*): conflicts, what
 * F_GETLK reports (type, range, pid), splitting and merging, release on
 * close of any descriptor, no inheritance across fork, blocking waits,
 * EDEADLK, EINTR, and bad input.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>

#include "check.h"

static const char *path;

static int lk(int fd, int cmd, short type, off_t start, off_t len)
{
	struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
	return fcntl(fd, cmd, &fl);
}

/* F_GETLK for a write lock on [start, start+len) */
static struct flock probe(int fd, int cmd, off_t start, off_t len)
{
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
	if (fcntl(fd, cmd, &fl) != 0)
		fl.l_type = -1;
	return fl;
}

/* runs fn in a child with its own descriptor of the file; returns its exit status */
static int in_child(int (*fn)(int fd))
{
	pid_t c = fork();
	if (c == 0) {
		int fd = open(path, O_RDWR);
		_exit(fd < 0 ? 99 : fn(fd));
	}
	int st;
	waitpid(c, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

static pid_t parent;

static int child_conflicts(int fd)
{
	if (lk(fd, F_SETLK, F_WRLCK, 2, 3) == 0 || errno != EAGAIN)
		return 1;
	struct flock fl = probe(fd, F_GETLK, 2, 3);
	if (fl.l_type != F_WRLCK || fl.l_start != 0 || fl.l_len != 6 || fl.l_pid != parent || fl.l_whence != SEEK_SET)
		return 2;
	if (lk(fd, F_SETLK, F_RDLCK, 10, 10) != 0) /* outside the parent's range */
		return 3;
	return 0;
}

static int child_after_split(int fd)
{
	struct flock a = probe(fd, F_GETLK, 2, 2), b = probe(fd, F_GETLK, 4, 1);
	if (a.l_type != F_UNLCK)
		return 1;
	if (b.l_type != F_WRLCK || b.l_start != 4 || b.l_len != 2)
		return 2;
	return 0;
}

static int child_shares_read(int fd)
{
	if (lk(fd, F_SETLK, F_RDLCK, 150, 100) != 0)
		return 1;
	if (lk(fd, F_SETLK, F_WRLCK, 150, 1) == 0 || errno != EAGAIN)
		return 2;
	return 0;
}

static int child_locks_all(int fd)
{
	return lk(fd, F_SETLK, F_WRLCK, 0, 0) == 0 ? 0 : 1;
}

static int child_sees_merged(int fd)
{
	struct flock fl = probe(fd, F_GETLK, 15, 1);
	return fl.l_type == F_WRLCK && fl.l_start == 0 && fl.l_len == 20 ? 0 : 1;
}

static int child_sees_eof_lock(int fd)
{
	struct flock fl = probe(fd, F_GETLK, 1000000, 1);
	return fl.l_type == F_WRLCK && fl.l_start == 50 && fl.l_len == 0 ? 0 : 1;
}

static void test_between_processes(int fd)
{
	parent = getpid();
	CHECK_SYS("posix.lock_0_5", lk(fd, F_SETLK, F_WRLCK, 0, 6));
	CHECK_EQ("posix.child_conflict_and_getlk", in_child(child_conflicts), 0);
	CHECK_SYS("posix.unlock_middle", lk(fd, F_SETLK, F_UNLCK, 2, 2));
	CHECK_EQ("posix.split", in_child(child_after_split), 0);
	CHECK_SYS("posix.read_lock", lk(fd, F_SETLK, F_RDLCK, 100, 100));
	CHECK_EQ("posix.read_locks_share", in_child(child_shares_read), 0);
	/* closing any descriptor of the file drops all of this process's locks */
	int other = open(path, O_RDONLY);
	CHECK_SYS("posix.second_fd", other);
	close(other);
	CHECK_EQ("posix.close_any_fd_releases", in_child(child_locks_all), 0);
	/* adjacent locks of one type merge */
	CHECK_SYS("posix.lock_0_9", lk(fd, F_SETLK, F_WRLCK, 0, 10));
	CHECK_SYS("posix.lock_10_19", lk(fd, F_SETLK, F_WRLCK, 10, 10));
	CHECK_EQ("posix.merged", in_child(child_sees_merged), 0);
	/* a lock to end of file and beyond: l_len 0 */
	CHECK_SYS("posix.lock_to_eof", lk(fd, F_SETLK, F_WRLCK, 50, 0));
	CHECK_EQ("posix.eof_lock_reported", in_child(child_sees_eof_lock), 0);
	/* own locks never conflict with oneself */
	struct flock fl = probe(fd, F_GETLK, 0, 0);
	CHECK_EQ("posix.own_locks_unlck", fl.l_type, F_UNLCK);
	CHECK_SYS("posix.unlock_all", lk(fd, F_SETLK, F_UNLCK, 0, 0));
}

/* a fork's child holds none of its parent's locks */
static void test_not_inherited(int fd)
{
	CHECK_SYS("fork.lock", lk(fd, F_SETLK, F_WRLCK, 0, 1));
	pid_t c = fork();
	if (c == 0) {
		/* same descriptor, inherited: still the parent's lock, not ours */
		_exit(lk(fd, F_SETLK, F_WRLCK, 0, 1) == -1 && errno == EAGAIN ? 0 : 1);
	}
	int st;
	waitpid(c, &st, 0);
	CHECK_EQ("fork.not_inherited", st, 0);
	CHECK_SYS("fork.unlock", lk(fd, F_SETLK, F_UNLCK, 0, 1));
}

static void test_wait(int fd)
{
	CHECK_SYS("wait.lock", lk(fd, F_SETLK, F_WRLCK, 0, 1));
	int p[2];
	CHECK_SYS("wait.pipe", pipe2(p, O_NONBLOCK));
	pid_t c = fork();
	if (c == 0) {
		int mine = open(path, O_RDWR);
		int r = lk(mine, F_SETLKW, F_WRLCK, 0, 1);
		write(p[1], r == 0 ? "y" : "n", 1);
		_exit(0);
	}
	/* the child is blocked: nothing arrives until we unlock (a wait of
	 * 200 ms only makes a wrong early answer likely to show) */
	usleep(200000);
	char ch = 0;
	CHECK_ERR("wait.child_blocked", read(p[0], &ch, 1), EAGAIN);
	CHECK_SYS("wait.unlock", lk(fd, F_SETLK, F_UNLCK, 0, 1));
	int fl = fcntl(p[0], F_GETFL);
	fcntl(p[0], F_SETFL, fl & ~O_NONBLOCK);
	CHECK_EQ("wait.child_got_lock", read(p[0], &ch, 1), 1);
	CHECK_EQ("wait.child_result", ch, 'y');
	waitpid(c, NULL, 0);
	close(p[0]);
	close(p[1]);
}

static void on_alarm(int s) { (void)s; }

static void test_deadlock_and_eintr(int fd)
{
	/* We hold byte 0; the child holds byte 1 and waits for byte 0; then
	 * our wait for byte 1 would close a cycle. Whichever of the two
	 * waits second gets EDEADLK. */
	CHECK_SYS("deadlock.lock_a", lk(fd, F_SETLK, F_WRLCK, 0, 1));
	int p[2];
	CHECK_SYS("deadlock.pipe", pipe(p));
	pid_t c = fork();
	if (c == 0) {
		int mine = open(path, O_RDWR);
		if (lk(mine, F_SETLK, F_WRLCK, 1, 1) != 0)
			_exit(2);
		write(p[1], "x", 1);
		int r = lk(mine, F_SETLKW, F_WRLCK, 0, 1);
		_exit(r == -1 && errno == EDEADLK ? 3 : r == 0 ? 0 : 4);
	}
	char ch;
	read(p[0], &ch, 1);
	usleep(200000); /* let the child block (either order is checked) */
	int r = lk(fd, F_SETLKW, F_WRLCK, 1, 1);
	int mine = r == -1 && errno == EDEADLK;
	CHECK_SYS("deadlock.release_a", lk(fd, F_SETLK, F_UNLCK, 0, 2));
	int st;
	waitpid(c, &st, 0);
	int theirs = WIFEXITED(st) && WEXITSTATUS(st) == 3;
	CHECK("deadlock.edeadlk_once", mine + theirs == 1);
	CHECK("deadlock.other_succeeded", mine ? WIFEXITED(st) && WEXITSTATUS(st) == 0 : r == 0);
	lk(fd, F_SETLK, F_UNLCK, 0, 0);
	close(p[0]);
	close(p[1]);

	/* a signal interrupts a wait: EINTR without SA_RESTART */
	c = fork();
	if (c == 0) {
		int mine = open(path, O_RDWR);
		lk(mine, F_SETLK, F_WRLCK, 0, 1);
		pause();
		_exit(0);
	}
	usleep(200000);
	struct sigaction sa = {.sa_handler = on_alarm};
	sigaction(SIGALRM, &sa, NULL);
	alarm(1);
	CHECK_ERR("eintr.setlkw", lk(fd, F_SETLKW, F_WRLCK, 0, 1), EINTR);
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	/* the holder's exit released its lock */
	CHECK_SYS("eintr.after_holder_exit", lk(fd, F_SETLK, F_WRLCK, 0, 1));
	lk(fd, F_SETLK, F_UNLCK, 0, 0);
}

static void test_ofd(void)
{
	int a = open(path, O_RDWR), b = open(path, O_RDWR);
	CHECK_SYS("ofd.lock", lk(a, F_OFD_SETLK, F_WRLCK, 0, 10));
	/* another open file description conflicts, even in this process */
	CHECK_ERR("ofd.other_description_conflicts", lk(b, F_OFD_SETLK, F_WRLCK, 5, 1), EAGAIN);
	CHECK_ERR("ofd.posix_conflicts_with_ofd", lk(b, F_SETLK, F_WRLCK, 5, 1), EAGAIN);
	struct flock fl = probe(b, F_OFD_GETLK, 5, 1);
	CHECK_EQ("ofd.getlk_type", fl.l_type, F_WRLCK);
	CHECK_EQ("ofd.getlk_pid", fl.l_pid, -1);
	CHECK_EQ("ofd.getlk_len", fl.l_len, 10);
	/* a dup is the same description: the same owner */
	int d = dup(a);
	CHECK_SYS("ofd.dup_same_owner", lk(d, F_OFD_SETLK, F_WRLCK, 0, 20));
	close(a);
	CHECK_ERR("ofd.kept_while_dup_open", lk(b, F_OFD_SETLK, F_WRLCK, 15, 1), EAGAIN);
	close(d);
	CHECK_SYS("ofd.released_with_last_fd", lk(b, F_OFD_SETLK, F_WRLCK, 15, 1));
	struct flock bad = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_pid = 1};
	CHECK_ERR("ofd.pid_must_be_zero", fcntl(b, F_OFD_SETLK, &bad), EINVAL);
	close(b);
}

static void test_bad_input(int fd)
{
	struct flock fl = {.l_type = 7, .l_whence = SEEK_SET};
	CHECK_ERR("bad.type", fcntl(fd, F_SETLK, &fl), EINVAL);
	fl.l_type = F_WRLCK;
	fl.l_whence = 5;
	CHECK_ERR("bad.whence", fcntl(fd, F_SETLK, &fl), EINVAL);
	fl.l_whence = SEEK_SET;
	fl.l_start = -1;
	CHECK_ERR("bad.negative_start", fcntl(fd, F_SETLK, &fl), EINVAL);
	CHECK_ERR("bad.pointer", fcntl(fd, F_SETLK, (void *)8), EFAULT);
	int ro = open(path, O_RDONLY), wo = open(path, O_WRONLY);
	CHECK_ERR("bad.write_lock_on_rdonly", lk(ro, F_SETLK, F_WRLCK, 0, 1), EBADF);
	CHECK_ERR("bad.read_lock_on_wronly", lk(wo, F_SETLK, F_RDLCK, 0, 1), EBADF);
	CHECK_SYS("bad.unlock_on_rdonly_ok", lk(ro, F_SETLK, F_UNLCK, 0, 1));
	close(ro);
	close(wo);
	CHECK_ERR("bad.fd", lk(-1, F_SETLK, F_WRLCK, 0, 1), EBADF);
	/* a negative length locks the bytes before l_start */
	CHECK_SYS("neg.len", lk(fd, F_SETLK, F_WRLCK, 10, -5));
	pid_t c = fork();
	if (c == 0) {
		int mine = open(path, O_RDWR);
		struct flock g = probe(mine, F_GETLK, 0, 0);
		_exit(g.l_type == F_WRLCK && g.l_start == 5 && g.l_len == 5 ? 0 : 1);
	}
	int st;
	waitpid(c, &st, 0);
	CHECK_EQ("neg.len_range", st, 0);
	lk(fd, F_SETLK, F_UNLCK, 0, 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	const char *dir = check_mktmp();
	static char buf[512];
	snprintf(buf, sizeof buf, "%s/lockfile", dir);
	path = buf;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK_SYS("setup.open", fd);
	CHECK_SYS("setup.write", write(fd, "0123456789", 10));
	test_between_processes(fd);
	test_not_inherited(fd);
	test_wait(fd);
	test_deadlock_and_eintr(fd);
	test_ofd();
	test_bad_input(fd);
	close(fd);
	unlink(path);
	CHECK_SYS("cleanup.rmdir", rmdir(dir));
	return check_done();
}
