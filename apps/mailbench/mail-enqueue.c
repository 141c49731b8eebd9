/*
 * mail-enqueue: puts one message (stdin) into the spool for one local
 * recipient and tells mail-qman about it, in the order qmail-queue uses,
 * so that a crash at any point leaves either nothing visible to the queue
 * manager or a complete message:
 *   1. the message goes to pid/<pid> and is fsynced;
 *   2. its id is that file's inode number (unique while the file exists,
 *      which it does until delivery is complete);
 *   3. the envelope (the recipient) goes to todo/<id> and is fsynced;
 *   4. pid/<pid> is renamed to mess/<id>;
 *   5. a datagram with the id goes to SPOOL/qman.sock.
 * Exit status 0 means the message was accepted.
 *
 * usage: mail-enqueue SPOOL RECIPIENT < message
 */
#include "common.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char pidpath[PATH_MAX], todopath[PATH_MAX], messpath[PATH_MAX];
	char id[32];
	struct stat st;
	int fd;

	prog = "mail-enqueue";
	if (argc != 3 || strchr(argv[2], '/') || argv[2][0] == '\0' || argv[2][0] == '.')
		die("usage: mail-enqueue SPOOL RECIPIENT < message (RECIPIENT: a mailbox name)");
	const char *spool = argv[1], *rcpt = argv[2];

	path_fmt(pidpath, "%s/pid/%ld", spool, (long)getpid());
	/* O_EXCL: a stale file from a crashed enqueue with our pid is an
	 * error for the operator, not something to overwrite silently. */
	fd = open(pidpath, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		die("create %s:", pidpath);
	copy_fd(0, fd, "stdin", pidpath);
	if (fsync(fd) < 0)
		die("fsync %s:", pidpath);
	if (fstat(fd, &st) < 0)
		die("fstat %s:", pidpath);
	if (close(fd) < 0)
		die("close %s:", pidpath);
	snprintf(id, sizeof id, "%lu", (unsigned long)st.st_ino);

	path_fmt(todopath, "%s/todo/%s", spool, id);
	fd = open(todopath, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		die("create %s:", todopath);
	write_all(fd, rcpt, strlen(rcpt), todopath);
	write_all(fd, "\n", 1, todopath);
	if (fsync(fd) < 0)
		die("fsync %s:", todopath);
	if (close(fd) < 0)
		die("close %s:", todopath);

	path_fmt(messpath, "%s/mess/%s", spool, id);
	if (rename(pidpath, messpath) < 0)
		die("rename %s to %s:", pidpath, messpath);

	notify_qman(spool, id);
	return 0;
}
