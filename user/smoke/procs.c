/* Processes, signals and threads: fork with copy-on-write, vfork, exec,
 * wait statuses, signal handlers, masks, fault recovery and pthreads.
 * Exit status: the number of failed checks. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int failed;

#define CHECK(cond, ...) do { \
	if (cond) { printf("ok %s\n", #cond); } \
	else { printf("not ok %s: ", #cond); printf(__VA_ARGS__); printf("\n"); failed++; } \
} while (0)

static volatile int shared = 1;
static volatile sig_atomic_t usr1, usr1_signo, chld;
static sigjmp_buf segv_jmp;
static volatile int *volatile bad_ptr = (int *)8;

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	usr1++;
	usr1_signo = si->si_signo;
	(void)sig;
}

static void on_chld(int sig) { (void)sig; chld++; }

static void on_segv(int sig) { (void)sig; siglongjmp(segv_jmp, 1); }

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void *worker(void *arg)
{
	for (int i = 0; i < 10000; i++) {
		pthread_mutex_lock(&mu);
		counter++;
		pthread_mutex_unlock(&mu);
	}
	return arg;
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	int st;

	/* fork: the child's writes stay in the child. */
	pid_t pid = fork();
	if (pid == 0) {
		shared = 42;
		_exit(shared == 42 ? 7 : 1);
	}
	CHECK(pid > 0, "fork returned %d", pid);
	CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7, "status %#x", st);
	CHECK(shared == 1, "parent sees %d after the child wrote", shared);
	CHECK(waitpid(-1, &st, WNOHANG) == -1 && errno == ECHILD, "no more children: errno %d", errno);

	/* vfork + exec. */
	pid = vfork();
	if (pid == 0) {
		char *argv[] = {"hello", NULL}, *envp[] = {"FROM=vfork", NULL};
		execve("/bin/hello", argv, envp);
		_exit(127);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0, "exec'd child status %#x", st);

	/* A failed exec returns ENOEXEC in the child. */
	pid = fork();
	if (pid == 0) {
		char *argv[] = {"broken", NULL};
		execve("/bin/broken", argv, NULL);
		_exit(errno == ENOEXEC ? 3 : 4);
	}
	CHECK(waitpid(pid, &st, 0) == pid && WEXITSTATUS(st) == 3, "exec of a broken ELF: %#x", st);

	/* Handlers with siginfo. */
	struct sigaction sa = {0};
	sa.sa_sigaction = on_usr1;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	CHECK(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction");
	raise(SIGUSR1);
	CHECK(usr1 == 1 && usr1_signo == SIGUSR1, "handler ran %d times, signo %d", usr1, usr1_signo);
	kill(getpid(), SIGUSR1);
	CHECK(usr1 == 2, "kill(getpid()) ran the handler: %d", usr1);

	/* Blocked signals stay pending until unblocked. */
	sigset_t set, pend;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	raise(SIGUSR1);
	CHECK(usr1 == 2, "blocked signal delivered");
	sigpending(&pend);
	CHECK(sigismember(&pend, SIGUSR1), "not pending");
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	CHECK(usr1 == 3, "unblocked signal not delivered: %d", usr1);

	/* A fault with a handler: recover with siglongjmp. */
	signal(SIGSEGV, on_segv);
	volatile int recovered = 0;
	if (sigsetjmp(segv_jmp, 1) == 0) {
		*bad_ptr = 1;
	} else {
		recovered = 1;
	}
	CHECK(recovered, "SIGSEGV handler did not run");

	/* SIGCHLD and death by signal. */
	signal(SIGCHLD, on_chld);
	pid = fork();
	if (pid == 0) {
		for (;;)
			pause();
	}
	kill(pid, SIGTERM);
	CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %#x", st);
	CHECK(chld >= 1, "no SIGCHLD");

	/* Threads. */
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		CHECK(pthread_create(&th[i], NULL, worker, (void *)(long)i) == 0, "pthread_create");
	for (int i = 0; i < 4; i++) {
		void *ret;
		pthread_join(th[i], &ret);
		CHECK(ret == (void *)(long)i, "join value");
	}
	CHECK(counter == 40000, "counter %ld", counter);

	printf("%d failed\n", failed);
	return failed;
}
