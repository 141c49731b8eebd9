/*
 * t_handoff: futex hand-offs between threads pinned to different CPUs.
 *
 * Two pairs of threads pass a token back and forth with FUTEX_WAIT and
 * FUTEX_WAKE, each pair's ends pinned to the first two CPUs the process
 * may use, so every wake-up names a thread that may run only on the
 * other CPU, which the other pair's thread usually keeps busy (on
 * Shortbread, the woken thread then waits in that CPU's queue: readyAway
 * and sbCPUQ in runtime-patches). Every hand-off must complete — a lost
 * wake-up, or a woken thread that is never run, would stop the pair,
 * and the test fails once the hand-offs stop for 20 s — and each thread
 * must find itself on its own CPU (sched_getcpu) after every wait. Then
 * one pair again with a CPU-bound process pinned to the second CPU,
 * which that pair's thread there must share: the hand-offs complete all
 * the same. With one CPU there is nothing to cross and the test says so.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>

#include "check.h"

/* musl has no <linux/futex.h> */
#define FUTEX_WAIT_PRIVATE 128
#define FUTEX_WAKE_PRIVATE 129

#define ROUNDS 1000
#define STALL_NS (20 * 1000000000LL)

struct pair {
	_Atomic int turn; /* whose move: 0 or 1 */
	int cpu[2];
	int rounds;
	_Atomic long done[2]; /* moves made by each end */
	_Atomic long wrong[2]; /* waits that ended on another CPU */
	_Atomic int failed;   /* an end could not pin itself */
};

struct end {
	struct pair *p;
	int side;
};

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *run_end(void *arg)
{
	struct end *e = arg;
	struct pair *p = e->p;
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(p->cpu[e->side], &one);
	if (sched_setaffinity(0, sizeof one, &one)) {
		p->failed = 1;
		return NULL;
	}
	for (int i = 0; i < p->rounds; i++) {
		while (atomic_load(&p->turn) != e->side)
			syscall(SYS_futex, &p->turn, FUTEX_WAIT_PRIVATE, 1 - e->side, NULL, NULL, 0);
		if (sched_getcpu() != p->cpu[e->side])
			atomic_fetch_add(&p->wrong[e->side], 1);
		atomic_fetch_add(&p->done[e->side], 1);
		atomic_store(&p->turn, 1 - e->side);
		syscall(SYS_futex, &p->turn, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	return NULL;
}

static long moves(struct pair *ps, int n)
{
	long m = 0;
	for (int i = 0; i < n; i++)
		m += ps[i].done[0] + ps[i].done[1];
	return m;
}

/* Runs n pairs across cpu a and b; reports under name. */
static void run_pairs(const char *name, int n, int a, int b, int rounds)
{
	struct pair ps[2];
	struct end ends[2][2];
	pthread_t th[2][2];
	char what[96];
	memset(ps, 0, sizeof ps);
	int started = 0;
	for (int i = 0; i < n; i++) {
		ps[i].cpu[0] = a;
		ps[i].cpu[1] = b;
		ps[i].rounds = rounds;
		for (int s = 0; s < 2; s++) {
			ends[i][s] = (struct end){ &ps[i], s };
			if (pthread_create(&th[i][s], NULL, run_end, &ends[i][s]) == 0)
				started++;
		}
	}
	snprintf(what, sizeof what, "%s.started", name);
	if (!CHECK_EQ(what, started, 2 * n))
		_exit(1);
	/* Progress, not a time limit: the pairs fail only when they stop. */
	long last = -1;
	long long since = now_ns(), t0 = since;
	while (moves(ps, n) < 2L * n * rounds) {
		long m = moves(ps, n);
		if (m != last) {
			last = m;
			since = now_ns();
		} else if (now_ns() - since > STALL_NS) {
			snprintf(what, sizeof what, "%s.progress", name);
			CHECK(what, m == 2L * n * rounds);
			printf("# %s: stopped after %ld of %ld moves\n", name, m, 2L * n * rounds);
			_exit(check_done());
		}
		usleep(2000);
	}
	long long t1 = now_ns();
	for (int i = 0; i < n; i++)
		for (int s = 0; s < 2; s++)
			pthread_join(th[i][s], NULL);
	long wrong = 0;
	int failed = 0;
	for (int i = 0; i < n; i++) {
		wrong += ps[i].wrong[0] + ps[i].wrong[1];
		failed |= ps[i].failed;
	}
	snprintf(what, sizeof what, "%s.pinned", name);
	CHECK_EQ(what, failed, 0);
	snprintf(what, sizeof what, "%s.moves", name);
	CHECK_EQ(what, moves(ps, n), 2L * n * rounds);
	snprintf(what, sizeof what, "%s.on_own_cpu", name);
	CHECK_EQ(what, wrong, 0);
	printf("# %s: %d pair(s) across CPUs %d and %d, %d round trips each in %lld ms\n", name, n, a, b,
	       rounds, (t1 - t0) / 1000000);
}

int main(void)
{
	check_prog = "t_handoff";
	cpu_set_t all;
	if (!CHECK_SYS("getaffinity", sched_getaffinity(0, sizeof all, &all)))
		return check_done();
	int cpu[2], n = 0;
	for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &all))
			cpu[n++] = c;
	if (n < 2) {
		printf("# one CPU: no hand-off crosses CPUs\n");
		CHECK_EQ("one_cpu", CPU_COUNT(&all), 1);
		return check_done();
	}
	run_pairs("two_pairs", 2, cpu[0], cpu[1], ROUNDS);

	/* The second CPU busy with a CPU-bound process. */
	int ready[2];
	if (!CHECK_SYS("pipe", pipe(ready)))
		return check_done();
	pid_t pid = fork();
	if (pid == 0) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(cpu[1], &one);
		if (sched_setaffinity(0, sizeof one, &one))
			_exit(1);
		(void)!write(ready[1], "r", 1);
		for (volatile unsigned long i = 0;; i++)
			;
	}
	char c;
	CHECK_EQ("spinner.ready", read(ready[0], &c, 1), 1);
	run_pairs("beside_spinner", 1, cpu[0], cpu[1], ROUNDS / 5);
	kill(pid, SIGKILL);
	int st;
	CHECK_EQ("spinner.reaped", waitpid(pid, &st, 0), pid);
	CHECK("spinner.killed", WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	return check_done();
}
