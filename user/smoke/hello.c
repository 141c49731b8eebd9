/* The first user program: prints through stdio (writev) and exits 0. */
#include <stdio.h>

int main(int argc, char **argv, char **envp)
{
	printf("hello, world from %s (argc=%d, %s)\n", argv[0], argc, envp[0] ? envp[0] : "no env");
	return 0;
}
