/* t_mincore: mincore(2) reports which pages of a range are in memory:
 * untouched anonymous pages are not, written ones are, read ones are
 * (the zero page) but not their unread neighbours, discarded ones are
 * not again; a shared mapping of a tmpfs file reports the file's
 * pages whether or not this process touched them (the page cache);
 * locked pages are; and Linux's errors: EINVAL for an unaligned address,
 * ENOMEM for a range with an unmapped page or past the user half, EFAULT
 * for a bad vector, a length of 0 accepted whatever the vector. */
#define _GNU_SOURCE
#include "check.h"

#include <fcntl.h>
#include <sys/mman.h>

static long pg;

static void vec_str(const unsigned char *v, int n, char *out)
{
	for (int i = 0; i < n; i++)
		out[i] = (char)('0' + (v[i] & 1));
	out[n] = 0;
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	pg = sysconf(_SC_PAGESIZE);
	unsigned char v[8];
	char s[16];

	char *a = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK("anon.map", a != MAP_FAILED);
	CHECK_SYS("anon.untouched", mincore(a, 4 * pg, v));
	vec_str(v, 4, s);
	CHECK_STR("anon.untouched_none", s, "0000");
	a[0] = 1;
	a[2 * pg + 5] = 1;
	CHECK_SYS("anon.touched", mincore(a, 4 * pg, v));
	vec_str(v, 4, s);
	CHECK_STR("anon.touched_pages", s, "1010");
	/* a length that is not a multiple of the page size covers the partial page */
	memset(v, 0xff, sizeof v);
	CHECK_SYS("anon.partial_length", mincore(a, 2 * pg + 1, v));
	vec_str(v, 3, s);
	CHECK_STR("anon.partial_length_pages", s, "101");
	CHECK_EQ("anon.partial_length_stops", v[3], 0xff);
	CHECK_SYS("anon.dontneed", madvise(a + 2 * pg, pg, MADV_DONTNEED));
	CHECK_SYS("anon.after_dontneed", mincore(a, 4 * pg, v));
	vec_str(v, 4, s);
	CHECK_STR("anon.after_dontneed_pages", s, "1000");

	/* pages only read count (they map the zero page), their unread
	 * neighbours do not, and a store beside a read page reads back with
	 * the neighbours still zero */
	char *r = mmap(NULL, 32 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK("read.map", r != MAP_FAILED);
	unsigned char rv[32];
	char rs[40];
	volatile char sink = r[3 * pg] + r[20 * pg + 9];
	(void)sink;
	CHECK_SYS("read.mincore", mincore(r, 32 * pg, rv));
	vec_str(rv, 32, rs);
	CHECK_STR("read.pages_read_only", rs, "00010000000000000000100000000000");
	r[4 * pg + 1] = 42;
	CHECK_EQ("read.store_beside", r[4 * pg + 1], 42);
	CHECK("read.neighbours_zero", r[3 * pg] == 0 && r[5 * pg + 1] == 0 && r[4 * pg] == 0);
	CHECK_SYS("read.mincore_after_store", mincore(r, 32 * pg, rv));
	vec_str(rv, 32, rs);
	CHECK_STR("read.pages_after_store", rs, "00011100000000000000100000000000");
	munmap(r, 32 * pg);

	/* errors */
	CHECK_ERR("err.unaligned", mincore(a + 1, pg, v), EINVAL);
	CHECK_ERR("err.past_mapping", mincore(a + 3 * pg, 2 * pg, v), ENOMEM);
	CHECK_ERR("err.past_user_half", mincore((void *)0x7ffffffff000, 2 * pg, v), ENOMEM);
	CHECK_ERR("err.bad_vector", mincore(a, pg, (unsigned char *)8), EFAULT);
	CHECK_SYS("err.zero_length", mincore(a, 0, (unsigned char *)8));
	munmap(a, 4 * pg);
	CHECK_ERR("err.unmapped", mincore(a, pg, v), ENOMEM);

	/* a shared file mapping answers from the file's pages */
	const char *tmp = check_mktmp();
	char path[300];
	snprintf(path, sizeof path, "%s/f", tmp);
	int fd = open(path, O_CREAT | O_RDWR, 0600);
	CHECK_SYS("file.create", fd);
	char *page = calloc(1, pg);
	CHECK("file.write", pwrite(fd, page, pg, 0) == pg && pwrite(fd, page, pg, 2 * pg) == pg);
	CHECK_SYS("file.size", ftruncate(fd, 4 * pg));
	char *m = mmap(NULL, 4 * pg, PROT_READ, MAP_SHARED, fd, 0);
	CHECK("file.map", m != MAP_FAILED);
	CHECK_SYS("file.mincore", mincore(m, 4 * pg, v));
	vec_str(v, 4, s);
	CHECK_STR("file.written_pages_resident", s, "1010");
	munmap(m, 4 * pg);
	close(fd);
	unlink(path);
	rmdir(tmp);
	free(page);

	/* locked pages are in memory */
	char *l = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED, -1, 0);
	CHECK("locked.map", l != MAP_FAILED);
	CHECK_SYS("locked.mincore", mincore(l, 2 * pg, v));
	vec_str(v, 2, s);
	CHECK_STR("locked.resident", s, "11");
	munmap(l, 2 * pg);
	return check_done();
}
