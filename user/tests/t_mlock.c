/*
 * t_mlock: mlock, mlock2, munlock, mlockall, munlockall. VmLck in
 * /proc/self/status follows what is locked (not counted twice, not
 * inherited by a fork child), locked pages are made present (VmRSS)
 * unless MLOCK_ONFAULT, MCL_FUTURE locks later mappings; the errors
 * (EINVAL flags, ENOMEM holes); as nobody, RLIMIT_MEMLOCK: ENOMEM past
 * it, EPERM at zero, mlockall(MCL_CURRENT) of a larger space ENOMEM, a
 * mapping under MCL_FUTURE past it EAGAIN.
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "probe.h"

#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 1
#endif
#ifndef MCL_ONFAULT
#define MCL_ONFAULT 4
#endif

/* a field of /proc/self/status in kB, or -1 */
static long status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	char line[256];
	long v = -1;
	size_t n = strlen(field);
	while (fgets(line, sizeof line, f))
		if (strncmp(line, field, n) == 0 && line[n] == ':')
			v = strtol(line + n + 1, NULL, 10);
	fclose(f);
	return v;
}

static void *anon(size_t n)
{
	return mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

static void limited(int out)
{
	char *m = anon(256 << 10);
	put(out, rc(mlock(m, 32 << 10)));
	put(out, rc(mlock(m + (64 << 10), 64 << 10))); /* 96 KiB > 64 */
	put(out, rc(mlock(m, 32 << 10)));              /* already locked: not counted again */
	put(out, rc(mlock(m, 64 << 10)));              /* 32 more: exactly the limit */
	put(out, rc(munlock(m, 256 << 10)));
	put(out, rc(mlockall(MCL_CURRENT)));
	put(out, rc(mlockall(MCL_FUTURE)));
	void *big = mmap(NULL, 128 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	put(out, big == MAP_FAILED ? errno : 0);
	void *small = mmap(NULL, 16 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	put(out, small == MAP_FAILED ? errno : 0);
	put(out, rc(munlockall()));
	struct rlimit zero = {0, 0};
	setrlimit(RLIMIT_MEMLOCK, &zero);
	put(out, rc(mlock(m, 4096)));
	put(out, rc(mlockall(MCL_FUTURE)));
	put(out, rc(munlock(m, 4096)));
}

int main(void)
{
	check_prog = "t_mlock";
	munlockall();
	long base = status_kb("VmLck");
	CHECK_EQ("vmlck.starts_at_zero", base, 0);

	char *m = anon(256 << 10);
	long rss0 = status_kb("VmRSS");
	CHECK_SYS("mlock", mlock(m, 64 << 10));
	CHECK_EQ("mlock.vmlck", status_kb("VmLck"), 64);
	CHECK("mlock.pages_present", status_kb("VmRSS") - rss0 >= 60);
	CHECK_SYS("mlock.again", mlock(m, 64 << 10));
	CHECK_EQ("mlock.not_twice", status_kb("VmLck"), 64);
	CHECK_SYS("mlock.unaligned", mlock(m + (128 << 10) + 100, 10));
	CHECK_EQ("mlock.unaligned_whole_page", status_kb("VmLck"), 68);

	pid_t pid = fork();
	if (pid == 0)
		_exit(status_kb("VmLck") == 0 ? 0 : 1);
	int st;
	waitpid(pid, &st, 0);
	CHECK("fork.child_not_locked", WIFEXITED(st) && WEXITSTATUS(st) == 0);

	CHECK_SYS("munlock.part", munlock(m + (32 << 10), 16 << 10));
	CHECK_EQ("munlock.part_vmlck", status_kb("VmLck"), 52);
	CHECK_SYS("munlock", munlock(m, 256 << 10));
	CHECK_EQ("munlock.vmlck", status_kb("VmLck"), 0);

	char *lazy = anon(128 << 10);
	long rss1 = status_kb("VmRSS");
	CHECK_SYS("mlock2.onfault", syscall(SYS_mlock2, lazy, 128 << 10, MLOCK_ONFAULT));
	CHECK_EQ("mlock2.onfault_vmlck", status_kb("VmLck"), 128);
	CHECK("mlock2.onfault_not_present", status_kb("VmRSS") - rss1 < 64);
	CHECK_ERR("mlock2.flags", syscall(SYS_mlock2, lazy, 4096, 2), EINVAL);
	munlock(lazy, 128 << 10);

	munmap(m + (64 << 10), 64 << 10);
	CHECK_ERR("mlock.hole", mlock(m, 256 << 10), ENOMEM);
	CHECK_ERR("munlock.hole", munlock(m, 256 << 10), ENOMEM);
	CHECK_ERR("mlockall.zero", mlockall(0), EINVAL);
	CHECK_ERR("mlockall.onfault_alone", mlockall(MCL_ONFAULT), EINVAL);
	CHECK_ERR("mlockall.unknown", mlockall(0x100), EINVAL);

	CHECK_SYS("mlockall.future", mlockall(MCL_FUTURE));
	long before = status_kb("VmLck");
	char *later = anon(96 << 10);
	CHECK("mlockall.future_mmap", later != MAP_FAILED);
	CHECK_EQ("mlockall.future_locked", status_kb("VmLck") - before, 96);
	CHECK_SYS("munlockall", munlockall());
	CHECK_EQ("munlockall.vmlck", status_kb("VmLck"), 0);
	CHECK_SYS("mlockall.current", mlockall(MCL_CURRENT | MCL_ONFAULT));
	CHECK("mlockall.current_vmlck", status_kb("VmLck") > 96);
	CHECK_SYS("munlockall.again", munlockall());
	CHECK_EQ("munlockall.again_vmlck", status_kb("VmLck"), 0);

	struct rlimit lim = {64 << 10, 64 << 10};
	CHECK_SYS("setrlimit", setrlimit(RLIMIT_MEMLOCK, &lim));
	int res[13];
	int got = probe(limited, 1, res, 13);
	CHECK_EQ("nobody.probe", got, 13);
	if (got == 13) {
		CHECK_EQ("nobody.within_limit", res[0], 0);
		CHECK_EQ("nobody.past_limit", res[1], ENOMEM);
		CHECK_EQ("nobody.relock_not_counted", res[2], 0);
		CHECK_EQ("nobody.up_to_limit", res[3], 0);
		CHECK_EQ("nobody.munlock", res[4], 0);
		CHECK_EQ("nobody.mlockall_current_too_big", res[5], ENOMEM);
		CHECK_EQ("nobody.mlockall_future", res[6], 0);
		CHECK_EQ("nobody.future_mmap_past_limit", res[7], EAGAIN);
		CHECK_EQ("nobody.future_mmap_within", res[8], 0);
		CHECK_EQ("nobody.munlockall", res[9], 0);
		CHECK_EQ("nobody.zero_limit", res[10], EPERM);
		CHECK_EQ("nobody.zero_limit_mlockall", res[11], EPERM);
		CHECK_EQ("nobody.munlock_needs_no_limit", res[12], 0);
	}
	return check_done();
}
