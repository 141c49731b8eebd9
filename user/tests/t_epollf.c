/*
 * t_epollf: the error table of epoll and futex (issue 22's audit, epoll
 * and futex): epoll_create/epoll_create1, epoll_ctl (EEXIST, ENOENT,
 * EBADF, EPERM, EINVAL, EFAULT, EPOLLEXCLUSIVE's rules), epoll_wait,
 * epoll_pwait and epoll_pwait2, and futex's operations (EAGAIN, ETIMEDOUT,
 * EINVAL, EFAULT, ENOSYS). Each check is one condition the Linux man page
 * documents, with the errno Linux 6.1 returns (FUTEX_WAKE_OP and the PI
 * operations are not here: Shortbread answers ENOSYS, see its support
 * notes); where Linux tests one
 * argument before another (the event before the descriptors, maxevents
 * before the descriptor, the timeout before the futex word), a check with
 * both wrong pins which one wins. t_poll, t_thread, t_badinput and
 * t_errors hold the conditions checked before this audit. All calls are
 * raw system calls.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#include "check.h"

/* linux/futex.h's values (musl's headers do not have them) */
#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_REQUEUE 3
#define FUTEX_CMP_REQUEUE 4
#define FUTEX_WAIT_BITSET 9
#define FUTEX_WAKE_BITSET 10
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_CLOCK_REALTIME 256
#define FUTEX_BITSET_MATCH_ANY 0xffffffff

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441
#endif
#ifndef EPOLLEXCLUSIVE
#define EPOLLEXCLUSIVE (1U << 28)
#endif

static void *unmapped(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(p, 4096);
	return p;
}

static void *kernel_half = (void *)0xffff800000000000UL;

static long ctl(int ep, int op, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u64 = 1 };
	return syscall(SYS_epoll_ctl, ep, op, fd, &ev);
}

static long ewait(int ep, struct epoll_event *evs, int max, int timeout)
{
	return syscall(SYS_epoll_wait, ep, evs, max, timeout);
}

static void test_epoll(void)
{
	CHECK_ERR("epoll_create.zero", syscall(SYS_epoll_create, 0), EINVAL);
	CHECK_ERR("epoll_create.negative", syscall(SYS_epoll_create, -1), EINVAL);
	int ep = syscall(SYS_epoll_create, 1);
	CHECK_SYS("epoll_create.size_ignored", ep);
	int ep2 = syscall(SYS_epoll_create1, EPOLL_CLOEXEC);
	CHECK("epoll_create1.cloexec", ep2 >= 0 && (fcntl(ep2, F_GETFD) & FD_CLOEXEC));
	int p[2];
	if (pipe(p))
		return;
	int file = open("/proc/self/status", O_RDONLY);
	int reg = open("/init", O_RDONLY);
	if (reg < 0)
		reg = open(".", O_RDONLY | O_DIRECTORY);

	CHECK_SYS("epoll_ctl.add", ctl(ep, EPOLL_CTL_ADD, p[0], EPOLLIN));
	CHECK_ERR("epoll_ctl.add_twice_eexist", ctl(ep, EPOLL_CTL_ADD, p[0], EPOLLIN), EEXIST);
	CHECK_ERR("epoll_ctl.mod_absent_enoent", ctl(ep, EPOLL_CTL_MOD, p[1], EPOLLOUT), ENOENT);
	CHECK_ERR("epoll_ctl.del_absent_enoent", syscall(SYS_epoll_ctl, ep, EPOLL_CTL_DEL, p[1], NULL), ENOENT);
	CHECK_ERR("epoll_ctl.bad_epfd", ctl(9999, EPOLL_CTL_ADD, p[1], EPOLLOUT), EBADF);
	CHECK_ERR("epoll_ctl.bad_fd", ctl(ep, EPOLL_CTL_ADD, 9999, EPOLLOUT), EBADF);
	CHECK_ERR("epoll_ctl.epfd_not_epoll", ctl(p[0], EPOLL_CTL_ADD, p[1], EPOLLOUT), EINVAL);
	CHECK_ERR("epoll_ctl.regular_file_eperm", ctl(ep, EPOLL_CTL_ADD, reg, EPOLLIN), EPERM);
	CHECK_ERR("epoll_ctl.eperm_before_einval", ctl(p[0], EPOLL_CTL_ADD, reg, EPOLLIN), EPERM);
	CHECK_ERR("epoll_ctl.bad_op", ctl(ep, 99, p[1], EPOLLOUT), EINVAL);
	CHECK_ERR("epoll_ctl.bad_op_on_present", ctl(ep, 99, p[0], EPOLLIN), EINVAL);
	CHECK_ERR("epoll_ctl.event_efault", syscall(SYS_epoll_ctl, ep, EPOLL_CTL_ADD, p[1], unmapped()), EFAULT);
	CHECK_ERR("epoll_ctl.efault_before_ebadf", syscall(SYS_epoll_ctl, 9999, EPOLL_CTL_ADD, p[1], unmapped()), EFAULT);
	CHECK_ERR("epoll_ctl.ebadf_epfd_before_fd", ctl(9999, EPOLL_CTL_ADD, 9998, EPOLLIN), EBADF);
	CHECK_SYS("epoll_ctl.del_null_event_ok", syscall(SYS_epoll_ctl, ep, EPOLL_CTL_DEL, p[0], NULL));
	CHECK_ERR("epoll_ctl.del_ignores_bad_event", syscall(SYS_epoll_ctl, ep, EPOLL_CTL_DEL, p[0], unmapped()), ENOENT);
	CHECK_ERR("epoll_ctl.proc_file_eperm", ctl(ep, EPOLL_CTL_ADD, file, EPOLLIN), EPERM);

	/* EPOLLEXCLUSIVE: only at ADD, not for an epoll target, only with
	 * the bits it allows */
	CHECK_SYS("epoll_ctl.exclusive_add", ctl(ep, EPOLL_CTL_ADD, p[0], EPOLLIN | EPOLLEXCLUSIVE));
	CHECK_ERR("epoll_ctl.exclusive_mod_einval", ctl(ep, EPOLL_CTL_MOD, p[0], EPOLLIN | EPOLLEXCLUSIVE), EINVAL);
	CHECK_ERR("epoll_ctl.mod_of_exclusive_einval", ctl(ep, EPOLL_CTL_MOD, p[0], EPOLLIN), EINVAL);
	CHECK_ERR("epoll_ctl.exclusive_oneshot_einval", ctl(ep, EPOLL_CTL_ADD, p[1], EPOLLOUT | EPOLLEXCLUSIVE | EPOLLONESHOT), EINVAL);
	CHECK_ERR("epoll_ctl.exclusive_epoll_target_einval", ctl(ep, EPOLL_CTL_ADD, ep2, EPOLLIN | EPOLLEXCLUSIVE), EINVAL);
	CHECK_ERR("epoll_ctl.exclusive_mod_absent_einval", ctl(ep, EPOLL_CTL_MOD, p[1], EPOLLOUT | EPOLLEXCLUSIVE), EINVAL);
	CHECK_SYS("epoll_ctl.exclusive_del", syscall(SYS_epoll_ctl, ep, EPOLL_CTL_DEL, p[0], NULL));

	struct epoll_event evs[4];
	CHECK_ERR("epoll_wait.maxevents_zero", ewait(ep, evs, 0, 0), EINVAL);
	CHECK_ERR("epoll_wait.maxevents_negative", ewait(ep, evs, -1, 0), EINVAL);
	CHECK_ERR("epoll_wait.maxevents_huge", ewait(ep, evs, 0x7fffffff, 0), EINVAL);
	CHECK_ERR("epoll_wait.maxevents_before_ebadf", ewait(9999, evs, 0, 0), EINVAL);
	CHECK_ERR("epoll_wait.kernel_buffer_before_ebadf", ewait(9999, kernel_half, 1, 0), EFAULT);
	CHECK_ERR("epoll_wait.ebadf", ewait(9999, evs, 1, 0), EBADF);
	CHECK_ERR("epoll_wait.not_epoll", ewait(p[0], evs, 1, 0), EINVAL);
	CHECK_EQ("epoll_wait.nothing_ready", ewait(ep2, evs, 4, 0), 0);
	CHECK_EQ("epoll_wait.unmapped_buffer_nothing_ready", ewait(ep2, unmapped(), 4, 0), 0);
	CHECK_SYS("epoll_ctl.add_write_end", ctl(ep2, EPOLL_CTL_ADD, p[1], EPOLLOUT));
	CHECK_ERR("epoll_wait.unmapped_buffer_ready_efault", ewait(ep2, unmapped(), 4, 0), EFAULT);
	uint64_t set = 0;
	CHECK_ERR("epoll_pwait.sigsetsize", syscall(SYS_epoll_pwait, ep2, evs, 4, 0, &set, 4), EINVAL);
	CHECK_EQ("epoll_pwait.null_mask_any_size", syscall(SYS_epoll_pwait, ep2, evs, 4, 0, NULL, 4), 1);
	CHECK_ERR("epoll_pwait.mask_efault", syscall(SYS_epoll_pwait, ep2, evs, 4, 0, unmapped(), 8), EFAULT);
	struct timespec bad = { 0, 1000000000 }, neg = { -1, 0 }, zero = { 0, 0 };
	CHECK_ERR("epoll_pwait2.nsec", syscall(SYS_epoll_pwait2, ep2, evs, 4, &bad, NULL, 8), EINVAL);
	CHECK_ERR("epoll_pwait2.negative", syscall(SYS_epoll_pwait2, ep2, evs, 4, &neg, NULL, 8), EINVAL);
	CHECK_ERR("epoll_pwait2.timeout_efault", syscall(SYS_epoll_pwait2, ep2, evs, 4, unmapped(), NULL, 8), EFAULT);
	CHECK_EQ("epoll_pwait2.zero_timeout", syscall(SYS_epoll_pwait2, ep2, evs, 4, &zero, NULL, 8), 1);
	CHECK_ERR("epoll_pwait2.timeout_before_maxevents", syscall(SYS_epoll_pwait2, ep2, evs, 0, &bad, NULL, 8), EINVAL);

	close(file);
	close(reg);
	close(p[0]);
	close(p[1]);
	close(ep);
	close(ep2);
}

static long futex(void *uaddr, int op, long val, const void *timeout, void *uaddr2, long val3)
{
	return syscall(SYS_futex, uaddr, op, val, timeout, uaddr2, val3);
}

static void test_futex(void)
{
	static uint32_t word __attribute__((aligned(8))), word2;
	struct timespec bad = { 0, 1000000000 }, neg = { -1, 0 }, zero = { 0, 0 };
	word = 1;
	CHECK_ERR("futex.wait_bad_nsec", futex(&word, FUTEX_WAIT, 1, &bad, NULL, 0), EINVAL);
	CHECK_ERR("futex.wait_negative", futex(&word, FUTEX_WAIT, 1, &neg, NULL, 0), EINVAL);
	CHECK_ERR("futex.wait_timeout_efault", futex(&word, FUTEX_WAIT, 1, unmapped(), NULL, 0), EFAULT);
	CHECK_ERR("futex.timeout_before_word", futex(unmapped(), FUTEX_WAIT, 1, &bad, NULL, 0), EINVAL);
	CHECK_ERR("futex.wait_word_efault", futex(unmapped(), FUTEX_WAIT, 1, &zero, NULL, 0), EFAULT);
	CHECK_ERR("futex.wait_zero_timeout", futex(&word, FUTEX_WAIT, 1, &zero, NULL, 0), ETIMEDOUT);
	CHECK_ERR("futex.wait_mismatch_before_timeout", futex(&word, FUTEX_WAIT, 2, &zero, NULL, 0), EAGAIN);
	CHECK_ERR("futex.wait_bitset_zero", futex(&word, FUTEX_WAIT_BITSET, 1, &zero, NULL, 0), EINVAL);
	CHECK_ERR("futex.wake_bitset_zero", futex(&word, FUTEX_WAKE_BITSET, 1, NULL, NULL, 0), EINVAL);
	CHECK_EQ("futex.wake_none_waiting", futex(&word, FUTEX_WAKE, 1, NULL, NULL, 0), 0);
	CHECK_EQ("futex.wake_zero", futex(&word, FUTEX_WAKE, 0, NULL, NULL, 0), 0);
	CHECK_ERR("futex.wake_unaligned", futex((char *)&word + 1, FUTEX_WAKE, 1, NULL, NULL, 0), EINVAL);
	CHECK_ERR("futex.wake_clock_realtime_enosys", futex(&word, FUTEX_WAKE | FUTEX_CLOCK_REALTIME, 1, NULL, NULL, 0), ENOSYS);
	CHECK_ERR("futex.wait_bitset_realtime_zero_timeout",
		  futex(&word, FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME, 1, &zero, NULL, FUTEX_BITSET_MATCH_ANY), ETIMEDOUT);
	CHECK_ERR("futex.cmp_requeue_mismatch", futex(&word, FUTEX_CMP_REQUEUE, 1, (void *)1, &word2, 2), EAGAIN);
	CHECK_EQ("futex.cmp_requeue_match", futex(&word, FUTEX_CMP_REQUEUE, 1, (void *)1, &word2, 1), 0);
	CHECK_ERR("futex.cmp_requeue_negative_wake", futex(&word, FUTEX_CMP_REQUEUE, -1, (void *)1, &word2, 1), EINVAL);
	CHECK_ERR("futex.cmp_requeue_negative_requeue", futex(&word, FUTEX_CMP_REQUEUE, 1, (void *)-1L, &word2, 1), EINVAL);
	CHECK_ERR("futex.requeue_unaligned_target", futex(&word, FUTEX_REQUEUE, 1, (void *)1, (char *)&word2 + 2, 0), EINVAL);
	CHECK_EQ("futex.requeue_same_word", futex(&word, FUTEX_REQUEUE, 1, (void *)1, &word, 0), 0);
	CHECK_ERR("futex.bad_cmd_private", futex(&word, 99 | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0), ENOSYS);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	test_epoll();
	test_futex();
	return check_done();
}
