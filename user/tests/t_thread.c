/* t_thread: threads: clone through pthread_create/join, futex through
 * mutexes and condition variables and directly, thread-local storage,
 * CLONE_CHILD_CLEARTID join with a raw clone, signals to one thread,
 * exit_group from a thread. */
#define _GNU_SOURCE
#include "check.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

/* Linux ABI constants (no kernel headers with musl-gcc) */
#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_WAIT_PRIVATE (FUTEX_WAIT | FUTEX_PRIVATE_FLAG)
#define FUTEX_WAKE_PRIVATE (FUTEX_WAKE | FUTEX_PRIVATE_FLAG)
#define ARCH_GET_FS 0x1003

static long futex(atomic_int *uaddr, int op, int val, const struct timespec *ts)
{
	return syscall(SYS_futex, uaddr, op, val, ts, NULL, 0);
}

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* --- counters under a mutex ------------------------------------------- */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static atomic_long racy_atomic;

static void *add_many(void *arg)
{
	long n = (long)arg;
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&mu);
		counter++;
		pthread_mutex_unlock(&mu);
		atomic_fetch_add(&racy_atomic, 1);
	}
	return (void *)(n * 2);
}

static void test_create_join(void)
{
	enum { N = 4, ITER = 20000 };
	pthread_t th[N];
	int ok = 1;
	for (int i = 0; i < N; i++)
		ok &= pthread_create(&th[i], NULL, add_many, (void *)(long)ITER) == 0;
	CHECK("pthread_create", ok);
	long sum = 0;
	for (int i = 0; i < N; i++) {
		void *ret;
		ok &= pthread_join(th[i], &ret) == 0;
		sum += (long)ret;
	}
	CHECK("pthread_join", ok);
	CHECK_EQ("pthread_join.values", sum, 2L * N * ITER);
	CHECK_EQ("mutex.counter_exact", counter, (long)N * ITER);
	CHECK_EQ("atomic.counter_exact", atomic_load(&racy_atomic), (long)N * ITER);

	/* many threads alive at once */
	enum { M = 32 };
	pthread_t many[M];
	counter = 0;
	ok = 1;
	for (int i = 0; i < M; i++)
		ok &= pthread_create(&many[i], NULL, add_many, (void *)100L) == 0;
	for (int i = 0; i < M; i++)
		ok &= pthread_join(many[i], NULL) == 0;
	CHECK("pthread.32_threads", ok);
	CHECK_EQ("mutex.counter_32", counter, 100L * M);
}

/* --- ids, TLS --------------------------------------------------------- */
static __thread int tls_value = 5;
static __thread char tls_buf[64];
static pthread_barrier_t bar;

struct idinfo {
	pid_t pid, tid;
	int tls_initial, tls_after;
	int buf_ok;
	unsigned long fsbase;
	void *self;
};

static void *report_ids(void *arg)
{
	struct idinfo *info = arg;
	info->pid = getpid();
	info->tid = syscall(SYS_gettid);
	info->tls_initial = tls_value;
	tls_value = (int)info->tid;
	snprintf(tls_buf, sizeof tls_buf, "thread-%d", (int)info->tid);
	pthread_barrier_wait(&bar); /* every thread has written its TLS */
	pthread_barrier_wait(&bar);
	info->tls_after = tls_value;
	char want[64];
	snprintf(want, sizeof want, "thread-%d", (int)info->tid);
	info->buf_ok = strcmp(tls_buf, want) == 0;
	syscall(SYS_arch_prctl, ARCH_GET_FS, &info->fsbase);
	info->self = (void *)pthread_self();
	return NULL;
}

static void test_ids_tls(void)
{
	enum { N = 3 };
	pthread_t th[N];
	struct idinfo info[N];
	memset(info, 0, sizeof info);
	pthread_barrier_init(&bar, NULL, N + 1);
	tls_value = 99;
	for (int i = 0; i < N; i++)
		pthread_create(&th[i], NULL, report_ids, &info[i]);
	pthread_barrier_wait(&bar);
	pthread_barrier_wait(&bar);
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&bar);
	int same_pid = 1, distinct = 1, tls_init = 1, tls_kept = 1, buf = 1, fs = 1;
	for (int i = 0; i < N; i++) {
		same_pid &= info[i].pid == getpid();
		distinct &= info[i].tid != getpid() && info[i].tid > 0;
		for (int j = 0; j < i; j++)
			distinct &= info[i].tid != info[j].tid;
		tls_init &= info[i].tls_initial == 5;
		tls_kept &= info[i].tls_after == info[i].tid;
		buf &= info[i].buf_ok;
		fs &= info[i].fsbase == (unsigned long)info[i].self;
	}
	CHECK("thread.same_pid", same_pid);
	CHECK("thread.distinct_tids", distinct);
	CHECK("tls.initial_value", tls_init);
	CHECK("tls.private_value", tls_kept);
	CHECK("tls.private_buffer", buf);
	CHECK_EQ("tls.main_unchanged", tls_value, 99);
	CHECK("tls.fs_base_is_thread_pointer", fs);
	unsigned long mainfs = 0;
	CHECK_SYS("arch_prctl.get_fs", syscall(SYS_arch_prctl, ARCH_GET_FS, &mainfs));
	CHECK("arch_prctl.main_fs", mainfs == (unsigned long)pthread_self());
}

/* --- condition variable ping-pong -------------------------------------- */
static pthread_mutex_t cmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int turn, rounds_done;

static void *pong(void *arg)
{
	(void)arg;
	for (int i = 0; i < 500; i++) {
		pthread_mutex_lock(&cmu);
		while (turn != 1)
			pthread_cond_wait(&cv, &cmu);
		turn = 0;
		rounds_done++;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&cmu);
	}
	return NULL;
}

static void test_condvar(void)
{
	pthread_t t;
	pthread_create(&t, NULL, pong, NULL);
	for (int i = 0; i < 500; i++) {
		pthread_mutex_lock(&cmu);
		turn = 1;
		pthread_cond_signal(&cv);
		while (turn != 0)
			pthread_cond_wait(&cv, &cmu);
		pthread_mutex_unlock(&cmu);
	}
	pthread_join(t, NULL);
	CHECK_EQ("condvar.pingpong", rounds_done, 500);

	/* timed wait times out */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 50 * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&cmu);
	int r = pthread_cond_timedwait(&cv, &cmu, &ts);
	pthread_mutex_unlock(&cmu);
	CHECK_EQ("condvar.timedwait_timeout", r, ETIMEDOUT);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	CHECK("condvar.timedwait_waited", now.tv_sec > ts.tv_sec || (now.tv_sec == ts.tv_sec && now.tv_nsec >= ts.tv_nsec));
}

/* --- raw futex -------------------------------------------------------- */
static atomic_int fword;
static atomic_int woken;

static void *futex_waiter(void *arg)
{
	(void)arg;
	while (atomic_load(&fword) == 0) {
		futex(&fword, FUTEX_WAIT_PRIVATE, 0, NULL);
	}
	atomic_fetch_add(&woken, 1);
	return NULL;
}

static void test_futex(void)
{
	atomic_int w = 1;
	CHECK_ERR("futex.wait_wrong_value", futex(&w, FUTEX_WAIT_PRIVATE, 2, NULL), EAGAIN);
	struct timespec ts = { 0, 30 * 1000000 };
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	CHECK_ERR("futex.wait_timeout", futex(&w, FUTEX_WAIT_PRIVATE, 1, &ts), ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	CHECK("futex.wait_timeout_waited", ms >= 29);
	CHECK_EQ("futex.wake_nobody", futex(&w, FUTEX_WAKE_PRIVATE, 1, NULL), 0);
	CHECK_ERR("futex.bad_op", futex(&w, 0x7f, 0, NULL), ENOSYS);
	CHECK_ERR("futex.unaligned", futex((atomic_int *)((char *)&w + 1), FUTEX_WAIT_PRIVATE, 0, NULL), EINVAL);

	enum { N = 3 };
	pthread_t th[N];
	atomic_store(&fword, 0);
	for (int i = 0; i < N; i++)
		pthread_create(&th[i], NULL, futex_waiter, NULL);
	msleep(100); /* let them block (correct either way) */
	atomic_store(&fword, 1);
	long total = 0;
	for (int i = 0; i < 200 && atomic_load(&woken) < N; i++) {
		total += futex(&fword, FUTEX_WAKE_PRIVATE, N, NULL);
		msleep(5);
	}
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ("futex.all_woken", atomic_load(&woken), N);
	CHECK("futex.wake_count", total >= 0 && total <= N);

	/* a shared futex between processes over MAP_SHARED memory */
	atomic_int *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	*sh = 0;
	pid_t pid = fork();
	if (pid == 0) {
		while (atomic_load(sh) == 0)
			futex(sh, FUTEX_WAIT, 0, NULL);
		_exit(atomic_load(sh) == 7 ? 0 : 1);
	}
	msleep(50);
	atomic_store(sh, 7);
	int st;
	for (;;) {
		futex(sh, FUTEX_WAKE, 1, NULL);
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			break;
		msleep(5);
	}
	CHECK("futex.shared_across_fork", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	munmap(sh, 4096);
}

/* --- raw clone with CLONE_CHILD_CLEARTID ------------------------------- */
static atomic_int ctid;
static atomic_int ptid;
static volatile int clone_ran;

static int clone_fn(void *arg)
{
	/* no libc here: this thread has no TLS of its own */
	clone_ran = (int)(long)arg;
	syscall(SYS_exit, 0);
	return 0;
}

static void test_raw_clone(void)
{
	size_t sz = 64 * 1024;
	char *stack = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	atomic_store(&ctid, -1);
	int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
		    CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
	int tid = clone(clone_fn, stack + sz, flags, (void *)123L, &ptid, NULL, &ctid);
	CHECK("clone.thread", tid > 0 && tid != getpid());
	/* wait for the kernel to clear ctid and wake us, as pthread_join does */
	int spins = 0;
	for (;;) {
		int v = atomic_load(&ctid);
		if (v == 0)
			break;
		struct timespec ts = { 1, 0 };
		futex(&ctid, FUTEX_WAIT, v, &ts);
		if (++spins > 30)
			break;
	}
	CHECK_EQ("clone.child_cleartid", atomic_load(&ctid), 0);
	CHECK_EQ("clone.parent_settid", atomic_load(&ptid), tid);
	CHECK_EQ("clone.child_ran", clone_ran, 123);
	munmap(stack, sz);
}

/* --- signals and threads ---------------------------------------------- */
static volatile pid_t handler_tid;
static void on_usr1(int sig)
{
	(void)sig;
	handler_tid = syscall(SYS_gettid);
}

static atomic_int target_tid;
static atomic_int stop_target;

static void *sig_target(void *arg)
{
	(void)arg;
	atomic_store(&target_tid, (int)syscall(SYS_gettid));
	while (!atomic_load(&stop_target))
		msleep(2);
	return NULL;
}

static void test_thread_signals(void)
{
	signal(SIGUSR1, on_usr1);
	pthread_t t;
	pthread_create(&t, NULL, sig_target, NULL);
	while (atomic_load(&target_tid) == 0)
		msleep(1);
	handler_tid = 0;
	CHECK_SYS("tgkill.thread", syscall(SYS_tgkill, getpid(), atomic_load(&target_tid), SIGUSR1));
	for (int i = 0; i < 2000 && handler_tid == 0; i++)
		msleep(1);
	CHECK_EQ("tgkill.handled_on_target", handler_tid, atomic_load(&target_tid));
	handler_tid = 0;
	CHECK_EQ("pthread_kill", pthread_kill(t, SIGUSR1), 0);
	for (int i = 0; i < 2000 && handler_tid == 0; i++)
		msleep(1);
	CHECK_EQ("pthread_kill.handled_on_target", handler_tid, atomic_load(&target_tid));
	/* a process signal blocked in main is delivered to the other thread */
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &m, NULL);
	handler_tid = 0;
	kill(getpid(), SIGUSR1);
	for (int i = 0; i < 2000 && handler_tid == 0; i++)
		msleep(1);
	CHECK_EQ("kill.delivered_to_unblocked_thread", handler_tid, atomic_load(&target_tid));
	pthread_sigmask(SIG_UNBLOCK, &m, NULL);
	CHECK_ERR("tgkill.wrong_tgid", syscall(SYS_tgkill, getpid() + 100000, atomic_load(&target_tid), 0), ESRCH);
	atomic_store(&stop_target, 1);
	pthread_join(t, NULL);
	/* pthread_join returns once the kernel cleared the tid word, which
	 * happens a little before the thread is gone: poll */
	long r = 0;
	for (int i = 0; i < 2000; i++) {
		r = syscall(SYS_tgkill, getpid(), atomic_load(&target_tid), 0);
		if (r == -1)
			break;
		msleep(1);
	}
	CHECK("tgkill.exited_thread", r == -1 && errno == ESRCH);
}

/* --- exit_group, detach, pthread_exit ---------------------------------- */
static void *exiter(void *arg)
{
	msleep(50);
	exit((int)(long)arg);
}

static void *pexit(void *arg)
{
	pthread_exit((void *)((long)arg + 1));
	return NULL;
}

static atomic_int detached_ran;
static void *detached(void *arg)
{
	(void)arg;
	atomic_store(&detached_ran, 1);
	return NULL;
}

static void *shared_fd_opener(void *arg)
{
	int *fd = arg;
	*fd = open("/dev/null", O_WRONLY);
	return NULL;
}

static void test_exit_paths(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		pthread_t t;
		pthread_create(&t, NULL, exiter, (void *)9L);
		for (;;)
			pause();
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK("exit_group.from_thread", WIFEXITED(st) && WEXITSTATUS(st) == 9);

	/* the main thread leaving with pthread_exit keeps the process alive
	 * until the last thread exits */
	pid = fork();
	if (pid == 0) {
		pthread_t t;
		pthread_create(&t, NULL, exiter, (void *)11L);
		pthread_exit(NULL);
	}
	waitpid(pid, &st, 0);
	CHECK("pthread_exit.main_then_thread_exits", WIFEXITED(st) && WEXITSTATUS(st) == 11);

	pthread_t t;
	void *ret = NULL;
	pthread_create(&t, NULL, pexit, (void *)41L);
	pthread_join(t, &ret);
	CHECK_EQ("pthread_exit.value", (long)ret, 42);

	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	CHECK_EQ("pthread.detached", pthread_create(&t, &attr, detached, NULL), 0);
	for (int i = 0; i < 2000 && !atomic_load(&detached_ran); i++)
		msleep(1);
	CHECK("pthread.detached_ran", atomic_load(&detached_ran));
	pthread_attr_destroy(&attr);

	/* small explicit stack */
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	CHECK_EQ("pthread.small_stack", pthread_create(&t, &attr, pexit, (void *)1L), 0);
	pthread_join(t, &ret);
	CHECK_EQ("pthread.small_stack_ret", (long)ret, 2);
	pthread_attr_destroy(&attr);

	/* threads share the descriptor table */
	int fd = -1;
	pthread_create(&t, NULL, shared_fd_opener, &fd);
	pthread_join(t, NULL);
	CHECK("thread.shared_fd_table", fd >= 0 && write(fd, "x", 1) == 1);
	close(fd);

	CHECK_SYS("sched_yield", sched_yield());
	cpu_set_t set;
	CPU_ZERO(&set);
	CHECK_SYS("sched_getaffinity", sched_getaffinity(0, sizeof set, &set));
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	CHECK("sched_getaffinity.count", CPU_COUNT(&set) >= 1 && CPU_COUNT(&set) <= online);
	printf("# cpus: %d in affinity mask, %ld online\n", CPU_COUNT(&set), online);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	test_create_join();
	test_ids_tls();
	test_condvar();
	test_futex();
	test_raw_clone();
	test_thread_signals();
	test_exit_paths();
	return check_done();
}
