/*
 * t_vdso: the vDSO. The kernel maps an ELF shared object into every
 * process and names it in AT_SYSINFO_EHDR; this test finds it there and
 * in /proc/self/maps, resolves __vdso_clock_gettime, __vdso_gettimeofday,
 * __vdso_time, __vdso_clock_getres and __vdso_getcpu at version
 * LINUX_2.6 through its DT_HASH, DT_SYMTAB and version tables (as musl
 * does), and checks that the vDSO's clocks and the system calls'
 * interleave without going backwards: on one thread, between two
 * threads under a lock (on different CPUs when there are two), and
 * while adjtimex slews and retunes the clock. gettimeofday and time must
 * agree with clock_gettime, clock_getres with the system call, clocks
 * the vDSO does not serve must reach the system call (CPU clocks, bad
 * ids: -EINVAL), and musl's own clock_gettime must call the vDSO: with
 * the vDSO's text made inaccessible it faults there. getcpu through the
 * vDSO and musl's sched_getcpu must name the CPU the system call names.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timex.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"

typedef int (*cgt_fn)(clockid_t, struct timespec *);
typedef int (*gtod_fn)(struct timeval *, struct timezone *);
typedef time_t (*time_fn)(time_t *);
typedef long (*getcpu_fn)(unsigned *, unsigned *, void *);

static cgt_fn v_gettime, v_getres;
static gtod_fn v_gettimeofday;
static time_fn v_time;
static getcpu_fn v_getcpu;

/* The vDSO image: its load bias and dynamic tables. */
static struct {
	uintptr_t bias;
	const Elf64_Sym *syms;
	const char *strs;
	const Elf64_Word *hash;
	const Elf64_Versym *versym;
	const Elf64_Verdef *verdef;
} vd;

static int vdso_open(const Elf64_Ehdr *eh)
{
	const Elf64_Phdr *ph = (const void *)((const char *)eh + eh->e_phoff);
	const Elf64_Dyn *dyn = NULL;
	int have_load = 0;
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && !have_load) {
			vd.bias = (uintptr_t)eh + ph[i].p_offset - ph[i].p_vaddr;
			have_load = 1;
		} else if (ph[i].p_type == PT_DYNAMIC) {
			dyn = (const void *)((const char *)eh + ph[i].p_offset);
		}
	}
	if (!have_load || !dyn)
		return 0;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		void *p = (void *)(vd.bias + dyn->d_un.d_ptr);
		switch (dyn->d_tag) {
		case DT_SYMTAB: vd.syms = p; break;
		case DT_STRTAB: vd.strs = p; break;
		case DT_HASH: vd.hash = p; break;
		case DT_VERSYM: vd.versym = p; break;
		case DT_VERDEF: vd.verdef = p; break;
		}
	}
	return vd.syms && vd.strs && vd.hash;
}

/* Whether symbol i's version (through DT_VERSYM/DT_VERDEF) is want. */
static int vdso_version(int i, const char *want)
{
	if (!vd.versym || !vd.verdef)
		return 1; /* no versions: any will do, as musl decides */
	int idx = vd.versym[i] & 0x7fff;
	for (const Elf64_Verdef *d = vd.verdef;; d = (const void *)((const char *)d + d->vd_next)) {
		if (!(d->vd_flags & VER_FLG_BASE) && d->vd_ndx == idx) {
			const Elf64_Verdaux *a = (const void *)((const char *)d + d->vd_aux);
			return strcmp(vd.strs + a->vda_name, want) == 0;
		}
		if (!d->vd_next)
			return 0;
	}
}

static void *vdso_sym(const char *name)
{
	Elf64_Word nsyms = vd.hash[1];
	for (Elf64_Word i = 1; i < nsyms; i++) {
		const Elf64_Sym *s = &vd.syms[i];
		if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF)
			continue;
		if (strcmp(vd.strs + s->st_name, name) == 0 && vdso_version(i, "LINUX_2.6"))
			return (void *)(vd.bias + s->st_value);
	}
	return NULL;
}

/* The [vdso] and [vvar] lines of /proc/self/maps. */
static int maps_find(const char *name, uintptr_t *lo, uintptr_t *hi, char perm[5])
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int found = 0;
	while (f && fgets(line, sizeof line, f))
		if (strstr(line, name) && sscanf(line, "%lx-%lx %4s", lo, hi, perm) == 3)
			found = 1;
	if (f)
		fclose(f);
	return found;
}

static int64_t ns_of(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

static int64_t sys_ns(clockid_t c)
{
	struct timespec ts;
	syscall(SYS_clock_gettime, c, &ts);
	return ns_of(&ts);
}

static int64_t vdso_ns(clockid_t c)
{
	struct timespec ts;
	v_gettime(c, &ts);
	return ns_of(&ts);
}

static const struct {
	clockid_t id;
	const char *name;
} clocks[] = {
	{CLOCK_MONOTONIC, "monotonic"},
	{CLOCK_REALTIME, "realtime"},
	{CLOCK_BOOTTIME, "boottime"},
	{CLOCK_MONOTONIC_RAW, "monotonic_raw"},
	{CLOCK_MONOTONIC_COARSE, "monotonic_coarse"},
	{CLOCK_REALTIME_COARSE, "realtime_coarse"},
};
#define NCLOCKS (sizeof clocks / sizeof clocks[0])

/* One thread: vDSO, system call, vDSO, ... on clock c, n times; returns
 * the number of readings that went backwards and the last step back. */
static long interleave(clockid_t c, int n, int64_t *back)
{
	long bad = 0;
	int64_t prev = vdso_ns(c);
	for (int i = 0; i < n; i++) {
		int64_t t = (i & 1) ? vdso_ns(c) : sys_ns(c);
		if (t < prev) {
			bad++;
			*back = prev - t;
		}
		prev = t;
	}
	return bad;
}

/* Two threads take turns under a lock reading clock clk, one by the
 * vDSO, the other by the system call (and the other way round every
 * other time): each reading must not be earlier than the last one either
 * thread took. */
static struct {
	pthread_mutex_t mu;
	clockid_t clk;
	int64_t last;
	long bad, rounds;
	int64_t back;
} shared = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void *turns(void *arg)
{
	long who = (long)arg;
	for (int i = 0; i < 20000; i++) {
		pthread_mutex_lock(&shared.mu);
		int64_t t = ((i + who) & 1) ? vdso_ns(shared.clk) : sys_ns(shared.clk);
		if (t < shared.last) {
			shared.bad++;
			shared.back = shared.last - t;
		}
		shared.last = t;
		shared.rounds++;
		pthread_mutex_unlock(&shared.mu);
		if (!(i & 63))
			sched_yield(); /* let the other thread have turns, also on 1 CPU */
	}
	return NULL;
}

static void two_threads(const char *name, clockid_t c)
{
	pthread_t a, b;
	shared.clk = c;
	shared.last = INT64_MIN;
	shared.bad = shared.rounds = shared.back = 0;
	pthread_create(&a, NULL, turns, (void *)0L);
	pthread_create(&b, NULL, turns, (void *)1L);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	char n[64];
	snprintf(n, sizeof n, "threads.%s", name);
	check_report(n, shared.bad == 0 && shared.rounds == 40000, "%ld of %ld readings went back (last by %lld ns)",
		     shared.bad, shared.rounds, (long long)shared.back);
}

/* A thread that keeps changing the clock's rate: slews each way
 * (adjtime) and frequency corrections (ADJ_FREQUENCY), until stop. */
static volatile int stop_tuning;
static long tunings;
static void *tune(void *arg)
{
	(void)arg;
	for (long i = 0; !stop_tuning; i++) {
		struct timeval d = {0, (i & 1) ? 200000 : -200000};
		adjtime(&d, NULL);
		struct timex tx = {.modes = ADJ_FREQUENCY, .freq = (i % 3 - 1) * (400L << 16)};
		adjtimex(&tx);
		tunings++;
		sched_yield();
	}
	return NULL;
}

/* The system call's CPU. */
static unsigned sys_cpu(void)
{
	unsigned c = ~0u;
	syscall(SYS_getcpu, &c, NULL, NULL);
	return c;
}

/* getcpu through the vDSO (and musl's sched_getcpu, which calls it)
 * agrees with the system call on a thread that stays put: pinned to
 * each CPU in turn (Linux moves it there; a kernel that does not pin
 * still runs it somewhere), a vDSO reading between two system-call
 * readings that agree must give their CPU. A thread can move away and
 * back between the two, so a disagreement is retried; a CPU that
 * disagrees three times running is a wrong answer. */
static void getcpu_agrees(long ncpu)
{
	cpu_set_t all;
	if (sched_getaffinity(0, sizeof all, &all) != 0) {
		check_report("getcpu.vs_syscall", 0, "sched_getaffinity: %s", strerror(errno));
		return;
	}
	long trials = 0, consistent = 0, wrong = 0, seen = 0;
	char detail[160] = "";
	for (long k = 0; k < ncpu; k++) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(k, &one);
		sched_setaffinity(0, sizeof one, &one);
		for (int i = 0; i < 300; i++, trials++) {
			int misses = 0;
			for (int attempt = 0; attempt < 20 && misses < 3; attempt++) {
				unsigned cpu = ~0u, node = ~0u;
				unsigned a = sys_cpu();
				long r = v_getcpu(&cpu, &node, NULL);
				int lib = sched_getcpu();
				unsigned b = sys_cpu();
				if (a != b)
					continue; /* moved: try again */
				consistent++;
				seen |= 1L << (a & 31);
				if (r == 0 && cpu == a && node == 0 && lib == (int)a)
					break;
				if (++misses == 3) {
					wrong++;
					snprintf(detail, sizeof detail, "on CPU %u: vDSO %ld cpu %u node %u, sched_getcpu %d", a, r,
						 cpu, node, lib);
				}
			}
		}
	}
	sched_setaffinity(0, sizeof all, &all);
	check_report("getcpu.vs_syscall", wrong == 0 && consistent >= trials / 2,
		     "%ld of %ld trials wrong (%s), %ld consistent readings, CPUs seen %#lx", wrong, trials, detail,
		     consistent, seen);
}

static sigjmp_buf fault_jmp;
static volatile uintptr_t fault_addr;
static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	fault_addr = (uintptr_t)si->si_addr;
	siglongjmp(fault_jmp, 1);
}

int main(void)
{
	check_start("t_vdso");
	const Elf64_Ehdr *eh = (const void *)getauxval(AT_SYSINFO_EHDR);
	if (!CHECK("auxv.sysinfo_ehdr", eh != NULL))
		return check_done();
	CHECK("elf.magic", memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64);
	CHECK_EQ("elf.type_dyn", eh->e_type, ET_DYN);
	CHECK_EQ("elf.machine", eh->e_machine, EM_X86_64);

	uintptr_t lo, hi;
	char perm[5];
	if (CHECK("maps.vdso", maps_find("[vdso]", &lo, &hi, perm))) {
		CHECK_EQ("maps.vdso_at_ehdr", lo, (uintptr_t)eh);
		CHECK_STR("maps.vdso_perm", perm, "r-xp");
	}
	if (CHECK("maps.vvar", maps_find("[vvar]", &lo, &hi, perm)))
		CHECK("maps.vvar_readonly", perm[1] == '-' && perm[2] == '-');
	if (!CHECK("elf.dynamic", vdso_open(eh)))
		return check_done();

	v_gettime = (cgt_fn)vdso_sym("__vdso_clock_gettime");
	v_getres = (cgt_fn)vdso_sym("__vdso_clock_getres");
	v_gettimeofday = (gtod_fn)vdso_sym("__vdso_gettimeofday");
	v_time = (time_fn)vdso_sym("__vdso_time");
	v_getcpu = (getcpu_fn)vdso_sym("__vdso_getcpu");
	CHECK("sym.clock_gettime", v_gettime != NULL);
	CHECK("sym.clock_getres", v_getres != NULL);
	CHECK("sym.gettimeofday", v_gettimeofday != NULL);
	CHECK("sym.time", v_time != NULL);
	CHECK("sym.getcpu", v_getcpu != NULL);
	CHECK("sym.no_such_version", vdso_version(1, "LINUX_9.9") == 0);
	if (!v_gettime || !v_getres || !v_gettimeofday || !v_time || !v_getcpu)
		return check_done();

	/* Interleaved on one thread. */
	for (size_t i = 0; i < NCLOCKS; i++) {
		int64_t back = 0;
		long bad = interleave(clocks[i].id, 20000, &back);
		char n[64];
		snprintf(n, sizeof n, "interleave.%s", clocks[i].name);
		check_report(n, bad == 0, "%ld readings went back (last by %lld ns)", bad, (long long)back);
	}
	int64_t m1 = vdso_ns(CLOCK_MONOTONIC), s1 = sys_ns(CLOCK_MONOTONIC);
	CHECK("monotonic.close", s1 >= m1 && s1 - m1 < 5000000000LL);
	int64_t r1 = vdso_ns(CLOCK_REALTIME);
	CHECK("realtime.after_2020", r1 > 1577836800LL * 1000000000);

	/* Between two threads (CPUs). */
	two_threads("monotonic", CLOCK_MONOTONIC);
	two_threads("realtime", CLOCK_REALTIME);
	two_threads("boottime", CLOCK_BOOTTIME);

	/* While the clock's rate changes under the readers (root only). */
	if (geteuid() == 0) {
		pthread_t tuner;
		stop_tuning = 0;
		pthread_create(&tuner, NULL, tune, NULL);
		int64_t back = 0;
		long bad = 0;
		for (int round = 0; round < 20; round++)
			bad += interleave(CLOCK_REALTIME, 2000, &back);
		two_threads("realtime_tuning", CLOCK_REALTIME);
		stop_tuning = 1;
		pthread_join(tuner, NULL);
		check_report("tuning.interleave", bad == 0 && tunings > 0, "%ld readings went back (last by %lld ns), %ld tunings",
			     bad, (long long)back, tunings);
		struct timeval zero = {0, 0};
		adjtime(&zero, NULL);
		struct timex tx = {.modes = ADJ_FREQUENCY, .freq = 0};
		CHECK_SYS("tuning.reset", adjtimex(&tx));
	}

	/* gettimeofday and time against clock_gettime, both ways. */
	struct timeval tv1, tv2, tvs;
	struct timespec ts;
	v_gettimeofday(&tv1, NULL);
	syscall(SYS_gettimeofday, &tvs, NULL);
	v_gettimeofday(&tv2, NULL);
	int64_t u1 = tv1.tv_sec * 1000000LL + tv1.tv_usec, us = tvs.tv_sec * 1000000LL + tvs.tv_usec,
		u2 = tv2.tv_sec * 1000000LL + tv2.tv_usec;
	CHECK("gettimeofday.interleave", u1 <= us && us <= u2 && u2 - u1 < 5000000);
	CHECK("gettimeofday.usec_range", tv1.tv_usec >= 0 && tv1.tv_usec < 1000000);
	struct timezone tz = {123, 456};
	CHECK_EQ("gettimeofday.tz_only", v_gettimeofday(NULL, &tz), 0);
	struct timezone tzs = {123, 456};
	syscall(SYS_gettimeofday, NULL, &tzs);
	CHECK("gettimeofday.tz_as_syscall", tz.tz_minuteswest == tzs.tz_minuteswest && tz.tz_dsttime == tzs.tz_dsttime);
	v_gettime(CLOCK_REALTIME, &ts);
	int64_t real = ns_of(&ts);
	v_gettimeofday(&tv2, NULL);
	u2 = tv2.tv_sec * 1000000LL + tv2.tv_usec;
	CHECK("gettimeofday.vs_clock_gettime", u2 >= real / 1000 - 20000 && u2 - real / 1000 < 5000000);
	time_t t0 = v_time(NULL), tout = 0;
	time_t ts1 = syscall(SYS_time, NULL);
	time_t t1 = v_time(&tout);
	CHECK("time.interleave", t0 <= ts1 && ts1 <= t1 && t1 - t0 < 5);
	CHECK_EQ("time.stores", tout, t1);
	v_gettimeofday(&tv1, NULL);
	time_t t2 = v_time(NULL);
	/* time() may be a coarse clock (Linux's is the tick's): at most a tick behind. */
	CHECK("time.vs_gettimeofday", t2 <= tv1.tv_sec + 1 && t2 >= tv1.tv_sec - 1);

	/* clock_getres as the system call answers. */
	for (size_t i = 0; i < NCLOCKS; i++) {
		struct timespec a = {-1, -1}, b = {-2, -2};
		int ra = v_getres(clocks[i].id, &a);
		syscall(SYS_clock_getres, clocks[i].id, &b);
		char n[64];
		snprintf(n, sizeof n, "getres.%s", clocks[i].name);
		check_report(n, ra == 0 && a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec,
			     "vdso %d {%ld,%ld}, syscall {%ld,%ld}", ra, (long)a.tv_sec, a.tv_nsec, (long)b.tv_sec, b.tv_nsec);
	}
	CHECK_EQ("getres.null", v_getres(CLOCK_MONOTONIC, NULL), 0);

	/* Clocks the vDSO passes to the system call. */
	CHECK_EQ("fallback.bad_clock", v_gettime(12345, &ts), -EINVAL);
	CHECK_EQ("fallback.bad_clock_getres", v_getres(12345, &ts), -EINVAL);
	CHECK_EQ("fallback.process_cputime", v_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts), 0);
	CHECK("fallback.cputime_value", ts.tv_sec >= 0 && ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000);
	CHECK_EQ("fallback.efault", v_gettime(CLOCK_PROCESS_CPUTIME_ID, (struct timespec *)8), -EFAULT);

	/* getcpu. */
	unsigned cpu = ~0u, node = ~0u;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	CHECK_EQ("getcpu.ret", v_getcpu(&cpu, &node, NULL), 0);
	CHECK("getcpu.range", cpu < (unsigned)ncpu);
	CHECK_EQ("getcpu.node", node, 0);
	CHECK_EQ("getcpu.null_args", v_getcpu(NULL, NULL, NULL), 0);
	getcpu_agrees(ncpu);

	/* musl's clock_gettime, gettimeofday and time call the vDSO: with
	 * its text inaccessible, each faults inside it. */
	struct sigaction sa = {.sa_sigaction = on_segv, .sa_flags = SA_SIGINFO | SA_NODEFER};
	struct sigaction old;
	sigaction(SIGSEGV, &sa, &old);
	uintptr_t vlo = 0, vhi = 0;
	maps_find("[vdso]", &vlo, &vhi, perm);
	const char *what[] = {"libc.clock_gettime", "libc.gettimeofday", "libc.time"};
	for (int i = 0; i < 3; i++) {
		fault_addr = 0;
		if (mprotect((void *)vlo, vhi - vlo, PROT_NONE) != 0) {
			check_report(what[i], 0, "mprotect of the vDSO: %s", strerror(errno));
			continue;
		}
		if (sigsetjmp(fault_jmp, 1) == 0) {
			if (i == 0)
				clock_gettime(CLOCK_MONOTONIC, &ts);
			else if (i == 1)
				gettimeofday(&tv1, NULL);
			else
				time(NULL);
		}
		mprotect((void *)vlo, vhi - vlo, PROT_READ | PROT_EXEC);
		check_report(what[i], fault_addr >= vlo && fault_addr < vhi, "no fault in the vDSO [%#lx, %#lx): si_addr %#lx",
			     (unsigned long)vlo, (unsigned long)vhi, (unsigned long)fault_addr);
	}
	sigaction(SIGSEGV, &old, NULL);
	CHECK_EQ("libc.after_restore", clock_gettime(CLOCK_MONOTONIC, &ts), 0);

	/* A fork child has it too, at the same place. */
	pid_t pid = fork();
	if (pid == 0) {
		struct timespec c;
		_exit(getauxval(AT_SYSINFO_EHDR) == (unsigned long)eh && v_gettime(CLOCK_MONOTONIC, &c) == 0 ? 0 : 1);
	}
	int st = -1;
	waitpid(pid, &st, 0);
	CHECK_EQ("fork.child_uses_it", st, 0);
	return check_done();
}
