/* Bad pointers given to system calls return EFAULT; the kernel neither
 * crashes nor leaks its memory. Exit status: the number of failed checks. */
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int failed;

static void check(const char *what, long ret, int want_errno)
{
	if (ret != -1 || errno != want_errno) {
		printf("not ok %s: ret %ld errno %d, want -1/%d\n", what, ret, errno, want_errno);
		failed++;
	} else {
		printf("ok %s\n", what);
	}
}

int main(void)
{
	check("write(NULL)", write(1, NULL, 5), EFAULT);
	check("write(kernel image)", write(1, (void *)0xffffffff81001000, 16), EFAULT);
	check("write(kernel half)", write(1, (void *)0xffff800000000000, 16), EFAULT);
	check("write(wrapping range)", write(1, (void *)(UINTPTR_MAX - 8), 64), EFAULT);
	check("write(bad fd)", write(99, "x", 1), EBADF);
	char *p = mmap(0, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		printf("not ok mmap\n");
		return 100;
	}
	strcpy(p, "mapped\n");
	if (write(1, p, 7) != 7) {
		printf("not ok write from mmap\n");
		failed++;
	}
	munmap(p, 8192);
	check("write(unmapped)", write(1, p, 7), EFAULT);
	return failed;
}
