/*
 * Shortbread's vDSO: the clock calls a program can make without
 * entering the kernel. Linux's x86-64 vDSO exports the same names at
 * version LINUX_2.6, which glibc, musl and Go look up.
 *
 * The time is computed from the TSC and the parameters in the [vvar]
 * page with the same integer arithmetic as kernel/wallclock/clock.go
 * (change both together), so a vDSO reading and a system call reading
 * agree to the nanosecond. Clocks this file does not serve (CPU-time
 * clocks, the alarm clocks, bad ids) and a TSC user code may not read
 * go to the system call.
 */
#include "vdso.h"

#define CLOCK_REALTIME 0
#define CLOCK_MONOTONIC 1
#define CLOCK_MONOTONIC_RAW 4
#define CLOCK_REALTIME_COARSE 5
#define CLOCK_MONOTONIC_COARSE 6
#define CLOCK_BOOTTIME 7
#define CLOCK_TAI 11

#define SYS_gettimeofday 96
#define SYS_time 201
#define SYS_clock_gettime 228
#define SYS_clock_getres 229
#define SYS_getcpu 309

#define FREQ_DIV (1000000ULL << 16)
#define SLEW_DIV 2000
#define SLEW_FREQ ((int64_t)(FREQ_DIV / SLEW_DIV))

struct timespec {
	int64_t tv_sec;
	int64_t tv_nsec;
};
struct timeval {
	int64_t tv_sec;
	int64_t tv_usec;
};
struct timezone {
	int tz_minuteswest;
	int tz_dsttime;
};

/* The data page, one page below the text (vdso.lds). */
extern const volatile char vvar_page[4096] __attribute__((visibility("hidden")));
#define VVAR ((const volatile struct vvar *)vvar_page)
#define VCPU ((const volatile struct vcpu *)(vvar_page + VVAR_CPU_OFF))

static inline long sys2(long nr, long a, long b)
{
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "0"(nr), "D"(a), "S"(b) : "rcx", "r11", "memory");
	return ret;
}

static inline long sys3(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "0"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return ret;
}

/* The TSC, read after earlier loads and before later ones. */
static inline uint64_t rdtsc_ordered(void)
{
	uint32_t lo, hi;
	__asm__ volatile("lfence; rdtsc; lfence" : "=a"(lo), "=d"(hi)::"memory");
	return (uint64_t)hi << 32 | lo;
}

/* a*b/d and its remainder, for a*b/d below 2^64 (one MUL, one DIV). */
static inline uint64_t muldiv(uint64_t a, uint64_t b, uint64_t d, uint64_t *rem)
{
	uint64_t q, r;
	__asm__("mulq %[b]\n\tdivq %[d]" : "=a"(q), "=&d"(r) : "0"(a), [b] "r"(b), [d] "r"(d) : "cc");
	*rem = r;
	return q;
}

/* toNanos in clock.go. */
static inline int64_t to_nanos(uint64_t c, uint64_t c0, uint64_t hz)
{
	uint64_t r;
	if ((int64_t)(c - c0) < 0)
		return 0;
	/* (c-c0)*1e9 / hz overflows 64 bits only after centuries: clamp as clock.go does. */
	if (((unsigned __int128)(c - c0) * 1000000000u) >> 64 >= hz)
		return INT64_MAX;
	return (int64_t)muldiv(c - c0, 1000000000u, hz, &r);
}

/* mulDivFloor in clock.go. */
static inline int64_t muldiv_floor(uint64_t a, int64_t b, uint64_t d)
{
	uint64_t ub = b < 0 ? -(uint64_t)b : (uint64_t)b, r;
	uint64_t q = muldiv(a, ub, d, &r);
	if (b < 0)
		return -(int64_t)(q + (r != 0));
	return (int64_t)q;
}

/* adjustment in clock.go. */
static inline int64_t adjustment(int64_t el, int64_t slew, int64_t freq)
{
	if (el <= 0)
		return 0;
	if (slew != 0) {
		uint64_t mag = slew < 0 ? -(uint64_t)slew : (uint64_t)slew;
		int64_t rate = slew < 0 ? freq - SLEW_FREQ : freq + SLEW_FREQ;
		unsigned __int128 end = (unsigned __int128)mag * SLEW_DIV;
		if ((unsigned __int128)(uint64_t)el < end)
			return muldiv_floor((uint64_t)el, rate, FREQ_DIV);
	}
	return slew + muldiv_floor((uint64_t)el, freq, FREQ_DIV);
}

/*
 * read_clock reads the clock of kind KIND_* in ns; it returns 0 when the
 * caller must make the system call instead.
 */
#define KIND_REAL 1
#define KIND_COARSE 2 /* at the last tick: CoarseTick in clock.go */
static inline int read_clock(int kind, int64_t *ns)
{
	const volatile struct vvar *v = VVAR;
	for (;;) {
		uint32_t seq = v->seq;
		if (seq & 1) {
			__asm__ volatile("pause");
			continue;
		}
		__asm__ volatile("" ::: "memory");
		if (v->mode != VVAR_MODE_COUNTER)
			return 0;
		uint64_t c0 = v->counter0, hz = v->hz;
		int64_t offset = v->offset, adj_at = v->adj_at, slew = v->slew, freq = v->freq;
		uint64_t c = rdtsc_ordered();
		if (v->seq != seq)
			continue;
		int64_t mono = to_nanos(c, c0, hz);
		if (kind & KIND_COARSE)
			mono -= mono % VVAR_COARSE_NS;
		*ns = (kind & KIND_REAL) ? mono + offset + adjustment(mono - adj_at, slew, freq) : mono;
		return 1;
	}
}

/* Which clock clk is (KIND_* bits), or -1 for the system call's. */
static inline int clock_kind(long clk)
{
	switch (clk) {
	case CLOCK_REALTIME:
	case CLOCK_TAI:
		return KIND_REAL;
	case CLOCK_REALTIME_COARSE:
		return KIND_REAL | KIND_COARSE;
	case CLOCK_MONOTONIC:
	case CLOCK_MONOTONIC_RAW:
	case CLOCK_BOOTTIME:
		return 0;
	case CLOCK_MONOTONIC_COARSE:
		return KIND_COARSE;
	}
	return -1;
}

/* Seconds and the rest, rounded down (the rest is never negative). */
static inline int64_t split(int64_t ns, int64_t unit, int64_t *rest)
{
	int64_t s = ns / unit, r = ns % unit;
	if (r < 0) {
		s--;
		r += unit;
	}
	*rest = r;
	return s;
}

int __vdso_clock_gettime(long clk, struct timespec *ts)
{
	int64_t ns, rest;
	int kind = clock_kind(clk);
	if (kind < 0 || !read_clock(kind, &ns))
		return (int)sys2(SYS_clock_gettime, clk, (long)ts);
	ts->tv_sec = split(ns, 1000000000, &rest);
	ts->tv_nsec = rest;
	return 0;
}

int __vdso_gettimeofday(struct timeval *tv, struct timezone *tz)
{
	int64_t ns, rest;
	if (tv) {
		if (!read_clock(KIND_REAL, &ns))
			return (int)sys2(SYS_gettimeofday, (long)tv, (long)tz);
		tv->tv_sec = split(ns, 1000000000, &rest);
		tv->tv_usec = rest / 1000;
	}
	if (tz) {
		tz->tz_minuteswest = 0;
		tz->tz_dsttime = 0;
	}
	return 0;
}

long __vdso_time(long *t)
{
	int64_t ns, rest, s;
	if (!read_clock(KIND_REAL, &ns))
		return sys2(SYS_time, (long)t, 0);
	s = split(ns, 1000000000, &rest);
	if (t)
		*t = s;
	return s;
}

int __vdso_clock_getres(long clk, struct timespec *res)
{
	int kind = clock_kind(clk);
	if (kind < 0)
		return (int)sys2(SYS_clock_getres, clk, (long)res);
	if (res) {
		/* the system call's answers: a tick for the coarse clocks, 1 ns for the rest */
		res->tv_sec = 0;
		res->tv_nsec = (kind & KIND_COARSE) ? VVAR_COARSE_NS : 1;
	}
	return 0;
}

/* The CPU (and node 0) from IA32_TSC_AUX, which the kernel sets to the CPU's number. */
long __vdso_getcpu(unsigned *cpu, unsigned *node, void *cache)
{
	uint32_t how = VCPU->how, aux;
	if (how & VCPU_RDPID) {
		uint64_t a;
		__asm__ volatile("rdpid %0" : "=r"(a));
		aux = (uint32_t)a;
	} else if (how & VCPU_RDTSCP) {
		__asm__ volatile("rdtscp" : "=c"(aux)::"rax", "rdx");
	} else {
		return sys3(SYS_getcpu, (long)cpu, (long)node, (long)cache);
	}
	if (cpu)
		*cpu = aux & 0xfff;
	if (node)
		*node = aux >> 12;
	return 0;
}

int clock_gettime(long, struct timespec *) __attribute__((weak, alias("__vdso_clock_gettime")));
int gettimeofday(struct timeval *, struct timezone *) __attribute__((weak, alias("__vdso_gettimeofday")));
long time(long *) __attribute__((weak, alias("__vdso_time")));
int clock_getres(long, struct timespec *) __attribute__((weak, alias("__vdso_clock_getres")));
long getcpu(unsigned *, unsigned *, void *) __attribute__((weak, alias("__vdso_getcpu")));
