/* POSIX message queues: mq_open (create, exclusive, attributes and their
 * limits, permissions, close-on-exec), priority order, sizes, blocking,
 * non-blocking and timed sends and receives, mq_notify with a signal,
 * read and poll on a queue descriptor, mq_unlink with the queue still
 * open, RLIMIT_MSGQUEUE, /proc/sys/fs/mqueue; the mqueue file system
 * (mount -t mqueue): queues as files with their status, created by
 * open(2) and removed by unlink(2), chmod deciding who may open them,
 * and EPERM for what its directory cannot hold. */
#define _GNU_SOURCE
#include "check.h"
#include <fcntl.h>
#include <mqueue.h>
#include <poll.h>
#include <signal.h>
#include <dirent.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>

static struct timespec after_ms(long ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (ms % 1000) * 1000000L;
	ts.tv_sec += ms / 1000 + ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	return ts;
}

static long elapsed_ms(struct timespec a)
{
	struct timespec b;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
}

static const char *Q = "/t_mqueue";

static void test_basics(void)
{
	mq_unlink(Q);
	struct mq_attr at = {.mq_maxmsg = 4, .mq_msgsize = 64};
	mqd_t q = mq_open(Q, O_CREAT | O_EXCL | O_RDWR, 0600, &at);
	CHECK_SYS("open.create", q);
	CHECK("open.cloexec", fcntl(q, F_GETFD) & FD_CLOEXEC);
	CHECK_ERR("open.excl", mq_open(Q, O_CREAT | O_EXCL | O_RDWR, 0600, &at), EEXIST);
	CHECK_ERR("open.no_such", mq_open("/t_mqueue_none", O_RDONLY), ENOENT);
	CHECK_ERR("open.slash_inside", mq_open("/a/b", O_CREAT | O_RDWR, 0600, NULL), EACCES);
	struct mq_attr bad = {.mq_maxmsg = 0, .mq_msgsize = 64};
	CHECK_ERR("open.zero_maxmsg", mq_open("/t_mqueue_bad", O_CREAT | O_RDWR, 0600, &bad), EINVAL);
	struct mq_attr got;
	CHECK_SYS("getattr", mq_getattr(q, &got));
	CHECK_EQ("getattr.maxmsg", got.mq_maxmsg, 4);
	CHECK_EQ("getattr.msgsize", got.mq_msgsize, 64);
	CHECK_EQ("getattr.curmsgs", got.mq_curmsgs, 0);
	CHECK_EQ("getattr.flags", got.mq_flags, 0);

	/* highest priority first, first in first out within one */
	CHECK_SYS("send.a1", mq_send(q, "a", 1, 1));
	CHECK_SYS("send.b5", mq_send(q, "bb", 2, 5));
	CHECK_SYS("send.c1", mq_send(q, "ccc", 3, 1));
	CHECK_SYS("send.d5", mq_send(q, "dddd", 4, 5));
	CHECK_ERR("send.too_long", mq_send(q, "x", 65, 0), EMSGSIZE);
	CHECK_ERR("send.prio_max", mq_send(q, "x", 1, 32768), EINVAL);
	mq_getattr(q, &got);
	CHECK_EQ("getattr.curmsgs_4", got.mq_curmsgs, 4);
	char st[128] = {0};
	CHECK("read.status", read(q, st, sizeof st - 1) > 0 && strncmp(st, "QSIZE:10 ", 9) == 0);
	struct pollfd p = {.fd = q, .events = POLLIN | POLLOUT};
	CHECK_EQ("poll.full", poll(&p, 1, 0), 1);
	CHECK_EQ("poll.full_revents", p.revents, POLLIN);
	/* a full queue: O_NONBLOCK is EAGAIN, a deadline ETIMEDOUT */
	struct mq_attr nb = {.mq_flags = O_NONBLOCK};
	CHECK_SYS("setattr.nonblock", mq_setattr(q, &nb, NULL));
	CHECK_ERR("send.full_nonblock", mq_send(q, "e", 1, 0), EAGAIN);
	struct mq_attr blk = {.mq_flags = 0};
	mq_setattr(q, &blk, &got);
	CHECK_EQ("setattr.old_flags", got.mq_flags, O_NONBLOCK);
	struct timespec past = after_ms(-1000);
	CHECK_ERR("send.full_deadline_passed", mq_timedsend(q, "e", 1, 0, &past), ETIMEDOUT);
	struct timespec badts = {.tv_sec = 1, .tv_nsec = 2000000000L};
	CHECK_ERR("send.bad_timeout", mq_timedsend(q, "e", 1, 0, &badts), EINVAL);

	char buf[64];
	unsigned prio = 99;
	CHECK_ERR("receive.short_buffer", mq_receive(q, buf, 63, &prio), EMSGSIZE);
	const char *want[] = {"bb", "dddd", "a", "ccc"};
	unsigned wantp[] = {5, 5, 1, 1};
	int order = 1;
	for (int i = 0; i < 4; i++) {
		ssize_t n = mq_receive(q, buf, sizeof buf, &prio);
		if (n != (ssize_t)strlen(want[i]) || memcmp(buf, want[i], n) || prio != wantp[i])
			order = 0;
	}
	CHECK("receive.priority_order", order);
	p.revents = 0;
	CHECK_EQ("poll.empty", poll(&p, 1, 0), 1);
	CHECK_EQ("poll.empty_revents", p.revents, POLLOUT);
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct timespec soon = after_ms(150);
	CHECK_ERR("receive.timeout", mq_timedreceive(q, buf, sizeof buf, &prio, &soon), ETIMEDOUT);
	CHECK("receive.timeout_waited", elapsed_ms(t0) >= 120);

	/* a blocked receiver is woken by another process's send */
	pid_t pid = fork();
	if (pid == 0) {
		usleep(100000);
		_exit(mq_send(q, "wake", 4, 3) == 0 ? 0 : 1);
	}
	ssize_t n = mq_receive(q, buf, sizeof buf, &prio);
	CHECK("receive.woken", n == 4 && memcmp(buf, "wake", 4) == 0 && prio == 3);
	waitpid(pid, NULL, 0);

	/* unlinked, the queue lives on while open */
	CHECK_SYS("unlink", mq_unlink(Q));
	CHECK_ERR("unlink.again", mq_unlink(Q), ENOENT);
	CHECK_ERR("open.after_unlink", mq_open(Q, O_RDWR), ENOENT);
	CHECK_SYS("send.after_unlink", mq_send(q, "z", 1, 0));
	CHECK_EQ("receive.after_unlink", mq_receive(q, buf, sizeof buf, NULL), 1);
	CHECK_ERR("write.einval", write(q, "x", 1), EINVAL);
	mq_close(q);
	CHECK_ERR("getattr.closed", mq_getattr(q, &got), EBADF);
	CHECK_ERR("getattr.not_a_queue", mq_getattr(0, &got), EBADF);
}

static void test_access(void)
{
	mq_unlink(Q);
	mqd_t w = mq_open(Q, O_CREAT | O_WRONLY, 0600, NULL);
	CHECK_SYS("access.create_default", w);
	struct mq_attr got;
	mq_getattr(w, &got);
	CHECK_EQ("access.default_maxmsg", got.mq_maxmsg, 10);
	CHECK_EQ("access.default_msgsize", got.mq_msgsize, 8192);
	char buf[8192];
	CHECK_ERR("access.receive_on_write_only", mq_receive(w, buf, sizeof buf, NULL), EBADF);
	pid_t pid = fork();
	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(10);
		if (mq_open(Q, O_RDONLY) != -1 || errno != EACCES)
			_exit(11);
		struct mq_attr big = {.mq_maxmsg = 11, .mq_msgsize = 128};
		if (mq_open("/t_mqueue_nobody", O_CREAT | O_RDWR, 0600, &big) != -1 || errno != EINVAL)
			_exit(12); /* past msg_max without CAP_SYS_RESOURCE */
		struct rlimit r = {1000, 1000};
		setrlimit(RLIMIT_MSGQUEUE, &r);
		if (mq_open("/t_mqueue_nobody", O_CREAT | O_RDWR, 0600, NULL) != -1 || errno != EMFILE)
			_exit(13); /* 10 x 8192 bytes past RLIMIT_MSGQUEUE */
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK_EQ("access.nobody", WEXITSTATUS(st), 0);
	struct mq_attr big = {.mq_maxmsg = 11, .mq_msgsize = 128};
	mqd_t r = mq_open("/t_mqueue_root", O_CREAT | O_RDWR, 0600, &big);
	CHECK_SYS("access.root_past_msg_max", r);
	mq_close(r);
	mq_unlink("/t_mqueue_root");
	mq_close(w);
	mq_unlink(Q);
	char v[32] = {0};
	int f = open("/proc/sys/fs/mqueue/msg_max", O_RDONLY);
	CHECK("proc.msg_max", f >= 0 && read(f, v, sizeof v - 1) > 0 && strcmp(v, "10\n") == 0);
	close(f);
}

static void test_notify(void)
{
	mq_unlink(Q);
	mqd_t q = mq_open(Q, O_CREAT | O_RDWR, 0600, NULL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1, .sigev_value.sival_int = 42};
	CHECK_SYS("notify.register", mq_notify(q, &ev));
	pid_t pid = fork();
	if (pid == 0) {
		mqd_t c = mq_open(Q, O_RDWR);
		struct sigevent e2 = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR2};
		if (mq_notify(c, &e2) != -1 || errno != EBUSY)
			_exit(1);
		_exit(mq_send(c, "n", 1, 0) == 0 ? 0 : 2);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK_EQ("notify.other_busy_and_send", WEXITSTATUS(st), 0);
	siginfo_t si;
	struct timespec two = {2, 0};
	CHECK_EQ("notify.signal", sigtimedwait(&set, &si, &two), SIGUSR1);
	CHECK_EQ("notify.si_code", si.si_code, SI_MESGQ);
	CHECK_EQ("notify.si_value", si.si_value.sival_int, 42);
	CHECK_EQ("notify.si_pid", si.si_pid, pid);
	/* one-shot: a second message sends nothing */
	char buf[8192];
	mq_receive(q, buf, sizeof buf, NULL);
	mq_send(q, "m", 1, 0);
	struct timespec short_wait = {0, 200000000};
	CHECK_ERR("notify.one_shot", sigtimedwait(&set, &si, &short_wait), EAGAIN);
	mq_receive(q, buf, sizeof buf, NULL);
	CHECK_SYS("notify.again", mq_notify(q, &ev));
	CHECK_SYS("notify.remove", mq_notify(q, NULL));
	mq_send(q, "m", 1, 0);
	CHECK_ERR("notify.removed", sigtimedwait(&set, &si, &short_wait), EAGAIN);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	mq_close(q);
	mq_unlink(Q);
}

static int thread_pipe[2];

static void on_message(union sigval v)
{
	write(thread_pipe[1], &v.sival_int, sizeof v.sival_int);
}

/* SIGEV_THREAD: the C library's thread runs the function (musl and glibc
 * build it on a netlink socket the kernel writes a cookie to) */
static void test_notify_thread(void)
{
	mq_unlink(Q);
	mqd_t q = mq_open(Q, O_CREAT | O_RDWR, 0600, NULL);
	pipe(thread_pipe);
	struct sigevent ev = {.sigev_notify = SIGEV_THREAD, .sigev_notify_function = on_message, .sigev_value.sival_int = 77};
	CHECK_SYS("thread.register", mq_notify(q, &ev));
	char st[128] = {0};
	read(q, st, sizeof st - 1);
	CHECK("thread.status_notify_2", strstr(st, "NOTIFY:2") != NULL);
	CHECK_SYS("thread.send", mq_send(q, "t", 1, 0));
	struct pollfd p = {.fd = thread_pipe[0], .events = POLLIN};
	int v = 0;
	CHECK("thread.ran", poll(&p, 1, 3000) == 1 && read(thread_pipe[0], &v, sizeof v) == sizeof v && v == 77);
	/* registered again and removed: the thread is not run */
	char buf[8192];
	mq_receive(q, buf, sizeof buf, NULL);
	CHECK_SYS("thread.register_again", mq_notify(q, &ev));
	CHECK_SYS("thread.remove", mq_notify(q, NULL));
	mq_send(q, "u", 1, 0);
	CHECK_EQ("thread.removed_not_run", poll(&p, 1, 300), 0);
	mq_close(q);
	mq_unlink(Q);
}


/* reads path whole into buf (NUL-terminated); -1 on error */
static int read_path(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	size_t n = read_fd_all(fd, buf, size);
	close(fd);
	return (int)n;
}

static int dir_has(const char *dir, const char *name)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int found = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, name) == 0)
			found = e->d_type == DT_REG ? 1 : 2;
	closedir(d);
	return found;
}

static void test_fs(void)
{
	const char *tmp = check_mktmp();
	chmod(tmp, 0755); /* others reach the mount: the sticky bit is what refuses them */
	char mnt[300], p1[320], p2[320], other[320];
	snprintf(mnt, sizeof mnt, "%s/mq", tmp);
	mkdir(mnt, 0755);
	CHECK_ERR("fs.mount_bad_option", mount("none", mnt, "mqueue", 0, "size=10"), EINVAL);
	if (!CHECK_SYS("fs.mount", mount("none", mnt, "mqueue", 0, NULL))) {
		rmdir(mnt);
		rmdir(tmp);
		return;
	}
	struct statfs sf;
	CHECK("fs.statfs_magic", statfs(mnt, &sf) == 0 && sf.f_type == 0x19800202);
	struct stat st;
	CHECK("fs.root_mode", stat(mnt, &st) == 0 && st.st_mode == (S_IFDIR | 01777));
	off_t dir_size = st.st_size;

	snprintf(p1, sizeof p1, "%s/t_mqueue_fs1", mnt);
	snprintf(p2, sizeof p2, "%s/t_mqueue_fs2", mnt);
	mq_unlink("/t_mqueue_fs1");
	mq_unlink("/t_mqueue_fs2");
	mode_t old = umask(022);
	mqd_t q = mq_open("/t_mqueue_fs1", O_CREAT | O_EXCL | O_RDWR, 0666, NULL);
	umask(old);
	CHECK_SYS("fs.mq_open", q);
	CHECK_EQ("fs.listed", dir_has(mnt, "t_mqueue_fs1"), 1);
	CHECK("fs.stat", stat(p1, &st) == 0 && st.st_mode == (S_IFREG | 0644) && st.st_uid == getuid() &&
			      st.st_nlink == 1 && st.st_size == 80);
	struct stat fst;
	CHECK("fs.fstat_same_inode", fstat(q, &fst) == 0 && fst.st_ino == st.st_ino && fst.st_dev == st.st_dev);
	struct stat ds;
	CHECK("fs.dir_size_per_name", stat(mnt, &ds) == 0 && ds.st_size == dir_size + 20);
	char buf[8192];
	char want[128];
	snprintf(want, sizeof want, "QSIZE:%-10d NOTIFY:%-5d SIGNO:%-5d NOTIFY_PID:%-6d\n", 0, 0, 0, 0);
	CHECK("fs.status_empty", read_path(p1, buf, sizeof buf) > 0 && strcmp(buf, want) == 0);
	/* the descriptor has a position: the line once, then end of file */
	char line[128];
	CHECK("fs.read_then_eof", read(q, line, sizeof line) == (ssize_t)strlen(want) && read(q, line, sizeof line) == 0);
	CHECK("fs.pread_offset", pread(q, line, 5, 2) == 5 && memcmp(line, "IZE:0", 5) == 0);
	CHECK_SYS("fs.send", mq_send(q, "hello", 5, 1));
	CHECK("fs.status_qsize", read_path(p1, buf, sizeof buf) > 0 && strncmp(buf, "QSIZE:5 ", 8) == 0);
	struct stat after;
	CHECK("fs.send_sets_mtime", stat(p1, &after) == 0 &&
					    (after.st_mtim.tv_sec > st.st_mtim.tv_sec ||
					     (after.st_mtim.tv_sec == st.st_mtim.tv_sec && after.st_mtim.tv_nsec >= st.st_mtim.tv_nsec)));

	/* a queue created by open(2), usable with mq_* */
	int fd = open(p2, O_CREAT | O_EXCL | O_RDWR, 0600);
	CHECK_SYS("fs.open_creates", fd);
	struct mq_attr a;
	CHECK("fs.open_default_attr", mq_getattr(fd, &a) == 0 && a.mq_maxmsg == 10 && a.mq_msgsize == 8192 && a.mq_curmsgs == 0);
	CHECK_SYS("fs.open_fd_send", mq_send(fd, "x", 1, 0));
	mqd_t q2 = mq_open("/t_mqueue_fs2", O_RDWR);
	CHECK_SYS("fs.mq_open_finds_it", q2);
	unsigned prio = 9;
	CHECK("fs.mq_receive_its_message", mq_receive(q2, buf, sizeof buf, &prio) == 1 && buf[0] == 'x' && prio == 0);
	CHECK_ERR("fs.write_einval", write(fd, "y", 1), EINVAL);
	CHECK_ERR("fs.open_excl_exists", open(p2, O_CREAT | O_EXCL | O_RDWR, 0600), EEXIST);
	CHECK_SYS("fs.unlink", unlink(p2));
	CHECK_ERR("fs.unlinked_gone", mq_open("/t_mqueue_fs2", O_RDWR), ENOENT);
	CHECK_SYS("fs.unlinked_still_usable", mq_send(q2, "z", 1, 0));
	CHECK_EQ("fs.unlinked_not_listed", dir_has(mnt, "t_mqueue_fs2"), 0);
	mq_close(q2);
	close(fd);

	/* chmod decides who may open; unlink by others refused by the sticky bit */
	CHECK_SYS("fs.chmod", chmod(p1, 0600));
	pid_t pid = fork();
	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(10);
		if (mq_open("/t_mqueue_fs1", O_RDONLY) != -1 || errno != EACCES)
			_exit(11);
		if (unlink(p1) != -1 || errno != EPERM)
			_exit(12);
		_exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
	CHECK_EQ("fs.nobody_refused", WEXITSTATUS(status), 0);
	CHECK_SYS("fs.chown", chown(p1, 65534, 65534));
	pid = fork();
	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(10);
		mqd_t r = mq_open("/t_mqueue_fs1", O_RDONLY);
		if (r == -1)
			_exit(11);
		_exit(mq_receive(r, buf, sizeof buf, NULL) == 5 ? 0 : 12);
	}
	waitpid(pid, &status, 0);
	CHECK_EQ("fs.chown_lets_owner_open", WEXITSTATUS(status), 0);

	/* what the directory cannot hold */
	snprintf(other, sizeof other, "%s/d", mnt);
	CHECK_ERR("fs.mkdir_eperm", mkdir(other, 0755), EPERM);
	CHECK_ERR("fs.mkfifo_eperm", mknod(other, S_IFIFO | 0600, 0), EPERM);
	CHECK_ERR("fs.symlink_eperm", symlink("x", other), EPERM);
	CHECK_ERR("fs.link_eperm", link(p1, other), EPERM);
	CHECK_ERR("fs.rename_eperm", rename(p1, other), EPERM);

	mq_close(q);
	CHECK_SYS("fs.unlink_last", unlink(p1));
	CHECK("fs.dir_size_back", stat(mnt, &ds) == 0 && ds.st_size == dir_size);
	CHECK_SYS("fs.umount", umount(mnt));
	rmdir(mnt);
	rmdir(tmp);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	test_basics();
	test_access();
	test_notify();
	test_notify_thread();
	test_fs();
	return check_done();
}
