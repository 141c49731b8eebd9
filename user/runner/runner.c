/*
 * runner: /init of the test initramfs (static musl).
 *
 * As process 1 it mounts /proc, /sys, /dev (devtmpfs), /dev/shm and /tmp
 * (tmpfs) — each may already be there (EBUSY) or be unknown to the kernel
 * (ENODEV): both are noted and ignored — then runs the /tests/f_* programs (the
 * system call fuzzer) and every /tests/t_* program, in name order (so the
 * whole suite runs after the fuzzer: the kernel must survive it and still
 * pass everything), each in its own process group with a time limit (SIGALRM; on
 * expiry the group is killed with SIGKILL; what it left mounted is then
 * unmounted, so that one failure cannot spread). The programs write to the
 * console directly. At the end it prints exactly one line
 * "N passed, M failed" (counting programs) and reports the status, 0 iff
 * all passed: the status byte goes to I/O port 0xf4 through /dev/port
 * (QEMU's isa-debug-exit: QEMU exits with status*2+1), then
 * reboot(RB_POWER_OFF). Without /dev/port it just exits with the status
 * (Shortbread turns init's exit status into the power-off status).
 *
 * Not as process 1 (a host run for debugging) it mounts nothing and exits
 * with the status: runner [TESTDIR].
 *
 * Environment (Linux passes unknown key=value kernel parameters to init):
 *   RUNNER_TIMEOUT=seconds   per program (default 300)
 *   RUNNER_ONLY=sub1,sub2    run only programs whose name contains one of
 *                            the comma-separated substrings
 *   BLK_DISK=vda             the scratch disk the harness attached (t_blk
 *                            requires it then; passed on to the programs)
 *   EXT4_DISK=vdb            the ext4 image the harness attached (t_mount),
 *                            passed on likewise
 *   EXT2_DISK=sata:12288     the ext2 image (t_mount), likewise
 *   PART_DISKS=sdb,sdc       the partitioned images (t_part), likewise
 *   ERR_DISK=sata:24576      the disk that fails (t_blkerr), likewise
 *   BLK_BAD_SECTOR=N         a sector of BLK_DISK the harness made fail
 *                            (t_blk), passed on likewise
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define MAX_TESTS 256

static volatile sig_atomic_t timed_out;

static void on_alarm(int sig)
{
	(void)sig;
	timed_out = 1;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

static void mount_one(const char *src, const char *dir, const char *type, unsigned long flags, const char *data)
{
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		say("runner: mkdir %s: %s\n", dir, strerror(errno));
	if (mount(src, dir, type, flags, data) == 0)
		return;
	int e = errno;
	if (e == EBUSY)
		say("runner: %s already mounted\n", dir);
	else if (e == ENODEV || e == ENOSYS)
		say("runner: no %s file system (%s), going on\n", type, strerror(e));
	else
		say("runner: mount %s on %s: %s, going on\n", type, dir, strerror(e));
}

/* fds 0-2 on the console if the kernel did not give us any */
static void ensure_console(void)
{
	if (fcntl(1, F_GETFD) >= 0)
		return;
	int fd = open("/dev/console", O_RDWR | O_NOCTTY);
	if (fd < 0)
		return;
	for (int i = 0; i < 3; i++)
		if (i != fd)
			dup2(fd, i);
	if (fd > 2)
		close(fd);
}

/* selected reports whether name contains one of the comma-separated
 * substrings in only. */
static int selected(const char *name, const char *only)
{
	while (*only) {
		size_t len = strcspn(only, ",");
		for (const char *p = name; len && strlen(p) >= len; p++)
			if (strncmp(p, only, len) == 0)
				return 1;
		only += len;
		if (*only == ',')
			only++;
	}
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* The mount points in /proc/mounts, in order, each ending in '\n' (the
 * file's octal escapes kept: they are decoded only to unmount). */
static char *mount_points(void)
{
	static char buf[16384];
	char *out = malloc(sizeof buf);
	if (!out)
		return NULL;
	int fd = open("/proc/mounts", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(out);
		return NULL;
	}
	size_t n = 0;
	ssize_t r;
	while (n < sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
		n += r;
	close(fd);
	buf[n] = 0;
	size_t o = 0;
	for (char *line = buf; *line;) {
		char *nl = strchr(line, '\n');
		char *sp = strchr(line, ' ');
		if (!nl || !sp || sp > nl)
			break;
		char *dir = sp + 1, *end = strchr(dir, ' ');
		if (end && end < nl && o + (end - dir) + 1 < sizeof buf) {
			memcpy(out + o, dir, end - dir);
			o += end - dir;
			out[o++] = '\n';
		}
		line = nl + 1;
	}
	out[o] = 0;
	return out;
}

/* whether the list of '\n'-ended lines holds the n bytes at line as a line */
static int has_line(const char *list, const char *line, size_t n)
{
	while (*list) {
		const char *nl = strchr(list, '\n');
		if ((size_t)(nl - list) == n && memcmp(list, line, n) == 0)
			return 1;
		list = nl + 1;
	}
	return 0;
}

/* A program killed by its limit (or one that forgot) can leave a file
 * system mounted, and every later program that mounts the same disk then
 * fails with EBUSY: the failure would spread. After each program, what it
 * left mounted is detached, newest first, and named in the log. */
static void unmount_leftovers(const char *name, const char *before)
{
	char *after = mount_points();
	if (!after || !before) {
		free(after);
		return;
	}
	for (;;) {
		/* the last line of after that before does not hold */
		char *last = NULL;
		for (char *line = after; *line;) {
			char *nl = strchr(line, '\n');
			if (!has_line(before, line, nl - line))
				last = line;
			line = nl + 1;
		}
		if (!last)
			break;
		char dir[600];
		size_t d = 0;
		for (char *c = last; *c != '\n' && d < sizeof dir - 1; c++) {
			if (c[0] == '\\' && c[1] >= '0' && c[1] <= '3' && c[2] >= '0' && c[2] <= '7' && c[3] >= '0' && c[3] <= '7') {
				dir[d++] = (char)((c[1] - '0') << 6 | (c[2] - '0') << 3 | (c[3] - '0'));
				c += 3;
			} else {
				dir[d++] = *c;
			}
		}
		dir[d] = 0;
		say("runner: %s left %s mounted: unmounting it\n", name, dir);
		if (umount2(dir, MNT_DETACH) != 0) {
			say("runner: umount %s: %s\n", dir, strerror(errno));
			break;
		}
		free(after);
		after = mount_points();
		if (!after)
			return;
	}
	free(after);
}

/* runs one program; returns 1 if it passed */
static int run_one(const char *dir, const char *name, unsigned timeout)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	say("=== %s\n", name);
	char *mounted = mount_points();
	long long t0 = now_ms();
	pid_t pid = fork();
	if (pid < 0) {
		say("=== %s: FAIL (fork: %s)\n", name, strerror(errno));
		return 0;
	}
	if (pid == 0) {
		setpgid(0, 0);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGALRM, SIG_DFL);
		char *argv[] = { path, NULL };
		char testdir[560];
		snprintf(testdir, sizeof testdir, "TESTDIR=%s", dir);
		char bb[300] = "BUSYBOX=/bin/busybox";
		if (getenv("BUSYBOX")) /* a host run may say where busybox is */
			snprintf(bb, sizeof bb, "BUSYBOX=%s", getenv("BUSYBOX"));
		/* the disk the harness attached (t_blk), from the kernel command line */
		char disk[80] = "BLK_DISK=";
		if (getenv("BLK_DISK"))
			snprintf(disk, sizeof disk, "BLK_DISK=%s", getenv("BLK_DISK"));
		/* the ext4 image the harness attached (t_mount) */
		char ext4[80] = "EXT4_DISK=";
		if (getenv("EXT4_DISK"))
			snprintf(ext4, sizeof ext4, "EXT4_DISK=%s", getenv("EXT4_DISK"));
		char ext2[80] = "EXT2_DISK=";
		if (getenv("EXT2_DISK"))
			snprintf(ext2, sizeof ext2, "EXT2_DISK=%s", getenv("EXT2_DISK"));
		/* the partitioned images (t_part) */
		char part[80] = "PART_DISKS=";
		if (getenv("PART_DISKS"))
			snprintf(part, sizeof part, "PART_DISKS=%s", getenv("PART_DISKS"));
		/* the disk that fails (t_blkerr) */
		char err[80] = "ERR_DISK=";
		if (getenv("ERR_DISK"))
			snprintf(err, sizeof err, "ERR_DISK=%s", getenv("ERR_DISK"));
		/* a sector of BLK_DISK made to fail (t_blk) */
		char bad[80] = "BLK_BAD_SECTOR=";
		if (getenv("BLK_BAD_SECTOR"))
			snprintf(bad, sizeof bad, "BLK_BAD_SECTOR=%s", getenv("BLK_BAD_SECTOR"));
		char *envp[] = { "PATH=/bin:/sbin:/usr/bin:/usr/sbin", "HOME=/", "TMPDIR=/tmp", testdir, bb, disk, ext4, ext2, part, err, bad, NULL };
		execve(path, argv, envp);
		say("runner: execve %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid); /* also here, so the kill below cannot miss */
	timed_out = 0;
	alarm(timeout);
	int status = 0, done = 0, killed = 0;
	while (!done) {
		pid_t r = waitpid(-1, &status, 0);
		if (r == pid) {
			done = 1;
		} else if (r < 0 && errno == EINTR && timed_out && !killed) {
			say("=== %s: timeout after %u s, killing it\n", name, timeout);
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			killed = 1;
		} else if (r < 0 && errno == ECHILD) {
			say("runner: lost %s\n", name);
			status = -1;
			done = 1;
		}
		/* r > 0: an orphan reparented to us, reaped */
	}
	alarm(0);
	kill(-pid, SIGKILL); /* leftovers of the group */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	long long ms = now_ms() - t0;
	unmount_leftovers(name, mounted);
	free(mounted);
	int pass = !killed && status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	if (pass)
		say("=== %s: PASS (%lld ms)\n", name, ms);
	else if (killed)
		say("=== %s: FAIL (timeout, %lld ms)\n", name, ms);
	else if (status != -1 && WIFSIGNALED(status))
		say("=== %s: FAIL (killed by signal %d, %lld ms)\n", name, WTERMSIG(status), ms);
	else
		say("=== %s: FAIL (exit status %d, %lld ms)\n", name, status == -1 ? -1 : WEXITSTATUS(status), ms);
	return pass;
}

static void report_and_stop(int status)
{
	/* The console is a tty whose driver sends in the background: wait
	 * until everything printed has left, or QEMU exits before the last
	 * lines (the summary) are out. ENOTTY on a non-tty console is fine. */
	fflush(stdout);
	tcdrain(1);
	tcdrain(2);
	struct timespec settle = { 0, 100 * 1000000 };
	nanosleep(&settle, NULL);
	sync();
	int fd = open("/dev/port", O_WRONLY);
	if (fd >= 0) {
		unsigned char b = (unsigned char)status;
		if (pwrite(fd, &b, 1, 0xf4) != 1)
			say("runner: writing port 0xf4: %s\n", strerror(errno));
		close(fd);
		/* still here: not QEMU with isa-debug-exit */
		reboot(RB_POWER_OFF);
		say("runner: reboot: %s\n", strerror(errno));
	} else {
		say("runner: no /dev/port (%s), exiting with status %d\n", strerror(errno), status);
	}
	exit(status);
}

/* Debian's kernel has virtio-blk as modules: tools/linux/run.sh appends
 * them (and /lib/modules/load-order, dependencies first) to the
 * initramfs when a disk is attached. Shortbread has no modules; the
 * file is absent there. */
static void load_modules(void)
{
	FILE *f = fopen("/lib/modules/load-order", "r");
	if (!f)
		return;
	char name[128], path[200];
	while (fscanf(f, "%127s", name) == 1) {
		snprintf(path, sizeof path, "/lib/modules/%s.ko", name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || syscall(SYS_finit_module, fd, "", 0) != 0)
			say("runner: module %s: %s\n", name, strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	fclose(f);
}

int main(int argc, char **argv)
{
	int init = getpid() == 1;
	const char *dir = argc > 1 ? argv[1] : "/tests";
	if (init) {
		mount_one("proc", "/proc", "proc", 0, NULL);
		mount_one("sysfs", "/sys", "sysfs", 0, NULL);
		mount_one("devtmpfs", "/dev", "devtmpfs", 0, "mode=0755");
		/* as Linux systems' init does: shm_open and sem_open live here */
		mount_one("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
		mount_one("tmpfs", "/tmp", "tmpfs", 0, "mode=1777");
		ensure_console();
		load_modules();
		setsid();
		umask(022);
		if (chdir("/"))
			say("runner: chdir /: %s\n", strerror(errno));
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm; /* no SA_RESTART: waitpid returns EINTR */
	sigaction(SIGALRM, &sa, NULL);

	unsigned timeout = 300;
	const char *t = getenv("RUNNER_TIMEOUT");
	if (t && atoi(t) > 0)
		timeout = (unsigned)atoi(t);
	const char *only = getenv("RUNNER_ONLY");

	char *names[MAX_TESTS];
	int n = 0;
	DIR *d = opendir(dir);
	if (!d) {
		say("runner: cannot open %s: %s\n", dir, strerror(errno));
	} else {
		struct dirent *e;
		while ((e = readdir(d)) && n < MAX_TESTS) {
			if (strncmp(e->d_name, "t_", 2) != 0 && strncmp(e->d_name, "f_", 2) != 0)
				continue;
			if (only && *only && !selected(e->d_name, only))
				continue;
			names[n++] = strdup(e->d_name);
		}
		closedir(d);
	}
	qsort(names, n, sizeof names[0], cmp_names);
	say("runner: %d test programs in %s, %u s limit each\n", n, dir, timeout);
	long long t0 = now_ms();
	int passed = 0, failed = 0;
	for (int i = 0; i < n; i++) {
		if (run_one(dir, names[i], timeout))
			passed++;
		else
			failed++;
	}
	say("runner: finished in %lld ms\n", now_ms() - t0);
	say("%d passed, %d failed\n", passed, failed);
	int status = (failed == 0 && passed > 0) ? 0 : 1;
	if (n == 0)
		say("runner: no tests found\n");
	if (init)
		report_and_stop(status);
	return status;
}
