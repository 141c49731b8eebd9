/* t_pipe: pipe, pipe2 and eventfd. */
#define _GNU_SOURCE
#include "check.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void test_pipe_basic(void)
{
	int p[2];
	CHECK_SYS("pipe", pipe(p));
	CHECK("pipe.fds", p[0] >= 0 && p[1] >= 0 && p[0] != p[1]);
	CHECK_EQ("pipe.no_cloexec", fcntl(p[0], F_GETFD), 0);
	CHECK_EQ("pipe.read_end_rdonly", fcntl(p[0], F_GETFL) & O_ACCMODE, O_RDONLY);
	CHECK_EQ("pipe.write_end_wronly", fcntl(p[1], F_GETFL) & O_ACCMODE, O_WRONLY);
	CHECK_EQ("pipe.write", write(p[1], "hello", 5), 5);
	CHECK_EQ("pipe.write2", write(p[1], " there", 6), 6);
	char buf[64] = { 0 };
	/* a read returns what is there, across writes, up to the count */
	CHECK_EQ("pipe.read_partial", read(p[0], buf, 3), 3);
	CHECK_EQ("pipe.read_rest", read(p[0], buf + 3, sizeof buf - 4), 8);
	CHECK_STR("pipe.data", buf, "hello there");
	CHECK_ERR("pipe.write_on_read_end", write(p[0], "x", 1), EBADF);
	CHECK_ERR("pipe.read_on_write_end", read(p[1], buf, 1), EBADF);
	CHECK_ERR("pipe.lseek", lseek(p[0], 0, SEEK_CUR), ESPIPE);
	CHECK_ERR("pipe.pread", pread(p[0], buf, 1, 0), ESPIPE);
	/* EOF once every write end is closed and the pipe is drained */
	write(p[1], "z", 1);
	close(p[1]);
	CHECK_EQ("pipe.read_before_eof", read(p[0], buf, sizeof buf), 1);
	CHECK_EQ("pipe.eof", read(p[0], buf, sizeof buf), 0);
	CHECK_EQ("pipe.eof_again", read(p[0], buf, sizeof buf), 0);
	close(p[0]);

	/* a dup'ed write end keeps the pipe open */
	pipe(p);
	int w2 = dup(p[1]);
	close(p[1]);
	CHECK_SYS("pipe.nonblock_set", fcntl(p[0], F_SETFL, O_NONBLOCK));
	CHECK_ERR("pipe.dup_keeps_open", read(p[0], buf, 1), EAGAIN);
	close(w2);
	CHECK_EQ("pipe.eof_after_last_close", read(p[0], buf, 1), 0);
	close(p[0]);
}

static void test_pipe2(void)
{
	int p[2];
	CHECK_SYS("pipe2", pipe2(p, O_CLOEXEC | O_NONBLOCK));
	CHECK_EQ("pipe2.cloexec_r", fcntl(p[0], F_GETFD), FD_CLOEXEC);
	CHECK_EQ("pipe2.cloexec_w", fcntl(p[1], F_GETFD), FD_CLOEXEC);
	CHECK_EQ("pipe2.nonblock", fcntl(p[0], F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	char c;
	CHECK_ERR("pipe2.empty_eagain", read(p[0], &c, 1), EAGAIN);
	/* fill the pipe: capacity is at least 4 KiB (64 KiB on Linux) */
	static char chunk[1024];
	memset(chunk, 'q', sizeof chunk);
	long total = 0;
	for (;;) {
		ssize_t n = write(p[1], chunk, sizeof chunk);
		if (n < 0) {
			CHECK_EQ("pipe2.full_eagain", errno, EAGAIN);
			break;
		}
		total += n;
		if (total > (16 << 20))
			break;
	}
	CHECK("pipe2.capacity", total >= 4096 && total <= (16 << 20));
	long got = 0, n;
	static char big[65536];
	while ((n = read(p[0], big, sizeof big)) > 0)
		got += n;
	CHECK_EQ("pipe2.drain_all", got, total);
	CHECK_EQ("pipe2.drained_eagain", errno, EAGAIN);
	close(p[0]);
	close(p[1]);
	CHECK_SYS("pipe2.no_flags", pipe2(p, 0));
	CHECK_EQ("pipe2.no_flags_cloexec", fcntl(p[0], F_GETFD), 0);
	close(p[0]);
	close(p[1]);
	CHECK_ERR("pipe2.bad_flags", pipe2(p, O_APPEND), EINVAL);
}

static void test_pipe_fork(void)
{
	int p[2], q[2];
	pipe(p);
	pipe(q);
	pid_t pid = fork();
	if (pid == 0) {
		/* child: echo back everything upper-cased, slowly at first so the
		 * parent blocks in read */
		close(p[1]);
		close(q[0]);
		msleep(100);
		char buf[256];
		ssize_t n;
		while ((n = read(p[0], buf, sizeof buf)) > 0) {
			for (ssize_t i = 0; i < n; i++)
				if (buf[i] >= 'a' && buf[i] <= 'z')
					buf[i] -= 32;
			if (write(q[1], buf, n) != n)
				_exit(2);
		}
		_exit(n == 0 ? 0 : 3);
	}
	close(p[0]);
	close(q[1]);
	write(p[1], "ping", 4);
	char buf[16] = { 0 };
	int got = 0;
	while (got < 4) {
		ssize_t n = read(q[0], buf + got, 4 - got);
		if (n <= 0)
			break;
		got += n;
	}
	CHECK_STR("pipe.fork_roundtrip", buf, "PING");
	/* PIPE_BUF writes are atomic; a large write goes through whole */
	static char big[200000];
	memset(big, 'a', sizeof big);
	pid_t w = fork();
	if (w == 0) {
		close(q[0]);
		_exit(write(p[1], big, sizeof big) == (ssize_t)sizeof big ? 0 : 1);
	}
	long total = 0;
	int all_upper = 1;
	while (total < (long)sizeof big) {
		ssize_t n = read(q[0], big, sizeof big);
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			all_upper &= big[i] == 'A';
		total += n;
	}
	CHECK_EQ("pipe.large_transfer", total, (long)sizeof big);
	CHECK("pipe.large_data", all_upper);
	int st;
	waitpid(w, &st, 0);
	CHECK("pipe.large_writer_ok", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(p[1]);
	CHECK_EQ("pipe.child_sees_eof", read(q[0], buf, 1), 0);
	waitpid(pid, &st, 0);
	CHECK("pipe.child_exit", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(q[0]);
}

static void test_eventfd(void)
{
	uint64_t v;
	int fd = eventfd(3, EFD_CLOEXEC | EFD_NONBLOCK);
	CHECK_SYS("eventfd", fd);
	CHECK_EQ("eventfd.cloexec", fcntl(fd, F_GETFD), FD_CLOEXEC);
	v = 4;
	CHECK_EQ("eventfd.write", write(fd, &v, 8), 8);
	v = 0;
	CHECK_EQ("eventfd.read", read(fd, &v, 8), 8);
	CHECK_EQ("eventfd.sum", v, 7);
	CHECK_ERR("eventfd.empty_eagain", read(fd, &v, 8), EAGAIN);
	CHECK_ERR("eventfd.short_read", read(fd, &v, 4), EINVAL);
	CHECK_ERR("eventfd.short_write", write(fd, &v, 4), EINVAL);
	v = UINT64_MAX;
	CHECK_ERR("eventfd.write_max", write(fd, &v, 8), EINVAL);
	/* the counter saturates at 2^64-2: a write that would overflow blocks */
	v = UINT64_MAX - 1;
	CHECK_EQ("eventfd.write_near_max", write(fd, &v, 8), 8);
	v = 1;
	CHECK_ERR("eventfd.overflow_eagain", write(fd, &v, 8), EAGAIN);
	CHECK_EQ("eventfd.read_max", read(fd, &v, 8), 8);
	CHECK("eventfd.read_max_value", v == UINT64_MAX - 1);
	close(fd);

	fd = eventfd(2, EFD_SEMAPHORE | EFD_NONBLOCK);
	CHECK_SYS("eventfd.semaphore", fd);
	CHECK_EQ("eventfd.sem_read1", read(fd, &v, 8), 8);
	CHECK_EQ("eventfd.sem_value1", v, 1);
	CHECK_EQ("eventfd.sem_read2", read(fd, &v, 8), 8);
	CHECK_EQ("eventfd.sem_value2", v, 1);
	CHECK_ERR("eventfd.sem_empty", read(fd, &v, 8), EAGAIN);
	close(fd);
	CHECK_ERR("eventfd.bad_flags", eventfd(0, 0x7), EINVAL);

	/* blocking read woken by a write from another process */
	fd = eventfd(0, 0);
	pid_t pid = fork();
	if (pid == 0) {
		msleep(100);
		uint64_t one = 5;
		_exit(write(fd, &one, 8) == 8 ? 0 : 1);
	}
	v = 0;
	CHECK_EQ("eventfd.blocking_read", read(fd, &v, 8), 8);
	CHECK_EQ("eventfd.blocking_value", v, 5);
	int st;
	waitpid(pid, &st, 0);
	CHECK("eventfd.writer_ok", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(fd);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	signal(SIGPIPE, SIG_IGN);
	test_pipe_basic();
	test_pipe2();
	test_pipe_fork();
	test_eventfd();
	return check_done();
}
