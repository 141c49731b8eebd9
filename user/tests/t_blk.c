/*
 * t_blk: disks as block device files, one after the other: virtio-blk
 * (vda), SATA on q35's AHCI controller (sda) and NVMe namespaces
 * (nvme0n1, in a boot of their own). The harness attaches a
 * zeroed 64 MiB scratch image for each and names them with
 * BLK_DISK=vda,sata:65536 (kernel command line, passed on by the runner;
 * disks.h: a SATA disk by its size);
 * without it, and with no /dev/vda, the program only says it skipped.
 * Checks, per disk: the PCI listing (/proc/bus/pci/devices) shows the q35
 * host bridge and the disk's controller bound to its driver (virtio-pci,
 * ahci); the device file's type and numbers; BLKGETSIZE64,
 * BLKGETSIZE, BLKSSZGET; patterns written at aligned and unaligned
 * offsets, across request sizes and at the end, read back with read,
 * pread and after reopening; ENOSPC past the end; fsync; four processes
 * writing their own regions at once; with BLK_BAD_SECTOR=N (the harness
 * injected read errors there), EIO for that sector only; the disk's
 * /proc/diskstats line following the reads, writes and fsyncs; BLKDISCARD
 * and BLKDISCARDZEROES (test_discard); the page cache (test_cache):
 * reading 16 MiB of the disk grows Buffers+Cached in /proc/meminfo by
 * most of that and BLKFLSBUF gives it back, as does drop_caches, and
 * bytes written and not synced survive BLKFLSBUF (written back, read
 * again from the disk). `t_blk --check-image IMAGE...` on the host then
 * checks each image file holds what the guest wrote, and zeros where it
 * discarded.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include "check.h"
#include "disks.h"

#define DISK_SIZE (64LL << 20)

/* Where test_discard writes and discards (t_blk --check-image looks
 * there too): 1 MiB at 40 MiB, of which all but the first and last
 * 4 KiB are discarded. */
#define DISCARD_AT (40LL << 20)
#define DISCARD_LEN (1 << 20)
#define DISCARD_SEED 77

/* Where test_cache reads (16 MiB) and writes (256 KiB, checked in the
 * image too): ranges nothing else here touches. */
#define CACHE_READ_AT (44LL << 20)
#define CACHE_READ_LEN (16 << 20)
#define FLSBUF_AT (61LL << 20)
#define FLSBUF_LEN (256 << 10)
#define FLSBUF_SEED 91

/* <linux/fs.h> (musl-gcc has no kernel headers) */
#define BLKGETSIZE 0x1260
#define BLKSSZGET 0x1268
#define BLKGETSIZE64 0x80081272

static unsigned char pattern(long long off, unsigned seed)
{
	unsigned x = (unsigned)(off * 2654435761u) ^ (unsigned)(off >> 13) ^ seed;
	return (unsigned char)(x ^ (x >> 8) ^ (x >> 17));
}

static void fill(unsigned char *b, size_t n, long long off, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pattern(off + (long long)i, seed);
}

/* index of the first byte differing from the pattern, or -1 */
static long long mismatch(const unsigned char *b, size_t n, long long off, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pattern(off + (long long)i, seed))
			return (long long)i;
	return -1;
}

/* pread/pwrite until n bytes moved, an error or the end: a kernel may
 * move less per call (Shortbread moves at most 1 MiB) */
static ssize_t full_pread(int fd, void *b, size_t n, off_t off)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = pread(fd, (char *)b + done, n - done, off + (off_t)done);
		if (r < 0)
			return done ? (ssize_t)done : -1;
		if (r == 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

static ssize_t full_pwrite(int fd, const void *b, size_t n, off_t off)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = pwrite(fd, (const char *)b + done, n - done, off + (off_t)done);
		if (r <= 0)
			return done ? (ssize_t)done : -1;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

static ssize_t full_read(int fd, void *b, size_t n)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = read(fd, (char *)b + done, n - done);
		if (r <= 0)
			return done ? (ssize_t)done : r;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

/* the disk under test: its name's prefix says its controller */
static const char *disk_name;
static int is_sata(void) { return strncmp(disk_name, "sd", 2) == 0; }
static int is_nvme(void) { return strncmp(disk_name, "nvme", 4) == 0; }

/* the name of a check, prefixed with the disk's */
static const char *nm(const char *check)
{
	static char buf[8][96];
	static int i;
	i = (i + 1) % 8;
	snprintf(buf[i], sizeof buf[i], "%s.%s", disk_name, check);
	return buf[i];
}

static void test_pci_listing(void)
{
	FILE *f = fopen("/proc/bus/pci/devices", "r");
	CHECK(nm("pci.listing_open"), f != NULL);
	if (!f)
		return;
	char line[1024];
	int host = 0, virtio = 0, bound = 0, ahci = 0, ahci_bound = 0, nvme = 0, nvme_bound = 0, fields_ok = 1, rows = 0;
	while (fgets(line, sizeof line, f)) {
		rows++;
		unsigned bdf, id, irq;
		if (sscanf(line, "%x\t%x\t%x", &bdf, &id, &irq) != 3)
			fields_ok = 0;
		int tabs = 0;
		for (char *p = line; *p; p++)
			tabs += *p == '\t';
		if (tabs != 17) /* bdf id irq, 7 starts, 7 sizes, driver */
			fields_ok = 0;
		if ((id == 0x808629c0 || id == 0x80861237) && bdf == 0) /* q35 or i440FX */
			host = 1;
		if (id == 0x1af41001 || id == 0x1af41042) {
			virtio = 1;
			if (strstr(line, "\tvirtio-pci\n"))
				bound = 1;
		}
		if (id == 0x80862922) { /* ICH9 AHCI */
			ahci = 1;
			if (strstr(line, "\tahci\n"))
				ahci_bound = 1;
		}
		/* QEMU's NVMe controller (its own ID, or Intel's with use-intel-id) */
		if (id == 0x1b360010 || id == 0x80865845) {
			nvme = 1;
			if (strstr(line, "\tnvme\n"))
				nvme_bound = 1;
		}
	}
	fclose(f);
	CHECK(nm("pci.listing_rows"), rows >= 3);
	CHECK(nm("pci.listing_format"), fields_ok);
	CHECK(nm("pci.host_bridge"), host);
	if (is_sata()) {
		CHECK(nm("pci.ahci"), ahci);
		CHECK(nm("pci.ahci_bound"), ahci_bound);
	} else if (is_nvme()) {
		CHECK(nm("pci.nvme_disk"), nvme);
		CHECK(nm("pci.nvme_bound"), nvme_bound);
	} else {
		CHECK(nm("pci.virtio_disk"), virtio);
		CHECK(nm("pci.virtio_bound"), bound);
	}
}

/* the minor /proc/partitions lists for a disk, -1 if none */
static int partitions_minor(const char *name)
{
	FILE *f = fopen("/proc/partitions", "r");
	if (!f)
		return -1;
	char line[160], n[64];
	int maj, min, found = -1;
	long long kib;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "%d %d %lld %63s", &maj, &min, &kib, n) == 4 && strcmp(n, name) == 0)
			found = min;
	fclose(f);
	return found;
}

static void test_geometry(int fd, const char *path)
{
	struct stat st;
	CHECK_SYS(nm("geom.fstat"), fstat(fd, &st));
	CHECK(nm("geom.is_block"), S_ISBLK(st.st_mode));
	/* sd disks are 8:0, 8:16, ...; virtio's major is dynamic on Linux (254
	 * on Debian); NVMe namespaces take extended numbers (259:N) in probe
	 * order, and Linux gives a multipath-capable controller (QEMU 10's
	 * sets CMIC) a hidden path device first, so its namespace is 259:1
	 * there: the minor must be the one /proc/partitions lists */
	CHECK_EQ(nm("geom.major"), major(st.st_rdev), is_sata() ? 8 : is_nvme() ? 259 : 254);
	CHECK_EQ(nm("geom.minor"), minor(st.st_rdev),
		 is_nvme() ? partitions_minor(disk_name) : 16 * (disk_name[2] - 'a'));
	CHECK_SYS(nm("geom.stat"), stat(path, &st));
	CHECK(nm("geom.stat_block"), S_ISBLK(st.st_mode));

	unsigned long long size = 0;
	CHECK_SYS(nm("geom.getsize64"), ioctl(fd, BLKGETSIZE64, &size));
	CHECK_EQ(nm("geom.size"), size, DISK_SIZE);
	unsigned long sectors = 0;
	CHECK_SYS(nm("geom.getsize"), ioctl(fd, BLKGETSIZE, &sectors));
	CHECK_EQ(nm("geom.sectors"), sectors, DISK_SIZE / 512);
	int ssz = 0;
	CHECK_SYS(nm("geom.sszget"), ioctl(fd, BLKSSZGET, &ssz));
	CHECK_EQ(nm("geom.ssz"), ssz, 512);
	CHECK_EQ(nm("geom.seek_end"), lseek(fd, 0, SEEK_END), DISK_SIZE);
	CHECK_EQ(nm("geom.seek_set"), lseek(fd, 4096, SEEK_SET), 4096);
	CHECK_EQ(nm("geom.seek_cur"), lseek(fd, -1024, SEEK_CUR), 3072);
	CHECK_ERR(nm("geom.bad_ioctl"), ioctl(fd, 0x1234, &ssz), ENOTTY);
}

static void test_patterns(int fd, const char *path)
{
	static const struct {
		long long off;
		size_t n;
	} cases[] = {
		{ 0, 512 }, { 512, 4096 }, { 1000, 3000 }, { 4095, 2 }, { 65536, 65536 },
		{ (1 << 20) - 7, 100 * 1024 }, { 3 << 20, 1 << 20 }, { 5 << 20, (4 << 20) + 512 },
		{ DISK_SIZE - 4096, 4096 }, { DISK_SIZE - 1, 1 },
	};
	size_t max = (4 << 20) + 512;
	unsigned char *w = malloc(max), *r = malloc(max);
	int wrote = 1, direct = 1, pread_ok = 1;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		fill(w, cases[i].n, cases[i].off, 1);
		if (full_pwrite(fd, w, cases[i].n, cases[i].off) != (ssize_t)cases[i].n)
			wrote = 0;
	}
	CHECK(nm("pattern.pwrite"), wrote);
	/* read back with lseek + read and with pread, each case */
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		memset(r, 0, cases[i].n);
		if (lseek(fd, cases[i].off, SEEK_SET) != cases[i].off ||
		    full_read(fd, r, cases[i].n) != (ssize_t)cases[i].n || mismatch(r, cases[i].n, cases[i].off, 1) >= 0) {
			printf("# case %zu: read back differs\n", i);
			direct = 0;
		}
		memset(r, 0, cases[i].n);
		if (full_pread(fd, r, cases[i].n, cases[i].off) != (ssize_t)cases[i].n ||
		    mismatch(r, cases[i].n, cases[i].off, 1) >= 0)
			pread_ok = 0;
	}
	CHECK(nm("pattern.read"), direct);
	CHECK(nm("pattern.pread"), pread_ok);
	/* bytes between the cases were never written: still zero */
	memset(r, 0xff, 4096);
	CHECK_EQ(nm("pattern.gap_read"), pread(fd, r, 4096, 2 << 20), 4096);
	int zero = 1;
	for (int i = 0; i < 4096; i++)
		zero &= r[i] == 0;
	CHECK(nm("pattern.gap_zero"), zero);
	/* the sector an unaligned write starts in keeps its other bytes */
	CHECK_EQ(nm("pattern.edge_read"), pread(fd, r, 8, (1 << 20) - 10), 8);
	CHECK(nm("pattern.edge_before"), r[0] == 0 && r[2] == 0);
	CHECK(nm("pattern.edge_after"), r[3] == pattern((1 << 20) - 7, 1) && r[7] == pattern((1 << 20) - 3, 1));

	CHECK_SYS(nm("pattern.fsync"), fsync(fd));
	CHECK_SYS(nm("pattern.fdatasync"), fdatasync(fd));

	/* at and past the end */
	CHECK_EQ(nm("end.read_at_end"), pread(fd, r, 512, DISK_SIZE), 0);
	CHECK_EQ(nm("end.read_across"), pread(fd, r, 1024, DISK_SIZE - 512), 512);
	CHECK_ERR(nm("end.write_at_end"), pwrite(fd, w, 512, DISK_SIZE), ENOSPC);
	fill(w, 200, DISK_SIZE - 100, 2);
	CHECK_EQ(nm("end.write_across"), pwrite(fd, w, 200, DISK_SIZE - 100), 100);
	CHECK_EQ(nm("end.read_last"), pread(fd, r, 100, DISK_SIZE - 100), 100);
	CHECK(nm("end.last_bytes"), mismatch(r, 100, DISK_SIZE - 100, 2) < 0);

	/* a fresh open sees the same bytes */
	int fd2 = open(path, O_RDONLY);
	CHECK_SYS(nm("reopen.open"), fd2);
	CHECK_EQ(nm("reopen.read"), full_pread(fd2, r, (4 << 20) + 512, 5 << 20), (4 << 20) + 512);
	CHECK(nm("reopen.same"), mismatch(r, (4 << 20) + 512, 5 << 20, 1) < 0);
	CHECK_ERR(nm("reopen.write_rdonly"), write(fd2, w, 512), EBADF);
	close(fd2);
	free(w);
	free(r);
}

/* four processes, each its own 2 MiB region, written in 64 KiB pieces
 * with an fsync each 512 KiB, at once; then everything is checked */
static void test_concurrent(const char *path)
{
	enum { N = 4, REGION = 2 << 20, PIECE = 65536 };
	const long long base = 16LL << 20;
	pid_t pids[N];
	for (int c = 0; c < N; c++) {
		pids[c] = fork();
		if (pids[c] == 0) {
			int fd = open(path, O_RDWR);
			static unsigned char b[PIECE];
			int ok = fd >= 0;
			for (long long off = 0; ok && off < REGION; off += PIECE) {
				long long at = base + (long long)c * REGION + off;
				fill(b, PIECE, at, 10 + c);
				ok = pwrite(fd, b, PIECE, at) == PIECE;
				if (ok && (off + PIECE) % (512 << 10) == 0)
					ok = fsync(fd) == 0;
			}
			_exit(ok ? 0 : 1);
		}
	}
	int all = 1;
	for (int c = 0; c < N; c++) {
		int st;
		all &= waitpid(pids[c], &st, 0) == pids[c] && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	CHECK(nm("concurrent.writers"), all);
	int fd = open(path, O_RDONLY);
	unsigned char *r = malloc(REGION);
	int same = 1;
	for (int c = 0; c < N; c++) {
		long long at = base + (long long)c * REGION;
		if (full_pread(fd, r, REGION, at) != REGION || mismatch(r, REGION, at, 10 + c) >= 0)
			same = 0;
	}
	CHECK(nm("concurrent.read_back"), same);
	free(r);
	close(fd);
}

/* On the host, after a guest ran this program: the image file holds the
 * bytes the guest wrote (the four writers' regions and the 4 MiB case). */
static void check_image(const char *path)
{
	int fd = open(path, O_RDONLY);
	CHECK_SYS(nm("image.open"), fd);
	if (fd < 0)
		return;
	size_t n = 2 << 20;
	unsigned char *r = malloc((4 << 20) + 512);
	int same = 1;
	for (int c = 0; c < 4; c++) {
		long long at = (16LL << 20) + (long long)c * (long long)n;
		if (full_pread(fd, r, n, at) != (ssize_t)n || mismatch(r, n, at, 10 + c) >= 0)
			same = 0;
	}
	CHECK(nm("image.writers_regions"), same);
	CHECK(nm("image.large_case"), full_pread(fd, r, (4 << 20) + 512, 5 << 20) == (4 << 20) + 512 &&
		  mismatch(r, (4 << 20) + 512, 5 << 20, 1) < 0);
	CHECK(nm("image.flsbuf_written"), full_pread(fd, r, FLSBUF_LEN, FLSBUF_AT) == FLSBUF_LEN &&
		  mismatch(r, FLSBUF_LEN, FLSBUF_AT, FLSBUF_SEED) < 0);
	/* test_discard's region: its ends as written, the middle zeros */
	int ends = full_pread(fd, r, DISCARD_LEN, DISCARD_AT) == DISCARD_LEN &&
		   mismatch(r, 4096, DISCARD_AT, DISCARD_SEED) < 0 &&
		   mismatch(r + DISCARD_LEN - 4096, 4096, DISCARD_AT + DISCARD_LEN - 4096, DISCARD_SEED) < 0;
	CHECK(nm("image.discard_ends_as_written"), ends);
	int zero = 1;
	for (int i = 4096; i < DISCARD_LEN - 4096; i++)
		zero &= r[i] == 0;
	CHECK(nm("image.discarded_zero"), zero);
	free(r);
	close(fd);
}

/* BLK_BAD_SECTOR=N: the harness made the disk fail reads of 512-byte
 * sector N (QEMU's blkdebug), in a region nothing else here touches.
 * Reading it is EIO, again on a second try, and the next 4 KiB still
 * read (as zeros). */
static void test_bad_sector(int fd, long long sector)
{
	unsigned char *b = malloc(4096);
	CHECK_ERR(nm("bad.read"), pread(fd, b, 512, sector * 512), EIO);
	CHECK_ERR(nm("bad.read_again"), pread(fd, b, 4096, sector * 512), EIO);
	memset(b, 0xff, 4096);
	CHECK_EQ(nm("bad.next_read"), pread(fd, b, 4096, (sector + 8) * 512), 4096);
	int zero = 1;
	for (int i = 0; i < 4096; i++)
		zero &= b[i] == 0;
	CHECK(nm("bad.next_zero"), zero);
	free(b);
}

/* diskstats reads the disk's /proc/diskstats line: the fields after the
 * name, and how many there are (17 on Linux 6.1). */
static int diskstats(unsigned long long v[20])
{
	FILE *f = fopen("/proc/diskstats", "r");
	char line[512];
	int n = 0;
	while (f && fgets(line, sizeof line, f)) {
		char name[64];
		int maj, min, used;
		if (sscanf(line, "%d %d %63s%n", &maj, &min, name, &used) != 3 || strcmp(name, disk_name) != 0)
			continue;
		char *p = line + used, *end;
		for (n = 0; n < 20; n++, p = end) {
			v[n] = strtoull(p, &end, 10);
			if (end == p)
				break;
		}
	}
	if (f)
		fclose(f);
	return n;
}

/* diskstats_settled reads the line until done(v) holds, for up to 2 s.
 * Linux 6.1 adds a request's sectors and wakes its waiter (bio_endio in
 * blk_update_request) before it counts the request and takes it out of
 * the in-flight count (blk_account_io_done, after): a reader that runs
 * right after the system call returns can see the sectors without the
 * request. Shortbread counts both before it wakes the waiter, so it
 * settles on the first read; a count that never comes still fails. */
static int diskstats_settled(unsigned long long v[20], int (*done)(const unsigned long long *))
{
	int n = diskstats(v);
	for (int i = 0; i < 200 && n >= 17 && !done(v); i++) {
		usleep(10000);
		n = diskstats(v);
	}
	return n;
}

static int nothing_in_flight(const unsigned long long *v)
{
	return v[8] == 0;
}

static unsigned long long discards_before;

static int discard_counted(const unsigned long long *v)
{
	return v[11] > discards_before;
}

/* The disk's counts follow what the tests before did to it: reads and
 * writes with their sectors, flushes from fsync, and nothing in flight. */
static void test_diskstats(const unsigned long long *a)
{
	unsigned long long b[20];
	int n = diskstats_settled(b, nothing_in_flight);
	CHECK_EQ(nm("diskstats.fields"), n, 17);
	/* Linux counts an NVMe namespace's I/O on its hidden path device
	 * (nvme0c0n1) when the controller may be multipath (QEMU 10 sets
	 * CMIC), not on nvme0n1: the counts are checked on the others. */
	if (n < 17 || is_nvme())
		return;
	CHECK(nm("diskstats.reads"), b[0] > a[0] && b[2] >= a[2] + 8);
	CHECK(nm("diskstats.writes"), b[4] > a[4] && b[6] >= a[6] + 8);
	CHECK(nm("diskstats.flushes"), b[15] > a[15]);
	CHECK_EQ(nm("diskstats.in_flight"), b[8], 0);
	CHECK(nm("diskstats.busy"), b[9] >= a[9] && b[10] >= a[10]);
}

#ifndef BLKDISCARD
#define BLKDISCARD _IO(0x12, 119)
#endif
#ifndef BLKDISCARDZEROES
#define BLKDISCARDZEROES _IO(0x12, 124)
#endif

/* BLKDISCARD on each disk (QEMU offers discard on all three: virtio's
 * VIRTIO_BLK_F_DISCARD, the SATA disk's TRIM in IDENTIFY, the NVMe
 * controller's Dataset Management; the images are attached with
 * discard=unmap): Linux 6.1's checks in order, and a discard of the
 * middle of a written region leaves the rest as written; what the
 * discarded blocks read back as is the device's choice (the old data or
 * zeros: none of the three promises zeros), but nothing else.
 * BLKDISCARDZEROES says 0, as on Linux since 4.12 whatever the device.
 * On the host the discarded blocks must read as zeros (the image got a
 * hole): check_image. */
static void test_discard(const char *path)
{
	const long long at = DISCARD_AT, n = DISCARD_LEN;
	int fd = open(path, O_RDWR);
	int ro = open(path, O_RDONLY);
	unsigned char *b = malloc(n);
	fill(b, n, at, DISCARD_SEED);
	unsigned zeroes = 7;
	CHECK_SYS(nm("discard.zeroes_ioctl"), ioctl(fd, BLKDISCARDZEROES, &zeroes));
	CHECK_EQ(nm("discard.zeroes_is_0"), zeroes, 0);
	CHECK_EQ(nm("discard.write"), pwrite(fd, b, n, at), n);
	CHECK_SYS(nm("discard.fsync"), fsync(fd));
	uint64_t r[2] = {at + 4096, n - 8192};
	CHECK_ERR(nm("discard.read_only_fd"), ioctl(ro, BLKDISCARD, r), EBADF);
	CHECK_ERR(nm("discard.efault"), ioctl(fd, BLKDISCARD, (void *)8), EFAULT);
	uint64_t odd[2] = {at + 1, 512}, oddlen[2] = {at, 100}, past[2] = {at, 1ULL << 40};
	CHECK_ERR(nm("discard.unaligned_start"), ioctl(fd, BLKDISCARD, odd), EINVAL);
	CHECK_ERR(nm("discard.unaligned_length"), ioctl(fd, BLKDISCARD, oddlen), EINVAL);
	CHECK_ERR(nm("discard.past_the_end"), ioctl(fd, BLKDISCARD, past), EINVAL);
	unsigned long long before[20] = {0}, after[20] = {0};
	CHECK_EQ(nm("discard.diskstats_before"), diskstats(before), 17);
	CHECK_SYS(nm("discard.range"), ioctl(fd, BLKDISCARD, r));
	discards_before = before[11];
	CHECK_EQ(nm("discard.diskstats_after"), diskstats_settled(after, is_nvme() ? nothing_in_flight : discard_counted), 17);
	/* fields 12 and 14: discard requests (one or more) and sectors;
	 * Linux 6.1 leaves them at 0 on nvme0n1 (seen under QEMU 10:
	 * its reads and writes count, its discards not), so only the
	 * other disks are held to them */
	if (!is_nvme()) {
		CHECK(nm("discard.diskstats_requests"), after[11] > before[11]);
		CHECK_EQ(nm("discard.diskstats_sectors"), after[13] - before[13], (unsigned long long)r[1] / 512);
	}
	unsigned char *got = malloc(n);
	CHECK_EQ(nm("discard.read_back"), full_pread(fd, got, n, at), n);
	int outside = memcmp(got, b, 4096) == 0 && memcmp(got + n - 4096, b + n - 4096, 4096) == 0;
	CHECK(nm("discard.rest_as_written"), outside);
	int each = 1;
	for (long long o = 4096; o < n - 4096; o += 4096) {
		int zero = 1;
		for (int i = 0; i < 4096; i++)
			zero &= got[o + i] == 0;
		each &= zero || memcmp(got + o, b + o, 4096) == 0;
	}
	CHECK(nm("discard.old_data_or_zeros"), each);
	free(got);
	free(b);
	close(ro);
	close(fd);
}

#ifndef BLKFLSBUF
#define BLKFLSBUF _IO(0x12, 97)
#endif

/* Buffers + Cached from /proc/meminfo, in KiB (-1 if missing): Linux
 * counts a block device's cached pages as Buffers, a file's as Cached */
static long long cached_kb(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	long long sum = 0;
	int seen = 0;
	while (f && fgets(line, sizeof line, f)) {
		long long v;
		if (sscanf(line, "Buffers: %lld", &v) == 1 || sscanf(line, "Cached: %lld", &v) == 1) {
			sum += v;
			seen++;
		}
	}
	if (f)
		fclose(f);
	return seen == 2 ? sum : -1;
}

/* The page cache in front of the disk: reads fill it (most of 16 MiB
 * read must show in Buffers+Cached while the file is open), BLKFLSBUF
 * and drop_caches empty it again, and BLKFLSBUF writes dirty pages back
 * before dropping them (the bytes read again are the ones written; the
 * image check on the host finds them too). */
static void test_cache(const char *path)
{
	const long long slack = (CACHE_READ_LEN / 1024) / 4; /* KiB */
	int fd = open(path, O_RDWR);
	CHECK_SYS(nm("cache.open"), fd);
	if (fd < 0)
		return;
	unsigned char *b = malloc(CACHE_READ_LEN);
	CHECK_SYS(nm("cache.flsbuf_first"), ioctl(fd, BLKFLSBUF, 0));
	long long before = cached_kb();
	CHECK(nm("cache.meminfo"), before >= 0);
	CHECK_EQ(nm("cache.read"), full_pread(fd, b, CACHE_READ_LEN, CACHE_READ_AT), CACHE_READ_LEN);
	long long filled = cached_kb();
	CHECK(nm("cache.read_grows"), filled - before >= CACHE_READ_LEN / 1024 - slack);
	CHECK_SYS(nm("cache.flsbuf"), ioctl(fd, BLKFLSBUF, 0));
	long long flushed = cached_kb();
	CHECK(nm("cache.flsbuf_drops"), filled - flushed >= CACHE_READ_LEN / 1024 - slack);
	CHECK_EQ(nm("cache.read_again"), full_pread(fd, b, CACHE_READ_LEN, CACHE_READ_AT), CACHE_READ_LEN);
	filled = cached_kb();
	CHECK(nm("cache.read_again_grows"), filled - flushed >= CACHE_READ_LEN / 1024 - slack);
	CHECK(nm("cache.drop_caches"), check_drop_caches());
	long long dropped = cached_kb();
	CHECK(nm("cache.drop_caches_drops"), filled - dropped >= CACHE_READ_LEN / 1024 - slack);

	fill(b, FLSBUF_LEN, FLSBUF_AT, FLSBUF_SEED);
	CHECK_EQ(nm("cache.write"), pwrite(fd, b, FLSBUF_LEN, FLSBUF_AT), FLSBUF_LEN);
	CHECK_SYS(nm("cache.flsbuf_dirty"), ioctl(fd, BLKFLSBUF, 0));
	memset(b, 0, FLSBUF_LEN);
	CHECK_EQ(nm("cache.write_read_back"), full_pread(fd, b, FLSBUF_LEN, FLSBUF_AT), FLSBUF_LEN);
	CHECK(nm("cache.write_kept"), mismatch(b, FLSBUF_LEN, FLSBUF_AT, FLSBUF_SEED) < 0);
	free(b);
	close(fd);
}

/* Where test_direct reads and writes (64 KiB at 10 MiB) and where
 * test_partition puts its partition (16 MiB at 24 MiB, between the
 * concurrent writers' regions and test_discard's): ranges nothing else
 * here touches (the NVMe boot's bad sector is at 12 MiB). */
#define DIRECT_AT (10LL << 20)
#define DIRECT_LEN (64 << 10)
#define DIRECT_SEED 33
#define PART_AT (24LL << 20)
#define PART_LEN (16LL << 20)

/* O_DIRECT on a block device (Linux 6.1's blkdev_direct_IO): the file
 * offset and each buffer's length must be multiples of the logical block
 * size (512 here) and each buffer's address a multiple of the device's
 * DMA alignment, else EINVAL, after the checks at the end (a read at the
 * end is 0 bytes, a write there ENOSPC) and for an empty transfer (0).
 * Aligned transfers see and make the bytes the cache shows, and
 * F_SETFL switches O_DIRECT on and off. */
static void test_direct(const char *path)
{
	int fd = open(path, O_RDWR | O_DIRECT);
	CHECK_SYS(nm("direct.open"), fd);
	if (fd < 0)
		return;
	int buffered = open(path, O_RDWR);
	unsigned char *mem = NULL;
	CHECK_EQ(nm("direct.memalign"), posix_memalign((void **)&mem, 4096, DIRECT_LEN + 4096), 0);
	unsigned char *b = mem;
	/* bytes written through the cache and not synced: a direct read
	 * writes them back first */
	fill(b, DIRECT_LEN, DIRECT_AT, DIRECT_SEED);
	CHECK_EQ(nm("direct.buffered_write"), pwrite(buffered, b, DIRECT_LEN, DIRECT_AT), DIRECT_LEN);
	memset(b, 0, DIRECT_LEN);
	CHECK_EQ(nm("direct.read"), pread(fd, b, DIRECT_LEN, DIRECT_AT), DIRECT_LEN);
	CHECK(nm("direct.read_sees_cache"), mismatch(b, DIRECT_LEN, DIRECT_AT, DIRECT_SEED) < 0);
	CHECK_EQ(nm("direct.read_512"), pread(fd, b, 512, DIRECT_AT + 512), 512);
	CHECK(nm("direct.read_512_bytes"), mismatch(b, 512, DIRECT_AT + 512, DIRECT_SEED) < 0);

	/* misaligned offsets, lengths, buffers */
	CHECK_ERR(nm("direct.read_odd_offset"), pread(fd, b, 4096, DIRECT_AT + 1), EINVAL);
	CHECK_ERR(nm("direct.read_offset_256"), pread(fd, b, 4096, DIRECT_AT + 256), EINVAL);
	CHECK_ERR(nm("direct.read_odd_length"), pread(fd, b, 4097, DIRECT_AT), EINVAL);
	CHECK_ERR(nm("direct.read_length_100"), pread(fd, b, 100, DIRECT_AT), EINVAL);
	CHECK_ERR(nm("direct.read_odd_buffer"), pread(fd, b + 1, 4096, DIRECT_AT), EINVAL);
	CHECK_ERR(nm("direct.write_odd_offset"), pwrite(fd, b, 4096, DIRECT_AT + 1), EINVAL);
	CHECK_ERR(nm("direct.write_odd_length"), pwrite(fd, b, 1000, DIRECT_AT), EINVAL);
	CHECK_ERR(nm("direct.write_odd_buffer"), pwrite(fd, b + 1, 4096, DIRECT_AT), EINVAL);
	/* the memory's alignment is the device's: 512 bytes, but 4 on
	 * NVMe (Linux 6.1 sets NVMe queues' DMA alignment to a dword) */
	CHECK_ERR(nm("direct.read_buffer_2"), pread(fd, b + 2, 4096, DIRECT_AT), EINVAL);
	CHECK_ERR(nm("direct.read_buffer_511"), pread(fd, b + 511, 4096, DIRECT_AT), EINVAL);
	CHECK_EQ(nm("direct.read_buffer_512"), pread(fd, b + 512, 4096, DIRECT_AT), 4096);
	if (is_nvme()) {
		CHECK_EQ(nm("direct.read_buffer_4"), pread(fd, b + 4, 4096, DIRECT_AT), 4096);
		CHECK(nm("direct.read_buffer_4_bytes"), mismatch(b + 4, 4096, DIRECT_AT, DIRECT_SEED) < 0);
		CHECK_EQ(nm("direct.write_buffer_256"), pwrite(fd, b + 256, 4096, DIRECT_AT + 4096), 4096);
	} else {
		CHECK_ERR(nm("direct.read_buffer_4"), pread(fd, b + 4, 4096, DIRECT_AT), EINVAL);
		CHECK_ERR(nm("direct.write_buffer_256"), pwrite(fd, b + 256, 4096, DIRECT_AT + 4096), EINVAL);
	}
	/* read() and write() at a misaligned file position */
	CHECK_EQ(nm("direct.seek_odd"), lseek(fd, DIRECT_AT + 100, SEEK_SET), DIRECT_AT + 100);
	CHECK_ERR(nm("direct.read_at_odd_position"), read(fd, b, 4096), EINVAL);
	CHECK_ERR(nm("direct.write_at_odd_position"), write(fd, b, 4096), EINVAL);
	CHECK_EQ(nm("direct.position_kept"), lseek(fd, 0, SEEK_CUR), DIRECT_AT + 100);
	/* a vector: each buffer's length counts, not only the total */
	struct iovec iov[2] = { { b, 512 }, { b + 1024, 3584 } };
	CHECK_EQ(nm("direct.readv_aligned"), preadv(fd, iov, 2, DIRECT_AT), 4096);
	CHECK(nm("direct.readv_bytes"), mismatch(b, 512, DIRECT_AT, DIRECT_SEED) < 0 &&
					    mismatch(b + 1024, 3584, DIRECT_AT + 512, DIRECT_SEED) < 0);
	struct iovec odd[2] = { { b, 100 }, { b + 1024, 3996 } };
	CHECK_ERR(nm("direct.readv_odd_piece"), preadv(fd, odd, 2, DIRECT_AT), EINVAL);
	/* the end comes first: a read there is 0 bytes, a write ENOSPC; an
	 * empty transfer is 0 wherever it is */
	CHECK_EQ(nm("direct.read_at_end_odd"), pread(fd, b, 100, DISK_SIZE), 0);
	CHECK_ERR(nm("direct.write_at_end_odd"), pwrite(fd, b, 100, DISK_SIZE), ENOSPC);
	CHECK_EQ(nm("direct.read_empty_odd"), pread(fd, b + 1, 0, DIRECT_AT + 1), 0);
	CHECK_EQ(nm("direct.write_empty_odd"), pwrite(fd, b + 1, 0, DIRECT_AT + 1), 0);
	/* across the end: cut there */
	CHECK_EQ(nm("direct.read_across_end"), pread(fd, b, 8192, DISK_SIZE - 4096), 4096);

	/* a direct write, seen through the cache of another open file */
	unsigned char *r = malloc(DIRECT_LEN);
	fill(b, DIRECT_LEN, DIRECT_AT, DIRECT_SEED + 1);
	CHECK_EQ(nm("direct.write"), pwrite(fd, b, DIRECT_LEN, DIRECT_AT), DIRECT_LEN);
	CHECK_EQ(nm("direct.write_read_buffered"), pread(buffered, r, DIRECT_LEN, DIRECT_AT), DIRECT_LEN);
	CHECK(nm("direct.write_seen_buffered"), mismatch(r, DIRECT_LEN, DIRECT_AT, DIRECT_SEED + 1) < 0);

	/* F_SETFL turns O_DIRECT on and off */
	CHECK_SYS(nm("direct.setfl_on"), fcntl(buffered, F_SETFL, O_DIRECT));
	CHECK(nm("direct.getfl_on"), fcntl(buffered, F_GETFL) & O_DIRECT);
	CHECK_ERR(nm("direct.setfl_odd_read"), pread(buffered, b, 4096, DIRECT_AT + 1), EINVAL);
	CHECK_SYS(nm("direct.setfl_off"), fcntl(buffered, F_SETFL, 0));
	CHECK_EQ(nm("direct.setfl_off_odd_read"), pread(buffered, r, 100, DIRECT_AT + 1), 100);
	CHECK(nm("direct.setfl_off_bytes"), mismatch(r, 100, DIRECT_AT + 1, DIRECT_SEED + 1) < 0);
	free(r);
	free(mem);
	close(buffered);
	close(fd);
}

#ifndef BLKRRPART
#define BLKRRPART _IO(0x12, 95)
#endif

/* writes (or, with start 0, clears) a one-entry MBR in sector 0 and has
 * the kernel read the table again */
static int set_mbr(int fd, unsigned start, unsigned sectors)
{
	unsigned char mbr[512] = { 0 };
	if (start) {
		unsigned char *e = mbr + 446;
		e[4] = 0x83;
		memset(e + 1, 0xff, 3); /* CHS: past the cylinders it can name */
		memset(e + 5, 0xff, 3);
		memcpy(e + 8, &start, 4);
		memcpy(e + 12, &sectors, 4);
		mbr[510] = 0x55;
		mbr[511] = 0xaa;
	}
	if (pwrite(fd, mbr, 512, 0) != 512 || fsync(fd) != 0)
		return -1;
	return ioctl(fd, BLKRRPART, 0);
}

/* A disk and its partition: Linux 6.1 caches them apart (each block
 * device has its own page cache), so a write through one reaches the
 * other through the disk: once written back (fsync, or the last close),
 * a direct read of the other, or a read of bytes it has not cached,
 * finds it. The table is written here (an MBR with one partition) and
 * taken away again at the end. */
static void test_partition(const char *path)
{
	int disk = open(path, O_RDWR);
	CHECK_SYS(nm("part.open_disk"), disk);
	if (disk < 0)
		return;
	CHECK_SYS(nm("part.make_table"), set_mbr(disk, PART_AT / 512, PART_LEN / 512));
	char ppath[96];
	int len = strlen(path);
	snprintf(ppath, sizeof ppath, "%s%s1", path, path[len - 1] >= '0' && path[len - 1] <= '9' ? "p" : "");
	for (int i = 0; i < 100 && access(ppath, F_OK) != 0; i++)
		usleep(100 * 1000);
	int part = open(ppath, O_RDWR);
	CHECK_SYS(nm("part.open_partition"), part);
	int direct = open(path, O_RDONLY | O_DIRECT);
	unsigned char *b = NULL, *r = NULL;
	CHECK_EQ(nm("part.memalign"), posix_memalign((void **)&b, 4096, 65536) | posix_memalign((void **)&r, 4096, 65536), 0);
	if (part >= 0 && direct >= 0 && b && r) {
		unsigned long long size = 0;
		CHECK_SYS(nm("part.getsize64"), ioctl(part, BLKGETSIZE64, &size));
		CHECK_EQ(nm("part.size"), size, PART_LEN);
		/* through the partition, written back: the disk has it */
		fill(b, 65536, PART_AT, 51);
		CHECK_EQ(nm("part.write"), pwrite(part, b, 65536, 0), 65536);
		CHECK_EQ(nm("part.direct_read_before_fsync"), pread(direct, r, 65536, PART_AT), 65536);
		printf("# %s: a partition's write seen by a direct read of the disk before fsync: %s\n", disk_name,
		       mismatch(r, 65536, PART_AT, 51) < 0 ? "yes" : "no");
		CHECK_SYS(nm("part.fsync"), fsync(part));
		CHECK_EQ(nm("part.direct_read"), pread(direct, r, 65536, PART_AT), 65536);
		CHECK(nm("part.disk_sees_partition"), mismatch(r, 65536, PART_AT, 51) < 0);
		CHECK_EQ(nm("part.disk_read"), pread(disk, r, 65536, PART_AT), 65536);
		CHECK(nm("part.disk_cache_sees_partition"), mismatch(r, 65536, PART_AT, 51) < 0);
		/* through the disk: the partition reads it where it has no
		 * cached page */
		fill(b, 65536, PART_AT + (1 << 20), 52);
		CHECK_EQ(nm("part.disk_write"), pwrite(disk, b, 65536, PART_AT + (1 << 20)), 65536);
		CHECK_EQ(nm("part.read_before_fsync"), pread(part, r, 65536, 1 << 20), 65536);
		printf("# %s: a disk's write seen through its partition before fsync: %s\n", disk_name,
		       mismatch(r, 65536, PART_AT + (1 << 20), 52) < 0 ? "yes" : "no");
		CHECK_SYS(nm("part.disk_fsync"), fsync(disk));
		CHECK_EQ(nm("part.read_uncached"), pread(part, r, 65536, 2 << 20), 65536);
		int zero = 1;
		for (int i = 0; i < 65536; i++)
			zero &= r[i] == 0;
		CHECK(nm("part.uncached_zero"), zero);
		/* the partition's last close drops its pages: a new open reads
		 * the disk */
		close(part);
		part = open(ppath, O_RDWR);
		CHECK_EQ(nm("part.reopen_read"), pread(part, r, 65536, 1 << 20), 65536);
		CHECK(nm("part.partition_sees_disk"), mismatch(r, 65536, PART_AT + (1 << 20), 52) < 0);
		/* a write through the partition and its last close: written
		 * back, the disk's direct read finds it */
		fill(b, 65536, PART_AT + (3 << 20), 53);
		CHECK_EQ(nm("part.write_then_close"), pwrite(part, b, 65536, 3 << 20), 65536);
		close(part);
		part = -1;
		CHECK_EQ(nm("part.direct_read_after_close"), pread(direct, r, 65536, PART_AT + (3 << 20)), 65536);
		CHECK(nm("part.close_wrote_back"), mismatch(r, 65536, PART_AT + (3 << 20), 53) < 0);
	}
	if (part >= 0)
		close(part);
	if (direct >= 0)
		close(direct);
	free(b);
	free(r);
	CHECK_SYS(nm("part.clear_table"), set_mbr(disk, 0, 0));
	for (int i = 0; i < 100 && access(ppath, F_OK) == 0; i++)
		usleep(100 * 1000);
	CHECK(nm("part.partition_gone"), access(ppath, F_OK) != 0);
	close(disk);
}

static void test_disk(const char *spec)
{
	static char name[64];
	disk_name = spec;
	if (!CHECK(nm("found"), resolve_disk(spec, name, sizeof name)))
		return;
	disk_name = name;
	char path[80];
	snprintf(path, sizeof path, "/dev/%s", name);
	/* the node may come a moment after /proc/partitions lists the disk,
	 * and Linux probes NVMe controllers asynchronously */
	for (int i = 0; i < 100 && access(path, F_OK) != 0; i++)
		usleep(100 * 1000);
	test_pci_listing();
	int fd = open(path, O_RDWR);
	CHECK_SYS(nm("open"), fd);
	if (fd < 0)
		return;
	unsigned long long stats[20] = {0};
	CHECK_EQ(nm("diskstats.line"), diskstats(stats), 17);
	test_geometry(fd, path);
	test_patterns(fd, path);
	test_diskstats(stats);
	const char *bad = getenv("BLK_BAD_SECTOR");
	if (bad && *bad)
		test_bad_sector(fd, atoll(bad));
	close(fd);
	test_concurrent(path);
	test_discard(path);
	test_cache(path);
	test_direct(path);
	test_partition(path);
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "--check-image") == 0) {
		for (int i = 2; i < argc; i++) {
			disk_name = argv[i];
			check_image(argv[i]);
		}
		return check_done();
	}
	const char *disks = getenv("BLK_DISK");
	if ((!disks || !*disks) && access("/dev/vda", F_OK) != 0) {
		printf("t_blk: no disk attached (BLK_DISK unset, no /dev/vda): skipped\n");
		return 0;
	}
	char list[128];
	snprintf(list, sizeof list, "%s", disks && *disks ? disks : "vda");
	for (char *save, *d = strtok_r(list, ",", &save); d; d = strtok_r(NULL, ",", &save))
		test_disk(d);
	return check_done();
}
