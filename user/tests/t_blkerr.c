/*
 * t_blkerr: a disk that fails. The harness attaches a 24 MiB SATA disk
 * through QEMU's blkdebug driver, which fails every read of sector 1000
 * and every write of sector 2000 with EIO (`t_blkerr --make-image CONFIG
 * IMAGE` writes its configuration and the image), and names it with
 * ERR_DISK=sata:24576 (disks.h); without it the program only says it
 * skipped. Checks: reading the bad sector's 4 KiB block fails with EIO,
 * again and again, and never hangs; the blocks beside it read; a write
 * of the bad sector reports EIO by write or by fsync (Linux caches block
 * writes); the rest of the disk still reads and writes, and
 * `--check-image` finds those bytes in the image on the host. Then
 * (test_errseq) a failed write-back is reported as Linux's errseq
 * reports it: once to each file open when it failed, by its next fsync;
 * not to a file opened after some fsync reported it; to every file,
 * even one opened after it, when the failure happened in sync(2) or at
 * the last close and nobody has reported it yet.
 */
#define _GNU_SOURCE
#include <fcntl.h>

#include "check.h"
#include "disks.h"

#define BAD_READ 1000LL  /* sectors; 4 KiB-aligned, as Linux reads pages */
#define BAD_WRITE 2000LL

static int make_image(const char *cfg, const char *img)
{
	FILE *f = fopen(cfg, "w");
	if (!f)
		return 1;
	fprintf(f, "[inject-error]\nevent = \"read_aio\"\nerrno = \"5\"\nsector = \"%lld\"\n\n"
		   "[inject-error]\nevent = \"write_aio\"\nerrno = \"5\"\nsector = \"%lld\"\n",
		BAD_READ, BAD_WRITE);
	fclose(f);
	unlink(img);
	int fd = open(img, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, 24 << 20) != 0)
		return 1;
	close(fd);
	return 0;
}

static void fill(unsigned char *b, int n, unsigned seed)
{
	for (int i = 0; i < n; i++)
		b[i] = (unsigned char)(i * 7 + seed);
}

static int same(const unsigned char *b, int n, unsigned seed)
{
	for (int i = 0; i < n; i++)
		if (b[i] != (unsigned char)(i * 7 + seed))
			return 0;
	return 1;
}

static int check_image(const char *img)
{
	int fd = open(img, O_RDONLY);
	CHECK_SYS("image.open", fd);
	static unsigned char b[4096];
	CHECK("image.good_write", fd >= 0 && pread(fd, b, 4096, 0) == 4096 && same(b, 4096, 3));
	return check_done();
}

/* writes 512 bytes over the sector whose writes fail, through the cache */
static int write_bad(int fd)
{
	static unsigned char b[512];
	fill(b, sizeof b, 11);
	return pwrite(fd, b, sizeof b, BAD_WRITE * 512) == sizeof b;
}

static void test_errseq(const char *path)
{
	int a = open(path, O_RDWR), b = open(path, O_RDWR);
	CHECK("errseq.open", a >= 0 && b >= 0);
	CHECK("errseq.write", write_bad(a));
	CHECK_ERR("errseq.fsync", fsync(a), EIO);
	CHECK_SYS("errseq.fsync_again", fsync(a));
	int late = open(path, O_RDWR); /* after a report */
	CHECK_ERR("errseq.other_file", fsync(b), EIO);
	CHECK_SYS("errseq.other_file_again", fsync(b));
	CHECK_SYS("errseq.opened_after_report", fsync(late));

	/* failed in sync(2), reported by nobody yet */
	CHECK("errseq.write_for_sync", write_bad(b));
	sync();
	int after = open(path, O_RDWR);
	CHECK_ERR("errseq.sync_failure_a", fsync(a), EIO);
	CHECK_ERR("errseq.sync_failure_b", fsync(b), EIO);
	CHECK_ERR("errseq.sync_failure_late", fsync(late), EIO);
	CHECK_ERR("errseq.sync_failure_opened_after", fsync(after), EIO);
	int again = fsync(a) == 0 && fsync(b) == 0 && fsync(late) == 0 && fsync(after) == 0;
	CHECK("errseq.sync_failure_once", again);
	close(after);
	close(late);
	close(b);

	/* failed at the last close: the next open's fsync reports it */
	CHECK("errseq.write_for_close", write_bad(a));
	close(a);
	a = open(path, O_RDWR);
	CHECK_ERR("errseq.last_close_failure", fsync(a), EIO);
	CHECK_SYS("errseq.last_close_failure_once", fsync(a));
	close(a);
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--make-image") == 0)
		return make_image(argv[2], argv[3]);
	if (argc == 3 && strcmp(argv[1], "--check-image") == 0)
		return check_image(argv[2]);
	const char *spec = getenv("ERR_DISK");
	if (!spec || !*spec) {
		printf("t_blkerr: no failing disk attached (ERR_DISK unset): skipped\n");
		return 0;
	}
	char name[64], path[80];
	if (!CHECK("found", resolve_disk(spec, name, sizeof name)))
		return check_done();
	snprintf(path, sizeof path, "/dev/%s", name);
	for (int i = 0; i < 20 && access(path, F_OK) != 0; i++)
		usleep(100 * 1000);
	int fd = open(path, O_RDWR);
	CHECK_SYS("open", fd);
	if (fd < 0)
		return check_done();
	static unsigned char b[4096];
	CHECK_ERR("read.bad", pread(fd, b, 4096, BAD_READ * 512), EIO);
	CHECK_ERR("read.bad_again", pread(fd, b, 512, BAD_READ * 512), EIO);
	CHECK_EQ("read.before", pread(fd, b, 512, (BAD_READ - 1) * 512), 512);
	CHECK_EQ("read.after", pread(fd, b, 4096, (BAD_READ + 8) * 512), 4096);
	fill(b, 512, 9);
	errno = 0;
	ssize_t w = pwrite(fd, b, 512, BAD_WRITE * 512);
	int werr = errno;
	int failed = (w == -1 && werr == EIO) || (w == 512 && fsync(fd) == -1 && errno == EIO);
	if (!failed)
		printf("# write: %zd (%s)\n", w, strerror(werr));
	CHECK("write.bad_reported", failed);
	/* the rest of the disk still works */
	fill(b, 4096, 3);
	CHECK_EQ("write.good", pwrite(fd, b, 4096, 0), 4096);
	CHECK_SYS("write.fsync", fsync(fd));
	close(fd);
	fd = open(path, O_RDONLY);
	memset(b, 0, sizeof b);
	CHECK("read.good", fd >= 0 && pread(fd, b, 4096, 0) == 4096 && same(b, 4096, 3));
	CHECK_ERR("read.bad_reopened", pread(fd, b, 4096, BAD_READ * 512), EIO);
	close(fd);
	test_errseq(path);
	return check_done();
}
