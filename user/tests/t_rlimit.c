/* Resource limits that change what a program may do: RLIMIT_DATA (private
 * writable mappings and the break), RLIMIT_STACK (the stack a new program
 * gets) and RLIMIT_CPU (SIGXCPU at the soft limit and each second after,
 * SIGKILL at the hard one), RLIMIT_AS as the stack grows. Each case runs
 * in a child, which the limit may kill. */
#define _GNU_SOURCE
#include "check.h"
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

static const char *dir;

/* runs f in a child and returns its wait status */
static int in_child(int (*f)(void))
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0)
		_exit(f());
	int st = -1;
	waitpid(pid, &st, 0);
	return st;
}

#define MiB (1UL << 20)

static int data_limit(void)
{
	struct rlimit r = {16 * MiB, RLIM_INFINITY};
	if (setrlimit(RLIMIT_DATA, &r))
		return 1;
	void *p = mmap(NULL, 64 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p != MAP_FAILED || errno != ENOMEM)
		return 2; /* private writable: data */
	p = mmap(NULL, 64 * MiB, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 3; /* read-only: not data */
	if (mprotect(p, 64 * MiB, PROT_READ | PROT_WRITE) == 0 || errno != ENOMEM)
		return 10; /* made writable, it would be data */
	if (mprotect(p, 1 * MiB, PROT_READ | PROT_WRITE))
		return 11; /* a part that fits */
	munmap(p, 64 * MiB);
	p = mmap(NULL, 64 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 4; /* shared: not data */
	munmap(p, 64 * MiB);
	p = mmap(NULL, 1 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 5; /* within the limit */
	munmap(p, 1 * MiB);
	if (sbrk(32 * MiB) != (void *)-1 || errno != ENOMEM)
		return 6; /* the break is data */
	if (malloc(64 * MiB) != NULL)
		return 7;
	r.rlim_cur = RLIM_INFINITY;
	if (setrlimit(RLIMIT_DATA, &r))
		return 8;
	p = mmap(NULL, 64 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 9; /* the limit lifted */
	return 0;
}

static int run_stack(rlim_t limit, const char *kib)
{
	struct rlimit r = {limit, RLIM_INFINITY};
	if (setrlimit(RLIMIT_STACK, &r))
		return 1;
	char path[256];
	snprintf(path, sizeof path, "%s/h_stack", dir);
	execl(path, "h_stack", kib, (char *)NULL);
	return 2;
}

static int stack_small(void) { return run_stack(1 * MiB, "4096"); }
static int stack_large(void) { return run_stack(64 * MiB, "16384"); }
static int stack_default(void) { return run_stack(8 * MiB, "4096"); }

/* RLIMIT_AS and the stack: the stack counts toward RLIMIT_AS as far as it
 * has grown, as on Linux, so VmStk starts small, grows with use, and a
 * stack that would grow past RLIMIT_AS is SIGSEGV (with no core bit: no
 * core is dumped with RLIMIT_CORE at 0). */
static long status_kib(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	size_t n = strlen(key);
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, key, n) == 0 && line[n] == ':')
			v = atol(line + n + 1);
	if (f)
		fclose(f);
	return v;
}

static int deep(int kib)
{
	volatile char buf[1024];
	buf[0] = (char)kib;
	return kib > 0 ? deep(kib - 1) + buf[0] : 0;
}

/* RLIMIT_AS at the child's own size plus headroom */
static int as_grow(long headroom, int kib)
{
	long base = status_kib("VmSize") * 1024;
	struct rlimit core = {0, RLIM_INFINITY}, as = {base + headroom, base + headroom};
	if (setrlimit(RLIMIT_CORE, &core) || setrlimit(RLIMIT_AS, &as))
		return 90;
	deep(kib);
	return 0;
}
static int as_stack_within(void) { return as_grow(4 * MiB, 1024); }
static int as_stack_past(void) { return as_grow(2 * MiB, 4096); }
static int as_mmap_fits(void)
{
	long base = status_kib("VmSize") * 1024;
	struct rlimit as = {base + 4 * MiB, base + 4 * MiB};
	if (setrlimit(RLIMIT_AS, &as))
		return 90;
	void *p = mmap(NULL, 3 * MiB, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? 1 : 0;
}

static int xcpu_pipe[2];

static void on_xcpu(int s)
{
	(void)s;
	struct rlimit r;
	getrlimit(RLIMIT_CPU, &r);
	long cur = (long)r.rlim_cur;
	write(xcpu_pipe[1], &cur, sizeof cur);
}

static void spin(void)
{
	for (volatile unsigned long i = 0;; i++)
		;
}

static int cpu_soft_then_hard(void)
{
	signal(SIGXCPU, on_xcpu);
	struct rlimit r = {1, 2};
	if (setrlimit(RLIMIT_CPU, &r))
		return 1;
	spin();
	return 2;
}

static int cpu_soft_default_action(void)
{
	struct rlimit r = {1, RLIM_INFINITY};
	if (setrlimit(RLIMIT_CPU, &r))
		return 1;
	spin();
	return 2;
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	dir = check_testdir(argv[0]);

	int st = in_child(data_limit);
	CHECK("data.exited", WIFEXITED(st));
	CHECK_EQ("data.limits", WEXITSTATUS(st), 0);

	st = in_child(stack_default);
	CHECK("stack.default_8m_holds_4m", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	st = in_child(stack_small);
	CHECK("stack.1m_overflows_by_segv", WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
	st = in_child(stack_large);
	CHECK("stack.64m_holds_16m", WIFEXITED(st) && WEXITSTATUS(st) == 0);

	long stk = status_kib("VmStk");
	CHECK("stack.vmstk_starts_small", stk > 0 && stk < 1024);
	CHECK("stack.vmsize_known", status_kib("VmSize") > 0);
	st = in_child(as_stack_within);
	CHECK_EQ("stack.as_within", st, 0);
	st = in_child(as_stack_past);
	CHECK("stack.as_past_segv", WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
	CHECK("stack.as_past_no_core_bit", !WCOREDUMP(st));
	st = in_child(as_mmap_fits);
	CHECK_EQ("stack.as_mmap_within", st, 0);
	deep(2048);
	CHECK("stack.vmstk_grows", status_kib("VmStk") >= 2048);

	pipe(xcpu_pipe);
	st = in_child(cpu_soft_then_hard);
	CHECK("cpu.hard_sigkill", WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	close(xcpu_pipe[1]);
	long cur = 0, n = 0, last = 0;
	while (read(xcpu_pipe[0], &cur, sizeof cur) == sizeof cur) {
		n++;
		last = cur;
	}
	CHECK_EQ("cpu.one_sigxcpu_before_kill", n, 1);
	CHECK_EQ("cpu.soft_moved_on", last, 2);
	close(xcpu_pipe[0]);
	st = in_child(cpu_soft_default_action);
	CHECK("cpu.soft_default_sigxcpu", WIFSIGNALED(st) && WTERMSIG(st) == SIGXCPU);
	return check_done();
}
