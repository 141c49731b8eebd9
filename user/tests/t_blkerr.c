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
 * `--check-image` finds those bytes in the image on the host.
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
	return check_done();
}
