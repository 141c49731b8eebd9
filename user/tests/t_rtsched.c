/*
 * t_rtsched: CPU affinity and real-time precedence, as the scheduler
 * honours them (not only records them: t_sched has the rules).
 *
 * Affinity: sched_getaffinity reports every online CPU at first; a mask
 * with no existing CPU is EINVAL; a thread pinned to one CPU finds itself
 * there (sched_getcpu, which may use the vDSO, and the getcpu system
 * call) across many iterations with sched_yield and sleeps in between,
 * on each CPU in turn; the mask is per thread (a thread's pin leaves the
 * main thread's mask alone), is inherited by fork and by a new thread,
 * and a thread pinned by another (sched_setaffinity with its TID) stays
 * on that CPU once it got there.
 *
 * Precedence: a SCHED_FIFO process and a SCHED_OTHER one pinned to the
 * same CPU; the OTHER one spins incrementing a shared counter; the FIFO
 * one, woken from a pipe read, reads the counter, spins through a fixed
 * amount of its own work, and reads it again: the counter did not move,
 * because the OTHER process cannot run on that CPU while the FIFO one
 * does. The spin is a few tens of milliseconds, well under Linux's RT
 * throttling (950 ms of each second). The check is ordered by events
 * only. RT throttling: a SCHED_FIFO process spinning forever on this
 * process's CPU still lets it sleep, wake and kill the spinner. Needs
 * root (the suite runs as root on both kernels). Then a
 * comment line (no check: it is timing) shows how a nice 0 and a nice 5
 * process share one CPU, and SCHED_RR's interval is checked.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static long ncpu;

static unsigned sys_cpu(void)
{
	unsigned c = ~0u;
	syscall(SYS_getcpu, &c, NULL, NULL);
	return c;
}

static int pin(int cpu)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return sched_setaffinity(0, sizeof one, &one);
}

static int pin_all(void)
{
	cpu_set_t all;
	CPU_ZERO(&all);
	for (int i = 0; i < ncpu; i++)
		CPU_SET(i, &all);
	return sched_setaffinity(0, sizeof all, &all);
}

/* the only CPU in the calling thread's mask, -1 if it has not one CPU,
 * -2 on error */
static int only_cpu(void)
{
	cpu_set_t s;
	if (sched_getaffinity(0, sizeof s, &s))
		return -2;
	if (CPU_COUNT(&s) != 1)
		return -1;
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &s))
			return i;
	return -1;
}

/* iterations in which sched_getcpu or getcpu did not name cpu, with a
 * yield every 8 and a 1 ms sleep every 32 */
static int stray_readings(int cpu, int iters)
{
	int wrong = 0;
	for (int i = 0; i < iters; i++) {
		if (sched_getcpu() != cpu || sys_cpu() != (unsigned)cpu)
			wrong++;
		if (i % 8 == 7)
			sched_yield();
		if (i % 32 == 31) {
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
		}
	}
	return wrong;
}

static void test_mask(void)
{
	cpu_set_t s;
	CHECK_SYS("getaffinity", sched_getaffinity(0, sizeof s, &s));
	CHECK_EQ("getaffinity.all_online", CPU_COUNT(&s), ncpu);
	cpu_set_t none;
	CPU_ZERO(&none);
	CHECK_ERR("setaffinity.empty", sched_setaffinity(0, sizeof none, &none), EINVAL);
	CPU_SET(ncpu, &none); /* a CPU past the last */
	CHECK_ERR("setaffinity.no_such_cpu", sched_setaffinity(0, sizeof none, &none), EINVAL);
	CHECK_ERR("setaffinity.no_such_tid", sched_setaffinity(999999, sizeof s, &s), ESRCH);
	CHECK_EQ("getaffinity.unchanged", (sched_getaffinity(0, sizeof s, &s), CPU_COUNT(&s)), ncpu);
}

/* On each CPU in turn: the mask reads back, and every reading names it. */
static void test_pinned(void)
{
	int bad_mask = 0, wrong = 0;
	char detail[96] = "";
	for (int k = 0; k < ncpu && k < 8; k++) {
		if (pin(k) || only_cpu() != k)
			bad_mask++;
		int w = stray_readings(k, 256);
		if (w && !wrong)
			snprintf(detail, sizeof detail, "pinned to CPU %d: %d of 256 readings elsewhere", k, w);
		wrong += w;
	}
	pin_all();
	CHECK_EQ("pinned.mask_reads_back", bad_mask, 0);
	check_report("pinned.stays", wrong == 0, "%s", detail);
}

struct pinned_thread {
	int cpu;	/* CPU the thread pins itself to, or -1 */
	int mask;	/* only_cpu() in the thread */
	int wrong;	/* stray_readings */
};

static void *pinned_body(void *arg)
{
	struct pinned_thread *p = arg;
	if (p->cpu >= 0 && pin(p->cpu))
		p->mask = -3;
	else
		p->mask = only_cpu();
	if (p->mask >= 0)
		p->wrong = stray_readings(p->mask, 128);
	return NULL;
}

static void test_inherit(void)
{
	int last = (int)ncpu - 1;
	/* a thread's pin is its own */
	struct pinned_thread own = {.cpu = 0};
	pthread_t th;
	pthread_create(&th, NULL, pinned_body, &own);
	pthread_join(th, NULL);
	CHECK_EQ("thread.own_pin", own.mask, 0);
	CHECK_EQ("thread.own_pin_stays", own.wrong, 0);
	if (ncpu > 1)
		CHECK_EQ("thread.main_mask_kept", only_cpu(), -1);

	CHECK_SYS("inherit.pin_last", pin(last));
	struct pinned_thread inh = {.cpu = -1};
	pthread_create(&th, NULL, pinned_body, &inh);
	pthread_join(th, NULL);
	CHECK_EQ("inherit.thread_mask", inh.mask, last);
	CHECK_EQ("inherit.thread_stays", inh.wrong, 0);

	int p[2];
	if (!CHECK_SYS("inherit.pipe", pipe(p)))
		return;
	pid_t pid = fork();
	if (pid == 0) {
		struct pinned_thread c = {.cpu = -1};
		pinned_body(&c);
		int r[2] = {c.mask, c.wrong};
		_exit(write(p[1], r, sizeof r) == sizeof r ? 0 : 1);
	}
	close(p[1]);
	int r[2] = {-9, -9};
	ssize_t n = read(p[0], r, sizeof r);
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	CHECK("inherit.fork_reported", n == sizeof r && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ("inherit.fork_mask", r[0], last);
	CHECK_EQ("inherit.fork_stays", r[1], 0);
	CHECK_SYS("inherit.unpin", pin_all());
}

/* Pinned by another thread: once the spinning thread saw the CPU it was
 * pinned to, every later reading names it. */
static volatile int other_go, other_stop, other_tid;
static volatile int other_seen, other_wrong;

static void *other_body(void *arg)
{
	(void)arg;
	other_tid = (int)syscall(SYS_gettid);
	while (!other_go)
		;
	int want = other_go - 1;
	while (!other_stop) {
		int c = sched_getcpu();
		if (c == want)
			other_seen++;
		else if (other_seen)
			other_wrong++;
	}
	return NULL;
}

static void test_pin_other(void)
{
	int target = (int)ncpu - 1;
	pthread_t th;
	other_go = other_stop = other_tid = other_seen = other_wrong = 0;
	pthread_create(&th, NULL, other_body, NULL);
	while (!other_tid)
		sched_yield();
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(target, &one);
	CHECK_SYS("other.setaffinity", sched_setaffinity(other_tid, sizeof one, &one));
	cpu_set_t got;
	CHECK_SYS("other.getaffinity", sched_getaffinity(other_tid, sizeof got, &got));
	CHECK("other.mask", CPU_COUNT(&got) == 1 && CPU_ISSET(target, &got));
	other_go = target + 1;
	/* wait for the thread to get there, then for a few thousand readings */
	for (int i = 0; i < 20000 && other_seen < 5000; i++) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	other_stop = 1;
	pthread_join(th, NULL);
	CHECK("other.got_there", other_seen >= 5000);
	CHECK_EQ("other.stays", other_wrong, 0);
}

/* FIFO against OTHER on one CPU. */
struct shared {
	volatile uint64_t counter; /* the OTHER process's work */
	volatile int stop, fifo_ready;
	volatile int fifo_cpu_before, fifo_cpu_after;
	volatile uint64_t c0, c1;
};

#define FIFO_WORK 2000000UL

static void test_fifo(void)
{
	if (getuid() != 0) {
		check_report("fifo.root", 0, "needs root");
		return;
	}
	int cpu = (int)ncpu - 1;
	struct shared *s = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!CHECK("fifo.mmap", s != MAP_FAILED))
		return;
	int p[2];
	if (!CHECK_SYS("fifo.pipe", pipe(p)))
		return;
	pid_t other = fork();
	if (other == 0) {
		close(p[0]);
		close(p[1]);
		if (pin(cpu))
			_exit(1);
		while (!s->stop)
			s->counter++;
		_exit(0);
	}
	pid_t fifo = fork();
	if (fifo == 0) {
		close(p[1]);
		struct sched_param sp = {.sched_priority = 50};
		if (pin(cpu) || syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &sp))
			_exit(1);
		s->fifo_ready = 1;
		char c;
		if (read(p[0], &c, 1) != 1)
			_exit(2);
		s->fifo_cpu_before = sched_getcpu();
		s->c0 = s->counter;
		for (volatile unsigned long i = 0; i < FIFO_WORK; i++)
			;
		s->c1 = s->counter;
		s->fifo_cpu_after = sched_getcpu();
		_exit(0);
	}
	close(p[0]);
	/* the OTHER process spins and the FIFO one is ready */
	for (int i = 0; i < 20000 && !(s->counter > 1000 && s->fifo_ready); i++) {
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	CHECK("fifo.other_spins", s->counter > 1000);
	CHECK("fifo.ready", s->fifo_ready);
	/* let the FIFO process block in its read (not needed for the check:
	 * a runnable FIFO process preempts the spinner all the same) */
	struct timespec ts = {0, 20000000};
	nanosleep(&ts, NULL);
	CHECK_EQ("fifo.wake", write(p[1], "x", 1), 1);
	int st;
	CHECK("fifo.exited", waitpid(fifo, &st, 0) == fifo && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	s->stop = 1;
	waitpid(other, NULL, 0);
	close(p[1]);
	CHECK_EQ("fifo.ran_on_cpu", s->fifo_cpu_before, cpu);
	CHECK_EQ("fifo.still_on_cpu", s->fifo_cpu_after, cpu);
	check_report("fifo.other_held_off", s->c1 == s->c0, "the OTHER process counted %llu while the FIFO one ran",
		     (unsigned long long)(s->c1 - s->c0));
	munmap(s, 4096);
}

/* RT throttling: a SCHED_FIFO process spinning forever on this process's
 * CPU leaves it enough time (5% of each second on both kernels) to sleep
 * and wake a few times and to kill the spinner. Without throttling the
 * test never ends (the runner's timeout fails it). */
static void test_throttle(void)
{
	if (getuid() != 0)
		return;
	int cpu = (int)ncpu - 1;
	volatile int *spinning = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!CHECK("throttle.mmap", spinning != MAP_FAILED))
		return;
	CHECK_SYS("throttle.pin", pin(cpu));
	pid_t pid = fork();
	if (pid == 0) {
		struct sched_param sp = {.sched_priority = 10};
		if (syscall(SYS_sched_setscheduler, 0, SCHED_FIFO, &sp))
			_exit(1);
		for (;;)
			*spinning = 1;
	}
	while (!*spinning && waitpid(pid, NULL, WNOHANG) == 0)
		sched_yield();
	int slept = 0;
	for (int i = 0; i < 5; i++) {
		struct timespec ts = {0, 1000000};
		if (nanosleep(&ts, NULL) == 0)
			slept++;
	}
	CHECK_EQ("throttle.other_runs", slept, 5);
	CHECK_EQ("throttle.still_spinning", waitpid(pid, NULL, WNOHANG), 0);
	kill(pid, SIGKILL);
	int st;
	CHECK("throttle.killed", waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	CHECK_SYS("throttle.unpin", pin_all());
	munmap((void *)spinning, 4096);
}

/* Not a check (it depends on timing): how two CPU-bound processes at
 * nice 0 and nice 5 share one CPU. Linux's weights give 3.06 to 1; the
 * machine layer's time slices (10 ms and 3.3 ms) give the same. */
static void show_nice_share(void)
{
	volatile uint64_t *n = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (n == MAP_FAILED)
		return;
	pid_t pid[2];
	for (int i = 0; i < 2; i++) {
		pid[i] = fork();
		if (pid[i] == 0) {
			if (pin((int)ncpu - 1) || setpriority(PRIO_PROCESS, 0, 5 * i))
				_exit(1);
			for (;;)
				n[i]++;
		}
	}
	struct timespec ts = {0, 300000000};
	nanosleep(&ts, NULL);
	uint64_t a = n[0], b = n[1];
	ts.tv_sec = 1;
	ts.tv_nsec = 0;
	nanosleep(&ts, NULL);
	a = n[0] - a;
	b = n[1] - b;
	for (int i = 0; i < 2; i++) {
		kill(pid[i], SIGKILL);
		waitpid(pid[i], NULL, 0);
	}
	printf("# nice 0 against nice 5 on one CPU: %llu to %llu (%.2f to 1)\n", (unsigned long long)a,
	       (unsigned long long)b, b ? (double)a / b : 0.0);
	munmap((void *)n, 4096);
}

static void test_rr_interval(void)
{
	struct sched_param sp = {.sched_priority = 1};
	pid_t pid = fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	struct timespec ts = {9, 9};
	CHECK_SYS("rr.set", syscall(SYS_sched_setscheduler, pid, SCHED_RR, &sp));
	CHECK_SYS("rr.interval", syscall(SYS_sched_rr_get_interval, pid, &ts));
	CHECK("rr.100ms", ts.tv_sec == 0 && ts.tv_nsec == 100000000);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	printf("# %ld CPUs\n", ncpu);
	test_mask();
	test_pinned();
	test_inherit();
	test_pin_other();
	test_fifo();
	test_throttle();
	test_rr_interval();
	show_nice_share();
	return check_done();
}
