/* t_secure: the prctl options with state of their own, and RLIMIT_NPROC
 * per thread. PR_CAPBSET_READ/DROP (EPERM before EINVAL, the bounding set
 * inherited by fork, CapBnd in /proc/PID/status, execve as root giving
 * the bounding set as the permitted set); PR_GET/SET_SECUREBITS (the
 * bits and their locks, EPERM for a locked bit, a cleared lock, an
 * unknown bit or no privilege, PR_SET_KEEPCAPS under its lock, execve
 * clearing SECURE_KEEP_CAPS only, SECURE_NOROOT leaving root no
 * capabilities after execve); the speculation
 * controls as Linux answers on QEMU's -cpu max (ENODEV, EINVAL, ENXIO,
 * EPERM, ERANGE and the /proc/PID/status lines); PR_SET_MM's checks in
 * Linux's order (EINVAL for extra arguments, MAP_SIZE and MAP before
 * EPERM, EBADF/EACCES/EBUSY for EXE_FILE, EINVAL for addresses);
 * RLIMIT_NPROC counting a thread under the user of its own last setuid,
 * not its process's. seccomp is t_seccomp's. */
#define _GNU_SOURCE
#include "check.h"
#include "probe.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#define PR_CAPBSET_READ_ 23
#define PR_CAPBSET_DROP_ 24
#define PR_GET_KEEPCAPS_ 7
#define PR_SET_KEEPCAPS_ 8
#define PR_GET_SECUREBITS_ 27
#define PR_SET_SECUREBITS_ 28
#define PR_SET_MM_ 35
#define PR_GET_SPEC_ 52
#define PR_SET_SPEC_ 53
#define SPEC_ENABLE 2
#define SPEC_DISABLE 4
#define SPEC_FORCE_DISABLE 8
#define MM_START_CODE 1
#define MM_AUXV 12
#define MM_EXE_FILE 13
#define MM_MAP 14
#define MM_MAP_SIZE 15
#define CAP_NET_RAW_ 13
#define SECBIT_NOROOT 0x01
#define SECBIT_KEEP_CAPS 0x10
#define SECBIT_KEEP_CAPS_LOCKED 0x20

struct cap_header {
	uint32_t version;
	int pid;
};
struct cap_data {
	uint32_t effective, permitted, inheritable;
};

static const char *self_exe;

/* the value of a /proc/self/status line, as a hex number (or -1) */
static long long status_hex(const char *path, const char *key)
{
	char buf[4096];
	if (check_read_file(path, buf, sizeof buf) < 0)
		return -1;
	char *p = strstr(buf, key);
	if (!p)
		return -1;
	return strtoll(p + strlen(key), NULL, 16);
}

static int capget_(struct cap_data d[2])
{
	struct cap_header h = { 0x20080522, 0 };
	return (int)syscall(SYS_capget, &h, d);
}

/* run as "t_secure caps13": after execve as root with CAP_NET_RAW out of
 * the bounding set: exit 0 iff it is out of the permitted and effective
 * sets and the bounding set, and the rest are in */
static int exec_caps13(void)
{
	struct cap_data d[2];
	if (capget_(d))
		return 10;
	if (d[0].permitted & (1u << CAP_NET_RAW_) || d[0].effective & (1u << CAP_NET_RAW_))
		return 11;
	if (!(d[0].permitted & 1) || !(d[0].effective & 1))
		return 12;
	if (prctl(PR_CAPBSET_READ_, CAP_NET_RAW_, 0, 0, 0) != 0)
		return 13;
	long long prm = status_hex("/proc/self/status", "CapPrm:\t");
	if (prm < 0 || prm & (1ll << CAP_NET_RAW_) || !(prm & 1))
		return 14;
	return 0;
}

/* run as "t_secure noroot": after execve as root under SECURE_NOROOT
 * (with SECURE_KEEP_CAPS set before): no capabilities, NOROOT kept,
 * KEEP_CAPS cleared */
static int exec_noroot(void)
{
	struct cap_data d[2];
	if (capget_(d))
		return 10;
	if (d[0].permitted | d[0].effective | d[1].permitted | d[1].effective)
		return 11;
	if (prctl(PR_GET_SECUREBITS_, 0, 0, 0, 0) != SECBIT_NOROOT)
		return 12;
	if (prctl(PR_GET_KEEPCAPS_, 0, 0, 0, 0) != 0)
		return 13;
	if (status_hex("/proc/self/status", "CapEff:\t") != 0)
		return 14;
	return 0;
}

static int run_self(const char *mode)
{
	int st;
	pid_t pid = fork();
	if (pid == 0) {
		execl(self_exe, self_exe, mode, (char *)NULL);
		_exit(99);
	}
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 200 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static void capbset_nobody(int out)
{
	put(out, rc(prctl(PR_CAPBSET_DROP_, 99, 0, 0, 0)));
	put(out, rc(prctl(PR_CAPBSET_DROP_, CAP_NET_RAW_, 0, 0, 0)));
	put(out, (int)prctl(PR_CAPBSET_READ_, CAP_NET_RAW_, 0, 0, 0));
	put(out, rc(prctl(PR_SET_SECUREBITS_, 0, 0, 0, 0)));
	put(out, rc(prctl(PR_SET_MM_, MM_START_CODE, 0x400000, 0, 0)));
	put(out, rc(prctl(PR_SET_MM_, 99, 0x400000, 0, 0)));
	unsigned size = 0;
	put(out, rc(prctl(PR_SET_MM_, MM_MAP_SIZE, (long)&size, 0, 0)));
	put(out, (int)size);
	put(out, rc(prctl(PR_SET_MM_, MM_MAP, 0, 104, 0)));
	put(out, rc(prctl(PR_SET_MM_, MM_EXE_FILE, 0, 0, 0)));
}

static void test_capbset(void)
{
	CHECK_EQ("capbset.read_last", prctl(PR_CAPBSET_READ_, 40, 0, 0, 0), 1);
	CHECK_ERR("capbset.read_past_last", prctl(PR_CAPBSET_READ_, 41, 0, 0, 0), EINVAL);
	CHECK_EQ("capbset.read_ignores_args", prctl(PR_CAPBSET_READ_, 0, 1, 2, 3), 1);
	CHECK_EQ("capbset.status_full", status_hex("/proc/self/status", "CapBnd:\t"), 0x1ffffffffffll);
	int res[10];
	CHECK_EQ("nobody.results", probe(capbset_nobody, 1, res, 10), 10);
	CHECK_EQ("capbset.nobody_eperm_before_einval", res[0], EPERM);
	CHECK_EQ("capbset.nobody_drop_eperm", res[1], EPERM);
	CHECK_EQ("capbset.nobody_still_reads_1", res[2], 1);
	CHECK_EQ("securebits.nobody_eperm", res[3], EPERM);
	CHECK_EQ("set_mm.nobody_eperm", res[4], EPERM);
	CHECK_EQ("set_mm.nobody_bad_option_eperm", res[5], EPERM);
	CHECK_EQ("set_mm.nobody_map_size", res[6], 0);
	CHECK_EQ("set_mm.map_size_104", res[7], 104);
	CHECK_EQ("set_mm.nobody_map_efault", res[8], EFAULT);
	CHECK_EQ("set_mm.nobody_exe_file_eperm", res[9], EPERM);

	/* in a child: drop CAP_NET_RAW, fork inherits, execve applies it */
	int p[2];
	if (pipe(p))
		return;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		int r[6];
		r[0] = rc(prctl(PR_CAPBSET_DROP_, 99, 0, 0, 0));
		r[1] = rc(prctl(PR_CAPBSET_DROP_, CAP_NET_RAW_, 0, 0, 0));
		r[2] = (int)prctl(PR_CAPBSET_READ_, CAP_NET_RAW_, 0, 0, 0);
		long long bnd = status_hex("/proc/self/status", "CapBnd:\t");
		long long prm = status_hex("/proc/self/status", "CapPrm:\t");
		r[3] = bnd == (0x1ffffffffffll & ~(1ll << CAP_NET_RAW_));
		r[4] = prm == 0x1ffffffffffll; /* the permitted set is cut at execve */
		r[5] = run_self("caps13");
		write(p[1], r, sizeof r);
		_exit(0);
	}
	close(p[1]);
	int r[6] = { -1, -1, -1, -1, -1, -1 };
	CHECK_EQ("capbset.child_reported", read(p[0], r, sizeof r), (long)sizeof r);
	close(p[0]);
	waitpid(pid, NULL, 0);
	CHECK_EQ("capbset.root_bad_cap_einval", r[0], EINVAL);
	CHECK_EQ("capbset.root_drop", r[1], 0);
	CHECK_EQ("capbset.dropped_reads_0", r[2], 0);
	CHECK_EQ("capbset.status_capbnd", r[3], 1);
	CHECK_EQ("capbset.permitted_until_execve", r[4], 1);
	CHECK_EQ("capbset.execve_applies", r[5], 0);
	CHECK_EQ("capbset.parent_untouched", prctl(PR_CAPBSET_READ_, CAP_NET_RAW_, 0, 0, 0), 1);
}

static void test_securebits(void)
{
	CHECK_EQ("securebits.initial", prctl(PR_GET_SECUREBITS_, 0, 0, 0, 0), 0);
	pid_t pid = fork();
	if (pid == 0) {
		/* each step's failure is its own exit code */
		if (prctl(PR_SET_SECUREBITS_, SECBIT_KEEP_CAPS, 0, 0, 0) != 0)
			_exit(1);
		if (prctl(PR_GET_SECUREBITS_, 0, 0, 0, 0) != SECBIT_KEEP_CAPS || prctl(PR_GET_KEEPCAPS_, 0, 0, 0, 0) != 1)
			_exit(2);
		if (prctl(PR_SET_SECUREBITS_, 0x100, 0, 0, 0) != -1 || errno != EPERM)
			_exit(3); /* no such bit */
		if (prctl(PR_SET_KEEPCAPS_, 0, 0, 0, 0) != 0 || prctl(PR_GET_SECUREBITS_, 0, 0, 0, 0) != 0)
			_exit(4);
		if (prctl(PR_SET_SECUREBITS_, SECBIT_KEEP_CAPS | SECBIT_KEEP_CAPS_LOCKED, 0, 0, 0) != 0)
			_exit(5);
		if (prctl(PR_SET_SECUREBITS_, SECBIT_KEEP_CAPS_LOCKED, 0, 0, 0) != -1 || errno != EPERM)
			_exit(6); /* a locked bit */
		if (prctl(PR_SET_SECUREBITS_, SECBIT_KEEP_CAPS, 0, 0, 0) != -1 || errno != EPERM)
			_exit(7); /* a lock cleared */
		if (prctl(PR_SET_KEEPCAPS_, 0, 0, 0, 0) != -1 || errno != EPERM)
			_exit(8);
		if (prctl(PR_SET_KEEPCAPS_, 2, 0, 0, 0) != -1 || errno != EINVAL)
			_exit(9); /* EINVAL first */
		if (prctl(PR_SET_SECUREBITS_, SECBIT_KEEP_CAPS | SECBIT_KEEP_CAPS_LOCKED | SECBIT_NOROOT, 0, 0, 0) != 0)
			_exit(10);
		pid_t c = fork();
		if (c == 0)
			_exit(prctl(PR_GET_SECUREBITS_, 0, 0, 0, 0) == (SECBIT_KEEP_CAPS | SECBIT_KEEP_CAPS_LOCKED | SECBIT_NOROOT) ? 0 : 1);
		int st;
		waitpid(c, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			_exit(11);
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK("securebits.bits_and_locks", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		printf("# securebits child: status %#x\n", st);

	/* SECURE_NOROOT: root's execve gives no capabilities; KEEP_CAPS goes */
	pid = fork();
	if (pid == 0) {
		if (prctl(PR_SET_SECUREBITS_, SECBIT_NOROOT | SECBIT_KEEP_CAPS, 0, 0, 0) != 0)
			_exit(90);
		execl(self_exe, self_exe, "noroot", (char *)NULL);
		_exit(91);
	}
	waitpid(pid, &st, 0);
	check_report("securebits.noroot_execve", WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
}

/* --- speculation control, PR_SET_MM --------------------------------- */

static void test_spec(void)
{
	/* QEMU's -cpu max under TCG: affected, no per-task mitigation */
	CHECK_EQ("spec.get_store_bypass", prctl(PR_GET_SPEC_, 0, 0, 0, 0), SPEC_ENABLE);
	CHECK_EQ("spec.get_indirect_branch", prctl(PR_GET_SPEC_, 1, 0, 0, 0), SPEC_ENABLE);
	CHECK_EQ("spec.get_l1d_flush", prctl(PR_GET_SPEC_, 2, 0, 0, 0), SPEC_FORCE_DISABLE);
	CHECK_ERR("spec.get_unknown_enodev", prctl(PR_GET_SPEC_, 3, 0, 0, 0), ENODEV);
	CHECK_ERR("spec.get_arg3_einval_first", prctl(PR_GET_SPEC_, 9, 1, 0, 0), EINVAL);
	CHECK_ERR("spec.set_arg4_einval", prctl(PR_SET_SPEC_, 0, SPEC_DISABLE, 1, 0), EINVAL);
	CHECK_ERR("spec.set_store_bypass_enxio", prctl(PR_SET_SPEC_, 0, SPEC_DISABLE, 0, 0), ENXIO);
	CHECK_ERR("spec.set_store_bypass_bad_enxio", prctl(PR_SET_SPEC_, 0, 99, 0, 0), ENXIO);
	CHECK_EQ("spec.set_ib_enable", prctl(PR_SET_SPEC_, 1, SPEC_ENABLE, 0, 0), 0);
	CHECK_ERR("spec.set_ib_disable_eperm", prctl(PR_SET_SPEC_, 1, SPEC_DISABLE, 0, 0), EPERM);
	CHECK_ERR("spec.set_ib_force_eperm", prctl(PR_SET_SPEC_, 1, SPEC_FORCE_DISABLE, 0, 0), EPERM);
	CHECK_ERR("spec.set_ib_bad_erange", prctl(PR_SET_SPEC_, 1, 16, 0, 0), ERANGE);
	CHECK_ERR("spec.set_l1d_eperm", prctl(PR_SET_SPEC_, 2, SPEC_ENABLE, 0, 0), EPERM);
	CHECK_ERR("spec.set_unknown_enodev", prctl(PR_SET_SPEC_, 3, SPEC_ENABLE, 0, 0), ENODEV);
	CHECK_EQ("spec.unchanged", prctl(PR_GET_SPEC_, 1, 0, 0, 0), SPEC_ENABLE);
	CHECK("spec.status_ssb", check_file_has("/proc/self/status", "\nSpeculation_Store_Bypass:\tvulnerable\n"));
	CHECK("spec.status_ib", check_file_has("/proc/self/status", "\nSpeculationIndirectBranch:\talways enabled\n"));
}

static void test_set_mm(void)
{
	unsigned size = 0;
	char map[104] = { 0 };
	CHECK_SYS("set_mm.map_size", prctl(PR_SET_MM_, MM_MAP_SIZE, (long)&size, 0, 0));
	CHECK_EQ("set_mm.map_size_value", size, 104);
	CHECK_SYS("set_mm.map_size_arg4_allowed", prctl(PR_SET_MM_, MM_MAP_SIZE, (long)&size, 1, 0));
	CHECK_ERR("set_mm.map_size_arg5_einval", prctl(PR_SET_MM_, MM_MAP_SIZE, (long)&size, 0, 1), EINVAL);
	CHECK_ERR("set_mm.map_size_efault", prctl(PR_SET_MM_, MM_MAP_SIZE, 0, 0, 0), EFAULT);
	CHECK_ERR("set_mm.arg4_einval", prctl(PR_SET_MM_, MM_START_CODE, 0x400000, 1, 0), EINVAL);
	CHECK_ERR("set_mm.map_wrong_size_einval", prctl(PR_SET_MM_, MM_MAP, (long)map, 103, 0), EINVAL);
	CHECK_ERR("set_mm.map_efault", prctl(PR_SET_MM_, MM_MAP, 0, 104, 0), EFAULT);
	CHECK_ERR("set_mm.map_zero_einval", prctl(PR_SET_MM_, MM_MAP, (long)map, 104, 0), EINVAL);
	CHECK_ERR("set_mm.start_code_low_einval", prctl(PR_SET_MM_, MM_START_CODE, 4096, 0, 0), EINVAL);
	CHECK_ERR("set_mm.start_code_high_einval", prctl(PR_SET_MM_, MM_START_CODE, 1ul << 47, 0, 0), EINVAL);
	CHECK_ERR("set_mm.unknown_einval", prctl(PR_SET_MM_, 99, 0x400000, 0, 0), EINVAL);
	CHECK_SYS("set_mm.auxv_empty", prctl(PR_SET_MM_, MM_AUXV, (long)map, 0, 0));
	static char auxv[400];
	CHECK_SYS("set_mm.auxv_largest", prctl(PR_SET_MM_, MM_AUXV, (long)auxv, 384, 0));
	CHECK_ERR("set_mm.auxv_too_long_einval", prctl(PR_SET_MM_, MM_AUXV, (long)auxv, 385, 0), EINVAL);
	CHECK_ERR("set_mm.auxv_efault", prctl(PR_SET_MM_, MM_AUXV, 0, 384, 0), EFAULT);
	CHECK_ERR("set_mm.exe_file_ebadf", prctl(PR_SET_MM_, MM_EXE_FILE, 999, 0, 0), EBADF);
	int dir = open("/", O_RDONLY | O_DIRECTORY);
	CHECK_ERR("set_mm.exe_file_dir_eacces", prctl(PR_SET_MM_, MM_EXE_FILE, dir, 0, 0), EACCES);
	close(dir);
	int exe = open(self_exe, O_RDONLY);
	CHECK_ERR("set_mm.exe_file_still_mapped_ebusy", prctl(PR_SET_MM_, MM_EXE_FILE, exe, 0, 0), EBUSY);
	close(exe);
}

/* --- RLIMIT_NPROC per thread ----------------------------------------- */

static volatile int park_go;
static volatile int b_fork_req, b_fork_res;
static void *parked(void *arg)
{
	(void)arg;
	while (!park_go) {
		if (b_fork_req == 1) {
			pid_t c = fork();
			if (c == 0)
				_exit(0);
			b_fork_res = c > 0 ? 0 : errno;
			if (c > 0)
				waitpid(c, NULL, 0);
			b_fork_req = 2;
		}
		usleep(1000);
	}
	return NULL;
}

static void test_nproc_threads(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		/* root with two more threads; only the main thread becomes
		 * nobody (the raw call: Linux's credentials are per thread) */
		struct rlimit lim = { 2, RLIM_INFINITY };
		if (setrlimit(RLIMIT_NPROC, &lim))
			_exit(1);
		pthread_t th[2];
		pthread_create(&th[0], NULL, parked, NULL);
		pthread_create(&th[1], NULL, parked, NULL);
		if (syscall(SYS_setresuid, NOBODY, NOBODY, NOBODY) != 0)
			_exit(2);
		/* nobody runs one task (this thread): a fork makes two */
		pid_t c = fork();
		if (c == 0)
			_exit(0);
		if (c < 0)
			_exit(10 + errno % 100);
		waitpid(c, NULL, 0);
		lim.rlim_cur = 1;
		if (setrlimit(RLIMIT_NPROC, &lim))
			_exit(3);
		c = fork();
		if (c == 0)
			_exit(0);
		if (c > 0)
			_exit(4);
		if (errno != EAGAIN)
			_exit(5);
		/* a thread still counted as root is exempt */
		b_fork_req = 1;
		while (b_fork_req != 2)
			usleep(1000);
		if (b_fork_res != 0)
			_exit(120 + b_fork_res % 100);
		park_go = 1;
		syscall(SYS_exit_group, 0);
	}
	int st;
	waitpid(pid, &st, 0);
	check_report("nproc.counts_threads_by_own_uid", WIFEXITED(st) && WEXITSTATUS(st) == 0,
		     "status %#x (10+errno: a fork within the limit failed, 4/5: over the limit, 120+errno: the root thread's fork)",
		     st);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "caps13") == 0)
		return exec_caps13();
	if (argc > 1 && strcmp(argv[1], "noroot") == 0)
		return exec_noroot();
	check_start(argv[0]);
	static char exe[300];
	snprintf(exe, sizeof exe, "%s/t_secure", check_testdir(argv[0]));
	if (exe[0] != '/') {
		char cwd[200];
		if (getcwd(cwd, sizeof cwd))
			snprintf(exe, sizeof exe, "%s/%s/t_secure", cwd, check_testdir(argv[0]));
	}
	self_exe = exe;
	if (geteuid() != 0) {
		check_report("root", 0, "t_secure runs as root");
		return check_done();
	}
	test_capbset();
	test_securebits();
	test_spec();
	test_set_mm();
	test_nproc_threads();
	return check_done();
}
