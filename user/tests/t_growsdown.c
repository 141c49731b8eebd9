/* t_growsdown: mappings that grow down (Linux's VM_GROWSDOWN). An mmap
 * with MAP_GROWSDOWN extends when a page just below it is touched, by
 * as much as the touch needs, and /proc/self/maps shows it bigger; it
 * stops short of the mapping below it by the stack guard gap (256 pages:
 * SIGSEGV there) and at RLIMIT_STACK; mprotect with PROT_GROWSDOWN
 * reaches down to its start, and refuses a mapping that does not grow;
 * the main stack takes PROT_GROWSDOWN too. */
#define _GNU_SOURCE
#include "check.h"

#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>

static long pg;
static sigjmp_buf env;

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(env, 1);
}

/* touch writes to p; 1 if it faulted with SIGSEGV */
static int touch(volatile char *p)
{
	if (sigsetjmp(env, 1))
		return 1;
	*p = 1;
	return 0;
}

/* the start of the /proc/self/maps line that holds addr, or 0 */
static unsigned long map_start(unsigned long addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi, found = 0;
	char line[512];
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo <= addr && addr < hi)
			found = lo;
	if (f)
		fclose(f);
	return found;
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	pg = sysconf(_SC_PAGESIZE);
	struct sigaction sa = {.sa_handler = on_segv, .sa_flags = SA_NODEFER};
	sigaction(SIGSEGV, &sa, NULL);
	static char altstack[65536];
	stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack};
	sigaltstack(&ss, NULL);

	/* a growing mapping with 1 MiB + the guard gap free below it */
	char *want = (char *)0x300000000000;
	char *g = mmap(want, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_GROWSDOWN | MAP_FIXED_NOREPLACE,
		       -1, 0);
	CHECK("map", g == want);
	CHECK_EQ("map.start", map_start((unsigned long)g), (unsigned long)g);
	CHECK_EQ("grow.one_page", touch(g - 1), 0);
	CHECK_EQ("grow.one_page_mapped", map_start((unsigned long)g), (unsigned long)(g - pg));
	CHECK_EQ("grow.64k_below", touch(g - 64 * 1024), 0);
	CHECK_EQ("grow.64k_mapped", map_start((unsigned long)g), (unsigned long)(g - 64 * 1024));

	/* a mapping below, closer than the guard gap: the growth stops */
	char *below = mmap(g - 256 * 1024 - 8 * pg, pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK("gap.below_mapped", below == g - 256 * 1024 - 8 * pg);
	CHECK_EQ("gap.refused", touch(below + 4 * pg), 1);
	CHECK_EQ("gap.not_grown", map_start((unsigned long)g), (unsigned long)(g - 64 * 1024));
	munmap(below, pg);

	/* PROT_GROWSDOWN reaches down to the start of the grown mapping */
	CHECK_SYS("mprotect.growsdown", mprotect(g + pg, pg, PROT_READ | PROT_GROWSDOWN));
	CHECK_EQ("mprotect.growsdown_reached_start", touch(g - 64 * 1024), 1);
	CHECK_EQ("mprotect.growsdown_above_untouched", touch(g + 2 * pg), 0);
	munmap(g - 64 * 1024, 64 * 1024 + 4 * pg);

	/* RLIMIT_STACK bounds the size it may reach */
	struct rlimit old, lim;
	getrlimit(RLIMIT_STACK, &old);
	lim = old;
	lim.rlim_cur = 16 * pg;
	CHECK_SYS("rlimit.set", setrlimit(RLIMIT_STACK, &lim));
	char *h = mmap(want, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_GROWSDOWN | MAP_FIXED_NOREPLACE,
		       -1, 0);
	CHECK("rlimit.map", h == want);
	CHECK_EQ("rlimit.within", touch(h - 12 * pg), 0);
	CHECK_EQ("rlimit.past", touch(h - 13 * pg), 1);
	setrlimit(RLIMIT_STACK, &old);
	munmap(h - 12 * pg, 16 * pg);

	/* a mapping that does not grow refuses PROT_GROWSDOWN; the stack takes it */
	char *plain = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK_ERR("mprotect.plain_refused", mprotect(plain, pg, PROT_READ | PROT_WRITE | PROT_GROWSDOWN), EINVAL);
	munmap(plain, pg);
	char local;
	char *sp_page = (char *)((unsigned long)&local & ~(unsigned long)(pg - 1));
	CHECK_SYS("mprotect.stack_growsdown", mprotect(sp_page, pg, PROT_READ | PROT_WRITE | PROT_GROWSDOWN));
	return check_done();
}
