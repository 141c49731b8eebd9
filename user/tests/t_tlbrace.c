/* t_tlbrace: address spaces released while other CPUs start TLB
 * shootdowns. Children with mapped pages exit together, round after
 * round, while the threads of one more process map, protect and unmap
 * pages without pause: their shootdowns start on whichever CPU their
 * kernel side runs, which may still have a dying child's page tables
 * loaded. A CPU that started a shootdown once counted every earlier one
 * as applied, and so ended the wait of a concurrent release while it
 * still had the released tables loaded (a CI boot test hung on it). The
 * window is microseconds: this program found it only in a kernel built
 * with a pause added there; here it checks that the churn itself works
 * (every child exits 0, every round ends). */
#define _GNU_SOURCE
#include "check.h"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

static void *churn(void *arg)
{
	(void)arg;
	for (;;) {
		char *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			continue;
		p[0] = p[4096] = p[8192] = 1;
		mprotect(p + 4096, 4096, PROT_READ);
		munmap(p, 3 * 4096);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	check_start(argv[0]);
	int rounds = argc > 1 ? atoi(argv[1]) : 150, kids = 4, maps = 16;
	pid_t bg = fork();
	if (bg == 0) {
		pthread_t t;
		for (int i = 0; i < 3; i++)
			pthread_create(&t, NULL, churn, NULL);
		churn(NULL);
	}
	int done = 0, failed = 0;
	for (int r = 0; r < rounds && !failed; r++) {
		int go[2];
		if (pipe(go))
			break;
		for (int k = 0; k < kids; k++) {
			if (fork() == 0) {
				close(go[1]);
				for (int m = 0; m < maps; m++) {
					char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
					if (p == MAP_FAILED)
						_exit(2);
					p[0] = p[4096] = 1;
				}
				char c;
				read(go[0], &c, 1); /* all exit at once */
				_exit(0);
			}
		}
		close(go[0]);
		close(go[1]);
		for (int k = 0; k < kids; k++) {
			int st;
			if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
				failed = 1;
		}
		done += !failed;
	}
	kill(bg, SIGKILL);
	int st = 0;
	waitpid(bg, &st, 0);
	CHECK_EQ("churn.every_round_ends", done, rounds);
	CHECK("churn.mapper_killed", WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	return check_done();
}
