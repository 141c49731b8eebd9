/* ubench: the issue-3 micro-benchmarks, run inside the guest on
 * Shortbread and on Linux alike (bench/sysbench boots both and compares).
 *
 *   ubench getppid N            null system call round trip
 *   ubench clock N              clock_gettime(CLOCK_MONOTONIC) through the C
 *                               library (the vDSO where the kernel has one)
 *                               and as a system call
 *   ubench getcpu N             sched_getcpu through the C library (the
 *                               vDSO's getcpu) and getcpu as a system call
 *   ubench spawn N PATH [ARG]   fork + execve(PATH) + exit + waitpid
 *   ubench pingpong N           a byte back and forth over two pipes
 *                               between two processes (2 switches each)
 *   ubench unixpingpong N       the same over an AF_UNIX stream socketpair
 *   ubench epollpingpong N      pingpong with the partner waiting in
 *                               epoll_wait on its pipe among 64 idle ones
 *                               (what an event loop with many quiet
 *                               connections pays a message)
 *   ubench epollmod N           epoll_ctl(EPOLL_CTL_MOD) on a unix socket
 *                               among 64 idle pipes, alternating EPOLLIN
 *                               and EPOLLIN|EPOLLOUT as an event loop
 *                               arms and disarms its write interest
 *                               (time per MOD)
 *   ubench epolladddel N        EPOLL_CTL_ADD then EPOLL_CTL_DEL of that
 *                               socket (time per pair)
 *   ubench unixbulk MIB         MIB MiB one way over an AF_UNIX stream
 *                               socketpair in 64 KiB writes (time per MiB)
 *   ubench fault PAGES          write-touch PAGES fresh anonymous pages
 *   ubench malloc THREADS OPS   THREADS threads each allocate, touch and
 *                               free 256 KiB blocks OPS/THREADS times
 *                               (musl serves them with mmap/munmap, so
 *                               the kernel's mmap and fault paths work)
 *   ubench blkread DEV MIB [KIB]  the first MIB MiB of block device DEV
 *                               read in order through the page cache once
 *                               to fill it, then timed: 4 KiB preads (time
 *                               per read) and 64 KiB ones (time per read),
 *                               or only KIB KiB ones
 *   ubench fileread PATH [KIB]  the same for the whole of file PATH
 *   ubench touch                (run by spawn) read one byte per page of
 *                               this program's own data, then exit
 *
 * Each benchmark runs REPS times and prints the median:
 *   result NAME VALUE UNIT
 * Times come from CLOCK_MONOTONIC in the guest. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <net/if.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REPS 5
#define PG 4096

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "ubench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return x < y ? -1 : x > y;
}

/* report prints the median of REPS samples, each total ns / per. */
static void report(const char *name, long long *ns, double per, double scale, const char *unit)
{
	qsort(ns, REPS, sizeof *ns, cmp_ll);
	printf("result %s %.3f %s\n", name, (double)ns[REPS / 2] / per / scale, unit);
	fflush(stdout);
}

/* clock_gettime through musl (which calls the vDSO when AT_SYSINFO_EHDR
 * names one) and through the system call itself. */
static void bench_clock(long n)
{
	long long ns[REPS];
	struct timespec ts;
	for (int r = 0; r < REPS; r++) {
		long long t0 = now_ns();
		for (long i = 0; i < n; i++)
			clock_gettime(CLOCK_MONOTONIC, &ts);
		ns[r] = now_ns() - t0;
	}
	report("clock_gettime_vdso", ns, n, 1, "ns");
	for (int r = 0; r < REPS; r++) {
		long long t0 = now_ns();
		for (long i = 0; i < n; i++)
			syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
		ns[r] = now_ns() - t0;
	}
	report("clock_gettime_syscall", ns, n, 1, "ns");
}

/* getcpu through musl's sched_getcpu (the vDSO's __vdso_getcpu where
 * the kernel maps one) and as a system call. */
static void bench_getcpu(long n)
{
	long long ns[REPS];
	unsigned cpu;
	for (int r = 0; r < REPS; r++) {
		long long t0 = now_ns();
		for (long i = 0; i < n; i++)
			sched_getcpu();
		ns[r] = now_ns() - t0;
	}
	report("getcpu_vdso", ns, n, 1, "ns");
	for (int r = 0; r < REPS; r++) {
		long long t0 = now_ns();
		for (long i = 0; i < n; i++)
			syscall(SYS_getcpu, &cpu, NULL, NULL);
		ns[r] = now_ns() - t0;
	}
	report("getcpu_syscall", ns, n, 1, "ns");
}

static void bench_getppid(long n)
{
	long long ns[REPS];
	for (int r = 0; r < REPS; r++) {
		long long t0 = now_ns();
		for (long i = 0; i < n; i++)
			syscall(SYS_getppid);
		ns[r] = now_ns() - t0;
	}
	report("getppid", ns, n, 1, "ns");
}

static void bench_spawn(long n, char *path, char *arg, const char *name)
{
	long long ns[REPS];
	char *argv[] = { path, arg, NULL }, *envp[] = { NULL };
	for (int r = 0; r < REPS; r++) {
		long long t0 = now_ns();
		for (long i = 0; i < n; i++) {
			pid_t pid = fork();
			if (pid < 0)
				die("fork");
			if (pid == 0) {
				execve(path, argv, envp);
				_exit(127);
			}
			int st;
			if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				fprintf(stderr, "ubench: %s did not exit cleanly (%#x)\n", path, st);
				exit(1);
			}
		}
		ns[r] = now_ns() - t0;
	}
	report(name, ns, n, 1000, "us");
}

/* The parent's side of a ping-pong with a child that echoes each byte
 * written to wfd back on rfd: REPS timed runs of n round trips, then the
 * report. The caller closes the descriptors and waits for the child. */
static void ping_timed(int wfd, int rfd, long n, const char *name)
{
	char c = 0;
	long long ns[REPS];
	for (int r = 0; r < REPS; r++) {
		long long t0 = now_ns();
		for (long i = 0; i < n; i++) {
			if (write(wfd, &c, 1) != 1 || read(rfd, &c, 1) != 1)
				die(name);
		}
		ns[r] = now_ns() - t0;
	}
	report(name, ns, n, 1000, "us");
}

/* ping_timed over the pipes a (to the child) and b (back), then the
 * pipes closed (the child sees EOF and exits) and the child reaped. */
static void ping_parent(int a[2], int b[2], pid_t pid, long n, const char *name)
{
	close(a[0]);
	close(b[1]);
	ping_timed(a[1], b[0], n, name);
	close(a[1]);
	close(b[0]);
	waitpid(pid, NULL, 0);
}

static void bench_pingpong(long n)
{
	int a[2], b[2];
	if (pipe(a) || pipe(b))
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	char c = 0;
	if (pid == 0) {
		close(a[1]); /* so that the parent's close is seen as EOF */
		close(b[0]);
		for (;;) {
			if (read(a[0], &c, 1) != 1)
				_exit(0);
			if (write(b[1], &c, 1) != 1)
				_exit(1);
		}
	}
	ping_parent(a, b, pid, n, "pingpong");
}

/* The partner of epollpingpong waits in epoll_wait, level-triggered,
 * with EPOLL_IDLE pipes registered that never become ready. */
#define EPOLL_IDLE 64

static void bench_epoll_pingpong(long n)
{
	int a[2], b[2], idle[EPOLL_IDLE][2];
	if (pipe(a) || pipe(b))
		die("pipe");
	for (int i = 0; i < EPOLL_IDLE; i++)
		if (pipe(idle[i]))
			die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	char c = 0;
	if (pid == 0) {
		close(a[1]);
		close(b[0]);
		int ep = epoll_create1(0);
		if (ep < 0)
			die("epoll_create1");
		for (int i = 0; i < EPOLL_IDLE; i++) {
			struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i + 1 };
			if (epoll_ctl(ep, EPOLL_CTL_ADD, idle[i][0], &ev))
				die("epoll_ctl");
		}
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 0 };
		if (epoll_ctl(ep, EPOLL_CTL_ADD, a[0], &ev))
			die("epoll_ctl");
		for (;;) {
			struct epoll_event out[8];
			int k = epoll_wait(ep, out, 8, -1);
			if (k != 1 || out[0].data.u32 != 0)
				_exit(1);
			if (read(a[0], &c, 1) != 1)
				_exit(0);
			if (write(b[1], &c, 1) != 1)
				_exit(1);
		}
	}
	for (int i = 0; i < EPOLL_IDLE; i++) {
		close(idle[i][0]);
		close(idle[i][1]);
	}
	ping_parent(a, b, pid, n, "epoll_pingpong");
}

/* An instance watching EPOLL_IDLE idle pipes and, unless add is 0, one
 * end of a unix socket pair (whose descriptor goes to *sock). */
static int epoll_setup(int *sock, int add)
{
	int sv[2], p[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		die("socketpair");
	int ep = epoll_create1(0);
	if (ep < 0)
		die("epoll_create1");
	for (int i = 0; i < EPOLL_IDLE; i++) {
		if (pipe(p))
			die("pipe");
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i + 1 };
		if (epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev))
			die("epoll_ctl");
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 0 };
	if (add && epoll_ctl(ep, EPOLL_CTL_ADD, sv[0], &ev))
		die("epoll_ctl");
	*sock = sv[0];
	return ep;
}

static void bench_epoll_mod(long n)
{
	int s, ep = epoll_setup(&s, 1);
	long long ns[REPS];
	for (int r = 0; r < REPS; r++) {
		long long t0 = now_ns();
		for (long i = 0; i < n; i++) {
			struct epoll_event ev = { .events = i & 1 ? EPOLLIN : EPOLLIN | EPOLLOUT, .data.u32 = 0 };
			if (epoll_ctl(ep, EPOLL_CTL_MOD, s, &ev))
				die("epoll_ctl MOD");
		}
		ns[r] = now_ns() - t0;
	}
	report("epoll_mod", ns, n, 1, "ns");
}

static void bench_epoll_adddel(long n)
{
	int s, ep = epoll_setup(&s, 0);
	long long ns[REPS];
	for (int r = 0; r < REPS; r++) {
		long long t0 = now_ns();
		for (long i = 0; i < n; i++) {
			struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.u32 = 0 };
			if (epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev) || epoll_ctl(ep, EPOLL_CTL_DEL, s, &ev))
				die("epoll_ctl ADD/DEL");
		}
		ns[r] = now_ns() - t0;
	}
	report("epoll_adddel", ns, n, 1, "ns");
}

/* Linux's lo starts down in the benchmark image (nothing configures
 * it); Shortbread's is up from boot. */
static void lo_up(void)
{
	struct ifreq r = {0};
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	strcpy(r.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &r) == 0 && !(r.ifr_flags & IFF_UP)) {
		r.ifr_flags |= IFF_UP;
		if (ioctl(s, SIOCSIFFLAGS, &r))
			die("lo up");
	}
	close(s);
}

/* A connected stream pair: AF_UNIX from socketpair, or TCP over
 * 127.0.0.1 with TCP_NODELAY (a listener, a connect and an accept). */
static void stream_pair(int tcp, int sv[2])
{
	if (!tcp) {
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
			die("socketpair");
		return;
	}
	lo_up();
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	if (l < 0 || bind(l, (void *)&a, sizeof a) || listen(l, 1) || getsockname(l, (void *)&a, &len))
		die("tcp listen");
	sv[0] = socket(AF_INET, SOCK_STREAM, 0);
	if (sv[0] < 0 || connect(sv[0], (void *)&a, sizeof a))
		die("tcp connect");
	sv[1] = accept(l, NULL, NULL);
	if (sv[1] < 0)
		die("tcp accept");
	close(l);
	setsockopt(sv[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	setsockopt(sv[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static void bench_sock_pingpong(long n, int tcp)
{
	int sv[2];
	stream_pair(tcp, sv);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	char c = 0;
	if (pid == 0) {
		close(sv[0]);
		for (;;) {
			if (read(sv[1], &c, 1) != 1)
				_exit(0);
			if (write(sv[1], &c, 1) != 1)
				_exit(1);
		}
	}
	close(sv[1]);
	ping_timed(sv[0], sv[0], n, tcp ? "tcp_pingpong" : "unix_pingpong");
	close(sv[0]);
	waitpid(pid, NULL, 0);
}

static void bench_sock_bulk(long mib, int tcp)
{
	static char buf[64 << 10];
	long long ns[REPS];
	for (int r = 0; r < REPS; r++) {
		int sv[2];
		stream_pair(tcp, sv);
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			close(sv[0]);
			long long got = 0;
			ssize_t k;
			while ((k = read(sv[1], buf, sizeof buf)) > 0)
				got += k;
			_exit(got == mib << 20 ? 0 : 1);
		}
		close(sv[1]);
		long long t0 = now_ns();
		for (long long sent = 0; sent < mib << 20;) {
			ssize_t k = write(sv[0], buf, sizeof buf);
			if (k <= 0)
				die("bulk");
			sent += k;
		}
		close(sv[0]);
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			die("bulk reader");
		ns[r] = now_ns() - t0;
	}
	report(tcp ? "tcp_bulk" : "unix_bulk", ns, mib, 1e6, "ms/MiB");
}

static void bench_fault(long pages)
{
	long long ns[REPS];
	for (int r = 0; r < REPS; r++) {
		char *p = mmap(NULL, pages * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			die("mmap");
		long long t0 = now_ns();
		for (long i = 0; i < pages; i++)
			p[i * PG] = 1;
		ns[r] = now_ns() - t0;
		munmap(p, pages * PG);
	}
	report("fault", ns, pages, 1, "ns");
}

static long per_thread;

static void *malloc_worker(void *arg)
{
	(void)arg;
	const size_t size = 256 << 10;
	for (long i = 0; i < per_thread; i++) {
		volatile char *p = malloc(size);
		if (!p)
			die("malloc");
		for (size_t off = 0; off < size; off += PG)
			p[off] = (char)i;
		free((void *)p);
	}
	return NULL;
}

static void bench_malloc(int threads, long ops)
{
	per_thread = ops / threads;
	long long ns[REPS];
	for (int r = 0; r < REPS; r++) {
		pthread_t th[64];
		long long t0 = now_ns();
		for (int i = 0; i < threads; i++)
			if (pthread_create(&th[i], NULL, malloc_worker, NULL))
				die("pthread_create");
		for (int i = 0; i < threads; i++)
			pthread_join(th[i], NULL);
		ns[r] = now_ns() - t0;
	}
	char name[32];
	snprintf(name, sizeof name, "malloc_%dt", threads);
	report(name, ns, 1, 1e6, "ms");
}

/* One pass of reads of bs bytes over the first size bytes of fd. */
static void read_pass(int fd, long long size, size_t bs, char *buf)
{
	for (long long off = 0; off + (long long)bs <= size; off += bs)
		if (pread(fd, buf, bs, off) != (ssize_t)bs)
			die("pread");
}

/* Cached sequential reads of fd's first size bytes: a pass that fills
 * the page cache, then REPS timed passes of 4 KiB and of 64 KiB reads;
 * the time per read is reported as NAME_4k and NAME_64k. */
static void bench_cached_read(int fd, long long size, const char *name, long only)
{
	static char buf[64 << 10] __attribute__((aligned(4096)));
	static const size_t sizes[] = { 4 << 10, 64 << 10 };
	if (size < (long long)sizeof buf)
		die("cached read: too small");
	read_pass(fd, size, sizeof buf, buf);
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		if (only && sizes[k] != (size_t)only << 10)
			continue;
		long long ns[REPS];
		for (int r = 0; r < REPS; r++) {
			long long t0 = now_ns();
			read_pass(fd, size, sizes[k], buf);
			ns[r] = now_ns() - t0;
		}
		char full[48];
		snprintf(full, sizeof full, "%s_%zuk", name, sizes[k] >> 10);
		report(full, ns, (double)(size / (long long)sizes[k]), 1, "ns");
	}
	close(fd);
}

static void bench_blkread(const char *dev, long mib, long only)
{
	int fd = open(dev, O_RDONLY);
	if (fd < 0)
		die(dev);
	bench_cached_read(fd, (long long)mib << 20, "blkread", only);
}

static void bench_fileread(const char *path, long only)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		die(path);
	off_t size = lseek(fd, 0, SEEK_END);
	if (size < 0)
		die("lseek");
	bench_cached_read(fd, size, "fileread", only);
}

/* Data the spawned "touch" run reads; the build links a variant of this
 * program with a large .data or .bss array (ubench_blob, see
 * user/bench/blob.S). */
extern const volatile unsigned char ubench_blob[];
extern const unsigned long ubench_blob_size;

static int touch(void)
{
	unsigned sum = 0;
	for (unsigned long off = 0; off < ubench_blob_size; off += PG)
		sum += ubench_blob[off];
	return sum == 0xdeadbeef; /* never: keeps the loop */
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "touch"))
		return touch();
	if (argc >= 3 && !strcmp(argv[1], "getppid"))
		bench_getppid(atol(argv[2]));
	else if (argc >= 3 && !strcmp(argv[1], "clock"))
		bench_clock(atol(argv[2]));
	else if (argc >= 3 && !strcmp(argv[1], "getcpu"))
		bench_getcpu(atol(argv[2]));
	else if (argc >= 4 && !strcmp(argv[1], "spawn"))
		bench_spawn(atol(argv[2]), argv[3], argc > 4 ? argv[4] : NULL, argc > 5 ? argv[5] : "spawn");
	else if (argc >= 3 && !strcmp(argv[1], "pingpong"))
		bench_pingpong(atol(argv[2]));
	else if (argc >= 3 && !strcmp(argv[1], "epollpingpong"))
		bench_epoll_pingpong(atol(argv[2]));
	else if (argc >= 3 && !strcmp(argv[1], "epollmod"))
		bench_epoll_mod(atol(argv[2]));
	else if (argc >= 3 && !strcmp(argv[1], "epolladddel"))
		bench_epoll_adddel(atol(argv[2]));
	else if (argc >= 3 && !strcmp(argv[1], "unixpingpong"))
		bench_sock_pingpong(atol(argv[2]), 0);
	else if (argc >= 3 && !strcmp(argv[1], "unixbulk"))
		bench_sock_bulk(atol(argv[2]), 0);
	else if (argc >= 3 && !strcmp(argv[1], "tcppingpong"))
		bench_sock_pingpong(atol(argv[2]), 1);
	else if (argc >= 3 && !strcmp(argv[1], "tcpbulk"))
		bench_sock_bulk(atol(argv[2]), 1);
	else if (argc >= 3 && !strcmp(argv[1], "fault"))
		bench_fault(atol(argv[2]));
	else if (argc >= 4 && !strcmp(argv[1], "malloc"))
		bench_malloc(atoi(argv[2]), atol(argv[3]));
	else if (argc >= 4 && !strcmp(argv[1], "blkread"))
		bench_blkread(argv[2], atol(argv[3]), argc > 4 ? atol(argv[4]) : 0);
	else if (argc >= 3 && !strcmp(argv[1], "fileread"))
		bench_fileread(argv[2], argc > 3 ? atol(argv[3]) : 0);
	else {
		fprintf(stderr, "usage: ubench getppid N | clock N | getcpu N | spawn N PATH [ARG [NAME]] | pingpong N | epollpingpong N | epollmod N | epolladddel N | unixpingpong N | unixbulk MIB | tcppingpong N | tcpbulk MIB | fault PAGES | malloc THREADS OPS | blkread DEV MIB [KIB] | fileread PATH [KIB] | touch\n");
		return 2;
	}
	return 0;
}
