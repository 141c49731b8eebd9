/*
 * t_cap: capget/capset (root's full sets, v1/v3 headers, the version
 * written back for a bad one, EINVAL/ESRCH/EPERM, nobody's empty sets),
 * personality (query, set, fork keeps it) and membarrier (QUERY, the
 * registration the private commands need, the global command, EINVAL).
 */
#define _GNU_SOURCE
#include <sys/personality.h>
#include <sys/syscall.h>

#include "probe.h"

/* include/uapi/linux/capability.h (musl has no kernel headers) */
#define _LINUX_CAPABILITY_VERSION_1 0x19980330
#define _LINUX_CAPABILITY_VERSION_3 0x20080522
struct __user_cap_header_struct {
	unsigned version;
	int pid;
};
struct __user_cap_data_struct {
	unsigned effective, permitted, inheritable;
};

#define MB_QUERY 0
#define MB_GLOBAL 1
#define MB_PRIVATE_EXPEDITED 8
#define MB_REGISTER_PRIVATE_EXPEDITED 16
#define MB_PRIVATE_EXPEDITED_SYNC_CORE 32
#define MB_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE 64

static long capget_(struct __user_cap_header_struct *h, struct __user_cap_data_struct *d)
{
	return syscall(SYS_capget, h, d);
}

static long capset_(struct __user_cap_header_struct *h, struct __user_cap_data_struct *d)
{
	return syscall(SYS_capset, h, d);
}

static void nobody(int out)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	put(out, rc(capget_(&h, d)));
	put(out, d[0].effective | d[1].effective | d[0].permitted | d[1].permitted);
	d[0].effective = d[0].permitted = 1; /* CAP_CHOWN */
	put(out, rc(capset_(&h, d)));
}

int main(void)
{
	check_prog = "t_cap";
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	memset(d, 0x55, sizeof d);
	CHECK_SYS("capget.v3", capget_(&h, d));
	CHECK_EQ("capget.effective_low", d[0].effective, 0xffffffff);
	CHECK("capget.effective_high", d[1].effective >= 0x1ff && (d[1].effective & (d[1].effective + 1)) == 0);
	CHECK_EQ("capget.permitted", d[0].permitted, 0xffffffff);
	CHECK_EQ("capget.permitted_high", d[1].permitted, d[1].effective);
	CHECK_EQ("capget.inheritable", d[0].inheritable | d[1].inheritable, 0);
	CHECK_SYS("capset.same", capset_(&h, d));

	struct __user_cap_header_struct h1 = {_LINUX_CAPABILITY_VERSION_1, 0};
	struct __user_cap_data_struct one[2];
	memset(one, 0x55, sizeof one);
	CHECK_SYS("capget.v1", capget_(&h1, one));
	CHECK_EQ("capget.v1_one_word", one[0].effective, 0xffffffff);
	CHECK_EQ("capget.v1_second_untouched", one[1].effective, 0x55555555);

	struct __user_cap_header_struct bad = {0x12345678, 0};
	CHECK_ERR("capget.bad_version", capget_(&bad, d), EINVAL);
	CHECK_EQ("capget.version_written_back", bad.version, _LINUX_CAPABILITY_VERSION_3);
	bad.version = 1;
	CHECK_EQ("capget.probe_version", capget_(&bad, NULL), 0);
	CHECK_EQ("capget.probe_written_back", bad.version, _LINUX_CAPABILITY_VERSION_3);
	bad.version = 1;
	CHECK_ERR("capset.bad_version", capset_(&bad, d), EINVAL);
	struct __user_cap_header_struct neg = {_LINUX_CAPABILITY_VERSION_3, -1};
	CHECK_ERR("capget.negative_pid", capget_(&neg, d), EINVAL);
	struct __user_cap_header_struct none = {_LINUX_CAPABILITY_VERSION_3, 999999};
	CHECK_ERR("capget.no_such_pid", capget_(&none, d), ESRCH);
	CHECK_ERR("capget.bad_header", capget_((void *)8, d), EFAULT);

	pid_t pid = fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	struct __user_cap_header_struct other = {_LINUX_CAPABILITY_VERSION_3, pid};
	CHECK_SYS("capget.other_pid", capget_(&other, d));
	CHECK_EQ("capget.other_effective", d[0].effective, 0xffffffff);
	CHECK_ERR("capset.other_pid", capset_(&other, d), EPERM);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);

	int res[3];
	int got = probe(nobody, 1, res, 3);
	CHECK_EQ("nobody.probe", got, 3);
	if (got == 3) {
		CHECK_EQ("nobody.capget", res[0], 0);
		CHECK_EQ("nobody.no_caps", res[1], 0);
		CHECK_EQ("nobody.capset_gain", res[2], EPERM);
	}

	CHECK_EQ("personality.query", personality(0xffffffff), PER_LINUX);
	CHECK_EQ("personality.set_returns_old", personality(PER_LINUX | ADDR_NO_RANDOMIZE), PER_LINUX);
	CHECK_EQ("personality.query_new", personality(0xffffffff), PER_LINUX | ADDR_NO_RANDOMIZE);
	pid = fork();
	if (pid == 0)
		_exit(personality(0xffffffff) == (PER_LINUX | ADDR_NO_RANDOMIZE) ? 0 : 1);
	int st;
	waitpid(pid, &st, 0);
	CHECK("personality.fork_keeps", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ("personality.restore", personality(PER_LINUX), PER_LINUX | ADDR_NO_RANDOMIZE);

	long mask = syscall(SYS_membarrier, MB_QUERY, 0, 0);
	CHECK("membarrier.query", mask >= 0);
	int want = MB_GLOBAL | MB_PRIVATE_EXPEDITED | MB_REGISTER_PRIVATE_EXPEDITED;
	CHECK_EQ("membarrier.query_has_private", mask & want, want);
	CHECK_ERR("membarrier.query_flags", syscall(SYS_membarrier, MB_QUERY, 1, 0), EINVAL);
	CHECK_ERR("membarrier.unregistered", syscall(SYS_membarrier, MB_PRIVATE_EXPEDITED, 0, 0), EPERM);
	CHECK_SYS("membarrier.register", syscall(SYS_membarrier, MB_REGISTER_PRIVATE_EXPEDITED, 0, 0));
	CHECK_SYS("membarrier.private", syscall(SYS_membarrier, MB_PRIVATE_EXPEDITED, 0, 0));
	CHECK_ERR("membarrier.sync_core_unregistered",
		  syscall(SYS_membarrier, MB_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0), EPERM);
	CHECK_SYS("membarrier.sync_core_register",
		  syscall(SYS_membarrier, MB_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0));
	CHECK_SYS("membarrier.sync_core", syscall(SYS_membarrier, MB_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0));
	CHECK_SYS("membarrier.global", syscall(SYS_membarrier, MB_GLOBAL, 0, 0));
	CHECK_ERR("membarrier.unknown", syscall(SYS_membarrier, 1 << 12, 0, 0), EINVAL);
	return check_done();
}
