/*
 * t_tlb: a mapping that one thread removes (munmap) or makes stricter
 * (mprotect) is gone for every other thread of the process, whichever CPU
 * it runs on, once the call returns: the TLB shootdown.
 *
 * running: a thread pinned to the second CPU reads (or writes) a page in
 * a loop that never enters the kernel, while the main thread, pinned to
 * the first, unmaps the page (or makes it read-only). The loop must
 * fault, and may touch the page at most once more after the call
 * returned (the access in flight when it did).
 *
 * blocked: the thread touches the page, so its CPU caches the
 * translation, and blocks in read() on a pipe; the main thread unmaps the
 * page (or makes it read-only) and then writes the pipe; the thread's
 * next touch must fault. Its CPU was out of user mode meanwhile, in the
 * kernel or idle with the process's page tables still loaded: Shortbread
 * then does not interrupt it but has it flush on its way back to user
 * mode (runtime-patches, sbShootdown and sbUserGate), as Linux's lazy TLB
 * mode does. Many rounds, some with a pause before the unmap, so that
 * some find the CPU idle.
 *
 * With one CPU both threads share it; the checks hold all the same.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>

#include "check.h"

#define PG 4096L
#define ROUNDS 60

static __thread sigjmp_buf fault_jmp;
static __thread volatile int fault_code;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	fault_code = si->si_code;
	siglongjmp(fault_jmp, 1);
}

static int cpus[2];

static int pin(int cpu)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return sched_setaffinity(0, sizeof one, &one);
}

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

struct spin {
	volatile char *page;
	int write;
	_Atomic long touches; /* counted after each access */
	_Atomic int started, faulted, code, pinned;
};

static void *spin_loop(void *arg)
{
	struct spin *s = arg;
	atomic_store(&s->pinned, pin(cpus[1]) == 0);
	if (sigsetjmp(fault_jmp, 1)) {
		atomic_store(&s->code, fault_code);
		atomic_store(&s->faulted, 1);
		return NULL;
	}
	atomic_store(&s->started, 1);
	for (;;) {
		if (s->write)
			s->page[0]++;
		else
			(void)s->page[0];
		atomic_fetch_add(&s->touches, 1);
	}
}

/* One round of the running case: write selects mprotect(PROT_READ) and a
 * writing loop instead of munmap and a reading one. */
static void running(const char *what, int wr)
{
	struct spin s = { .write = wr };
	char name[64];
	s.page = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	snprintf(name, sizeof name, "%s.mmap", what);
	if (!CHECK(name, s.page != MAP_FAILED))
		return;
	s.page[0] = 1;
	pthread_t t;
	snprintf(name, sizeof name, "%s.thread", what);
	if (!CHECK_EQ(name, pthread_create(&t, NULL, spin_loop, &s), 0))
		return;
	long long end = now_ns() + 10000000000LL;
	while (atomic_load(&s.touches) < 1000 && now_ns() < end)
		sched_yield();
	snprintf(name, sizeof name, "%s.loop_ran", what);
	CHECK(name, atomic_load(&s.touches) >= 1000);
	int r = wr ? mprotect((void *)s.page, PG, PROT_READ) : munmap((void *)s.page, PG);
	long at = atomic_load(&s.touches);
	snprintf(name, sizeof name, "%s.call", what);
	CHECK_EQ(name, r, 0);
	end = now_ns() + 10000000000LL;
	while (!atomic_load(&s.faulted) && now_ns() < end)
		sched_yield();
	snprintf(name, sizeof name, "%s.faulted", what);
	if (!CHECK(name, atomic_load(&s.faulted))) {
		/* The loop never stops: the process's exit ends it. */
		return;
	}
	pthread_join(t, NULL);
	long after = atomic_load(&s.touches) - at;
	snprintf(name, sizeof name, "%s.touches_after_return", what);
	check_report(name, after <= 1, "%ld touches after the call returned, want at most 1", after);
	snprintf(name, sizeof name, "%s.code", what);
	CHECK_EQ(name, atomic_load(&s.code), wr ? SEGV_ACCERR : SEGV_MAPERR);
	if (wr)
		munmap((void *)s.page, PG);
}

/* The blocked case: one thread, ROUNDS rounds, driven through two pipes. */
struct blk {
	volatile char *_Atomic page;
	int go[2], back[2];
	_Atomic int pinned;
};

/* Messages on back: 't' touched, then 'f' faulted (with the code after
 * it) or 'n' not. */
static void *blk_loop(void *arg)
{
	struct blk *b = arg;
	atomic_store(&b->pinned, pin(cpus[1]) == 0);
	for (int i = 0; i < ROUNDS; i++) {
		char c;
		if (read(b->go[0], &c, 1) != 1)
			return NULL;
		volatile char *p = atomic_load(&b->page);
		int wr = i & 1;
		p[0]++;
		if (write(b->back[1], "t", 1) != 1 || read(b->go[0], &c, 1) != 1)
			return NULL;
		if (sigsetjmp(fault_jmp, 1)) {
			char msg[2] = { 'f', (char)fault_code };
			if (write(b->back[1], msg, 2) != 2)
				return NULL;
			continue;
		}
		if (wr)
			p[0]++;
		else
			(void)p[0];
		if (write(b->back[1], "n?", 2) != 2)
			return NULL;
	}
	return NULL;
}

/* A step of the blocked case's loop: reported only when it fails. */
#define STEP(name, cond) \
	if (!(cond)) { \
		check_report((name), 0, "%s (round %d, line %d)", #cond, i, __LINE__); \
		return; \
	}

static void blocked(void)
{
	struct blk b;
	if (!CHECK_SYS("blocked.pipes", pipe(b.go)) || !CHECK_SYS("blocked.pipes", pipe(b.back)))
		return;
	atomic_store(&b.pinned, 0);
	pthread_t t;
	if (!CHECK_EQ("blocked.thread", pthread_create(&t, NULL, blk_loop, &b), 0))
		return;
	int faulted = 0, codes = 0;
	for (int i = 0; i < ROUNDS; i++) {
		int wr = i & 1;
		char *p = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		STEP("blocked.mmap", p != MAP_FAILED);
		atomic_store(&b.page, p);
		char m[2];
		STEP("blocked.go", write(b.go[1], "g", 1) == 1);
		STEP("blocked.touched", read(b.back[0], m, 1) == 1 && m[0] == 't');
		/* Some rounds let the thread's CPU go idle first. */
		if (i % 3 == 0) {
			struct timespec ms = { 0, 2000000 };
			nanosleep(&ms, NULL);
		}
		STEP("blocked.call", (wr ? mprotect(p, PG, PROT_READ) : munmap(p, PG)) == 0);
		STEP("blocked.go", write(b.go[1], "g", 1) == 1);
		STEP("blocked.answer", read(b.back[0], m, 2) == 2);
		if (m[0] == 'f') {
			faulted++;
			codes += m[1] == (wr ? SEGV_ACCERR : SEGV_MAPERR);
		}
		if (wr)
			munmap(p, PG);
	}
	pthread_join(t, NULL);
	CHECK("blocked.pinned", atomic_load(&b.pinned));
	check_report("blocked.every_touch_faulted", faulted == ROUNDS, "%d of %d touches after the call faulted", faulted, ROUNDS);
	CHECK_EQ("blocked.codes", codes, faulted);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	struct sigaction sa = { 0 };
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	cpu_set_t all;
	if (!CHECK_SYS("getaffinity", sched_getaffinity(0, sizeof all, &all)))
		return check_done();
	int n = 0;
	for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &all))
			cpus[n++] = c;
	if (n == 1)
		cpus[1] = cpus[0];
	CHECK_SYS("pin_main", pin(cpus[0]));
	running("running.munmap", 0);
	running("running.mprotect", 1);
	blocked();
	return check_done();
}
