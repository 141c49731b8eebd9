/* t_futexpi: the rest of the futex family. FUTEX_WAKE_OP (each operation
 * and comparison, the shifted argument, the word updated before an
 * unknown comparison fails, the order of EINVAL, EFAULT and ENOSYS, which
 * queues it wakes, a count of 0 waking one); the priority-inheritance
 * operations as raw calls (LOCK_PI, LOCK_PI2, TRYLOCK_PI, UNLOCK_PI: the
 * word's TID and FUTEX_WAITERS/FUTEX_OWNER_DIED bits, EDEADLK, EPERM,
 * ESRCH, EAGAIN, EINVAL, EFAULT, ENOSYS, timeouts on CLOCK_REALTIME and
 * CLOCK_MONOTONIC, the handoff to a waiter, no EINTR); musl's
 * PTHREAD_PRIO_INHERIT mutexes (contention, EDEADLK, timedlock), and
 * robust ones whose owner dies: a thread, and a process sharing the
 * mutex (killed, or exiting with a waiter blocked), the next locker
 * getting EOWNERDEAD; get_robust_list. */
#define _GNU_SOURCE
#include "check.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

/* linux/futex.h (musl's headers do not have it) */
#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_REQUEUE 3
#define FUTEX_WAKE_OP 5
#define FUTEX_LOCK_PI 6
#define FUTEX_UNLOCK_PI 7
#define FUTEX_TRYLOCK_PI 8
#define FUTEX_LOCK_PI2 13
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_CLOCK_REALTIME 256
#define FUTEX_WAITERS 0x80000000u
#define FUTEX_OWNER_DIED 0x40000000u
#define FUTEX_TID_MASK_ 0x3fffffffu
#define FUTEX_OP(op, oparg, cmp, cmparg) \
	((((op) & 0xf) << 28) | (((cmp) & 0xf) << 24) | (((oparg) & 0xfff) << 12) | ((cmparg) & 0xfff))
#define OP_SET 0
#define OP_ADD 1
#define OP_OR 2
#define OP_ANDN 3
#define OP_XOR 4
#define OP_SHIFT 8
#define CMP_EQ 0
#define CMP_NE 1
#define CMP_LT 2
#define CMP_LE 3
#define CMP_GT 4
#define CMP_GE 5

/* a TID no thread can have: above PID_MAX_LIMIT */
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

static double now_on(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static struct timespec at_on(clockid_t c, double from_now)
{
	double t = now_on(c) + from_now;
	struct timespec ts = { (time_t)t, (long)((t - (time_t)t) * 1e9) };
	return ts;
}

/* waits up to 20 s for *w & bits; reports whether they came */
static int wait_bits(volatile uint32_t *w, uint32_t bits)
{
	for (int i = 0; i < 2000; i++) {
		if (*w & bits)
			return 1;
		msleep(10);
	}
	return 0;
}

static void *page_none, *page_ro;

/* --- FUTEX_WAKE_OP ------------------------------------------------------ */

static uint32_t w1, w2, w3;

static long wake_op(volatile void *a, long n, long n2, volatile void *b, unsigned op, int flags)
{
	return futex(a, FUTEX_WAKE_OP | flags, n, (void *)n2, b, op);
}

static void *wait_on(void *arg)
{
	volatile uint32_t *w = arg;
	long r = futex(w, FUTEX_WAIT, *w, NULL, NULL, 0);
	return (void *)r;
}

/* start a thread waiting on *w and return once it is queued: a requeue of
 * it onto w3 reports it (the requeue moves it there) */
static pthread_t waiter_on_w3(volatile uint32_t *w)
{
	pthread_t th;
	pthread_create(&th, NULL, wait_on, (void *)w);
	for (int i = 0; i < 2000; i++) {
		if (futex(w, FUTEX_REQUEUE, 0, (void *)1, &w3, 0) == 1)
			return th;
		msleep(10);
	}
	return th;
}

static void test_wake_op(void)
{
	w2 = 5;
	CHECK_EQ("wake_op.set_none_woken", wake_op(&w1, 1, 1, &w2, FUTEX_OP(OP_SET, 7, CMP_EQ, 5), 0), 0);
	CHECK_EQ("wake_op.set", w2, 7);
	w2 = 10;
	wake_op(&w1, 1, 1, &w2, FUTEX_OP(OP_ADD, -3, CMP_EQ, 0), FUTEX_PRIVATE_FLAG);
	CHECK_EQ("wake_op.add_negative", w2, 7);
	wake_op(&w1, 1, 1, &w2, FUTEX_OP(OP_OR, 0x30, CMP_EQ, 0), 0);
	CHECK_EQ("wake_op.or", w2, 0x37);
	wake_op(&w1, 1, 1, &w2, FUTEX_OP(OP_ANDN, 0x5, CMP_EQ, 0), 0);
	CHECK_EQ("wake_op.andn", w2, 0x32);
	wake_op(&w1, 1, 1, &w2, FUTEX_OP(OP_XOR, 0xfff, CMP_EQ, 0), 0);
	CHECK_EQ("wake_op.xor_sign_extended", w2, ~0x32u);
	w2 = 0;
	wake_op(&w1, 1, 1, &w2, FUTEX_OP(OP_SET | OP_SHIFT, 4, CMP_EQ, 0), 0);
	CHECK_EQ("wake_op.shifted_arg", w2, 16);
	wake_op(&w1, 1, 1, &w2, FUTEX_OP(OP_OR | OP_SHIFT, 35, CMP_EQ, 0), 0);
	CHECK_EQ("wake_op.shift_masked", w2, 16 | 8);

	/* errors: an unknown operation before the word is touched, an
	 * unknown comparison after it was updated */
	w2 = 1;
	CHECK_ERR("wake_op.bad_op_enosys", wake_op(&w1, 1, 1, &w2, FUTEX_OP(5, 9, CMP_EQ, 0), 0), ENOSYS);
	CHECK_EQ("wake_op.bad_op_word_untouched", w2, 1);
	CHECK_ERR("wake_op.bad_op7_enosys", wake_op(&w1, 1, 1, &w2, FUTEX_OP(7 | OP_SHIFT, 9, CMP_EQ, 0), 0), ENOSYS);
	CHECK_ERR("wake_op.bad_cmp_enosys", wake_op(&w1, 1, 1, &w2, FUTEX_OP(OP_SET, 9, 6, 0), 0), ENOSYS);
	CHECK_EQ("wake_op.bad_cmp_word_updated", w2, 9);
	CHECK_ERR("wake_op.unaligned_first", wake_op((char *)&w1 + 1, 1, 1, &w2, FUTEX_OP(OP_SET, 1, CMP_EQ, 0), 0), EINVAL);
	CHECK_ERR("wake_op.unaligned_second", wake_op(&w1, 1, 1, (char *)&w2 + 2, FUTEX_OP(OP_SET, 1, CMP_EQ, 0), 0), EINVAL);
	CHECK_ERR("wake_op.unaligned_before_unmapped", wake_op(page_none, 1, 1, (char *)&w2 + 2, FUTEX_OP(OP_SET, 1, CMP_EQ, 0), FUTEX_PRIVATE_FLAG), EINVAL);
	CHECK_ERR("wake_op.unmapped_second_efault", wake_op(&w1, 1, 1, page_none, FUTEX_OP(OP_SET, 1, CMP_EQ, 0), FUTEX_PRIVATE_FLAG), EFAULT);
	CHECK_ERR("wake_op.private_bad_op_before_fault", wake_op(&w1, 1, 1, page_none, FUTEX_OP(6, 1, CMP_EQ, 0), FUTEX_PRIVATE_FLAG), ENOSYS);
	CHECK_ERR("wake_op.shared_unmapped_first_efault", wake_op(page_none, 1, 1, &w2, FUTEX_OP(OP_SET, 1, CMP_EQ, 0), 0), EFAULT);
	CHECK_ERR("wake_op.shared_unmapped_second_efault", wake_op(&w1, 1, 1, page_none, FUTEX_OP(6, 1, CMP_EQ, 0), 0), EFAULT);
	CHECK_ERR("wake_op.read_only_second_efault", wake_op(&w1, 1, 1, page_ro, FUTEX_OP(OP_SET, 1, CMP_EQ, 0), FUTEX_PRIVATE_FLAG), EFAULT);
	CHECK_ERR("wake_op.kernel_address_efault", wake_op((void *)0xffff800000000000ul, 1, 1, &w2, FUTEX_OP(OP_SET, 1, CMP_EQ, 0), FUTEX_PRIVATE_FLAG), EFAULT);
	CHECK_EQ("wake_op.private_unmapped_first_ok", wake_op(page_none, 1, 1, &w2, FUTEX_OP(OP_SET, 1, CMP_EQ, 0), FUTEX_PRIVATE_FLAG), 0);

	/* which queues it wakes: the first always, the second when the old
	 * value passes the comparison (signed) */
	w1 = 0;
	pthread_t th = waiter_on_w3(&w1);
	CHECK_EQ("wake_op.first_queue_woken", wake_op(&w3, 1, 1, &w2, FUTEX_OP(OP_SET, -2, CMP_EQ, 0), 0), 1);
	void *r;
	pthread_join(th, &r);
	CHECK_EQ("wake_op.waiter_returned_0", (long)r, 0);
	w2 = 0xfffffffe; /* -2 */
	th = waiter_on_w3(&w2);
	w3 = 0xfffffffe; /* the comparisons below read it: signed */
	CHECK_EQ("wake_op.cmp_false_not_woken", wake_op(&w1, 1, 1, &w3, FUTEX_OP(OP_OR, 0, CMP_GT, 0), 0), 0);
	CHECK_EQ("wake_op.cmp_true_woken", wake_op(&w1, 1, 1, &w3, FUTEX_OP(OP_OR, 0, CMP_LT, -1), 0), 1);
	pthread_join(th, &r);
	th = waiter_on_w3(&w2);
	CHECK_EQ("wake_op.zero_count_wakes_one", wake_op(&w1, 0, 0, &w3, FUTEX_OP(OP_OR, 0, CMP_NE, 0), 0), 1);
	pthread_join(th, &r);
	th = waiter_on_w3(&w2);
	CHECK_EQ("futex_wake.zero_count_wakes_one", futex(&w3, FUTEX_WAKE, 0, NULL, NULL, 0), 1);
	pthread_join(th, &r);
}

/* --- PI futexes, raw --------------------------------------------------- */

static volatile uint32_t pw;
static atomic_int holder_tid, holder_go, holder_done, waiter_got, waiter_ret, handler_ran;
static atomic_uint waiter_saw;

/* takes pw by LOCK_PI, then holds it until told to let go */
static void *holder(void *arg)
{
	(void)arg;
	futex(&pw, FUTEX_LOCK_PI, 0, NULL, NULL, 0);
	holder_tid = gettid_();
	while (!holder_go)
		msleep(5);
	holder_done = 1;
	futex(&pw, FUTEX_UNLOCK_PI, 0, NULL, NULL, 0);
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	handler_ran = 1;
}

/* blocks in LOCK_PI on pw, records the word it got, then unlocks */
static void *pi_waiter(void *arg)
{
	(void)arg;
	long r = futex(&pw, FUTEX_LOCK_PI, 0, NULL, NULL, 0);
	waiter_ret = r == 0 ? 0 : errno;
	waiter_saw = pw;
	waiter_got = gettid_();
	if (r == 0)
		futex(&pw, FUTEX_UNLOCK_PI, 0, NULL, NULL, 0);
	return NULL;
}

static void test_pi_raw(void)
{
	uint32_t tid = gettid_();
	struct timespec bad = { 0, 1000000000 }, past = { 0, 0 };

	pw = 0;
	CHECK_EQ("lock_pi.free", futex(&pw, FUTEX_LOCK_PI, 0, NULL, NULL, 0), 0);
	CHECK_EQ("lock_pi.word_is_tid", pw, tid);
	CHECK_ERR("lock_pi.again_edeadlk", futex(&pw, FUTEX_LOCK_PI, 0, NULL, NULL, 0), EDEADLK);
	CHECK_ERR("trylock_pi.own_edeadlk", futex(&pw, FUTEX_TRYLOCK_PI, 0, NULL, NULL, 0), EDEADLK);
	CHECK_EQ("unlock_pi.owner", futex(&pw, FUTEX_UNLOCK_PI, 0, NULL, NULL, 0), 0);
	CHECK_EQ("unlock_pi.word_zero", pw, 0);
	CHECK_ERR("unlock_pi.free_eperm", futex(&pw, FUTEX_UNLOCK_PI, 0, NULL, NULL, 0), EPERM);
	pw = tid + 1;
	CHECK_ERR("unlock_pi.other_tid_eperm", futex(&pw, FUTEX_UNLOCK_PI, 0, NULL, NULL, 0), EPERM);
	pw = 0;
	CHECK_ERR("unlock_pi.unaligned_read_first_eperm", futex((char *)&pw + 1, FUTEX_UNLOCK_PI, 0, NULL, NULL, 0), EPERM);
	CHECK_ERR("unlock_pi.unmapped_efault", futex(page_none, FUTEX_UNLOCK_PI | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0), EFAULT);
	CHECK_EQ("trylock_pi.free", futex(&pw, FUTEX_TRYLOCK_PI, 0, NULL, NULL, 0), 0);
	CHECK_EQ("trylock_pi.word_is_tid", pw, tid);
	futex(&pw, FUTEX_UNLOCK_PI, 0, NULL, NULL, 0);

	/* a word with no owner: taken, OWNER_DIED kept, WAITERS dropped */
	pw = FUTEX_OWNER_DIED;
	CHECK_EQ("lock_pi.owner_died_taken", futex(&pw, FUTEX_LOCK_PI, 0, NULL, NULL, 0), 0);
	CHECK_EQ("lock_pi.owner_died_kept", pw, FUTEX_OWNER_DIED | tid);
	CHECK_EQ("unlock_pi.owner_died_word", futex(&pw, FUTEX_UNLOCK_PI, 0, NULL, NULL, 0), 0);
	CHECK_EQ("unlock_pi.owner_died_cleared", pw, 0);
	pw = FUTEX_WAITERS;
	CHECK_EQ("lock_pi.waiters_bit_no_owner", futex(&pw, FUTEX_LOCK_PI, 0, NULL, NULL, 0), 0);
	CHECK_EQ("lock_pi.waiters_bit_dropped", pw, tid);
	futex(&pw, FUTEX_UNLOCK_PI, 0, NULL, NULL, 0);

	/* an owner that does not exist */
	pw = NO_TID;
	CHECK_ERR("lock_pi.no_such_owner_esrch", futex(&pw, FUTEX_LOCK_PI, 0, NULL, NULL, 0), ESRCH);
	CHECK_EQ("lock_pi.esrch_sets_waiters", pw, NO_TID | FUTEX_WAITERS);
	pw = NO_TID;
	CHECK_ERR("trylock_pi.no_such_owner_esrch", futex(&pw, FUTEX_TRYLOCK_PI, 0, NULL, NULL, 0), ESRCH);

	/* argument errors, in Linux's order */
	pw = 0;
	CHECK_ERR("lock_pi.unaligned_einval", futex((char *)&pw + 2, FUTEX_LOCK_PI, 0, NULL, NULL, 0), EINVAL);
	CHECK_ERR("lock_pi.unmapped_private_efault", futex(page_none, FUTEX_LOCK_PI | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0), EFAULT);
	CHECK_ERR("lock_pi.unmapped_shared_efault", futex(page_none, FUTEX_LOCK_PI, 0, NULL, NULL, 0), EFAULT);
	CHECK_ERR("lock_pi.read_only_efault", futex(page_ro, FUTEX_LOCK_PI | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0), EFAULT);
	CHECK_ERR("trylock_pi.read_only_efault", futex(page_ro, FUTEX_TRYLOCK_PI | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0), EFAULT);
	CHECK_ERR("lock_pi.bad_timeout_einval", futex(&pw, FUTEX_LOCK_PI, 0, &bad, NULL, 0), EINVAL);
	CHECK_ERR("lock_pi.timeout_efault", futex(&pw, FUTEX_LOCK_PI, 0, page_none, NULL, 0), EFAULT);
	CHECK_ERR("lock_pi.timeout_before_word", futex(page_none, FUTEX_LOCK_PI, 0, &bad, NULL, 0), EINVAL);
	CHECK_ERR("lock_pi.clock_realtime_enosys", futex(&pw, FUTEX_LOCK_PI | FUTEX_CLOCK_REALTIME, 0, NULL, NULL, 0), ENOSYS);
	CHECK_ERR("lock_pi.timeout_read_before_enosys", futex(&pw, FUTEX_LOCK_PI | FUTEX_CLOCK_REALTIME, 0, page_none, NULL, 0), EFAULT);
	CHECK_ERR("trylock_pi.clock_realtime_enosys", futex(&pw, FUTEX_TRYLOCK_PI | FUTEX_CLOCK_REALTIME, 0, NULL, NULL, 0), ENOSYS);
	CHECK_ERR("unlock_pi.clock_realtime_enosys", futex(&pw, FUTEX_UNLOCK_PI | FUTEX_CLOCK_REALTIME, 0, NULL, NULL, 0), ENOSYS);
	CHECK_ERR("futex_wait.clock_realtime_enosys", futex(&pw, FUTEX_WAIT | FUTEX_CLOCK_REALTIME, 1, NULL, NULL, 0), ENOSYS);
	CHECK_EQ("lock_pi2.clock_realtime", futex(&pw, FUTEX_LOCK_PI2 | FUTEX_CLOCK_REALTIME, 0, NULL, NULL, 0), 0);
	CHECK_EQ("lock_pi2.word_is_tid", pw, tid);
	futex(&pw, FUTEX_UNLOCK_PI, 0, NULL, NULL, 0);
	CHECK_ERR("futex.requeue_pi_cmd_unknown_here", futex(&pw, 14 | FUTEX_PRIVATE_FLAG, 0, NULL, NULL, 0), ENOSYS);

	/* a live owner: another thread holds it */
	pw = 0;
	holder_tid = holder_go = holder_done = 0;
	pthread_t h;
	pthread_create(&h, NULL, holder, NULL);
	for (int i = 0; i < 2000 && !holder_tid; i++)
		msleep(10);
	CHECK_EQ("lock_pi.holder_word", pw, holder_tid);
	CHECK_ERR("trylock_pi.held_eagain", futex(&pw, FUTEX_TRYLOCK_PI, 0, NULL, NULL, 0), EAGAIN);
	CHECK_EQ("trylock_pi.held_sets_waiters", pw, holder_tid | FUTEX_WAITERS);
	CHECK_ERR("unlock_pi.not_owner_eperm", futex(&pw, FUTEX_UNLOCK_PI, 0, NULL, NULL, 0), EPERM);
	CHECK_ERR("lock_pi.realtime_past_etimedout", futex(&pw, FUTEX_LOCK_PI, 0, &past, NULL, 0), ETIMEDOUT);
	/* LOCK_PI's time is on CLOCK_REALTIME: a monotonic reading is long past */
	struct timespec mono_later = at_on(CLOCK_MONOTONIC, 100);
	CHECK_ERR("lock_pi.timeout_is_realtime", futex(&pw, FUTEX_LOCK_PI, 0, &mono_later, NULL, 0), ETIMEDOUT);
	struct timespec rt = at_on(CLOCK_REALTIME, 1.5);
	double t0 = now_on(CLOCK_MONOTONIC);
	CHECK_ERR("lock_pi.realtime_etimedout", futex(&pw, FUTEX_LOCK_PI, 0, &rt, NULL, 0), ETIMEDOUT);
	CHECK("lock_pi.waited_for_timeout", now_on(CLOCK_MONOTONIC) - t0 >= 1.0);
	struct timespec mono = at_on(CLOCK_MONOTONIC, 1.5);
	t0 = now_on(CLOCK_MONOTONIC);
	CHECK_ERR("lock_pi2.monotonic_etimedout", futex(&pw, FUTEX_LOCK_PI2, 0, &mono, NULL, 0), ETIMEDOUT);
	CHECK("lock_pi2.waited_monotonic", now_on(CLOCK_MONOTONIC) - t0 >= 1.0);
	rt = at_on(CLOCK_REALTIME, 1.5);
	t0 = now_on(CLOCK_MONOTONIC);
	CHECK_ERR("lock_pi2.realtime_etimedout", futex(&pw, FUTEX_LOCK_PI2 | FUTEX_CLOCK_REALTIME, 0, &rt, NULL, 0), ETIMEDOUT);
	CHECK("lock_pi2.waited_realtime", now_on(CLOCK_MONOTONIC) - t0 >= 1.0);
	CHECK_EQ("lock_pi.timeouts_leave_owner", pw & FUTEX_TID_MASK_, holder_tid);

	/* the handoff: the holder unlocks through the kernel (WAITERS is
	 * set), and the lock goes straight to us */
	holder_go = 1;
	long r = futex(&pw, FUTEX_LOCK_PI, 0, NULL, NULL, 0);
	CHECK_EQ("lock_pi.handed_over", r, 0);
	CHECK_EQ("lock_pi.holder_released_first", holder_done, 1);
	CHECK_EQ("lock_pi.word_after_handoff", pw & FUTEX_TID_MASK_, tid);
	pthread_join(h, NULL);

	/* we hold it; a waiter blocks (WAITERS appears), a signal with a
	 * handler without SA_RESTART does not make it return (Linux restarts
	 * LOCK_PI), and our unlock hands it over with WAITERS set */
	futex(&pw, FUTEX_UNLOCK_PI, 0, NULL, NULL, 0);
	futex(&pw, FUTEX_LOCK_PI, 0, NULL, NULL, 0);
	CHECK_EQ("lock_pi.relocked_clean", pw, tid);
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigaction(SIGUSR1, &sa, NULL);
	waiter_got = 0;
	pthread_t wt;
	pthread_create(&wt, NULL, pi_waiter, NULL);
	CHECK("lock_pi.waiter_sets_waiters", wait_bits(&pw, FUTEX_WAITERS));
	pthread_kill(wt, SIGUSR1);
	for (int i = 0; i < 2000 && !handler_ran; i++)
		msleep(10);
	CHECK("lock_pi.handler_ran", handler_ran);
	msleep(1000);
	CHECK_EQ("lock_pi.no_eintr", waiter_got, 0);
	CHECK_EQ("unlock_pi.hands_over", futex(&pw, FUTEX_UNLOCK_PI, 0, NULL, NULL, 0), 0);
	pthread_join(wt, NULL);
	CHECK_EQ("lock_pi.waiter_got_it", waiter_ret, 0);
	CHECK_EQ("lock_pi.waiter_word", waiter_saw, (uint32_t)waiter_got | FUTEX_WAITERS);
	CHECK_EQ("unlock_pi.waiter_released", pw, 0);
	signal(SIGUSR1, SIG_DFL);
}

/* --- pthread PI mutexes ------------------------------------------------ */

static pthread_mutex_t pim;
static long counter;

static void *count_up(void *arg)
{
	for (long i = 0; i < (long)arg; i++) {
		pthread_mutex_lock(&pim);
		counter++;
		pthread_mutex_unlock(&pim);
	}
	return NULL;
}

static void *hold_and_die(void *arg)
{
	pthread_mutex_t *m = arg;
	pthread_mutex_lock(m);
	holder_tid = gettid_();
	/* musl's mutex keeps its lock word second: wait for the waiter to
	 * be in the kernel before dying */
	wait_bits((volatile uint32_t *)m + 1, FUTEX_WAITERS);
	return NULL; /* exits holding it */
}

static void *hold_until_go(void *arg)
{
	pthread_mutex_t *m = arg;
	pthread_mutex_lock(m);
	holder_tid = gettid_();
	while (!holder_go)
		msleep(5);
	pthread_mutex_unlock(m);
	return NULL;
}

static void test_pthread_pi(void)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	CHECK_EQ("pthread.setprotocol_inherit", pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT), 0);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&pim, &a);

	/* contention: every increment lands */
	enum { N = 3, ITER = 5000 };
	pthread_t th[N];
	for (int i = 0; i < N; i++)
		pthread_create(&th[i], NULL, count_up, (void *)(long)ITER);
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ("pthread.pi_counter", counter, N * ITER);

	CHECK_EQ("pthread.pi_lock", pthread_mutex_lock(&pim), 0);
	CHECK_EQ("pthread.pi_relock_edeadlk", pthread_mutex_lock(&pim), EDEADLK);
	CHECK_EQ("pthread.pi_unlock", pthread_mutex_unlock(&pim), 0);
	CHECK_EQ("pthread.pi_unlock_unowned_eperm", pthread_mutex_unlock(&pim), EPERM);

	/* timedlock against a holder */
	holder_tid = holder_go = 0;
	pthread_t h;
	pthread_create(&h, NULL, hold_until_go, &pim);
	for (int i = 0; i < 2000 && !holder_tid; i++)
		msleep(10);
	struct timespec rt = at_on(CLOCK_REALTIME, 1.0);
	CHECK_EQ("pthread.pi_timedlock_etimedout", pthread_mutex_timedlock(&pim, &rt), ETIMEDOUT);
	CHECK_EQ("pthread.pi_trylock_ebusy", pthread_mutex_trylock(&pim), EBUSY);
	holder_go = 1;
	CHECK_EQ("pthread.pi_lock_after_holder", pthread_mutex_lock(&pim), 0);
	pthread_mutex_unlock(&pim);
	pthread_join(h, NULL);
	pthread_mutex_destroy(&pim);

	/* robust: the owner thread exits holding it while we wait */
	pthread_mutex_t rm;
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_NORMAL);
	CHECK_EQ("pthread.setrobust", pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST), 0);
	pthread_mutex_init(&rm, &a);
	holder_tid = 0;
	pthread_create(&h, NULL, hold_and_die, &rm);
	for (int i = 0; i < 2000 && !holder_tid; i++)
		msleep(10);
	CHECK_EQ("pthread.robust_pi_owner_died", pthread_mutex_lock(&rm), EOWNERDEAD);
	pthread_join(h, NULL);
	CHECK_EQ("pthread.robust_pi_consistent", pthread_mutex_consistent(&rm), 0);
	CHECK_EQ("pthread.robust_pi_unlock", pthread_mutex_unlock(&rm), 0);
	CHECK_EQ("pthread.robust_pi_lock_again", pthread_mutex_lock(&rm), 0);
	pthread_mutex_unlock(&rm);
	pthread_mutex_destroy(&rm);
	pthread_mutexattr_destroy(&a);
}

/* --- across processes: a robust PI mutex in shared memory ------------- */

struct shared {
	pthread_mutex_t m;
	atomic_int locked;
};

/* locks the shared mutex and keeps it until the process ends or execs */
static void *lock_shared(void *arg)
{
	struct shared *sh = arg;
	pthread_mutex_lock(&sh->m);
	sh->locked = 1;
	for (;;)
		pause();
	return NULL;
}

static void test_shared_robust(void)
{
	struct shared *sh = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		CHECK_SYS("shared.mmap", -1);
		return;
	}
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	CHECK_EQ("shared.setpshared", pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
	pthread_mutex_init(&sh->m, &a);
	volatile uint32_t *word = (volatile uint32_t *)&sh->m + 1;

	/* 1: the owner is killed with no one waiting: the kernel's walk of
	 * its robust list leaves the word OWNER_DIED, owner 0 */
	pid_t pid = fork();
	if (pid == 0) {
		pthread_mutex_lock(&sh->m);
		sh->locked = 1;
		for (;;)
			pause();
	}
	for (int i = 0; i < 2000 && !sh->locked; i++)
		msleep(10);
	CHECK_EQ("shared.child_owns", *word & 0x3fffffff, pid);
	kill(pid, SIGKILL);
	int st;
	waitpid(pid, &st, 0);
	CHECK_EQ("shared.killed_word_owner_died", *word, FUTEX_OWNER_DIED);
	CHECK_EQ("shared.killed_eownerdead", pthread_mutex_lock(&sh->m), EOWNERDEAD);
	CHECK_EQ("shared.consistent", pthread_mutex_consistent(&sh->m), 0);
	CHECK_EQ("shared.unlock", pthread_mutex_unlock(&sh->m), 0);

	/* 2: the owner exits while we wait in the kernel: we are handed the
	 * lock with OWNER_DIED */
	sh->locked = 0;
	pid = fork();
	if (pid == 0) {
		pthread_mutex_lock(&sh->m);
		sh->locked = 1;
		wait_bits(word, FUTEX_WAITERS);
		_exit(0);
	}
	for (int i = 0; i < 2000 && !sh->locked; i++)
		msleep(10);
	CHECK_EQ("shared.waiter_eownerdead", pthread_mutex_lock(&sh->m), EOWNERDEAD);
	CHECK_EQ("shared.waiter_word", *word & ~FUTEX_WAITERS, FUTEX_OWNER_DIED | gettid_());
	waitpid(pid, &st, 0);
	CHECK("shared.child_exited_0", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	pthread_mutex_consistent(&sh->m);
	CHECK_EQ("shared.unlock_after_handoff", pthread_mutex_unlock(&sh->m), 0);
	CHECK_EQ("shared.lock_clean", pthread_mutex_lock(&sh->m), 0);
	CHECK_EQ("shared.unlock_clean", pthread_mutex_unlock(&sh->m), 0);

	/* 3: not made consistent: the next locker gets ENOTRECOVERABLE */
	sh->locked = 0;
	pid = fork();
	if (pid == 0) {
		pthread_mutex_lock(&sh->m);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	CHECK_EQ("shared.exit_eownerdead", pthread_mutex_lock(&sh->m), EOWNERDEAD);
	pthread_mutex_unlock(&sh->m);
	CHECK_EQ("shared.notrecoverable", pthread_mutex_lock(&sh->m), ENOTRECOVERABLE);

	/* 4: the owner execs: its robust list is walked in the old memory
	 * before the new program starts (Linux's futex_exec_release), so
	 * the lock is OWNER_DIED while the process lives on. The pipe's
	 * close-on-exec end reaching EOF says the exec is done. */
	pthread_mutex_destroy(&sh->m);
	pthread_mutex_init(&sh->m, &a);
	sh->locked = 0;
	int pfd[2];
	CHECK_SYS("exec.pipe", pipe2(pfd, O_CLOEXEC));
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		pthread_mutex_lock(&sh->m);
		sh->locked = 1;
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(1);
	}
	close(pfd[1]);
	char c;
	CHECK_EQ("exec.cloexec_eof", read(pfd[0], &c, 1), 0);
	close(pfd[0]);
	CHECK_EQ("exec.was_owned", sh->locked, 1);
	CHECK_EQ("exec.word_owner_died", *word, FUTEX_OWNER_DIED);
	CHECK_EQ("exec.still_running", waitpid(pid, &st, WNOHANG), 0);
	CHECK_EQ("exec.eownerdead", pthread_mutex_lock(&sh->m), EOWNERDEAD);
	CHECK_EQ("exec.consistent", pthread_mutex_consistent(&sh->m), 0);
	CHECK_EQ("exec.unlock", pthread_mutex_unlock(&sh->m), 0);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);

	/* 5: another thread owns it when the process execs: that thread
	 * ends first and its robust list is walked in the old memory too */
	pthread_mutex_destroy(&sh->m);
	pthread_mutex_init(&sh->m, &a);
	sh->locked = 0;
	CHECK_SYS("exec_thread.pipe", pipe2(pfd, O_CLOEXEC));
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		pthread_t th;
		if (pthread_create(&th, NULL, lock_shared, sh) != 0)
			_exit(1);
		while (!sh->locked)
			usleep(1000);
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(1);
	}
	close(pfd[1]);
	CHECK_EQ("exec_thread.cloexec_eof", read(pfd[0], &c, 1), 0);
	close(pfd[0]);
	CHECK_EQ("exec_thread.was_owned", sh->locked, 1);
	CHECK_EQ("exec_thread.word_owner_died", *word, FUTEX_OWNER_DIED);
	CHECK_EQ("exec_thread.eownerdead", pthread_mutex_lock(&sh->m), EOWNERDEAD);
	pthread_mutex_consistent(&sh->m);
	pthread_mutex_unlock(&sh->m);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	munmap(sh, 4096);
}

/* --- get_robust_list ---------------------------------------------------- */

static void test_robust_list(void)
{
	struct { void *next; long off; void *pending; } head = { &head, 0, NULL };
	void *got = NULL;
	size_t len = 0;
	CHECK_ERR("set_robust_list.bad_len", syscall(SYS_set_robust_list, &head, 23), EINVAL);
	pid_t pid = fork();
	if (pid == 0) {
		/* in a child: musl keeps its own list registered in ours */
		if (syscall(SYS_set_robust_list, &head, sizeof head) != 0)
			_exit(1);
		if (syscall(SYS_get_robust_list, 0, &got, &len) != 0)
			_exit(2);
		_exit(got == &head && len == sizeof head ? 0 : 3);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK_EQ("get_robust_list.self", WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
	CHECK_ERR("get_robust_list.esrch", syscall(SYS_get_robust_list, NO_TID, &got, &len), ESRCH);
	CHECK_ERR("get_robust_list.len_efault", syscall(SYS_get_robust_list, 0, &got, page_none), EFAULT);
	CHECK_ERR("get_robust_list.head_efault", syscall(SYS_get_robust_list, 0, page_none, &len), EFAULT);
	CHECK_EQ("get_robust_list.len_written_first", len, sizeof head);
	pid = fork();
	if (pid == 0) {
		/* nobody may not look at init's */
		if (setgid(65534) != 0 || setuid(65534) != 0)
			_exit(1);
		_exit(syscall(SYS_get_robust_list, 1, &got, &len) == -1 && errno == EPERM ? 0 : 2);
	}
	waitpid(pid, &st, 0);
	CHECK_EQ("get_robust_list.eperm_as_nobody", WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	page_none = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	page_ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	test_wake_op();
	test_pi_raw();
	test_pthread_pi();
	test_shared_robust();
	test_robust_list();
	return check_done();
}
