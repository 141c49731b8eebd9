/*
 * t_falloc: fallocate(2) on tmpfs. Allocation (size and blocks), KEEP_SIZE,
 * PUNCH_HOLE (zeros, blocks given back, a shared mapping sees the hole),
 * RLIMIT_FSIZE, and Linux's checks in their order.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "check.h"

#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 1
#endif
#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_PUNCH_HOLE 2
#endif
#ifndef FALLOC_FL_ZERO_RANGE
#define FALLOC_FL_ZERO_RANGE 0x10
#endif

static struct stat st(int fd)
{
	struct stat s = {0};
	fstat(fd, &s);
	return s;
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	const char *dir = check_mktmp();
	char path[512];
	snprintf(path, sizeof path, "%s/f", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK_SYS("setup.open", fd);

	CHECK_SYS("alloc.mode0", fallocate(fd, 0, 0, 10000));
	CHECK_EQ("alloc.size", st(fd).st_size, 10000);
	CHECK("alloc.blocks", st(fd).st_blocks >= 10000 / 512);
	long before = st(fd).st_blocks;
	CHECK_SYS("keep.alloc", fallocate(fd, FALLOC_FL_KEEP_SIZE, 10000, 3 * 4096));
	CHECK_EQ("keep.size_unchanged", st(fd).st_size, 10000);
	CHECK("keep.blocks_grew", st(fd).st_blocks > before);
	char z[10000];
	CHECK_EQ("alloc.reads_zeros_len", pread(fd, z, sizeof z, 0), 10000);
	int zeros = 1;
	for (int i = 0; i < 10000; i++)
		zeros &= z[i] == 0;
	CHECK("alloc.reads_zeros", zeros);

	/* punch a hole through three pages of data */
	CHECK_SYS("punch.truncate", ftruncate(fd, 0));
	static char data[3 * 4096], back[3 * 4096];
	memset(data, 'x', sizeof data);
	CHECK_EQ("punch.write", pwrite(fd, data, sizeof data, 0), sizeof data);
	before = st(fd).st_blocks;
	CHECK_SYS("punch", fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 100, 2 * 4096));
	CHECK_EQ("punch.size_kept", st(fd).st_size, sizeof data);
	CHECK("punch.blocks_freed", st(fd).st_blocks < before);
	CHECK_EQ("punch.read", pread(fd, back, sizeof back, 0), sizeof back);
	memset(data + 100, 0, 2 * 4096);
	CHECK("punch.zeros_inside_data_outside", memcmp(back, data, sizeof data) == 0);

	/* a shared mapping sees a hole punched after it was made */
	memset(data, 'y', sizeof data);
	pwrite(fd, data, sizeof data, 0);
	char *m = mmap(NULL, sizeof data, PROT_READ, MAP_SHARED, fd, 0);
	CHECK("map.ok", m != MAP_FAILED);
	CHECK_EQ("map.before", m[4096], 'y');
	CHECK_SYS("map.punch", fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 4096, 4096));
	CHECK_EQ("map.sees_hole", m[4096], 0);
	CHECK_EQ("map.rest_kept", m[0], 'y');
	munmap(m, sizeof data);

	/* checks, in Linux's order */
	CHECK_ERR("bad.len_zero", fallocate(fd, 0, 0, 0), EINVAL);
	CHECK_ERR("bad.negative_offset", fallocate(fd, 0, -1, 10), EINVAL);
	CHECK_ERR("bad.punch_without_keep", fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 10), EOPNOTSUPP);
	CHECK_ERR("bad.unknown_mode", fallocate(fd, 0x80, 0, 10), EOPNOTSUPP);
	CHECK_ERR("bad.zero_range_on_tmpfs", fallocate(fd, FALLOC_FL_ZERO_RANGE, 0, 10), EOPNOTSUPP);
	CHECK_ERR("bad.overflow", fallocate(fd, 0, LLONG_MAX - 10, 100), EFBIG);
	CHECK_ERR("bad.fd", fallocate(-1, 0, 0, 10), EBADF);
	int ro = open(path, O_RDONLY);
	CHECK_ERR("bad.read_only", fallocate(ro, 0, 0, 10), EBADF);
	CHECK_ERR("bad.einval_before_ebadf_mode", fallocate(ro, 0, 0, 0), EINVAL);
	close(ro);
	int p[2];
	pipe(p);
	CHECK_ERR("bad.pipe", fallocate(p[1], 0, 0, 10), ESPIPE);
	close(p[0]);
	close(p[1]);
	int null = open("/dev/null", O_WRONLY);
	CHECK_ERR("bad.char_device", fallocate(null, 0, 0, 10), ENODEV);
	close(null);

	/* RLIMIT_FSIZE: growing past it is SIGXFSZ and EFBIG */
	signal(SIGXFSZ, SIG_IGN);
	struct rlimit old, lim = {4096 * 8, RLIM_INFINITY};
	getrlimit(RLIMIT_FSIZE, &old);
	setrlimit(RLIMIT_FSIZE, &lim);
	CHECK_ERR("fsize.efbig", fallocate(fd, 0, 0, 4096 * 9), EFBIG);
	CHECK_ERR("fsize.keep_size_too", fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 4096 * 9), EFBIG);
	CHECK_SYS("fsize.punch_ok", fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096 * 9));
	CHECK_SYS("fsize.within", fallocate(fd, 0, 0, 4096 * 8));
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, SIG_DFL);

	close(fd);
	unlink(path);
	CHECK_SYS("cleanup.rmdir", rmdir(dir));
	return check_done();
}
