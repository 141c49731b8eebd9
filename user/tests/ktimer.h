/*
 * ktimer.h: POSIX timers through the system calls themselves, with the
 * kernel's struct sigevent and timer ids (the C library's timer_t is its
 * own business), for the timer tests (t_ptimer, t_cputimer).
 */
#ifndef SHORTBREAD_KTIMER_H
#define SHORTBREAD_KTIMER_H

#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SIGEV_THREAD_ID
#define SIGEV_THREAD_ID 4
#endif

/* the kernel's struct sigevent */
struct ksigevent {
	union sigval value;
	int signo;
	int notify;
	int tid;
	char pad[44];
};

static inline int ktimer_create(clockid_t c, struct ksigevent *ev, int *id)
{
	return (int)syscall(SYS_timer_create, c, ev, id);
}

static inline int ktimer_settime(int id, int flags, const struct itimerspec *n, struct itimerspec *o)
{
	return (int)syscall(SYS_timer_settime, id, flags, n, o);
}

static inline int ktimer_gettime(int id, struct itimerspec *c) { return (int)syscall(SYS_timer_gettime, id, c); }
static inline int ktimer_getoverrun(int id) { return (int)syscall(SYS_timer_getoverrun, id); }
static inline int ktimer_delete(int id) { return (int)syscall(SYS_timer_delete, id); }

#endif
