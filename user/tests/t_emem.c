/*
 * t_emem: the error table of the memory calls (issue 22's audit, memory):
 * mmap, munmap, mprotect, mremap, madvise, msync and brk. Each check is
 * one condition the Linux man page documents, with the errno Linux 6.1
 * returns, and where Linux tests one argument before another (the offset
 * before the descriptor, the flags before the address, the length before
 * the mapping), a check with both wrong pins which one wins. t_mem,
 * t_mlock, t_badinput and t_errors hold the conditions checked before
 * this audit; this program does not repeat them. Addresses past user space
 * are in the kernel half: where user space ends depends on whether the
 * CPU has 5-level paging. Conditions a guest
 * cannot make (65,530 mappings, a noexec mount that Shortbread does not
 * enforce, hardware poison) are in the support notes instead.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "probe.h"

#define PG 4096L
#ifndef MAP_SHARED_VALIDATE
#define MAP_SHARED_VALIDATE 0x03
#endif
#ifndef MAP_SYNC
#define MAP_SYNC 0x80000
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
#ifndef MADV_REMOVE
#define MADV_REMOVE 9
#endif

/* the raw calls: the C library's wrappers check some arguments first */
static long xmmap(void *addr, size_t len, int prot, int flags, int fd, unsigned long off)
{
	return syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static long xmremap(void *old, size_t olen, size_t nlen, int flags, void *naddr)
{
	return syscall(SYS_mremap, old, olen, nlen, flags, naddr);
}

/* n fresh pages, and a hole after them */
static char *pages(int n)
{
	char *p = mmap(NULL, (n + 1) * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	munmap(p + n * PG, PG);
	return p;
}

static void test_mmap(int rd, int wr, int dfd)
{
	int anon = MAP_PRIVATE | MAP_ANONYMOUS;
	CHECK_ERR("mmap.offset_unaligned_before_ebadf", xmmap(NULL, PG, PROT_READ, MAP_PRIVATE, -1, 1), EINVAL);
	CHECK_ERR("mmap.offset_unaligned", xmmap(NULL, PG, PROT_READ, MAP_PRIVATE, rd, 100), EINVAL);
	CHECK_ERR("mmap.ebadf_before_len_zero", xmmap(NULL, 0, PROT_READ, MAP_PRIVATE, -1, 0), EBADF);
	CHECK_ERR("mmap.no_type", xmmap(NULL, PG, PROT_READ, MAP_ANONYMOUS, -1, 0), EINVAL);
	CHECK_ERR("mmap.no_type_file", xmmap(NULL, PG, PROT_READ, 0, rd, 0), EINVAL);
	CHECK_ERR("mmap.len_wraps", xmmap(NULL, (size_t)-1, PROT_READ, anon, -1, 0), ENOMEM);
	CHECK_ERR("mmap.len_past_user_space", xmmap(NULL, 1UL << 57, PROT_READ, anon, -1, 0), ENOMEM);
	char *p = pages(1);
	CHECK_ERR("mmap.fixed_unaligned", xmmap(p + 1, PG, PROT_READ, anon | MAP_FIXED, -1, 0), EINVAL);
	CHECK_ERR("mmap.fixed_kernel_half", xmmap((void *)0xffff800000000000UL, PG, PROT_READ, anon | MAP_FIXED, -1, 0), ENOMEM);
	CHECK_ERR("mmap.noreplace_taken", xmmap(p, PG, PROT_READ, anon | MAP_FIXED_NOREPLACE, -1, 0), EEXIST);
	munmap(p, PG);
	long r = xmmap((void *)1, PG, PROT_READ, anon, -1, 0);
	CHECK("mmap.hint_unaligned_ignored", r != -1 && r % PG == 0);
	if (r != -1)
		munmap((void *)r, PG);

	/* file mappings: the descriptor's access mode */
	CHECK_ERR("mmap.private_of_wronly", xmmap(NULL, PG, PROT_READ, MAP_PRIVATE, wr, 0), EACCES);
	CHECK_ERR("mmap.shared_write_of_rdonly", xmmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, rd, 0), EACCES);
	r = xmmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, rd, 0);
	CHECK("mmap.private_write_of_rdonly_ok", r != -1);
	if (r != -1)
		munmap((void *)r, PG);
	r = xmmap(NULL, PG, PROT_READ, MAP_SHARED, rd, 0);
	CHECK("mmap.shared_read_of_rdonly_ok", r != -1);
	if (r != -1) {
		CHECK_ERR("mprotect.shared_write_of_rdonly", mprotect((void *)r, PG, PROT_READ | PROT_WRITE), EACCES);
		CHECK_ERR("madvise.remove_readonly_shared", madvise((void *)r, PG, MADV_REMOVE), EACCES);
		munmap((void *)r, PG);
	}
	int op = open("file", O_PATH);
	CHECK_ERR("mmap.opath", xmmap(NULL, PG, PROT_READ, MAP_PRIVATE, op, 0), EBADF);
	close(op);
	CHECK_ERR("mmap.directory", xmmap(NULL, PG, PROT_READ, MAP_PRIVATE, dfd, 0), ENODEV);
	int pp[2];
	pipe(pp);
	CHECK_ERR("mmap.pipe", xmmap(NULL, PG, PROT_READ, MAP_PRIVATE, pp[0], 0), ENODEV);
	close(pp[0]);
	close(pp[1]);
	CHECK_ERR("mmap.offset_past_max", xmmap(NULL, PG, PROT_READ, MAP_PRIVATE, rd, 0xfffffffffffff000UL), EOVERFLOW);
	CHECK_ERR("mmap.shared_validate_unknown_flag", xmmap(NULL, PG, PROT_READ, MAP_SHARED_VALIDATE | MAP_SYNC, rd, 0), EOPNOTSUPP);
	r = xmmap(NULL, PG, PROT_READ, MAP_SHARED | MAP_SYNC, rd, 0);
	CHECK("mmap.shared_drops_unknown_flag", r != -1);
	if (r != -1)
		munmap((void *)r, PG);
	r = xmmap(NULL, PG, PROT_READ, MAP_SHARED_VALIDATE, rd, 0);
	CHECK("mmap.shared_validate_ok", r != -1);
	if (r != -1)
		munmap((void *)r, PG);
	CHECK_ERR("mmap.shared_validate_anonymous", xmmap(NULL, PG, PROT_READ, MAP_SHARED_VALIDATE | MAP_ANONYMOUS, -1, 0), EINVAL);
	CHECK_ERR("mmap.growsdown_file", xmmap(NULL, PG, PROT_READ, MAP_PRIVATE | MAP_GROWSDOWN, rd, 0), EINVAL);
	CHECK_ERR("mmap.growsdown_shared_anon", xmmap(NULL, PG, PROT_READ, MAP_SHARED | MAP_ANONYMOUS | MAP_GROWSDOWN, -1, 0), EINVAL);

	/* a memfd sealed against writing cannot be mapped shared and writable */
	int m = memfd_create("seal", MFD_ALLOW_SEALING);
	ftruncate(m, PG);
	fcntl(m, F_ADD_SEALS, F_SEAL_WRITE);
	CHECK_ERR("mmap.sealed_shared_write", xmmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0), EPERM);
	r = xmmap(NULL, PG, PROT_READ, MAP_SHARED, m, 0);
	CHECK("mmap.sealed_shared_read_ok", r != -1);
	if (r != -1) {
		CHECK_ERR("mprotect.sealed_to_write", mprotect((void *)r, PG, PROT_READ | PROT_WRITE), EACCES);
		munmap((void *)r, PG);
	}
	close(m);
}

static void test_munmap_mprotect(void)
{
	CHECK_ERR("munmap.kernel_half", munmap((void *)0xffff800000000000UL, PG), EINVAL);
	CHECK_ERR("munmap.len_past_user_space", munmap((void *)PG, 1UL << 57), EINVAL);
	CHECK_ERR("munmap.len_wraps", munmap((void *)PG, (size_t)-PG), EINVAL);
	char *p = pages(2);
	munmap(p, 2 * PG);
	CHECK_SYS("munmap.unmapped_ok", munmap(p, 2 * PG));

	p = pages(2);
	CHECK_ERR("mprotect.growsdown_and_up", mprotect(p, PG, PROT_READ | PROT_GROWSDOWN | PROT_GROWSUP), EINVAL);
	CHECK_SYS("mprotect.len_zero_unmapped_ok", mprotect(p + 2 * PG, 0, PROT_READ));
	CHECK_ERR("mprotect.wraps", syscall(SYS_mprotect, p, (size_t)-PG, PROT_READ), ENOMEM);
	CHECK_SYS("mprotect.len_zero_before_bad_prot", syscall(SYS_mprotect, p, 0, 0x100));
	CHECK_ERR("mprotect.wraps_before_bad_prot", syscall(SYS_mprotect, p, (size_t)-PG, 0x100), ENOMEM);
	CHECK_ERR("mprotect.bad_prot_before_unmapped", syscall(SYS_mprotect, p + 2 * PG, PG, 0x100), EINVAL);
	CHECK_ERR("mprotect.into_hole", mprotect(p, 3 * PG, PROT_READ), ENOMEM);
	CHECK_ERR("mprotect.growsdown_not_stack", mprotect(p, PG, PROT_READ | PROT_GROWSDOWN), EINVAL);
	CHECK_ERR("mprotect.kernel_half", mprotect((void *)0xffff800000000000UL, PG, PROT_READ), ENOMEM);
	munmap(p, 2 * PG);
}

static void test_mremap(void)
{
	char *p = pages(2), *q = pages(2);
	CHECK_ERR("mremap.bad_flags", xmremap(p, PG, PG, 0x100, NULL), EINVAL);
	CHECK_ERR("mremap.fixed_without_maymove", xmremap(p, PG, PG, MREMAP_FIXED, q), EINVAL);
	CHECK_ERR("mremap.dontunmap_without_maymove", xmremap(p, PG, PG, MREMAP_DONTUNMAP, NULL), EINVAL);
	CHECK_ERR("mremap.dontunmap_resize", xmremap(p, PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL), EINVAL);
	CHECK_ERR("mremap.unaligned", xmremap(p + 1, PG, PG, 0, NULL), EINVAL);
	CHECK_ERR("mremap.new_len_zero", xmremap(p, PG, 0, 0, NULL), EINVAL);
	CHECK_ERR("mremap.new_len_zero_before_efault", xmremap(p + 2 * PG, PG, 0, 0, NULL), EINVAL);
	CHECK_ERR("mremap.unmapped", xmremap(p + 2 * PG, PG, 2 * PG, MREMAP_MAYMOVE, NULL), EFAULT);
	CHECK_ERR("mremap.old_past_mapping", xmremap(p, 3 * PG, 4 * PG, MREMAP_MAYMOVE, NULL), EFAULT);
	CHECK_ERR("mremap.grow_in_place_blocked", (mmap(p + 2 * PG, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0),
						   xmremap(p, 2 * PG, 4 * PG, 0, NULL)), ENOMEM);
	CHECK_ERR("mremap.fixed_overlap", xmremap(p, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, p + PG), EINVAL);
	CHECK_ERR("mremap.fixed_unaligned", xmremap(p, PG, PG, MREMAP_MAYMOVE | MREMAP_FIXED, q + 1), EINVAL);
	CHECK_ERR("mremap.fixed_kernel_half", xmremap(p, PG, PG, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)0xffff800000000000UL), EINVAL);
	long r = xmremap(p, 2 * PG, PG, 0, NULL);
	CHECK_EQ("mremap.shrink_in_place", r, (long)p);
	munmap(p, 3 * PG);
	munmap(q, 2 * PG);
}

static void test_madvise_msync(int rd)
{
	char *p = pages(2);
	CHECK_ERR("madvise.len_rounds_to_zero", syscall(SYS_madvise, p, (size_t)-1, MADV_NORMAL), EINVAL);
	CHECK_ERR("madvise.wraps", syscall(SYS_madvise, p, (size_t)-PG, MADV_NORMAL), EINVAL);
	CHECK_SYS("madvise.len_zero_unmapped_ok", madvise(p + 2 * PG, 0, MADV_NORMAL));
	CHECK_ERR("madvise.partly_unmapped", madvise(p, 3 * PG, MADV_NORMAL), ENOMEM);
	CHECK_ERR("madvise.remove_private_anon", madvise(p, PG, MADV_REMOVE), EINVAL);
	CHECK_SYS("mlock", mlock(p, PG));
	CHECK_ERR("madvise.dontneed_locked", madvise(p, PG, MADV_DONTNEED), EINVAL);
	CHECK_ERR("msync.invalidate_locked", msync(p, PG, MS_INVALIDATE), EBUSY);
	munlock(p, PG);

	CHECK_ERR("msync.bad_flags", msync(p, PG, 0x100), EINVAL);
	CHECK_ERR("msync.unaligned", msync(p + 1, PG, MS_SYNC), EINVAL);
	CHECK_ERR("msync.sync_and_async", msync(p, PG, MS_SYNC | MS_ASYNC), EINVAL);
	CHECK_ERR("msync.flags_before_unmapped", msync(p + 2 * PG, PG, MS_SYNC | MS_ASYNC), EINVAL);
	CHECK_SYS("msync.len_zero_unmapped_ok", msync(p + 2 * PG, 0, MS_SYNC));
	CHECK_ERR("msync.wraps", syscall(SYS_msync, p, (size_t)-PG, MS_SYNC), ENOMEM);
	CHECK_ERR("msync.partly_unmapped", msync(p, 3 * PG, MS_ASYNC), ENOMEM);
	CHECK_SYS("msync.anonymous_ok", msync(p, 2 * PG, MS_SYNC));
	munmap(p, 2 * PG);
	(void)rd;
}

static void test_brk(void)
{
	long cur = syscall(SYS_brk, 0);
	CHECK("brk.query", cur > 0);
	CHECK_EQ("brk.below_start_unchanged", syscall(SYS_brk, 4096), cur);
	CHECK_EQ("brk.kernel_half_unchanged", syscall(SYS_brk, 0xffff800000000000UL), cur);
	/* into another mapping: refused, the break stays */
	char *m = mmap((void *)(((cur + 16 * PG) + PG - 1) & ~(PG - 1)), PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (m != MAP_FAILED) {
		CHECK_EQ("brk.into_mapping_unchanged", syscall(SYS_brk, (long)m + PG), cur);
		munmap(m, PG);
	}
	CHECK_EQ("brk.still", syscall(SYS_brk, 0), cur);
}

/* as nobody with RLIMIT_MEMLOCK at one page: MAP_LOCKED past it is EAGAIN */
static void locked_child(int out)
{
	put(out, rc(xmmap(NULL, 4 * PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED, -1, 0)));
	long r = xmmap(NULL, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED, -1, 0);
	put(out, rc(r));
	put(out, rc(r == -1 ? -1 : xmremap((void *)r, PG, 4 * PG, MREMAP_MAYMOVE, NULL)));
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	const char *dir = check_mktmp();
	if (chdir(dir))
		return 1;
	int fd = open("file", O_CREAT | O_RDWR, 0644);
	ftruncate(fd, 4 * PG);
	close(fd);
	int rd = open("file", O_RDONLY), wr = open("file", O_WRONLY), dfd = open(".", O_RDONLY | O_DIRECTORY);

	test_mmap(rd, wr, dfd);
	test_munmap_mprotect();
	test_mremap();
	test_madvise_msync(rd);
	test_brk();

	struct rlimit old, one = { PG, PG };
	getrlimit(RLIMIT_MEMLOCK, &old);
	setrlimit(RLIMIT_MEMLOCK, &one);
	int res[3];
	int got = probe(locked_child, 1, res, 3);
	setrlimit(RLIMIT_MEMLOCK, &old);
	CHECK_EQ("map_locked.results", got, 3);
	if (got == 3) {
		CHECK_EQ("map_locked.past_memlock_eagain", res[0], EAGAIN);
		CHECK_EQ("map_locked.within_memlock_ok", res[1], 0);
		CHECK_EQ("mremap.locked_past_memlock_eagain", res[2], EAGAIN);
	}

	close(rd);
	close(wr);
	close(dfd);
	unlink("file");
	if (chdir("/") == 0)
		rmdir(dir);
	return check_done();
}
