/*
 * t_blk: a disk as a block device file. The harness attaches a zeroed
 * 64 MiB scratch image and says so with BLK_DISK=vda (virtio-blk) or
 * BLK_DISK=nvme0n1 (namespace 1 of an NVMe controller) on the kernel
 * command line, passed on by the runner; without it, and with no
 * /dev/vda, the program only says it skipped. Checks: the PCI listing
 * (/proc/bus/pci/devices) shows the q35 host bridge and the disk's
 * controller bound to its driver (virtio-pci, nvme); the device file's
 * type and numbers (Linux's: 254:0 for vda, 259:0 for nvme0n1); BLKGETSIZE64,
 * BLKGETSIZE, BLKSSZGET; patterns written at aligned and unaligned
 * offsets, across request sizes and at the end, read back with read,
 * pread and after reopening; ENOSPC past the end; fsync; four processes
 * writing their own regions at once; with BLK_BAD_SECTOR=N (the harness
 * injected read errors there), EIO for that sector only. `t_blk
 * --check-image IMAGE` on the host then checks the image file holds what
 * the guest wrote.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include "check.h"

#define DISK_SIZE (64LL << 20)

/* the disk is an NVMe namespace (else a virtio disk) */
static int nvme;

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

static void test_pci_listing(void)
{
	FILE *f = fopen("/proc/bus/pci/devices", "r");
	CHECK("pci.listing_open", f != NULL);
	if (!f)
		return;
	char line[1024];
	int host = 0, disk = 0, bound = 0, fields_ok = 1, rows = 0;
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
		/* QEMU's NVMe controller (its own ID, or Intel's with use-intel-id) */
		if (nvme ? id == 0x1b360010 || id == 0x80865845 : id == 0x1af41001 || id == 0x1af41042) {
			disk = 1;
			if (strstr(line, nvme ? "\tnvme\n" : "\tvirtio-pci\n"))
				bound = 1;
		}
	}
	fclose(f);
	CHECK("pci.listing_rows", rows >= 3);
	CHECK("pci.listing_format", fields_ok);
	CHECK("pci.host_bridge", host);
	CHECK(nvme ? "pci.nvme_disk" : "pci.virtio_disk", disk);
	CHECK(nvme ? "pci.nvme_bound" : "pci.virtio_bound", bound);
}

static void test_geometry(int fd, const char *path)
{
	struct stat st;
	CHECK_SYS("geom.fstat", fstat(fd, &st));
	CHECK("geom.is_block", S_ISBLK(st.st_mode));
	CHECK_EQ("geom.major", major(st.st_rdev), nvme ? 259 : 254);
	CHECK_EQ("geom.minor", minor(st.st_rdev), 0);
	CHECK_SYS("geom.stat", stat(path, &st));
	CHECK("geom.stat_block", S_ISBLK(st.st_mode));

	unsigned long long size = 0;
	CHECK_SYS("geom.getsize64", ioctl(fd, BLKGETSIZE64, &size));
	CHECK_EQ("geom.size", size, DISK_SIZE);
	unsigned long sectors = 0;
	CHECK_SYS("geom.getsize", ioctl(fd, BLKGETSIZE, &sectors));
	CHECK_EQ("geom.sectors", sectors, DISK_SIZE / 512);
	int ssz = 0;
	CHECK_SYS("geom.sszget", ioctl(fd, BLKSSZGET, &ssz));
	CHECK_EQ("geom.ssz", ssz, 512);
	CHECK_EQ("geom.seek_end", lseek(fd, 0, SEEK_END), DISK_SIZE);
	CHECK_EQ("geom.seek_set", lseek(fd, 4096, SEEK_SET), 4096);
	CHECK_EQ("geom.seek_cur", lseek(fd, -1024, SEEK_CUR), 3072);
	CHECK_ERR("geom.bad_ioctl", ioctl(fd, 0x1234, &ssz), ENOTTY);
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
	CHECK("pattern.pwrite", wrote);
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
	CHECK("pattern.read", direct);
	CHECK("pattern.pread", pread_ok);
	/* bytes between the cases were never written: still zero */
	memset(r, 0xff, 4096);
	CHECK_EQ("pattern.gap_read", pread(fd, r, 4096, 2 << 20), 4096);
	int zero = 1;
	for (int i = 0; i < 4096; i++)
		zero &= r[i] == 0;
	CHECK("pattern.gap_zero", zero);
	/* the sector an unaligned write starts in keeps its other bytes */
	CHECK_EQ("pattern.edge_read", pread(fd, r, 8, (1 << 20) - 10), 8);
	CHECK("pattern.edge_before", r[0] == 0 && r[2] == 0);
	CHECK("pattern.edge_after", r[3] == pattern((1 << 20) - 7, 1) && r[7] == pattern((1 << 20) - 3, 1));

	CHECK_SYS("pattern.fsync", fsync(fd));
	CHECK_SYS("pattern.fdatasync", fdatasync(fd));

	/* at and past the end */
	CHECK_EQ("end.read_at_end", pread(fd, r, 512, DISK_SIZE), 0);
	CHECK_EQ("end.read_across", pread(fd, r, 1024, DISK_SIZE - 512), 512);
	CHECK_ERR("end.write_at_end", pwrite(fd, w, 512, DISK_SIZE), ENOSPC);
	fill(w, 200, DISK_SIZE - 100, 2);
	CHECK_EQ("end.write_across", pwrite(fd, w, 200, DISK_SIZE - 100), 100);
	CHECK_EQ("end.read_last", pread(fd, r, 100, DISK_SIZE - 100), 100);
	CHECK("end.last_bytes", mismatch(r, 100, DISK_SIZE - 100, 2) < 0);

	/* a fresh open sees the same bytes */
	int fd2 = open(path, O_RDONLY);
	CHECK_SYS("reopen.open", fd2);
	CHECK_EQ("reopen.read", full_pread(fd2, r, (4 << 20) + 512, 5 << 20), (4 << 20) + 512);
	CHECK("reopen.same", mismatch(r, (4 << 20) + 512, 5 << 20, 1) < 0);
	CHECK_ERR("reopen.write_rdonly", write(fd2, w, 512), EBADF);
	close(fd2);
	free(w);
	free(r);
}

/* BLK_BAD_SECTOR=N: the harness made the disk fail reads of 512-byte
 * sector N (QEMU's blkdebug), in a region nothing else here touches.
 * Reading it is EIO, again on a second try, and the next 4 KiB still
 * read (as zeros). */
static void test_bad_sector(int fd, long long sector)
{
	unsigned char *b = malloc(4096);
	CHECK_ERR("bad.read", pread(fd, b, 512, sector * 512), EIO);
	CHECK_ERR("bad.read_again", pread(fd, b, 4096, sector * 512), EIO);
	memset(b, 0xff, 4096);
	CHECK_EQ("bad.next_read", pread(fd, b, 4096, (sector + 8) * 512), 4096);
	int zero = 1;
	for (int i = 0; i < 4096; i++)
		zero &= b[i] == 0;
	CHECK("bad.next_zero", zero);
	free(b);
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
	CHECK("concurrent.writers", all);
	int fd = open(path, O_RDONLY);
	unsigned char *r = malloc(REGION);
	int same = 1;
	for (int c = 0; c < N; c++) {
		long long at = base + (long long)c * REGION;
		if (full_pread(fd, r, REGION, at) != REGION || mismatch(r, REGION, at, 10 + c) >= 0)
			same = 0;
	}
	CHECK("concurrent.read_back", same);
	free(r);
	close(fd);
}

/* On the host, after a guest ran this program: the image file holds the
 * bytes the guest wrote (the four writers' regions and the 4 MiB case). */
static int check_image(const char *path)
{
	int fd = open(path, O_RDONLY);
	CHECK_SYS("image.open", fd);
	if (fd < 0)
		return check_done();
	size_t n = 2 << 20;
	unsigned char *r = malloc((4 << 20) + 512);
	int same = 1;
	for (int c = 0; c < 4; c++) {
		long long at = (16LL << 20) + (long long)c * (long long)n;
		if (full_pread(fd, r, n, at) != (ssize_t)n || mismatch(r, n, at, 10 + c) >= 0)
			same = 0;
	}
	CHECK("image.writers_regions", same);
	CHECK("image.large_case", full_pread(fd, r, (4 << 20) + 512, 5 << 20) == (4 << 20) + 512 &&
		  mismatch(r, (4 << 20) + 512, 5 << 20, 1) < 0);
	free(r);
	close(fd);
	return check_done();
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--check-image") == 0)
		return check_image(argv[2]);
	const char *disk = getenv("BLK_DISK");
	char path[64];
	snprintf(path, sizeof path, "/dev/%s", disk && *disk ? disk : "vda");
	nvme = strncmp(path, "/dev/nvme", 9) == 0;
	if ((!disk || !*disk) && access(path, F_OK) != 0) {
		printf("t_blk: no disk attached (BLK_DISK unset, no %s): skipped\n", path);
		return 0;
	}
	/* Linux probes NVMe controllers asynchronously: the node may appear
	 * a moment after boot */
	for (int i = 0; i < 100 && access(path, F_OK) != 0; i++)
		usleep(100 * 1000);
	test_pci_listing();
	int fd = open(path, O_RDWR);
	CHECK_SYS("open", fd);
	if (fd < 0)
		return check_done();
	test_geometry(fd, path);
	test_patterns(fd, path);
	const char *bad = getenv("BLK_BAD_SECTOR");
	if (bad && *bad)
		test_bad_sector(fd, atoll(bad));
	close(fd);
	test_concurrent(path);
	return check_done();
}
