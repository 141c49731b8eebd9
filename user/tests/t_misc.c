/* t_misc: uname, getrandom, sysinfo, resource limits (getrlimit,
 * setrlimit, prlimit), prctl names, user and group ids, auxv, getcpu,
 * set_tid_address, unknown system calls. */
#define _GNU_SOURCE
#include "check.h"
#include <cpuid.h>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <sys/wait.h>

static void test_uname(void)
{
	struct utsname u;
	memset(&u, 0, sizeof u);
	CHECK_SYS("uname", uname(&u));
	CHECK("uname.sysname", u.sysname[0] != 0);
	CHECK("uname.release_digit", u.release[0] >= '1' && u.release[0] <= '9');
	CHECK_STR("uname.machine", u.machine, "x86_64");
	CHECK("uname.nodename_terminated", memchr(u.nodename, 0, sizeof u.nodename) != NULL);
	CHECK("uname.version", u.version[0] != 0);
	printf("# uname: %s %s %s\n", u.sysname, u.release, u.machine);
	char host[256];
	CHECK_SYS("gethostname", gethostname(host, sizeof host));
	CHECK_STR("gethostname.matches_uname", host, u.nodename);
}

static void test_random(void)
{
	unsigned char a[64], b[64], z[64];
	memset(a, 0, sizeof a);
	memset(b, 0, sizeof b);
	memset(z, 0, sizeof z);
	CHECK_EQ("getrandom.count", getrandom(a, sizeof a, 0), 64);
	CHECK_EQ("getrandom.nonblock", getrandom(b, sizeof b, GRND_NONBLOCK), 64);
	CHECK("getrandom.not_zero", memcmp(a, z, sizeof a) != 0);
	CHECK("getrandom.differs", memcmp(a, b, sizeof a) != 0);
	/* every bit position is set somewhere in 4 KiB of output */
	static unsigned char big[4096];
	CHECK_EQ("getrandom.4k", getrandom(big, sizeof big, 0), 4096);
	unsigned char or = 0, and = 0xff;
	int counts[256] = { 0 }, distinct = 0;
	for (size_t i = 0; i < sizeof big; i++) {
		or |= big[i];
		and &= big[i];
		if (!counts[big[i]]++)
			distinct++;
	}
	CHECK("getrandom.bits", or == 0xff && and == 0);
	CHECK("getrandom.spread", distinct > 200);
	CHECK_ERR("getrandom.bad_flags", getrandom(a, 8, 0x80), EINVAL);
	CHECK_EQ("getrandom.zero_len", getrandom(a, 0, 0), 0);
	unsigned long at_random = getauxval(AT_RANDOM);
	CHECK("auxv.at_random", at_random != 0);
	int fd = open("/dev/urandom", O_RDONLY);
	CHECK_SYS("urandom.open", fd);
	CHECK_EQ("urandom.read", read(fd, b, 16), 16);
	close(fd);
}

static void test_sysinfo(void)
{
	struct sysinfo si;
	CHECK_SYS("sysinfo", sysinfo(&si));
	unsigned long long unit = si.mem_unit ? si.mem_unit : 1;
	unsigned long long total = si.totalram * unit, free = si.freeram * unit;
	CHECK("sysinfo.totalram", total >= (16ULL << 20) && total <= (1ULL << 40));
	CHECK("sysinfo.freeram", free > 0 && free <= total);
	CHECK("sysinfo.procs", si.procs >= 1);
	CHECK("sysinfo.uptime", si.uptime >= 0);
	printf("# sysinfo: total %llu MiB free %llu MiB procs %u uptime %ld\n", total >> 20, free >> 20, si.procs, si.uptime);
	long pages = sysconf(_SC_PHYS_PAGES);
	CHECK("sysconf.phys_pages", pages > 0 && (unsigned long long)pages * 4096 <= total + 4096);
	CHECK_EQ("sysconf.pagesize", sysconf(_SC_PAGESIZE), 4096);
	CHECK_EQ("auxv.pagesz", getauxval(AT_PAGESZ), 4096);
	CHECK("sysconf.nprocs", sysconf(_SC_NPROCESSORS_ONLN) >= 1);
}

static void test_rlimits(void)
{
	struct rlimit rl, orig;
	CHECK_SYS("getrlimit.nofile", getrlimit(RLIMIT_NOFILE, &orig));
	CHECK("getrlimit.nofile_sane", orig.rlim_cur >= 64 && orig.rlim_cur <= orig.rlim_max);
	CHECK_SYS("getrlimit.stack", getrlimit(RLIMIT_STACK, &rl));
	CHECK("getrlimit.stack_sane", rl.rlim_cur >= 65536);
	struct rlimit pl;
	CHECK_SYS("prlimit.get", prlimit(0, RLIMIT_NOFILE, NULL, &pl));
	CHECK("prlimit.matches_getrlimit", pl.rlim_cur == orig.rlim_cur && pl.rlim_max == orig.rlim_max);
	CHECK_SYS("prlimit.raw_get", syscall(SYS_prlimit64, getpid(), RLIMIT_NOFILE, NULL, &pl));

	/* a lower soft limit is enforced */
	rl.rlim_cur = 32;
	rl.rlim_max = orig.rlim_max;
	CHECK_SYS("setrlimit.nofile", setrlimit(RLIMIT_NOFILE, &rl));
	getrlimit(RLIMIT_NOFILE, &pl);
	CHECK_EQ("setrlimit.nofile_read_back", pl.rlim_cur, 32);
	int fds[64], n = 0, last_errno = 0;
	for (;;) {
		int fd = open("/dev/null", O_RDONLY);
		if (fd < 0) {
			last_errno = errno;
			break;
		}
		fds[n++] = fd;
		if (n == 64)
			break;
	}
	CHECK_EQ("rlimit.nofile_emfile", last_errno, EMFILE);
	CHECK("rlimit.nofile_count", n >= 20 && n < 32);
	CHECK_ERR("rlimit.dup2_beyond", dup2(0, 40), EBADF);
	CHECK_ERR("rlimit.fcntl_dupfd_beyond", fcntl(0, F_DUPFD, 40), EINVAL);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	/* restore through prlimit, getting the old value back */
	struct rlimit was;
	CHECK_SYS("prlimit.set", prlimit(0, RLIMIT_NOFILE, &orig, &was));
	CHECK_EQ("prlimit.old_value", was.rlim_cur, 32);
	getrlimit(RLIMIT_NOFILE, &pl);
	CHECK_EQ("prlimit.restored", pl.rlim_cur, orig.rlim_cur);
	rl.rlim_cur = 100;
	rl.rlim_max = 50;
	CHECK_ERR("setrlimit.cur_above_max", setrlimit(RLIMIT_NOFILE, &rl), EINVAL);
	CHECK_ERR("getrlimit.bad_resource", getrlimit(999, &rl), EINVAL);

	/* RLIMIT_AS in a child: a large mapping fails, a small one works */
	pid_t pid = fork();
	if (pid == 0) {
		struct rlimit as = { 256UL << 20, 256UL << 20 };
		if (setrlimit(RLIMIT_AS, &as))
			_exit(2);
		void *big = mmap(NULL, 512UL << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (big != MAP_FAILED || errno != ENOMEM)
			_exit(3);
		void *small = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		_exit(small == MAP_FAILED ? 4 : 0);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK_EQ("rlimit.as_enforced", WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st), 0);
	/* a non-root process cannot raise its hard limit; root can lower it
	 * for good (checked in a child) */
	pid = fork();
	if (pid == 0) {
		struct rlimit h = { 16, 16 };
		if (setrlimit(RLIMIT_NOFILE, &h))
			_exit(2);
		if (getuid() != 0) {
			struct rlimit up = { 32, 32 };
			if (setrlimit(RLIMIT_NOFILE, &up) == 0 || errno != EPERM)
				_exit(3);
		}
		_exit(0);
	}
	waitpid(pid, &st, 0);
	CHECK_EQ("rlimit.lower_hard", WEXITSTATUS(st), 0);
}

static void test_prctl(void)
{
	char name[32];
	memset(name, 0, sizeof name);
	CHECK_SYS("prctl.get_name", prctl(PR_GET_NAME, name, 0, 0, 0));
	CHECK("prctl.initial_name", strncmp(name, "t_misc", 6) == 0);
	CHECK_SYS("prctl.set_name", prctl(PR_SET_NAME, "sb-name", 0, 0, 0));
	memset(name, 0, sizeof name);
	prctl(PR_GET_NAME, name, 0, 0, 0);
	CHECK_STR("prctl.name_set", name, "sb-name");
	prctl(PR_SET_NAME, "a-name-longer-than-sixteen", 0, 0, 0);
	memset(name, 0, sizeof name);
	prctl(PR_GET_NAME, name, 0, 0, 0);
	CHECK_STR("prctl.name_truncated_15", name, "a-name-longer-t");
	/* a fork keeps the name; an exec sets the new program's */
	prctl(PR_SET_NAME, "forked-name", 0, 0, 0);
	int fd[2];
	if (pipe(fd) == 0) {
		pid_t c = fork();
		if (c == 0) {
			char n[32] = {0};
			prctl(PR_GET_NAME, n, 0, 0, 0);
			write(fd[1], n, strlen(n) + 1);
			char self[256];
			ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
			if (len > 0) {
				self[len] = 0;
				dup2(fd[1], 1);
				execl(self, "t_misc", "--name", (char *)NULL);
			}
			_exit(1);
		}
		close(fd[1]);
		char got[64] = {0};
		size_t off = 0;
		for (ssize_t n; off < sizeof got - 1 && (n = read(fd[0], got + off, sizeof got - 1 - off)) > 0;)
			off += (size_t)n;
		close(fd[0]);
		waitpid(c, NULL, 0);
		CHECK_STR("prctl.name_kept_by_fork", got, "forked-name");
		CHECK_STR("prctl.name_set_by_exec", got + strlen(got) + 1, "t_misc");
	}
	prctl(PR_SET_NAME, "t_misc", 0, 0, 0);
	CHECK_ERR("prctl.bad_option", prctl(0x7fffffff, 0, 0, 0, 0), EINVAL);
	CHECK_SYS("prctl.set_pdeathsig", prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0));
	int sig = 0;
	CHECK_SYS("prctl.get_pdeathsig", prctl(PR_GET_PDEATHSIG, &sig, 0, 0, 0));
	CHECK_EQ("prctl.pdeathsig_value", sig, SIGTERM);
	prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0);
	CHECK_EQ("prctl.get_dumpable", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) >= 0, 1);
}

static void test_ids(void)
{
	uid_t r, e, s;
	gid_t gr, ge, gs;
	CHECK_SYS("getresuid", getresuid(&r, &e, &s));
	CHECK_SYS("getresgid", getresgid(&gr, &ge, &gs));
	CHECK("uid.agree", getuid() == r && geteuid() == e);
	CHECK("gid.agree", getgid() == gr && getegid() == ge);
	printf("# uid %u euid %u gid %u egid %u\n", getuid(), geteuid(), getgid(), getegid());
	int n = getgroups(0, NULL);
	CHECK("getgroups.count", n >= 0);
	gid_t g[64];
	CHECK_EQ("getgroups.list", getgroups(64, g), n);
	if (geteuid() == 0) {
		/* root may drop privileges in a child, and cannot get them back */
		pid_t pid = fork();
		if (pid == 0) {
			if (setgid(1000) || setuid(1000))
				_exit(2);
			if (getuid() != 1000 || geteuid() != 1000 || getgid() != 1000)
				_exit(3);
			if (setuid(0) == 0 || errno != EPERM)
				_exit(4);
			_exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
		CHECK_EQ("setuid.drop", WEXITSTATUS(st), 0);
	}
}

static void test_misc_calls(void)
{
	unsigned cpu = 999, node = 999;
	CHECK_SYS("getcpu", syscall(SYS_getcpu, &cpu, &node, NULL));
	CHECK("getcpu.range", cpu < (unsigned)sysconf(_SC_NPROCESSORS_CONF) && node == 0);
	int c = sched_getcpu();
	CHECK("sched_getcpu", c >= 0 && c < sysconf(_SC_NPROCESSORS_CONF));
	static int dummy;
	CHECK_EQ("set_tid_address.returns_tid", syscall(SYS_set_tid_address, &dummy), syscall(SYS_gettid));
	CHECK_ERR("syscall.enosys_999", syscall(999), ENOSYS);
	CHECK_ERR("syscall.enosys_negative", syscall(-1), ENOSYS);
	CHECK("getpriority", getpriority(PRIO_PROCESS, 0) >= -20);
	CHECK_EQ("umask.set", umask(027) >= 0, 1);
	CHECK_EQ("umask.get", umask(022), 027);
	/* AT_HWCAP is CPUID.1:EDX (Linux may clear a bit it does not use,
	 * never set one the processor lacks); fpu and sse2 are in every
	 * x86-64 processor. */
	unsigned eax, ebx, ecx, edx;
	__cpuid(1, eax, ebx, ecx, edx);
	unsigned long hwcap = getauxval(AT_HWCAP);
	CHECK("auxv.hwcap_basics", (hwcap & (1 | 1 << 26)) == (1 | 1 << 26));
	CHECK_EQ("auxv.hwcap_from_cpuid", hwcap & ~(unsigned long)edx, 0);
	CHECK_EQ("auxv.uid", getauxval(AT_UID), getuid());
	CHECK("auxv.phdr", getauxval(AT_PHDR) != 0);
	char *execfn = (char *)getauxval(AT_EXECFN);
	CHECK("auxv.execfn", execfn && strstr(execfn, "t_misc") != NULL);
}

/* reboot(2) wants CAP_SYS_BOOT and its magic numbers; turning
 * Ctrl-Alt-Del handling off is the one command that leaves the machine
 * running. */
static void test_reboot(void)
{
	CHECK_ERR("reboot.bad_magic", syscall(SYS_reboot, 0x1234, 672274793, RB_DISABLE_CAD, 0), EINVAL);
	CHECK_ERR("reboot.bad_command", syscall(SYS_reboot, 0xfee1dead, 672274793, 0x5a5a5a5a, 0), EINVAL);
	CHECK_SYS("reboot.cad_off", syscall(SYS_reboot, 0xfee1dead, 672274793, RB_DISABLE_CAD, 0));
	pid_t c = fork();
	if (c == 0) {
		if (setuid(65534) != 0)
			_exit(2);
		long r = syscall(SYS_reboot, 0xfee1dead, 672274793, RB_POWER_OFF, 0);
		_exit(r == -1 && errno == EPERM ? 0 : 1);
	}
	int st;
	waitpid(c, &st, 0);
	CHECK("reboot.unprivileged_eperm", WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* RLIMIT_FSIZE: writes are cut at the limit, then fail with EFBIG and
 * SIGXFSZ (ignored here, fatal by default); truncation past it too. */
static void test_fsize(void)
{
	char path[] = "/tmp/t_misc_fsizeXXXXXX";
	int fd = mkstemp(path);
	CHECK_SYS("fsize.file", fd);
	pid_t c = fork();
	if (c == 0) {
		signal(SIGXFSZ, SIG_IGN);
		struct rlimit rl = {4096, 4096};
		if (setrlimit(RLIMIT_FSIZE, &rl))
			_exit(1);
		static char buf[8192];
		if (write(fd, buf, sizeof buf) != 4096)
			_exit(2);
		if (write(fd, buf, 1) != -1 || errno != EFBIG)
			_exit(3);
		if (pwrite(fd, buf, 200, 4000) != 96)
			_exit(4);
		if (ftruncate(fd, 100000) != -1 || errno != EFBIG)
			_exit(5);
		if (ftruncate(fd, 4096) != 0 || ftruncate(fd, 10) != 0)
			_exit(6);
		_exit(0);
	}
	int st;
	waitpid(c, &st, 0);
	CHECK_EQ("fsize.cut_then_efbig", st, 0);
	struct stat sb;
	CHECK("fsize.size", fstat(fd, &sb) == 0 && sb.st_size == 10);
	c = fork();
	if (c == 0) {
		struct rlimit rl = {10, 10};
		setrlimit(RLIMIT_FSIZE, &rl);
		lseek(fd, 10, SEEK_SET);
		write(fd, "x", 1);
		_exit(0);
	}
	waitpid(c, &st, 0);
	CHECK("fsize.sigxfsz_kills", WIFSIGNALED(st) && WTERMSIG(st) == SIGXFSZ);
	close(fd);
	unlink(path);
}

/* RLIMIT_NPROC: an unprivileged user runs at most that many tasks (by
 * real uid); fork past it is EAGAIN; root is exempt. */
static void test_nproc(void)
{
	pid_t c = fork();
	if (c == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(10);
		struct rlimit rl = {3, 3};
		if (setrlimit(RLIMIT_NPROC, &rl))
			_exit(11);
		pid_t kids[4];
		int made = 0, err = 0;
		for (int i = 0; i < 4; i++) {
			pid_t k = fork();
			if (k == 0) {
				pause();
				_exit(0);
			}
			if (k < 0) {
				err = errno;
				break;
			}
			kids[made++] = k;
		}
		for (int i = 0; i < made; i++) {
			kill(kids[i], SIGKILL);
			waitpid(kids[i], NULL, 0);
		}
		/* this process and two children make three tasks of uid 65534 */
		_exit(made == 2 && err == EAGAIN ? 0 : 20 + made);
	}
	int st;
	waitpid(c, &st, 0);
	CHECK_EQ("nproc.limit_eagain", st, 0);
	/* root is exempt */
	struct rlimit old, one = {1, RLIM_INFINITY};
	getrlimit(RLIMIT_NPROC, &old);
	one.rlim_max = old.rlim_max;
	CHECK_SYS("nproc.root_set", setrlimit(RLIMIT_NPROC, &one));
	c = fork();
	if (c == 0)
		_exit(0);
	CHECK("nproc.root_exempt", c > 0);
	if (c > 0)
		waitpid(c, NULL, 0);
	setrlimit(RLIMIT_NPROC, &old);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--name") == 0) {
		/* exec'd by test_prctl: the name exec gave (its NUL too) */
		char n[32] = {0};
		prctl(PR_GET_NAME, n, 0, 0, 0);
		fwrite(n, 1, strlen(n) + 1, stdout);
		return 0;
	}
	check_start(argv[0]);
	test_uname();
	test_random();
	test_sysinfo();
	test_rlimits();
	test_fsize();
	test_nproc();
	test_prctl();
	test_ids();
	test_misc_calls();
	test_reboot();
	return check_done();
}
