/* t_futexrq: FUTEX_WAIT_REQUEUE_PI and FUTEX_CMP_REQUEUE_PI as raw calls
 * (what PI condition variables use): the errors in Linux 6.1's order
 * (EINVAL for the same word twice, for nr_wake other than 1, for negative
 * counts, for an unaligned word, for a plain waiter or another target, for
 * a mutex word that disagrees with its kernel waiters; EAGAIN for a
 * changed value; EFAULT; EDEADLK for a waiter owning the mutex; ENOSYS
 * for FUTEX_CLOCK_REALTIME on the requeue), FUTEX_WAKE and FUTEX_REQUEUE
 * refusing a requeue-PI waiter (EINVAL), a free mutex taken for the first
 * waiter (its TID in the word, FUTEX_WAITERS only when others follow),
 * an owned one queuing nr_requeue+1 waiters behind its owner and
 * FUTEX_UNLOCK_PI handing it on, timeouts on both clocks before and after
 * the requeue, a signal restarting the wait before the requeue and ending
 * it with EAGAIN after. */
#define _GNU_SOURCE
#include "check.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_REQUEUE 3
#define FUTEX_CMP_REQUEUE 4
#define FUTEX_LOCK_PI 6
#define FUTEX_UNLOCK_PI 7
#define FUTEX_WAIT_REQUEUE_PI 11
#define FUTEX_CMP_REQUEUE_PI 12
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_CLOCK_REALTIME 256
#define FUTEX_WAITERS 0x80000000u
#define NO_TID 0x3ffffff0u

static long futex(volatile void *uaddr, int op, long val, const void *timeout, volatile void *uaddr2, long val3)
{
	return syscall(SYS_futex, uaddr, op, val, timeout, uaddr2, val3);
}

static int gettid_(void) { return (int)syscall(SYS_gettid); }

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static struct timespec at_on(clockid_t c, double from_now)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	double t = ts.tv_sec + ts.tv_nsec / 1e9 + from_now;
	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - (time_t)t) * 1e9);
	return ts;
}

static long wrq(volatile uint32_t *cv, uint32_t val, const struct timespec *ts, volatile void *mx, int flags)
{
	return futex(cv, FUTEX_WAIT_REQUEUE_PI | flags, val, ts, mx, 0);
}

static long cmprq(volatile void *cv, long nwake, long nreq, volatile void *mx, uint32_t val, int flags)
{
	return futex(cv, FUTEX_CMP_REQUEUE_PI | flags, nwake, (void *)nreq, mx, val);
}

/* the state letter of thread tid in /proc (0 if unreadable) */
static char task_state(int tid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
	return check_stat_state(path);
}

/* waits up to 20 s for thread tid to sleep (in its only blocking call) */
static int wait_asleep(atomic_int *tid)
{
	for (int i = 0; i < 2000; i++) {
		if (*tid && task_state(*tid) == 'S')
			return 1;
		msleep(10);
	}
	return 0;
}

/* waits up to 20 s until a requeue-PI waiter is queued on cv: FUTEX_WAKE
 * then fails with EINVAL (and wakes nobody before that) */
static int wait_rq_queued(volatile uint32_t *cv)
{
	for (int i = 0; i < 2000; i++) {
		if (futex(cv, FUTEX_WAKE, 1, NULL, NULL, 0) == -1 && errno == EINVAL)
			return 1;
		msleep(10);
	}
	return 0;
}

static volatile uint32_t cv, cv2, mx, mx2, plain;
static void *page_none;

/* a requeue-PI waiter: waits on its cv for mx, records what it returned
 * and the mutex word it then saw, and unlocks when told to */
struct rqw {
	volatile uint32_t *cv, *mx;
	const struct timespec *ts;
	int flags, lock_first;
	atomic_int tid, ret, err, done, go;
	atomic_uint word;
};

static void *rq_waiter(void *arg)
{
	struct rqw *w = arg;
	w->tid = gettid_();
	if (w->lock_first)
		futex(w->mx, FUTEX_LOCK_PI, 0, NULL, NULL, 0);
	long r = wrq(w->cv, *w->cv, w->ts, w->mx, w->flags);
	w->err = r == -1 ? errno : 0;
	w->word = *w->mx;
	w->ret = (int)r;
	w->done = 1;
	if (r == 0 || w->lock_first) {
		while (!w->go)
			msleep(5);
		futex(w->mx, FUTEX_UNLOCK_PI, 0, NULL, NULL, 0);
	}
	return NULL;
}

static int wait_done(struct rqw *w)
{
	for (int i = 0; i < 2000 && !w->done; i++)
		msleep(10);
	return w->done;
}

static atomic_int handled;
static void on_usr1(int s)
{
	(void)s;
	handled++;
}

static void test_errors(void)
{
	struct timespec bad = { 0, 1000000000 };
	cv = 0;
	mx = 0;
	CHECK_ERR("wait.same_word_einval", wrq(&cv, 0, NULL, &cv, 0), EINVAL);
	CHECK_ERR("wait.same_word_before_eagain", wrq(&cv, 1, NULL, &cv, 0), EINVAL);
	CHECK_ERR("wait.value_changed_eagain", wrq(&cv, 1, NULL, &mx, 0), EAGAIN);
	CHECK_ERR("wait.unaligned_mutex_einval", wrq(&cv, 1, NULL, (char *)&mx + 1, 0), EINVAL);
	CHECK_ERR("wait.unaligned_cv_einval", wrq((volatile uint32_t *)((char *)&cv + 2), 0, NULL, &mx, 0), EINVAL);
	CHECK_ERR("wait.bad_timeout_first", wrq(&cv, 1, &bad, &cv, 0), EINVAL);
	CHECK_ERR("wait.unmapped_cv_efault", wrq(page_none, 0, NULL, &mx, FUTEX_PRIVATE_FLAG), EFAULT);
	CHECK_ERR("wait.shared_unmapped_mutex_efault", wrq(&cv, 1, NULL, page_none, 0), EFAULT);
	struct timespec past = { 0, 0 };
	CHECK_ERR("wait.private_unmapped_mutex_waits", wrq(&cv, 0, &past, page_none, FUTEX_PRIVATE_FLAG), ETIMEDOUT);
	struct timespec ts = at_on(CLOCK_MONOTONIC, 0.05);
	CHECK_ERR("wait.timeout_monotonic", wrq(&cv, 0, &ts, &mx, 0), ETIMEDOUT);
	ts = at_on(CLOCK_REALTIME, 0.05);
	CHECK_ERR("wait.timeout_realtime", wrq(&cv, 0, &ts, &mx, FUTEX_CLOCK_REALTIME | FUTEX_PRIVATE_FLAG), ETIMEDOUT);
	CHECK_EQ("wait.timeout_mutex_untouched", mx, 0);

	CHECK_ERR("requeue.same_word_einval", cmprq(&cv, 1, 1, &cv, 0, 0), EINVAL);
	CHECK_ERR("requeue.nr_wake0_einval", cmprq(&cv, 0, 1, &mx, 0, 0), EINVAL);
	CHECK_ERR("requeue.nr_wake2_einval", cmprq(&cv, 2, 1, &mx, 0, 0), EINVAL);
	CHECK_ERR("requeue.negative_requeue_einval", cmprq(&cv, 1, -1, &mx, 0, 0), EINVAL);
	CHECK_ERR("requeue.nr_wake_before_efault", cmprq(page_none, 0, 1, &mx, 0, 0), EINVAL);
	CHECK_ERR("requeue.value_changed_eagain", cmprq(&cv, 1, 1, &mx, 1, 0), EAGAIN);
	CHECK_EQ("requeue.nobody", cmprq(&cv, 1, 1, &mx, 0, 0), 0);
	CHECK_ERR("requeue.unaligned_mutex_einval", cmprq(&cv, 1, 1, (char *)&mx + 2, 1, 0), EINVAL);
	CHECK_ERR("requeue.shared_unmapped_cv_efault", cmprq(page_none, 1, 1, &mx, 0, 0), EFAULT);
	CHECK_ERR("requeue.private_unmapped_mutex_efault", cmprq(&cv, 1, 1, page_none, 0, FUTEX_PRIVATE_FLAG), EFAULT);
	CHECK_ERR("requeue.private_unmapped_mutex_after_value", cmprq(&cv, 1, 1, page_none, 1, FUTEX_PRIVATE_FLAG), EAGAIN);
	CHECK_ERR("requeue.clock_realtime_enosys", cmprq(&cv, 1, 1, &mx, 0, FUTEX_CLOCK_REALTIME), ENOSYS);
	CHECK_EQ("requeue.nobody_mutex_untouched", mx, 0);
}

/* a plain waiter parked on `plain` by a FUTEX_REQUEUE from a word of its own */
static volatile uint32_t park;
static void *plain_waiter(void *arg)
{
	(void)arg;
	return (void *)futex(&park, FUTEX_WAIT, 0, NULL, NULL, 0);
}

static void test_mixing(void)
{
	/* a plain waiter cannot be requeued to a PI futex */
	pthread_t th;
	park = 0;
	plain = 0;
	pthread_create(&th, NULL, plain_waiter, NULL);
	int moved = 0;
	for (int i = 0; i < 2000 && !moved; i++) {
		moved = futex(&park, FUTEX_REQUEUE, 0, (void *)1, &plain, 0) == 1;
		if (!moved)
			msleep(10);
	}
	CHECK("mix.plain_parked", moved);
	mx = 0;
	CHECK_ERR("mix.plain_waiter_einval", cmprq(&plain, 1, 1, &mx, 0, 0), EINVAL);
	CHECK_EQ("mix.plain_waiter_mutex_untouched", mx, 0);
	CHECK_EQ("mix.plain_waiter_still_there", futex(&plain, FUTEX_WAKE, 1, NULL, NULL, 0), 1);
	pthread_join(th, NULL);

	/* a requeue-PI waiter cannot be woken or requeued plainly, nor
	 * requeued to another PI futex than the one it named */
	static struct rqw w;
	memset((void *)&w, 0, sizeof w);
	cv = 5;
	mx = 0;
	w.cv = &cv;
	w.mx = &mx;
	pthread_create(&th, NULL, rq_waiter, &w);
	CHECK("mix.rq_queued", wait_rq_queued(&cv));
	CHECK_ERR("mix.wake_einval", futex(&cv, FUTEX_WAKE, 1, NULL, NULL, 0), EINVAL);
	CHECK_ERR("mix.requeue_einval", futex(&cv, FUTEX_REQUEUE, 0, (void *)1, &plain, 0), EINVAL);
	CHECK_ERR("mix.cmp_requeue_einval", futex(&cv, FUTEX_CMP_REQUEUE, 0, (void *)1, &plain, 5), EINVAL);
	CHECK_ERR("mix.other_target_einval", cmprq(&cv, 1, 1, &mx2, 5, 0), EINVAL);
	CHECK_EQ("mix.other_target_untouched", mx2, 0);
	CHECK_EQ("mix.not_done", w.done, 0);

	/* a signal restarts the wait (the value unchanged): no EINTR */
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigaction(SIGUSR1, &sa, NULL);
	handled = 0;
	syscall(SYS_tgkill, getpid(), w.tid, SIGUSR1);
	for (int i = 0; i < 2000 && !handled; i++)
		msleep(10);
	CHECK_EQ("signal.handled", handled, 1);
	CHECK("signal.requeued_wait_again", wait_rq_queued(&cv));
	CHECK_EQ("signal.not_done", w.done, 0);

	/* the free mutex goes to it: its TID, no FUTEX_WAITERS with no one
	 * to follow */
	CHECK_EQ("free.requeue_one", cmprq(&cv, 1, 0, &mx, 5, 0), 1);
	CHECK("free.done", wait_done(&w));
	CHECK_EQ("free.ret0", w.ret, 0);
	CHECK_EQ("free.word_is_tid", w.word, (unsigned)w.tid);
	w.go = 1;
	pthread_join(th, NULL);
	CHECK_EQ("free.unlocked", mx, 0);
}

static void test_contended(void)
{
	/* main owns mx; three waiters on cv, nr_requeue 1 moves two (the
	 * top one and one more), then the third */
	static struct rqw w[3];
	pthread_t th[3];
	mx = 0;
	cv = 7;
	CHECK_SYS("own.lock", futex(&mx, FUTEX_LOCK_PI, 0, NULL, NULL, 0));
	for (int i = 0; i < 3; i++) {
		memset((void *)&w[i], 0, sizeof w[i]);
		w[i].cv = &cv;
		w[i].mx = &mx;
		pthread_create(&th[i], NULL, rq_waiter, &w[i]);
		CHECK("own.asleep", wait_asleep(&w[i].tid));
	}
	CHECK_EQ("own.requeue_two", cmprq(&cv, 1, 1, &mx, 7, 0), 2);
	CHECK_EQ("own.word_waiters", mx, (unsigned)gettid_() | FUTEX_WAITERS);
	CHECK_ERR("own.one_left_on_cv", futex(&cv, FUTEX_WAKE, 1, NULL, NULL, 0), EINVAL);
	CHECK_EQ("own.requeue_third", cmprq(&cv, 1, 5, &mx, 7, 0), 1);
	CHECK_EQ("own.cv_empty", futex(&cv, FUTEX_WAKE, 1, NULL, NULL, 0), 0);
	CHECK_EQ("own.none_done", w[0].done + w[1].done + w[2].done, 0);

	/* a word that disagrees with the waiters the kernel has for it */
	uint32_t me = mx;
	mx = NO_TID | FUTEX_WAITERS;
	CHECK_ERR("own.lock_pi_corrupt_einval", futex(&mx, FUTEX_LOCK_PI, 0, NULL, NULL, 0), EINVAL);
	mx = 0;
	CHECK_ERR("own.lock_pi_zeroed_einval", futex(&mx, FUTEX_LOCK_PI, 0, NULL, NULL, 0), EINVAL);
	mx = me;

	/* the unlock hands it on in order, the word the new owner's TID and
	 * FUTEX_WAITERS */
	CHECK_SYS("own.unlock", futex(&mx, FUTEX_UNLOCK_PI, 0, NULL, NULL, 0));
	for (int i = 0; i < 3; i++) {
		char name[64];
		CHECK("own.done", wait_done(&w[i]));
		snprintf(name, sizeof name, "own.ret0_%d", i);
		CHECK_EQ(name, w[i].ret, 0);
		snprintf(name, sizeof name, "own.word_%d", i);
		CHECK_EQ(name, w[i].word, (unsigned)w[i].tid | FUTEX_WAITERS);
		if (i < 2) {
			snprintf(name, sizeof name, "own.next_not_done_%d", i);
			CHECK_EQ(name, w[i + 1].done, 0);
		}
		w[i].go = 1;
		pthread_join(th[i], NULL);
	}
	CHECK_EQ("own.all_unlocked", mx, 0);

	/* a free mutex with others to follow: the first takes it with
	 * FUTEX_WAITERS, the second waits behind it */
	cv = 9;
	for (int i = 0; i < 2; i++) {
		memset((void *)&w[i], 0, sizeof w[i]);
		w[i].cv = &cv;
		w[i].mx = &mx;
		pthread_create(&th[i], NULL, rq_waiter, &w[i]);
		CHECK("free2.asleep", wait_asleep(&w[i].tid));
	}
	CHECK_EQ("free2.requeue", cmprq(&cv, 1, INT_MAX, &mx, 9, 0), 2);
	CHECK("free2.first_done", wait_done(&w[0]));
	CHECK_EQ("free2.first_ret0", w[0].ret, 0);
	CHECK_EQ("free2.first_word", w[0].word, (unsigned)w[0].tid | FUTEX_WAITERS);
	CHECK_EQ("free2.second_waits", w[1].done, 0);
	w[0].go = 1;
	CHECK("free2.second_done", wait_done(&w[1]));
	CHECK_EQ("free2.second_ret0", w[1].ret, 0);
	CHECK_EQ("free2.second_word", w[1].word, (unsigned)w[1].tid | FUTEX_WAITERS);
	w[1].go = 1;
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	CHECK_EQ("free2.unlocked", mx, 0);
}

static void test_after_requeue(void)
{
	static struct rqw w;
	pthread_t th;
	struct timespec ts;

	/* a timeout while queued behind the owner */
	mx = 0;
	cv = 3;
	CHECK_SYS("late.lock", futex(&mx, FUTEX_LOCK_PI, 0, NULL, NULL, 0));
	memset((void *)&w, 0, sizeof w);
	w.cv = &cv;
	w.mx = &mx;
	ts = at_on(CLOCK_MONOTONIC, 2.0);
	w.ts = &ts;
	pthread_create(&th, NULL, rq_waiter, &w);
	CHECK("late.queued", wait_rq_queued(&cv));
	long r = cmprq(&cv, 1, 1, &mx, 3, 0);
	if (r == -1 && errno == EAGAIN)
		r = 1; /* cannot happen: cv is unchanged */
	CHECK("late.requeued_or_timed_out", r == 1 || w.done);
	CHECK("late.done", wait_done(&w));
	CHECK_EQ("late.timedout", w.err, ETIMEDOUT);
	pthread_join(th, NULL);

	/* a signal while queued behind the owner: EAGAIN, not a restart */
	cv = 4;
	memset((void *)&w, 0, sizeof w);
	w.cv = &cv;
	w.mx = &mx;
	pthread_create(&th, NULL, rq_waiter, &w);
	CHECK("late_sig.queued", wait_rq_queued(&cv));
	CHECK_EQ("late_sig.requeued", cmprq(&cv, 1, 1, &mx, 4, 0), 1);
	handled = 0;
	syscall(SYS_tgkill, getpid(), w.tid, SIGUSR1);
	CHECK("late_sig.done", wait_done(&w));
	CHECK_EQ("late_sig.handled", handled, 1);
	CHECK_EQ("late_sig.eagain", w.err, EAGAIN);
	pthread_join(th, NULL);
	CHECK_EQ("late_sig.still_mine", mx & 0x3fffffff, (unsigned)gettid_());
	CHECK_SYS("late_sig.unlock", futex(&mx, FUTEX_UNLOCK_PI, 0, NULL, NULL, 0));
	CHECK_EQ("late_sig.unlocked", mx, 0);

	/* the waiter owns the mutex: EDEADLK, and it stays on cv; then a
	 * changed value and a signal end its wait with EAGAIN (the restart
	 * sees the new value) */
	cv = 6;
	memset((void *)&w, 0, sizeof w);
	w.cv = &cv;
	w.mx = &mx;
	w.lock_first = 1;
	pthread_create(&th, NULL, rq_waiter, &w);
	CHECK("deadlk.queued", wait_rq_queued(&cv));
	CHECK_ERR("deadlk.edeadlk", cmprq(&cv, 1, 1, &mx, 6, 0), EDEADLK);
	CHECK_EQ("deadlk.word_unchanged", mx, (unsigned)w.tid);
	CHECK_ERR("deadlk.still_queued", futex(&cv, FUTEX_WAKE, 1, NULL, NULL, 0), EINVAL);
	cv = 60;
	syscall(SYS_tgkill, getpid(), w.tid, SIGUSR1);
	CHECK("deadlk.done", wait_done(&w));
	CHECK_EQ("deadlk.restart_eagain", w.err, EAGAIN);
	w.go = 1;
	pthread_join(th, NULL);
	CHECK_EQ("deadlk.unlocked", mx, 0);
}

int main(void)
{
	check_prog = "t_futexrq";
	page_none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	test_errors();
	test_mixing();
	test_contended();
	test_after_requeue();
	return check_done();
}
