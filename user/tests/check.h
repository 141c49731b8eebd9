/*
 * check.h: the tiny assertion kit shared by the user-space tests.
 *
 * Every check prints one line, "ok NAME" or "not ok NAME: DETAIL", and is
 * counted; check_done() prints "# PROG: N checks, F failed" and returns the
 * exit status (0 iff every check passed). Checks run only in the test's own
 * process: a forked child reports to its parent through its exit status or
 * a pipe, and the parent checks that.
 *
 *   CHECK(name, cond)           cond is true
 *   CHECK_EQ(name, got, want)   integers are equal (printed on failure)
 *   CHECK_SYS(name, expr)       expr is not -1 (errno printed on failure)
 *   CHECK_ERR(name, expr, err)  expr is -1 and errno == err
 *   CHECK_STR(name, got, want)  C strings are equal
 */
#ifndef SHORTBREAD_CHECK_H
#define SHORTBREAD_CHECK_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int check_total, check_failed;
static const char *check_prog = "test";

/* Output goes to a console that may not be a tty: flush every line, so that
 * nothing is lost on a crash and fork never duplicates buffered output. */
__attribute__((constructor)) static void check_init(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
}

__attribute__((format(printf, 3, 4))) static int check_report(const char *name, int pass, const char *fmt, ...)
{
	check_total++;
	if (pass) {
		printf("ok %s\n", name);
		return 1;
	}
	check_failed++;
	char detail[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	printf("not ok %s: %s\n", name, detail);
	fflush(stdout);
	return 0;
}

#define CHECK(name, cond) \
	check_report((name), !!(cond), "%s (%s:%d)", #cond, __FILE__, __LINE__)

#define CHECK_EQ(name, got, want) ({ \
	long long check_g_ = (long long)(got), check_w_ = (long long)(want); \
	check_report((name), check_g_ == check_w_, "%s = %lld (%#llx), want %lld (%#llx) (%s:%d)", \
		     #got, check_g_, check_g_, check_w_, check_w_, __FILE__, __LINE__); })

#define CHECK_SYS(name, expr) ({ \
	errno = 0; \
	long long check_r_ = (long long)(expr); \
	int check_e_ = errno; \
	check_report((name), check_r_ != -1, "%s failed: %s (errno %d) (%s:%d)", \
		     #expr, strerror(check_e_), check_e_, __FILE__, __LINE__); })

#define CHECK_ERR(name, expr, err) ({ \
	errno = 0; \
	long long check_r_ = (long long)(expr); \
	int check_e_ = errno; \
	check_report((name), check_r_ == -1 && check_e_ == (err), \
		     "%s returned %lld errno %d (%s), want -1 errno %d (%s) (%s:%d)", #expr, \
		     check_r_, check_r_ == -1 ? check_e_ : 0, check_r_ == -1 ? strerror(check_e_) : "-", \
		     (err), strerror(err), __FILE__, __LINE__); })

#define CHECK_STR(name, got, want) ({ \
	const char *check_gs_ = (got), *check_ws_ = (want); \
	check_report((name), check_gs_ && strcmp(check_gs_, check_ws_) == 0, "%s = \"%s\", want \"%s\" (%s:%d)", \
		     #got, check_gs_ ? check_gs_ : "(null)", check_ws_, __FILE__, __LINE__); })

/* the state letter (R, S, T, Z...) in a /proc stat file (/proc/PID/stat,
 * /proc/PID/task/TID/stat): the field after the name's closing
 * parenthesis; 0 when the file cannot be read */
__attribute__((unused)) static char check_stat_state(const char *path)
{
	char buf[512];
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

/* the value of KEY in a file of "KEY VALUE" lines (/proc/shortbread/kmem),
 * or -1 when the file or the key is missing */
__attribute__((unused)) static long check_proc_value(const char *path, const char *key)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char k[64];
	long v, found = -1;
	while (fscanf(f, "%63s %ld", k, &v) == 2)
		if (strcmp(k, key) == 0)
			found = v;
	fclose(f);
	return found;
}

/* reads the start of a file (a /proc file, in one read) into buf as a
 * string; its length, or -1 when it cannot be read or is empty */
__attribute__((unused)) static ssize_t check_read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return n;
}

/* the value of KEY in /proc/meminfo ("KEY: N kB" lines; kB for sizes),
 * or -1 when the file or the key is missing */
__attribute__((unused)) static long check_meminfo(const char *key)
{
	char buf[8192];
	if (check_read_file("/proc/meminfo", buf, sizeof buf) < 0)
		return -1;
	size_t k = strlen(key);
	for (char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, key, k) == 0 && p[k] == ':')
			return strtol(p + k + 1, NULL, 10);
	return -1;
}

/* whether the first 4 KiB of a file (a /proc status file) hold TEXT */
__attribute__((unused)) static int check_file_has(const char *path, const char *text)
{
	char buf[4096];
	return check_read_file(path, buf, sizeof buf) > 0 && strstr(buf, text) != NULL;
}

/* check_drop_caches writes 3 to /proc/sys/vm/drop_caches (the page cache
 * and, on Shortbread, the Go heap's free spans) and reports whether it
 * could. */
__attribute__((unused)) static int check_drop_caches(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	int ok = fd >= 0 && write(fd, "3", 1) == 1;
	if (fd >= 0)
		close(fd);
	return ok;
}

__attribute__((unused)) static void check_start(const char *prog)
{
	const char *slash = strrchr(prog, '/');
	check_prog = slash ? slash + 1 : prog;
	printf("# %s: start\n", check_prog);
}

__attribute__((unused)) static int check_done(void)
{
	printf("# %s: %d checks, %d failed\n", check_prog, check_total, check_failed);
	fflush(stdout);
	return check_failed == 0 && check_total > 0 ? 0 : 1;
}

/* A fresh private directory under $TMPDIR (or /tmp); the tests chdir into it
 * and remove it at the end. */
static char check_tmpdir[256];

__attribute__((unused)) static const char *check_mktmp(void)
{
	const char *base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	snprintf(check_tmpdir, sizeof check_tmpdir, "%s/%s.XXXXXX", base, check_prog);
	if (!mkdtemp(check_tmpdir)) {
		printf("not ok mktmp: mkdtemp(%s): %s\n", check_tmpdir, strerror(errno));
		exit(1);
	}
	return check_tmpdir;
}

/* The directory holding the test binaries (helpers such as h_exec live
 * there): dirname of argv[0], or TESTDIR if set. */
static char check_dir[256];

__attribute__((unused)) static const char *check_testdir(const char *argv0)
{
	const char *env = getenv("TESTDIR");
	if (env && *env) {
		snprintf(check_dir, sizeof check_dir, "%s", env);
		return check_dir;
	}
	snprintf(check_dir, sizeof check_dir, "%s", argv0);
	char *slash = strrchr(check_dir, '/');
	if (slash)
		*slash = 0;
	else
		strcpy(check_dir, ".");
	return check_dir;
}

/* read_fd_all reads fd until end of file or until out is full (one byte is
 * kept for the NUL it adds), and returns the bytes read: a child's output
 * collected through a pipe. */
__attribute__((unused)) static size_t read_fd_all(int fd, char *out, size_t size)
{
	size_t got = 0;
	ssize_t n;
	while (got < size - 1 && (n = read(fd, out + got, size - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = 0;
	return got;
}

/* check_run runs path with argv in dir (NULL: the caller's) and envp (NULL:
 * the caller's environment), with its stdout and stderr collected into out
 * through a pipe, and returns its exit status, 1000 + the signal that
 * killed it, or -1 if it could not be started or waited for. The child
 * exits 125 if it cannot enter dir and 126 if exec fails. */
__attribute__((unused)) static int check_run(const char *path, char *const argv[], char *const envp[],
					     const char *dir, char *out, size_t size)
{
	extern char **environ;
	int p[2];
	if (pipe(p))
		return -1;
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		if (dir && chdir(dir))
			_exit(125);
		execve(path, argv, envp ? envp : environ);
		_exit(126);
	}
	close(p[1]);
	read_fd_all(p[0], out, size);
	close(p[0]);
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
}

/* check_copy_file copies the file from to a new file to (an old one is
 * removed first) and gives it owner (as user and group) and mode: a test
 * program's copy of itself, made set-ID or owned by nobody. -1 on any
 * failure. */
__attribute__((unused)) static int check_copy_file(const char *from, const char *to, mode_t mode, uid_t owner)
{
	int in = open(from, O_RDONLY);
	unlink(to);
	int out = open(to, O_CREAT | O_WRONLY | O_TRUNC, 0700);
	if (in < 0 || out < 0)
		return -1;
	char buf[65536];
	for (ssize_t n; (n = read(in, buf, sizeof buf)) > 0;)
		if (write(out, buf, n) != n)
			return -1;
	close(in);
	close(out);
	if (chown(to, owner, owner))
		return -1;
	return chmod(to, mode);
}

#endif
