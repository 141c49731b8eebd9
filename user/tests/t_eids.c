/*
 * t_eids: the error table of the credential calls (issue 22's audit, ids):
 * setuid/setgid, setreuid/setregid, setresuid/setresgid, setfsuid/setfsgid,
 * setgroups/getgroups and getresuid/getresgid. Each check is one condition
 * the Linux man page documents, with the errno Linux 6.1 returns, and the
 * IDs each call leaves behind for the transitions an unprivileged process
 * may make (to its real, effective or saved ID). Where Linux tests one
 * thing before another (the right to set groups before their number), a
 * check with both wrong pins which one wins. t_security, t_misc and
 * t_errors hold the conditions checked before this audit. All calls are
 * raw system calls in children (the C library's wrappers broadcast to
 * threads and some check arguments), so the test's own IDs never change.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "probe.h"

static void *unmapped(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(p, 4096);
	return p;
}

static long xsetresuid(long r, long e, long s) { return syscall(SYS_setresuid, r, e, s); }
static long xsetresgid(long r, long e, long s) { return syscall(SYS_setresgid, r, e, s); }
static long xsetreuid(long r, long e) { return syscall(SYS_setreuid, r, e); }
static long xsetregid(long r, long e) { return syscall(SYS_setregid, r, e); }
static long xsetuid(long u) { return syscall(SYS_setuid, u); }
static long xsetgid(long g) { return syscall(SYS_setgid, g); }
static long xsetfsuid(long u) { return syscall(SYS_setfsuid, u); }
static long xsetfsgid(long g) { return syscall(SYS_setfsgid, g); }
static long xsetgroups(long n, const gid_t *g) { return syscall(SYS_setgroups, n, g); }
static long xgetgroups(long n, gid_t *g) { return syscall(SYS_getgroups, n, g); }

/* real, effective and saved user IDs as one number: r*1e8 + e*1e4 + s
 * for IDs under 10000 */
static long uids(void)
{
	uid_t r, e, s;
	syscall(SYS_getresuid, &r, &e, &s);
	return (long)r * 100000000L + (long)e * 10000L + s;
}

static long gids(void)
{
	gid_t r, e, s;
	syscall(SYS_getresgid, &r, &e, &s);
	return (long)r * 100000000L + (long)e * 10000L + s;
}

/* as root */
static void root_child(int out)
{
	put(out, rc(xsetuid(-1)));
	put(out, rc(xsetgid(-1)));
	put(out, rc(xsetreuid(-1, -1)));
	put(out, rc(xsetresuid(-1, -1, -1)));
	put(out, rc(xsetresgid(-1, -1, -1)));
	put(out, rc(xsetregid(-1, -1)));
	put(out, rc(xsetresuid(-2, -1, -1))); /* 4294967294 is a valid ID */
	xsetresuid(0, 0, 0);
	put(out, rc(xsetgroups(65537, NULL)));
	put(out, rc(xsetgroups(-1, NULL)));
	put(out, rc(xsetgroups(1, unmapped())));
	gid_t bad[2] = { 5, (gid_t)-1 };
	put(out, rc(xsetgroups(2, bad)));
	gid_t unsorted[4] = { 7, 5, 6, 5 };
	put(out, rc(xsetgroups(4, unsorted)));
	gid_t got[8] = { 0 };
	put(out, (int)xgetgroups(8, got));
	put(out, got[0] == 5 && got[1] == 5 && got[2] == 6 && got[3] == 7);
	put(out, rc(xgetgroups(-1, got)));
	put(out, rc(xgetgroups(4, unmapped())));
	put(out, (int)xgetgroups(0, unmapped()));
	put(out, rc(xgetgroups(3, got)));
	put(out, rc(syscall(SYS_getresuid, unmapped(), unmapped(), unmapped())));
	put(out, rc(syscall(SYS_getresgid, NULL, NULL, NULL)));

	/* the file-system IDs: the old one is returned, root may pick any */
	put(out, (int)xsetfsuid(1234));
	put(out, (int)xsetfsuid(-1));
	put(out, (int)xsetfsgid(4321));
	put(out, (int)xsetfsgid(-1));
	/* changing the effective ID moves the file-system ID with it */
	xsetresuid(0, 77, 0);
	put(out, (int)xsetfsuid(-1));
}

/* a process with distinct real, effective and saved IDs (1000, 2000,
 * 3000) moves between them; after each step, the IDs it has */
#define IDS(r, e, s) ((r) * 100000000L + (e) * 10000L + (s))

static void ids_child(int out)
{
	if (xsetresgid(1000, 2000, 3000) || xsetresuid(1000, 2000, 3000))
		_exit(97);
	put(out, rc(xsetuid(0)));
	put(out, rc(xsetreuid(3000, -1))); /* ruid: old ruid or euid only */
	put(out, rc(xsetreuid(-1, 3000))); /* euid to the saved ID */
	put(out, uids() == IDS(1000, 3000, 3000)); /* euid not ruid: suid = euid */
	put(out, rc(xsetuid(1000)));
	put(out, uids() == IDS(1000, 1000, 3000)); /* only euid */
	put(out, rc(xsetreuid(-1, 1000)));
	put(out, uids() == IDS(1000, 1000, 3000)); /* euid is ruid: suid kept */
	put(out, rc(xsetreuid(3000, 1000)));	   /* 3000 neither ruid nor euid */
	put(out, rc(xsetreuid(-1, 3000)));
	put(out, rc(xsetreuid(3000, 1000))); /* swap */
	put(out, uids() == IDS(3000, 1000, 1000)); /* ruid set: suid = euid */
	put(out, rc(xsetresuid(-1, -1, 3000)));
	put(out, rc(xsetresuid(5000, -1, -1)));
	put(out, uids() == IDS(3000, 1000, 3000));
	put(out, (int)xsetfsuid(0));  /* refused: the old fsuid comes back */
	put(out, (int)xsetfsuid(-1)); /* still 1000 */
	put(out, rc(xsetresgid(2000, 1000, 3000))); /* a permutation */
	put(out, gids() == IDS(2000, 1000, 3000));
	put(out, (int)xsetfsgid(3000)); /* the saved gid: allowed */
	put(out, (int)xsetfsgid(-1));
	put(out, rc(xsetregid(1000, -1))); /* rgid to egid */
	put(out, gids() == IDS(1000, 1000, 1000)); /* rgid set: sgid = egid */
	put(out, rc(xsetgid(2000)));
	put(out, (int)xsetfsgid(-1)); /* moved with egid */
}

/* as nobody */
static void nobody_child(int out)
{
	put(out, rc(xsetreuid(0, -1)));
	put(out, rc(xsetresuid(-1, -1, 0)));
	put(out, rc(xsetregid(-1, 0)));
	put(out, rc(xsetresgid(0, -1, -1)));
	put(out, rc(xsetgroups(65537, NULL)));
	put(out, rc(xsetgroups(0, NULL)));
	put(out, rc(xsetuid(65534)));
	put(out, rc(xsetresuid(65534, 65534, 65534)));
	put(out, rc(xsetuid(-1)));
	put(out, (int)xgetgroups(0, NULL));
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	int r[40];

	CHECK_EQ("root.results", probe(root_child, 0, r, 25), 25);
	CHECK_EQ("setuid.minus1_einval", r[0], EINVAL);
	CHECK_EQ("setgid.minus1_einval", r[1], EINVAL);
	CHECK_EQ("setreuid.both_minus1_ok", r[2], 0);
	CHECK_EQ("setresuid.all_minus1_ok", r[3], 0);
	CHECK_EQ("setresgid.all_minus1_ok", r[4], 0);
	CHECK_EQ("setregid.both_minus1_ok", r[5], 0);
	CHECK_EQ("setresuid.minus2_valid", r[6], 0);
	CHECK_EQ("setgroups.past_ngroups_max", r[7], EINVAL);
	CHECK_EQ("setgroups.negative", r[8], EINVAL);
	CHECK_EQ("setgroups.efault", r[9], EFAULT);
	CHECK_EQ("setgroups.minus1_gid_einval", r[10], EINVAL);
	CHECK_EQ("setgroups.duplicates_ok", r[11], 0);
	CHECK_EQ("getgroups.count", r[12], 4);
	CHECK_EQ("getgroups.sorted", r[13], 1);
	CHECK_EQ("getgroups.negative", r[14], EINVAL);
	CHECK_EQ("getgroups.efault", r[15], EFAULT);
	CHECK_EQ("getgroups.size0_writes_nothing", r[16], 4);
	CHECK_EQ("getgroups.too_small", r[17], EINVAL);
	CHECK_EQ("getresuid.efault", r[18], EFAULT);
	CHECK_EQ("getresgid.null_efault", r[19], EFAULT);
	CHECK_EQ("setfsuid.root_returns_old", r[20], 0);
	CHECK_EQ("setfsuid.root_set", r[21], 1234);
	CHECK_EQ("setfsgid.root_returns_old", r[22], 0);
	CHECK_EQ("setfsgid.root_set", r[23], 4321);
	CHECK_EQ("setfsuid.follows_euid", r[24], 77);

	CHECK_EQ("ids.results", probe(ids_child, 0, r, 25), 25);
	CHECK_EQ("setuid.unprivileged_to_0", r[0], EPERM);
	CHECK_EQ("setreuid.ruid_to_saved_eperm", r[1], EPERM);
	CHECK_EQ("setreuid.euid_to_saved", r[2], 0);
	CHECK_EQ("setreuid.saved_follows_euid", r[3], 1);
	CHECK_EQ("setuid.unprivileged_to_ruid", r[4], 0);
	CHECK_EQ("setuid.unprivileged_sets_euid_only", r[5], 1);
	CHECK_EQ("setreuid.euid_to_ruid", r[6], 0);
	CHECK_EQ("setreuid.saved_kept_when_euid_is_ruid", r[7], 1);
	CHECK_EQ("setreuid.ruid_neither_eperm", r[8], EPERM);
	CHECK_EQ("setreuid.euid_to_saved_again", r[9], 0);
	CHECK_EQ("setreuid.swap", r[10], 0);
	CHECK_EQ("setreuid.swapped_saved_follows", r[11], 1);
	CHECK_EQ("setresuid.saved_to_ruid", r[12], 0);
	CHECK_EQ("setresuid.unheld_eperm", r[13], EPERM);
	CHECK_EQ("setresuid.unchanged_after_eperm", r[14], 1);
	CHECK_EQ("setfsuid.refused_returns_old", r[15], 1000);
	CHECK_EQ("setfsuid.refused_unchanged", r[16], 1000);
	CHECK_EQ("setresgid.permute", r[17], 0);
	CHECK_EQ("setresgid.permuted", r[18], 1);
	CHECK_EQ("setfsgid.to_saved_returns_old", r[19], 1000);
	CHECK_EQ("setfsgid.to_saved_set", r[20], 3000);
	CHECK_EQ("setregid.rgid_to_egid", r[21], 0);
	CHECK_EQ("setregid.saved_follows", r[22], 1);
	CHECK_EQ("setgid.unheld_eperm", r[23], EPERM);
	CHECK_EQ("setfsgid.follows_egid", r[24], 1000);

	CHECK_EQ("nobody.results", probe(nobody_child, 1, r, 10), 10);
	CHECK_EQ("setreuid.nobody_to_root_eperm", r[0], EPERM);
	CHECK_EQ("setresuid.nobody_saved_root_eperm", r[1], EPERM);
	CHECK_EQ("setregid.nobody_eperm", r[2], EPERM);
	CHECK_EQ("setresgid.nobody_eperm", r[3], EPERM);
	CHECK_EQ("setgroups.nobody_eperm_before_einval", r[4], EPERM);
	CHECK_EQ("setgroups.nobody_clear_eperm", r[5], EPERM);
	CHECK_EQ("setuid.nobody_to_self_ok", r[6], 0);
	CHECK_EQ("setresuid.nobody_to_self_ok", r[7], 0);
	CHECK_EQ("setuid.nobody_minus1_einval", r[8], EINVAL);
	CHECK_EQ("getgroups.nobody_none", r[9], 0);
	return check_done();
}
