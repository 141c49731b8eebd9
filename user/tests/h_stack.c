/* h_stack: helper that t_rlimit execs (not run by the runner itself).
 * "h_stack KIB" recurses until it has used about KIB KiB of stack,
 * touching every page, and exits 0; a stack smaller than that ends it by
 * SIGSEGV. */
#include <stdlib.h>

static int deep(int left)
{
	volatile char frame[4000];
	frame[0] = (char)left;
	frame[sizeof frame - 1] = (char)left;
	if (left <= 0)
		return frame[0];
	return deep(left - 1) + frame[sizeof frame - 1];
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 100;
	deep(atoi(argv[1]) / 4);
	return 0;
}
