/*
 * t_kmem: programs that make the kernel allocate until something fails --
 * pipes, unix socket pairs and TCP connections filled with data, several
 * processes at once -- get errors (ENOMEM, ENFILE, ENOBUFS, EMFILE,
 * EAGAIN), the kernel stays up, and everything
 * comes back when they exit (MemFree within a bound of where it was,
 * kernel objects back to their counts). Shortbread only: Linux, as root,
 * deadlocks on memory here (pipe buffers are charged to no process, so
 * its OOM killer cannot help), which is exactly what this checks we do
 * better; on Linux the program says so and checks nothing.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>

#include "check.h"

#define HOGS 6

static long kmem(const char *key) { return check_proc_value("/proc/shortbread/kmem", key); }

static long memfree(void)
{
	check_drop_caches();
	return check_meminfo("MemFree");
}

/* fills pipes until pipe() or a write fails for want of memory; reports
 * the errno that stopped it and the MiB it buffered, then waits to be
 * killed, holding everything */
enum { PIPES, UNIX_PAIRS, TCP_PAIRS };
static const char *const kinds[] = {"pipes", "unix socket pairs", "TCP connections"};

/* makes a connected pair of the kind: p[1] is written, p[0] never read */
static int make_pair(int kind, int p[2])
{
	if (kind == PIPES) {
		if (pipe2(p, O_NONBLOCK))
			return -1;
		fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
		return 0;
	}
	if (kind == UNIX_PAIRS)
		return socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, p);
	static int l = -1;
	static struct sockaddr_in a;
	if (l < 0) {
		a = (struct sockaddr_in){.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t len = sizeof a;
		l = socket(AF_INET, SOCK_STREAM, 0);
		if (l < 0 || bind(l, (void *)&a, sizeof a) || listen(l, 64) || getsockname(l, (void *)&a, &len))
			return -1;
	}
	p[1] = socket(AF_INET, SOCK_STREAM, 0);
	if (p[1] < 0)
		return -1;
	if (connect(p[1], (void *)&a, sizeof a) || (p[0] = accept(l, NULL, NULL)) < 0)
		return -1;
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	return 0;
}

static void hog(int out, int kind)
{
	struct rlimit rl = {4096, 4096};
	setrlimit(RLIMIT_NOFILE, &rl);
	static char buf[65536];
	long kb = 0;
	int err = 0;
	for (;;) {
		int p[2];
		if (make_pair(kind, p)) {
			err = errno;
			break;
		}
		ssize_t w;
		while ((w = write(p[1], buf, sizeof buf)) > 0)
			kb += w / 1024;
		if (errno != EAGAIN) {
			err = errno;
			break;
		}
	}
	int msg[2] = {err, (int)(kb / 1024)};
	write(out, msg, sizeof msg);
	pause();
	_exit(0);
}

/* runs HOGS hogs at once until kernel memory runs short, checks what
 * stopped them, kills them; returns the MiB they buffered */
static int spike(int kind)
{
	int p[2];
	CHECK_SYS("pipe", pipe(p));
	/* The hogs report through this pipe when memory is short: give it a
	 * buffer page now (written and read back, the page stays for reuse),
	 * so that their reports need no new kernel memory. */
	char c0;
	CHECK("pipe.primed", write(p[1], "x", 1) == 1 && read(p[0], &c0, 1) == 1);
	alarm(150); /* a lost report must fail the test, not hang it */
	pid_t kids[HOGS];
	for (int i = 0; i < HOGS; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			close(p[0]);
			hog(p[1], kind);
		}
	}
	close(p[1]);
	int refused = 0, mib = 0, other = 0;
	for (int i = 0; i < HOGS; i++) {
		int msg[2];
		if (read(p[0], msg, sizeof msg) != sizeof msg)
			break;
		if (msg[0] == ENOMEM || msg[0] == ENFILE || msg[0] == ENOBUFS)
			refused++;
		else if (msg[0] != EMFILE)
			other = msg[0];
		mib += msg[1];
	}
	printf("# %d hogs buffered %d MiB in %s; %d stopped for want of kernel memory\n", HOGS, mib, kinds[kind],
	       refused);
	CHECK("kmem.some_refused_for_memory", refused > 0);
	CHECK_EQ("kmem.no_other_errors", other, 0);
	CHECK("kmem.took_most_memory", mib > 200);
	/* while they hold it all, the kernel still serves what needs no new
	 * object (whether a new open file is refused now depends on how much
	 * the heap has given back meanwhile: not checked) */
	struct sysinfo si;
	CHECK_SYS("kmem.sysinfo_while_full", sysinfo(&si));
	for (int i = 0; i < HOGS; i++)
		kill(kids[i], SIGKILL);
	int reaped = 0;
	for (int i = 0; i < HOGS; i++)
		if (waitpid(kids[i], NULL, 0) == kids[i])
			reaped++;
	CHECK_EQ("kmem.hogs_reaped", reaped, HOGS);
	alarm(0);
	close(p[0]);
	return mib;
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	if (access("/proc/shortbread/kmem", R_OK) != 0) {
		printf("# not Shortbread: Linux deadlocks on memory here as root; nothing checked\n");
		return 0;
	}
	long free0 = memfree(), files0 = kmem("open_files"), procs0 = kmem("processes");
	long after[4];
	/* pipes twice (the second spike must keep nothing more), then the
	 * socket kinds */
	static const int order[] = {PIPES, PIPES, UNIX_PAIRS, TCP_PAIRS};
	for (int round = 0; round < 4; round++) {
		int mib = spike(order[round]);
		/* What the runtime keeps of a spike is its metadata (span and
		 * arena records for the peak heap, about 3%): stated bound,
		 * 4 MiB + 4% of what was buffered. Closed TCP connections are
		 * torn down by netstack's goroutines after their owners are
		 * gone, so their memory may take a moment: up to 3 s. */
		long bound = 4096 + (long)mib * 1024 * 4 / 100;
		int waited = 0;
		while ((after[round] = memfree()) < free0 - bound && waited < 30) {
			usleep(100000);
			waited++;
		}
		if (waited)
			printf("# memory came back after %d ms\n", waited * 100);
		printf("# round %d: MemFree %ld kB before, %ld kB after the hogs exited\n", round + 1, free0, after[round]);
		char name[64];
		snprintf(name, sizeof name, "kmem.round%d_memory_back", round + 1);
		if (!CHECK(name, free0 - after[round] < bound))
			printf("# %ld kB kept, bound %ld kB\n", free0 - after[round], bound);
	}
	/* and a second spike keeps nothing more: metadata is reused */
	CHECK("kmem.second_spike_keeps_nothing_more", after[0] - after[1] < 2048);
	CHECK("kmem.files_back", kmem("open_files") <= files0 + 2);
	CHECK_EQ("kmem.processes_back", kmem("processes"), procs0);
	printf("# refused %ld requests for want of memory\n", kmem("refused_for_memory"));
	pid_t c = fork();
	if (c == 0)
		_exit(7);
	int st = 0;
	waitpid(c, &st, 0);
	CHECK("kmem.fork_after", WIFEXITED(st) && WEXITSTATUS(st) == 7);
	int q[2];
	CHECK_SYS("kmem.pipe_after", pipe(q));
	return check_done();
}
