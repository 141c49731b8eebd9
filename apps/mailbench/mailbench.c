/*
 * mailbench: a qmail-style local mail benchmark. Starts mail-qman on a
 * fresh spool, runs CLIENTS processes that each hand messages to
 * mail-enqueue (one fork+exec or posix_spawn per message) for SECONDS
 * (or exactly -n messages each), tells mail-qman to finish, then checks
 * every delivered maildir file byte for byte against what was sent and
 * that the spool is empty. Prints messages per second, from the start to
 * the last delivery, as a sentence and as one "MAILBENCH key=value..."
 * line for scripts.
 *
 * usage: mailbench [-c CLIENTS] [-t SECONDS | -n MESSAGES] [-s SIZE]
 *                  [-d DIR] [-j DELIVERIES] [-m fork|spawn] [-B BINDIR] [-k]
 * Exit status 0 only if every accepted message was delivered exactly once
 * with the right content, nothing else was delivered, and no step failed.
 */
#include "common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* What each client reports to the parent over a pipe; small enough for
 * one atomic write. */
struct report {
	int client;
	long accepted;
	int failed;
};

static const char *bindir; /* NULL: programs are found through PATH */
static char spool[PATH_MAX];
static int use_spawn;
static pid_t main_pid, qman_pid;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void program(char *buf, const char *name)
{
	if (bindir)
		path_fmt(buf, "%s/%s", bindir, name);
	else
		path_fmt(buf, "%s", name);
}

/* A dying benchmark must not leave the queue manager running. */
static void stop_qman(void)
{
	if (getpid() == main_pid && qman_pid > 0)
		kill(qman_pid, SIGTERM);
}

/*
 * The message a client sends as its seq'th: a header naming both, so the
 * checker can tell which message a maildir file claims to be, and a body
 * that differs per client and message, with a line break every 64 bytes.
 */
static void fill(char *buf, long size, int client, long seq)
{
	int h = snprintf(buf, (size_t)size, "Subject: mailbench client %d message %ld\n\n", client, seq);

	for (long i = h; i < size; i++)
		buf[i] = i % 64 == 63 ? '\n' : (char)('a' + (i * 7 + client * 13 + seq) % 26);
}

/* Hands one message to a new mail-enqueue; returns 1 if it accepted it. */
static int enqueue(const char *msg, long size, const char *rcpt)
{
	char path[PATH_MAX];
	char *args[] = { "mail-enqueue", spool, (char *)rcpt, NULL };
	int p[2], status, ok = 1;
	pid_t pid;

	program(path, "mail-enqueue");
	/* O_CLOEXEC: mail-enqueue must hold no copy of the write end, or it
	 * would never see end of file. */
	if (pipe2(p, O_CLOEXEC) < 0)
		die("pipe:");
	if (use_spawn) {
		posix_spawn_file_actions_t fa;
		posix_spawnattr_t attr;
		sigset_t pipe;
		int err;

		/* The client ignores SIGPIPE; mail-enqueue gets the default. */
		sigemptyset(&pipe);
		sigaddset(&pipe, SIGPIPE);
		posix_spawnattr_init(&attr);
		posix_spawnattr_setsigdefault(&attr, &pipe);
		posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_adddup2(&fa, p[0], 0);
		err = bindir ? posix_spawn(&pid, path, &fa, &attr, args, environ)
			     : posix_spawnp(&pid, path, &fa, &attr, args, environ);
		posix_spawn_file_actions_destroy(&fa);
		posix_spawnattr_destroy(&attr);
		if (err != 0) {
			errno = err;
			die("posix_spawn %s:", path);
		}
	} else {
		pid = fork();
		if (pid < 0)
			die("fork:");
		if (pid == 0) {
			if (dup2(p[0], 0) < 0)
				_exit(126);
			signal(SIGPIPE, SIG_DFL); /* the client ignores it */
			execvp(path, args);
			fprintf(stderr, "mailbench: exec %s: %s\n", path, strerror(errno));
			_exit(127);
		}
	}
	close(p[0]);
	for (long off = 0; off < size;) {
		ssize_t w = write(p[1], msg + off, (size_t)(size - off));
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			/* EPIPE: mail-enqueue exited early; its status says why. */
			ok = 0;
			break;
		}
		off += w;
	}
	close(p[1]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid:");
	return ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void client(int id, long size, long count, double deadline, int out)
{
	struct report r = { .client = id };
	char rcpt[32];
	char *msg = malloc((size_t)size);

	if (!msg)
		die("client %d: out of memory", id);
	/* A mail-enqueue that dies early must not kill the client with it. */
	signal(SIGPIPE, SIG_IGN);
	snprintf(rcpt, sizeof rcpt, "u%d", id);
	for (long seq = 0; count > 0 ? seq < count : now() < deadline; seq++) {
		fill(msg, size, id, seq);
		if (!enqueue(msg, size, rcpt)) {
			warnx("client %d: mail-enqueue refused message %ld", id, seq);
			r.failed = 1;
			break;
		}
		r.accepted = seq + 1;
	}
	write_all(out, &r, sizeof r, "client report");
	exit(0);
}

static void makedir(const char *fmt, const char *arg)
{
	char path[PATH_MAX];

	path_fmt(path, fmt, spool, arg);
	if (mkdir(path, 0700) < 0)
		die("mkdir %s:", path);
}

/* Starts mail-qman and waits until it says its socket is bound. */
static void start_qman(long deliveries)
{
	char qman[PATH_MAX], deliver[PATH_MAX], jobs[32], ready[8];
	int p[2];
	size_t n;

	program(qman, "mail-qman");
	program(deliver, "mail-deliver");
	snprintf(jobs, sizeof jobs, "%ld", deliveries);
	if (pipe2(p, O_CLOEXEC) < 0)
		die("pipe:");
	qman_pid = fork();
	if (qman_pid < 0)
		die("fork:");
	if (qman_pid == 0) {
		if (dup2(p[1], 1) < 0)
			_exit(126);
		execlp(qman, "mail-qman", "-j", jobs, spool, deliver, (char *)NULL);
		fprintf(stderr, "mailbench: exec %s: %s\n", qman, strerror(errno));
		_exit(127);
	}
	close(p[1]);
	n = read_full(p[0], ready, 6, "mail-qman's ready line");
	close(p[0]);
	if (n != 6 || memcmp(ready, "ready\n", 6) != 0)
		die("mail-qman did not start (see its message above)");
}

static void quit_qman(void)
{
	int status;

	notify_qman(spool, QMAN_QUIT);
	while (waitpid(qman_pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid:");
	qman_pid = 0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("mail-qman failed (status 0x%x)", status);
}

/*
 * Checks client c's maildir: every file must be one of the messages the
 * client had accepted, sent to this mailbox, seen once, with exactly the
 * bytes sent. Returns the number of files; errors are counted in *bad.
 */
static long check_mailbox(int c, long size, long accepted, long *bad)
{
	char dir[PATH_MAX], path[PATH_MAX], name[32];
	char *got = malloc((size_t)size + 1), *want = malloc((size_t)size);
	char *seen = calloc((size_t)accepted + 1, 1);
	struct dirent *e;
	long files = 0;
	DIR *d;

	if (!got || !want || !seen)
		die("out of memory");
	snprintf(name, sizeof name, "u%d", c);
	path_fmt(dir, "%s/mail/%s/new", spool, name);
	d = opendir(dir);
	if (!d)
		die("opendir %s:", dir);
	while ((errno = 0, e = readdir(d)) != NULL) {
		int fc, fd;
		long seq;
		size_t n;

		if (e->d_name[0] == '.')
			continue;
		files++;
		path_fmt(path, "%s/%s", dir, e->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			die("open %s:", path);
		/* Read one byte more than expected to catch a long file. */
		n = read_full(fd, got, (size_t)size + 1, path);
		close(fd);
		got[n < (size_t)size ? n : (size_t)size] = '\0';
		if (sscanf(got, "Subject: mailbench client %d message %ld\n", &fc, &seq) != 2) {
			warnx("%s: not a mailbench message", path);
			(*bad)++;
			continue;
		}
		if (fc != c || seq < 0 || seq >= accepted) {
			warnx("%s: client %d message %ld was not accepted for %s", path, fc, seq, name);
			(*bad)++;
			continue;
		}
		if (seen[seq]++) {
			warnx("%s: client %d message %ld delivered twice", path, fc, seq);
			(*bad)++;
			continue;
		}
		fill(want, size, fc, seq);
		if (n != (size_t)size || memcmp(got, want, (size_t)size) != 0) {
			warnx("%s: content differs from client %d message %ld (%zu bytes, want %ld)",
			      path, fc, seq, n, size);
			(*bad)++;
		}
	}
	if (errno != 0)
		die("readdir %s:", dir);
	closedir(d);
	free(got);
	free(want);
	free(seen);
	return files;
}

/* Returns how many entries a spool directory still has. */
static long leftovers(const char *fmt, const char *arg)
{
	char path[PATH_MAX];
	struct dirent *e;
	long n = 0;
	DIR *d;

	path_fmt(path, fmt, spool, arg);
	d = opendir(path);
	if (!d)
		die("opendir %s:", path);
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	closedir(d);
	if (n > 0)
		warnx("%s: %ld entries left after delivery", path, n);
	return n;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	if (remove(path) < 0)
		warnx("remove %s:", path);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: mailbench [-c CLIENTS] [-t SECONDS | -n MESSAGES] [-s SIZE] [-d DIR]\n"
		"                 [-j DELIVERIES] [-m fork|spawn] [-B BINDIR] [-k]\n"
		"  -c  client processes (default 2)\n"
		"  -t  seconds each client keeps sending (default 5; decimals allowed)\n"
		"  -n  messages per client instead of a duration\n"
		"  -s  message size in bytes, 64 to 16777216 (default 1024)\n"
		"  -d  directory for the spool, which is created in it (default /tmp)\n"
		"  -j  deliveries mail-qman runs at once (default 16)\n"
		"  -m  how clients start mail-enqueue: fork (fork+exec, default) or spawn\n"
		"  -B  directory of mail-enqueue, mail-qman, mail-deliver\n"
		"      (default: mailbench's own directory, or PATH)\n"
		"  -k  keep the spool afterwards (it is always kept on failure)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	long clients = 2, count = 0, size = 1024, deliveries = 16;
	double seconds = 5, start, sent, done;
	const char *dir = "/tmp";
	char *end, self[PATH_MAX];
	int opt, keep = 0, rp[2];

	prog = "mailbench";
	while ((opt = getopt(argc, argv, "c:t:n:s:d:j:m:B:kh")) != -1) {
		switch (opt) {
		case 'c': clients = parse_count(optarg, "-c", 1024); break;
		case 'n': count = parse_count(optarg, "-n", 10000000); break;
		case 's': size = parse_count(optarg, "-s", 16 << 20); break;
		case 'j': deliveries = parse_count(optarg, "-j", 4096); break;
		case 'd': dir = optarg; break;
		case 'B': bindir = optarg; break;
		case 'k': keep = 1; break;
		case 't':
			errno = 0;
			seconds = strtod(optarg, &end);
			if (errno != 0 || end == optarg || *end != '\0' || !(seconds > 0 && seconds <= 86400))
				die("-t: '%s' is not a number of seconds from 0 to 86400", optarg);
			break;
		case 'm':
			if (strcmp(optarg, "fork") == 0)
				use_spawn = 0;
			else if (strcmp(optarg, "spawn") == 0)
				use_spawn = 1;
			else
				die("-m: '%s' is neither fork nor spawn", optarg);
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (size < 64)
		die("-s: %ld bytes is too small for the header (minimum 64)", size);
	if (!bindir && strchr(argv[0], '/')) {
		path_fmt(self, "%s", argv[0]);
		*strrchr(self, '/') = '\0';
		bindir = self[0] ? self : "/";
	}

	main_pid = getpid();
	atexit(stop_qman);
	path_fmt(spool, "%s/mailbench.XXXXXX", dir);
	if (!mkdtemp(spool))
		die("create a spool directory in %s:", dir);
	makedir("%s/pid%s", "");
	makedir("%s/todo%s", "");
	makedir("%s/mess%s", "");
	makedir("%s/mail%s", "");
	for (long c = 0; c < clients; c++) {
		char name[32];

		snprintf(name, sizeof name, "u%ld", c);
		makedir("%s/mail/%s", name);
		makedir("%s/mail/%s/tmp", name);
		makedir("%s/mail/%s/new", name);
		makedir("%s/mail/%s/cur", name);
	}
	start_qman(deliveries);

	if (pipe2(rp, O_CLOEXEC) < 0)
		die("pipe:");
	pid_t *pids = calloc((size_t)clients, sizeof *pids);
	if (!pids)
		die("out of memory");
	start = now();
	for (long c = 0; c < clients; c++) {
		pid_t pid = pids[c] = fork();
		if (pid < 0)
			die("fork:");
		if (pid == 0) {
			close(rp[0]);
			client((int)c, size, count, start + seconds, rp[1]);
		}
	}
	close(rp[1]);

	long *accepted = calloc((size_t)clients, sizeof *accepted);
	long total = 0, failures = 0, bad = 0, delivered = 0, left = 0;
	if (!accepted)
		die("out of memory");
	for (long i = 0; i < clients; i++) {
		struct report r;

		if (read_full(rp[0], &r, sizeof r, "client reports") != sizeof r)
			die("a client exited without reporting (see above)");
		if (r.client < 0 || r.client >= clients)
			die("bad client report");
		accepted[r.client] = r.accepted;
		total += r.accepted;
		failures += r.failed;
	}
	for (long i = 0; i < clients; i++) {
		int status;

		/* By pid: a plain wait() could collect mail-qman instead. */
		while (waitpid(pids[i], &status, 0) < 0)
			if (errno != EINTR)
				die("waitpid:");
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failures++;
	}
	sent = now();
	quit_qman();
	done = now();

	for (long c = 0; c < clients; c++)
		delivered += check_mailbox((int)c, size, accepted[c], &bad);
	left += leftovers("%s/pid%s", "") + leftovers("%s/todo%s", "") + leftovers("%s/mess%s", "");
	for (long c = 0; c < clients; c++) {
		char name[32];

		snprintf(name, sizeof name, "u%ld", c);
		left += leftovers("%s/mail/%s/tmp", name);
	}

	double elapsed = done - start;
	printf("mailbench: %ld clients (%s), %ld-byte messages: %ld accepted in %.2f s, "
	       "%ld delivered and checked after %.2f s: %.1f messages/s\n",
	       clients, use_spawn ? "posix_spawn" : "fork+exec", size, total, sent - start,
	       delivered, elapsed, delivered / elapsed);
	printf("MAILBENCH clients=%ld size=%ld mode=%s accepted=%ld delivered=%ld bad=%ld "
	       "client_failures=%ld enqueue_s=%.3f elapsed_s=%.3f msgs_per_s=%.1f\n",
	       clients, size, use_spawn ? "spawn" : "fork", total, delivered, bad, failures,
	       sent - start, elapsed, delivered / elapsed);
	fflush(stdout);

	int ok = delivered == total && bad == 0 && failures == 0 && left == 0 && total > 0;
	if (!ok) {
		if (total == 0)
			warnx("no message was accepted");
		if (delivered != total)
			warnx("%ld messages accepted but %ld delivered", total, delivered);
		warnx("FAILED; spool kept in %s", spool);
		return 1;
	}
	if (!keep && nftw(spool, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
		die("removing %s:", spool);
	return 0;
}
