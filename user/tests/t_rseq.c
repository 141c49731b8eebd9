/*
 * t_rseq: restartable sequences (rseq(2)) as Linux 6.1 has them.
 * Registration and its errors (EINVAL for another address, length,
 * alignment or flag, EPERM for another signature, EBUSY for the same
 * registration, EFAULT for a kernel address), unregistration (cpu_id
 * back to -1); cpu_id and cpu_id_start name the CPU the system call
 * names on a thread pinned to each CPU in turn; a critical section is
 * aborted (execution goes on at abort_ip) when the thread is preempted
 * (more threads spinning than CPUs) and when a signal is delivered (the
 * handler's saved RIP is already abort_ip); outside a section a signal
 * clears rseq_cs; a bad signature before abort_ip is SIGSEGV; an
 * unmapped area is EFAULT; a fork child keeps the registration, a new
 * thread has none. membarrier's RSEQ commands: EPERM before the
 * registration, EINVAL for flags other than MEMBARRIER_CMD_FLAG_CPU, a
 * CPU that does not exist accepted, and no section of another thread
 * that began before the call runs on after it returns. musl registers
 * nothing, so the test owns the call.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "check.h"

#define RSEQ_SIG 0x53053053
#define RSEQ_FLAG_UNREGISTER 1

struct rseq_area {
	uint32_t cpu_id_start;
	uint32_t cpu_id;
	uint64_t rseq_cs;
	uint32_t flags;
} __attribute__((aligned(32)));

struct rseq_cs {
	uint32_t version, flags;
	uint64_t start_ip, post_commit_offset, abort_ip;
} __attribute__((aligned(32)));

static long sys_rseq(void *area, uint32_t len, int flags, uint32_t sig)
{
	return syscall(SYS_rseq, area, len, flags, sig);
}

/*
 * cs_spin(&area->rseq_cs, desc, n): sets rseq_cs to desc and counts n
 * down inside the critical section [cs_start, cs_end); returns 1 if it
 * got to the end, 0 if the kernel moved it to cs_abort (the signature
 * word just before it). cs_badsig is an abort label with another word
 * before it.
 */
__asm__(".text\n"
	".globl cs_spin\n"
	"cs_spin:\n"
	"	movq %rsi, (%rdi)\n"
	".globl cs_start\n"
	"cs_start:\n"
	"	decq %rdx\n"
	"	jnz cs_start\n"
	".globl cs_end\n"
	"cs_end:\n"
	"	movl $1, %eax\n"
	"	ret\n"
	"	.long 0x53053053\n"
	".globl cs_abort\n"
	"cs_abort:\n"
	"	xorl %eax, %eax\n"
	"	ret\n"
	"	.long 0x12345678\n"
	".globl cs_badsig\n"
	"cs_badsig:\n"
	"	xorl %eax, %eax\n"
	"	ret\n");
extern long cs_spin(uint64_t *rseq_cs, struct rseq_cs *desc, unsigned long n);

/*
 * mb_spin(&area->rseq_cs, desc, &done, &epoch, &violation, &inside):
 * inside the critical section [mb_start, mb_end) reads *epoch (the
 * section's start) and publishes it in *inside, then spins until it is
 * aborted; if it sees *done reach its start (a membarrier that began
 * after the section did has returned) it sets *violation and leaves.
 */
__asm__(".text\n"
	".globl mb_spin\n"
	"mb_spin:\n"
	"	movq %rsi, (%rdi)\n"
	".globl mb_start\n"
	"mb_start:\n"
	"	movq (%rcx), %rax\n"
	"	movq %rax, (%r9)\n"
	"1:	cmpq %rax, (%rdx)\n"
	"	jae 2f\n"
	"	jmp 1b\n"
	"2:	movl $1, (%r8)\n"
	"	jmp mb_end\n"
	".globl mb_end\n"
	"mb_end:\n"
	"	movl $1, %eax\n"
	"	ret\n"
	"	.long 0x53053053\n"
	".globl mb_abort\n"
	"mb_abort:\n"
	"	xorl %eax, %eax\n"
	"	ret\n");
extern long mb_spin(uint64_t *rseq_cs, struct rseq_cs *desc, volatile uint64_t *done, volatile uint64_t *epoch,
		    volatile int *violation, volatile uint64_t *inside);
extern char mb_start[], mb_end[], mb_abort[];
extern char cs_start[], cs_end[], cs_abort[], cs_badsig[];

static struct rseq_cs desc;
static __thread struct rseq_area area;

static void make_desc(struct rseq_cs *d, char *abort)
{
	d->version = d->flags = 0;
	d->start_ip = (uintptr_t)cs_start;
	d->post_commit_offset = (uintptr_t)cs_end - (uintptr_t)cs_start;
	d->abort_ip = (uintptr_t)abort;
}

static unsigned sys_cpu(void)
{
	unsigned c = ~0u;
	syscall(SYS_getcpu, &c, NULL, NULL);
	return c;
}

static void test_register(void)
{
	static struct rseq_area other;
	static char buf[128] __attribute__((aligned(32)));
	CHECK_ERR("register.misaligned", sys_rseq(buf + 16, 32, 0, RSEQ_SIG), EINVAL);
	CHECK_ERR("register.short", sys_rseq(&area, 31, 0, RSEQ_SIG), EINVAL);
	CHECK_ERR("register.long", sys_rseq(&area, 64, 0, RSEQ_SIG), EINVAL);
	CHECK_ERR("register.bad_flag", sys_rseq(&area, 32, 2, RSEQ_SIG), EINVAL);
	CHECK_ERR("register.kernel_address", sys_rseq((void *)0xffff800000000000UL, 32, 0, RSEQ_SIG), EFAULT);
	CHECK_ERR("unregister.none", sys_rseq(&area, 32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG), EINVAL);
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(p, 4096);
	CHECK_ERR("register.unmapped", sys_rseq(p, 32, 0, RSEQ_SIG), EFAULT);
	CHECK_ERR("register.still_none", sys_rseq(&area, 32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG), EINVAL);
	area.cpu_id = 0x7777;
	CHECK_SYS("register", sys_rseq(&area, 32, 0, RSEQ_SIG));
	unsigned a = sys_cpu();
	unsigned id = area.cpu_id, start = area.cpu_id_start;
	CHECK("register.cpu_id_written", id == start && id < (unsigned)sysconf(_SC_NPROCESSORS_ONLN) && id != 0x7777);
	(void)a;
	CHECK_ERR("register.again", sys_rseq(&area, 32, 0, RSEQ_SIG), EBUSY);
	CHECK_ERR("register.again_other_sig", sys_rseq(&area, 32, 0, RSEQ_SIG + 1), EPERM);
	CHECK_ERR("register.again_other_addr", sys_rseq(&other, 32, 0, RSEQ_SIG), EINVAL);
	CHECK_ERR("register.again_other_len", sys_rseq(&area, 64, 0, RSEQ_SIG + 1), EINVAL);
	CHECK_ERR("unregister.other_sig", sys_rseq(&area, 32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG + 1), EPERM);
	CHECK_ERR("unregister.other_addr", sys_rseq(&other, 32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG), EINVAL);
	CHECK_ERR("unregister.other_len", sys_rseq(&area, 64, RSEQ_FLAG_UNREGISTER, RSEQ_SIG), EINVAL);
	CHECK_ERR("unregister.extra_flag", sys_rseq(&area, 32, RSEQ_FLAG_UNREGISTER | 2, RSEQ_SIG), EINVAL);
	CHECK_SYS("unregister", sys_rseq(&area, 32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG));
	CHECK("unregister.cpu_id_reset", area.cpu_id == 0xffffffffu && area.cpu_id_start == 0);
	CHECK_SYS("register.after_unregister", sys_rseq(&area, 32, 0, RSEQ_SIG));
}

/* cpu_id names the CPU the system call names, on a thread pinned to
 * each CPU in turn (a reading between two system-call readings that
 * agree; a CPU that disagrees three times running is wrong). */
static void test_cpu_id(long ncpu)
{
	cpu_set_t all;
	sched_getaffinity(0, sizeof all, &all);
	long trials = 0, consistent = 0, wrong = 0;
	char detail[128] = "";
	for (long k = 0; k < ncpu; k++) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(k, &one);
		sched_setaffinity(0, sizeof one, &one);
		for (int i = 0; i < 300; i++, trials++) {
			int misses = 0;
			for (int attempt = 0; attempt < 20 && misses < 3; attempt++) {
				unsigned a = sys_cpu();
				unsigned id = area.cpu_id, start = area.cpu_id_start;
				unsigned b = sys_cpu();
				if (a != b)
					continue;
				consistent++;
				if (id == a && start == a)
					break;
				if (++misses == 3) {
					wrong++;
					snprintf(detail, sizeof detail, "on CPU %u: cpu_id %u, cpu_id_start %u", a, id, start);
				}
			}
		}
	}
	sched_setaffinity(0, sizeof all, &all);
	check_report("cpu_id.vs_getcpu", wrong == 0 && consistent >= trials / 2, "%ld of %ld trials wrong (%s), %ld consistent",
		     wrong, trials, detail, consistent);
}

/* Preemption: more threads spinning than CPUs, all on CPU 0 where
 * affinity holds, so the section's thread is preempted long before it
 * counts 2^32 down. */
static volatile int stop_spin;
static void *spinner(void *arg)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	sched_setaffinity(0, sizeof one, &one);
	(void)arg;
	while (!stop_spin)
		;
	return NULL;
}

static void test_preempt(long ncpu)
{
	cpu_set_t all, one;
	sched_getaffinity(0, sizeof all, &all);
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	sched_setaffinity(0, sizeof one, &one);
	pthread_t th[8];
	int n = (int)ncpu + 1;
	if (n > 8)
		n = 8;
	stop_spin = 0;
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, spinner, NULL);
	make_desc(&desc, cs_abort);
	long done = cs_spin(&area.rseq_cs, &desc, 1UL << 32);
	stop_spin = 1;
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	sched_setaffinity(0, sizeof all, &all);
	check_report("preempt.aborts", done == 0, "the section ran to its end (%ld) with %d threads spinning", done, n);
	unsigned a = sys_cpu(), id = area.cpu_id, b = sys_cpu();
	CHECK("preempt.cpu_id", a != b || id == a);
}

/* A signal in a section: the handler finds abort_ip in its frame. */
static volatile uint64_t sig_rip;
static volatile int sig_seen;
static void on_alarm(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	(void)sig;
	(void)si;
	sig_rip = uc->uc_mcontext.gregs[REG_RIP];
	sig_seen = 1;
}

static void test_signal(void)
{
	struct sigaction sa = {.sa_sigaction = on_alarm, .sa_flags = SA_SIGINFO};
	sigaction(SIGALRM, &sa, NULL);
	make_desc(&desc, cs_abort);
	int tries = 0, good = 0;
	uint64_t rip = 0;
	for (; tries < 5 && !good; tries++) {
		sig_seen = 0;
		struct itimerval it = {.it_value = {0, 100000}};
		setitimer(ITIMER_REAL, &it, NULL);
		while (!sig_seen)
			cs_spin(&area.rseq_cs, &desc, 1UL << 32);
		rip = sig_rip;
		if (rip >= (uintptr_t)cs_start && rip < (uintptr_t)cs_end)
			break; /* in the section and not moved: wrong */
		good = rip == (uintptr_t)cs_abort; /* else it came between sections: again */
	}
	check_report("signal.aborts", good, "the handler's RIP %#lx, section [%p, %p), abort %p", (unsigned long)rip,
		     (void *)cs_start, (void *)cs_end, (void *)cs_abort);

	/* Outside a section, a delivery clears rseq_cs. */
	static struct rseq_cs elsewhere;
	make_desc(&elsewhere, cs_abort);
	area.rseq_cs = (uintptr_t)&elsewhere;
	sig_seen = 0;
	raise(SIGALRM);
	CHECK("signal.clears_rseq_cs", sig_seen && area.rseq_cs == 0);
}

/* In a child: a descriptor whose abort_ip follows the wrong word, then
 * a signal: SIGSEGV. */
static int child_status(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		static struct rseq_cs bad;
		make_desc(&bad, cs_badsig);
		area.rseq_cs = (uintptr_t)&bad;
		raise(SIGALRM);
		_exit(0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return st;
}

static void *thread_registers(void *arg)
{
	(void)arg;
	/* A new thread has no registration: its own area registers. */
	long r = sys_rseq(&area, 32, 0, RSEQ_SIG);
	return (void *)(r == 0 && area.cpu_id < 4096 ? 1L : 0L);
}

/* membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) */
#define MB_QUERY 0
#define MB_PRIVATE_EXPEDITED_RSEQ (1 << 7)
#define MB_REGISTER_PRIVATE_EXPEDITED_RSEQ (1 << 8)
#define MB_FLAG_CPU 1

static volatile uint64_t mb_done, mb_epoch, mb_inside;
static volatile int mb_violation, mb_stop;
static long mb_aborts;

static void *mb_thread(void *arg)
{
	(void)arg;
	static __thread struct rseq_area a;
	static struct rseq_cs d;
	if (sys_rseq(&a, 32, 0, RSEQ_SIG) != 0)
		return (void *)1L;
	d.start_ip = (uintptr_t)mb_start;
	d.post_commit_offset = (uintptr_t)mb_end - (uintptr_t)mb_start;
	d.abort_ip = (uintptr_t)mb_abort;
	while (!mb_stop && !mb_violation) {
		if (mb_spin(&a.rseq_cs, &d, &mb_done, &mb_epoch, &mb_violation, &mb_inside) == 0)
			mb_aborts++;
	}
	sys_rseq(&a, 32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG);
	return NULL;
}

static void test_membarrier(long ncpu)
{
	long mask = syscall(SYS_membarrier, MB_QUERY, 0, 0);
	int want = MB_PRIVATE_EXPEDITED_RSEQ | MB_REGISTER_PRIVATE_EXPEDITED_RSEQ;
	CHECK_EQ("membarrier.query_rseq", mask & want, want);
	CHECK_ERR("membarrier.rseq_unregistered", syscall(SYS_membarrier, MB_PRIVATE_EXPEDITED_RSEQ, 0, 0), EPERM);
	CHECK_ERR("membarrier.rseq_bad_flag_first", syscall(SYS_membarrier, MB_PRIVATE_EXPEDITED_RSEQ, 2, 0), EINVAL);
	CHECK_ERR("membarrier.register_cpu_flag", syscall(SYS_membarrier, MB_REGISTER_PRIVATE_EXPEDITED_RSEQ, MB_FLAG_CPU, 0), EINVAL);
	CHECK_SYS("membarrier.register_rseq", syscall(SYS_membarrier, MB_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0, 0));
	CHECK_SYS("membarrier.register_rseq_again", syscall(SYS_membarrier, MB_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0, 0));
	CHECK_SYS("membarrier.rseq_alone", syscall(SYS_membarrier, MB_PRIVATE_EXPEDITED_RSEQ, 0, 0));
	CHECK_SYS("membarrier.rseq_cpu0", syscall(SYS_membarrier, MB_PRIVATE_EXPEDITED_RSEQ, MB_FLAG_CPU, 0));
	CHECK_SYS("membarrier.rseq_no_such_cpu", syscall(SYS_membarrier, MB_PRIVATE_EXPEDITED_RSEQ, MB_FLAG_CPU, 4096));
	CHECK_SYS("membarrier.rseq_cpu_negative", syscall(SYS_membarrier, MB_PRIVATE_EXPEDITED_RSEQ, MB_FLAG_CPU, -1));
	CHECK_ERR("membarrier.rseq_unknown_flag", syscall(SYS_membarrier, MB_PRIVATE_EXPEDITED_RSEQ, MB_FLAG_CPU | 2, 0), EINVAL);

	/* Rounds: once the other thread is in a section that began in epoch
	 * k, the epoch moves on, the membarrier runs, and then done = k; a
	 * section from epoch k that still runs sees done >= k. */
	mb_done = 0;
	mb_epoch = 1;
	mb_inside = 0;
	mb_violation = 0;
	mb_stop = 0;
	mb_aborts = 0;
	pthread_t th;
	pthread_create(&th, NULL, mb_thread, NULL);
	int rounds = 0, stuck = 0;
	for (uint64_t k = 1; k <= 20 && !mb_violation; k++) {
		/* wait for a section of epoch k: one already running began
		 * earlier, so abort it */
		int seen = 0;
		for (int i = 0; i < 4000 && !seen && !mb_violation; i++) {
			if (mb_inside == k) {
				seen = 1;
				break;
			}
			syscall(SYS_membarrier, MB_PRIVATE_EXPEDITED_RSEQ, 0, 0);
			if (i > 100)
				usleep(1000);
		}
		if (!seen) {
			stuck = 1;
			break;
		}
		mb_epoch = k + 1;
		if (k % 2 && ncpu > 1)
			syscall(SYS_membarrier, MB_PRIVATE_EXPEDITED_RSEQ, MB_FLAG_CPU, -1);
		else
			syscall(SYS_membarrier, MB_PRIVATE_EXPEDITED_RSEQ, 0, 0);
		mb_done = k;
		rounds++;
	}
	int violation = mb_violation;
	/* the end: a section begun from now on reads epoch 0 and leaves at
	 * once, one begun before is aborted */
	mb_stop = 1;
	mb_epoch = 0;
	syscall(SYS_membarrier, MB_PRIVATE_EXPEDITED_RSEQ, 0, 0);
	void *r = NULL;
	pthread_join(th, &r);
	CHECK_EQ("membarrier.rseq_thread_registered", (long)r, 0);
	check_report("membarrier.rseq_restarts", !violation && !stuck && rounds == 20,
		     "%d rounds, violation %d, stuck %d, %ld aborts", rounds, violation, stuck, mb_aborts);
}

int main(void)
{
	check_start("t_rseq");
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	long r = sys_rseq(&area, 32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG);
	if (r == -1 && errno == ENOSYS) {
		check_report("rseq.present", 0, "rseq: ENOSYS");
		return check_done();
	}
	test_register();
	test_cpu_id(ncpu);
	test_preempt(ncpu);
	test_signal();
	test_membarrier(ncpu);
	int st = child_status();
	CHECK("badsig.sigsegv", WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);

	pid_t pid = fork();
	if (pid == 0)
		_exit(sys_rseq(&area, 32, 0, RSEQ_SIG) == -1 && errno == EBUSY && area.cpu_id < 4096 ? 0 : 1);
	waitpid(pid, &st, 0);
	CHECK("fork.keeps_registration", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	pthread_t th;
	void *ok = NULL;
	pthread_create(&th, NULL, thread_registers, NULL);
	pthread_join(th, &ok);
	CHECK("thread.starts_unregistered", ok == (void *)1L);
	return check_done();
}
