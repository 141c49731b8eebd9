/* scale: the issue-21 scaling workloads, run inside the guest on Shortbread
 * and on Linux alike (bench/scale boots both and compares).
 *
 *   scale WORKLOAD WORKERS MS   run WORKERS workers of WORKLOAD for MS ms
 *   scale list                  the workloads, one a line: NAME KIND
 *   scale nop                   exit at once (what spawn executes)
 *
 * Every worker repeats one operation until the parent says stop (at
 * least once); the result is the total over the workers:
 *
 *   scale workload=NAME workers=W cpus=C ms=T ops=N ops_per_s=X pin_miss=K total_ms=U
 *
 * (C is the number of online CPUs; K counts pinned threads that were not on
 * their CPU when they stopped: a kernel that ignores sched_setaffinity; U
 * is the whole run's time, set-up and tear-down included.) A
 * failed operation prints "scale-error workload=NAME ..." and exits 1.
 *
 * Workers start together (they block on a pipe the parent then closes) and
 * stop at a flag in shared memory, so no clock is read in the loops.
 * Workers of kind "proc" are processes, "thread" threads of one process;
 * in a "pair" workload each worker is a client with a partner (a process,
 * or a thread for futex) and counts round trips. Worker i's client runs
 * on CPU i mod C; for *_local its partner is on the same CPU, for *_cross
 * on the next one. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* musl-gcc has no kernel headers: linux/futex.h's values. */
#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_PRIVATE_FLAG 128

#define MAXW 64
#define PG 4096
#define FAULT_PAGES 64
#define MALLOC_SIZE (256 << 10)
#define FILE_WINDOW 16

struct shared {
	atomic_int stop;
	long ops[MAXW];
	int pin_miss[MAXW];
	int started[MAXW];
	int err[MAXW];		/* errno of the failed operation */
	char what[MAXW][32];	/* and its name */
};

static struct shared *sh;
static int ncpu;
static int go_pipe[2], ready_pipe[2];
static char workdir[64];
static const char *self;

static void ready(int i)
{
	char c = 0;
	sh->started[i] = 1;
	if (write(ready_pipe[1], &c, 1) != 1)
		_exit(3);
}

/* fail records worker i's failed operation and leaves its loop (saying it
 * is ready if it had not yet, so that the parent does not wait for it). */
static int fail(int i, const char *what)
{
	sh->err[i] = errno ? errno : EIO;
	snprintf(sh->what[i], sizeof sh->what[i], "%s", what);
	if (!sh->started[i])
		ready(i);
	return -1;
}

static int pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu % ncpu, &set);
	return sched_setaffinity(0, sizeof set, &set);
}

static void pin_check(int i, int cpu)
{
	if (sched_getcpu() != cpu % ncpu)
		sh->pin_miss[i]++;
}

/* start tells the parent worker i is ready and waits for the go. */
static void start(int i)
{
	char c;
	ready(i);
	while (read(go_pipe[0], &c, 1) > 0)
		;
}

static int stopped(void)
{
	return atomic_load_explicit(&sh->stop, memory_order_relaxed);
}

/* ---- one-sided workloads ---- */

/* spin never enters the kernel: its speed-up is how much parallel CPU the
 * host gives the guest, the control for every other row. */
static int w_spin(int i)
{
	long n = 0;
	start(i);
	do {
		for (volatile int k = 0; k < 1000; k++)
			;
		n++;
	} while (!stopped());
	sh->ops[i] = n;
	return 0;
}

static int w_getppid(int i)
{
	long n = 0;
	start(i);
	do {
		syscall(SYS_getppid);
		n++;
	} while (!stopped());
	sh->ops[i] = n;
	return 0;
}

static int w_fault(int i)
{
	long n = 0;
	start(i);
	do {
		char *p = mmap(NULL, FAULT_PAGES * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return fail(i, "mmap");
		for (int k = 0; k < FAULT_PAGES; k++)
			p[k * PG] = 1;
		if (munmap(p, FAULT_PAGES * PG))
			return fail(i, "munmap");
		n += FAULT_PAGES;
	} while (!stopped());
	sh->ops[i] = n;
	return 0;
}

static int w_malloc(int i)
{
	long n = 0;
	start(i);
	do {
		volatile char *p = malloc(MALLOC_SIZE);
		if (!p)
			return fail(i, "malloc");
		for (int off = 0; off < MALLOC_SIZE; off += PG)
			p[off] = (char)n;
		free((void *)p);
		n++;
	} while (!stopped());
	sh->ops[i] = n;
	return 0;
}

/* churn creates, writes 4 KiB to and closes a file, and unlinks the one
 * made FILE_WINDOW operations before, in dir (names carry the worker). */
static int churn(int i, const char *dir)
{
	static __thread char buf[PG];
	char path[128];
	long n = 0;
	memset(buf, 'x', sizeof buf);
	start(i);
	do {
		snprintf(path, sizeof path, "%s/w%d.%ld", dir, i, n % (2 * FILE_WINDOW));
		int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
		if (fd < 0)
			return fail(i, "open");
		if (write(fd, buf, sizeof buf) != sizeof buf)
			return fail(i, "write");
		if (close(fd))
			return fail(i, "close");
		if (n >= FILE_WINDOW) {
			snprintf(path, sizeof path, "%s/w%d.%ld", dir, i, (n - FILE_WINDOW) % (2 * FILE_WINDOW));
			if (unlink(path))
				return fail(i, "unlink");
		}
		n++;
	} while (!stopped());
	sh->ops[i] = n;
	for (long k = n > FILE_WINDOW ? n - FILE_WINDOW : 0; k < n; k++) {
		snprintf(path, sizeof path, "%s/w%d.%ld", dir, i, k % (2 * FILE_WINDOW));
		unlink(path);
	}
	return 0;
}

static int w_files_private(int i)
{
	char dir[96];
	snprintf(dir, sizeof dir, "%s/d%d", workdir, i);
	return churn(i, dir);
}

static int w_files_shared(int i)
{
	char dir[96];
	snprintf(dir, sizeof dir, "%s/shared", workdir);
	return churn(i, dir);
}

/* read_mt: threads of one process each pread one byte from a descriptor
 * of their own to the same small file: the per-descriptor path (looking
 * the file up in the shared descriptor table) under load from every CPU. */
static int w_read(int i)
{
	char p[128], c;
	long n = 0;
	snprintf(p, sizeof p, "%s/tree/usr/share/doc/pkg/file", workdir);
	int fd = open(p, O_RDONLY);
	if (fd < 0)
		return fail(i, "open");
	start(i);
	do {
		if (pread(fd, &c, 1, 0) != 1)
			return fail(i, "pread");
		n++;
	} while (!stopped());
	close(fd);
	sh->ops[i] = n;
	return 0;
}

/* lookup: stat and open+close of the same deep path from every worker. */
static int w_lookup(int i)
{
	char path[128];
	struct stat st;
	long n = 0;
	snprintf(path, sizeof path, "%s/tree/usr/share/doc/pkg/file", workdir);
	start(i);
	do {
		if (stat(path, &st))
			return fail(i, "stat");
		int fd = open(path, O_RDONLY);
		if (fd < 0)
			return fail(i, "open");
		close(fd);
		n++;
	} while (!stopped());
	sh->ops[i] = n;
	return 0;
}

static int w_spawn(int i)
{
	char *argv[] = { (char *)self, "nop", NULL }, *envp[] = { NULL };
	long n = 0;
	start(i);
	do {
		pid_t pid = fork();
		if (pid < 0)
			return fail(i, "fork");
		if (pid == 0) {
			execve(self, argv, envp);
			_exit(127);
		}
		int st;
		if (waitpid(pid, &st, 0) != pid)
			return fail(i, "waitpid");
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			errno = ENOEXEC;
			return fail(i, "exec");
		}
		n++;
	} while (!stopped());
	sh->ops[i] = n;
	return 0;
}

/* ---- pair workloads: a client and its partner ---- */

/* echo is a partner's loop: a byte from in goes back on out until EOF. */
static void echo(int in, int out)
{
	char c;
	while (read(in, &c, 1) == 1)
		if (write(out, &c, 1) != 1)
			break;
}

/* partner forks the partner process, which runs fn(arg) and exits; the
 * client closes its copies of the partner's descriptors afterwards. */
static pid_t partner(int cpu, void (*fn)(int *), int *fds)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (cpu >= 0)
			pin(cpu);
		fn(fds);
		_exit(0);
	}
	return pid;
}

/* rounds runs the client side: one byte out on wfd, one back on rfd. */
static int rounds(int i, int cpu, int wfd, int rfd)
{
	long n = 0;
	char c = 0;
	start(i);
	do {
		if (write(wfd, &c, 1) != 1)
			return fail(i, "write");
		if (read(rfd, &c, 1) != 1)
			return fail(i, "read");
		n++;
	} while (!stopped());
	if (cpu >= 0)
		pin_check(i, cpu);
	sh->ops[i] = n;
	return 0;
}

static void pipe_partner(int *fds)
{
	close(fds[1]);
	close(fds[2]);
	echo(fds[0], fds[3]);
}

static int pipe_pair(int i, int cross)
{
	int a[2], b[2];
	if (pin(i) || pipe(a) || pipe(b))
		return fail(i, "pipe/affinity");
	int fds[4] = { a[0], a[1], b[0], b[1] };
	pid_t pid = partner(i + cross, pipe_partner, fds);
	if (pid < 0)
		return fail(i, "fork");
	close(a[0]);
	close(b[1]);
	int r = rounds(i, i, a[1], b[0]);
	close(a[1]);
	close(b[0]);
	waitpid(pid, NULL, 0);
	return r;
}

static int w_pipe_local(int i)
{
	return pipe_pair(i, 0);
}

static int w_pipe_cross(int i)
{
	return pipe_pair(i, 1);
}

static void sock_partner(int *fds)
{
	close(fds[0]);
	echo(fds[1], fds[1]);
}

static int w_unix(int i)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return fail(i, "socketpair");
	pid_t pid = partner(-1, sock_partner, sv);
	if (pid < 0)
		return fail(i, "fork");
	close(sv[1]);
	int r = rounds(i, -1, sv[0], sv[0]);
	close(sv[0]);
	waitpid(pid, NULL, 0);
	return r;
}

static void tcp_partner(int *fds)
{
	int c = accept(fds[0], NULL, NULL);
	close(fds[0]);
	if (c < 0)
		_exit(1);
	int one = 1;
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	echo(c, c);
}

static int w_tcp(int i)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	int l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &len))
		return fail(i, "listen");
	int fds[1] = { l };
	pid_t pid = partner(-1, tcp_partner, fds);
	if (pid < 0)
		return fail(i, "fork");
	close(l);
	int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a))
		return fail(i, "connect");
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	int r = rounds(i, -1, s, s);
	close(s);
	waitpid(pid, NULL, 0);
	return r;
}

/* epoll: the partner waits on four pipes with epoll_wait and answers each
 * byte on a fifth; the client writes to them in turn. */
#define EPIPES 4

static void epoll_partner(int *fds)
{
	int ep = epoll_create1(0);
	if (ep < 0)
		_exit(1);
	for (int k = 0; k < EPIPES; k++) {
		close(fds[2 * k + 1]);
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = fds[2 * k] };
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[2 * k], &ev))
			_exit(1);
	}
	close(fds[2 * EPIPES]);
	int out = fds[2 * EPIPES + 1], live = EPIPES;
	while (live > 0) {
		struct epoll_event evs[EPIPES];
		int k = epoll_wait(ep, evs, EPIPES, -1);
		if (k < 0 && errno != EINTR)
			_exit(1);
		for (int j = 0; j < k; j++) {
			char c;
			if (read(evs[j].data.fd, &c, 1) == 1) {
				if (write(out, &c, 1) != 1)
					_exit(1);
			} else {
				epoll_ctl(ep, EPOLL_CTL_DEL, evs[j].data.fd, NULL);
				live--;
			}
		}
	}
}

static int w_epoll(int i)
{
	int fds[2 * EPIPES + 2];
	for (int k = 0; k <= EPIPES; k++)
		if (pipe(fds + 2 * k))
			return fail(i, "pipe");
	pid_t pid = partner(-1, epoll_partner, fds);
	if (pid < 0)
		return fail(i, "fork");
	for (int k = 0; k < EPIPES; k++)
		close(fds[2 * k]);
	close(fds[2 * EPIPES + 1]);
	long n = 0;
	char c = 0;
	start(i);
	do {
		if (write(fds[2 * (n % EPIPES) + 1], &c, 1) != 1)
			return fail(i, "write");
		if (read(fds[2 * EPIPES], &c, 1) != 1)
			return fail(i, "read");
		n++;
	} while (!stopped());
	sh->ops[i] = n;
	for (int k = 0; k < EPIPES; k++)
		close(fds[2 * k + 1]);
	close(fds[2 * EPIPES]);
	waitpid(pid, NULL, 0);
	return 0;
}

/* futex_cross: two threads hand a word back and forth with FUTEX_WAIT and
 * FUTEX_WAKE, on neighbouring CPUs. 1: the partner's turn, 0: the
 * client's, 2: stop. */
struct fpair {
	atomic_int word;
	int cpu;
};

static long futex(atomic_int *w, int op, int val)
{
	return syscall(SYS_futex, w, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
}

static void *futex_partner(void *arg)
{
	struct fpair *p = arg;
	pin(p->cpu);
	for (;;) {
		int v;
		while ((v = atomic_load(&p->word)) == 0)
			futex(&p->word, FUTEX_WAIT, 0);
		if (v == 2)
			return NULL;
		atomic_store(&p->word, 0);
		futex(&p->word, FUTEX_WAKE, 1);
	}
}

static int w_futex_cross(int i)
{
	struct fpair p = { .cpu = i + 1 };
	pthread_t th;
	if (pin(i) || pthread_create(&th, NULL, futex_partner, &p))
		return fail(i, "pthread_create");
	long n = 0;
	start(i);
	do {
		atomic_store(&p.word, 1);
		futex(&p.word, FUTEX_WAKE, 1);
		while (atomic_load(&p.word) == 1)
			futex(&p.word, FUTEX_WAIT, 1);
		n++;
	} while (!stopped());
	pin_check(i, i);
	atomic_store(&p.word, 2);
	futex(&p.word, FUTEX_WAKE, 1);
	pthread_join(th, NULL);
	sh->ops[i] = n;
	return 0;
}

/* ---- the table and the driver ---- */

enum kind { PROC, THREAD };

static const struct workload {
	const char *name;
	enum kind kind;
	int (*fn)(int);
} workloads[] = {
	{ "spin", PROC, w_spin },
	{ "getppid", PROC, w_getppid },
	{ "fault", PROC, w_fault },
	{ "fault_mt", THREAD, w_fault },
	{ "malloc_mt", THREAD, w_malloc },
	{ "files_private", PROC, w_files_private },
	{ "files_shared", PROC, w_files_shared },
	{ "files_mt", THREAD, w_files_private },
	{ "read_mt", THREAD, w_read },
	{ "lookup", PROC, w_lookup },
	{ "spawn", PROC, w_spawn },
	{ "pipe_local", PROC, w_pipe_local },
	{ "pipe_cross", PROC, w_pipe_cross },
	{ "futex_cross", THREAD, w_futex_cross },
	{ "epoll", PROC, w_epoll },
	{ "unix", PROC, w_unix },
	{ "tcp", PROC, w_tcp },
};
#define NWORKLOADS (int)(sizeof workloads / sizeof workloads[0])

static const struct workload *wl;

static void *thread_main(void *arg)
{
	wl->fn((int)(long)arg);
	return NULL;
}

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "scale: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "scale: workers did not stop in time\n";
	write(2, msg, sizeof msg - 1);
	kill(0, SIGKILL);
}

static void mkdirs(int workers)
{
	char p[128];
	static const char *tree[] = { "tree", "tree/usr", "tree/usr/share", "tree/usr/share/doc", "tree/usr/share/doc/pkg", "shared" };
	if (mkdir(workdir, 0755))
		die(workdir);
	for (unsigned k = 0; k < sizeof tree / sizeof tree[0]; k++) {
		snprintf(p, sizeof p, "%s/%s", workdir, tree[k]);
		if (mkdir(p, 0755))
			die(p);
	}
	for (int i = 0; i < workers; i++) {
		snprintf(p, sizeof p, "%s/d%d", workdir, i);
		if (mkdir(p, 0755))
			die(p);
	}
	snprintf(p, sizeof p, "%s/tree/usr/share/doc/pkg/file", workdir);
	int fd = open(p, O_CREAT | O_WRONLY, 0644);
	if (fd < 0 || write(fd, "data\n", 5) != 5 || close(fd))
		die(p);
}

static void rmdirs(int workers)
{
	char p[128];
	static const char *tree[] = { "tree/usr/share/doc/pkg/file", "tree/usr/share/doc/pkg", "tree/usr/share/doc", "tree/usr/share", "tree/usr", "tree", "shared" };
	for (unsigned k = 0; k < sizeof tree / sizeof tree[0]; k++) {
		snprintf(p, sizeof p, "%s/%s", workdir, tree[k]);
		remove(p);
	}
	for (int i = 0; i < workers; i++) {
		snprintf(p, sizeof p, "%s/d%d", workdir, i);
		rmdir(p);
	}
	rmdir(workdir);
}

static void usage(void)
{
	fprintf(stderr, "usage: scale WORKLOAD WORKERS MS | list | nop\n");
	exit(2);
}

int main(int argc, char **argv)
{
	long long t_start = now_ns();
	self = argv[0];
	if (argc == 2 && !strcmp(argv[1], "nop"))
		return 0;
	if (argc == 2 && !strcmp(argv[1], "list")) {
		for (int k = 0; k < NWORKLOADS; k++)
			printf("%s %s\n", workloads[k].name, workloads[k].kind == PROC ? "proc" : "thread");
		return 0;
	}
	if (argc != 4)
		usage();
	for (int k = 0; k < NWORKLOADS; k++)
		if (!strcmp(argv[1], workloads[k].name))
			wl = &workloads[k];
	int workers = atoi(argv[2]);
	long ms = atol(argv[3]);
	if (!wl || workers < 1 || workers > MAXW || ms < 1)
		usage();
	if (self[0] != '/') {
		static char path[4096];
		ssize_t k = readlink("/proc/self/exe", path, sizeof path - 1);
		if (k <= 0)
			die("readlink /proc/self/exe");
		self = path;
	}
	ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu < 1)
		ncpu = 1;
	setpgid(0, 0);
	signal(SIGPIPE, SIG_IGN);
	sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap");
	const char *tmp = getenv("TMPDIR");
	snprintf(workdir, sizeof workdir, "%s/scale.%d", tmp ? tmp : "/tmp", (int)getpid());
	mkdirs(workers);
	if (pipe(go_pipe) || pipe(ready_pipe))
		die("pipe");

	pid_t pids[MAXW];
	pthread_t ths[MAXW];
	for (int i = 0; i < workers; i++) {
		if (wl->kind == THREAD) {
			if (pthread_create(&ths[i], NULL, thread_main, (void *)(long)i))
				die("pthread_create");
			continue;
		}
		pids[i] = fork();
		if (pids[i] < 0)
			die("fork");
		if (pids[i] == 0) {
			close(go_pipe[1]);
			close(ready_pipe[0]);
			_exit(wl->fn(i) ? 1 : 0);
		}
	}
	if (wl->kind == PROC)
		close(ready_pipe[1]); /* so that workers that died are seen */
	for (int i = 0; i < workers; i++) {
		char c;
		if (read(ready_pipe[0], &c, 1) != 1) {
			fprintf(stderr, "scale: a worker of %s died before it started\n", wl->name);
			break;
		}
	}
	long long t0 = now_ns();
	close(go_pipe[1]);
	struct timespec d = { ms / 1000, (ms % 1000) * 1000000 };
	while (nanosleep(&d, &d) && errno == EINTR)
		;
	atomic_store(&sh->stop, 1);
	long long t1 = now_ns();
	signal(SIGALRM, on_alarm);
	alarm(60);
	int bad = 0;
	for (int i = 0; i < workers; i++) {
		if (wl->kind == THREAD) {
			pthread_join(ths[i], NULL);
			continue;
		}
		int st;
		if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad = 1;
	}
	alarm(0);
	rmdirs(workers);
	long ops = 0;
	int miss = 0;
	for (int i = 0; i < workers; i++) {
		ops += sh->ops[i];
		miss += sh->pin_miss[i];
		if (sh->err[i]) {
			printf("scale-error workload=%s worker=%d op=%s errno=%d (%s)\n", wl->name, i, sh->what[i], sh->err[i], strerror(sh->err[i]));
			bad = 1;
		}
	}
	if (bad) {
		printf("scale-error workload=%s a worker failed\n", wl->name);
		return 1;
	}
	double secs = (double)(t1 - t0) / 1e9;
	printf("scale workload=%s workers=%d cpus=%d ms=%.0f ops=%ld ops_per_s=%.1f pin_miss=%d total_ms=%.0f\n",
	       wl->name, workers, ncpu, secs * 1e3, ops, ops / secs, miss, (double)(now_ns() - t_start) / 1e6);
	return 0;
}
