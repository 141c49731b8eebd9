/*
 * t_fpu: every thread keeps its own x87/SSE/AVX register state.
 *
 * Threads that hold different values in a vector register and give the
 * CPU away (sched_yield, a blocking sleep) find their own values again;
 * a signal handler that changes the register does not change it for the
 * interrupted code; the handler finds the interrupted state in the signal
 * frame, in XSAVE format with Linux's markers when AVX is on, and a change
 * it makes there is what the code resumes with. SSE (xmm) always; AVX
 * (ymm, whose upper halves only XSAVE saves) when CPUID and XCR0 say the
 * kernel enabled it.
 */
#define _GNU_SOURCE
#include "check.h"

#include <cpuid.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>

static int avx;

static int have_avx(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d))
		return 0;
	if (!(c & bit_OSXSAVE) || !(c & bit_AVX))
		return 0;
	unsigned lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (lo & 6) == 6; /* the OS saves SSE and AVX state */
}

/* Load pat into register 9 (xmm9, or all of ymm9), make `loops` system
 * calls nr(a1, a2, a3), store register 9 to out. The same code for both
 * widths, with the move instructions spelled out. */
#define REG9_ACROSS_SYSCALLS(LOAD, STORE)                                         \
	__asm__ volatile(LOAD " (%[p]), %%" REG "\n"                                 \
			 "1:\n\t"                                                      \
			 "mov %[nr], %%rax\n\t"                                         \
			 "mov %[a1], %%rdi\n\t"                                         \
			 "mov %[a2], %%rsi\n\t"                                         \
			 "mov %[a3], %%rdx\n\t"                                         \
			 "syscall\n\t"                                                \
			 "decl %[n]\n\t"                                               \
			 "jnz 1b\n\t" STORE " %%" REG ", (%[o])\n"                    \
			 : [n] "+r"(loops)                                             \
			 : [p] "r"(pat), [o] "r"(out), [nr] "r"(nr), [a1] "r"(a1),     \
			   [a2] "r"(a2), [a3] "r"(a3)                                   \
			 : "rax", "rcx", "rdx", "rsi", "rdi", "r11", "xmm9", "memory")

static void reg9_across_syscalls(const uint8_t pat[32], uint8_t out[32], long nr, long a1, long a2, long a3, int loops)
{
	if (avx) {
#define REG "ymm9"
		REG9_ACROSS_SYSCALLS("vmovdqu", "vmovdqu");
#undef REG
		__asm__ volatile("vzeroupper");
	} else {
#define REG "xmm9"
		REG9_ACROSS_SYSCALLS("movdqu", "movdqu");
#undef REG
	}
}

static int width(void) { return avx ? 32 : 16; }

struct worker {
	uint8_t pat[32], out[32];
	long nr, a1;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	reg9_across_syscalls(w->pat, w->out, w->nr, w->a1, 0, 0, 300);
	return NULL;
}

static void test_threads(void)
{
	static struct timespec tiny = {0, 100000};
	struct worker w[4];
	pthread_t th[4];
	for (int i = 0; i < 4; i++) {
		for (int j = 0; j < 32; j++)
			w[i].pat[j] = (uint8_t)(i * 64 + j + 1);
		memset(w[i].out, 0, sizeof w[i].out);
		/* half of them yield, half block in a sleep */
		w[i].nr = i % 2 ? SYS_nanosleep : SYS_sched_yield;
		w[i].a1 = (long)&tiny;
		CHECK_EQ("threads.create", pthread_create(&th[i], NULL, work, &w[i]), 0);
	}
	int same = 1;
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		same &= memcmp(w[i].pat, w[i].out, width()) == 0;
	}
	CHECK("threads.keep_their_vector_registers", same);
}

static uint8_t clobber[32], from_handler[32];
static int saw_xstate_magic, saw_interrupted_value;
static const uint8_t *expect_in_frame;

static void handler(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = ctx;
	uint8_t *fp = (uint8_t *)uc->uc_mcontext.fpregs;
	/* The interrupted xmm9 is in the FXSAVE area (16 bytes per register
	 * from offset 160); its upper half after the XSAVE header (576). */
	saw_interrupted_value = fp && memcmp(fp + 160 + 9 * 16, expect_in_frame, 16) == 0;
	if (avx && fp) {
		uint32_t magic1;
		memcpy(&magic1, fp + 464, 4);
		saw_xstate_magic = magic1 == 0x46505853;
		saw_interrupted_value &= memcmp(fp + 576 + 9 * 16, expect_in_frame + 16, 16) == 0;
	}
	/* Change the register here, and the saved copy to from_handler. */
	if (avx)
		__asm__ volatile("vmovdqu (%0), %%ymm9" ::"r"(clobber) : "xmm9");
	else
		__asm__ volatile("movdqu (%0), %%xmm9" ::"r"(clobber) : "xmm9");
	if (fp) {
		memcpy(fp + 160 + 9 * 16, from_handler, 16);
		if (avx && saw_xstate_magic) {
			memcpy(fp + 576 + 9 * 16, from_handler + 16, 16);
			fp[512] |= 4; /* XSTATE_BV: the AVX state is in the frame */
		}
	}
}

static void test_signal(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	uint8_t pat[32], out[32];
	for (int j = 0; j < 32; j++) {
		pat[j] = (uint8_t)(0x40 + j);
		clobber[j] = 0xee;
		from_handler[j] = (uint8_t)(0x90 + j);
	}
	expect_in_frame = pat;
	/* One tgkill: the handler runs on the way back from it. */
	reg9_across_syscalls(pat, out, SYS_tgkill, getpid(), syscall(SYS_gettid), SIGUSR1, 1);
	CHECK("signal.frame_holds_interrupted_register", saw_interrupted_value);
	if (avx)
		CHECK("signal.frame_has_xstate_magic", saw_xstate_magic);
	CHECK("signal.frame_change_is_resumed", memcmp(out, from_handler, width()) == 0);
	CHECK("signal.handler_clobber_not_seen", memcmp(out, clobber, 16) != 0);
}

int main(int argc, char **argv)
{
	(void)argc;
	check_start(argv[0]);
	avx = have_avx();
	printf("# vector registers: %s\n", avx ? "AVX (ymm)" : "SSE (xmm)");
	test_threads();
	test_signal();
	return check_done();
}
