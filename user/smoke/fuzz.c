/* System call fuzzer: several processes issue random system calls with
 * random arguments (small numbers, flags, pointers to their own memory,
 * NULL, unmapped and kernel addresses, huge values) for a bounded time.
 * The kernel must survive and keep working; the fuzzer itself may crash,
 * and its children may die of signals. Calls that would reach outside the
 * fuzzer (kill, reboot, module and mount calls), never return (exit,
 * execve, fork bombs) or would disarm the alarm that bounds each child
 * (alarm, setitimer, sigaction, sigprocmask) are skipped.
 * usage: fuzz [processes [calls-per-process [seed]]] */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t rng;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static char scratch[65536];

static long arg(void)
{
	switch (next() % 10) {
	case 0: return 0;
	case 1: return (long)(next() % 64);
	case 2: return -(long)(next() % 4096);
	case 3: return (long)(scratch + next() % sizeof scratch);
	case 4: return (long)0x1001000;            /* the kernel image */
	case 5: return (long)0xffff800000000000ULL;  /* the kernel half */
	case 6: return (long)(next() << 12);        /* some page, likely unmapped */
	case 7: return (long)(1UL << (next() % 64));
	case 8: return (long)next();
	default: return (long)(scratch + sizeof scratch - next() % 64);
	}
}

static int skipped(long nr)
{
	switch (nr) {
	case SYS_exit: case SYS_exit_group: case SYS_execve: case SYS_execveat:
	case SYS_fork: case SYS_vfork: case SYS_clone: case SYS_clone3:
	case SYS_kill: case SYS_tkill: case SYS_tgkill: case SYS_rt_sigqueueinfo:
	case SYS_rt_tgsigqueueinfo: case SYS_reboot: case SYS_kexec_load:
	case SYS_kexec_file_load: case SYS_init_module: case SYS_finit_module:
	case SYS_delete_module: case SYS_mount: case SYS_umount2: case SYS_swapon:
	case SYS_swapoff: case SYS_pivot_root: case SYS_chroot: case SYS_ptrace:
	case SYS_process_vm_writev: case SYS_pidfd_send_signal: case SYS_rt_sigreturn:
	case SYS_setsid: case SYS_setpgid: case SYS_unshare: case SYS_setns:
	case SYS_acct: case SYS_quotactl: case SYS_sethostname: case SYS_setdomainname:
	case SYS_iopl: case SYS_ioperm: case SYS_syslog: case SYS_vhangup:
	case SYS_settimeofday: case SYS_clock_settime: case SYS_adjtimex:
	case SYS_clock_adjtime: case SYS_setrlimit: case SYS_prlimit64:
	case SYS_pause: case SYS_rt_sigsuspend:
	/* The SIGALRM that bounds each child must stay armed and deliverable. */
	case SYS_alarm: case SYS_setitimer: case SYS_timer_create: case SYS_rt_sigaction:
	case SYS_rt_sigprocmask:
		return 1;
	}
	return 0;
}

static void child(long calls, uint64_t seed)
{
	rng = seed | 1;
	alarm(3);
	/* Stay out of the console: no terminal output from random writes. */
	close(0);
	close(1);
	close(2);
	for (int s = 1; s < 32; s++)
		if (s != SIGKILL && s != SIGSTOP && s != SIGALRM)
			signal(s, SIG_IGN);
	for (long i = 0; i < calls; i++) {
		long nr = (long)(next() % 335);
		if (skipped(nr))
			continue;
		syscall(nr, arg(), arg(), arg(), arg(), arg(), arg());
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	int procs = argc > 1 ? atoi(argv[1]) : 4;
	long calls = argc > 2 ? atol(argv[2]) : 3000;
	uint64_t seed = argc > 3 ? strtoull(argv[3], 0, 0) : 0x5eed;
	int crashed = 0, finished = 0;
	for (int p = 0; p < procs; p++) {
		pid_t pid = fork();
		if (pid == 0)
			child(calls, seed + (uint64_t)p * 0x9e3779b97f4a7c15ULL);
		if (pid < 0) {
			perror("fork");
			return 2;
		}
	}
	for (int p = 0; p < procs; p++) {
		int st;
		if (wait(&st) < 0) {
			perror("wait");
			return 2;
		}
		if (WIFSIGNALED(st))
			crashed++;
		else
			finished++;
	}
	printf("fuzz: %d processes x %ld calls: %d finished, %d ended by signals\n", procs, calls, finished, crashed);
	return 0;
}
