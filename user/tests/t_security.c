/*
 * t_security: what an unprivileged user may and may not do to root's
 * files and processes. The test runs as root, prepares files, and runs
 * each probe in a child that has dropped to uid/gid 65534 (nobody); the
 * child sends each outcome (0 or the errno) through a pipe and the parent
 * checks it, and checks afterwards that root's files did not change.
 *
 * Covered: mappings keep the rights of the descriptor they came from
 * (mprotect, mremap), set-user-ID and set-group-ID bits cleared by an
 * unprivileged write, truncate and O_TRUNC, and kept by root's; exec
 * needs execute permission, not read permission, and honours set-user-ID;
 * /proc's ptrace-read check (environ, maps, exe, cwd, fd) and dumpability.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "probe.h"


static const char ro_path[] = "/tmp/sec_ro";
static const char original[] = "ORIGINAL";

/* runs fn as nobody in a child; fills res[0..n) with what it sent */
static int as_nobody(void (*fn)(int), int *res, int n)
{
	return probe(fn, 1, res, n);
}

static int make_file(const char *path, mode_t mode, const char *data)
{
	unlink(path);
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, data, strlen(data));
	close(fd);
	if (n != (ssize_t)strlen(data))
		return -1;
	return chmod(path, mode);
}

static int file_is(const char *path, const char *want)
{
	char buf[64] = {0};
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	return n == (ssize_t)strlen(want) && memcmp(buf, want, n) == 0;
}

static mode_t mode_of(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? st.st_mode & 07777 : (mode_t)-1;
}

/* --- mappings ----------------------------------------------------------- */

static void probe_mappings(int out)
{
	int fd = open(ro_path, O_RDONLY);
	put(out, rc(fd));
	char *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	put(out, m == MAP_FAILED ? errno : 0);
	/* the hole: upgrading a read-only shared mapping */
	put(out, rc(syscall(SYS_mprotect, m, 4096, PROT_READ | PROT_WRITE)));
	put(out, rc(syscall(SYS_mprotect, m, 4096, PROT_WRITE)));
	put(out, rc(syscall(SYS_mprotect, m, 4096, PROT_READ | PROT_EXEC)));
	/* moved, the mapping keeps its limit */
	char *moved = mremap(m, 4096, 8192, MREMAP_MAYMOVE);
	put(out, moved == MAP_FAILED ? errno : 0);
	if (moved != MAP_FAILED)
		m = moved;
	put(out, rc(syscall(SYS_mprotect, m, 4096, PROT_READ | PROT_WRITE)));
	/* asking for it directly */
	char *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	put(out, w == MAP_FAILED ? errno : 0);
	/* a private mapping may become writable: writes copy */
	char *pv = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	put(out, pv == MAP_FAILED ? errno : 0);
	put(out, rc(syscall(SYS_mprotect, pv, 4096, PROT_READ | PROT_WRITE)));
	if (pv != MAP_FAILED)
		memcpy(pv, "HACKED!!", 8);
	put(out, pv != MAP_FAILED && memcmp(pv, "HACKED!!", 8) == 0 ? 0 : 1);
	/* the program every root shell runs */
	int bb = open("/bin/busybox", O_RDONLY);
	char *b = mmap(NULL, 4096, PROT_READ, MAP_SHARED, bb, 0);
	put(out, b == MAP_FAILED ? errno : 0);
	put(out, rc(syscall(SYS_mprotect, b, 4096, PROT_READ | PROT_WRITE)));
	/* a shared mapping of a file opened read-write may be upgraded */
	int rw = open("/tmp/sec_nobody", O_RDWR | O_CREAT, 0600);
	put(out, rc(ftruncate(rw, 4096)));
	char *r = mmap(NULL, 4096, PROT_READ, MAP_SHARED, rw, 0);
	put(out, rc(syscall(SYS_mprotect, r, 4096, PROT_READ | PROT_WRITE)));
	unlink("/tmp/sec_nobody");
}

static void test_mappings(void)
{
	CHECK_SYS("map.prepare", make_file(ro_path, 0644, original));
	int r[16];
	int n = as_nobody(probe_mappings, r, 15);
	CHECK_EQ("map.probes", n, 15);
	if (n != 15)
		return;
	CHECK_EQ("map.open_rdonly", r[0], 0);
	CHECK_EQ("map.shared_read", r[1], 0);
	CHECK_EQ("map.mprotect_rw_eacces", r[2], EACCES);
	CHECK_EQ("map.mprotect_w_eacces", r[3], EACCES);
	CHECK_EQ("map.mprotect_rx_ok", r[4], 0);
	CHECK_EQ("map.mremap_ok", r[5], 0);
	CHECK_EQ("map.mprotect_after_mremap_eacces", r[6], EACCES);
	CHECK_EQ("map.mmap_shared_write_eacces", r[7], EACCES);
	CHECK_EQ("map.private_read", r[8], 0);
	CHECK_EQ("map.private_mprotect_rw", r[9], 0);
	CHECK_EQ("map.private_write_copies", r[10], 0);
	CHECK_EQ("map.busybox_shared", r[11], 0);
	CHECK_EQ("map.busybox_mprotect_eacces", r[12], EACCES);
	CHECK_EQ("map.own_file_ftruncate", r[13], 0);
	CHECK_EQ("map.own_rw_mprotect_ok", r[14], 0);
	CHECK("map.file_unchanged", file_is(ro_path, original));
	unlink(ro_path);
}

/* --- set-user-ID and set-group-ID bits ---------------------------------- */

static void probe_setid(int out)
{
	int fd = open("/tmp/sec_suid_w", O_WRONLY);
	put(out, rc(fd));
	put(out, rc(write(fd, "x", 1)));
	close(fd);
	fd = open("/tmp/sec_suid_t", O_WRONLY);
	put(out, rc(ftruncate(fd, 1)));
	close(fd);
	put(out, rc(truncate("/tmp/sec_sgid_x", 2)));
	fd = open("/tmp/sec_sgid_nox", O_WRONLY);
	put(out, rc(write(fd, "x", 1)));
	close(fd);
	fd = open("/tmp/sec_suid_o", O_WRONLY | O_TRUNC);
	put(out, rc(fd));
	close(fd);
}

static void test_setid(void)
{
	CHECK_SYS("setid.prepare", make_file("/tmp/sec_suid_w", 04777, "data") | make_file("/tmp/sec_suid_t", 04777, "data") |
					   make_file("/tmp/sec_sgid_x", 02777, "data") | make_file("/tmp/sec_sgid_nox", 02767, "data") |
					   make_file("/tmp/sec_suid_o", 06777, "data") | make_file("/tmp/sec_suid_root", 04755, "data"));
	int r[6];
	CHECK_EQ("setid.probes", as_nobody(probe_setid, r, 6), 6);
	CHECK_EQ("setid.write_ok", r[0] | r[1], 0);
	CHECK_EQ("setid.write_clears_suid", mode_of("/tmp/sec_suid_w"), 0777);
	CHECK_EQ("setid.ftruncate_ok", r[2], 0);
	CHECK_EQ("setid.ftruncate_clears_suid", mode_of("/tmp/sec_suid_t"), 0777);
	CHECK_EQ("setid.truncate_ok", r[3], 0);
	CHECK_EQ("setid.truncate_clears_sgid", mode_of("/tmp/sec_sgid_x"), 0777);
	/* set-group-ID without group execute: cleared for a writer outside the group */
	CHECK_EQ("setid.write_nox_ok", r[4], 0);
	CHECK_EQ("setid.open_trunc_ok", r[5], 0);
	CHECK_EQ("setid.sgid_noexec_cleared", mode_of("/tmp/sec_sgid_nox"), 0767);
	CHECK_EQ("setid.otrunc_clears_both", mode_of("/tmp/sec_suid_o"), 0777);
	/* root (CAP_FSETID) keeps the bits */
	int fd = open("/tmp/sec_suid_root", O_WRONLY);
	CHECK_SYS("setid.root_write", write(fd, "x", 1));
	close(fd);
	CHECK_EQ("setid.root_write_keeps", mode_of("/tmp/sec_suid_root"), 04755);
	/* chown clears set-user-ID, even root's */
	CHECK_SYS("setid.root_chown", chown("/tmp/sec_suid_root", 0, 0));
	CHECK_EQ("setid.chown_clears", mode_of("/tmp/sec_suid_root"), 0755);
	const char *names[] = {"/tmp/sec_suid_w", "/tmp/sec_suid_t", "/tmp/sec_sgid_x", "/tmp/sec_sgid_nox", "/tmp/sec_suid_o",
			       "/tmp/sec_suid_root"};
	for (unsigned i = 0; i < sizeof names / sizeof *names; i++)
		unlink(names[i]);
}

/* --- exec ----------------------------------------------------------------- */

/* the program copied to /tmp exits with this status when run as --ids */
static int ids_status(void)
{
	uid_t r, e, s;
	getresuid(&r, &e, &s);
	int st = 0;
	if (r == NOBODY)
		st |= 1;
	if (e == 1234 && s == 1234)
		st |= 2;
	if (getauxval(AT_SECURE) == 1 && getauxval(AT_EUID) == 1234 && getauxval(AT_UID) == NOBODY)
		st |= 4;
	if (prctl(PR_GET_DUMPABLE) == 0)
		st |= 8;
	return st;
}

/* copy_self copies this program to to, owned by owner, with mode. */
static int copy_self(const char *to, mode_t mode, uid_t owner) { return check_copy_file("/proc/self/exe", to, mode, owner); }

static void probe_exec(int out)
{
	char *argv[] = {"prog", "--ids", NULL};
	/* execute permission decides, not read permission */
	pid_t pid = fork();
	if (pid == 0) {
		execv("/tmp/sec_x_owner_only", argv);
		_exit(100 + errno);
	}
	int st;
	waitpid(pid, &st, 0);
	put(out, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	pid = fork();
	if (pid == 0) {
		execv("/tmp/sec_x_only", argv);
		_exit(100 + errno);
	}
	waitpid(pid, &st, 0);
	put(out, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	pid = fork();
	if (pid == 0) {
		execv("/tmp/sec_suid_prog", argv);
		_exit(100 + errno);
	}
	waitpid(pid, &st, 0);
	put(out, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

static void test_exec(void)
{
	CHECK_SYS("exec.prepare", copy_self("/tmp/sec_x_owner_only", 0744, 0) | copy_self("/tmp/sec_x_only", 0711, 0) |
					  copy_self("/tmp/sec_suid_prog", 04755, 1234));
	int r[3];
	CHECK_EQ("exec.probes", as_nobody(probe_exec, r, 3), 3);
	CHECK_EQ("exec.needs_x_permission", r[0], 100 + EACCES);
	/* runs, without the right to read it: ruid nobody, not dumpable */
	CHECK_EQ("exec.x_without_r", r[1] & 1, 1);
	CHECK_EQ("exec.x_without_r_not_dumpable", r[1] & 8, 8);
	CHECK_EQ("exec.suid_ruid", r[2] & 1, 1);
	CHECK_EQ("exec.suid_euid_and_saved", r[2] & 2, 2);
	CHECK_EQ("exec.suid_auxv_secure", r[2] & 4, 4);
	CHECK_EQ("exec.suid_not_dumpable", r[2] & 8, 8);
	unlink("/tmp/sec_x_owner_only");
	unlink("/tmp/sec_x_only");
	unlink("/tmp/sec_suid_prog");
}

/* --- /proc ------------------------------------------------------------------ */

static pid_t root_pid;

static int open_rc(const char *fmt, int pid)
{
	char path[64];
	snprintf(path, sizeof path, fmt, pid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static int readlink_rc(const char *fmt, int pid)
{
	char path[64], buf[256];
	snprintf(path, sizeof path, fmt, pid);
	return rc(readlink(path, buf, sizeof buf));
}

static void probe_proc(int out)
{
	put(out, open_rc("/proc/%d/environ", root_pid));
	put(out, open_rc("/proc/%d/maps", root_pid));
	put(out, readlink_rc("/proc/%d/exe", root_pid));
	put(out, readlink_rc("/proc/%d/cwd", root_pid));
	put(out, open_rc("/proc/%d/fd", root_pid));
	put(out, readlink_rc("/proc/%d/fd/0", root_pid));
	put(out, open_rc("/proc/%d/cmdline", root_pid));
	put(out, open_rc("/proc/%d/stat", root_pid));
	put(out, open_rc("/proc/%d/status", root_pid));
	/* this process changed its IDs: it is no longer dumpable, and its
	 * own entries belong to root, but its own fd directory stays open to it */
	put(out, prctl(PR_GET_DUMPABLE));
	put(out, open_rc("/proc/%d/fd", getpid()));
	put(out, readlink_rc("/proc/%d/exe", getpid()));
	struct stat st;
	put(out, stat("/proc/self/environ", &st) == 0 ? (int)st.st_uid : -1);
	put(out, rc(prctl(PR_SET_DUMPABLE, 1)));
	put(out, stat("/proc/self/environ", &st) == 0 ? (int)st.st_uid : -1);
	put(out, open_rc("/proc/%d/environ", getpid()));
	/* another process of the same user, dumpable again, may be read */
	int p[2];
	pipe(p);
	pid_t kid = fork();
	if (kid == 0) {
		close(p[0]);
		prctl(PR_SET_DUMPABLE, 1);
		write(p[1], "x", 1);
		pause();
		_exit(0);
	}
	close(p[1]);
	char c;
	read(p[0], &c, 1);
	put(out, open_rc("/proc/%d/environ", kid));
	kill(kid, SIGKILL);
	waitpid(kid, NULL, 0);
}

static void test_proc(void)
{
	root_pid = getpid();
	int r[17];
	CHECK_EQ("proc.probes", as_nobody(probe_proc, r, 17), 17);
	CHECK_EQ("proc.other_environ_eacces", r[0], EACCES);
	CHECK_EQ("proc.other_maps_eacces", r[1], EACCES);
	CHECK_EQ("proc.other_exe_eacces", r[2], EACCES);
	CHECK_EQ("proc.other_cwd_eacces", r[3], EACCES);
	CHECK_EQ("proc.other_fd_dir_eacces", r[4], EACCES);
	CHECK_EQ("proc.other_fd_link_eacces", r[5], EACCES);
	CHECK_EQ("proc.other_cmdline_ok", r[6], 0);
	CHECK_EQ("proc.other_stat_ok", r[7], 0);
	CHECK_EQ("proc.other_status_ok", r[8], 0);
	CHECK_EQ("proc.dropped_not_dumpable", r[9], 0);
	CHECK_EQ("proc.own_fd_dir_ok", r[10], 0);
	CHECK_EQ("proc.own_exe_ok", r[11], 0);
	CHECK_EQ("proc.nondumpable_owner_root", r[12], 0);
	CHECK_EQ("proc.set_dumpable", r[13], 0);
	CHECK_EQ("proc.dumpable_owner_self", r[14], NOBODY);
	CHECK_EQ("proc.own_environ_ok", r[15], 0);
	CHECK_EQ("proc.same_user_environ_ok", r[16], 0);
}

/* --- the rest of the audit: one probe per rule ---------------------------- */

#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/time.h>

static void probe_audit(int out)
{
	/* file mode and owner */
	put(out, rc(open("/tmp/sec_root600", O_RDONLY)));
	put(out, rc(chmod("/tmp/sec_root644", 0666)));
	put(out, rc(chown("/tmp/sec_root644", NOBODY, NOBODY)));
	struct timespec ts[2] = {{1, 0}, {1, 0}};
	put(out, rc(utimensat(AT_FDCWD, "/tmp/sec_root644", ts, 0)));
	put(out, rc(utimensat(AT_FDCWD, "/tmp/sec_root644", NULL, 0)));
	put(out, rc(open("/tmp/sec_root644", O_WRONLY)));
	put(out, rc(truncate("/tmp/sec_root644", 0)));
	/* a sticky directory: root's file in /tmp is not ours to remove or replace */
	put(out, rc(unlink("/tmp/sec_root644")));
	int fd = open("/tmp/sec_mine", O_CREAT | O_WRONLY, 0644);
	close(fd);
	put(out, rc(rename("/tmp/sec_mine", "/tmp/sec_root644")));
	unlink("/tmp/sec_mine");
	/* a directory we may not write */
	put(out, rc(open("/tmp/sec_rootdir/new", O_CREAT | O_WRONLY, 0644)));
	put(out, rc(mkdir("/tmp/sec_rootdir/sub", 0755)));
	/* descriptors keep their access mode */
	fd = open("/tmp/sec_root644", O_RDONLY);
	put(out, rc(write(fd, "x", 1)));
	put(out, rc(ftruncate(fd, 0)));
	int src = open("/tmp/sec_root644", O_RDONLY);
	put(out, rc(sendfile(fd, src, NULL, 1)));
	put(out, rc(fchmod(fd, 0666)));
	close(fd);
	close(src);
	fd = open("/tmp/sec_root644", O_PATH);
	put(out, rc(write(fd, "x", 1)));
	/* raw: musl retries a failed fchmod through /proc/self/fd */
	put(out, rc(syscall(SYS_fchmod, fd, 0666)));
	close(fd);
	put(out, rc(open("/tmp", O_WRONLY)));
	/* signals */
	put(out, rc(kill(root_pid, 0)));
	put(out, rc(kill(1, 0)));
	/* ids, groups and limits */
	put(out, rc(setuid(0)));
	put(out, rc(setresuid(-1, 0, -1)));
	put(out, rc(setgid(0)));
	gid_t g = 0;
	put(out, rc(setgroups(1, &g)));
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_max += 1;
	put(out, rc(setrlimit(RLIMIT_NOFILE, &rl)));
	/* root only */
	put(out, rc(syscall(SYS_reboot, 0xfee1dead, 672274793, 0x4321fedc, NULL)));
	/* SIGCONT may go to any process of the caller's session */
	put(out, rc(kill(root_pid, SIGCONT)));
	/* another user's resource limits: neither read nor written */
	struct rlimit got;
	put(out, rc(syscall(SYS_prlimit64, root_pid, RLIMIT_NOFILE, NULL, &got)));
	put(out, rc(syscall(SYS_prlimit64, root_pid, RLIMIT_NOFILE, &got, NULL)));
}

static void test_audit(void)
{
	root_pid = getpid();
	CHECK_SYS("audit.prepare", make_file("/tmp/sec_root600", 0600, original) | make_file("/tmp/sec_root644", 0644, original));
	rmdir("/tmp/sec_rootdir");
	CHECK_SYS("audit.prepare_dir", mkdir("/tmp/sec_rootdir", 0755));
	int r[30];
	int n = as_nobody(probe_audit, r, 30);
	CHECK_EQ("audit.probes", n, 29);
	if (n != 29)
		return;
	static const struct {
		const char *name;
		int want;
	} want[] = {
		{"audit.open_0600_eacces", EACCES},
		{"audit.chmod_other_eperm", EPERM},
		{"audit.chown_other_eperm", EPERM},
		{"audit.utimens_times_eperm", EPERM},
		{"audit.utimens_now_eacces", EACCES},
		{"audit.open_write_eacces", EACCES},
		{"audit.truncate_eacces", EACCES},
		{"audit.sticky_unlink_eperm", EPERM},
		{"audit.sticky_rename_over_eperm", EPERM},
		{"audit.create_in_0755_dir_eacces", EACCES},
		{"audit.mkdir_in_0755_dir_eacces", EACCES},
		{"audit.write_rdonly_fd_ebadf", EBADF},
		{"audit.ftruncate_rdonly_fd_einval", EINVAL},
		{"audit.sendfile_into_rdonly_ebadf", EBADF},
		{"audit.fchmod_rdonly_fd_other_eperm", EPERM},
		{"audit.write_opath_ebadf", EBADF},
		{"audit.fchmod_opath_ebadf", EBADF},
		{"audit.open_dir_write_eisdir", EISDIR},
		{"audit.kill_root_eperm", EPERM},
		{"audit.kill_init_eperm", EPERM},
		{"audit.setuid_root_eperm", EPERM},
		{"audit.setresuid_root_eperm", EPERM},
		{"audit.setgid_root_eperm", EPERM},
		{"audit.setgroups_eperm", EPERM},
		{"audit.raise_hard_rlimit_eperm", EPERM},
		{"audit.reboot_eperm", EPERM},
		{"audit.sigcont_same_session_ok", 0},
		{"audit.prlimit_read_other_eperm", EPERM},
		{"audit.prlimit_write_other_eperm", EPERM},
	};
	for (unsigned i = 0; i < sizeof want / sizeof *want; i++)
		CHECK_EQ(want[i].name, r[i], want[i].want);
	CHECK("audit.files_unchanged", file_is("/tmp/sec_root644", original) && file_is("/tmp/sec_root600", original) &&
					       mode_of("/tmp/sec_root644") == 0644 && mode_of("/tmp/sec_root600") == 0600);
	struct stat st;
	CHECK("audit.nothing_created", stat("/tmp/sec_rootdir/new", &st) != 0 && stat("/tmp/sec_rootdir/sub", &st) != 0);
	unlink("/tmp/sec_root600");
	unlink("/tmp/sec_root644");
	rmdir("/tmp/sec_rootdir");
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--ids") == 0)
		return ids_status();
	check_start(argv[0]);
	if (geteuid() != 0) {
		printf("# t_security needs root\n");
		return 1;
	}
	test_mappings();
	test_setid();
	test_exec();
	test_proc();
	test_audit();
	return check_done();
}
