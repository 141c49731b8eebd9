/*
 * t_oom: a program that touches memory until none is left is stopped
 * (killed, or refused by mmap) and everything else goes on: the kernel
 * keeps a reserve for itself, and what the program held comes back. Runs
 * on both kernels (Linux's OOM killer takes the hog). Each round forks
 * hogs that map and touch 1 MiB at a time, reporting each MiB through a
 * pipe; afterwards this process must still be able to allocate, and a
 * later round must get about as far as the first (nothing leaked).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "check.h"

#define MIB (1 << 20)

static void hog(int out)
{
	for (;;) {
		char *p = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			_exit(0); /* refused: as good as being killed */
		for (int i = 0; i < MIB; i += 4096)
			p[i] = 1;
		if (write(out, "m", 1) != 1)
			_exit(2);
	}
}

/* runs n hogs at once; returns the MiB they reached together, or -1 if
 * one ended in a way other than SIGKILL or an mmap refusal */
static long round_of(int n)
{
	int p[2];
	if (pipe(p))
		return -1;
	/* the pipe must never block a hog: read as they write */
	for (int i = 0; i < n; i++) {
		if (fork() == 0) {
			close(p[0]);
			hog(p[1]);
		}
	}
	close(p[1]);
	long mb = 0;
	char buf[4096];
	for (ssize_t k; (k = read(p[0], buf, sizeof buf)) > 0;)
		mb += k;
	close(p[0]);
	int ok = 1;
	for (int i = 0; i < n; i++) {
		int st;
		if (wait(&st) < 0)
			return -1;
		if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
			printf("# hog ended with status %#x\n", st);
			ok = 0;
		}
	}
	return ok ? mb : -1;
}

/* A small process that keeps faulting pages in while hogs exhaust memory:
 * the killer must take the hogs, not it. It runs until its pipe closes. */
static pid_t bystander(int *stop)
{
	int p[2];
	if (pipe(p))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[1]);
		fcntl(p[0], F_SETFL, O_NONBLOCK);
		for (;;) {
			char c;
			if (read(p[0], &c, 1) == 0)
				_exit(0);
			char *m = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (m == MAP_FAILED)
				continue;
			for (int i = 0; i < 65536; i += 4096)
				m[i] = 1;
			munmap(m, 65536);
		}
	}
	close(p[0]);
	*stop = p[1];
	return pid;
}

/* after a round: this process can still map and touch 32 MiB */
static int can_allocate(void)
{
	char *p = mmap(NULL, 32 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	for (int i = 0; i < 32 * MIB; i += 4096)
		p[i] = 1;
	return munmap(p, 32 * MIB) == 0;
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	long first = round_of(1);
	printf("# round 1: one hog reached %ld MiB\n", first);
	CHECK("oom.one_hog_stopped", first >= 0);
	CHECK("oom.one_hog_used_memory", first >= 64);
	CHECK("oom.alive_after_one", can_allocate());
	long two = round_of(2);
	printf("# round 2: two hogs reached %ld MiB together\n", two);
	CHECK("oom.two_hogs_stopped", two >= 0);
	CHECK("oom.alive_after_two", can_allocate());
	int stop = -1;
	pid_t by = bystander(&stop);
	long with = round_of(1);
	close(stop);
	int st = -1;
	waitpid(by, &st, 0);
	printf("# round with a bystander: the hog reached %ld MiB\n", with);
	CHECK("oom.hog_stopped_not_bystander", with >= 0);
	CHECK_EQ("oom.bystander_survived", st, 0);
	long again = round_of(1);
	printf("# round 3: one hog reached %ld MiB\n", again);
	CHECK("oom.hog_again_stopped", again >= 0);
	/* what the earlier hogs held came back (within 10%) */
	CHECK("oom.memory_came_back", again >= first - first / 10);
	CHECK("oom.alive_at_end", can_allocate());
	return check_done();
}
