/*
 * probe.h: running calls in a child, as root or dropped to nobody, and
 * reading back what each returned. The child sends one int per call
 * through a pipe (put); the parent checks them. Tests that ask what an
 * unprivileged user may do (t_security, t_sched) share it.
 */
#ifndef SHORTBREAD_PROBE_H
#define SHORTBREAD_PROBE_H

#include <grp.h>
#include <sys/wait.h>

#include "check.h"

#define NOBODY 65534

/* outcome of a call: 0 if it succeeded, else errno */
__attribute__((unused)) static int rc(long r)
{
	return r < 0 ? errno : 0;
}

/* sends v to the parent; a child that cannot report must not look passing */
__attribute__((unused)) static void put(int fd, int v)
{
	if (write(fd, &v, sizeof v) != sizeof v)
		_exit(99);
}

/* runs fn in a child (as nobody, uid and gid 65534 with no groups, if
 * drop); fills res[0..n) with what it sent and returns how many, or -1
 * if the child did not exit with status 0 */
__attribute__((unused)) static int probe(void (*fn)(int), int drop, int *res, int n)
{
	int p[2];
	if (pipe(p))
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		if (drop && (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
			     setresuid(NOBODY, NOBODY, NOBODY)))
			_exit(98);
		fn(p[1]);
		_exit(0);
	}
	close(p[1]);
	int got = 0;
	for (ssize_t k; got < n && (k = read(p[0], &res[got], sizeof(int))) == sizeof(int);)
		got++;
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		printf("# probe child: status %#x\n", st);
		return -1;
	}
	return got;
}

#endif
