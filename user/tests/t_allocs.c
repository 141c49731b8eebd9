/* t_allocs: the steady-state paths of the system calls programs make
 * most -- read and write on pipes, readv/writev, epoll_wait, poll,
 * eventfd, pread/pwrite on tmpfs, futex, getppid, unix socket sends
 * and receives, epoll_ctl MOD, and ADD then DEL of a socket -- allocate
 * nothing on the kernel heap (issue 14: every allocation is GC work a Go
 * kernel pays later). Each path runs N times and the kernel's cumulative
 * heap allocation count (/proc/shortbread/kmem) must grow by less than
 * N/20: one allocation per call would be N. The count for paths that
 * allocate more (TCP through netstack, page faults with mmap and munmap)
 * is printed, not checked. Shortbread only: Linux has no such counter, and the test
 * checks nothing there. */
#define _GNU_SOURCE
#include "check.h"
#include "sock.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#define N 4000

static const char *KMEM = "/proc/shortbread/kmem";

static long allocs(void) { return check_proc_value(KMEM, "/gc/heap/allocs:objects"); }
static long alloc_bytes(void) { return check_proc_value(KMEM, "/gc/heap/allocs:bytes"); }

/* what reading the two counters costs by itself, subtracted from each
 * measurement */
static long base_objs, base_bytes;

struct result {
	double objs, bytes; /* per operation */
};

/* runs op n times (after a warm-up of n/10, which lets caches and pools
 * fill) and returns the heap allocations per operation: the least of
 * three runs, as what the kernel's own goroutines allocate meanwhile
 * (timers, the watchdog) only ever adds */
static struct result measure(void (*op)(void), int n)
{
	for (int i = 0; i < n / 10; i++)
		op();
	struct result best = {1e9, 1e9};
	for (int round = 0; round < 3; round++) {
		long o0 = allocs(), b0 = alloc_bytes();
		for (int i = 0; i < n; i++)
			op();
		long o1 = allocs(), b1 = alloc_bytes();
		struct result r = {(double)(o1 - o0 - base_objs) / n, (double)(b1 - b0 - base_bytes) / n};
		if (r.objs < best.objs)
			best = r;
	}
	return best;
}

static int pfd[2], ufd[2], dfd[2], sfd[2], tfd[2], efd, ep, filefd;
static char buf[4096];

static void op_pipe(void)
{
	if (write(pfd[1], buf, 64) != 64 || read(pfd[0], buf, 64) != 64)
		abort();
}

static void op_pipev(void)
{
	struct iovec v[2] = {{buf, 32}, {buf + 32, 32}};
	if (writev(pfd[1], v, 2) != 64 || readv(pfd[0], v, 2) != 64)
		abort();
}

static void op_unix(void)
{
	if (write(ufd[0], buf, 64) != 64 || read(ufd[1], buf, 64) != 64)
		abort();
}

static void op_unix_dgram(void)
{
	if (send(dfd[0], buf, 64, 0) != 64 || recv(dfd[1], buf, 64, 0) != 64)
		abort();
}

static void op_unix_seqpacket(void)
{
	if (send(sfd[0], buf, 64, 0) != 64 || recv(sfd[1], buf, 64, 0) != 64)
		abort();
}

/* an event loop arming and disarming its write interest in a socket */
static void op_epoll_mod(void)
{
	static int i;
	struct epoll_event ev = {.events = i++ & 1 ? EPOLLIN : EPOLLIN | EPOLLOUT};
	if (epoll_ctl(ep, EPOLL_CTL_MOD, ufd[0], &ev))
		abort();
}

static void op_epoll_adddel(void)
{
	struct epoll_event ev = {.events = EPOLLIN};
	if (epoll_ctl(ep, EPOLL_CTL_ADD, ufd[1], &ev) || epoll_ctl(ep, EPOLL_CTL_DEL, ufd[1], &ev))
		abort();
}

static void op_tcp(void)
{
	if (write(tfd[0], buf, 64) != 64)
		abort();
	for (int got = 0; got < 64;) {
		ssize_t n = read(tfd[1], buf, 64 - got);
		if (n <= 0)
			abort();
		got += n;
	}
}

static void op_eventfd(void)
{
	uint64_t v = 1;
	if (write(efd, &v, 8) != 8 || read(efd, &v, 8) != 8)
		abort();
}

static void op_epoll(void)
{
	struct epoll_event ev;
	if (epoll_wait(ep, &ev, 1, 0) != 1)
		abort();
}

static void op_poll(void)
{
	struct pollfd p = {.fd = efd, .events = POLLOUT};
	if (poll(&p, 1, 0) != 1)
		abort();
}

static void op_file(void)
{
	if (pwrite(filefd, buf, 4096, 0) != 4096 || pread(filefd, buf, 4096, 0) != 4096)
		abort();
}

#define FUTEX_WAKE_PRIVATE 129 /* FUTEX_WAKE | FUTEX_PRIVATE_FLAG */
static int futex_word;
static void op_futex(void)
{
	if (syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0) != 0)
		abort();
}

static void op_getppid(void)
{
	if (syscall(SYS_getppid) <= 0)
		abort();
}

static void op_fault(void)
{
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		abort();
	p[0] = 1;
	munmap(p, 4096);
}

static void tcp_pair(int fds[2])
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	int one = 1;
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1) || getsockname(l, (struct sockaddr *)&a, &len))
		abort();
	fds[0] = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(fds[0], (struct sockaddr *)&a, sizeof a))
		abort();
	fds[1] = accept(l, NULL, NULL);
	setsockopt(fds[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	close(l);
}

/* one measures op and checks it makes fewer than allowed + 0.05 heap
 * objects per operation (allowed < 0: not checked) */
static void one(const char *name, void (*op)(void), double allowed)
{
	struct result r = measure(op, N);
	printf("# %-12s %8.3f objects %10.1f bytes per operation\n", name, r.objs, r.bytes);
	if (allowed >= 0) {
		char check[64];
		snprintf(check, sizeof check, "allocs.%s", name);
		check_report(check, r.objs < allowed + 0.05, "%.3f heap objects (%.1f bytes) per operation, %.0f allowed",
			     r.objs, r.bytes, allowed);
	}
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	if (access(KMEM, R_OK) != 0) {
		printf("# not Shortbread: nothing checked (see the comment at the top)\n");
		return 0;
	}
	/* the cost of the counters themselves */
	long o0 = allocs(), b0 = alloc_bytes();
	long o1 = allocs(), b1 = alloc_bytes();
	base_objs = o1 - o0;
	base_bytes = b1 - b0;
	printf("# reading the counters: %ld objects, %ld bytes\n", base_objs, base_bytes);

	lo_up();
	const char *tmp = check_mktmp();
	char path[300];
	snprintf(path, sizeof path, "%s/f", tmp);
	filefd = open(path, O_CREAT | O_RDWR, 0600);
	efd = eventfd(0, 0);
	ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLOUT};
	struct epoll_event uev = {.events = EPOLLIN};
	if (pipe(pfd) || socketpair(AF_UNIX, SOCK_STREAM, 0, ufd) || socketpair(AF_UNIX, SOCK_DGRAM, 0, dfd) ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sfd) || filefd < 0 || efd < 0 || ep < 0 ||
	    epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev) || epoll_ctl(ep, EPOLL_CTL_ADD, ufd[0], &uev))
		abort();
	tcp_pair(tfd);

	one("getppid", op_getppid, 0);
	one("pipe", op_pipe, 0);
	one("pipe_iovec", op_pipev, 0);
	one("unix_stream", op_unix, 0);
	one("unix_dgram", op_unix_dgram, 0);
	one("unix_seqpacket", op_unix_seqpacket, 0);
	one("eventfd", op_eventfd, 0);
	one("epoll_wait", op_epoll, 0);
	one("epoll_mod", op_epoll_mod, 0);
	one("epoll_adddel", op_epoll_adddel, 0);
	one("poll", op_poll, 0);
	one("tmpfs_4k", op_file, 0);
	one("futex_wake", op_futex, 0);
	one("tcp", op_tcp, -1);
	one("page_fault", op_fault, -1);

	unlink(path);
	rmdir(tmp);
	return check_done();
}
