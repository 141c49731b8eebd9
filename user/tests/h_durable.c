/*
 * h_durable: the guest side of the power-cut test (tools/powercut), run
 * as init on Shortbread and on Linux with the disk under test as
 * /dev/vda (an ext4 image made by the host's mke2fs). PC_MODE, from the
 * kernel command line, says what to do:
 *
 *   work   mount /dev/vda on /mnt (with the options in PC_OPTS, if set),
 *          make /mnt/pc/d0..d3, print "start", then create, append to,
 *          truncate and remove files there until the power is cut (PC_SEED, or else
 *          getrandom, seeds the choices; "start" names the seed). A line goes to the console
 *          only after what it reports is durable:
 *            durable NAME SIZE HASH  NAME holds SIZE bytes of its pattern
 *                                    (the file was fsynced and, if new,
 *                                    renamed into place and its directory
 *                                    fsynced)
 *            unlink NAME             NAME is about to be removed
 *            gone NAME               the removal is durable (directory
 *                                    fsynced)
 *          Files named sN are written and never synced: after a cut they
 *          may hold anything but stale data. PC_WORKERS=N (1 to 8,
 *          default 1) runs N such processes at once, each with its own
 *          choices and names (d0/w1f7: worker 1's file 7), so that fsyncs
 *          from several processes meet in the file system's journal, as
 *          in a mail server.
 *          PC_WORKLOAD=mail (the start line says "workload=mail") makes
 *          the changes mail deliveries instead, as mailbench's
 *          mail-deliver makes them: a message is written to pc/tmp,
 *          fsynced, renamed into a mailbox (d0..d3) and the mailbox
 *          fsynced, then reported durable; a reader sometimes removes
 *          one. A message's name carries its size (d2/w1m7_5120), so
 *          that the harness can check that every message found after
 *          a cut is whole, reported or not.
 *   check  mount /dev/vda (the journal replays), then for every file
 *            have NAME SIZE GOOD     GOOD: bytes from the start that match
 *                                    the pattern
 *            bad NAME OFFSET         a 512-byte sector that is neither the
 *                                    pattern nor zeros (nor, where the
 *                                    good prefix ends, that prefix and
 *                                    then zeros): data that was never
 *                                    written to this file
 *          unmount, print "checked N" and power off with status 0.
 *
 * A file's bytes are a pattern keyed by its name (without a ".tmp"
 * suffix), the same function the harness computes: byte o is byte o%8 of
 * splitmix64(fnv1a64(name) + o/8). HASH is fnv1a64 of the SIZE bytes.
 * Any failure prints "error WHAT: ERRNO" and powers off with status 1.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define MNT "/mnt"
#define TOP MNT "/pc"
#define DIRS 4
#define MAX_LIVE 160
#define CHUNK (64 * 1024)

static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof buf - 1)
		n = sizeof buf - 1;
	/* one write per line: the harness reads lines as they come */
	if (write(1, buf, (size_t)n) < 0)
		_exit(3);
}

static void stop(int status)
{
	/* The console sends in the background: let the last lines leave
	 * before QEMU exits (as the runner does). */
	tcdrain(1);
	struct timespec settle = { 0, 100 * 1000000 };
	nanosleep(&settle, NULL);
	int fd = open("/dev/port", O_WRONLY);
	if (fd >= 0) {
		unsigned char b = (unsigned char)status;
		if (pwrite(fd, &b, 1, 0xf4) != 1)
			say("error port: %s\n", strerror(errno));
		close(fd);
		reboot(RB_POWER_OFF);
	}
	exit(status);
}

static void fail(const char *what)
{
	say("error %s: %s\n", what, strerror(errno));
	stop(1);
}

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static const uint64_t fnv_basis = 0xcbf29ce484222325ull;

static uint64_t splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* key is the pattern's seed for a file name (".tmp" suffix ignored) */
static uint64_t key(const char *name)
{
	size_t n = strlen(name);
	if (n > 4 && strcmp(name + n - 4, ".tmp") == 0)
		n -= 4;
	return fnv(name, n, fnv_basis);
}

/* fill writes n bytes of the pattern for key k from offset off */
static void fill(unsigned char *p, uint64_t k, uint64_t off, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t o = off + i;
		p[i] = (unsigned char)(splitmix(k + o / 8) >> (8 * (o % 8)));
	}
}

static uint64_t pattern_hash(uint64_t k, uint64_t size)
{
	static unsigned char buf[CHUNK];
	uint64_t h = fnv_basis;
	for (uint64_t off = 0; off < size; off += CHUNK) {
		size_t n = size - off < CHUNK ? (size_t)(size - off) : CHUNK;
		fill(buf, k, off, n);
		h = fnv(buf, n, h);
	}
	return h;
}

static uint64_t rng;
static char wp[8]; /* this worker's name prefix: "" for worker 0, "w1", ... */

static uint64_t rnd(uint64_t n)
{
	rng = splitmix(rng);
	return n ? rng % n : 0;
}

/* write_pattern appends size bytes of name's pattern at off in chunks of
 * random sizes */
static void write_pattern(int fd, const char *name, uint64_t off, uint64_t size)
{
	static unsigned char buf[CHUNK];
	uint64_t k = key(name);
	uint64_t end = off + size;
	while (off < end) {
		size_t n = 1 + rnd(CHUNK);
		if (n > end - off)
			n = (size_t)(end - off);
		fill(buf, k, off, n);
		ssize_t w = pwrite(fd, buf, n, (off_t)off);
		if (w <= 0)
			fail("write");
		off += (uint64_t)w;
	}
}

static uint64_t pick_size(void)
{
	switch (rnd(20)) {
	case 0:
		return 0;
	case 1:
		return 256 * 1024 + rnd(2 * 1024 * 1024);
	case 2: case 3: case 4: case 5:
		return 16 * 1024 + rnd(240 * 1024);
	default:
		return 1 + rnd(16 * 1024);
	}
}

static void fsync_path(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY);
	if (fd < 0 || fsync(fd) != 0)
		fail(path);
	close(fd);
}

struct live {
	char name[32];
	uint64_t size;
};

static struct live live[MAX_LIVE];
static int nlive;

static void op_new(int seq)
{
	struct live *f = &live[nlive];
	int d = (int)rnd(DIRS);
	snprintf(f->name, sizeof f->name, "d%d/%sf%d", d, wp, seq);
	f->size = pick_size();
	char tmp[100], path[80], dir[40];
	snprintf(path, sizeof path, TOP "/%s", f->name);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	snprintf(dir, sizeof dir, TOP "/d%d", d);
	int fd = open(tmp, O_CREAT | O_EXCL | O_WRONLY, 0644);
	if (fd < 0)
		fail("create");
	write_pattern(fd, f->name, 0, f->size);
	if (fsync(fd) != 0)
		fail("fsync");
	close(fd);
	if (rename(tmp, path) != 0)
		fail("rename");
	fsync_path(dir);
	nlive++;
	say("durable %s %llu %016llx\n", f->name, (unsigned long long)f->size,
	    (unsigned long long)pattern_hash(key(f->name), f->size));
}

static void op_append(void)
{
	struct live *f = &live[rnd((uint64_t)nlive)];
	char path[80];
	snprintf(path, sizeof path, TOP "/%s", f->name);
	int fd = open(path, O_WRONLY | O_APPEND);
	if (fd < 0)
		fail("open for append");
	uint64_t more = 1 + rnd(rnd(4) ? 8192 : 128 * 1024);
	write_pattern(fd, f->name, f->size, more);
	if (fsync(fd) != 0)
		fail("fsync");
	close(fd);
	f->size += more;
	say("durable %s %llu %016llx\n", f->name, (unsigned long long)f->size,
	    (unsigned long long)pattern_hash(key(f->name), f->size));
}

/* op_truncate cuts a file below its size (a rewrite through O_TRUNC, a
 * log rotated in place) and fsyncs it: the bytes before the new end stay
 * its pattern, the blocks past it are freed (perhaps to another file
 * before the cut, which must then never show through), and a later
 * append writes the pattern on from there. Its line goes out before the
 * cut starts: "durable NAME SIZE" says NAME holds at least SIZE bytes of
 * its pattern, true before the cut and after it (another process's
 * fsync, or a timed commit, may make the cut durable before this one's
 * fsync returns, and the file is then shorter than its last line said). */
static void op_truncate(void)
{
	struct live *f = &live[rnd((uint64_t)nlive)];
	char path[80];
	snprintf(path, sizeof path, TOP "/%s", f->name);
	f->size = f->size ? rnd(f->size) : 0;
	say("durable %s %llu %016llx\n", f->name, (unsigned long long)f->size,
	    (unsigned long long)pattern_hash(key(f->name), f->size));
	int fd = open(path, O_WRONLY);
	if (fd < 0)
		fail("open for truncate");
	if (ftruncate(fd, (off_t)f->size) != 0)
		fail("ftruncate");
	if (fsync(fd) != 0)
		fail("fsync");
	close(fd);
}

static void op_unlink(void)
{
	int i = (int)rnd((uint64_t)nlive);
	struct live f = live[i];
	live[i] = live[--nlive];
	char path[80], dir[40];
	snprintf(path, sizeof path, TOP "/%s", f.name);
	snprintf(dir, sizeof dir, TOP "/d%c", f.name[1]);
	say("unlink %s\n", f.name);
	if (unlink(path) != 0)
		fail("unlink");
	fsync_path(dir);
	say("gone %s\n", f.name);
}

/* op_deliver delivers a message of a mail-like size to a mailbox */
static void op_deliver(int seq)
{
	struct live *f = &live[nlive];
	int d = (int)rnd(DIRS);
	f->size = rnd(10) ? 200 + rnd(8 * 1024) : 8 * 1024 + rnd(120 * 1024);
	snprintf(f->name, sizeof f->name, "d%d/%sm%d_%llu", d, wp, seq, (unsigned long long)f->size);
	char tmp[100], path[80], dir[40];
	snprintf(path, sizeof path, TOP "/%s", f->name);
	snprintf(tmp, sizeof tmp, TOP "/tmp/%sm%d", wp, seq);
	snprintf(dir, sizeof dir, TOP "/d%d", d);
	int fd = open(tmp, O_CREAT | O_EXCL | O_WRONLY, 0600);
	if (fd < 0)
		fail("create in tmp");
	/* the bytes the message will be checked against in its mailbox */
	write_pattern(fd, f->name, 0, f->size);
	if (fsync(fd) != 0)
		fail("fsync");
	close(fd);
	if (rename(tmp, path) != 0)
		fail("rename into the mailbox");
	fsync_path(dir);
	nlive++;
	say("durable %s %llu %016llx\n", f->name, (unsigned long long)f->size,
	    (unsigned long long)pattern_hash(key(f->name), f->size));
}

/* mail is the work loop of PC_WORKLOAD=mail; it never returns */
static void mail(void)
{
	for (int seq = 0;; seq++) {
		if (nlive == 0 || (rnd(100) < 85 && nlive < MAX_LIVE))
			op_deliver(seq);
		else
			op_unlink();
	}
}

/* op_scratch writes a file that is never synced */
static void op_scratch(int seq)
{
	char name[32], path[80];
	snprintf(name, sizeof name, "d%d/%ss%d", (int)rnd(DIRS), wp, seq);
	snprintf(path, sizeof path, TOP "/%s", name);
	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
	if (fd < 0)
		fail("create scratch");
	write_pattern(fd, name, 0, pick_size());
	close(fd);
}

static void mount_disk(const char *opts)
{
	/* Linux probes the disk in the background */
	for (int i = 0; i < 100 && access("/dev/vda", F_OK) != 0; i++)
		usleep(100 * 1000);
	mkdir(MNT, 0755);
	if (mount("/dev/vda", MNT, "ext4", 0, opts) != 0)
		fail("mount");
}

static void work(void)
{
	const char *s = getenv("PC_SEED");
	if (s)
		rng = strtoull(s, NULL, 10);
	else if (getrandom(&rng, sizeof rng, 0) != sizeof rng)
		fail("getrandom");
	mount_disk(getenv("PC_OPTS"));
	if (mkdir(TOP, 0755) != 0)
		fail("mkdir");
	for (int d = 0; d < DIRS; d++) {
		char dir[40];
		snprintf(dir, sizeof dir, TOP "/d%d", d);
		if (mkdir(dir, 0755) != 0)
			fail("mkdir");
	}
	const char *workload = getenv("PC_WORKLOAD");
	int is_mail = workload && strcmp(workload, "mail") == 0;
	if (workload && !is_mail && strcmp(workload, "files") != 0) {
		errno = EINVAL;
		fail("PC_WORKLOAD");
	}
	if (is_mail && mkdir(TOP "/tmp", 0755) != 0)
		fail("mkdir tmp");
	fsync_path(TOP);
	fsync_path(MNT);
	say("start seed=%llu%s\n", (unsigned long long)rng, is_mail ? " workload=mail" : "");
	const char *w = getenv("PC_WORKERS");
	int workers = w ? atoi(w) : 1;
	if (workers < 1 || workers > 8) {
		errno = EINVAL;
		fail("PC_WORKERS");
	}
	for (int i = 1; i < workers; i++) {
		pid_t pid = fork();
		if (pid < 0)
			fail("fork");
		if (pid == 0) {
			snprintf(wp, sizeof wp, "w%d", i);
			rng = splitmix(rng + (uint64_t)i);
			break;
		}
	}
	if (is_mail)
		mail();
	for (int seq = 0;; seq++) {
		uint64_t r = rnd(100);
		if (nlive == 0 || (r < 45 && nlive < MAX_LIVE))
			op_new(seq);
		else if (r < 70)
			op_append();
		else if (r < 82 || nlive == MAX_LIVE)
			op_unlink();
		else if (r < 90)
			op_truncate();
		else
			op_scratch(seq);
	}
}

/* check_file reports one file's size, its good prefix and any sector of
 * data that is neither the pattern nor zeros */
static void check_file(const char *name, int *count)
{
	static unsigned char buf[CHUNK], want[CHUNK];
	char path[400];
	snprintf(path, sizeof path, TOP "/%s", name);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		fail("open for check");
	uint64_t k = key(name), off = 0, good = 0, bad = UINT64_MAX;
	int prefix = 1;
	for (;;) {
		ssize_t n = read(fd, buf, CHUNK);
		if (n < 0)
			fail("read");
		if (n == 0)
			break;
		fill(want, k, off, (size_t)n);
		for (ssize_t i = 0; i < n; i += 512) {
			size_t m = (size_t)(n - i) < 512 ? (size_t)(n - i) : 512;
			int same = memcmp(buf + i, want + i, m) == 0, zero = 1;
			for (size_t j = 0; j < m && zero; j++)
				zero = buf[i + j] == 0;
			if (prefix && same) {
				good += m;
				continue;
			}
			if (prefix) {
				/* the good prefix may end inside this sector */
				size_t j = 0;
				while (j < m && buf[i + j] == want[i + j])
					j++;
				good += j;
				prefix = 0;
				/* and zeros follow it there when an end of file
				 * was inside the sector and a later write past it
				 * grew the file but did not land: not stale data */
				while (j < m && buf[i + j] == 0)
					j++;
				if (j == m)
					continue;
			}
			if (!same && !zero && bad == UINT64_MAX)
				bad = off + (uint64_t)i;
		}
		off += (uint64_t)n;
	}
	close(fd);
	say("have %s %llu %llu\n", name, (unsigned long long)off, (unsigned long long)good);
	if (bad != UINT64_MAX)
		say("bad %s %llu\n", name, (unsigned long long)bad);
	(*count)++;
}

static void check(void)
{
	mount_disk(NULL);
	int count = 0;
	for (int d = 0; d < DIRS; d++) {
		char dir[40];
		snprintf(dir, sizeof dir, TOP "/d%d", d);
		DIR *dp = opendir(dir);
		if (!dp) {
			if (errno == ENOENT)
				continue; /* the cut came before the directories were durable */
			fail("opendir");
		}
		struct dirent *e;
		while ((e = readdir(dp))) {
			if (e->d_name[0] == '.')
				continue;
			char name[300];
			snprintf(name, sizeof name, "d%d/%s", d, e->d_name);
			check_file(name, &count);
		}
		closedir(dp);
	}
	if (umount(MNT) != 0)
		fail("umount");
	say("checked %d\n", count);
	stop(0);
}

int main(void)
{
	if (getpid() == 1) {
		mkdir("/proc", 0555);
		mkdir("/dev", 0755);
		mount("proc", "/proc", "proc", 0, NULL);
		mount("devtmpfs", "/dev", "devtmpfs", 0, "mode=0755");
		/* Linux: virtio-blk and ext4 are modules (tools/powercut adds
		 * them and /lib/modules/load-order, dependencies first) */
		FILE *f = fopen("/lib/modules/load-order", "r");
		char name[128], path[200];
		while (f && fscanf(f, "%127s", name) == 1) {
			snprintf(path, sizeof path, "/lib/modules/%s.ko", name);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0 || syscall(SYS_finit_module, fd, "", 0) != 0)
				say("# module %s: %s\n", name, strerror(errno));
			if (fd >= 0)
				close(fd);
		}
		if (f)
			fclose(f);
	}
	const char *mode = getenv("PC_MODE");
	if (mode && strcmp(mode, "work") == 0)
		work();
	else if (mode && strcmp(mode, "check") == 0)
		check();
	say("error PC_MODE: want work or check\n");
	stop(2);
}
