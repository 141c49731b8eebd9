/*
 * mail-qman: the queue manager. Listens on SPOOL/qman.sock (AF_UNIX
 * datagrams, one message id each, sent by mail-enqueue) and runs one
 * mail-deliver per id, at most -j at a time (qmail's concurrencylocal).
 * Prints "ready" on stdout once the socket is bound, so whoever started
 * it knows enqueues will not be refused. The datagram "quit" makes it
 * wait for the deliveries under way and exit: 0 if every one succeeded.
 *
 * usage: mail-qman [-j MAXDELIVERIES] SPOOL DELIVER_PROGRAM
 */
#include "common.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static long running, started, failed;

/* Collects one finished delivery (blocking or not); 0 if none was ready. */
static int reap(int flags)
{
	int status;
	pid_t pid;

	if (running == 0)
		return 0;
	do
		pid = waitpid(-1, &status, flags);
	while (pid < 0 && errno == EINTR);
	if (pid < 0)
		die("waitpid:");
	if (pid == 0)
		return 0;
	running--;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		failed++;
		warnx("delivery process %ld failed (status 0x%x)", (long)pid, status);
	}
	return 1;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	long limit = 16;
	char msg[64];
	int opt, sock;

	prog = "mail-qman";
	while ((opt = getopt(argc, argv, "j:")) != -1) {
		if (opt != 'j')
			die("usage: mail-qman [-j MAXDELIVERIES] SPOOL DELIVER_PROGRAM");
		limit = parse_count(optarg, "-j", 4096);
	}
	if (argc - optind != 2)
		die("usage: mail-qman [-j MAXDELIVERIES] SPOOL DELIVER_PROGRAM");
	const char *spool = argv[optind], *deliver = argv[optind + 1];

	if ((size_t)snprintf(sa.sun_path, sizeof sa.sun_path, "%s/%s", spool, QMAN_SOCK) >= sizeof sa.sun_path)
		die("socket path %s/%s is longer than %zu bytes", spool, QMAN_SOCK, sizeof sa.sun_path - 1);
	sock = socket(AF_UNIX, SOCK_DGRAM, 0);
	if (sock < 0)
		die("socket:");
	/* A socket file left by a previous (killed) run would make bind fail. */
	if (unlink(sa.sun_path) < 0 && errno != ENOENT)
		die("unlink %s:", sa.sun_path);
	if (bind(sock, (struct sockaddr *)&sa, sizeof sa) < 0)
		die("bind %s:", sa.sun_path);
	printf("ready\n");
	if (fflush(stdout) != 0)
		die("writing ready:");

	for (;;) {
		ssize_t n = recv(sock, msg, sizeof msg - 1, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("recv on %s:", sa.sun_path);
		}
		msg[n] = '\0';
		if (strcmp(msg, QMAN_QUIT) == 0)
			break;
		if (n == 0 || strspn(msg, "0123456789") != (size_t)n) {
			warnx("ignoring a datagram that is not a message id");
			continue;
		}
		while (reap(WNOHANG))
			;
		while (running >= limit)
			reap(0);
		pid_t pid = fork();
		if (pid < 0)
			die("fork:");
		if (pid == 0) {
			close(sock);
			/* execlp: DELIVER without a slash is looked up in PATH. */
			execlp(deliver, "mail-deliver", spool, msg, (char *)NULL);
			/* _exit: the parent's stdio buffers are not ours to flush. */
			fprintf(stderr, "mail-qman: exec %s: %s\n", deliver, strerror(errno));
			_exit(127);
		}
		running++;
		started++;
	}
	while (running > 0)
		reap(0);
	close(sock);
	unlink(sa.sun_path);
	if (failed > 0)
		die("%ld of %ld deliveries failed", failed, started);
	return 0;
}
