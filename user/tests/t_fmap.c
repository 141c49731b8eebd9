/*
 * t_fmap: files on ext4 mapped through the page cache. With EXT4_DISK=vdb
 * (the image t_mount uses, made by mke2fs -t ext4), the disk is mounted
 * in a private directory and:
 *   - a shared mapping shows the file's bytes (zeros past the end in the
 *     last page) and is the file's one copy: a pwrite shows in it, a
 *     store through it shows to pread, to a second mapping of the same
 *     page, and from a fork child; a store into a hole allocates blocks
 *     (st_blocks grows); msync(MS_SYNC) succeeds;
 *   - fsync leaves the pages a shared mapping stored to clean (Dirty
 *     in /proc/meminfo falls), the next stores dirty them again, and
 *     the next fsync writes them (read back after drop_caches);
 *   - a private mapping shows the file until it stores to a page, then
 *     its own copy, and the file never sees the store;
 *   - after a truncate, a page past the end faults with SIGBUS in a
 *     shared and a private mapping; grown again it reads as zeros;
 *   - a file filled only through a shared mapping and msync'd reads back
 *     after an unmount and mount (and `t_fmap --check-image IMAGE` on the
 *     host: e2fsck -fn finds the image clean, debugfs finds the bytes);
 *   - a program copied to the disk runs from it;
 *   - rounds of files mapped shared and private, stored to, unmapped and
 *     unlinked: MemFree after drop_caches stays within LEAK_BOUND_KB of
 *     the first round's in one of two rounds in a row (t_churn's rule).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "check.h"

#define PG 4096L
#define DURABLE_PAGES 8
#define ROUNDS 6
#define OPS 200
#define CHURN_PAGES 16
#define LEAK_BOUND_KB 2048

static char mnt[300];

/* byte i of the test files */
static unsigned char pat(long i)
{
	unsigned x = (unsigned)i * 2246822519u;
	return (unsigned char)(x >> 11 ^ x >> 3 ^ (unsigned)i);
}

static sigjmp_buf fault_jmp;
static volatile int fault_sig;

static void on_fault(int sig)
{
	fault_sig = sig;
	siglongjmp(fault_jmp, 1);
}

/* whether reading *p faults */
static int faults(volatile char *p)
{
	fault_sig = 0;
	if (sigsetjmp(fault_jmp, 1))
		return 1;
	(void)*p;
	return 0;
}

static void path(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/t_fmap/%s", mnt, name);
}

static void test_shared(void)
{
	char p[400];
	path(p, sizeof p, "shared");
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK_SYS("shared.create", fd);
	static unsigned char buf[3 * PG + 100];
	for (long i = 0; i < (long)sizeof buf; i++)
		buf[i] = pat(i);
	CHECK_EQ("shared.write", write(fd, buf, sizeof buf), (ssize_t)sizeof buf);
	char *m = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (!CHECK("shared.mmap", m != MAP_FAILED))
		return;
	CHECK("shared.reads_file", memcmp(m, buf, sizeof buf) == 0);
	CHECK("shared.tail_zero", m[sizeof buf] == 0 && m[4 * PG - 1] == 0);
	CHECK_EQ("shared.pwrite", pwrite(fd, "WRITE", 5, PG + 7), 5);
	CHECK("shared.sees_write", memcmp(m + PG + 7, "WRITE", 5) == 0);
	memcpy(m + 2 * PG + 11, "STORE", 5);
	char r[8] = { 0 };
	CHECK_EQ("shared.pread", pread(fd, r, 5, 2 * PG + 11), 5);
	CHECK_STR("shared.read_sees_store", r, "STORE");

	/* a store into a hole: its blocks are allocated at the store */
	CHECK_SYS("shared.grow", ftruncate(fd, 6 * PG));
	char *g = mmap(NULL, 6 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (!CHECK("shared.mmap_grown", g != MAP_FAILED))
		return;
	struct stat before, after;
	fstat(fd, &before);
	CHECK("shared.hole_reads_zero", g[5 * PG + 3] == 0);
	g[5 * PG + 3] = 'h';
	fstat(fd, &after);
	CHECK("shared.hole_store_allocates", after.st_blocks > before.st_blocks);
	CHECK("shared.hole_store_read", pread(fd, r, 1, 5 * PG + 3) == 1 && r[0] == 'h');
	CHECK("shared.other_mapping_sees_store", m[2 * PG + 11] == 'S' && g[2 * PG + 11] == 'S');
	CHECK_SYS("shared.msync", msync(g, 6 * PG, MS_SYNC));
	CHECK_SYS("shared.msync_async", msync(g, 6 * PG, MS_ASYNC));

	/* a fork child's store through the inherited mapping */
	pid_t pid = fork();
	if (pid == 0) {
		memcpy(g + 9, "CHILD", 5);
		_exit(0);
	}
	int st;
	CHECK("shared.child_exit", waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK("shared.child_store_seen", memcmp(m + 9, "CHILD", 5) == 0);
	CHECK("shared.child_store_read", pread(fd, r, 5, 9) == 5 && memcmp(r, "CHILD", 5) == 0);

	/* a mapping at an offset is the same page */
	char *o = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, PG);
	if (CHECK("shared.mmap_offset", o != MAP_FAILED)) {
		CHECK("shared.offset_sees_write", memcmp(o + 7, "WRITE", 5) == 0);
		o[100] = 's';
		CHECK("shared.offset_store_seen", m[PG + 100] == 's');
		munmap(o, PG);
	}
	/* a read-only descriptor maps shared for reading only */
	int ro = open(p, O_RDONLY);
	CHECK_ERR("shared.ro_rw_eacces", (long)mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0), EACCES);
	char *rm = mmap(NULL, PG, PROT_READ, MAP_SHARED, ro, 0);
	CHECK("shared.ro_sees_store", rm != MAP_FAILED && memcmp(rm + 9, "CHILD", 5) == 0);
	CHECK_ERR("shared.ro_mprotect_write", mprotect(rm, PG, PROT_READ | PROT_WRITE), EACCES);
	munmap(rm, PG);
	close(ro);
	/* PROT_READ then PROT_WRITE again: the store still reaches the file */
	CHECK_SYS("shared.mprotect_ro", mprotect(g, 6 * PG, PROT_READ));
	CHECK_SYS("shared.mprotect_rw", mprotect(g, 6 * PG, PROT_READ | PROT_WRITE));
	g[4 * PG] = 'q';
	CHECK("shared.store_after_mprotect", pread(fd, r, 1, 4 * PG) == 1 && r[0] == 'q');
	CHECK_SYS("shared.munmap", munmap(g, 6 * PG));
	CHECK_SYS("shared.munmap2", munmap(m, 4 * PG));
	CHECK_SYS("shared.fsync", fsync(fd));
	close(fd);
}

/* stores writes byte v into every page of m (n pages) until Dirty in
 * /proc/meminfo shows at least min_kb, up to three times: Shortbread's
 * flusher writes every dirty page back every 5 s and may clean some
 * while they are being stored. Returns the last Dirty read. */
static long stores(char *m, long n, long off, char v, long min_kb)
{
	long d = -1;
	for (int try = 0; try < 3 && d < min_kb; try++) {
		for (long i = 0; i < n; i++)
			m[i * PG + off] = v ? v : (char)pat(i);
		d = check_meminfo("Dirty");
	}
	return d;
}

/* A write-back leaves the pages a shared mapping stored to clean
 * (Linux's page_mkclean): after fsync, 2048 pages stored through the
 * mapping no longer count in Dirty; stores after that dirty them again,
 * and the next fsync writes them: a page reads back once the mapping is
 * gone and the page cache dropped. (Linux's Dirty lags by its per-CPU
 * counters' batches, up to a few hundred pages: hence the margins of
 * half the file.) */
static void test_clean(void)
{
	const long n = 2048, half_kb = n * PG / 1024 / 2;
	char p[400];
	path(p, sizeof p, "clean");
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK_SYS("clean.create", fd);
	CHECK_SYS("clean.size", ftruncate(fd, n * PG));
	char *m = mmap(NULL, n * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (!CHECK("clean.mmap", m != MAP_FAILED)) {
		close(fd);
		return;
	}
	CHECK_SYS("clean.fsync0", fsync(fd));
	long d1 = stores(m, n, 0, 0, half_kb);
	CHECK("clean.dirty_after_stores", d1 >= half_kb);
	CHECK_SYS("clean.fsync", fsync(fd));
	long d2 = check_meminfo("Dirty");
	CHECK("clean.clean_after_fsync", d2 >= 0 && d2 < half_kb);
	long d3 = stores(m, n, 1, 'Z', half_kb);
	CHECK("clean.stores_dirty_again", d3 >= half_kb);
	printf("# Dirty: %ld kB after the stores, %ld kB after fsync, %ld kB after more stores\n", d1, d2, d3);
	CHECK_SYS("clean.fsync2", fsync(fd));
	CHECK_SYS("clean.munmap", munmap(m, n * PG));
	CHECK("clean.drop_caches", check_drop_caches());
	char r[2] = { 0 };
	CHECK("clean.second_store_durable", pread(fd, r, 2, 3 * PG) == 2 && r[0] == (char)pat(3) && r[1] == 'Z');
	close(fd);
	unlink(p);
}

static void test_private(void)
{
	char p[400];
	path(p, sizeof p, "shared");
	int fd = open(p, O_RDWR);
	CHECK_SYS("private.open", fd);
	static char file[3 * PG];
	CHECK_EQ("private.pread", pread(fd, file, sizeof file, 0), (ssize_t)sizeof file);
	char *m = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (!CHECK("private.mmap", m != MAP_FAILED))
		return;
	CHECK("private.reads_file", memcmp(m, file, sizeof file) == 0);
	m[0] = 'P';
	char r[8] = { 0 };
	CHECK("private.store_stays_private", pread(fd, r, 1, 0) == 1 && r[0] == file[0] && file[0] != 'P');
	CHECK_EQ("private.pwrite", pwrite(fd, "LATE", 4, 2 * PG + 50), 4);
	CHECK("private.sees_file_until_stored", memcmp(m + 2 * PG + 50, "LATE", 4) == 0);
	CHECK_EQ("private.pwrite_stored_page", pwrite(fd, "FILE", 4, 0), 4);
	CHECK("private.copy_kept", m[0] == 'P' && m[1] == file[1]);
	CHECK_SYS("private.msync", msync(m, 3 * PG, MS_SYNC));
	CHECK("private.msync_file_unchanged", pread(fd, r, 4, 0) == 4 && memcmp(r, "FILE", 4) == 0);
	CHECK_SYS("private.munmap", munmap(m, 3 * PG));
	close(fd);
}

static void test_truncate(void)
{
	char p[400];
	path(p, sizeof p, "bus");
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK_SYS("truncate.create", fd);
	static char buf[4 * PG];
	memset(buf, 'b', sizeof buf);
	CHECK_EQ("truncate.write", write(fd, buf, sizeof buf), (ssize_t)sizeof buf);
	char *s = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	char *v = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (!CHECK("truncate.mmap", s != MAP_FAILED && v != MAP_FAILED))
		return;
	CHECK("truncate.reads", s[0] == 'b' && v[0] == 'b');
	/* pages the mappings have touched (one a private copy) are cut
	 * off too: their entries go, as on Linux */
	CHECK("truncate.touched", s[2 * PG] == 'b' && v[3 * PG] == 'b');
	v[3 * PG] = 'c';
	CHECK_SYS("truncate.ftruncate", ftruncate(fd, PG));
	CHECK("truncate.shared_sigbus", faults(s + 2 * PG) && fault_sig == SIGBUS);
	CHECK("truncate.private_sigbus", faults(v + 3 * PG) && fault_sig == SIGBUS);
	CHECK("truncate.kept_page", s[10] == 'b' && v[10] == 'b');
	CHECK_SYS("truncate.grow", ftruncate(fd, 4 * PG));
	CHECK("truncate.regrown_zero", !faults(s + 2 * PG) && s[2 * PG] == 0);
	CHECK("truncate.regrown_private_zero", !faults(v + 3 * PG) && v[3 * PG] == 0);
	munmap(s, 4 * PG);
	munmap(v, 4 * PG);
	close(fd);
	CHECK_SYS("truncate.unlink", unlink(p));
}

/* fallocate(2): preallocation, then a hole punched under a shared
 * mapping that has stored to the pages: they read the hole's zeros, and
 * a store after the punch reaches the file */
static void test_punch(void)
{
	char p[400];
	path(p, sizeof p, "punch");
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK_SYS("punch.create", fd);
	struct stat st;
	CHECK_SYS("falloc.mode0", fallocate(fd, 0, 0, 4 * PG));
	CHECK("falloc.size", fstat(fd, &st) == 0 && st.st_size == 4 * PG && st.st_blocks >= 4 * PG / 512);
	blkcnt_t before = st.st_blocks;
	CHECK_SYS("falloc.keep_size", fallocate(fd, FALLOC_FL_KEEP_SIZE, 4 * PG, 4 * PG));
	CHECK("falloc.keep_size_blocks", fstat(fd, &st) == 0 && st.st_size == 4 * PG && st.st_blocks >= before + 4 * PG / 512);
	CHECK_ERR("falloc.punch_needs_keep_size", fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, PG), EOPNOTSUPP);
	char z[PG] = { 0 }, r[PG];
	CHECK("falloc.reads_zeros", pread(fd, r, PG, PG) == PG && memcmp(r, z, PG) == 0);
	static char buf[4 * PG];
	memset(buf, 'h', sizeof buf);
	CHECK_EQ("punch.write", pwrite(fd, buf, sizeof buf, 0), (ssize_t)sizeof buf);
	char *m = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (!CHECK("punch.mmap", m != MAP_FAILED)) {
		close(fd);
		return;
	}
	m[PG + 1] = 'm';
	m[2 * PG + 1] = 'm';
	CHECK_SYS("punch.hole", fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, PG, 2 * PG));
	CHECK("punch.mapping_reads_zeros", m[PG + 1] == 0 && m[2 * PG + 1] == 0 && m[0] == 'h' && m[3 * PG] == 'h');
	CHECK("punch.file_reads_zeros", pread(fd, r, PG, PG) == PG && memcmp(r, z, PG) == 0);
	CHECK("punch.blocks_freed", fstat(fd, &st) == 0 && st.st_blocks < before + 4 * PG / 512);
	m[PG + 7] = 'a';
	CHECK_SYS("punch.msync", msync(m, 4 * PG, MS_SYNC));
	CHECK("punch.store_after_reaches_file", pread(fd, r, 8, PG) == 8 && r[7] == 'a' && r[1] == 0);
	munmap(m, 4 * PG);
	close(fd);
	CHECK_SYS("punch.unlink", unlink(p));
}

/* every page filled through a shared mapping only, then msync */
static void test_durable(const char *dev)
{
	char p[400];
	path(p, sizeof p, "durable");
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK_SYS("durable.create", fd);
	CHECK_SYS("durable.ftruncate", ftruncate(fd, DURABLE_PAGES * PG));
	unsigned char *m = mmap(NULL, DURABLE_PAGES * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (!CHECK("durable.mmap", m != MAP_FAILED))
		return;
	for (long i = 0; i < DURABLE_PAGES * PG; i++)
		m[i] = pat(i);
	CHECK_SYS("durable.msync", msync(m, DURABLE_PAGES * PG, MS_SYNC));
	/* the mapping holds the file, and so the mount, after close */
	close(fd);
	CHECK_ERR("durable.umount_while_mapped", umount(mnt), EBUSY);
	CHECK("durable.mapped_after_ebusy", m[DURABLE_PAGES * PG - 1] == pat(DURABLE_PAGES * PG - 1));
	CHECK_SYS("durable.munmap", munmap(m, DURABLE_PAGES * PG));
	CHECK_SYS("durable.umount", umount(mnt));
	if (!CHECK_SYS("durable.mount_again", mount(dev, mnt, "ext4", 0, NULL)))
		return;
	fd = open(p, O_RDONLY);
	static unsigned char back[DURABLE_PAGES * PG];
	CHECK_EQ("durable.read", read(fd, back, sizeof back), (ssize_t)sizeof back);
	long bad = -1;
	for (long i = 0; i < (long)sizeof back && bad < 0; i++)
		if (back[i] != pat(i))
			bad = i;
	CHECK_EQ("durable.first_wrong_byte", bad, -1L);
	close(fd);
}

static void test_exec(const char *self)
{
	char p[400], out[256];
	path(p, sizeof p, "prog");
	if (!CHECK("exec.copy", check_copy_file(self, p, 0755, 0) == 0))
		return;
	char *argv[] = { p, "--exit-42", NULL };
	CHECK_EQ("exec.from_ext4", check_run(p, argv, NULL, NULL, out, sizeof out), 42);
	CHECK_SYS("exec.unlink", unlink(p));
}

static long settled_free(void)
{
	sync();
	check_drop_caches();
	return check_meminfo("MemFree");
}

/* Rounds of mapped files coming and going: their pages come back. */
static void test_churn(void)
{
	char p[400];
	path(p, sizeof p, "churn");
	int failures = 0;
	long first = 0, prev = 0, worst = 0;
	for (int r = 1; r <= ROUNDS; r++) {
		for (int i = 0; i < OPS; i++) {
			int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
			if (fd < 0 || ftruncate(fd, CHURN_PAGES * PG)) {
				failures++;
				continue;
			}
			char *s = mmap(NULL, CHURN_PAGES * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			char *v = mmap(NULL, CHURN_PAGES * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
			if (s == MAP_FAILED || v == MAP_FAILED) {
				failures++;
				close(fd);
				continue;
			}
			for (long k = 0; k < CHURN_PAGES; k++) {
				s[k * PG] = (char)k;
				if (v[k * PG] != (char)k)
					failures++;
				if (k % 2)
					v[k * PG + 1] = 'v';
			}
			if (i % 2)
				unlink(p); /* mapped, unlinked, then unmapped */
			munmap(s, CHURN_PAGES * PG);
			munmap(v, CHURN_PAGES * PG);
			close(fd);
			if (i % 2 == 0)
				unlink(p);
		}
		long free = settled_free();
		printf("# churn round %d: MemFree %ld kB\n", r, free);
		if (r == 1) {
			first = free;
			CHECK("churn.memfree_read", free > 0);
		} else if (r > 2) {
			long best = free > prev ? free : prev;
			char name[64];
			snprintf(name, sizeof name, "churn.rounds%d_%d_within_bound", r - 1, r);
			if (!CHECK(name, first - best <= LEAK_BOUND_KB))
				printf("# rounds %d and %d: MemFree %ld and %ld kB, round 1 %ld kB\n", r - 1, r, prev, free, first);
			if (first - best > worst)
				worst = first - best;
		}
		prev = free;
	}
	printf("# churn: MemFree at most %ld kB below round 1's (bound %d kB)\n", worst, LEAK_BOUND_KB);
	CHECK_EQ("churn.operations_all_worked", failures, 0);
}

/* On the host: the image is clean and holds the file filled through the
 * mapping. */
static int check_image(const char *img)
{
	check_start("t_fmap --check-image");
	char cmd[600];
	snprintf(cmd, sizeof cmd, "e2fsck -fn '%s' >/dev/null 2>&1", img);
	int st = system(cmd);
	CHECK_EQ("e2fsck -fn finds nothing", WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
	snprintf(cmd, sizeof cmd, "debugfs -R 'cat /t_fmap/durable' '%s' 2>/dev/null", img);
	FILE *f = popen(cmd, "r");
	long n = 0, bad = -1;
	int c;
	while (f && (c = getc(f)) != EOF) {
		if (bad < 0 && (unsigned char)c != pat(n))
			bad = n;
		n++;
	}
	if (f)
		pclose(f);
	CHECK_EQ("durable's length", n, DURABLE_PAGES * PG);
	CHECK_EQ("durable's first wrong byte", bad, -1L);
	return check_done();
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--exit-42") == 0)
		return 42;
	if (argc == 3 && strcmp(argv[1], "--check-image") == 0)
		return check_image(argv[2]);
	check_start(argv[0]);
	const char *disk = getenv("EXT4_DISK");
	if (geteuid() != 0 || !disk || !*disk) {
		printf("t_fmap: not root or no EXT4_DISK: skipped\n");
		return 0;
	}
	struct sigaction sa = { 0 };
	sa.sa_handler = on_fault;
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
	char dev[64];
	snprintf(dev, sizeof dev, "/dev/%s", disk);
	const char *dir = check_mktmp();
	snprintf(mnt, sizeof mnt, "%s/mnt", dir);
	CHECK_SYS("mkdir mnt", mkdir(mnt, 0755));
	if (CHECK_SYS("mount ext4", mount(dev, mnt, "ext4", 0, NULL))) {
		char p[400];
		snprintf(p, sizeof p, "%s/t_fmap", mnt);
		mkdir(p, 0755);
		test_shared();
		test_clean();
		test_private();
		test_truncate();
		test_punch();
		test_exec(argv[0]);
		test_churn();
		test_durable(dev);
		CHECK_SYS("umount", umount(mnt));
	}
	rmdir(mnt);
	rmdir(dir);
	return check_done();
}
