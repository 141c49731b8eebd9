/* t_churn: nothing leaks. Rounds of the same work -- small and large files
 * created, written and unlinked, renames over existing files, a tree
 * removed as rm -rf does, files unlinked while open and while mapped,
 * pipes, fork and exit, programs unlinked while they run -- and MemFree,
 * after any two rounds in a row past the first, must be within
 * LEAK_BOUND_KB of what it was after the first (which warms up whatever
 * the kernel keeps: caches, its heap, page tables) in at least one of
 * them: a leak lowers every later reading, while a single reading may
 * dip and come back the round after (Linux's by up to 0.9 MiB; on
 * Shortbread, until drop_caches collected twice, by the 1 MiB write
 * buffer its pools kept for one more collection).
 *
 * The counts are chosen so that a leak of one page per operation of any
 * one kind, over the rounds after the first, is well past the bound: each
 * kind runs OPS times a round (small files 4 * OPS), but for fork, which
 * costs ~10 ms under QEMU's TCG, FORKS times; by the next-to-last round,
 * (ROUNDS - 2) * FORKS pages = 4 * 200 * 4 KiB = 3.1 MiB, and 4.7 MiB for
 * the others, against a bound of 2 MiB. (A program unlinked while it runs
 * is exec'd EXECS times a round: what would leak there is its image, 6
 * pages, 2.8 MiB by then.)
 * Linux's MemFree moved by up to 0.9 MiB between rounds,
 * Shortbread's by 0.1 MiB. A file whose data leaks loses far more than a
 * page. Before each reading the
 * caches are dropped (/proc/sys/vm/drop_caches: Linux's page cache and
 * slab; on Shortbread the Go heap's garbage and free spans), so the
 * figure is what is really held, on both kernels.
 *
 * With EXT4_DISK (the harness's ext4 image, which t_dirpos and t_mount
 * use too; root, in the test guest), the same rounds run again in a
 * directory of that disk, mounted in a private directory, and the disk
 * is then filled and emptied: a disk file system's memory (its journal's
 * committed copies, cached metadata, the page cache's bookkeeping) must
 * come back after sync and drop_caches as tmpfs's does. Everything is
 * removed again before the unmount. */
#define _GNU_SOURCE
#include "check.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>

#define ROUNDS 6
#define OPS 300
#define FORKS 200
#define EXECS 30
#define LEAK_BOUND_KB 2048

/* meminfo_diff prints the lines of /proc/meminfo that changed since the
 * snapshot in old (what a failed bound points at). */
static void meminfo_snap(char *buf, size_t size)
{
	int fd = open("/proc/meminfo", O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, size - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
}

static void meminfo_diff(const char *old)
{
	char now[8192];
	meminfo_snap(now, sizeof now);
	for (const char *p = now; *p;) {
		const char *colon = strchr(p, ':'), *nl = strchr(p, '\n');
		if (!colon || !nl)
			break;
		char key[64];
		snprintf(key, sizeof key, "\n%.*s:", (int)(colon - p), p);
		const char *q = strstr(old, key + 1) == old ? old : strstr(old, key);
		if (q) {
			q = strchr(q + 1, ':');
			long was = strtol(q + 1, NULL, 10), is = strtol(colon + 1, NULL, 10);
			if (was != is)
				printf("#   %s %ld -> %ld kB (%+ld)\n", key + 1, was, is, is - was);
		}
		p = nl + 1;
	}
}

/* MemFree after dropping what the kernel can drop. Only in the test guest
 * (the runner is init, our parent): on a host run the caches belong to
 * everyone else on the machine too. */
static long settled_free(void)
{
	sync();
	int fd = getppid() == 1 ? open("/proc/sys/vm/drop_caches", O_WRONLY) : -1;
	if (fd >= 0) {
		if (write(fd, "3", 1) != 1)
			printf("# drop_caches: %s\n", strerror(errno));
		close(fd);
	}
	/* MemFree, with the free pages the kernel's Go heap holds: free
	 * spans (Shortbread's GoHeapFree) are no memory in use, and the
	 * runtime gives them back at its own pace or under pressure, so
	 * background work (a journal commit, the flusher) that allocated and
	 * freed a few MiB after drop_caches gave them back moves MemFree
	 * alone (seen: 2.2 MiB lower with 2.7 MiB more heap free). Both from
	 * one reading of the file; Linux has no such line. */
	char buf[8192];
	if (check_read_file("/proc/meminfo", buf, sizeof buf) < 0)
		return -1;
	long free = -1, heapfree = 0;
	for (char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (strncmp(p, "MemFree:", 8) == 0)
			free = strtol(p + 8, NULL, 10);
		else if (strncmp(p, "GoHeapFree:", 11) == 0)
			heapfree = strtol(p + 11, NULL, 10);
	}
	return free < 0 ? -1 : free + heapfree;
}

static int failures; /* operations that went wrong, over all rounds */
#define EXPECT(cond) \
	do { \
		if (!(cond)) { \
			if (failures++ < 10) \
				printf("# failed: %s (%s:%d, errno %d)\n", #cond, __FILE__, __LINE__, errno); \
		} \
	} while (0)

static char block[1 << 20] __attribute__((aligned(4096)));

static void write_file(const char *path, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	EXPECT(fd >= 0);
	for (size_t done = 0; done < size;) {
		size_t n = size - done < sizeof block ? size - done : sizeof block;
		ssize_t w = write(fd, block, n);
		EXPECT(w == (ssize_t)n);
		if (w <= 0)
			break;
		done += w;
	}
	close(fd);
}

static void small_files(void)
{
	char name[64];
	for (int i = 0; i < 4 * OPS; i++) {
		snprintf(name, sizeof name, "small%d", i);
		write_file(name, 16);
	}
	for (int i = 0; i < 4 * OPS; i++) {
		snprintf(name, sizeof name, "small%d", i);
		EXPECT(unlink(name) == 0);
	}
}

/* Large files: removed by unlink, by rename over them, and by truncation
 * to zero first. */
static void large_files(void)
{
	for (int i = 0; i < 4; i++) {
		write_file("large", 4 << 20);
		switch (i % 3) {
		case 0:
			EXPECT(unlink("large") == 0);
			break;
		case 1:
			write_file("large.new", 1);
			EXPECT(rename("large.new", "large") == 0);
			EXPECT(unlink("large") == 0);
			break;
		case 2:
			EXPECT(truncate("large", 0) == 0);
			EXPECT(unlink("large") == 0);
			break;
		}
	}
}

static void rename_over(void)
{
	write_file("target", 4096);
	for (int i = 0; i < OPS; i++) {
		write_file("incoming", 4096);
		EXPECT(rename("incoming", "target") == 0);
	}
	EXPECT(unlink("target") == 0);
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st, (void)type, (void)ftw;
	EXPECT(remove(path) == 0);
	return 0;
}

/* A tree of 20 directories of 15 files (300 files), removed depth first
 * as rm -rf does. */
static void tree(void)
{
	char path[128];
	EXPECT(mkdir("tree", 0755) == 0);
	for (int d = 0; d < 20; d++) {
		snprintf(path, sizeof path, d < 10 ? "tree/d%d" : "tree/d%d/sub", d % 10);
		EXPECT(mkdir(path, 0755) == 0);
		for (int f = 0; f < OPS / 20; f++) {
			snprintf(path, sizeof path, d < 10 ? "tree/d%d/f%d" : "tree/d%d/sub/f%d", d % 10, f);
			write_file(path, 100);
		}
	}
	EXPECT(nftw("tree", remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0);
	EXPECT(access("tree", F_OK) == -1);
}

/* Unlinked while open: still readable and writable until closed. */
static void unlink_open(void)
{
	char buf[8192];
	for (int i = 0; i < OPS; i++) {
		int fd = open("open", O_RDWR | O_CREAT | O_TRUNC, 0644);
		EXPECT(fd >= 0);
		memset(buf, 'a' + i % 26, sizeof buf);
		EXPECT(write(fd, buf, 4096) == 4096);
		EXPECT(unlink("open") == 0);
		EXPECT(write(fd, buf, sizeof buf) == sizeof buf);
		memset(buf, 0, sizeof buf);
		EXPECT(pread(fd, buf, sizeof buf, 4096) == sizeof buf && buf[8191] == 'a' + i % 26);
		close(fd);
	}
}

/* Mapped, then unlinked and closed: the mapping still shows the file and
 * writes through it work, until munmap. */
static void mmap_unlink(void)
{
	for (int i = 0; i < OPS; i++) {
		int fd = open("mapped", O_RDWR | O_CREAT | O_TRUNC, 0644);
		EXPECT(fd >= 0);
		EXPECT(ftruncate(fd, 8192) == 0);
		char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		EXPECT(m != MAP_FAILED);
		EXPECT(unlink("mapped") == 0);
		close(fd);
		if (m == MAP_FAILED)
			continue;
		m[0] = 'x';
		m[4096] = 'y';
		EXPECT(m[0] == 'x' && m[4096] == 'y' && m[100] == 0);
		EXPECT(munmap(m, 8192) == 0);
	}
}

static void pipes(void)
{
	char buf[4096];
	memset(buf, 'p', sizeof buf);
	for (int i = 0; i < OPS; i++) {
		int p[2];
		EXPECT(pipe(p) == 0);
		EXPECT(write(p[1], buf, sizeof buf) == sizeof buf);
		EXPECT(read(p[0], buf, sizeof buf) == sizeof buf);
		close(p[0]);
		close(p[1]);
	}
}

/* files that are events: timerfds (armed, read, closed armed), signalfds,
 * pidfds, flock locks and leases dropped by close, pipes signalling with
 * O_ASYNC, POSIX timers; all they hold goes with the close or delete */
static void event_files(void)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGRTMIN + 5);
	sigprocmask(SIG_BLOCK, &s, NULL);
	int fd = open("evfile", O_RDWR | O_CREAT | O_TRUNC, 0644);
	EXPECT(fd >= 0);
	close(fd);
	for (int i = 0; i < OPS; i++) {
		int t = timerfd_create(CLOCK_MONOTONIC, 0);
		struct itimerspec its = {.it_value = {0, 100000}, .it_interval = {0, 1000000}};
		uint64_t n;
		EXPECT(t >= 0 && timerfd_settime(t, 0, &its, NULL) == 0 && read(t, &n, 8) == 8);
		close(t);
		int sf = signalfd(-1, &s, 0);
		EXPECT(sf >= 0);
		close(sf);
		int pf = (int)syscall(SYS_pidfd_open, getpid(), 0);
		EXPECT(pf >= 0);
		close(pf);
		int f = open("evfile", O_RDONLY);
		EXPECT(flock(f, LOCK_EX) == 0 && fcntl(f, F_SETLEASE, F_RDLCK) == 0);
		close(f);
		int p[2];
		EXPECT(pipe(p) == 0 && fcntl(p[0], F_SETOWN, getpid()) == 0 && fcntl(p[0], F_SETSIG, SIGRTMIN + 5) == 0 &&
		       fcntl(p[0], F_SETFL, O_ASYNC) == 0);
		close(p[0]);
		close(p[1]);
		timer_t tm;
		struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGRTMIN + 5};
		EXPECT(timer_create(CLOCK_MONOTONIC, &ev, &tm) == 0 && timer_settime(tm, 0, &its, NULL) == 0);
		timer_delete(tm);
	}
	struct timespec zero = {0, 0};
	while (sigtimedwait(&s, NULL, &zero) > 0)
		;
	unlink("evfile");
}

/* fork and exit; the child writes a page of its own and one it shares
 * copy-on-write with the parent. */
char cow_page[4096]; /* written by the parent before forking: shared */

static void fork_exit(void)
{
	/* The write buffer goes back first: fork's cost grows with the
	 * pages it must share copy-on-write (the buffer's contents do not
	 * matter; they read as zeros from now on). */
	madvise(block, sizeof block, MADV_DONTNEED);
	cow_page[0] = 1;
	for (int i = 0; i < FORKS; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			char *own = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (own == MAP_FAILED)
				_exit(1);
			own[0] = 1;
			cow_page[0] = 2;
			_exit(0);
		}
		EXPECT(pid > 0);
		int status = -1;
		EXPECT(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
}

/* h_exec's bytes: each run copies it to a file of its own. */
static char *prog;
static size_t prog_len;

static void load_prog(const char *testdir)
{
	char path[300];
	snprintf(path, sizeof path, "%s/h_exec", testdir);
	int fd = open(path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		printf("# %s: %s\n", path, strerror(errno));
		return;
	}
	prog = malloc(st.st_size);
	if (prog && read(fd, prog, st.st_size) == st.st_size)
		prog_len = st.st_size;
	close(fd);
}

/* A program copied, run, and unlinked while it runs (it waits for its
 * stdin to close): its running image holds the file's pages, which go
 * when it exits. */
static void exec_unlink(void)
{
	for (int i = 0; i < EXECS && prog_len; i++) {
		int fd = open("prog", O_WRONLY | O_CREAT | O_TRUNC, 0755);
		EXPECT(fd >= 0 && write(fd, prog, prog_len) == (ssize_t)prog_len);
		close(fd);
		int in[2], execd[2];
		EXPECT(pipe(in) == 0 && pipe2(execd, O_CLOEXEC) == 0);
		pid_t pid = fork();
		if (pid == 0) {
			dup2(in[0], 0);
			close(in[1]);
			char *argv[] = { "prog", "wait", NULL }, *envp[] = { NULL };
			execve("./prog", argv, envp);
			int e = errno;
			write(execd[1], &e, sizeof e);
			_exit(127);
		}
		close(in[0]);
		close(execd[1]);
		int e = 0;
		EXPECT(read(execd[0], &e, sizeof e) == 0); /* closed by the exec */
		close(execd[0]);
		EXPECT(unlink("prog") == 0);
		close(in[1]);
		int status = -1;
		EXPECT(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
}

/* The working directory's file system filled to the end with one file
 * (checks named WHAT.*): the writes stop with ENOSPC (on tmpfs at its
 * size limit, half the memory by default, on both kernels; on ext4 when
 * the disk is full) after at least LEAST bytes, without bringing the
 * kernel down, and unlinking the file gives everything back. Only in
 * the test guest: on a host run /tmp is the host's disk. */
static void fill(const char *what, long long least)
{
	char name[64];
	if (getppid() != 1) {
		printf("# %s: skipped (not in the test guest)\n", what);
		return;
	}
	long before = settled_free();
	static char snap[8192];
	meminfo_snap(snap, sizeof snap);
	int fd = open("fill", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	snprintf(name, sizeof name, "%s.create", what);
	CHECK_SYS(name, fd);
	long long total = 0;
	int err = 0;
	while (total < (4LL << 30)) {
		ssize_t w = write(fd, block, sizeof block);
		if (w < 0) {
			err = errno;
			break;
		}
		total += w;
	}
	if (err == ENOSPC) {
		/* A write past the end that writes nothing leaves the size. */
		ssize_t w = pwrite(fd, block, sizeof block, total + (1 << 20));
		snprintf(name, sizeof name, "%s.past_end_enospc", what);
		CHECK_EQ(name, w < 0 ? errno : 0, ENOSPC);
		struct stat st;
		snprintf(name, sizeof name, "%s.past_end_size_kept", what);
		CHECK_EQ(name, fstat(fd, &st) == 0 ? st.st_size : -1, total);
	}
	close(fd);
	printf("# %s: %lld MiB written before %s; MemFree %ld kB\n", what, total >> 20, strerror(err), check_meminfo("MemFree"));
	snprintf(name, sizeof name, "%s.enospc", what);
	CHECK_EQ(name, err, ENOSPC);
	snprintf(name, sizeof name, "%s.took_a_lot", what);
	CHECK(name, total >= least);
	snprintf(name, sizeof name, "%s.meminfo_still_reads", what);
	CHECK(name, check_meminfo("MemTotal") > 0);
	snprintf(name, sizeof name, "%s.unlink", what);
	CHECK_SYS(name, unlink("fill"));
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	int status = -1;
	snprintf(name, sizeof name, "%s.fork_works_after", what);
	CHECK(name, pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status));
	/* The better of two readings, as for the rounds: a leak lowers
	 * both, while the kernel may take fresh pages for its heap between
	 * the drop and one reading (work that came meanwhile: a commit, the
	 * flusher), which only makes this one lower. */
	long after = settled_free(), again = settled_free();
	if (again > after)
		after = again;
	printf("# %s: MemFree %ld kB before, %ld kB after the unlink\n", what, before, after);
	snprintf(name, sizeof name, "%s.given_back", what);
	if (!CHECK(name, before - after <= LEAK_BOUND_KB))
		meminfo_diff(snap);
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Rounds of every kind of work, MemFree read after each: after any two
 * rounds in a row past the first, one must be within LEAK_BOUND_KB of
 * the first's (checks named WHAT.roundsR_R+1_within_bound). */
static void rounds(const char *what, int n)
{
	struct {
		const char *name;
		void (*fn)(void);
	} kinds[] = {
		{ "small_files", small_files }, { "large_files", large_files }, { "rename_over", rename_over },
		{ "tree", tree }, { "unlink_open", unlink_open }, { "mmap_unlink", mmap_unlink },
		{ "pipes", pipes }, { "fork_exit", fork_exit }, { "exec_unlink", exec_unlink },
		{ "event_files", event_files },
	};
	/* Shortbread's own counts (absent on Linux: -1): goroutines, and
	 * every lock, flock lock and lease, after round 1 */
	long gor1 = -1, locks1 = -1;
	long first = 0, worst = 0, prev = 0;
	long long t0 = now_ms();
	for (int r = 1; r <= n; r++) {
		long long tr = now_ms();
		printf("# %s round %d:", what, r);
		for (unsigned k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
			long long tk = now_ms();
			kinds[k].fn();
			printf(" %s %lld ms", kinds[k].name, now_ms() - tk);
		}
		long free = settled_free();
		printf("; %lld ms, MemFree %ld kB\n", now_ms() - tr, free);
		char name[80];
		if (r == 1) {
			gor1 = check_proc_value("/proc/shortbread/kmem", "/sched/goroutines:goroutines");
			locks1 = check_proc_value("/proc/shortbread/kmem", "record_locks");
			first = free;
			snprintf(name, sizeof name, "%s.read", what);
			CHECK(name, free > 0);
			continue;
		}
		if (r > 2) {
			/* the better of two readings in a row: a leak lowers both */
			long best = free > prev ? free : prev;
			snprintf(name, sizeof name, "%s.rounds%d_%d_within_bound", what, r - 1, r);
			if (!CHECK(name, first - best <= LEAK_BOUND_KB))
				printf("# rounds %d and %d: MemFree %ld and %ld kB, both more than %d kB below round 1's %ld\n",
				       r - 1, r, prev, free, LEAK_BOUND_KB, first);
			if (first - best > worst)
				worst = first - best;
		}
		prev = free;
	}
	if (gor1 >= 0) {
		long gor = check_proc_value("/proc/shortbread/kmem", "/sched/goroutines:goroutines");
		long locks = check_proc_value("/proc/shortbread/kmem", "record_locks");
		/* kmem.* for the first rounds, ext4.kmem.* for those on ext4 */
		const char *kmem = strcmp(what, "memfree") ? "ext4.kmem" : "kmem";
		char name[80];
		snprintf(name, sizeof name, "%s.goroutines_back", kmem);
		if (!CHECK(name, gor <= gor1 + 8))
			printf("# goroutines %ld after round 1, %ld at the end\n", gor1, gor);
		snprintf(name, sizeof name, "%s.locks_back", kmem);
		CHECK_EQ(name, locks, locks1);
	}
	printf("# %s: %d rounds in %lld ms; MemFree at most %ld kB below round 1's in two rounds in a row (bound %d kB)\n",
	       what, n, now_ms() - t0, worst, LEAK_BOUND_KB);
}

/* The entries of the working directory, but for . and .. */
static int left_in_dir(void)
{
	int n = 0;
	DIR *d = opendir(".");
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	if (d)
		closedir(d);
	return n;
}

/* The rounds and the fill again on the EXT4_DISK image, mounted at
 * TMP/mnt: three rounds (the first warms the file system's caches up),
 * then the disk filled to ENOSPC and emptied. The harness's image is
 * 256 MiB, so that what a file system keeps per block written is seen:
 * the page cache's bookkeeping once kept ~80 bytes for each page it ever
 * held (-5 MiB after a 229 MiB file, against a 2 MiB bound). */
static void on_ext4(const char *tmp)
{
	const char *disk = getenv("EXT4_DISK");
	if (geteuid() != 0 || getppid() != 1 || !disk || !*disk) {
		printf("# ext4: skipped (no EXT4_DISK, or not root in the test guest)\n");
		return;
	}
	char dev[64], mnt[300];
	snprintf(dev, sizeof dev, "/dev/%s", disk);
	snprintf(mnt, sizeof mnt, "%s/mnt", tmp);
	CHECK_SYS("ext4.mkdir_mnt", mkdir(mnt, 0755));
	if (!CHECK_SYS("ext4.mount", mount(dev, mnt, "ext4", 0, NULL)))
		return;
	char work[340];
	snprintf(work, sizeof work, "%s/t_churn", mnt);
	if (CHECK_SYS("ext4.mkdir", mkdir(work, 0755)) && CHECK_SYS("ext4.chdir", chdir(work))) {
		failures = 0;
		rounds("ext4.memfree", 3);
		CHECK_EQ("ext4.operations_all_worked", failures, 0);
		fill("ext4.fill", 128LL << 20);
		CHECK_EQ("ext4.nothing_left_in_dir", left_in_dir(), 0);
		CHECK_SYS("ext4.chdir_back", chdir(tmp));
		CHECK_SYS("ext4.rmdir", rmdir(work));
	}
	CHECK_SYS("ext4.umount", umount(mnt));
	CHECK_SYS("ext4.rmdir_mnt", rmdir(mnt));
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	load_prog(check_testdir(argv[0])); /* before the chdir: the path may be relative */
	CHECK("load_h_exec", prog_len > 0);
	const char *dir = check_mktmp();
	CHECK_SYS("chdir", chdir(dir));
	memset(block, 'b', sizeof block);
	rounds("memfree", ROUNDS);
	CHECK_EQ("operations_all_worked", failures, 0);
	fill("fill", 64LL << 20);
	CHECK_EQ("nothing_left_in_dir", left_in_dir(), 0);
	on_ext4(dir);
	CHECK_SYS("chdir_back", chdir("/"));
	CHECK_SYS("rmdir", rmdir(dir));
	return check_done();
}
