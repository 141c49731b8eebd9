/*
 * t_auxv: the x86-64 auxiliary vector entries Linux 6.1 adds beyond the
 * basics t_misc checks. AT_HWCAP2 is present, and its FSGSBASE bit says
 * truly whether RDFSBASE works in user mode (it faults with SIGILL where
 * the kernel left CR4.FSGSBASE off). AT_MINSIGSTKSZ is present, covers
 * the ucontext, siginfo and the processor's XSAVE area, and bounds the
 * frame the kernel really builds: a handler on an alternate stack of
 * that size (plus room for the handler itself) with a guard page below
 * runs, and its frame lies within AT_MINSIGSTKSZ of the stack's top.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>

#include "check.h"

#ifndef AT_MINSIGSTKSZ
#define AT_MINSIGSTKSZ 51
#endif
#define HWCAP2_FSGSBASE 2
#define ARCH_GET_FS 0x1003
/* The kernel's struct ucontext (flags, link, stack_t, sigcontext, an
 * 8-byte sigset) and siginfo: smaller than the C library's ucontext_t. */
#define KERNEL_UCONTEXT 304
#define KERNEL_SIGINFO 128

static sigjmp_buf ill_jmp;
static void on_ill(int sig)
{
	(void)sig;
	siglongjmp(ill_jmp, 1);
}

static volatile uintptr_t frame_low, handler_ran;
static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	/* The frame's lowest byte is the return address just below uc. */
	frame_low = (uintptr_t)uc - 8;
	handler_ran = 1;
}

/* The XSAVE area's size for the features the OS enabled (CPUID 0xD.0
 * EBX), or the FXSAVE area's without OSXSAVE. */
static unsigned fpu_area(void)
{
	unsigned a, b, c, d;
	__cpuid(1, a, b, c, d);
	if (!(c & (1u << 27)))
		return 512;
	__cpuid_count(0xd, 0, a, b, c, d);
	return b;
}

int main(void)
{
	check_start("t_auxv");

	errno = 0;
	unsigned long hwcap2 = getauxval(AT_HWCAP2);
	CHECK_EQ("hwcap2.present", errno, 0);
	uint64_t fs = 0, fsbase = 1;
	syscall(SYS_arch_prctl, ARCH_GET_FS, &fs);
	signal(SIGILL, on_ill);
	int faulted = 0;
	if (sigsetjmp(ill_jmp, 1) == 0)
		__asm__ volatile("rdfsbase %0" : "=r"(fsbase));
	else
		faulted = 1;
	signal(SIGILL, SIG_DFL);
	if (hwcap2 & HWCAP2_FSGSBASE)
		CHECK("hwcap2.fsgsbase_works", !faulted && fsbase == fs);
	else
		CHECK("hwcap2.no_fsgsbase_faults", faulted);
	CHECK_EQ("hwcap2.known_bits", hwcap2 & ~3ul, 0);

	errno = 0;
	unsigned long min = getauxval(AT_MINSIGSTKSZ);
	CHECK_EQ("minsigstksz.present", errno, 0);
	unsigned need = fpu_area() + 8 + KERNEL_UCONTEXT + KERNEL_SIGINFO;
	check_report("minsigstksz.covers_frame", min >= need && min <= 65536, "AT_MINSIGSTKSZ %lu, frame needs at least %u",
		     min, need);
	CHECK_EQ("minsigstksz.aligned", min % 16, 0);
	printf("# AT_HWCAP2 %#lx, AT_MINSIGSTKSZ %lu, FPU area %u\n", hwcap2, min, fpu_area());

	/* A handler on an alternate stack of that size, a guard page below. */
	long pg = sysconf(_SC_PAGESIZE);
	size_t slack = 1024; /* the handler's own frame */
	size_t len = (min + slack + pg - 1) / pg * pg;
	char *m = mmap(NULL, len + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!CHECK("altstack.mmap", m != MAP_FAILED))
		return check_done();
	mprotect(m, pg, PROT_NONE);
	char *top = m + pg + len;
	char *base = top - (min + slack);
	stack_t ss = {.ss_sp = base, .ss_size = min + slack};
	CHECK_SYS("altstack.set", sigaltstack(&ss, NULL));
	struct sigaction sa = {.sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO | SA_ONSTACK};
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	CHECK("altstack.handler_ran", handler_ran);
	check_report("altstack.frame_within", frame_low >= (uintptr_t)top - min && frame_low < (uintptr_t)top,
		     "frame from %#lx, stack top %#lx: %ld bytes, AT_MINSIGSTKSZ %lu", (unsigned long)frame_low,
		     (unsigned long)top, (long)((uintptr_t)top - frame_low), min);
	return check_done();
}
