/*
 * t_part: partitions. The harness makes two images on the host with
 * `t_part --make-images GPT MBR` (sgdisk and sfdisk, Debian's gdisk and
 * fdisk packages), attaches them as SATA disks and names them with
 * PART_DISKS=sata:40960,sata:49152 (kernel command line, passed on by
 * the runner; disks.h: SATA disks by their sizes);
 * without it the program only says it skipped. Checks: /proc/partitions
 * lists both disks and their partitions in Linux's format with Linux's
 * numbers and sizes; each partition device's type, numbers,
 * BLKGETSIZE64, BLKGETSIZE and BLKSSZGET; patterns written at a
 * partition's first and last bytes read back through the whole disk at
 * the partition's offset; the end of a partition (ENOSPC, short
 * writes); BLKRRPART (EINVAL on a partition, EBUSY while a partition is
 * open, then a fourth MBR partition written by the guest appears).
 * `t_part --check-images GPT MBR` on the host then checks the patterns
 * are at the right offsets of the image files and that sfdisk sees the
 * partition the guest added.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "check.h"
#include "disks.h"

/* <linux/fs.h> (musl-gcc has no kernel headers) */
#define BLKRRPART 0x125f
#define BLKGETSIZE 0x1260
#define BLKSSZGET 0x1268
#define BLKGETSIZE64 0x80081272

#define GPT_SECTORS 81920LL /* 40 MiB */
#define MBR_SECTORS 98304LL /* 48 MiB */
#define PIECE 8192

struct part {
	int disk; /* 0: the GPT disk, 1: the MBR one */
	int num;
	long long start, sectors; /* 512-byte sectors */
	int extended;             /* the device covers 2 sectors only */
};

/* What sgdisk and sfdisk make below (sgdisk puts the last partition's
 * end at the last usable sector, 34 before the disk's end). */
static const struct part parts[] = {
	{ 0, 1, 2048, 8192, 0 },
	{ 0, 2, 10240, 16384, 0 },
	{ 0, 3, 26624, GPT_SECTORS - 34 - 26624 + 1, 0 },
	{ 1, 1, 2048, 8192, 0 },
	{ 1, 2, 10240, 2, 1 },
	{ 1, 3, 43008, 16384, 0 },
	{ 1, 5, 12288, 4096, 0 },
	{ 1, 6, 18432, 8192, 0 },
};
#define NPARTS (int)(sizeof parts / sizeof parts[0])
/* the primary partition the guest adds, then BLKRRPART */
static const struct part added = { 1, 4, 65536, 8192, 0 };

static const char *disk_names[2];

/* a disk's first minor: sda 0, sdb 16, ... */
static int disk_minor(int d) { return 16 * (disk_names[d][2] - 'a'); }

static unsigned char pattern(long long off, unsigned seed)
{
	unsigned x = (unsigned)(off * 2246822519u) ^ seed * 3266489917u;
	return (unsigned char)(x ^ (x >> 11) ^ (x >> 19));
}

static void fill(unsigned char *b, size_t n, long long off, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = pattern(off + (long long)i, seed);
}

static int matches(const unsigned char *b, size_t n, long long off, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != pattern(off + (long long)i, seed))
			return 0;
	return 1;
}

static unsigned seed_of(const struct part *p) { return (unsigned)(p->disk * 100 + p->num); }

static void part_path(char *buf, size_t n, const struct part *p)
{
	snprintf(buf, n, "/dev/%s%d", disk_names[p->disk], p->num);
}

static char *slurp(const char *path)
{
	static char buf[8192];
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	ssize_t n, got = 0;
	while ((n = read(fd, buf + got, sizeof buf - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got] = 0;
	return buf;
}

/* the line /proc/partitions has for a device, in Linux's format */
static int has_line(const char *text, int maj, int min, long long kib, const char *name)
{
	char line[128];
	snprintf(line, sizeof line, "\n%4d  %7d %10lld %s\n", maj, min, kib, name);
	return strstr(text, line) != NULL;
}

static void test_proc_partitions(void)
{
	char *t = slurp("/proc/partitions");
	CHECK("proc.open", t != NULL);
	if (!t)
		return;
	CHECK("proc.header", strncmp(t, "major minor  #blocks  name\n\n", 28) == 0);
	CHECK("proc.gpt_disk", has_line(t, 8, disk_minor(0), GPT_SECTORS / 2, disk_names[0]));
	CHECK("proc.mbr_disk", has_line(t, 8, disk_minor(1), MBR_SECTORS / 2, disk_names[1]));
	int all = 1;
	for (int i = 0; i < NPARTS; i++) {
		const struct part *p = &parts[i];
		char name[32];
		snprintf(name, sizeof name, "%s%d", disk_names[p->disk], p->num);
		if (!has_line(t, 8, disk_minor(p->disk) + p->num, p->sectors / 2, name)) {
			printf("# /proc/partitions lacks %s (8:%d, %lld KiB)\n", name, disk_minor(p->disk) + p->num, p->sectors / 2);
			all = 0;
		}
	}
	CHECK("proc.partitions", all);
	char name[32];
	snprintf(name, sizeof name, "%s4", disk_names[1]);
	CHECK("proc.no_sdc4_yet", strstr(t, name) == NULL);
}

/* a partition device: numbers, sizes, its bytes at its disk's offset */
static int check_part(const struct part *p, const char *tag)
{
	char path[64], check[64];
	part_path(path, sizeof path, p);
	int fd = open(path, O_RDWR);
	snprintf(check, sizeof check, "%s.%s%d.open", tag, disk_names[p->disk], p->num);
	CHECK_SYS(check, fd);
	if (fd < 0)
		return 0;
	int ok = 1;
	struct stat st;
	unsigned long long size = 0;
	unsigned long sectors = 0;
	int ssz = 0;
	if (fstat(fd, &st) != 0 || !S_ISBLK(st.st_mode) || major(st.st_rdev) != 8 ||
	    minor(st.st_rdev) != (unsigned)(disk_minor(p->disk) + p->num)) {
		printf("# %s: not block device 8:%d\n", path, disk_minor(p->disk) + p->num);
		ok = 0;
	}
	if (ioctl(fd, BLKGETSIZE64, &size) != 0 || size != (unsigned long long)p->sectors * 512 ||
	    ioctl(fd, BLKGETSIZE, &sectors) != 0 || sectors != (unsigned long)p->sectors ||
	    ioctl(fd, BLKSSZGET, &ssz) != 0 || ssz != 512 || lseek(fd, 0, SEEK_END) != p->sectors * 512) {
		printf("# %s: size %llu (%lu sectors, %d-byte), want %lld sectors\n", path, size, sectors, ssz, p->sectors);
		ok = 0;
	}
	if (p->extended) {
		close(fd);
		return ok;
	}
	/* the first and last PIECE bytes, then read back through the disk */
	static unsigned char b[PIECE], r[PIECE];
	long long ends[2] = { 0, p->sectors * 512 - PIECE };
	for (int i = 0; i < 2; i++) {
		fill(b, PIECE, ends[i], seed_of(p));
		if (pwrite(fd, b, PIECE, ends[i]) != PIECE) {
			printf("# %s: pwrite at %lld: %s\n", path, ends[i], strerror(errno));
			ok = 0;
		}
	}
	if (fsync(fd) != 0)
		ok = 0;
	/* the end of the partition */
	if (pwrite(fd, b, 512, p->sectors * 512) != -1 || errno != ENOSPC) {
		printf("# %s: write at the end not ENOSPC\n", path);
		ok = 0;
	}
	if (pread(fd, r, 512, p->sectors * 512) != 0 || pwrite(fd, b + 100, 1024, p->sectors * 512 - 512) != 512) {
		printf("# %s: read at / write across the end\n", path);
		ok = 0;
	}
	fill(b, 512, p->sectors * 512 - 512, seed_of(p));
	pwrite(fd, b, 512, p->sectors * 512 - 512); /* put the pattern back */
	close(fd);
	char dpath[64];
	snprintf(dpath, sizeof dpath, "/dev/%s", disk_names[p->disk]);
	int dfd = open(dpath, O_RDONLY);
	for (int i = 0; i < 2 && dfd >= 0; i++) {
		if (pread(dfd, r, PIECE, p->start * 512 + ends[i]) != PIECE || !matches(r, PIECE, ends[i], seed_of(p))) {
			printf("# %s: bytes at %lld not at disk offset %lld\n", path, ends[i], p->start * 512 + ends[i]);
			ok = 0;
		}
	}
	if (dfd >= 0)
		close(dfd);
	return ok;
}

static void test_devices(void)
{
	for (int i = 0; i < NPARTS; i++) {
		char check[64];
		snprintf(check, sizeof check, "part.%s%d", disk_names[parts[i].disk], parts[i].num);
		CHECK(check, check_part(&parts[i], "part"));
	}
	char path[64];
	snprintf(path, sizeof path, "/dev/%s4", disk_names[0]);
	CHECK_ERR("part.no_gpt4", open(path, O_RDONLY), ENOENT);
}

static void test_reread(void)
{
	char disk[64], p1[64], p4[64];
	snprintf(disk, sizeof disk, "/dev/%s", disk_names[1]);
	part_path(p1, sizeof p1, &parts[3]);
	part_path(p4, sizeof p4, &added);
	int fd = open(disk, O_RDWR);
	CHECK_SYS("rrpart.open", fd);
	if (fd < 0)
		return;
	/* a fourth primary entry, written by hand (MBR entry 4 at 494) */
	unsigned char e[16] = { 0 };
	e[4] = 0x83;
	for (int i = 0; i < 4; i++) {
		e[8 + i] = (unsigned char)(added.start >> (8 * i));
		e[12 + i] = (unsigned char)(added.sectors >> (8 * i));
	}
	CHECK_EQ("rrpart.write_entry", pwrite(fd, e, 16, 446 + 3 * 16), 16);
	CHECK_SYS("rrpart.fsync", fsync(fd));
	int pfd = open(p1, O_RDONLY);
	CHECK_SYS("rrpart.open_part", pfd);
	CHECK_ERR("rrpart.on_partition", ioctl(pfd, BLKRRPART, 0), EINVAL);
	CHECK_ERR("rrpart.busy", ioctl(fd, BLKRRPART, 0), EBUSY);
	close(pfd);
	CHECK_SYS("rrpart.reread", ioctl(fd, BLKRRPART, 0));
	close(fd);
	char *t = slurp("/proc/partitions");
	char name[32];
	snprintf(name, sizeof name, "%s4", disk_names[1]);
	CHECK("rrpart.proc", t && has_line(t, 8, disk_minor(1) + 4, added.sectors / 2, name));
	for (int i = 0; i < 20 && access(p4, F_OK) != 0; i++)
		usleep(100 * 1000);
	CHECK("rrpart.new_device", check_part(&added, "rrpart"));
	/* the others survive a reread */
	CHECK("rrpart.p5_still", check_part(&parts[6], "rrpart"));
}

/* On the host: make the images (sgdisk for GPT, sfdisk for MBR). */
static int make_images(const char *gpt, const char *mbr)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd,
		 "rm -f '%s' '%s' && truncate -s %lld '%s' && truncate -s %lld '%s' && "
		 "PATH=$PATH:/usr/sbin:/sbin; sgdisk -n 1:2048:+4M -c 1:alpha -n 2:0:+8M -n 3:0:0 '%s' >/dev/null && "
		 "printf 'label: dos\\nstart=2048, size=8192, type=83\\nstart=10240, size=32768, type=5\\n"
		 "start=43008, size=16384, type=83\\nstart=12288, size=4096, type=83\\nstart=18432, size=8192, type=83\\n' | "
		 "sfdisk -q '%s'",
		 gpt, mbr, GPT_SECTORS * 512, gpt, MBR_SECTORS * 512, mbr, gpt, mbr);
	int st = system(cmd);
	if (st != 0) {
		fprintf(stderr, "t_part: making the images failed (%d): are gdisk and fdisk installed?\n", st);
		return 1;
	}
	return 0;
}

/* On the host, after a guest ran this program. */
static int check_images(const char *gpt, const char *mbr)
{
	const char *imgs[2] = { gpt, mbr };
	int fds[2];
	for (int i = 0; i < 2; i++) {
		fds[i] = open(imgs[i], O_RDONLY);
		CHECK_SYS(i ? "image.open_mbr" : "image.open_gpt", fds[i]);
		if (fds[i] < 0)
			return check_done();
	}
	static unsigned char r[PIECE];
	for (int i = 0; i <= NPARTS; i++) {
		const struct part *p = i < NPARTS ? &parts[i] : &added;
		if (p->extended)
			continue;
		long long ends[2] = { 0, p->sectors * 512 - PIECE };
		int ok = 1;
		for (int j = 0; j < 2; j++)
			ok &= pread(fds[p->disk], r, PIECE, p->start * 512 + ends[j]) == PIECE &&
			      matches(r, PIECE, ends[j], seed_of(p));
		char check[64];
		snprintf(check, sizeof check, "image.%s_p%d", p->disk ? "mbr" : "gpt", p->num);
		CHECK(check, ok);
	}
	char cmd[600];
	snprintf(cmd, sizeof cmd, "PATH=$PATH:/usr/sbin:/sbin; sfdisk -d '%s' | grep -q 'start= *65536, size= *8192, type=83'", mbr);
	CHECK("image.sfdisk_sees_p4", system(cmd) == 0);
	snprintf(cmd, sizeof cmd, "PATH=$PATH:/usr/sbin:/sbin; sgdisk -v '%s' | grep -q 'No problems found'", gpt);
	CHECK("image.sgdisk_verifies", system(cmd) == 0);
	return check_done();
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--make-images") == 0)
		return make_images(argv[2], argv[3]);
	if (argc == 4 && strcmp(argv[1], "--check-images") == 0)
		return check_images(argv[2], argv[3]);
	const char *env = getenv("PART_DISKS");
	if (!env || !*env) {
		printf("t_part: no partitioned disks attached (PART_DISKS unset): skipped\n");
		return 0;
	}
	static char list[64];
	snprintf(list, sizeof list, "%s", env);
	char *comma = strchr(list, ',');
	if (!comma) {
		printf("t_part: PART_DISKS=%s: want GPT,MBR\n", env);
		return 1;
	}
	*comma = 0;
	static char names[2][64];
	const char *specs[2] = { list, comma + 1 };
	for (int i = 0; i < 2; i++) {
		if (!CHECK(i ? "found_mbr_disk" : "found_gpt_disk", resolve_disk(specs[i], names[i], sizeof names[i])))
			return check_done();
		disk_names[i] = names[i];
	}
	/* the nodes may come a moment after /proc/partitions lists them */
	char path[80];
	snprintf(path, sizeof path, "/dev/%s3", disk_names[1]);
	for (int i = 0; i < 20 && access(path, F_OK) != 0; i++)
		usleep(100 * 1000);
	test_proc_partitions();
	test_devices();
	test_reread();
	return check_done();
}
