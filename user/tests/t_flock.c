/*
 * t_flock: flock(2) locks, owned by the open file description: shared
 * and exclusive locks between descriptions and processes, dup'ed and
 * inherited descriptors sharing the lock, release with the last
 * reference, conversion, blocking waits, EINTR, independence from
 * fcntl record locks, and bad input.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>

#include "check.h"

static char path[512];

/* runs fn(fd) in a child on its own open of the file; returns its exit status */
static int in_child(int (*fn)(int fd))
{
	pid_t c = fork();
	if (c == 0) {
		int fd = open(path, O_RDONLY);
		_exit(fd < 0 ? 99 : fn(fd));
	}
	int st;
	waitpid(c, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

static int try_sh(int fd) { return flock(fd, LOCK_SH | LOCK_NB) == 0 ? 0 : errno == EWOULDBLOCK ? 1 : 2; }
static int try_ex(int fd) { return flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : errno == EWOULDBLOCK ? 1 : 2; }

static void test_shared_exclusive(void)
{
	int fd = open(path, O_RDONLY);
	CHECK_SYS("sh.lock", flock(fd, LOCK_SH));
	CHECK_EQ("sh.other_shared_ok", in_child(try_sh), 0);
	CHECK_EQ("sh.other_exclusive_blocked", in_child(try_ex), 1);
	/* converting to exclusive while alone */
	CHECK_SYS("convert.to_ex", flock(fd, LOCK_EX | LOCK_NB));
	CHECK_EQ("convert.other_shared_blocked", in_child(try_sh), 1);
	CHECK_SYS("convert.relock_same_type", flock(fd, LOCK_EX | LOCK_NB));
	CHECK_SYS("convert.to_sh", flock(fd, LOCK_SH | LOCK_NB));
	CHECK_EQ("convert.other_shared_again", in_child(try_sh), 0);
	/* another open in the same process is another owner */
	int other = open(path, O_RDWR);
	CHECK_ERR("owner.same_process_other_description", flock(other, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	/* as on Linux, a failed conversion leaves the description unlocked */
	CHECK_SYS("convert.other_shared", flock(other, LOCK_SH | LOCK_NB));
	CHECK_ERR("convert.fails", flock(fd, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	CHECK_SYS("convert.failed_left_unlocked", flock(other, LOCK_EX | LOCK_NB));
	CHECK_SYS("unlock.other", flock(other, LOCK_UN));
	CHECK_SYS("unlock.unlocked_ok", flock(fd, LOCK_UN));
	close(other);
	close(fd);
}

static void test_sharing_and_release(void)
{
	int fd = open(path, O_RDONLY);
	CHECK_SYS("dup.lock", flock(fd, LOCK_EX));
	int d = dup(fd);
	CHECK_SYS("dup.same_owner", flock(d, LOCK_EX | LOCK_NB));
	close(fd);
	CHECK_EQ("release.kept_while_dup_open", in_child(try_sh), 1);
	/* a fork's child shares the description: its unlock is ours */
	pid_t c = fork();
	if (c == 0)
		_exit(flock(d, LOCK_UN) == 0 ? 0 : 1);
	int st;
	waitpid(c, &st, 0);
	CHECK_EQ("fork.child_unlocks_shared_description", st, 0);
	CHECK_EQ("fork.unlocked_for_all", in_child(try_ex), 0);
	CHECK_SYS("release.relock", flock(d, LOCK_EX));
	close(d);
	CHECK_EQ("release.with_last_reference", in_child(try_ex), 0);
	/* a child that exits holding a lock on its own description drops it */
	c = fork();
	if (c == 0) {
		int mine = open(path, O_RDONLY);
		_exit(flock(mine, LOCK_EX) == 0 ? 0 : 1);
	}
	waitpid(c, &st, 0);
	fd = open(path, O_RDONLY);
	CHECK_SYS("release.on_exit", flock(fd, LOCK_EX | LOCK_NB));
	close(fd);
}

static void on_alarm(int s) { (void)s; }

static void test_wait_and_eintr(void)
{
	int fd = open(path, O_RDONLY);
	CHECK_SYS("wait.lock", flock(fd, LOCK_EX));
	int p[2];
	CHECK_SYS("wait.pipe", pipe2(p, O_NONBLOCK));
	pid_t c = fork();
	if (c == 0) {
		int mine = open(path, O_RDONLY);
		int r = flock(mine, LOCK_SH);
		if (write(p[1], r == 0 ? "y" : "n", 1) != 1)
			_exit(2);
		_exit(0);
	}
	/* 200 ms only makes a wrong early answer likely to show */
	usleep(200000);
	char ch = 0;
	CHECK_ERR("wait.child_blocked", read(p[0], &ch, 1), EAGAIN);
	CHECK_SYS("wait.unlock", flock(fd, LOCK_UN));
	fcntl(p[0], F_SETFL, 0);
	CHECK_EQ("wait.child_got_lock", read(p[0], &ch, 1), 1);
	CHECK_EQ("wait.child_result", ch, 'y');
	waitpid(c, NULL, 0);
	close(p[0]);
	close(p[1]);

	/* a signal interrupts the wait (no SA_RESTART) */
	CHECK_SYS("eintr.lock", flock(fd, LOCK_EX));
	c = fork();
	if (c == 0) {
		int mine = open(path, O_RDONLY);
		struct sigaction sa = {.sa_handler = on_alarm};
		sigaction(SIGALRM, &sa, NULL);
		alarm(1);
		int r = flock(mine, LOCK_EX);
		_exit(r == -1 && errno == EINTR ? 0 : 1);
	}
	int st;
	waitpid(c, &st, 0);
	CHECK_EQ("eintr.flock", st, 0);
	/* with SA_RESTART the wait goes on until the lock is free */
	c = fork();
	if (c == 0) {
		int mine = open(path, O_RDONLY);
		struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
		sigaction(SIGALRM, &sa, NULL);
		alarm(1);
		_exit(flock(mine, LOCK_EX) == 0 ? 0 : 1);
	}
	usleep(1500000);
	CHECK_EQ("restart.still_waiting", waitpid(c, &st, WNOHANG), 0);
	CHECK_SYS("restart.unlock", flock(fd, LOCK_UN));
	waitpid(c, &st, 0);
	CHECK_EQ("restart.got_lock", st, 0);
	close(fd);
}

static int posix_whole_file(int fd)
{
	(void)fd;
	int rw = open(path, O_RDWR);
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	return fcntl(rw, F_SETLK, &fl) == 0 ? 0 : 1;
}

static void test_independent_and_errors(void)
{
	int fd = open(path, O_RDONLY);
	CHECK_SYS("indep.flock_ex", flock(fd, LOCK_EX));
	CHECK_EQ("indep.fcntl_lock_beside_flock", in_child(posix_whole_file), 0);
	close(fd);

	CHECK_ERR("bad.op_zero", flock(0, 0), EINVAL);
	CHECK_ERR("bad.op_sh_ex", flock(0, LOCK_SH | LOCK_EX), EINVAL);
	CHECK_ERR("bad.op_nb_only", flock(0, LOCK_NB), EINVAL);
	CHECK_ERR("bad.op_before_fd", flock(-1, 16), EINVAL);
	/* LOCK_MAND (32) requests are ignored before anything is checked */
	CHECK_EQ("mand.ignored", flock(-1, 32 | LOCK_SH), 0);
	CHECK_ERR("bad.fd", flock(-1, LOCK_SH), EBADF);
	CHECK_ERR("bad.closed_fd", flock(1000, LOCK_UN), EBADF);
	int o = open(path, O_PATH);
	CHECK_ERR("bad.o_path", flock(o, LOCK_SH), EBADF);
	close(o);
	int wo = open(path, O_WRONLY);
	CHECK_SYS("mode.write_only_shared_ok", flock(wo, LOCK_SH));
	close(wo);
	int p[2];
	CHECK_SYS("pipe.create", pipe(p));
	CHECK_SYS("pipe.flock", flock(p[0], LOCK_EX | LOCK_NB));
	CHECK_ERR("pipe.other_end_is_other_description", flock(p[1], LOCK_EX | LOCK_NB), EWOULDBLOCK);
	close(p[0]);
	close(p[1]);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	const char *dir = check_mktmp();
	snprintf(path, sizeof path, "%s/flockfile", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK_SYS("setup.open", fd);
	close(fd);
	test_shared_exclusive();
	test_sharing_and_release();
	test_wait_and_eintr();
	test_independent_and_errors();
	unlink(path);
	CHECK_SYS("cleanup.rmdir", rmdir(dir));
	return check_done();
}
