/*
 * t_clone3: clone3(2). The size rules (EINVAL below 64 bytes, E2BIG past
 * a page or for nonzero bytes past the kernel's struct, a larger
 * struct with a zero tail accepted, EFAULT); a fork with exit_signal
 * SIGCHLD; exit_signal 0 and SIGUSR1 (the signal arrives with the
 * child's pid; such a "clone" child is invisible to waitpid without
 * __WCLONE/__WALL); CLONE_PIDFD, CLONE_PARENT_SETTID and
 * CLONE_CHILD_SETTID; a CLONE_VM child on its own stack (stack +
 * stack_size) with CLONE_SETTLS; a thread as pthread_create makes one
 * (CLONE_THREAD, CLONE_CHILD_CLEARTID and a futex wait);
 * CLONE_CLEAR_SIGHAND; set_tid (EINVAL for bad sizes and IDs, EPERM
 * without privilege, EEXIST for an ID in use, and the child gets a free
 * one); and the flag and argument combinations Linux refuses.
 */
#define _GNU_SOURCE
#define FUTEX_WAIT 0
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "check.h"

#define NR_clone3 435
#define CLONE_CLEAR_SIGHAND 0x100000000ULL
#define CLONE_INTO_CGROUP 0x200000000ULL
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x1000
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

struct clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size,
		cgroup;
};

static long clone3(void *args, size_t size)
{
	return syscall(NR_clone3, args, size);
}

/* clone3 whose child runs fn(arg) on the stack the arguments name and
 * exits with its result, never returning here (CLONE_VM children). */
static long clone3_run(struct clone_args *a, size_t size, long (*fn)(void *), void *arg)
{
	long ret;
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "mov %[arg], %%rdi\n\t"
			 "call *%[fn]\n\t"
			 "mov %%rax, %%rdi\n\t"
			 "mov $60, %%eax\n\t"
			 "syscall\n\t"
			 "hlt\n"
			 "1:"
			 : "=a"(ret)
			 : "a"((long)NR_clone3), "D"(a), "S"(size), [fn] "r"(fn), [arg] "r"(arg)
			 : "rcx", "r11", "memory");
	return ret;
}

/* The result of clone3 in errno style, and the child's exit status
 * (the child exits with code at once). */
static long try_clone(struct clone_args *a, size_t size)
{
	long r = clone3(a, size);
	if (r == 0)
		_exit(3);
	if (r > 0)
		waitpid(r, NULL, __WALL);
	return r;
}

static int status_of(pid_t pid, int options)
{
	int st = -1;
	if (waitpid(pid, &st, options) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
}

static volatile sig_atomic_t usr1_pid, usr1_count, chld_count;
static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)uc;
	usr1_pid = si->si_pid;
	usr1_count++;
}
static void on_chld(int sig)
{
	(void)sig;
	chld_count++;
}

static volatile long shared_word;
static char *stack_lo, *stack_hi;
static long on_own_stack(void *arg)
{
	char here;
	uint64_t fs0;
	__asm__ volatile("mov %%fs:0, %0" : "=r"(fs0));
	shared_word = 1;
	return (&here > stack_lo && &here < stack_hi ? 0 : 1) | (fs0 == (uint64_t)arg ? 0 : 2);
}

static long thread_fn(void *arg)
{
	*(volatile long *)arg = 77;
	return 0;
}

int main(void)
{
	check_start("t_clone3");
	struct clone_args a;
	struct sigaction sa = {.sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO};
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGCHLD, on_chld);

	/* Sizes. */
	memset(&a, 0, sizeof a);
	a.exit_signal = SIGCHLD;
	errno = 0;
	CHECK_ERR("size.zero", clone3(&a, 0), EINVAL);
	CHECK_ERR("size.63", clone3(&a, 63), EINVAL);
	char big[4200] = {0};
	memcpy(big, &a, sizeof a);
	CHECK_ERR("size.over_page", clone3(big, 4097), E2BIG);
	big[100] = 1;
	CHECK_ERR("size.nonzero_tail", clone3(big, 128), E2BIG);
	big[100] = 0;
	CHECK("size.zero_tail_ok", try_clone((struct clone_args *)big, 128) > 0);
	CHECK("size.ver0_ok", try_clone(&a, 64) > 0);
	CHECK_ERR("efault", clone3((void *)8, 88), EFAULT);

	/* A fork, with the IDs written back and a pidfd. */
	int pidfd = -1;
	pid_t ptid = 0, ctid = 0;
	memset(&a, 0, sizeof a);
	a.flags = CLONE_PIDFD | CLONE_PARENT_SETTID | CLONE_CHILD_SETTID;
	a.pidfd = (uintptr_t)&pidfd;
	a.parent_tid = (uintptr_t)&ptid;
	a.child_tid = (uintptr_t)&ctid;
	a.exit_signal = SIGCHLD;
	chld_count = 0;
	long pid = clone3(&a, sizeof a);
	if (pid == 0)
		_exit(ctid == getpid() ? 5 : 6);
	CHECK("fork.pid", pid > 0);
	CHECK_EQ("fork.parent_tid", ptid, pid);
	CHECK_EQ("fork.parent_child_tid_untouched", ctid, 0);
	CHECK("fork.pidfd", pidfd >= 0);
	struct pollfd pfd = {.fd = pidfd, .events = POLLIN};
	int pr;
	while ((pr = poll(&pfd, 1, 10000)) == -1 && errno == EINTR)
		; /* the SIGCHLD handler may run first */
	CHECK_EQ("fork.pidfd_polls", pr, 1);
	siginfo_t si = {0};
	CHECK_SYS("fork.waitid_pidfd", waitid(P_PIDFD, pidfd, &si, WEXITED));
	CHECK_EQ("fork.child_settid_and_status", si.si_status, 5);
	CHECK_EQ("fork.waitid_pid", si.si_pid, pid);
	CHECK_EQ("fork.sigchld", chld_count, 1);
	close(pidfd);

	/* exit_signal 0: no signal, and a "clone" child to waitpid. */
	memset(&a, 0, sizeof a);
	chld_count = 0;
	pid = clone3(&a, sizeof a);
	if (pid == 0)
		_exit(4);
	usleep(100000);
	CHECK_ERR("exit0.invisible_to_waitpid", waitpid(pid, NULL, WNOHANG), ECHILD);
	CHECK_EQ("exit0.wall_reaps", status_of(pid, __WALL), 4);
	CHECK_EQ("exit0.no_sigchld", chld_count, 0);

	/* exit_signal SIGUSR1: it arrives from the child; __WCLONE waits. */
	a.exit_signal = SIGUSR1;
	usr1_count = 0;
	pid = clone3(&a, sizeof a);
	if (pid == 0)
		_exit(8);
	CHECK_EQ("usr1.wclone_reaps", status_of(pid, __WCLONE), 8);
	for (int i = 0; i < 100 && !usr1_count; i++)
		usleep(10000);
	CHECK_EQ("usr1.signal", usr1_count, 1);
	CHECK_EQ("usr1.si_pid", usr1_pid, pid);

	/* A CLONE_VM child on its own stack, with its own TLS word. */
	size_t ssz = 64 << 10;
	char *stk = mmap(NULL, ssz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	stack_lo = stk, stack_hi = stk + ssz;
	static uint64_t tlsblock[8];
	tlsblock[0] = (uint64_t)tlsblock; /* %fs:0 points to itself, as the ABI has it */
	memset(&a, 0, sizeof a);
	a.flags = CLONE_VM | CLONE_SETTLS;
	a.exit_signal = SIGCHLD;
	a.stack = (uintptr_t)stk;
	a.stack_size = ssz;
	a.tls = (uintptr_t)tlsblock;
	shared_word = 0;
	pid = clone3_run(&a, sizeof a, on_own_stack, tlsblock);
	CHECK("vm.started", pid > 0);
	CHECK_EQ("vm.stack_and_tls", status_of(pid, 0), 0);
	CHECK_EQ("vm.shared_memory", shared_word, 1);

	/* A thread, as pthread_create makes it. */
	volatile long result = 0;
	volatile pid_t tid_word = 0;
	memset(&a, 0, sizeof a);
	a.flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
		  CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
	a.parent_tid = a.child_tid = (uintptr_t)&tid_word;
	a.stack = (uintptr_t)stk;
	a.stack_size = ssz;
	long tid = clone3_run(&a, sizeof a, thread_fn, (void *)&result);
	CHECK("thread.tid", tid > 0 && tid != getpid());
	for (pid_t v; (v = tid_word) != 0;)
		syscall(SYS_futex, &tid_word, FUTEX_WAIT, v, NULL, NULL, 0);
	CHECK_EQ("thread.ran", result, 77);
	CHECK_EQ("thread.cleartid", tid_word, 0);
	a.exit_signal = SIGCHLD;
	CHECK_ERR("thread.exit_signal_einval", clone3(&a, sizeof a), EINVAL);

	/* CLONE_CLEAR_SIGHAND: handlers reset, ignored stays ignored. */
	signal(SIGUSR2, SIG_IGN);
	memset(&a, 0, sizeof a);
	a.flags = CLONE_CLEAR_SIGHAND;
	a.exit_signal = SIGCHLD;
	pid = clone3(&a, sizeof a);
	if (pid == 0) {
		struct sigaction o1, o2;
		sigaction(SIGUSR1, NULL, &o1);
		sigaction(SIGUSR2, NULL, &o2);
		_exit((o1.sa_handler == SIG_DFL ? 0 : 1) | (o2.sa_handler == SIG_IGN ? 0 : 2));
	}
	CHECK_EQ("clear_sighand", status_of(pid, 0), 0);
	signal(SIGUSR2, SIG_DFL);

	/* Combinations Linux refuses. */
	struct {
		const char *name;
		uint64_t flags, exit_signal, stack, stack_size, cgroup;
		size_t size;
	} bad[] = {
		{"einval.csignal_in_flags", SIGCHLD, 0, 0, 0, 0, 88},
		{"einval.detached", CLONE_DETACHED, SIGCHLD, 0, 0, 0, 88},
		{"einval.sighand_and_clear", CLONE_VM | CLONE_SIGHAND | CLONE_CLEAR_SIGHAND, SIGCHLD, 0, 0, 0, 88},
		{"einval.exit_signal_65", 0, 65, 0, 0, 0, 88},
		{"einval.exit_signal_256", 0, 256, 0, 0, 0, 88},
		{"einval.parent_exit_signal", CLONE_PARENT, SIGCHLD, 0, 0, 0, 88},
		{"einval.stack_no_size", 0, SIGCHLD, 4096, 0, 0, 88},
		{"einval.size_no_stack", 0, SIGCHLD, 0, 4096, 0, 88},
		{"einval.unknown_flag", 1ULL << 40, SIGCHLD, 0, 0, 0, 88},
		{"einval.cgroup_range", CLONE_INTO_CGROUP, SIGCHLD, 0, 0, 1ULL << 31, 88},
		{"einval.cgroup_short_struct", CLONE_INTO_CGROUP, SIGCHLD, 0, 0, 0, 80},
		{"einval.pidfd_thread", CLONE_PIDFD | CLONE_VM | CLONE_SIGHAND | CLONE_THREAD, 0, 4096, 4096, 0, 88},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(&a, 0, sizeof a);
		a.flags = bad[i].flags;
		a.exit_signal = bad[i].exit_signal;
		a.stack = bad[i].stack;
		a.stack_size = bad[i].stack_size;
		a.cgroup = bad[i].cgroup;
		a.pidfd = (uintptr_t)&pidfd;
		errno = 0;
		long r = clone3(&a, bad[i].size);
		if (r == 0)
			_exit(0);
		if (r > 0)
			waitpid(r, NULL, __WALL);
		check_report(bad[i].name, r == -1 && errno == EINVAL, "returned %ld errno %d", r, errno);
	}

	/* set_tid. */
	pid_t want[2] = {0, 0};
	memset(&a, 0, sizeof a);
	a.exit_signal = SIGCHLD;
	a.set_tid_size = 1;
	CHECK_ERR("set_tid.size_without_array", clone3(&a, sizeof a), EINVAL);
	a.set_tid = (uintptr_t)want;
	a.set_tid_size = 0;
	CHECK_ERR("set_tid.array_without_size", clone3(&a, sizeof a), EINVAL);
	a.set_tid_size = 33;
	CHECK_ERR("set_tid.size_33", clone3(&a, sizeof a), EINVAL);
	a.set_tid_size = 1;
	CHECK_ERR("set_tid.zero", clone3(&a, sizeof a), EINVAL);
	want[0] = 4194304;
	CHECK_ERR("set_tid.past_pid_max", clone3(&a, sizeof a), EINVAL);
	want[0] = getpid();
	want[1] = getpid();
	a.set_tid_size = 2;
	CHECK_ERR("set_tid.two_levels", clone3(&a, sizeof a), EINVAL);
	a.set_tid_size = 1;
	CHECK_ERR("set_tid.in_use", clone3(&a, sizeof a), EEXIST);
	a.set_tid = 8;
	CHECK_ERR("set_tid.efault", clone3(&a, sizeof a), EFAULT);
	a.set_tid = (uintptr_t)want;
	long got = -1;
	for (want[0] = 20000; want[0] < 20100; want[0]++) {
		errno = 0;
		got = clone3(&a, sizeof a);
		if (got == 0)
			_exit(getpid() == want[0] ? 0 : 1);
		if (got > 0 || errno != EEXIST)
			break;
	}
	CHECK_EQ("set_tid.free_id", got, want[0]);
	if (got > 0)
		CHECK_EQ("set_tid.child_sees_it", status_of(got, 0), 0);
	/* Unprivileged: EPERM (a free ID, so only the privilege is missing). */
	pid = fork();
	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(2);
		want[0]++;
		long r = clone3(&a, sizeof a);
		if (r == 0)
			_exit(0);
		_exit(r == -1 && errno == EPERM ? 0 : 1);
	}
	CHECK_EQ("set_tid.eperm_unprivileged", status_of(pid, 0), 0);
	return check_done();
}
