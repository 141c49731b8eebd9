/* h_exec: helper that the tests execve (not run by the runner itself).
 * It reports what it checked through its exit status: 0 = everything as
 * expected, another value names the first check that failed.
 *
 *   h_exec args "beta gamma" ""      argv and envp exactly as t_proc passes
 *   h_exec state KEEPFD CLOEXECFD PID  descriptors, pid, signal state after exec
 *   h_exec exit N                    exits with N
 *   h_exec wait                      reads stdin until EOF, then exits 0
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv, char **envp)
{
	if (argc < 2)
		return 100;
	const char *mode = argv[1];
	if (!strcmp(mode, "args")) {
		if (argc != 4)
			return 10;
		if (strcmp(argv[2], "beta gamma"))
			return 11;
		if (argv[3][0] != 0)
			return 12;
		if (argv[4] != NULL)
			return 13;
		int n = 0;
		while (envp[n])
			n++;
		if (n != 2)
			return 14;
		if (strcmp(envp[0], "SB_A=1"))
			return 15;
		if (strcmp(envp[1], "SB_B=two words"))
			return 16;
		if (!getenv("SB_B") || strcmp(getenv("SB_B"), "two words"))
			return 17;
		return 0;
	}
	if (!strcmp(mode, "state")) {
		if (argc != 5)
			return 20;
		int keep = atoi(argv[2]), gone = atoi(argv[3]);
		if (fcntl(keep, F_GETFD) != 0)
			return 21;
		errno = 0;
		if (fcntl(gone, F_GETFD) != -1 || errno != EBADF)
			return 22;
		if (getpid() != atoi(argv[4]))
			return 23;
		struct sigaction sa;
		sigaction(SIGUSR1, NULL, &sa);
		if (sa.sa_handler != SIG_IGN)
			return 24; /* ignored stays ignored */
		sigaction(SIGUSR2, NULL, &sa);
		if (sa.sa_handler != SIG_DFL)
			return 25; /* caught resets to default */
		sigset_t cur;
		sigprocmask(SIG_BLOCK, NULL, &cur);
		if (!sigismember(&cur, SIGHUP))
			return 26; /* the mask is inherited */
		if (write(keep, "exec-ok", 7) != 7)
			return 27;
		return 0;
	}
	if (!strcmp(mode, "exit") && argc == 3)
		return atoi(argv[2]);
	if (!strcmp(mode, "wait")) {
		char buf[64];
		while (read(0, buf, sizeof buf) > 0)
			;
		return 0;
	}
	return 101;
}
