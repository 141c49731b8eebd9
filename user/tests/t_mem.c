/* t_mem: brk, mmap (anonymous private/shared, file-backed, MAP_FIXED,
 * MAP_FIXED_NOREPLACE), PROT_NONE guard pages caught as SIGSEGV, mprotect,
 * munmap, mremap, madvise(MADV_DONTNEED). */
#define _GNU_SOURCE
#include "check.h"

#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define PG 4096L

static sigjmp_buf fault_jmp;
static volatile void *fault_addr;
static volatile int fault_sig, fault_code;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	fault_sig = sig;
	fault_code = si->si_code;
	fault_addr = si->si_addr;
	siglongjmp(fault_jmp, 1);
}

/* Returns 1 if touching p (read, or write when write != 0) faults; the
 * signal, code and address are left in fault_*. */
static int faults(volatile char *p, int write)
{
	fault_sig = 0;
	fault_code = 0;
	fault_addr = NULL;
	if (sigsetjmp(fault_jmp, 1))
		return 1;
	if (write)
		*p = 1;
	else
		(void)*p;
	return 0;
}

static void test_brk(void)
{
	/* musl's brk()/sbrk(n) refuse to move the break, so use the system
	 * call; nothing in between may allocate with brk */
	long cur = syscall(SYS_brk, 0);
	long grown = syscall(SYS_brk, cur + 16 * PG);
	int wrote = 0;
	if (grown == cur + 16 * PG) {
		char *p = (char *)cur;
		memset(p, 0x5a, 16 * PG);
		wrote = p[0] == 0x5a && p[16 * PG - 1] == 0x5a;
	}
	long shrunk = syscall(SYS_brk, cur);
	long bogus = syscall(SYS_brk, 4096); /* below the heap start: refused */
	long after = syscall(SYS_brk, 0);
	long regrow = syscall(SYS_brk, cur + PG);
	int zero_again = regrow == cur + PG && ((char *)cur)[100] == 0;
	syscall(SYS_brk, cur);
	CHECK("brk.initial", cur > 0 && cur % PG == 0);
	CHECK_EQ("brk.grow", grown, cur + 16 * PG);
	CHECK("brk.memory_usable", wrote);
	CHECK_EQ("brk.shrink", shrunk, cur);
	CHECK_EQ("brk.refuse_low", bogus, cur);
	CHECK_EQ("brk.query", after, cur);
	CHECK("brk.regrown_zeroed", zero_again);
	CHECK("brk.shrunk_faults", faults((char *)cur + 2 * PG, 0) && fault_sig == SIGSEGV);
}

static void test_anon(void)
{
	char *p = mmap(NULL, 8 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK("mmap.anon", p != MAP_FAILED);
	CHECK_EQ("mmap.aligned", (uintptr_t)p % PG, 0);
	int zero = 1;
	for (long i = 0; i < 8 * PG; i += 512)
		zero &= p[i] == 0;
	CHECK("mmap.anon_zeroed", zero);
	for (long i = 0; i < 8 * PG; i++)
		p[i] = (char)i;
	int ok = 1;
	for (long i = 0; i < 8 * PG; i++)
		ok &= p[i] == (char)i;
	CHECK("mmap.anon_rw", ok);

	/* partial munmap punches a hole */
	CHECK_SYS("munmap.middle", munmap(p + 2 * PG, PG));
	CHECK("munmap.hole_faults", faults(p + 2 * PG, 0));
	CHECK_EQ("munmap.hole_sig", fault_sig, SIGSEGV);
	CHECK_EQ("munmap.hole_code", fault_code, SEGV_MAPERR);
	CHECK("munmap.hole_addr", fault_addr == p + 2 * PG);
	CHECK("munmap.neighbours_kept", !faults(p + PG, 0) && !faults(p + 3 * PG, 1) && p[PG + 5] == (char)(PG + 5));
	CHECK_SYS("munmap.rest", munmap(p, 8 * PG)); /* over a hole: fine */
	CHECK("munmap.all_gone", faults(p + 5 * PG, 0));
	CHECK_ERR("munmap.unaligned", munmap(p + 1, PG), EINVAL);
	CHECK_ERR("munmap.zero_len", munmap(p, 0), EINVAL);
	CHECK("mmap.zero_len", mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED && errno == EINVAL);
	CHECK("mmap.no_type", mmap(NULL, PG, PROT_READ, MAP_ANONYMOUS, -1, 0) == MAP_FAILED && errno == EINVAL);

	/* a large mapping is committed lazily and fully usable */
	long big = 32L << 20;
	char *b = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK("mmap.large", b != MAP_FAILED);
	long sum = 0;
	for (long i = 0; i < big; i += PG)
		b[i] = 1;
	for (long i = 0; i < big; i += PG)
		sum += b[i];
	CHECK_EQ("mmap.large_touched", sum, big / PG);
	munmap(b, big);
}

static void test_fixed(void)
{
	char *p = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(p, 'a', 4 * PG);
	char *q = mmap(p + PG, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	CHECK("mmap.fixed_addr", q == p + PG);
	CHECK("mmap.fixed_replaces", q[0] == 0 && q[PG - 1] == 0);
	CHECK("mmap.fixed_neighbours", p[0] == 'a' && p[PG - 1] == 'a' && p[2 * PG] == 'a' && p[4 * PG - 1] == 'a');
	errno = 0;
	char *r = mmap(p + 2 * PG, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK("mmap.noreplace_busy", r == MAP_FAILED && errno == EEXIST);
	CHECK("mmap.noreplace_kept", p[2 * PG] == 'a');
	munmap(p + 3 * PG, PG);
	r = mmap(p + 3 * PG, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	CHECK("mmap.noreplace_free", r == p + 3 * PG);
	CHECK("mmap.noreplace_zero", r != MAP_FAILED && r[0] == 0);
	CHECK("mmap.fixed_unaligned", mmap(p + 1, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED && errno == EINVAL);
	/* a hint (no MAP_FIXED) at a free address is honoured on Linux, at a
	 * busy one it is moved */
	char *h = mmap(p + PG, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK("mmap.hint_busy_moved", h != MAP_FAILED && h != p + PG);
	munmap(h, PG);
	munmap(p, 4 * PG);
}

static void test_protect(void)
{
	char *p = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(p, 'x', 3 * PG);
	/* guard page */
	CHECK_SYS("mprotect.none", mprotect(p + 2 * PG, PG, PROT_NONE));
	CHECK("guard.below_ok", !faults(p + 2 * PG - 1, 1));
	CHECK("guard.write_faults", faults(p + 2 * PG, 1));
	CHECK_EQ("guard.sigsegv", fault_sig, SIGSEGV);
	CHECK_EQ("guard.accerr", fault_code, SEGV_ACCERR);
	CHECK("guard.si_addr", fault_addr == p + 2 * PG);
	CHECK("guard.read_faults", faults(p + 2 * PG + 100, 0) && fault_addr == p + 2 * PG + 100);
	/* read-only */
	CHECK_SYS("mprotect.ro", mprotect(p, PG, PROT_READ));
	CHECK("ro.read_ok", !faults(p + 10, 0) && p[10] == 'x');
	CHECK("ro.write_faults", faults(p + 10, 1) && fault_code == SEGV_ACCERR);
	CHECK_SYS("mprotect.rw_again", mprotect(p, 3 * PG, PROT_READ | PROT_WRITE));
	CHECK("rw.write_ok", !faults(p + 10, 1) && !faults(p + 2 * PG, 1));
	CHECK("rw.contents_kept", p[11] == 'x' && p[2 * PG + 1] == 'x');
	/* raw: musl's wrapper rounds the start down */
	CHECK_ERR("mprotect.unaligned", syscall(SYS_mprotect, p + 1, PG, PROT_READ), EINVAL);
	CHECK_ERR("mprotect.bad_prot", mprotect(p, PG, 0x100), EINVAL);
	munmap(p, 3 * PG);
	CHECK_ERR("mprotect.unmapped", mprotect(p, PG, PROT_READ), ENOMEM);
	/* a PROT_NONE reservation, committed piece by piece (the Go heap does
	 * this) */
	char *res = mmap(NULL, 16 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK("mmap.prot_none_reserve", res != MAP_FAILED);
	CHECK("reserve.faults", faults(res + 5 * PG, 0));
	CHECK_SYS("reserve.commit", mprotect(res + 4 * PG, 2 * PG, PROT_READ | PROT_WRITE));
	CHECK("reserve.committed_rw", !faults(res + 5 * PG, 1));
	CHECK("reserve.rest_faults", faults(res + 6 * PG, 0));
	munmap(res, 16 * PG);
	/* executable: a one-instruction function (ret) */
	unsigned char *x = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	x[0] = 0xb8; /* mov eax, 42 */
	x[1] = 42; x[2] = 0; x[3] = 0; x[4] = 0;
	x[5] = 0xc3; /* ret */
	CHECK_SYS("mprotect.exec", mprotect(x, PG, PROT_READ | PROT_EXEC));
	int (*fn)(void) = (int (*)(void))(void *)x;
	CHECK_EQ("exec.runs", fn(), 42);
	munmap(x, PG);
}

static void test_shared_private_fork(void)
{
	int *sh = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int *pr = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK("mmap.shared_anon", sh != MAP_FAILED);
	*sh = 1;
	*pr = 1;
	pid_t pid = fork();
	if (pid == 0) {
		int ok = *sh == 1 && *pr == 1;
		*sh = 2;
		*pr = 2;
		_exit(ok ? 0 : 1);
	}
	int st;
	waitpid(pid, &st, 0);
	CHECK("fork.child_saw_values", WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ("mmap.shared_sees_child_write", *sh, 2);
	CHECK_EQ("mmap.private_cow", *pr, 1);
	munmap(sh, PG);
	munmap(pr, PG);
}

static void test_mremap(void)
{
	/* the third page blocks growth in place */
	char *p = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(p, 'm', 3 * PG);
	char *blk = p + 2 * PG;
	errno = 0;
	CHECK("mremap.no_move_enomem", mremap(p, 2 * PG, 4 * PG, 0) == MAP_FAILED && errno == ENOMEM);
	char *q = mremap(p, 2 * PG, 64 * PG, MREMAP_MAYMOVE);
	CHECK("mremap.maymove", q != MAP_FAILED && q != p);
	CHECK("mremap.contents_moved", q[0] == 'm' && q[2 * PG - 1] == 'm');
	CHECK("mremap.grown_zero", q[2 * PG] == 0 && q[64 * PG - 1] == 0);
	CHECK("mremap.old_gone", faults(p, 0));
	CHECK("mremap.blocker_kept", !faults(blk, 0) && *blk == 'm');
	q[63 * PG] = 'z';
	char *s = mremap(q, 64 * PG, PG, 0);
	CHECK("mremap.shrink_in_place", s == q);
	CHECK("mremap.shrunk_tail_gone", faults(q + PG, 0));
	CHECK("mremap.shrunk_head_kept", q[0] == 'm');
	/* MREMAP_FIXED moves to a chosen address */
	char *dst = mmap(NULL, 2 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *f = mremap(q, PG, PG, MREMAP_MAYMOVE | MREMAP_FIXED, dst + PG);
	CHECK("mremap.fixed", f == dst + PG);
	CHECK("mremap.fixed_contents", f != MAP_FAILED && f[0] == 'm');
	CHECK("mremap.bad_flags", mremap(f, PG, PG, 0x80) == MAP_FAILED && errno == EINVAL);
	munmap(dst, 2 * PG);
	munmap(blk, PG);
}

static void test_madvise(void)
{
	char *p = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(p, 'd', 4 * PG);
	CHECK_SYS("madvise.dontneed", madvise(p + PG, 2 * PG, MADV_DONTNEED));
	CHECK("madvise.zeroed", p[PG] == 0 && p[2 * PG] == 0 && p[3 * PG - 1] == 0);
	CHECK("madvise.outside_kept", p[PG - 1] == 'd' && p[3 * PG] == 'd');
	CHECK("madvise.still_mapped", !faults(p + PG, 1));
	CHECK_SYS("madvise.willneed", madvise(p, 4 * PG, MADV_WILLNEED));
	CHECK_SYS("madvise.normal", madvise(p, 4 * PG, MADV_NORMAL));
	CHECK_ERR("madvise.bad_advice", madvise(p, PG, 12345), EINVAL);
	CHECK_ERR("madvise.unaligned", madvise(p + 1, PG, MADV_DONTNEED), EINVAL);
	munmap(p, 4 * PG);
	CHECK_ERR("madvise.unmapped", madvise(p, PG, MADV_WILLNEED), ENOMEM);
	/* on a shared mapping the data survives (it lives in the object) */
	char *s = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	s[0] = 's';
	madvise(s, PG, MADV_DONTNEED);
	CHECK_EQ("madvise.shared_kept", s[0], 's');
	munmap(s, PG);
}

static void test_file_mapping(void)
{
	char path[300];
	snprintf(path, sizeof path, "%s/map", check_mktmp());
	int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
	char buf[2 * PG];
	for (long i = 0; i < 2 * PG; i++)
		buf[i] = 'A' + i % 26;
	write(fd, buf, sizeof buf);
	char *pr = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	CHECK("mmap.file_private", pr != MAP_FAILED);
	CHECK("mmap.file_contents", memcmp(pr, buf, sizeof buf) == 0);
	pr[0] = '#';
	char c;
	pread(fd, &c, 1, 0);
	CHECK_EQ("mmap.file_private_not_written", c, 'A');
	char *sh = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK("mmap.file_shared", sh != MAP_FAILED);
	sh[PG + 1] = '!';
	CHECK_SYS("msync", msync(sh, 2 * PG, MS_SYNC));
	pread(fd, &c, 1, PG + 1);
	CHECK_EQ("mmap.file_shared_written", c, '!');
	pwrite(fd, "?", 1, 5);
	CHECK_EQ("mmap.file_shared_sees_write", sh[5], '?');
	/* A private mapping shows the file until it writes a page, then its
	 * own copy (Linux maps the page cache copy-on-write). */
	CHECK_EQ("mmap.file_private_sees_file_until_written", pr[PG + 1], '!');
	CHECK_EQ("mmap.file_private_copy_kept", pr[5], buf[5]);
	char *off = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, PG);
	CHECK("mmap.file_offset", off != MAP_FAILED && off[1] == '!' && off[2] == buf[PG + 2]);
	CHECK("mmap.file_bad_offset", mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, 100) == MAP_FAILED && errno == EINVAL);
	/* a read-only descriptor cannot back a writable shared mapping */
	int ro = open(path, O_RDONLY);
	CHECK("mmap.file_ro_shared_rw", mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0) == MAP_FAILED && errno == EACCES);
	/* beyond end of file, within the last page: zeros; beyond it: SIGBUS */
	ftruncate(fd, PG + 10);
	char *t = mmap(NULL, 2 * PG, PROT_READ, MAP_SHARED, fd, 0);
	CHECK("mmap.file_tail_zero", t[PG + 10] == 0 && t[2 * PG - 1] == 0);
	munmap(t, 2 * PG);
	t = mmap(NULL, 3 * PG, PROT_READ, MAP_SHARED, fd, 0);
	CHECK("mmap.file_beyond_sigbus", faults(t + 2 * PG, 0) && fault_sig == SIGBUS);
	munmap(t, 3 * PG);
	t = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	CHECK("mmap.file_private_tail_zero", t[PG + 10] == 0 && t[2 * PG - 1] == 0);
	CHECK("mmap.file_private_beyond_sigbus", faults(t + 2 * PG, 0) && fault_sig == SIGBUS);
	munmap(t, 3 * PG);
	/* pages already touched, one a private copy, are cut off by a
	 * truncate too: the next touch is SIGBUS */
	ftruncate(fd, 3 * PG);
	t = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	char *tp = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	t[2 * PG] = 'x';
	tp[2 * PG + 1] = 'y';
	CHECK("mmap.touched_before_truncate", t[2 * PG] == 'x' && tp[2 * PG] == 'x' && tp[2 * PG + 1] == 'y');
	ftruncate(fd, PG + 10);
	CHECK("mmap.file_touched_shared_sigbus", faults(t + 2 * PG, 0) && fault_sig == SIGBUS);
	CHECK("mmap.file_touched_private_sigbus", faults(tp + 2 * PG, 0) && fault_sig == SIGBUS);
	munmap(tp, 3 * PG);
	munmap(t, 3 * PG);
	munmap(off, PG);
	munmap(pr, 2 * PG);
	munmap(sh, 2 * PG);
	close(ro);
	close(fd);
	CHECK_SYS("cleanup.unlink", unlink(path));
	CHECK_SYS("cleanup.rmdir", rmdir(check_tmpdir));
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	struct sigaction sa = { 0 };
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	test_brk();
	test_anon();
	test_fixed();
	test_protect();
	test_shared_private_fork();
	test_mremap();
	test_madvise();
	test_file_mapping();
	return check_done();
}
